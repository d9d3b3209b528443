/* cases_attn.c — attention (samples/attention.tk): Q and O laid out [B, S_q, H, D] (so the
 * kernel's strides are not those of a contiguous [B, H, S, D] tensor), K and V [B, H_kv,
 * S_k, D] with H = 4 query heads on H_kv = 2 (grouped-query attention), against a double
 * reference of the softmax, causal or not, with its row log-sum-exp. The case's defines
 * are BM, BN, D and, when present, CAUSAL. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "samples/check/job.h"

enum { H = 4, H_KV = 2 };

typedef struct {
  long bm, d;
  bool causal, bf;
} attn_cfg;

static attn_cfg config(const ck_job *job) {
  attn_cfg c = {128, 64, false, job->c->variant == 1};
  for (int i = 0; i < job->c->ndefines; i++) {
    const tk_define *d = &job->c->defines[i];
    if (strcmp(d->name, "BM") == 0) c.bm = strtol(d->value, NULL, 10);
    if (strcmp(d->name, "D") == 0) c.d = strtol(d->value, NULL, 10);
    if (strcmp(d->name, "CAUSAL") == 0) c.causal = strcmp(d->value, "true") == 0;
  }
  return c;
}

/* Checks row i of head h of batch b: its output and its log-sum-exp. */
static void check_row(ck_job *job, const attn_cfg *c, long S_q, long S_k, long b, long h, long i,
                      const uint16_t *q, const uint16_t *k, const uint16_t *v, const uint16_t *o,
                      const float *lse, double *s) {
  long D = c->d, hk = h / (H / H_KV), n = c->causal ? (i + 1 < S_k ? i + 1 : S_k) : S_k;
  double scale = 1.0 / sqrt((double)D), mx = -INFINITY, sum = 0;
  size_t qrow = (((size_t)b * S_q + i) * H + h) * D, kv = ((size_t)b * H_KV + hk) * S_k * D;
  for (long j = 0; j < n; j++) {
    double dot = 0;
    for (long e = 0; e < D; e++) dot += ck_half_val(q, qrow + e, c->bf) * ck_half_val(k, kv + j * D + e, c->bf);
    s[j] = dot * scale;
    if (s[j] > mx) mx = s[j];
  }
  for (long j = 0; j < n; j++) sum += (s[j] = exp(s[j] - mx));
  double rtol = c->bf ? 2e-2 : 4e-3, atol = c->bf ? 1e-2 : 2e-3;
  for (long e = 0; e < D && !ck_failed(job); e++) {
    double want = 0;
    for (long j = 0; j < n; j++) want += s[j] * ck_half_val(v, kv + j * D + e, c->bf);
    ck_close(job, "o", qrow + e, ck_half_val(o, qrow + e, c->bf), want / sum, rtol, atol);
  }
  /* l sums the weights rounded to T (the sample's rule): each within T's unit roundoff of
   * the exact one, so log(l) is within it of the exact log */
  size_t li = ((size_t)b * H + h) * S_q + i;
  ck_close(job, "lse", li, lse[li], mx + log(sum), 2e-5, 1e-4 + (c->bf ? 0x1p-8 : 0x1p-11));
}

/* f16 (variant 0) or bf16 (variant 1). Sizes: d = {S_q, S_k, B}. */
void ck_run_attention(ck_job *job) {
  attn_cfg c = config(job);
  long S_q = job->size.d[0], S_k = job->size.d[1], B = job->size.d[2], D = c.d;
  size_t nq = (size_t)B * S_q * H * D, nkv = (size_t)B * H_KV * S_k * D, nl = (size_t)B * H * S_q;
  uint16_t *q = ck_random_half(job, nq, c.bf, -1, 1), *k = ck_random_half(job, nkv, c.bf, -1, 1);
  uint16_t *v = ck_random_half(job, nkv, c.bf, -1, 1);
  uint16_t *o = ck_host(job, nq, 2);
  float *lse = ck_host(job, nl, 4);
  double *s = ck_host(job, (size_t)S_k, sizeof *s);
  tk_devptr dq = ck_upload(job, q, nq * 2), dk = ck_upload(job, k, nkv * 2), dv = ck_upload(job, v, nkv * 2);
  tk_devptr dout = ck_upload(job, o, nq * 2), dl = ck_upload(job, lse, nl * 4);
  int64_t qs[3] = {S_q * H * D, D, H * D}, ks[3] = {H_KV * S_k * D, S_k * D, D};
  tk_arg a[22] = {tk_arg_ptr(dq), tk_arg_ptr(dk), tk_arg_ptr(dv), tk_arg_ptr(dout), tk_arg_ptr(dl),
                  tk_arg_i32(H), tk_arg_i32(H_KV), tk_arg_i32((int32_t)S_q), tk_arg_i32((int32_t)S_k),
                  tk_arg_f32((float)(1.0 / sqrt((double)D)))};
  for (int i = 0; i < 3; i++) {
    a[10 + i] = tk_arg_i64(qs[i]);
    a[13 + i] = tk_arg_i64(ks[i]);
    a[16 + i] = tk_arg_i64(ks[i]);
    a[19 + i] = tk_arg_i64(qs[i]);
  }
  tk_grid grid = {ck_cdiv(S_q, c.bm), H, (unsigned)B};
  ck_launch(job, grid, a, 22);
  ck_download(job, o, dout, nq * 2);
  ck_download(job, lse, dl, nl * 4);
  /* every row at interpreter sizes; at GPU sizes about 64 rows of each head, the last
   * (ragged) ones among them */
  long step = S_q > 128 ? S_q / 64 : 1;
  for (long b = 0; b < B; b++)
    for (long h = 0; h < H; h++)
      for (long i = 0; i < S_q && !ck_failed(job); i++)
        if (i % step == 0 || i >= S_q - 2) check_row(job, &c, S_q, S_k, b, h, i, q, k, v, o, lse, s);
}
