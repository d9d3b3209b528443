/* Language features run end to end on the interpreter through the public API: each
 * kernel compiled from source (with defines where the feature is about specialization),
 * launched over interpreter memory, and its output compared with a C computation of what
 * docs/language.md says it does. The interpreter is the language's reference, so these
 * are the semantics the GPU tests (tests/gpu/gpu_lang.c) hold the CUDA backend to. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "include/tk.h"

static tk_context *ctx;

static int setup(void **state) {
  (void)state;
  tk_context_options o = {TK_BACKEND_INTERP, 0};
  return tk_context_create(&ctx, &o) == TK_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  tk_context_destroy(ctx);
  return 0;
}

/* Fails the test with the API's message unless s is TK_OK. */
static void ok(tk_status s) {
  if (s != TK_OK) fail_msg("%s: %s", tk_status_name(s), tk_last_error(ctx));
}

/* Compiles src with the given defines ("NAME=VALUE" pairs, NULL-terminated) and returns
 * the kernel called name; the module is *mod (destroy it after). */
static tk_kernel *compile(const char *src, const char *const *defs, const char *name, tk_module **mod) {
  tk_define d[8];
  int n = 0;
  for (; defs && defs[2 * n]; n++) d[n] = (tk_define){defs[2 * n], defs[2 * n + 1]};
  tk_compile_options o = {.defines = d, .ndefines = n, .no_cache = 1};
  ok(tk_module_compile(ctx, mod, src, strlen(src), "lang.tk", &o));
  tk_kernel *k;
  ok(tk_module_get_kernel(*mod, name, &k));
  return k;
}

static tk_devptr upload(const void *p, size_t bytes) {
  tk_devptr d;
  ok(tk_malloc(ctx, &d, bytes));
  if (p) ok(tk_memcpy_htod(ctx, d, p, bytes));
  return d;
}

/* ---- element conversions for values the types hold exactly ------------------------- */

static uint16_t bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  assert_int_equal(u & 0xffff, 0); /* exact in bf16 */
  return (uint16_t)(u >> 16);
}

static float bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* f16 bits of a normal f, or zero, that f16 holds exactly. */
static uint16_t f16_bits(float f) {
  if (f == 0) return signbit(f) ? 0x8000 : 0;
  int e;
  float m = frexpf(fabsf(f), &e); /* f = m * 2^e, m in [0.5, 1) */
  uint32_t mant = (uint32_t)ldexpf(m, 11);
  assert_true(ldexpf((float)mant, e - 11) == fabsf(f) && e - 1 >= -14 && e - 1 <= 15);
  return (uint16_t)((f < 0 ? 0x8000 : 0) | (uint32_t)(e - 1 + 15) << 10 | (mant & 0x3ff));
}

static float f16_value(uint16_t h) {
  int e = h >> 10 & 0x1f, mant = h & 0x3ff;
  float v = e ? ldexpf((float)(mant | 0x400), e - 25) : ldexpf((float)mant, -24);
  return h & 0x8000 ? -v : v;
}

/* ---- compile-time dtype parameters -------------------------------------------------- */

/* One kernel, specialized for each of three element types by a define: y = x * 2 + 1
 * computed in ACC (f32 unless set), stored as T. The values are small multiples of 1/4,
 * which all three types hold exactly, so every result is exact. */
static const char SCALE[] =
    "kernel scale<T: dtype = f16, ACC: dtype = f32, BLOCK: i32 = 64>(x: *T, y: *T, n: i32) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = offs < n;\n"
    "    let v: T = load(x + offs, m, 0.0);\n"
    "    let acc: ACC = (v as ACC) * 2.0 + full<ACC>(1.0, BLOCK);\n"
    "    store(y + offs, acc as T, m);\n"
    "}\n";

static void run_scale(const char *dtype, tk_dtype want, size_t esize) {
  enum { N = 200 };
  const char *defs[] = {"T", dtype, NULL};
  tk_module *m;
  tk_kernel *k = compile(SCALE, defs, "scale", &m);
  assert_int_equal(tk_kernel_param_pointee(k, 0), want);
  assert_int_equal(tk_kernel_param_pointee(k, 1), want);
  unsigned char in[N * 4], out[N * 4];
  float xs[N];
  for (int i = 0; i < N; i++) {
    xs[i] = (float)(i - 100) / 4;
    uint16_t h = want == TK_F16 ? f16_bits(xs[i]) : want == TK_BF16 ? bf16_bits(xs[i]) : 0;
    if (want == TK_F32) memcpy(in + 4 * i, &xs[i], 4);
    else memcpy(in + 2 * i, &h, 2);
  }
  tk_devptr dx = upload(in, N * esize), dy = upload(NULL, N * esize);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i32(N)};
  ok(tk_launch(k, (tk_grid){(N + 63) / 64, 1, 1}, NULL, args, 3));
  ok(tk_memcpy_dtoh(ctx, out, dy, N * esize));
  for (int i = 0; i < N; i++) {
    float got;
    uint16_t h;
    memcpy(&h, out + 2 * i, 2);
    if (want == TK_F32) memcpy(&got, out + 4 * i, 4);
    else got = want == TK_F16 ? f16_value(h) : bf16_value(h);
    if (got != xs[i] * 2 + 1) fail_msg("T=%s: y[%d] = %g, want %g", dtype, i, got, xs[i] * 2 + 1);
  }
  tk_free(ctx, dx);
  tk_free(ctx, dy);
  tk_module_destroy(m);
}

static void test_dtype_param_f16(void **state) {
  (void)state;
  run_scale("f16", TK_F16, 2);
}

static void test_dtype_param_bf16(void **state) {
  (void)state;
  run_scale("bf16", TK_BF16, 2);
}

static void test_dtype_param_f32(void **state) {
  (void)state;
  run_scale("f32", TK_F32, 4);
}

/* The specialization really changes the arithmetic: 1 + 2^-9 survives f32 and is
 * rounded away by bf16 (8 bits of precision) and f16 keeps it (11 bits). The kernel
 * adds in T. */
static void test_dtype_param_rounds_in_its_type(void **state) {
  (void)state;
  static const char src[] =
      "kernel add<T: dtype = f32>(y: *f32) {\n"
      "    let one = full<T>(1.0, 16);\n"
      "    let r = one + (0.001953125 as T);\n"
      "    store(y + arange(0, 16), r as f32);\n"
      "}\n";
  const char *types[] = {"f32", "f16", "bf16"};
  const float want[] = {1.001953125f, 1.001953125f, 1.0f};
  for (int t = 0; t < 3; t++) {
    const char *defs[] = {"T", types[t], NULL};
    tk_module *m;
    tk_kernel *k = compile(src, defs, "add", &m);
    float out[16];
    tk_devptr dy = upload(NULL, sizeof out);
    tk_arg a = tk_arg_ptr(dy);
    ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, &a, 1));
    ok(tk_memcpy_dtoh(ctx, out, dy, sizeof out));
    for (int i = 0; i < 16; i++)
      if (out[i] != want[t]) fail_msg("T=%s: %.9g, want %.9g", types[t], out[i], want[t]);
    tk_free(ctx, dy);
    tk_module_destroy(m);
  }
}

/* A bad dtype define is a compile error whose message names the define. */
static void test_dtype_param_bad_define(void **state) {
  (void)state;
  tk_define d = {"T", "half"};
  tk_compile_options o = {.defines = &d, .ndefines = 1, .no_cache = 1};
  tk_module *m = NULL;
  assert_int_equal(tk_module_compile(ctx, &m, SCALE, strlen(SCALE), "lang.tk", &o), TK_ERR_COMPILE);
  assert_non_null(strstr(tk_last_error(ctx), "define 'T' expects a dtype"));
  assert_non_null(strstr(tk_last_error(ctx), "got 'half'"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_param_f16),
      cmocka_unit_test(test_dtype_param_bf16),
      cmocka_unit_test(test_dtype_param_f32),
      cmocka_unit_test(test_dtype_param_rounds_in_its_type),
      cmocka_unit_test(test_dtype_param_bad_define),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
