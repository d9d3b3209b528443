/* cases_elementwise.c — the 1-D elementwise samples (vadd, coscos, gelu): one program per
 * BLOCK elements, the tail masked. The block size is the case's BLOCK define. */
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
