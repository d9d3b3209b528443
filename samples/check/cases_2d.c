/* cases_2d.c — the 2-D samples (transpose, matmul): a grid of BM x BN tiles, the edges
 * masked. The tile sizes are the case's BM and BN defines. */
#include <stdlib.h>

#include "samples/check/job.h"

/* The value of the case's i-th define, which fixes the grid. */
static long define_of(const ck_job *job, int i) {
  return strtol(job->c->defines[i].value, NULL, 10);
}

void ck_run_transpose(ck_job *job) {
  long M = job->size.d[0], N = job->size.d[1];
  size_t total = (size_t)M * N;
  float *x = ck_random_f32(job, total, -1, 1), *y = ck_host(job, total, 4);
  tk_devptr dx = ck_upload(job, x, total * 4), dy = ck_upload(job, y, total * 4);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_i32((int32_t)M), tk_arg_i32((int32_t)N)};
  tk_grid grid = {ck_cdiv(M, define_of(job, 0)), ck_cdiv(N, define_of(job, 1)), 1};
  ck_launch(job, grid, a, 4);
  ck_download(job, y, dy, total * 4);
  for (long i = 0; i < M && !ck_failed(job); i++)
    for (long j = 0; j < N && !ck_failed(job); j++)
      ck_close(job, "transpose", (size_t)j * M + i, y[j * M + i], x[i * N + j], 0, 0);
}

/* f16 in and out, accumulated in f32: the reference sums in double. */
void ck_run_matmul(ck_job *job) {
  long M = job->size.d[0], N = job->size.d[1], K = job->size.d[2];
  _Float16 *a = ck_random_f16(job, (size_t)M * K, -1, 1);
  _Float16 *b = ck_random_f16(job, (size_t)K * N, -1, 1);
  _Float16 *c = ck_host(job, (size_t)M * N, 2);
  double *want = ck_host(job, (size_t)N, sizeof *want);
  tk_devptr da = ck_upload(job, a, (size_t)M * K * 2), db = ck_upload(job, b, (size_t)K * N * 2);
  tk_devptr dc = ck_upload(job, c, (size_t)M * N * 2);
  tk_arg args[] = {tk_arg_ptr(da), tk_arg_ptr(db), tk_arg_ptr(dc), tk_arg_i32((int32_t)M),
                   tk_arg_i32((int32_t)N), tk_arg_i32((int32_t)K)};
  tk_grid grid = {ck_cdiv(M, define_of(job, 0)), ck_cdiv(N, define_of(job, 1)), 1};
  ck_launch(job, grid, args, 6);
  ck_download(job, c, dc, (size_t)M * N * 2);
  /* Row by row, in i-q-j order, so that large GPU sizes stay quick on the host. */
  for (long i = 0; i < M && !ck_failed(job); i++) {
    for (long j = 0; j < N; j++) want[j] = 0;
    for (long q = 0; q < K; q++)
      for (long j = 0; j < N; j++) want[j] += (double)a[i * K + q] * (double)b[q * N + j];
    for (long j = 0; j < N && !ck_failed(job); j++)
      ck_close(job, "matmul", (size_t)i * N + j, c[i * N + j], want[j], CK_F16_RTOL, 2e-3);
  }
}
