/* Every sample kernel, compiled and run through the public API on the interpreter, on
 * random inputs of several sizes (ragged ones included), against a plain C reference in
 * double precision with a tolerance fitting the kernel's dtype; then the failures a user
 * meets first (out-of-bounds access, bad arguments, unknown kernel, compile error,
 * division by zero, device_assert), each with its status and message.
 *
 * TK_SAMPLES_DIR is set by meson; TK_TEST_SEED in the environment changes the inputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "include/tk.h"

/* ---- harness -------------------------------------------------------------------------- */

static uint64_t rng_state;

static double uniform(double lo, double hi) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static tk_context *ctx;

static int setup(void **state) {
  (void)state;
  const char *seed = getenv("TK_TEST_SEED");
  rng_state = seed ? strtoull(seed, NULL, 0) | 1 : 0x9e3779b97f4a7c15ull;
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

/* Compiles samples/NAME.tk with up to two NAME=VALUE defines and returns its kernel. */
static tk_kernel *sample(const char *file, const char *kernel, const char *d1, const char *v1,
                         const char *d2, const char *v2) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.tk", TK_SAMPLES_DIR, file);
  tk_define defs[2] = {{d1, v1}, {d2, v2}};
  tk_compile_options o = {.defines = defs, .ndefines = d2 ? 2 : d1 ? 1 : 0};
  tk_module *m = NULL;
  ok(tk_module_compile_file(ctx, &m, path, &o));
  tk_kernel *k = NULL;
  ok(tk_module_get_kernel(m, kernel, &k));
  return k;
}

static tk_devptr upload(const void *host, size_t bytes) {
  tk_devptr p;
  ok(tk_malloc(ctx, &p, bytes));
  ok(tk_memcpy_htod(ctx, p, host, bytes));
  return p;
}

static void download(void *host, tk_devptr p, size_t bytes) {
  ok(tk_memcpy_dtoh(ctx, host, p, bytes));
  ok(tk_free(ctx, p));
}

static float *random_f32(size_t n, double lo, double hi) {
  float *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = (float)uniform(lo, hi);
  return v;
}

static _Float16 *random_f16(size_t n, double lo, double hi) {
  _Float16 *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = (_Float16)uniform(lo, hi);
  return v;
}

/* |got - want| <= atol + rtol * |want|, reported with the element that failed. */
static void expect_close(const char *what, size_t i, double got, double want, double rtol,
                         double atol) {
  if (fabs(got - want) <= atol + rtol * fabs(want)) return;
  fail_msg("%s[%zu]: got %.9g, want %.9g", what, i, got, want);
}

/* Tolerances: f32 results of a few ops (libm, sequential sums) against double; f16
 * results are rounded once more, to 11 bits. */
static const double F32_RTOL = 2e-5, F32_ATOL = 1e-6;
static const double F16_RTOL = 2e-3, F16_ATOL = 1e-3;

static unsigned cdiv(long a, long b) { return (unsigned)((a + b - 1) / b); }

/* ---- elementwise samples -------------------------------------------------------------- */

static void test_vadd(void **state) {
  (void)state;
  tk_kernel *k = sample("vadd", "vadd", NULL, NULL, NULL, NULL);
  const int sizes[] = {1, 1000, 1024, 4097};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    int n = sizes[s];
    float *x = random_f32(n, -10, 10), *y = random_f32(n, -10, 10), *z = malloc(n * 4);
    tk_devptr dx = upload(x, n * 4), dy = upload(y, n * 4), dz = upload(z, n * 4);
    tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_ptr(dz), tk_arg_i32(n)};
    ok(tk_launch(k, (tk_grid){cdiv(n, 1024), 1, 1}, NULL, a, 4));
    download(z, dz, n * 4), ok(tk_free(ctx, dx)), ok(tk_free(ctx, dy));
    for (int i = 0; i < n; i++) expect_close("vadd", i, z[i], (double)(x[i] + y[i]), 0, 0);
    free(x), free(y), free(z);
  }
}

static void test_coscos(void **state) {
  (void)state;
  tk_kernel *k = sample("coscos", "coscos", "BLOCK", "512", NULL, NULL);
  const long sizes[] = {1, 511, 2048, 3001};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    long n = sizes[s];
    float *x = random_f32(n, -20, 20), *y = malloc(n * 4);
    tk_devptr dx = upload(x, n * 4), dy = upload(y, n * 4);
    tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i64(n)};
    ok(tk_launch(k, (tk_grid){cdiv(n, 512), 1, 1}, NULL, a, 3));
    download(y, dy, n * 4), ok(tk_free(ctx, dx));
    for (long i = 0; i < n; i++) expect_close("coscos", i, y[i], cos(cos(x[i])), F32_RTOL, F32_ATOL);
    free(x), free(y);
  }
}

static double gelu_ref(double x, bool exact) {
  if (exact) return 0.5 * x * (1 + erf(x / sqrt(2)));
  return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

static void test_gelu(void **state) {
  (void)state;
  const char *names[] = {"gelu_tanh", "gelu_erf"};
  for (int kind = 0; kind < 2; kind++) {
    tk_kernel *k = sample("gelu", names[kind], "BLOCK", "256", NULL, NULL);
    const int sizes[] = {3, 256, 1000};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      int n = sizes[s];
      _Float16 *x = random_f16(n, -6, 6), *y = malloc(n * 2);
      tk_devptr dx = upload(x, n * 2), dy = upload(y, n * 2);
      tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i32(n)};
      ok(tk_launch(k, (tk_grid){cdiv(n, 256), 1, 1}, NULL, a, 3));
      download(y, dy, n * 2), ok(tk_free(ctx, dx));
      for (int i = 0; i < n; i++)
        expect_close(names[kind], i, y[i], gelu_ref(x[i], kind == 1), F16_RTOL, F16_ATOL);
      free(x), free(y);
    }
  }
}

/* ---- row-wise samples ----------------------------------------------------------------- */

/* softmax and softmax_online share the reference: rows of n values, stride apart. */
static void check_softmax(const char *what, const float *x, const float *y, int rows, int n,
                          int stride) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * stride;
    double m = -INFINITY, s = 0;
    for (int c = 0; c < n; c++) m = fmax(m, xr[c]);
    for (int c = 0; c < n; c++) s += exp(xr[c] - m);
    for (int c = 0; c < n; c++)
      expect_close(what, (size_t)r * stride + c, y[(size_t)r * stride + c], exp(xr[c] - m) / s,
                   F32_RTOL, F32_ATOL);
  }
}

static void run_softmax(tk_kernel *k, const char *what, int rows, int n, int stride) {
  size_t total = (size_t)rows * stride;
  float *x = random_f32(total, -8, 8), *y = calloc(total, 4);
  tk_devptr dx = upload(x, total * 4), dy = upload(y, total * 4);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i64(stride), tk_arg_i32(n)};
  ok(tk_launch(k, (tk_grid){(unsigned)rows, 1, 1}, NULL, a, 4));
  download(y, dy, total * 4), ok(tk_free(ctx, dx));
  check_softmax(what, x, y, rows, n, stride);
  free(x), free(y);
}

static void test_softmax(void **state) {
  (void)state;
  tk_kernel *k = sample("softmax", "softmax", NULL, NULL, NULL, NULL);
  run_softmax(k, "softmax", 4, 1024, 1024);
  run_softmax(k, "softmax", 7, 1000, 1003);
  run_softmax(k, "softmax", 3, 1, 1);
}

static void test_softmax_online(void **state) {
  (void)state;
  tk_kernel *k = sample("softmax_online", "softmax_online", "BLOCK", "256", NULL, NULL);
  run_softmax(k, "softmax_online", 2, 1000, 1000);
  run_softmax(k, "softmax_online", 3, 256, 300);
  run_softmax(k, "softmax_online", 1, 5, 5);
}

static void test_row_sum_chunked(void **state) {
  (void)state;
  tk_kernel *k = sample("row_sum_chunked", "row_sum_chunked", "BLOCK", "128", NULL, NULL);
  const int shapes[][3] = {{3, 1000, 1000}, {5, 128, 130}, {2, 1, 7}, {1, 4096, 4096}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int rows = shapes[s][0], n = shapes[s][1], stride = shapes[s][2];
    size_t total = (size_t)rows * stride;
    float *x = random_f32(total, -1, 1), *out = malloc(rows * 4);
    tk_devptr dx = upload(x, total * 4), dout = upload(out, rows * 4);
    tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dout), tk_arg_i64(stride), tk_arg_i32(n)};
    ok(tk_launch(k, (tk_grid){(unsigned)rows, 1, 1}, NULL, a, 4));
    download(out, dout, rows * 4), ok(tk_free(ctx, dx));
    for (int r = 0; r < rows; r++) {
      double sum = 0;
      for (int c = 0; c < n; c++) sum += x[(size_t)r * stride + c];
      expect_close("row_sum", r, out[r], sum, 1e-4, 1e-4);
    }
    free(x), free(out);
  }
}

/* layernorm (with_bias) and rmsnorm share the shape of the test: f16 rows, f32 stats. */
static void run_norm(tk_kernel *k, bool layernorm, int rows, int n, int stride) {
  size_t total = (size_t)rows * stride;
  _Float16 *x = random_f16(total, -3, 3), *w = random_f16(n, 0.5, 1.5), *b = random_f16(n, -1, 1);
  _Float16 *y = calloc(total, 2);
  float *mean = calloc(rows, 4), *rstd = calloc(rows, 4);
  tk_devptr dx = upload(x, total * 2), dy = upload(y, total * 2), dw = upload(w, n * 2);
  tk_devptr db = upload(b, n * 2), dm = upload(mean, rows * 4), dr = upload(rstd, rows * 4);
  float eps = 1e-5f;
  if (layernorm) {
    tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_ptr(dw), tk_arg_ptr(db), tk_arg_ptr(dm),
                  tk_arg_ptr(dr), tk_arg_i64(stride), tk_arg_i32(n), tk_arg_f32(eps)};
    ok(tk_launch(k, (tk_grid){(unsigned)rows, 1, 1}, NULL, a, 9));
  } else {
    tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_ptr(dw), tk_arg_ptr(dr),
                  tk_arg_i64(stride), tk_arg_i32(n), tk_arg_f32(eps)};
    ok(tk_launch(k, (tk_grid){(unsigned)rows, 1, 1}, NULL, a, 7));
  }
  download(y, dy, total * 2), download(mean, dm, rows * 4), download(rstd, dr, rows * 4);
  ok(tk_free(ctx, dx)), ok(tk_free(ctx, dw)), ok(tk_free(ctx, db));
  for (int r = 0; r < rows; r++) {
    const _Float16 *xr = x + (size_t)r * stride;
    double mu = 0, var = 0;
    for (int c = 0; c < n; c++) mu += xr[c];
    mu = layernorm ? mu / n : 0;
    for (int c = 0; c < n; c++) var += (xr[c] - mu) * (xr[c] - mu);
    double rs = 1 / sqrt(var / n + eps);
    if (layernorm) expect_close("mean", r, mean[r], mu, 1e-4, 1e-5);
    expect_close("rstd", r, rstd[r], rs, 1e-4, 1e-5);
    for (int c = 0; c < n; c++) {
      double want = (xr[c] - mu) * rs * w[c] + (layernorm ? (double)b[c] : 0);
      expect_close(layernorm ? "layernorm" : "rmsnorm", (size_t)r * stride + c,
                   y[(size_t)r * stride + c], want, F16_RTOL, F16_ATOL);
    }
  }
  free(x), free(w), free(b), free(y), free(mean), free(rstd);
}

static void test_layernorm(void **state) {
  (void)state;
  tk_kernel *k = sample("layernorm", "layernorm", "BLOCK", "1024", NULL, NULL);
  run_norm(k, true, 3, 1024, 1024);
  run_norm(k, true, 5, 700, 701);
  run_norm(k, true, 2, 2, 2);
}

static void test_rmsnorm(void **state) {
  (void)state;
  tk_kernel *k = sample("rmsnorm", "rmsnorm", "BLOCK", "1024", NULL, NULL);
  run_norm(k, false, 3, 1024, 1024);
  run_norm(k, false, 4, 333, 400);
}

/* Both kernels (i64 and i32 targets), with an ignored row (target -100). */
static void test_cross_entropy(void **state) {
  (void)state;
  for (int wide = 0; wide < 2; wide++) {
    tk_kernel *k = sample("cross_entropy", wide ? "cross_entropy_i64" : "cross_entropy_i32",
                          "BLOCK", "512", NULL, NULL);
    const int shapes[][3] = {{4, 500, 512}, {6, 512, 512}, {3, 10, 17}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
      int rows = shapes[s][0], n = shapes[s][1], stride = shapes[s][2];
      size_t total = (size_t)rows * stride;
      float *x = random_f32(total, -5, 5), *loss = malloc(rows * 4);
      int64_t t64[8];
      int32_t t32[8];
      for (int r = 0; r < rows; r++) t64[r] = t32[r] = r == 1 ? -100 : (int)uniform(0, n - 0.01);
      tk_devptr dx = upload(x, total * 4), dl = upload(loss, rows * 4);
      tk_devptr dt = wide ? upload(t64, rows * 8) : upload(t32, rows * 4);
      tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dt), tk_arg_ptr(dl), tk_arg_i64(stride), tk_arg_i32(n)};
      ok(tk_launch(k, (tk_grid){(unsigned)rows, 1, 1}, NULL, a, 5));
      download(loss, dl, rows * 4), ok(tk_free(ctx, dx)), ok(tk_free(ctx, dt));
      for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * stride;
        double m = -INFINITY, sum = 0;
        for (int c = 0; c < n; c++) m = fmax(m, xr[c]);
        for (int c = 0; c < n; c++) sum += exp(xr[c] - m);
        double want = t64[r] < 0 ? 0 : m + log(sum) - xr[t64[r]];
        expect_close("cross_entropy", r, loss[r], want, F32_RTOL, 1e-5);
      }
      free(x), free(loss);
    }
  }
}

/* ---- 2-D samples ---------------------------------------------------------------------- */

static void test_transpose(void **state) {
  (void)state;
  tk_kernel *k = sample("transpose", "transpose", "BM", "32", "BN", "16");
  const int shapes[][2] = {{64, 64}, {100, 37}, {1, 5}, {33, 1}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int M = shapes[s][0], N = shapes[s][1];
    float *x = random_f32((size_t)M * N, -1, 1), *y = malloc((size_t)M * N * 4);
    tk_devptr dx = upload(x, (size_t)M * N * 4), dy = upload(y, (size_t)M * N * 4);
    tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i32(M), tk_arg_i32(N)};
    ok(tk_launch(k, (tk_grid){cdiv(M, 32), cdiv(N, 16), 1}, NULL, a, 4));
    download(y, dy, (size_t)M * N * 4), ok(tk_free(ctx, dx));
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) expect_close("transpose", (size_t)j * M + i, y[j * M + i], x[i * N + j], 0, 0);
    free(x), free(y);
  }
}

static void test_matmul(void **state) {
  (void)state;
  tk_kernel *k = sample("matmul", "matmul", "BM", "32", "BN", "32");
  const int shapes[][3] = {{64, 64, 64}, {70, 50, 33}, {16, 40, 100}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
    _Float16 *a = random_f16((size_t)M * K, -1, 1), *b = random_f16((size_t)K * N, -1, 1);
    _Float16 *c = calloc((size_t)M * N, 2);
    tk_devptr da = upload(a, (size_t)M * K * 2), db = upload(b, (size_t)K * N * 2);
    tk_devptr dc = upload(c, (size_t)M * N * 2);
    tk_arg args[] = {tk_arg_ptr(da), tk_arg_ptr(db), tk_arg_ptr(dc), tk_arg_i32(M), tk_arg_i32(N),
                     tk_arg_i32(K)};
    ok(tk_launch(k, (tk_grid){cdiv(M, 32), cdiv(N, 32), 1}, NULL, args, 6));
    download(c, dc, (size_t)M * N * 2), ok(tk_free(ctx, da)), ok(tk_free(ctx, db));
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double want = 0;
        for (int q = 0; q < K; q++) want += (double)a[i * K + q] * (double)b[q * N + j];
        expect_close("matmul", (size_t)i * N + j, c[i * N + j], want, F16_RTOL, 2e-3);
      }
    free(a), free(b), free(c);
  }
}

/* ---- failures ------------------------------------------------------------------------- */

/* Compiles src (named name) and returns kernel kname. */
static tk_kernel *compile(const char *name, const char *src, const char *kname) {
  tk_module *m = NULL;
  ok(tk_module_compile(ctx, &m, src, strlen(src), name, NULL));
  tk_kernel *k = NULL;
  ok(tk_module_get_kernel(m, kname, &k));
  return k;
}

static void expect_error(tk_status got, tk_status want, const char *needle) {
  if (got != want)
    fail_msg("got %s, want %s: %s", tk_status_name(got), tk_status_name(want), tk_last_error(ctx));
  if (!strstr(tk_last_error(ctx), needle))
    fail_msg("message '%s' lacks '%s'", tk_last_error(ctx), needle);
}

static const char *unmasked_src =
    "// copies BLOCK elements per program, with no mask\n"
    "kernel copy<BLOCK: i32 = 64>(x: *f32, y: *f32) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let v = load(x + offs);\n"
    "    store(y + offs, v);\n"
    "}\n";

static void test_out_of_bounds(void **state) {
  (void)state;
  tk_kernel *k = compile("copy.tk", unmasked_src, "copy");
  float buf[511] = {0};
  tk_devptr dx = upload(buf, 100 * 4), dy = upload(buf, sizeof buf);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy)};
  expect_error(tk_launch(k, (tk_grid){2, 1, 1}, NULL, a, 2), TK_ERR_RUNTIME,
               "out-of-bounds load in kernel 'copy' at program (1, 0, 0): element offset 100 is "
               "past the end of a 400-byte buffer");
  assert_memory_equal(tk_last_error(ctx), "copy.tk:4:", 10);
  /* Reads in bounds, writes past the end of y in the last program. */
  tk_arg b[] = {tk_arg_ptr(dy), tk_arg_ptr(dx)};
  expect_error(tk_launch(k, (tk_grid){2, 1, 1}, NULL, b, 2), TK_ERR_RUNTIME,
               "out-of-bounds store in kernel 'copy' at program (1, 0, 0)");
  assert_memory_equal(tk_last_error(ctx), "copy.tk:5:", 10);
  ok(tk_free(ctx, dx));
  tk_arg c[] = {tk_arg_ptr(dx), tk_arg_ptr(dy)};
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, c, 2), TK_ERR_ARGS, "argument 0 of 'copy' ('x')");
  ok(tk_free(ctx, dy));
}

static void test_bad_launches(void **state) {
  (void)state;
  tk_kernel *k = sample("vadd", "vadd", NULL, NULL, NULL, NULL);
  float v[4] = {0};
  tk_devptr d = upload(v, sizeof v);
  tk_arg a[] = {tk_arg_ptr(d), tk_arg_ptr(d), tk_arg_ptr(d), tk_arg_f32(4)};
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 3), TK_ERR_ARGS,
               "kernel 'vadd' expects 4 arguments, got 3");
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 4), TK_ERR_ARGS,
               "argument 3 of 'vadd' ('n') has type i32, but an f32 was passed");
  a[3] = tk_arg_i32(4);
  a[0] = tk_arg_i32(0);
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 4), TK_ERR_ARGS,
               "argument 0 of 'vadd' ('x') has type *f32, but an i32 was passed");
  a[0] = tk_arg_ptr(d);
  a[3] = tk_arg_i64(5000000000);
  a[3].type = TK_I32;
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 4), TK_ERR_ARGS, "does not fit in i32");
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, NULL, 4), TK_ERR_INVALID, "args is NULL");
  ok(tk_free(ctx, d));
}

static void test_unknown_kernel(void **state) {
  (void)state;
  tk_module *m = NULL;
  char path[1024];
  snprintf(path, sizeof path, "%s/gelu.tk", TK_SAMPLES_DIR);
  ok(tk_module_compile_file(ctx, &m, path, NULL));
  tk_kernel *k = (tk_kernel *)&k;
  expect_error(tk_module_get_kernel(m, "gelu", &k), TK_ERR_NOT_FOUND,
               "no kernel 'gelu' in module");
  assert_non_null(strstr(tk_last_error(ctx), "'gelu_tanh', 'gelu_erf'"));
  assert_null(k);
  tk_module_destroy(m);
  expect_error(tk_module_compile_file(ctx, &m, "/nonexistent/x.tk", NULL), TK_ERR_IO,
               "cannot read '/nonexistent/x.tk'");
}

static void test_compile_error(void **state) {
  (void)state;
  const char *src = "kernel k(x: *f32) {\n    let v = load(x) + undefined_name;\n}\n";
  tk_module *m = (tk_module *)&m;
  expect_error(tk_module_compile(ctx, &m, src, strlen(src), "bad.tk", NULL), TK_ERR_COMPILE,
               "bad.tk:2:");
  assert_non_null(strstr(tk_last_error(ctx), "error:"));
  assert_non_null(strstr(tk_last_error(ctx), "undefined_name"));
  assert_null(m);
  tk_define d = {"NO_SUCH_PARAM", "3"};
  tk_compile_options o = {.defines = &d, .ndefines = 1};
  char path[1024];
  snprintf(path, sizeof path, "%s/vadd.tk", TK_SAMPLES_DIR);
  expect_error(tk_module_compile_file(ctx, &m, path, &o), TK_ERR_COMPILE, "NO_SUCH_PARAM");
}

static void test_division_by_zero(void **state) {
  (void)state;
  const char *src = "kernel div(q: *i32, a: i32, b: i32) {\n"
                    "    store(q, a / b);\n"
                    "}\n";
  tk_kernel *k = compile("div.tk", src, "div");
  int32_t q = 0;
  tk_devptr dq = upload(&q, 4);
  tk_arg a[] = {tk_arg_ptr(dq), tk_arg_i32(-7), tk_arg_i32(2)};
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 3));
  download(&q, dq, 4);
  assert_int_equal(q, -3);
  dq = upload(&q, 4);
  a[0] = tk_arg_ptr(dq), a[2] = tk_arg_i32(0);
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 3), TK_ERR_RUNTIME,
               "integer division by zero in kernel 'div' at program (0, 0, 0)");
  assert_memory_equal(tk_last_error(ctx), "div.tk:2:", 9);
  ok(tk_free(ctx, dq));
}

static void test_device_assert(void **state) {
  (void)state;
  const char *src = "kernel check(n: i32) {\n"
                    "    device_assert(program_id(0) < n, \"program id in range\");\n"
                    "}\n";
  tk_kernel *k = compile("check.tk", src, "check");
  tk_arg a[] = {tk_arg_i32(3)};
  ok(tk_launch(k, (tk_grid){3, 1, 1}, NULL, a, 1));
  expect_error(tk_launch(k, (tk_grid){5, 1, 1}, NULL, a, 1), TK_ERR_RUNTIME,
               "device_assert failed in kernel 'check' at program (3, 0, 0): program id in range");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vadd),
      cmocka_unit_test(test_coscos),
      cmocka_unit_test(test_gelu),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_softmax_online),
      cmocka_unit_test(test_row_sum_chunked),
      cmocka_unit_test(test_layernorm),
      cmocka_unit_test(test_rmsnorm),
      cmocka_unit_test(test_cross_entropy),
      cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_out_of_bounds),
      cmocka_unit_test(test_bad_launches),
      cmocka_unit_test(test_unknown_kernel),
      cmocka_unit_test(test_compile_error),
      cmocka_unit_test(test_division_by_zero),
      cmocka_unit_test(test_device_assert),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
