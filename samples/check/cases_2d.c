/* cases_2d.c — the 2-D samples (transpose, matmul): a grid of BM x BN tiles, the edges
 * masked. The tile sizes are the case's BM and BN defines. */
#include <stdlib.h>

#include "ir/ir.h" /* ir_fp8_value: the one definition of an fp8 byte's value */
#include "samples/check/job.h"

#include <math.h>
#include <string.h>

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

/* f16 (variant 0: matmul; 2: matmul_bias_gelu) or bf16 (variant 1) in and out,
 * accumulated in f32: the reference sums in double. */
void ck_run_matmul(ck_job *job) {
  long M = job->size.d[0], N = job->size.d[1], K = job->size.d[2];
  bool bf = job->c->variant == 1, fused = job->c->variant == 2;
  uint16_t *a = ck_host(job, (size_t)M * K, 2), *b = ck_host(job, (size_t)K * N, 2);
  uint16_t *bias = ck_host(job, (size_t)N, 2), *c = ck_host(job, (size_t)M * N, 2);
  double *want = ck_host(job, (size_t)N, sizeof *want);
  if (ck_failed(job)) return;
  uint16_t *in[3] = {a, b, bias};
  size_t nin[3] = {(size_t)M * K, (size_t)K * N, (size_t)N};
  for (int t = 0; t < 3; t++)
    for (size_t i = 0; i < nin[t]; i++) {
      float v = (float)ck_uniform(job, -1, 1);
      if (bf) {
        in[t][i] = ck_f32_to_bf16(v);
      } else {
        _Float16 h = (_Float16)v;
        memcpy(&in[t][i], &h, 2);
      }
    }
#define VAL(p, i) (bf ? (double)ck_bf16_to_f32((p)[i]) : (double)*(const _Float16 *)&(p)[i])
  tk_devptr da = ck_upload(job, a, nin[0] * 2), db = ck_upload(job, b, nin[1] * 2);
  tk_devptr dbias = ck_upload(job, bias, nin[2] * 2), dc = ck_upload(job, c, (size_t)M * N * 2);
  tk_arg args[7];
  int n = 0;
  args[n++] = tk_arg_ptr(da);
  args[n++] = tk_arg_ptr(db);
  if (fused) args[n++] = tk_arg_ptr(dbias);
  args[n++] = tk_arg_ptr(dc);
  args[n++] = tk_arg_i32((int32_t)M);
  args[n++] = tk_arg_i32((int32_t)N);
  args[n++] = tk_arg_i32((int32_t)K);
  long bm = job->c->ndefines > 0 ? define_of(job, 0) : 128, bn = job->c->ndefines > 1 ? define_of(job, 1) : 256;
  tk_grid grid = {ck_cdiv(M, bm), ck_cdiv(N, bn), 1};
  ck_launch(job, grid, args, n);
  ck_download(job, c, dc, (size_t)M * N * 2);
  /* Row by row, in i-q-j order, so that large GPU sizes stay quick on the host. */
  for (long i = 0; i < M && !ck_failed(job); i++) {
    for (long j = 0; j < N; j++) want[j] = 0;
    for (long q = 0; q < K; q++)
      for (long j = 0; j < N; j++) want[j] += VAL(a, i * K + q) * VAL(b, q * N + j);
    for (long j = 0; j < N && !ck_failed(job); j++) {
      double w = want[j];
      if (fused) {
        w += VAL(bias, j);
        w = 0.5 * w * (1.0 + erf(w * 0.7071067811865476));
      }
      ck_close(job, "matmul", (size_t)i * N + j, VAL(c, i * N + j), w, bf ? 1e-2 : CK_F16_RTOL,
               bf ? 8e-3 : 2e-3);
    }
  }
#undef VAL
}

/* The exact sum of the products of a row and a column (K values each, B's row read as a
 * column), and the bound of the tensor cores' fp8 accumulation on sm_90a (ir_fp8_acc).
 * The other paths sum in f32 and are well inside it. */
static double fp8_dot(const double *arow, const uint8_t *bcol, long K, double *bound) {
  ir_fp8_acc acc = {0};
  for (long q = 0; q < K; q++) ir_fp8_acc_add(&acc, arow[q] * ir_fp8_value(TK_F8E4M3, bcol[q]));
  *bound = ir_fp8_acc_bound(&acc);
  return acc.sum;
}

/* matmul_fp8: e4m3 A (M x K) and B (N x K, used transposed), C f16 = (A B^T) * scale. The
 * inputs are random bytes with exponents in [4, 9] (magnitudes 1/8 to 7.5): every one a
 * finite e4m3 value; the reference sums the exact products in double, and the tolerance
 * adds the fp8 accumulation's bound to f16's rounding. */
void ck_run_matmul_fp8(ck_job *job) {
  long M = job->size.d[0], N = job->size.d[1], K = job->size.d[2];
  uint8_t *a = ck_host(job, (size_t)M * K, 1), *b = ck_host(job, (size_t)N * K, 1);
  uint16_t *c = ck_host(job, (size_t)M * N, 2);
  if (ck_failed(job)) return;
  uint8_t *in[2] = {a, b};
  size_t nin[2] = {(size_t)M * K, (size_t)N * K};
  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < nin[t]; i++) {
      int e = 4 + (int)ck_uniform(job, 0, 6), m = (int)ck_uniform(job, 0, 8), sg = ck_uniform(job, 0, 1) < 0.5;
      in[t][i] = (uint8_t)(sg << 7 | e << 3 | m);
    }
  const float scale = 0.0625f;
  tk_devptr da = ck_upload(job, a, nin[0]), db = ck_upload(job, b, nin[1]);
  tk_devptr dc = ck_upload(job, c, (size_t)M * N * 2);
  tk_arg args[] = {tk_arg_ptr(da), tk_arg_ptr(db), tk_arg_ptr(dc), tk_arg_i32((int32_t)M), tk_arg_i32((int32_t)N),
                   tk_arg_i32((int32_t)K), tk_arg_f32(scale)};
  long bm = job->c->ndefines > 0 ? define_of(job, 0) : 128, bn = job->c->ndefines > 1 ? define_of(job, 1) : 256;
  tk_grid grid = {ck_cdiv(M, bm), ck_cdiv(N, bn), 1};
  ck_launch(job, grid, args, 7);
  ck_download(job, c, dc, (size_t)M * N * 2);
  double *arow = ck_host(job, (size_t)K, sizeof *arow);
  if (ck_failed(job)) return;
  for (long i = 0; i < M && !ck_failed(job); i++) {
    for (long q = 0; q < K; q++) arow[q] = ir_fp8_value(TK_F8E4M3, a[i * K + q]);
    for (long j = 0; j < N && !ck_failed(job); j++) {
      double bound, w = fp8_dot(arow, b + j * K, K, &bound);
      ck_close(job, "matmul_fp8", (size_t)i * N + j, (double)*(const _Float16 *)&c[i * N + j], w * scale,
               CK_F16_RTOL, CK_F16_ATOL + bound * scale);
    }
  }
}
