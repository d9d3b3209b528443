/* Language features run end to end on the interpreter through the public API: each
 * kernel compiled from source (with defines where the feature is about specialization),
 * launched over interpreter memory, and its output compared with a C computation of what
 * docs/language.md says it does. The interpreter is the language's reference, so these
 * are the semantics the GPU tests (tests/gpu/gpu_lang.c) hold the CUDA backend to. */
#include <float.h>
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
#include "tests/kernels/lang_kernels.h"

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

/* ---- helpers returning several values --------------------------------------------- */

/* The online-softmax step of a row as a helper returning (max, sum of exp), carried
 * through a runtime loop by a tuple assignment; a second helper forwards the tuple, and
 * a tuple literal swaps two vars. out[row] = (max, sum exp(x - max), then the swap). */
static const char ONLINE[] =
    "fn step(m, l, x) {\n"
    "    let m2 = maximum(m, max(x, 0));\n"
    "    return (m2, l * exp(m - m2) + sum(exp(x - m2), 0));\n"
    "}\n"
    "fn forward(m, l, x) { return step(m, l, x); }\n"
    "kernel online<B: i32 = 16>(x: *f32, out: *f32, n: i32) {\n"
    "    let row = program_id(0);\n"
    "    var (m, l) = (-inf, 0.0);\n"
    "    for i in range(0, n, B) {\n"
    "        let o = i + arange(0, B);\n"
    "        (m, l) = forward(m, l, load(x + row * n + o, o < n, -inf));\n"
    "    }\n"
    "    store(out + row * 4, m);\n"
    "    store(out + row * 4 + 1, l);\n"
    "    var a = m;\n"
    "    var b = l;\n"
    "    (a, b) = (b, a);\n"
    "    let (_, c) = (a, b);\n"
    "    store(out + row * 4 + 2, a);\n"
    "    store(out + row * 4 + 3, c);\n"
    "}\n";

static void test_tuple_online_softmax(void **state) {
  (void)state;
  enum { ROWS = 3, N = 37 };
  tk_module *m;
  tk_kernel *k = compile(ONLINE, NULL, "online", &m);
  float x[ROWS * N], out[ROWS * 4];
  for (int i = 0; i < ROWS * N; i++) x[i] = (float)((i * 37) % 23) / 8 - 1.5f;
  tk_devptr dx = upload(x, sizeof x), dout = upload(NULL, sizeof out);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dout), tk_arg_i32(N)};
  ok(tk_launch(k, (tk_grid){ROWS, 1, 1}, NULL, args, 3));
  ok(tk_memcpy_dtoh(ctx, out, dout, sizeof out));
  for (int r = 0; r < ROWS; r++) {
    float mx = -INFINITY;
    for (int j = 0; j < N; j++) mx = fmaxf(mx, x[r * N + j]);
    double l = 0;
    for (int j = 0; j < N; j++) l += exp((double)x[r * N + j] - mx);
    if (out[r * 4] != mx) fail_msg("row %d: max %g, want %g", r, out[r * 4], mx);
    if (fabs(out[r * 4 + 1] - l) > 1e-5 * l) fail_msg("row %d: sum %g, want %g", r, out[r * 4 + 1], l);
    assert_true(out[r * 4 + 2] == out[r * 4 + 1]); /* swapped: a = l */
    assert_true(out[r * 4 + 3] == out[r * 4]);     /* c = b = m */
  }
  tk_free(ctx, dx);
  tk_free(ctx, dout);
  tk_module_destroy(m);
}

/* ---- the early exit ------------------------------------------------------------------ */

/* Programs past the last row return at once; row 0 returns after writing a marker; the
 * others scale their row by a factor an else-if sets. The grid has more programs than
 * rows, so an exit that did not stop the program would write out of bounds (an error on
 * the interpreter) or the wrong values. */
static void test_early_exit(void **state) {
  (void)state;
  enum { ROWS = 5, N = 20 };
  tk_module *m;
  tk_kernel *k = compile(EXIT, NULL, "rows", &m);
  float x[ROWS * N], y[ROWS * N];
  for (int i = 0; i < ROWS * N; i++) x[i] = (float)i, y[i] = 7;
  tk_devptr dx = upload(x, sizeof x), dy = upload(y, sizeof y);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i32(N), tk_arg_i32(ROWS)};
  ok(tk_launch(k, (tk_grid){ROWS + 3, 1, 1}, NULL, args, 4));
  ok(tk_memcpy_dtoh(ctx, y, dy, sizeof y));
  for (int i = 0; i < ROWS * N; i++) {
    int row = i / N;
    float want = row == 0 ? (i == 0 ? -1.0f : 7.0f) : x[i] * (row == 1 ? 3.0f : 2.0f);
    if (y[i] != want) fail_msg("y[%d] = %g, want %g", i, y[i], want);
  }
  tk_free(ctx, dx);
  tk_free(ctx, dy);
  tk_module_destroy(m);
}

/* ---- while, break and continue --------------------------------------------------------- */

/* Per program: a while loop that counts i up, skips multiples of 3 (continue) and stops
 * once the sum passes a bound (break); a for loop that breaks at j == 5 after skipping
 * odd j; a while loop over a tile condition reduced to a scalar. The bounds vary per
 * program, so some loops end by their condition and some by break. */
static void loops_reference(int pid, int n, int32_t r[4]) {
  int lim = 10 + pid * 7, i = 0, s = 0, t = 0, steps = 0, vmax = 0;
  while (i < n) {
    i += 1;
    if (i % 3 == 0) continue;
    s += i;
    if (s > lim) break;
  }
  for (int j = 0; j < n + pid; j++) {
    if (j % 2 == 1) continue;
    if (j == 5 + pid) break;
    t += j;
  }
  while (vmax < pid) vmax += 2, steps++;
  r[0] = i, r[1] = s, r[2] = t, r[3] = steps;
}

static void test_while_break_continue(void **state) {
  (void)state;
  enum { P = 6, N = 12 };
  tk_module *m;
  tk_kernel *k = compile(LOOPS, NULL, "loops", &m);
  int32_t out[P * 4];
  tk_devptr d = upload(NULL, sizeof out);
  tk_arg args[] = {tk_arg_ptr(d), tk_arg_i32(N)};
  ok(tk_launch(k, (tk_grid){P, 1, 1}, NULL, args, 2));
  ok(tk_memcpy_dtoh(ctx, out, d, sizeof out));
  for (int p = 0; p < P; p++) {
    int32_t want[4];
    loops_reference(p, N, want);
    for (int q = 0; q < 4; q++)
      if (out[p * 4 + q] != want[q]) fail_msg("program %d, value %d: %d, want %d", p, q, out[p * 4 + q], want[q]);
  }
  tk_free(ctx, d);
  tk_module_destroy(m);
}

/* ---- tile slicing and permute ----------------------------------------------------------- */

/* From a 16 x 64 tile: its left half, the lower right quarter, a 4 x 32 window from (4, 16)
 * and a permute of a 3-D view; out holds them one after the other, row-major. */
static void test_slices_and_permute(void **state) {
  (void)state;
  tk_module *m;
  tk_kernel *k = compile(SLICES, NULL, "slices", &m);
  float x[16 * 64], y[912];
  for (int i = 0; i < 16 * 64; i++) x[i] = (float)i;
  tk_devptr dx = upload(x, sizeof x), dy = upload(NULL, sizeof y);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dy)};
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 2));
  ok(tk_memcpy_dtoh(ctx, y, dy, sizeof y));
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 32; j++) assert_true(y[i * 32 + j] == x[i * 64 + j]);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 32; j++) assert_true(y[512 + i * 32 + j] == x[(8 + i) * 64 + 32 + j]);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 32; j++) assert_true(y[768 + i * 32 + j] == x[(4 + i) * 64 + 16 + j]);
  /* p[c][a][b] = v[a][b][c] with v = reshape(t[0:2, 0:8], 2, 2, 4): v[a][b][c] = t[a][b*4+c] */
  for (int c2 = 0; c2 < 4; c2++)
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++) {
        float got = y[896 + c2 * 4 + a * 2 + b], want = x[a * 64 + b * 4 + c2];
        if (got != want) fail_msg("p[%d][%d][%d] = %g, want %g", c2, a, b, got, want);
      }
  tk_free(ctx, dx);
  tk_free(ctx, dy);
  tk_module_destroy(m);
}

/* ---- join, split, interleave, cat ------------------------------------------------------- */

/* a: 8 x 4 from x, b = 10 a. y: join(a, b) flattened, interleave(a, q) with (p, q) =
 * split(join(a, b)) (so q == b), cat(p, b) (p == a), and cat of two 1-D tiles. */
static const char JOINS[] =
    "kernel k(x: *f32, y: *f32) {\n"
    "    let r = arange(0, 8);\n"
    "    let a = load(x + r[:, None] * 4 + arange(0, 4)[None, :]);\n"
    "    let b = a * 10.0;\n"
    "    let j = join(a, b);\n"
    "    let (p, q) = split(j);\n"
    "    store(y + arange(0, 64), reshape(j, 64));\n"
    "    store(y + 64 + arange(0, 64), reshape(interleave(a, q), 64));\n"
    "    store(y + 128 + arange(0, 64), reshape(cat(p, b), 64));\n"
    "    store(y + 192 + arange(0, 16), cat(r, r * 2) as f32);\n"
    "}\n"
;

static void test_join_split_cat(void **state) {
  (void)state;
  tk_module *m;
  tk_kernel *k = compile(JOINS, NULL, "k", &m);
  float x[32], y[208];
  for (int i = 0; i < 32; i++) x[i] = (float)i + 0.5f;
  tk_devptr dx = upload(x, sizeof x), dy = upload(NULL, sizeof y);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dy)};
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 2));
  ok(tk_memcpy_dtoh(ctx, y, dy, sizeof y));
  for (int i = 0; i < 32; i++) {
    /* join and interleave: a and b alternate along the (new or last) axis */
    assert_true(y[2 * i] == x[i] && y[2 * i + 1] == x[i] * 10);
    assert_true(y[64 + 2 * i] == x[i] && y[64 + 2 * i + 1] == x[i] * 10);
    /* cat along axis 0: all of a, then all of b */
    assert_true(y[128 + i] == x[i] && y[128 + 32 + i] == x[i] * 10);
  }
  for (int i = 0; i < 8; i++) assert_true(y[192 + i] == (float)i && y[200 + i] == (float)(2 * i));
  tk_free(ctx, dx);
  tk_free(ctx, dy);
  tk_module_destroy(m);
}

/* ---- gather -------------------------------------------------------------------------------- */

/* t: 8 x 16 from x. y[0:32] = gather(t, i, 1) with i (8 x 4) in [0, 16); y[32:64] =
 * gather(t, i0, 0) with i0 (2 x 16) in [0, 8). An index out of range is a run-time
 * error on the interpreter. */
static const char GATHER[] =
    "kernel k(x: *f32, idx: *i32, y: *f32) {\n"
    "    let r = arange(0, 8);\n"
    "    let c = arange(0, 16);\n"
    "    let t = load(x + r[:, None] * 16 + c[None, :]);\n"
    "    let i = load(idx + r[:, None] * 4 + arange(0, 4)[None, :]);\n"
    "    let g = gather(t, i, 1);\n"
    "    store(y + r[:, None] * 4 + arange(0, 4)[None, :], g);\n"
    "    let i0 = load(idx + 32 + arange(0, 2)[:, None] * 16 + c[None, :]);\n"
    "    store(y + 32 + arange(0, 2)[:, None] * 16 + c[None, :], gather(t, i0, 0));\n"
    "}\n"
;

static void test_gather(void **state) {
  (void)state;
  tk_module *m;
  tk_kernel *k = compile(GATHER, NULL, "k", &m);
  float x[128], y[64];
  int32_t idx[64];
  for (int i = 0; i < 128; i++) x[i] = (float)i;
  for (int i = 0; i < 32; i++) idx[i] = (i * 7 + 3) % 16;
  for (int i = 0; i < 32; i++) idx[32 + i] = (i * 5 + 1) % 8;
  tk_devptr dx = upload(x, sizeof x), di = upload(idx, sizeof idx), dy = upload(NULL, sizeof y);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(di), tk_arg_ptr(dy)};
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 3));
  ok(tk_memcpy_dtoh(ctx, y, dy, sizeof y));
  for (int r = 0; r < 8; r++)
    for (int j = 0; j < 4; j++) assert_true(y[r * 4 + j] == x[r * 16 + idx[r * 4 + j]]);
  for (int r = 0; r < 2; r++)
    for (int j = 0; j < 16; j++) assert_true(y[32 + r * 16 + j] == x[idx[32 + r * 16 + j] * 16 + j]);
  idx[5] = 16;
  ok(tk_memcpy_htod(ctx, di, idx, sizeof idx));
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 3), TK_ERR_RUNTIME);
  assert_non_null(strstr(tk_last_error(ctx), "gather index out of range"));
  tk_free(ctx, dx);
  tk_free(ctx, di);
  tk_free(ctx, dy);
  tk_module_destroy(m);
}

/* ---- sort and topk ------------------------------------------------------------------------- */

/* Rows of 16 (with ties and negative zeros) sorted up and down, their 4 largest, and a
 * 1-D tile of 8 sorted; against qsort. */
static const char SORT[] =
    "kernel k(x: *f32, y: *f32) {\n"
    "    let r = arange(0, 4);\n"
    "    let c = arange(0, 16);\n"
    "    let t = load(x + r[:, None] * 16 + c[None, :]);\n"
    "    store(y + r[:, None] * 16 + c[None, :], sort(t));\n"
    "    store(y + 64 + r[:, None] * 16 + c[None, :], sort(t, descending = true));\n"
    "    store(y + 128 + r[:, None] * 4 + arange(0, 4)[None, :], topk(t, 4));\n"
    "    let v = load(x + arange(0, 8));\n"
    "    store(y + 144 + arange(0, 8), sort(v));\n"
    "}\n"
;

static int cmp_up(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

static void test_sort_topk(void **state) {
  (void)state;
  tk_module *m;
  tk_kernel *k = compile(SORT, NULL, "k", &m);
  float x[64], y[152];
  for (int i = 0; i < 64; i++) x[i] = (float)((i * 37 + 11) % 23) - 11.0f;
  x[3] = -0.0f;
  tk_devptr dx = upload(x, sizeof x), dy = upload(NULL, sizeof y);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dy)};
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 2));
  ok(tk_memcpy_dtoh(ctx, y, dy, sizeof y));
  for (int r = 0; r < 4; r++) {
    float w[16];
    memcpy(w, x + r * 16, sizeof w);
    qsort(w, 16, sizeof *w, cmp_up);
    for (int j = 0; j < 16; j++) {
      if (y[r * 16 + j] != w[j]) fail_msg("sort row %d [%d] = %g, want %g", r, j, y[r * 16 + j], w[j]);
      if (y[64 + r * 16 + j] != w[15 - j]) fail_msg("descending row %d [%d]", r, j);
    }
    for (int j = 0; j < 4; j++) assert_true(y[128 + r * 4 + j] == w[15 - j]);
  }
  float w[8];
  memcpy(w, x, sizeof w);
  qsort(w, 8, sizeof *w, cmp_up);
  for (int j = 0; j < 8; j++) assert_true(y[144 + j] == w[j]);
  tk_free(ctx, dx);
  tk_free(ctx, dy);
  tk_module_destroy(m);
}

/* ---- histogram --------------------------------------------------------------------------- */

/* HIST over 1000 elements in 4 programs, against counts made in C. */
static void test_histogram(void **state) {
  (void)state;
  tk_module *m;
  tk_kernel *k = compile(HIST, NULL, "hist", &m);
  enum { N = 1000, P = 1024, H = 8 + 16 + 4 + 32 + 1024 };
  int32_t x[P], h[H], want[H] = {0};
  uint8_t b[P];
  for (int i = 0; i < P; i++) x[i] = (i * 37 + 11) % 23 - 9; /* [-9, 13]: some out of every range */
  for (int i = 0; i < P; i++) b[i] = (uint8_t)((i * 13) % 7);
  for (int i = 0; i < P; i++) {
    int v = i < N ? x[i] : 0;
    if (i < N && v >= 0 && v < 8) want[v]++;
    if (v + 4 >= 0 && v + 4 < 16) want[8 + v + 4]++;
    if (i < N && b[i] < 4) want[24 + b[i]]++;
    for (int r = 0; r < 4; r++)
      if (2 * v + r >= 0 && 2 * v + r < 32) want[28 + 2 * v + r]++;
    if (i < N && v * 64 + 512 >= 0 && v * 64 + 512 < 1024) want[60 + v * 64 + 512]++;
  }
  tk_devptr dx = upload(x, sizeof x), db = upload(b, sizeof b), dh = upload(NULL, sizeof h);
  memset(h, 0, sizeof h);
  ok(tk_memcpy_htod(ctx, dh, h, sizeof h));
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(db), tk_arg_ptr(dh), tk_arg_i32(N)};
  ok(tk_launch(k, (tk_grid){4, 1, 1}, NULL, args, 4));
  ok(tk_memcpy_dtoh(ctx, h, dh, sizeof h));
  for (int i = 0; i < H; i++)
    if (h[i] != want[i]) fail_msg("bin %d: %d, want %d", i, h[i], want[i]);
  tk_free(ctx, dx);
  tk_free(ctx, db);
  tk_free(ctx, dh);
  tk_module_destroy(m);
}

/* ---- batched dot ------------------------------------------------------------------------ */

/* f as f16 bits, for the normal values and zeros used here (no rounding needed). */
static uint16_t f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  if ((u & 0x7fffffff) == 0) return sign;
  return (uint16_t)(sign | ((((u >> 23) & 0xff) - 127 + 15) << 10) | ((u >> 13) & 0x3ff));
}

/* BDOT against C loops: per batch, acc + a[i] @ b[i] (f16 inputs, small whole eighths: every
 * product and sum exact in f32, so any order agrees) and i8 into i32. */
static void test_batched_dot(void **state) {
  (void)state;
  tk_module *m;
  tk_kernel *k = compile(BDOT, NULL, "bdot", &m);
  enum { B = 4 };
  static uint16_t a[B * 32 * 16], b[B * 16 * 32];
  static float acc[B * 32 * 32], c[B * 32 * 32];
  static int8_t a8[B * 32 * 32], b8[B * 32 * 32];
  static int32_t c8[B * 32 * 32];
  float af[B * 32 * 16], bf[B * 16 * 32];
  for (int i = 0; i < B * 512; i++) {
    af[i] = (float)((i * 7) % 17 - 8) / 8;
    bf[i] = (float)((i * 5) % 13 - 6) / 8;
    a[i] = f32_to_f16(af[i]);
    b[i] = f32_to_f16(bf[i]);
  }
  for (int i = 0; i < B * 1024; i++) {
    acc[i] = (float)(i % 9);
    a8[i] = (int8_t)((i * 3) % 255 - 127);
    b8[i] = (int8_t)((i * 11) % 251 - 125);
  }
  tk_devptr d[7] = {upload(a, sizeof a), upload(b, sizeof b), upload(acc, sizeof acc), upload(a8, sizeof a8),
                    upload(b8, sizeof b8), upload(NULL, sizeof c), upload(NULL, sizeof c8)};
  tk_arg args[7];
  for (int i = 0; i < 7; i++) args[i] = tk_arg_ptr(d[i]);
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 7));
  ok(tk_memcpy_dtoh(ctx, c, d[5], sizeof c));
  ok(tk_memcpy_dtoh(ctx, c8, d[6], sizeof c8));
  for (int bi = 0; bi < B; bi++)
    for (int r = 0; r < 32; r++)
      for (int n = 0; n < 32; n++) {
        float want = acc[bi * 1024 + r * 32 + n];
        int32_t want8 = 0;
        for (int q = 0; q < 16; q++) want += af[bi * 512 + r * 16 + q] * bf[bi * 512 + q * 32 + n];
        for (int q = 0; q < 32; q++) want8 += a8[bi * 1024 + r * 32 + q] * b8[bi * 1024 + q * 32 + n];
        if (c[bi * 1024 + r * 32 + n] != want)
          fail_msg("f16 batch %d [%d, %d]: %g, want %g", bi, r, n, c[bi * 1024 + r * 32 + n], want);
        if (c8[bi * 1024 + r * 32 + n] != want8)
          fail_msg("i8 batch %d [%d, %d]: %d, want %d", bi, r, n, c8[bi * 1024 + r * 32 + n], want8);
      }
  for (int i = 0; i < 7; i++) tk_free(ctx, d[i]);
  tk_module_destroy(m);
}

/* x rounded to f16 (to nearest, ties to even), for the normal range used here. */
static double round_f16(double x) {
  if (x == 0) return x;
  int e;
  frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
  return ldexp(nearbyint(ldexp(x, 11 - e)), e - 11);
}

static float f16_to_f32(uint16_t h) {
  int e = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = e ? ldexp(1024 + mant, e - 25) : ldexp(mant, -24);
  return (float)(h & 0x8000 ? -v : v);
}

/* F16ACC against C: each call's acc + sum of products (exact in double for these eighths)
 * rounded to f16; acc starts near 2048, where f16's spacing is 2, so the rounding shows. */
static void test_f16_accumulator(void **state) {
  (void)state;
  tk_module *m;
  tk_kernel *k = compile(F16ACC, NULL, "f16acc", &m);
  static uint16_t a[32 * 16], b[16 * 32], acc[32 * 32], c[32 * 32];
  float af[32 * 16], bf[16 * 32], accf[32 * 32];
  for (int i = 0; i < 512; i++) {
    af[i] = (float)((i * 7) % 17 - 8) / 8;
    bf[i] = (float)((i * 5) % 13 - 6) / 8;
    a[i] = f32_to_f16(af[i]);
    b[i] = f32_to_f16(bf[i]);
  }
  for (int i = 0; i < 1024; i++) {
    accf[i] = (float)(2048 + 2 * (i % 5));
    acc[i] = f32_to_f16(accf[i]);
  }
  tk_devptr d[4] = {upload(a, sizeof a), upload(b, sizeof b), upload(acc, sizeof acc), upload(NULL, sizeof c)};
  tk_arg args[4];
  for (int i = 0; i < 4; i++) args[i] = tk_arg_ptr(d[i]);
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 4));
  ok(tk_memcpy_dtoh(ctx, c, d[3], sizeof c));
  int rounded = 0;
  for (int r = 0; r < 32; r++)
    for (int n = 0; n < 32; n++) {
      double p = 0;
      for (int q = 0; q < 16; q++) p += af[r * 16 + q] * bf[q * 32 + n];
      double once = round_f16(accf[r * 32 + n] + p), want = round_f16(once + p);
      rounded += once != accf[r * 32 + n] + p;
      if (f16_to_f32(c[r * 32 + n]) != want)
        fail_msg("[%d, %d]: %g, want %g", r, n, f16_to_f32(c[r * 32 + n]), want);
    }
  assert_true(rounded > 100); /* the rounding is what this test is about */
  for (int i = 0; i < 4; i++) tk_free(ctx, d[i]);
  tk_module_destroy(m);
}

/* ---- load and store hints ------------------------------------------------------------------ */

/* HINTS over 300 elements in 3 programs: the hints change nothing the interpreter computes. */
static void test_hints_ignored(void **state) {
  (void)state;
  tk_module *m;
  tk_kernel *k = compile(HINTS, NULL, "hints", &m);
  enum { N = 300 };
  float x[N], y[4 * N];
  for (int i = 0; i < N; i++) x[i] = (float)(i % 17) * 0.25f - 2;
  tk_devptr dx = upload(x, sizeof x), dy = upload(NULL, sizeof y);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i32(N)};
  ok(tk_launch(k, (tk_grid){3, 1, 1}, NULL, args, 3));
  ok(tk_memcpy_dtoh(ctx, y, dy, sizeof y));
  for (int i = 0; i < N; i++) {
    assert_true(y[i] == x[i] + x[i]);
    assert_true(y[N + i] == x[i] * x[i]);
    assert_true(y[2 * N + i] == (x[i] - x[i]) + x[i]);
    assert_true(y[3 * N + i] == (i == 0 ? x[0] : 2 * (x[i] + x[i])));
  }
  tk_free(ctx, dx);
  tk_free(ctx, dy);
  tk_module_destroy(m);
}


/* ---- fp8 ------------------------------------------------------------------------------- */

/* The value of fp8 byte b, from the formats' definitions (OCP 8-bit floats): E4M3 has bias
 * 7, no infinities and S.1111.111 as its only NaN; E5M2 has bias 15 and IEEE's specials. */
static double f8_value(bool e5, uint8_t b) {
  int m = e5 ? 2 : 3, bias = e5 ? 15 : 7, e = (b & 0x7f) >> m, f = b & ((1 << m) - 1);
  double s = b & 0x80 ? -1 : 1;
  if (!e5 && (b & 0x7f) == 0x7f) return NAN;
  if (e5 && e == 31) return f ? NAN : s * INFINITY;
  return s * (e ? ldexp(f + (1 << m), e - bias - m) : ldexp(f, 1 - bias - m));
}

/* x as fp8 by the language's rule, found by search rather than arithmetic: the nearest
 * finite value, ties to the even code (the even significand), anything past the largest
 * finite value (infinities too) that value, NaN 0x7f. */
static uint8_t f8_round(bool e5, double x) {
  if (isnan(x)) return 0x7f;
  int maxcode = e5 ? 0x7b : 0x7e, best = 0;
  double a = fabs(x);
  if (a > f8_value(e5, (uint8_t)maxcode)) best = maxcode;
  else
    for (int i = 1; i <= maxcode; i++) {
      double d = fabs(f8_value(e5, (uint8_t)i) - a), db = fabs(f8_value(e5, (uint8_t)best) - a);
      if (d < db || (d == db && i % 2 == 0)) best = i;
    }
  return (uint8_t)((signbit(x) ? 0x80 : 0) | best);
}

/* x rounded to p significant bits, exponent at least emin (subnormals), to inf past max. */
static double round_bits(double x, int p, int emin, double max) {
  if (x == 0 || isnan(x) || isinf(x)) return x;
  int e = ilogb(x) < emin ? emin : ilogb(x);
  double r = ldexp(nearbyint(ldexp(x, p - 1 - e)), e - (p - 1));
  return fabs(r) > max ? copysign(INFINITY, x) : r;
}

/* f16 bits h as a value, every class. */
static double f16_any(uint16_t h) {
  int e = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v = e == 31 ? (mant ? NAN : INFINITY) : e ? ldexp(1024 + mant, e - 25) : ldexp(mant, -24);
  return h & 0x8000 ? -v : v;
}

static bool same(double got, double want) { return isnan(want) ? isnan(got) : got == want && signbit(got) == signbit(want); }

/* The inputs of F8CVT: around every midpoint between neighbouring fp8 values of both
 * types (the midpoint, and the floats either side), the specials and the edges of
 * saturation, then their negations. */
static void f8_inputs(float *x, double *xd, int32_t *xi) {
  int n = 0;
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < (t ? 0x7b : 0x7e); i++) {
      float mid = (float)((f8_value(t, (uint8_t)i) + f8_value(t, (uint8_t)(i + 1))) / 2);
      x[n++] = mid;
      x[n++] = nextafterf(mid, INFINITY);
      x[n++] = nextafterf(mid, 0);
    }
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 448, 449, 464, 465, 480, 500,
                           57344, 61439, 61440, 65504, 1e10f, -1e10f, FLT_MAX, 0x1p-10f, 0x1p-17f,
                           0x1p-18f, 0x1p-30f, FLT_MIN / 2, 1, -1};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++) x[n++] = special[i];
  for (int i = 0; n < 1024; i++) x[n++] = -x[i];
  for (int i = 0; i < 1024; i++) {
    xd[i] = (double)x[i] * (1 + 0x1p-40); /* just past the ties, which f32 cannot hold */
    xi[i] = i < 512 ? i - 256 : (i - 512) * 137 - 30000;
  }
  xi[1020] = 61439, xi[1021] = 61440, xi[1022] = INT32_MIN, xi[1023] = INT32_MAX;
}

/* F8CVT against the rules written out above, byte for byte (a NaN as any NaN). */
static void test_fp8_conversions(void **state) {
  (void)state;
  tk_module *m;
  tk_kernel *k = compile(F8CVT, NULL, "f8cvt", &m);
  static float x[1024], r32[512];
  static double xd[1024];
  static int32_t xi[1024], ri[512];
  static uint8_t bytes[256], o4[3328], o5[3328];
  static uint16_t r16[512];
  f8_inputs(x, xd, xi);
  for (int i = 0; i < 256; i++) bytes[i] = (uint8_t)i;
  tk_devptr d[10] = {upload(x, sizeof x), upload(xd, sizeof xd), upload(xi, sizeof xi),
                     upload(bytes, 256), upload(bytes, 256), upload(NULL, sizeof o4),
                     upload(NULL, sizeof o5), upload(NULL, sizeof r32), upload(NULL, sizeof r16),
                     upload(NULL, sizeof ri)};
  tk_arg args[10];
  for (int i = 0; i < 10; i++) args[i] = tk_arg_ptr(d[i]);
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 10));
  ok(tk_memcpy_dtoh(ctx, o4, d[5], sizeof o4));
  ok(tk_memcpy_dtoh(ctx, o5, d[6], sizeof o5));
  ok(tk_memcpy_dtoh(ctx, r32, d[7], sizeof r32));
  ok(tk_memcpy_dtoh(ctx, r16, d[8], sizeof r16));
  ok(tk_memcpy_dtoh(ctx, ri, d[9], sizeof ri));
  int ties = 0;
  for (int i = 0; i < 1024; i++) {
    uint8_t want[6] = {f8_round(false, x[i]), f8_round(true, x[i]),
                       f8_round(false, round_bits(x[i], 11, -14, 65504)),
                       f8_round(true, round_bits(x[i], 8, -126, FLT_MAX)), f8_round(false, xd[i]),
                       f8_round(true, xi[i])};
    uint8_t got[6] = {o4[i], o5[i], o4[1024 + i], o5[1024 + i], o4[2048 + i], o5[2048 + i]};
    for (int j = 0; j < 6; j++)
      if (got[j] != want[j]) fail_msg("input %d (%.9g) conversion %d: 0x%02x, want 0x%02x", i, x[i], j, got[j], want[j]);
    ties += want[0] != f8_round(false, xd[i]);
  }
  assert_true(ties > 50); /* f64 inputs just off a tie that rounds to even, the other way */
  for (int b = 0; b < 256; b++)
    for (int t = 0; t < 2; t++) {
      double v = f8_value(t, (uint8_t)b);
      double want_i = isnan(v) ? 0 : v >= 0x1p31 ? INT32_MAX : v < -0x1p31 ? INT32_MIN : trunc(v);
      if (!same(r32[256 * t + b], v) || !same(f16_any(r16[256 * t + b]), v) || ri[256 * t + b] != want_i)
        fail_msg("byte 0x%02x of %s: f32 %g, f16 %g, i32 %d; want %g", b, t ? "f8e5m2" : "f8e4m3",
                 r32[256 * t + b], f16_any(r16[256 * t + b]), ri[256 * t + b], v);
      uint8_t other = t ? o4[3072 + b] : o5[3072 + b];
      if (other != f8_round(!t, v)) fail_msg("byte 0x%02x into the other fp8 type: 0x%02x", b, other);
    }
  for (int i = 0; i < 10; i++) tk_free(ctx, d[i]);
  tk_module_destroy(m);
}

/* F8DOT against C: products of fp8 values are exact in f32, and these sums too (the
 * values are whole multiples of 1/16 below 16), so any order agrees; the f16 accumulator
 * rounds once per call. Also the fp8 tiles that only move: where, a masked load's other. */
static void test_fp8_dot(void **state) {
  (void)state;
  tk_module *m;
  tk_kernel *k = compile(F8DOT, NULL, "f8dot", &m);
  static uint8_t a[32 * 64], b[64 * 32], w[2048];
  static float acc[1024], c[1024], dd[1024];
  static uint16_t h[1024];
  for (int i = 0; i < 2048; i++) {
    a[i] = f8_round(false, ((i * 7) % 33 - 16) / 8.0);
    b[i] = f8_round(true, ((i * 5) % 29 - 14) / 16.0);
    w[i] = (uint8_t)(i * 37);
  }
  for (int i = 0; i < 1024; i++) acc[i] = (float)(i % 9 - 4);
  tk_devptr dv[7] = {upload(a, sizeof a), upload(b, sizeof b), upload(acc, sizeof acc),
                     upload(NULL, sizeof c), upload(NULL, sizeof dd), upload(NULL, sizeof h),
                     upload(w, sizeof w)};
  tk_arg args[7];
  for (int i = 0; i < 7; i++) args[i] = tk_arg_ptr(dv[i]);
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 7));
  ok(tk_memcpy_dtoh(ctx, c, dv[3], sizeof c));
  ok(tk_memcpy_dtoh(ctx, dd, dv[4], sizeof dd));
  ok(tk_memcpy_dtoh(ctx, h, dv[5], sizeof h));
  static uint8_t wout[2048];
  ok(tk_memcpy_dtoh(ctx, wout, dv[6], sizeof wout));
  for (int r = 0; r < 32; r++)
    for (int n = 0; n < 32; n++) {
      double p = 0, q = acc[r * 32 + n], s = acc[r * 32 + n];
      for (int j = 0; j < 64; j++) {
        p += f8_value(false, a[r * 64 + j]) * f8_value(true, b[j * 32 + n]);
        q += f8_value(false, a[r * 64 + j]) * f8_value(false, a[n * 64 + j]);
      }
      for (int j = 0; j < 32; j++) s += f8_value(true, b[r * 32 + j]) * f8_value(true, b[j * 32 + n]);
      int o = r * 32 + n;
      if (c[o] != p || dd[o] != q || f16_any(h[o]) != round_bits(s, 11, -14, 65504))
        fail_msg("[%d, %d]: %g %g %g, want %g %g %g", r, n, c[o], dd[o], f16_any(h[o]), p, q,
                 round_bits(s, 11, -14, 65504));
      uint8_t masked = o < 700 ? w[o] : f8_round(false, -3.0);
      uint8_t sel = r > n ? a[r * 64 + n] : f8_round(false, 0.5);
      if (wout[o] != masked || wout[1024 + o] != sel)
        fail_msg("[%d, %d]: load 0x%02x (want 0x%02x), where 0x%02x (want 0x%02x)", r, n,
                 wout[o], masked, wout[1024 + o], sel);
    }
  for (int i = 0; i < 7; i++) tk_free(ctx, dv[i]);
  tk_module_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_param_f16),
      cmocka_unit_test(test_dtype_param_bf16),
      cmocka_unit_test(test_dtype_param_f32),
      cmocka_unit_test(test_dtype_param_rounds_in_its_type),
      cmocka_unit_test(test_dtype_param_bad_define),
      cmocka_unit_test(test_tuple_online_softmax),
      cmocka_unit_test(test_early_exit),
      cmocka_unit_test(test_while_break_continue),
      cmocka_unit_test(test_slices_and_permute),
      cmocka_unit_test(test_join_split_cat),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_sort_topk),
      cmocka_unit_test(test_histogram),
      cmocka_unit_test(test_batched_dot),
      cmocka_unit_test(test_f16_accumulator),
      cmocka_unit_test(test_hints_ignored),
      cmocka_unit_test(test_fp8_conversions),
      cmocka_unit_test(test_fp8_dot),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
