/* The numerics of docs/language.md, "Precision", on the interpreter, against C computations
 * of what the reference says, bit for bit:
 *  - dot's input precision: ieee is acc + a[k] * b[k] in order, each product and sum
 *    rounded to f32; tf32 the same on the operands rounded to tf32 (to nearest, ties away
 *    from zero: cvt.rna.tf32.f32); tf32x3 Triton's three products of the big and small
 *    parts; the default is tf32, and tk_compile_options.dot_precision changes it;
 *  - fp_contract: a * b + c is one fma when asked for, two roundings otherwise.
 * Each check also makes sure that what it compares can differ (the rounding modes give
 * different results on these inputs), so none passes by accident. TK_TEST_SEED changes the
 * inputs. */
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
#include "tests/kernels/precision_kernels.h"

static tk_context *ctx;
static uint64_t rng;

static int setup(void **state) {
  (void)state;
  const char *s = getenv("TK_TEST_SEED");
  rng = s ? strtoull(s, NULL, 0) : 0x9e3779b97f4a7c15ull;
  tk_context_options o = {TK_BACKEND_INTERP, 0};
  return tk_context_create(&ctx, &o) == TK_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  tk_context_destroy(ctx);
  return 0;
}

static void ok(tk_status s) {
  if (s != TK_OK) fail_msg("%s: %s", tk_status_name(s), tk_last_error(ctx));
}

static uint64_t next(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [-1, 1) with all 24 bits of mantissa in use. */
static float uniform(void) { return (float)((double)(next() >> 40) / (double)(1ull << 23) - 1.0); }

static float tf32(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  memcpy(&x, &u, 4);
  return x;
}

static tk_kernel *compile(const char *text, const char *kernel, const tk_compile_options *o) {
  tk_module *m;
  ok(tk_module_compile(ctx, &m, text, strlen(text), kernel, o));
  tk_kernel *k;
  ok(tk_module_get_kernel(m, kernel, &k));
  return k;
}

static tk_devptr upload(const void *p, size_t bytes) {
  tk_devptr d;
  ok(tk_malloc(ctx, &d, bytes));
  ok(tk_memcpy_htod(ctx, d, p, bytes));
  return d;
}

enum { M = 40, N = 36, K = 70 }; /* ragged: masked rows, columns and K tail */

/* The interpreter's c = a @ b for the kernel text under options o. */
static void run_matmul(const char *text, const tk_compile_options *o, const float *a, const float *b,
                       float *c) {
  tk_kernel *k = compile(text, "mm", o);
  tk_devptr da = upload(a, sizeof(float) * M * K), db = upload(b, sizeof(float) * K * N);
  tk_devptr dc = upload(c, sizeof(float) * M * N);
  tk_arg args[] = {tk_arg_ptr(da), tk_arg_ptr(db), tk_arg_ptr(dc), tk_arg_i32(M), tk_arg_i32(N), tk_arg_i32(K)};
  ok(tk_launch(k, (tk_grid){(M + 31) / 32, (N + 31) / 32, 1}, NULL, args, 6));
  ok(tk_memcpy_dtoh(ctx, c, dc, sizeof(float) * M * N));
  tk_free(ctx, da), tk_free(ctx, db), tk_free(ctx, dc);
}

/* The reference: acc = 0, then for each K block of 32 (the kernel's), acc + a @ b over
 * the block in k order (masked lanes are 0, adding exact zeros), on the operands as the
 * precision says. Each product and sum in a statement of its own: no contraction. */
static float ref_block(const float *a, const float *b, int m, int n, int k0, int k1, int part, float acc) {
  for (int k = k0; k < k1; k++) {
    float x = a[m * K + k], y = b[k * N + n];
    float bx = tf32(x), by = tf32(y), sx = tf32(x - bx), sy = tf32(y - by);
    if (part == 1) x = sx, y = by;
    if (part == 2) x = bx, y = sy;
    if (part == 3 || part == 4) x = bx, y = by;
    float p = x * y;
    acc = acc + p;
  }
  return acc;
}

static float ref_dot(const float *a, const float *b, int m, int n, const char *prec) {
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += 32) {
    int k1 = k0 + 32 < K ? k0 + 32 : K;
    if (!strcmp(prec, "ieee")) {
      acc = ref_block(a, b, m, n, k0, k1, 0, acc);
    } else if (!strcmp(prec, "tf32")) {
      acc = ref_block(a, b, m, n, k0, k1, 4, acc);
    } else { /* tf32x3: p from zero, small parts first, NaNs to 0, big x big, + acc */
      float p = ref_block(a, b, m, n, k0, k1, 1, 0.0f);
      p = ref_block(a, b, m, n, k0, k1, 2, p);
      if (p != p) p = 0.0f;
      p = ref_block(a, b, m, n, k0, k1, 3, p);
      acc = p + acc;
    }
  }
  return acc;
}

static void check_matmul(const char *text, const tk_compile_options *o, const char *prec) {
  float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
  float *c = calloc(M * N, sizeof(float));
  for (int i = 0; i < M * K; i++) a[i] = uniform();
  for (int i = 0; i < K * N; i++) b[i] = uniform();
  run_matmul(text, o, a, b, c);
  int differ = 0; /* from the ieee result: the emulation is not f32 in disguise */
  double worst = 0;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      float want = ref_dot(a, b, m, n, prec), got = c[m * N + n];
      if (memcmp(&want, &got, 4))
        fail_msg("%s [%d, %d]: interpreter %.9g, reference %.9g", prec, m, n, got, want);
      float ieee = ref_dot(a, b, m, n, "ieee");
      differ += ieee != got;
      double exact = 0, mag = 0;
      for (int k = 0; k < K; k++) {
        exact += (double)a[m * K + k] * b[k * N + n];
        mag += fabs((double)a[m * K + k] * b[k * N + n]);
      }
      double e = fabs(got - exact) / mag;
      if (e > worst) worst = e;
    }
  /* the error relative to sum |a b| each precision promises (docs/language.md) */
  double bound = !strcmp(prec, "tf32") ? 2 * 0x1p-11 : K * 0x1p-23;
  if (worst > bound) fail_msg("%s: error %g of sum |ab|, more than %g", prec, worst, bound);
  if (strcmp(prec, "ieee") && differ == 0) fail_msg("%s: every element equals the ieee result", prec);
  if (!strcmp(prec, "tf32") && worst < 1e-5) fail_msg("tf32: error %g, too small for tf32", worst);
  free(a), free(b), free(c);
}

static void test_dot_ieee(void **state) {
  (void)state;
  check_matmul(PK_DOT_IEEE, NULL, "ieee");
}

static void test_dot_tf32(void **state) {
  (void)state;
  check_matmul(PK_DOT_TF32, NULL, "tf32");
}

static void test_dot_tf32x3(void **state) {
  (void)state;
  check_matmul(PK_DOT_TF32X3, NULL, "tf32x3");
}

/* No input_precision: tf32, unless the compile options say otherwise; a call's own
 * precision wins over the options'. */
static void test_dot_default(void **state) {
  (void)state;
  check_matmul(PK_DOT_DEFAULT, NULL, "tf32");
  tk_compile_options o = {.no_cache = 1, .dot_precision = TK_DOT_IEEE};
  check_matmul(PK_DOT_DEFAULT, &o, "ieee");
  o.dot_precision = TK_DOT_TF32X3;
  check_matmul(PK_DOT_DEFAULT, &o, "tf32x3");
  check_matmul(PK_DOT_TF32, &o, "tf32");
  o.dot_precision = (tk_dot_precision)7;
  tk_module *m;
  assert_int_equal(tk_module_compile(ctx, &m, PK_DOT_DEFAULT, strlen(PK_DOT_DEFAULT), "mm", &o),
                   TK_ERR_INVALID);
  assert_non_null(strstr(tk_last_error(ctx), "dot_precision"));
}

/* tf32 rounding itself, on the values where it matters: a @ I is tf32(a) exactly (every
 * other product is 0; so no infinities here, whose products with 0 are NaN), ties (the
 * dropped 13 bits exactly half) round away from zero, a carry reaches the exponent,
 * subnormals round like the rest. */
static void test_tf32_rounding(void **state) {
  (void)state;
  enum { S = 32 };
  static const uint32_t bits[] = {0x3f801000u, 0xbf801000u, 0x3f803000u, 0x3f800fffu, 0x3fffffffu,
                                  0x7f7fefffu, 0x00001000u, 0x00000fffu, 0x80001000u, 0x3f802001u};
  float *a = calloc(S * S, sizeof(float)), *eye = calloc(S * S, sizeof(float)), *c = calloc(S * S, sizeof(float));
  size_t nb = sizeof bits / sizeof bits[0];
  for (int i = 0; i < S * S; i++) {
    if ((size_t)i < nb) memcpy(&a[i], &bits[i], 4);
    else a[i] = uniform();
  }
  for (int i = 0; i < S; i++) eye[i * S + i] = 1.0f;
  tk_kernel *k = compile(PK_DOT_TF32, "mm", NULL);
  tk_devptr da = upload(a, sizeof(float) * S * S), db = upload(eye, sizeof(float) * S * S);
  tk_devptr dc = upload(c, sizeof(float) * S * S);
  tk_arg args[] = {tk_arg_ptr(da), tk_arg_ptr(db), tk_arg_ptr(dc), tk_arg_i32(S), tk_arg_i32(S), tk_arg_i32(S)};
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 6));
  ok(tk_memcpy_dtoh(ctx, c, dc, sizeof(float) * S * S));
  static const uint32_t want[] = {0x3f802000u, 0xbf802000u, 0x3f804000u, 0x3f800000u, 0x40000000u,
                                  0x7f7fe000u, 0x00002000u, 0x00000000u, 0x80002000u, 0x3f802000u};
  for (size_t i = 0; i < nb; i++) {
    uint32_t got;
    memcpy(&got, &c[i], 4);
    if (got != want[i]) fail_msg("tf32(0x%08x) is 0x%08x, not 0x%08x", bits[i], got, want[i]);
  }
  for (int i = (int)nb; i < S * S; i++) {
    float w = tf32(a[i]);
    if (memcmp(&w, &c[i], 4)) fail_msg("tf32(%.9g) is %.9g, not %.9g", a[i], c[i], w);
  }
  tk_free(ctx, da), tk_free(ctx, db), tk_free(ctx, dc);
  free(a), free(eye), free(c);
}

/* fp_contract: one rounding (fmaf) when on, two when off, for each of the three forms. */
static void test_fp_contract(void **state) {
  (void)state;
  enum { L = 1000 };
  float *x = malloc(sizeof(float) * L), *w = malloc(sizeof(float) * L), *z = malloc(sizeof(float) * L);
  float *y = calloc(3 * L, sizeof(float));
  for (int i = 0; i < L; i++) x[i] = uniform(), w[i] = uniform(), z[i] = uniform();
  int differ = 0;
  for (int on = 0; on < 2; on++) {
    tk_compile_options o = {.no_cache = 1, .fp_contract = on};
    tk_kernel *k = compile(PK_CONTRACT, "fmas", &o);
    tk_devptr dx = upload(x, sizeof(float) * L), dw = upload(w, sizeof(float) * L);
    tk_devptr dz = upload(z, sizeof(float) * L), dy = upload(y, sizeof(float) * 3 * L);
    tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dw), tk_arg_ptr(dz), tk_arg_ptr(dy), tk_arg_i32(L)};
    ok(tk_launch(k, (tk_grid){(L + 127) / 128, 1, 1}, NULL, args, 5));
    ok(tk_memcpy_dtoh(ctx, y, dy, sizeof(float) * 3 * L));
    for (int i = 0; i < L; i++) {
      float p = x[i] * w[i];
      float want[3] = {p + z[i], p - z[i], z[i] - p};
      if (on) {
        want[0] = fmaf(x[i], w[i], z[i]);
        want[1] = fmaf(x[i], w[i], -z[i]);
        want[2] = fmaf(-x[i], w[i], z[i]);
      }
      float sep = p + z[i];
      differ += on && memcmp(&sep, &want[0], 4) != 0;
      for (int f = 0; f < 3; f++)
        if (memcmp(&want[f], &y[f * L + i], 4))
          fail_msg("fp_contract=%d, form %d [%d]: %.9g, want %.9g", on, f, i, y[f * L + i], want[f]);
    }
    tk_free(ctx, dx), tk_free(ctx, dw), tk_free(ctx, dz), tk_free(ctx, dy);
  }
  if (!differ) fail_msg("no input where fma and a * b + c differ: the test proves nothing");
  free(x), free(w), free(z), free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dot_ieee),      cmocka_unit_test(test_dot_tf32),
      cmocka_unit_test(test_dot_tf32x3),    cmocka_unit_test(test_dot_default),
      cmocka_unit_test(test_tf32_rounding), cmocka_unit_test(test_fp_contract),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
