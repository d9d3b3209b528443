/*
 * gpu_precision — the numerics of docs/language.md, "Precision", on the CUDA backend
 * against the interpreter, each within the bound the docs state:
 *  - dot's input precision on a ragged masked matmul (tests/kernels/precision_kernels.h):
 *    ieee bit for bit (the FMA path sums in the interpreter's order); tf32 within
 *    K 2^-22 sum|a b| per element (same rounded inputs, same exact products, only the
 *    order and rounding of the sums differ); tf32x3 within 3 K 2^-22 sum|a b|; and each of
 *    tf32 and tf32x3 held to its accuracy against an f64 product, so that a GPU computing
 *    something else (f32 for tf32, tf32 for tf32x3) would be seen;
 *  - fp_contract off and on: bit for bit (the contraction happens in the IR both run);
 *  - accurate sin, cos, exp, exp2 over the full f32 range: within 4 ulp of the
 *    interpreter's libm; the default approximations of sin and cos on [-pi, pi] within
 *    2^-20 absolute;
 *  - and of item 5: tk_kernel_resources on the device's context, and a grid past CUDA's
 *    limits refused alike by both backends.
 * Data: uniform in [-1, 1) with every mantissa bit in use (the dots), ±10^u for u in
 * [-3, 30] (the math). The host test compiles every case through the GPU back end (no
 * device needed). Without a device the device tests are skipped and the program exits 77;
 * with TK_GPU_TESTS_SELFCHECK=1 a second interpreter stands in for the device. The seed is
 * printed; TK_TEST_SEED replays it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests/kernels/precision_kernels.h"

static gh_harness H;

static void ok(tk_context *ctx, tk_status s) {
  if (s != TK_OK) fail_msg("%s on %s: %s", tk_status_name(s), gh_ctx_name(&H, ctx), tk_last_error(ctx));
}

static float uniform(void) { return (float)((double)(gh_rng_next(&H) >> 40) / (double)(1ull << 23) - 1.0); }

static tk_devptr upload(tk_context *ctx, const void *p, size_t bytes) {
  tk_devptr d;
  ok(ctx, tk_malloc(ctx, &d, bytes));
  ok(ctx, tk_memcpy_htod(ctx, d, p, bytes));
  return d;
}

/* ---- dot ---------------------------------------------------------------------------------- */

enum { M = 100, N = 72, K = 70 };

typedef struct {
  const char *name, *text;
  tk_dot_precision option; /* the compile option (the kernel's call may name its own) */
  double slack;            /* the bound against the interpreter, in K 2^-22 sum|ab| (0: exact) */
  double accuracy;         /* the bound against the f64 product, in sum|ab| */
  double at_least;         /* the largest error must reach this (it is that precision) */
} dot_case;

static const dot_case DOTS[] = {
    {"dot_ieee", PK_DOT_IEEE, TK_DOT_DEFAULT, 0, K * 0x1p-23, 0},
    {"dot_tf32", PK_DOT_TF32, TK_DOT_DEFAULT, 1, 0x1p-10, 1e-5},
    {"dot_tf32x3", PK_DOT_TF32X3, TK_DOT_DEFAULT, 3, K * 0x1p-23, 0},
    {"dot_default_is_tf32", PK_DOT_DEFAULT, TK_DOT_DEFAULT, 1, 0x1p-10, 1e-5},
    {"dot_option_ieee", PK_DOT_DEFAULT, TK_DOT_IEEE, 0, K * 0x1p-23, 0},
};
enum { NDOTS = sizeof DOTS / sizeof DOTS[0] };

static void run_dot(tk_context *ctx, const dot_case *c, const float *a, const float *b, float *out) {
  gh_source src = {c->name, c->text, NULL, "mm"};
  tk_compile_options o = {.dot_precision = c->option};
  tk_kernel *k = gh_compile_with(&H, ctx, &src, NULL, &o);
  tk_devptr da = upload(ctx, a, sizeof(float) * M * K), db = upload(ctx, b, sizeof(float) * K * N);
  float *zero = calloc(M * N, sizeof(float));
  tk_devptr dc = upload(ctx, zero, sizeof(float) * M * N);
  free(zero);
  tk_arg args[] = {tk_arg_ptr(da), tk_arg_ptr(db), tk_arg_ptr(dc), tk_arg_i32(M), tk_arg_i32(N), tk_arg_i32(K)};
  ok(ctx, tk_launch(k, (tk_grid){(M + 31) / 32, (N + 31) / 32, 1}, NULL, args, 6));
  ok(ctx, tk_memcpy_dtoh(ctx, out, dc, sizeof(float) * M * N));
  tk_free(ctx, da), tk_free(ctx, db), tk_free(ctx, dc);
}

static void test_dot(void **state) {
  const dot_case *c = *state;
  if (!H.cuda) skip();
  float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
  float *g = malloc(sizeof(float) * M * N), *r = malloc(sizeof(float) * M * N);
  for (int i = 0; i < M * K; i++) a[i] = uniform();
  for (int i = 0; i < K * N; i++) b[i] = uniform();
  run_dot(H.cuda, c, a, b, g);
  run_dot(H.interp, c, a, b, r);
  double worst = 0;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double exact = 0, mag = 0;
      for (int k = 0; k < K; k++) {
        exact += (double)a[m * K + k] * b[k * N + n];
        mag += fabs((double)a[m * K + k] * b[k * N + n]);
      }
      float gv = g[m * N + n], rv = r[m * N + n];
      double bound = c->slack * K * 0x1p-22 * mag;
      if (c->slack == 0 ? memcmp(&gv, &rv, 4) != 0 : !(fabs((double)gv - rv) <= bound))
        fail_msg("%s [%d, %d]: cuda %.9g, interpreter %.9g (bound %.3g)", c->name, m, n, gv, rv, bound);
      double e = fabs(gv - exact) / mag;
      if (!(e <= c->accuracy))
        fail_msg("%s [%d, %d]: cuda %.9g, f64 %.9g: error %.3g of sum|ab|, more than %.3g", c->name,
                 m, n, gv, exact, e, c->accuracy);
      if (e > worst) worst = e;
    }
  if (worst < c->at_least) fail_msg("%s: largest error %.3g: this is not tf32", c->name, worst);
  free(a), free(b), free(g), free(r);
}

/* ---- contraction -------------------------------------------------------------------------- */

enum { L = 3000 };

static void run_contract(tk_context *ctx, int on, const float *in, float *out) {
  gh_source src = {"contract", PK_CONTRACT, NULL, "fmas"};
  tk_compile_options o = {.fp_contract = on};
  tk_kernel *k = gh_compile_with(&H, ctx, &src, NULL, &o);
  tk_devptr d[3];
  for (int i = 0; i < 3; i++) d[i] = upload(ctx, in + i * L, sizeof(float) * L);
  float *zero = calloc(3 * L, sizeof(float));
  tk_devptr dy = upload(ctx, zero, sizeof(float) * 3 * L);
  free(zero);
  tk_arg args[] = {tk_arg_ptr(d[0]), tk_arg_ptr(d[1]), tk_arg_ptr(d[2]), tk_arg_ptr(dy), tk_arg_i32(L)};
  ok(ctx, tk_launch(k, (tk_grid){(L + 127) / 128, 1, 1}, NULL, args, 5));
  ok(ctx, tk_memcpy_dtoh(ctx, out, dy, sizeof(float) * 3 * L));
  for (int i = 0; i < 3; i++) tk_free(ctx, d[i]);
  tk_free(ctx, dy);
}

static void test_contract(void **state) {
  (void)state;
  if (!H.cuda) skip();
  float *in = malloc(sizeof(float) * 3 * L), *g = malloc(sizeof(float) * 3 * L), *r = malloc(sizeof(float) * 3 * L);
  for (int i = 0; i < 3 * L; i++) in[i] = uniform();
  for (int on = 0; on < 2; on++) {
    run_contract(H.cuda, on, in, g);
    run_contract(H.interp, on, in, r);
    for (int i = 0; i < 3 * L; i++)
      if (memcmp(&g[i], &r[i], 4))
        fail_msg("fp_contract=%d, form %d [%d]: cuda %.9g, interpreter %.9g", on, i / L, i % L, g[i], r[i]);
  }
  free(in), free(g), free(r);
}

/* ---- math --------------------------------------------------------------------------------- */

/* The distance in units in the last place between two floats of one sign (or zeros). */
static double ulps(float x, float y) {
  if (x == y || (x != x && y != y)) return 0;
  if (x != x || y != y || isinf(x) || isinf(y)) return INFINITY;
  int32_t a, b;
  memcpy(&a, &x, 4);
  memcpy(&b, &y, 4);
  if (a < 0) a = INT32_MIN - a;
  if (b < 0) b = INT32_MIN - b;
  return fabs((double)a - (double)b);
}

static void run_math(tk_context *ctx, const float *x, float *out) {
  gh_source src = {"trig", PK_MATH, NULL, "trig"};
  tk_kernel *k = gh_compile(&H, ctx, &src, NULL);
  tk_devptr dx = upload(ctx, x, sizeof(float) * L);
  float *zero = calloc(8 * L, sizeof(float));
  tk_devptr dy = upload(ctx, zero, sizeof(float) * 8 * L);
  free(zero);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i32(L)};
  ok(ctx, tk_launch(k, (tk_grid){(L + 127) / 128, 1, 1}, NULL, args, 3));
  ok(ctx, tk_memcpy_dtoh(ctx, out, dy, sizeof(float) * 8 * L));
  tk_free(ctx, dx), tk_free(ctx, dy);
}

static void test_accurate_math(void **state) {
  (void)state;
  if (!H.cuda) skip();
  float *x = malloc(sizeof(float) * L), *g = malloc(sizeof(float) * 8 * L), *r = malloc(sizeof(float) * 8 * L);
  for (int i = 0; i < L; i++) {
    double u = -3 + 33.0 * (double)(gh_rng_next(&H) >> 11) / 0x1p53;
    x[i] = (float)((i % 2 ? -1 : 1) * pow(10, u));
    if (i < L / 4) x[i] = (float)(3.14159265 * uniform()); /* where the approximations hold */
  }
  run_math(H.cuda, x, g);
  run_math(H.interp, x, r);
  static const char *const names[] = {"sin", "cos", "exp", "exp2"};
  for (int f = 0; f < 4; f++)
    for (int i = 0; i < L; i++) {
      /* exp's subnormal results are left out: libdevice may flush them */
      if (fpclassify(r[f * L + i]) == FP_SUBNORMAL) continue;
      double d = ulps(g[f * L + i], r[f * L + i]);
      if (!(d <= 4))
        fail_msg("accurate %s(%.9g): cuda %.9g, interpreter (libm) %.9g: %g ulp", names[f], x[i],
                 g[f * L + i], r[f * L + i], d);
    }
  for (int f = 4; f < 6; f++)
    for (int i = 0; i < L / 4; i++)
      if (!(fabs((double)g[f * L + i] - r[f * L + i]) <= 0x1p-20))
        fail_msg("%s(%.9g): cuda %.9g, interpreter %.9g", names[f - 4], x[i], g[f * L + i], r[f * L + i]);
  free(x), free(g), free(r);
}

/* ---- resources (item 5) ------------------------------------------------------------------- */

/* On the device's context: tk_kernel_resources for the device's arch (NULL), when ptxas is
 * there; a grid past CUDA's limits is TK_ERR_INVALID on both contexts alike. */
static void test_resources_and_grid(void **state) {
  (void)state;
  if (!H.cuda) skip();
  tk_context *ctxs[2] = {H.cuda, H.interp};
  for (int i = 0; i < 2; i++) {
    gh_source src = {"contract", PK_CONTRACT, NULL, "fmas"};
    tk_kernel *k = gh_compile(&H, ctxs[i], &src, NULL);
    tk_resources r;
    tk_status s = tk_kernel_resources(k, NULL, &r);
    if (s == TK_OK) {
      if (r.threads != 128 || r.regs <= 0 || r.occupancy <= 0 || r.occupancy > 1)
        fail_msg("resources on %s: %d threads, %d registers, occupancy %g", gh_ctx_name(&H, ctxs[i]),
                 r.threads, r.regs, r.occupancy);
    } else if (s != TK_ERR_UNSUPPORTED) {
      fail_msg("tk_kernel_resources on %s: %s", gh_ctx_name(&H, ctxs[i]), tk_last_error(ctxs[i]));
    }
    tk_arg args[5] = {tk_arg_ptr(0), tk_arg_ptr(0), tk_arg_ptr(0), tk_arg_ptr(0), tk_arg_i32(0)};
    if (tk_launch(k, (tk_grid){1, 70000, 1}, NULL, args, 5) != TK_ERR_INVALID ||
        !strstr(tk_last_error(ctxs[i]), "y is 70000, more than 65535"))
      fail_msg("grid y = 70000 on %s: %s", gh_ctx_name(&H, ctxs[i]), tk_last_error(ctxs[i]));
  }
}

/* On the device's context with ptxas hidden (TK_PTXAS naming no file): the driver's
 * numbers (source TK_RES_DRIVER) for fmas and for the tiled dot, plausible on their own
 * and, where ptxas is there too, with the same threads and dynamic shared memory as
 * ptxas's (registers may differ: the driver's JIT is not the toolkit's ptxas; both are
 * printed). */
static void test_resources_from_driver(void **state) {
  (void)state;
  if (!gh_real_device(&H)) skip(); /* the self-check's interpreter has no driver to ask */
  gh_source srcs[] = {{"contract", PK_CONTRACT, NULL, "fmas"}, {"dot_ieee", PK_DOT_IEEE, NULL, "mm"}};
  for (int i = 0; i < 2; i++) {
    tk_kernel *k = gh_compile(&H, H.cuda, &srcs[i], NULL);
    tk_resources p, d;
    tk_status ps = tk_kernel_resources(k, NULL, &p);
    char *saved = getenv("TK_PTXAS") ? strdup(getenv("TK_PTXAS")) : NULL;
    setenv("TK_PTXAS", "/nonexistent/ptxas", 1);
    tk_status ds = tk_kernel_resources(k, NULL, &d);
    if (saved) setenv("TK_PTXAS", saved, 1); else unsetenv("TK_PTXAS");
    free(saved);
    if (ds != TK_OK) fail_msg("%s from the driver: %s", srcs[i].kernel, tk_last_error(H.cuda));
    printf("# %s from the driver: %d regs, %d local, %d+%d smem, %d threads, %d blocks/SM, occupancy %.3f\n",
           srcs[i].kernel, d.regs, d.stack, d.smem_static, d.smem_dynamic, d.threads, d.blocks_per_sm, d.occupancy);
    if (d.source != TK_RES_DRIVER || d.regs <= 0 || d.regs > 255 || d.stack < 0 || d.spill_stores != -1 ||
        d.smem_static < 0 || d.threads != tk_kernel_num_threads(k) || d.blocks_per_sm < 1 ||
        d.occupancy <= 0 || d.occupancy > 1)
      fail_msg("%s from the driver: implausible numbers (above)", srcs[i].kernel);
    if (ps == TK_OK && p.source == TK_RES_PTXAS) {
      printf("# %s from ptxas: %d regs, %d stack, %d+%d smem, %d threads, %d blocks/SM, occupancy %.3f\n",
             srcs[i].kernel, p.regs, p.stack, p.smem_static, p.smem_dynamic, p.threads, p.blocks_per_sm, p.occupancy);
      if (p.threads != d.threads || p.smem_dynamic != d.smem_dynamic)
        fail_msg("%s: ptxas and the driver disagree on threads or dynamic shared memory", srcs[i].kernel);
    }
  }
}

/* ---- host-only: every kernel through the GPU back end -------------------------------------- */

static void test_compile_to_ptx(void **state) {
  (void)state;
  const char *const texts[] = {PK_DOT_DEFAULT, PK_DOT_IEEE, PK_DOT_TF32, PK_DOT_TF32X3, PK_CONTRACT, PK_MATH};
  const char *const entries[] = {"mm", "mm", "mm", "mm", "fmas", "trig"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    su_buf ptx = {0};
    if (!gh_emit_ptx(entries[i], texts[i], NULL, &ptx))
      fail_msg("%s: the GPU back end rejected it (diagnostics above)", entries[i]);
    const char *p = su_buf_str(&ptx);
    char entry[64];
    snprintf(entry, sizeof entry, ".entry %s(", entries[i]);
    if (!strstr(p, entry)) fail_msg("no %s in the PTX", entry);
    bool tc = strstr(p, "mma.sync") != NULL;
    if (tc != (texts[i] != PK_DOT_IEEE && i < 4)) fail_msg("%s [%zu]: tensor cores %d", entries[i], i, tc);
    su_buf_free(&ptx);
  }
}

int main(void) {
  gh_init(&H, "gpu_precision");
  const struct CMUnitTest host[] = {cmocka_unit_test(test_compile_to_ptx)};
  struct CMUnitTest dev[NDOTS + 4];
  for (int i = 0; i < NDOTS; i++) dev[i] = (struct CMUnitTest){DOTS[i].name, test_dot, NULL, NULL, (void *)&DOTS[i]};
  dev[NDOTS] = (struct CMUnitTest){"fp_contract", test_contract, NULL, NULL, NULL};
  dev[NDOTS + 1] = (struct CMUnitTest){"accurate_math", test_accurate_math, NULL, NULL, NULL};
  dev[NDOTS + 2] = (struct CMUnitTest){"resources_and_grid", test_resources_and_grid, NULL, NULL, NULL};
  dev[NDOTS + 3] = (struct CMUnitTest){"resources_from_driver", test_resources_from_driver, NULL, NULL, NULL};
  return gh_run(&H, host, 1, dev, NDOTS + 4);
}
