/* cases_decode.c — decode attention (samples/attention_decode.tk): decode_split then
 * decode_combine, one query token per sequence against a KV cache of S_cap rows with
 * ragged lengths (the full cache, 1, a length that is no multiple of the block, about
 * half, and 0 when there are five sequences or more), grouped-query attention, split
 * along the keys, against a double reference of the softmax and its log-sum-exp.
 *
 * K is laid out [B, S_cap, H_kv, D] (a cache written token by token) and V [B, H_kv,
 * S_cap, D], so the kernel's row and head strides are those of two different layouts; Q
 * is [B, H_q, D], O [B, H_q, D] with a padded batch stride. The chunk of keys per split
 * is a multiple of 16 but not always of the kernel's block, so splits end inside a block
 * as well as at a sequence's end. The case's defines are T and D (D 128 when absent); the
 * variant picks the heads: 0 — 8 query heads on 2 key/value heads, 1 — 6 on 2 (a group
 * of 3, padded), 2 — 4 on 4 (no grouping). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "samples/check/job.h"

typedef struct {
  long d, hq, hkv;
  bool bf;
} dec_cfg;

static dec_cfg config(const ck_job *job) {
  static const long heads[3][2] = {{8, 2}, {6, 2}, {4, 4}};
  int var = job->c->variant;
  dec_cfg c = {128, heads[var][0], heads[var][1], false};
  for (int i = 0; i < job->c->ndefines; i++) {
    const tk_define *d = &job->c->defines[i];
    if (strcmp(d->name, "D") == 0) c.d = strtol(d->value, NULL, 10);
    if (strcmp(d->name, "T") == 0) c.bf = strcmp(d->value, "bf16") == 0;
  }
  return c;
}

/* The keys of sequence b of a cache of cap rows. */
static long seq_len(long b, long cap) {
  long n[5] = {cap, 1, cap - 5, cap / 2 + 3, 0};
  long len = n[b % 5];
  return len < 0 ? 0 : len > cap ? cap : len;
}

/* Sizes: d = {S_cap, B, splits asked for}; the splits actually launched are
 * cdiv(S_cap, chunk) with chunk that share rounded up to a multiple of 16. */
void ck_run_decode(ck_job *job) {
  dec_cfg c = config(job);
  long cap = job->size.d[0], B = job->size.d[1], D = c.d, HQ = c.hq, HKV = c.hkv;
  long chunk = (cap + job->size.d[2] - 1) / job->size.d[2];
  chunk = (chunk + 15) / 16 * 16;
  long splits = (cap + chunk - 1) / chunk, ob = HQ * D + 8;
  size_t nq = (size_t)B * HQ * D, no = (size_t)B * ob, nkv = (size_t)B * HKV * cap * D;
  size_t np = (size_t)B * HQ * splits;
  /* scores of a unit or two, so that the softmax is far from uniform */
  uint16_t *q = ck_random_half(job, nq, c.bf, -2, 2), *k = ck_random_half(job, nkv, c.bf, -1, 1);
  uint16_t *v = ck_random_half(job, nkv, c.bf, -1, 1), *o = ck_host(job, no, 2);
  int32_t *lens = ck_host(job, (size_t)B, 4);
  float *lse = ck_host(job, (size_t)B * HQ, 4);
  double *s = ck_host(job, (size_t)cap, sizeof *s);
  for (long b = 0; lens && b < B; b++) lens[b] = (int32_t)seq_len(b, cap);
  /* O and the LSE start as NaN (all-ones bytes): a value the kernels never wrote, an empty
   * sequence's zero and -inf among them, fails the comparison */
  if (o && lse) memset(o, 0xff, no * 2), memset(lse, 0xff, (size_t)B * HQ * 4);
  tk_devptr dq = ck_upload(job, q, nq * 2), dk = ck_upload(job, k, nkv * 2), dv = ck_upload(job, v, nkv * 2);
  tk_devptr dlens = ck_upload(job, lens, (size_t)B * 4), dout = ck_upload(job, o, no * 2);
  tk_devptr dlse = ck_upload(job, lse, (size_t)B * HQ * 4);
  /* the scratch starts as garbage: every element read must have been written */
  float *junk = ck_random_f32(job, np * D, 1e3, 2e3);
  tk_devptr po = ck_upload(job, junk, np * D * 4), pm = ck_upload(job, junk, np * 4);
  tk_devptr pl = ck_upload(job, junk, np * 4);
  double scale = 2.0 / sqrt((double)D); /* twice the usual: a sharper softmax */
  int64_t ks[3] = {cap * HKV * D, D, HKV * D}, vs[3] = {HKV * cap * D, cap * D, D};
  tk_arg a[24] = {tk_arg_ptr(dq), tk_arg_ptr(dk), tk_arg_ptr(dv), tk_arg_ptr(dlens), tk_arg_ptr(po),
                  tk_arg_ptr(pm), tk_arg_ptr(pl), tk_arg_i32((int32_t)HQ), tk_arg_i32((int32_t)HKV),
                  tk_arg_i32((int32_t)splits), tk_arg_i32((int32_t)chunk), tk_arg_f32((float)scale),
                  tk_arg_i64(HQ * D), tk_arg_i64(D)};
  for (int i = 0; i < 3; i++) {
    a[14 + i] = tk_arg_i64(ks[i]);
    a[17 + i] = tk_arg_i64(vs[i]);
  }
  a[20] = tk_arg_ptr(dout), a[21] = tk_arg_ptr(dlse), a[22] = tk_arg_i64(ob), a[23] = tk_arg_i64(D);
  ck_launch(job, (tk_grid){(unsigned)splits, (unsigned)HKV, (unsigned)B}, a, 24);
  /* one split: decode_split wrote O and LSE itself, and the scratch stays garbage */
  tk_arg a2[11] = {tk_arg_ptr(po), tk_arg_ptr(pm), tk_arg_ptr(pl), tk_arg_ptr(dlens), tk_arg_ptr(dout),
                   tk_arg_ptr(dlse), tk_arg_i32((int32_t)HQ), tk_arg_i32((int32_t)splits),
                   tk_arg_i32((int32_t)chunk), tk_arg_i64(ob), tk_arg_i64(D)};
  if (splits > 1) ck_launch_kernel(job, job->kernel2, (tk_grid){(unsigned)HQ, (unsigned)B, 1}, a2, 11);
  ck_download(job, o, dout, no * 2);
  ck_download(job, lse, dlse, (size_t)B * HQ * 4);
  double rtol = c.bf ? 2e-2 : 4e-3, atol = c.bf ? 1e-2 : 2e-3;
  /* every head of every sequence at interpreter sizes; on the GPU's long caches, a few */
  long every = cap * B > 100000 ? 5 : 1;
  for (long b = 0; b < B && !ck_failed(job); b++)
    for (long h = 0; h < HQ && !ck_failed(job); h++) {
      if (h % every && h != HQ - 1) continue;
      long n = lens[b], g = h / (HQ / HKV);
      size_t qi = ((size_t)b * HQ + h) * D, li = (size_t)b * HQ + h;
      double mx = -INFINITY, sum = 0;
      for (long j = 0; j < n; j++) {
        double dot = 0;
        const size_t kr = (((size_t)b * cap + j) * HKV + g) * D;
        for (long e = 0; e < D; e++) dot += ck_half_val(q, qi + e, c.bf) * ck_half_val(k, kr + e, c.bf);
        s[j] = dot * scale;
        if (s[j] > mx) mx = s[j];
      }
      for (long j = 0; j < n; j++) sum += (s[j] = exp(s[j] - mx));
      const size_t vb = ((size_t)b * HKV + g) * cap * D;
      for (long e = 0; e < D && !ck_failed(job); e++) {
        double want = 0;
        for (long j = 0; j < n; j++) want += s[j] * ck_half_val(v, vb + j * D + e, c.bf);
        want = n ? want / sum : 0.0; /* no keys: O = 0 */
        ck_close(job, "o", (size_t)b * ob + h * D + e, ck_half_val(o, (size_t)b * ob + h * D + e, c.bf), want,
                 rtol, atol);
      }
      if (n == 0) { /* LSE = -inf */
        if (!(isinf(lse[li]) && lse[li] < 0)) ck_close(job, "lse", li, lse[li], -INFINITY, 0, 0);
      } else {
        ck_close(job, "lse", li, lse[li], mx + log(sum), 2e-5, 1e-4);
      }
    }
}
