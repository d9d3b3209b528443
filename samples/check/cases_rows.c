/* cases_rows.c — the row-wise samples (softmax, softmax_online, row_sum_chunked,
 * layernorm, layernorm_f32, rmsnorm, cross_entropy): one program per row of size.d[1]
 * values, rows size.d[2] elements apart, so a stride above the row length checks that the
 * gap is left alone by the reads and the reference alike. */
#include <math.h>
#include <stdlib.h>

#include "samples/check/job.h"

/* softmax and softmax_online (variant 0: one program per row) and softmax_rows (variant
 * 1: the second define is ROWS, rows per program, and the row count is an argument) share
 * launch and reference. */
void ck_run_softmax(ck_job *job) {
  long rows = job->size.d[0], n = job->size.d[1], stride = job->size.d[2];
  size_t total = (size_t)rows * stride;
  float *x = ck_random_f32(job, total, -8, 8), *y = ck_host(job, total, 4);
  tk_devptr dx = ck_upload(job, x, total * 4), dy = ck_upload(job, y, total * 4);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i64(stride), tk_arg_i32((int32_t)n),
                tk_arg_i32((int32_t)rows)};
  long per = job->c->variant == 1 ? atol(job->c->defines[1].value) : 1;
  ck_launch(job, (tk_grid){(unsigned)((rows + per - 1) / per), 1, 1}, a, job->c->variant == 1 ? 5 : 4);
  ck_download(job, y, dy, total * 4);
  for (long r = 0; r < rows && !ck_failed(job); r++) {
    const float *xr = x + (size_t)r * stride;
    double m = -INFINITY, s = 0;
    for (long c = 0; c < n; c++) m = fmax(m, xr[c]);
    for (long c = 0; c < n; c++) s += exp(xr[c] - m);
    for (long c = 0; c < n && !ck_failed(job); c++) {
      size_t i = (size_t)r * stride + c;
      ck_close(job, job->c->kernel, i, y[i], exp(xr[c] - m) / s, CK_APPROX_RTOL, CK_APPROX_ATOL);
    }
  }
}

void ck_run_row_sum(ck_job *job) {
  long rows = job->size.d[0], n = job->size.d[1], stride = job->size.d[2];
  size_t total = (size_t)rows * stride;
  float *x = ck_random_f32(job, total, -1, 1), *out = ck_host(job, rows, 4);
  tk_devptr dx = ck_upload(job, x, total * 4), dout = ck_upload(job, out, rows * 4);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dout), tk_arg_i64(stride), tk_arg_i32((int32_t)n)};
  ck_launch(job, (tk_grid){(unsigned)rows, 1, 1}, a, 4);
  ck_download(job, out, dout, rows * 4);
  for (long r = 0; r < rows && !ck_failed(job); r++) {
    double sum = 0;
    for (long c = 0; c < n; c++) sum += x[(size_t)r * stride + c];
    ck_close(job, "row_sum", r, out[r], sum, 1e-4, 1e-4);
  }
}

/* n random values in [lo, hi), f32 or f16. */
static void *random_floats(ck_job *job, bool f32, size_t n, double lo, double hi) {
  return f32 ? (void *)ck_random_f32(job, n, lo, hi) : (void *)ck_random_f16(job, n, lo, hi);
}

/* Element i of an f32 or f16 array. */
static double float_at(const void *p, bool f32, size_t i) {
  return f32 ? ((const float *)p)[i] : (double)((const _Float16 *)p)[i];
}

/* variant 0: layernorm (mean removed, bias added, mean saved), 1: rmsnorm, both on f16
 * rows; 2: layernorm_f32, f32 rows; 3: layernorm_rows, f16, the second define is ROWS (rows
 * per program) and the row count is an argument. Rows, weight and bias in the row type,
 * statistics in f32. */
void ck_run_norm(ck_job *job) {
  long rows = job->size.d[0], n = job->size.d[1], stride = job->size.d[2];
  bool layernorm = job->c->variant != 1, f32 = job->c->variant == 2;
  size_t total = (size_t)rows * stride, es = f32 ? 4 : 2;
  void *x = random_floats(job, f32, total, -3, 3), *w = random_floats(job, f32, n, 0.5, 1.5);
  void *b = random_floats(job, f32, n, -1, 1), *y = ck_host(job, total, es);
  float *mean = ck_host(job, rows, 4), *rstd = ck_host(job, rows, 4);
  tk_devptr dx = ck_upload(job, x, total * es), dy = ck_upload(job, y, total * es);
  tk_devptr dw = ck_upload(job, w, n * es), db = ck_upload(job, b, n * es);
  tk_devptr dm = ck_upload(job, mean, rows * 4), dr = ck_upload(job, rstd, rows * 4);
  float eps = 1e-5f;
  tk_grid grid = {(unsigned)rows, 1, 1};
  if (job->c->variant == 3) {
    long per = atol(job->c->defines[1].value);
    tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_ptr(dw), tk_arg_ptr(db), tk_arg_ptr(dm),
                  tk_arg_ptr(dr), tk_arg_i64(stride), tk_arg_i32((int32_t)n),
                  tk_arg_i32((int32_t)rows), tk_arg_f32(eps)};
    ck_launch(job, (tk_grid){(unsigned)((rows + per - 1) / per), 1, 1}, a, 10);
  } else if (layernorm) {
    tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_ptr(dw), tk_arg_ptr(db), tk_arg_ptr(dm),
                  tk_arg_ptr(dr), tk_arg_i64(stride), tk_arg_i32((int32_t)n), tk_arg_f32(eps)};
    ck_launch(job, grid, a, 9);
  } else {
    tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_ptr(dw), tk_arg_ptr(dr),
                  tk_arg_i64(stride), tk_arg_i32((int32_t)n), tk_arg_f32(eps)};
    ck_launch(job, grid, a, 7);
  }
  ck_download(job, y, dy, total * es);
  ck_download(job, mean, dm, rows * 4);
  ck_download(job, rstd, dr, rows * 4);
  /* f32 outputs carry the error of f32 sums and of the GPU's rsqrt; f16 ones one rounding */
  double rtol = f32 ? CK_APPROX_RTOL : CK_F16_RTOL, atol = f32 ? CK_APPROX_ATOL : CK_F16_ATOL;
  for (long r = 0; r < rows && !ck_failed(job); r++) {
    size_t row = (size_t)r * stride;
    double mu = 0, var = 0;
    for (long c = 0; c < n; c++) mu += float_at(x, f32, row + c);
    mu = layernorm ? mu / n : 0;
    for (long c = 0; c < n; c++) var += pow(float_at(x, f32, row + c) - mu, 2);
    double rs = 1 / sqrt(var / n + eps);
    if (layernorm) ck_close(job, "mean", r, mean[r], mu, 1e-4, 1e-5);
    ck_close(job, "rstd", r, rstd[r], rs, 1e-4, 1e-5);
    for (long c = 0; c < n && !ck_failed(job); c++) {
      double want = (float_at(x, f32, row + c) - mu) * rs * float_at(w, f32, c) +
                    (layernorm ? float_at(b, f32, c) : 0);
      ck_close(job, job->c->kernel, row + c, float_at(y, f32, row + c), want, rtol, atol);
    }
  }
}

/* variant 0: i32 targets, 1: i64 targets. Row 1 is ignored (target -100): its loss is 0. */
void ck_run_cross_entropy(ck_job *job) {
  long rows = job->size.d[0], n = job->size.d[1], stride = job->size.d[2];
  bool wide = job->c->variant == 1;
  size_t total = (size_t)rows * stride;
  float *x = ck_random_f32(job, total, -5, 5), *loss = ck_host(job, rows, 4);
  int64_t *t64 = ck_host(job, rows, 8);
  int32_t *t32 = ck_host(job, rows, 4);
  for (long r = 0; r < rows && !ck_failed(job); r++)
    t64[r] = t32[r] = r == 1 ? -100 : (int32_t)ck_uniform(job, 0, n - 0.01);
  tk_devptr dx = ck_upload(job, x, total * 4), dl = ck_upload(job, loss, rows * 4);
  tk_devptr dt = wide ? ck_upload(job, t64, rows * 8) : ck_upload(job, t32, rows * 4);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dt), tk_arg_ptr(dl), tk_arg_i64(stride),
                tk_arg_i32((int32_t)n)};
  ck_launch(job, (tk_grid){(unsigned)rows, 1, 1}, a, 5);
  ck_download(job, loss, dl, rows * 4);
  for (long r = 0; r < rows && !ck_failed(job); r++) {
    const float *xr = x + (size_t)r * stride;
    double m = -INFINITY, sum = 0;
    for (long c = 0; c < n; c++) m = fmax(m, xr[c]);
    for (long c = 0; c < n; c++) sum += exp(xr[c] - m);
    double want = t64[r] < 0 ? 0 : m + log(sum) - xr[t64[r]];
    ck_close(job, job->c->kernel, r, loss[r], want, CK_APPROX_RTOL, CK_APPROX_ATOL);
  }
}
