/* cases_elementwise.c — the 1-D elementwise samples (vadd, coscos, gelu, dropout) and the
 * histogram (1-D in, BINS counts out): one
 * program per BLOCK elements, the tail masked. The block size is the case's BLOCK define. */
#include <math.h>
#include <stdlib.h>

#include "samples/check/job.h"

/* The BLOCK define of the job's case, which fixes the grid. */
static long block_of(const ck_job *job) { return strtol(job->c->defines[0].value, NULL, 10); }

/* vadd has no BLOCK define: its default is 1024. */
void ck_run_vadd(ck_job *job) {
  long n = job->size.d[0];
  float *x = ck_random_f32(job, n, -10, 10), *y = ck_random_f32(job, n, -10, 10);
  float *z = ck_host(job, n, 4);
  tk_devptr dx = ck_upload(job, x, n * 4), dy = ck_upload(job, y, n * 4);
  tk_devptr dz = ck_upload(job, z, n * 4);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_ptr(dz), tk_arg_i32((int32_t)n)};
  ck_launch(job, (tk_grid){ck_cdiv(n, 1024), 1, 1}, a, 4);
  ck_download(job, z, dz, n * 4);
  for (long i = 0; i < n && !ck_failed(job); i++)
    ck_close(job, "vadd", i, z[i], (double)(x[i] + y[i]), 0, 0);
}

void ck_run_coscos(ck_job *job) {
  long n = job->size.d[0];
  float *x = ck_random_f32(job, n, -20, 20), *y = ck_host(job, n, 4);
  tk_devptr dx = ck_upload(job, x, n * 4), dy = ck_upload(job, y, n * 4);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i64(n)};
  ck_launch(job, (tk_grid){ck_cdiv(n, block_of(job)), 1, 1}, a, 3);
  ck_download(job, y, dy, n * 4);
  for (long i = 0; i < n && !ck_failed(job); i++)
    ck_close(job, "coscos", i, y[i], cos(cos(x[i])), CK_APPROX_RTOL, CK_APPROX_ATOL);
}

static double gelu_ref(double x, bool exact) {
  if (exact) return 0.5 * x * (1 + erf(x / sqrt(2)));
  return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* variant 0: gelu_tanh, 1: gelu_erf. f16 in and out. */
void ck_run_gelu(ck_job *job) {
  long n = job->size.d[0];
  bool exact = job->c->variant == 1;
  _Float16 *x = ck_random_f16(job, n, -6, 6), *y = ck_host(job, n, 2);
  tk_devptr dx = ck_upload(job, x, n * 2), dy = ck_upload(job, y, n * 2);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i32((int32_t)n)};
  ck_launch(job, (tk_grid){ck_cdiv(n, block_of(job)), 1, 1}, a, 3);
  ck_download(job, y, dy, n * 2);
  for (long i = 0; i < n && !ck_failed(job); i++)
    ck_close(job, job->c->kernel, i, y[i], gelu_ref(x[i], exact), CK_F16_RTOL, CK_F16_ATOL);
}

/* The mask's exact bits are Philox's (checked against a C Philox in tests/interp/test_math.c);
 * here: every output is 0 or x / (1 - p), the kept fraction is 1 - p within five standard
 * deviations, the same seed gives the same output again, and another seed another mask. */
void ck_run_dropout(ck_job *job) {
  long n = job->size.d[0];
  const float p = 0.3f;
  int64_t seed = (int64_t)(ck_uniform(job, 0, 1) * 0x1p62);
  float *x = ck_random_f32(job, n, 1, 10), *y = ck_host(job, n, 4), *y2 = ck_host(job, n, 4);
  tk_devptr dx = ck_upload(job, x, n * 4), dy = ck_upload(job, y, n * 4);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i32((int32_t)n), tk_arg_f32(p),
                tk_arg_i64(seed)};
  tk_grid g = {ck_cdiv(n, block_of(job)), 1, 1};
  ck_launch(job, g, a, 5);
  ck_download(job, y, dy, n * 4);
  long kept = 0;
  for (long i = 0; i < n && !ck_failed(job); i++) {
    kept += y[i] != 0;
    ck_close(job, "dropout", i, y[i], y[i] == 0 ? 0 : (double)x[i] / (1 - (double)p), CK_F32_RTOL, 0);
  }
  double sd = sqrt(n * (double)p * (1 - p));
  if (!ck_failed(job) && fabs((double)kept - n * (1 - (double)p)) > 5 * sd + 1)
    ck_close(job, "dropout: elements kept", 0, (double)kept, n * (1 - (double)p), 0, 5 * sd + 1);
  ck_launch(job, g, a, 5);
  ck_download(job, y2, dy, n * 4);
  for (long i = 0; i < n && !ck_failed(job); i++)
    ck_close(job, "dropout: the same seed again", i, y2[i], y[i], 0, 0);
  a[4] = tk_arg_i64(seed + 1);
  ck_launch(job, g, a, 5);
  ck_download(job, y2, dy, n * 4);
  long same = 0;
  for (long i = 0; i < n; i++) same += (y2[i] != 0) == (y[i] != 0);
  if (!ck_failed(job) && n >= 256 && same == n)
    ck_close(job, "dropout: another seed, elements masked alike", 0, (double)same, n * 0.58, 0, 0);
}

/* Values in [-3, BINS + 3): the out-of-range ones are not counted; the counts are exact
 * (integer atomics), against a C count. */
void ck_run_histogram(ck_job *job) {
  enum { BINS = 256 };
  long n = job->size.d[0];
  int32_t *x = ck_host(job, n, 4), *h = ck_host(job, BINS, 4);
  long want[BINS] = {0};
  for (long i = 0; i < n; i++) {
    x[i] = (int32_t)floor(ck_uniform(job, -3, BINS + 3));
    if (x[i] >= 0 && x[i] < BINS) want[x[i]]++;
  }
  tk_devptr dx = ck_upload(job, x, n * 4), dh = ck_upload(job, h, BINS * 4);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dh), tk_arg_i32((int32_t)n)};
  ck_launch(job, (tk_grid){ck_cdiv(n, block_of(job)), 1, 1}, a, 3);
  ck_download(job, h, dh, BINS * 4);
  for (long b = 0; b < BINS && !ck_failed(job); b++) ck_close(job, "bincount", b, h[b], (double)want[b], 0, 0);
}
