/*
 * tkbench_decode.c — decode attention (samples/attention_decode.tk) at the sizes of the
 * issue: one query token per sequence, H_q = 32 query heads on H_kv = 8 key/value heads,
 * D = 128, B = 32 at KV lengths 8192 and 131072 and B = 1 and 4 at 131072, f16 and bf16,
 * q [B, H_q, 1, D] and K, V [B, H_kv, S, D] contiguous as PyTorch's SDPA takes them, every
 * sequence the full S long. The time is that of both kernels (decode_split, then
 * decode_combine, which one split does without), between one pair of CUDA events; the
 * rate reported is the bytes of K and V read, 2 B H_kv S D (element size), over that
 * time. Each configuration is checked first (sampled heads of O and of the log-sum-exp
 * against a double reference on the host), and the fastest checked one is reported.
 *
 * The caches are up to 17 GB: rather than generate that on the host, each tensor repeats a
 * random pattern of DC_PAT elements (not a multiple of D or of a head, so that heads and
 * rows differ), and the reference reads the pattern.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/tkbench.h"

typedef struct {
  const char *dtype;
  int b, s;
} dc_case;

enum { DC_HQ = 32, DC_HKV = 8, DC_D = 128, DC_PAT = 12582917, DC_MIN_CHUNK = 256 };

static const dc_case DC_CASES[] = {
    {"f16", 32, 8192},  {"f16", 32, 131072},  {"f16", 1, 131072},  {"f16", 4, 131072},
    {"bf16", 32, 8192}, {"bf16", 32, 131072}, {"bf16", 1, 131072}, {"bf16", 4, 131072},
};

/* BN, stages, warps of decode_split, and the programs per SM the split policy aims at:
 * the first is the sample's default and the policy's 4; the next four try the policy's
 * other choices on it (1: where B * H_kv programs fill the SMs, one split, which writes O
 * itself and needs no combine); the last five, 3 and 4 programs an SM by shared memory
 * (fewer stages, or BN 64 with 4 warps) at 6 and 8 waves: at B = 4, S = 131072 the
 * 3-stage one ran 692 µs against 706 for the best before (H100, 2026-12-07). */
static const int DC_CFG[][4] = {{32, 5, 4, 4}, {32, 4, 4, 4}, {64, 2, 8, 4}, {64, 3, 8, 4},
                                {128, 2, 8, 4}, {32, 5, 4, 2}, {32, 5, 4, 8}, {32, 5, 4, 1},
                                {32, 4, 4, 1}, {32, 5, 4, 6}, {32, 4, 4, 8}, {32, 3, 4, 8},
                                {64, 2, 4, 8}, {16, 6, 4, 8}};

/* The split policy (docs/decisions.md, "Decode attention"): about `waves` programs per SM
 * over B * H_kv * splits (4), but no split under DC_MIN_CHUNK keys; chunks of whole
 * blocks. */
static void split_policy(int sms, int waves, long B, long hkv, long s_max, long bn, long *splits,
                         long *chunk) {
  long per = B * hkv, n = ((long)waves * sms + per - 1) / per;
  long most = (s_max + DC_MIN_CHUNK - 1) / DC_MIN_CHUNK;
  n = n > most ? most : n < 1 ? 1 : n;
  long c = (s_max + n - 1) / n;
  *chunk = (c + bn - 1) / bn * bn;
  *splits = (s_max + *chunk - 1) / *chunk;
}

static void dc_name(const dc_case *c, char *buf, size_t cap) {
  snprintf(buf, cap, "decode %s B%d Hq%d Hkv%d S%d D%d", c->dtype, c->b, DC_HQ, DC_HKV, c->s, DC_D);
}

/* n elements of the pattern p (DC_PAT long) repeated, copied to d. */
static bool upload_repeated(bench *b, tk_devptr d, const uint16_t *p, size_t n) {
  for (size_t off = 0; off < n; off += DC_PAT) {
    size_t len = n - off < DC_PAT ? n - off : DC_PAT;
    if (tk_memcpy_htod(b->ctx, d + off * 2, p, len * 2) != TK_OK) return false;
  }
  return true;
}

/* Sampled (batch, query head) pairs, the last among them, against a double reference. */
static const char *check(bench *b, const dc_case *c, bool bf, const uint16_t *q, const float *kp,
                         const float *vp, const uint16_t *o, const float *lse, double *s) {
  long S = c->s, D = DC_D, group = DC_HQ / DC_HKV;
  float (*val)(uint16_t) = bf ? tb_bf16_to_f32 : tb_f16_to_f32;
  for (int t = 0; t < 6; t++) {
    long bh = t == 0 ? (long)c->b * DC_HQ - 1 : (long)(tb_rng_next(b) % (uint64_t)(c->b * DC_HQ));
    long bb = bh / DC_HQ, h = bh % DC_HQ, g = h / group;
    size_t kv = ((size_t)bb * DC_HKV + g) * S * D;
    double mx = -INFINITY, sum = 0, scale = 1.0 / sqrt((double)D);
    for (long j = 0; j < S; j++) {
      double dot = 0;
      for (long e = 0; e < D; e++) dot += val(q[bh * D + e]) * kp[(kv + j * D + e) % DC_PAT];
      s[j] = dot * scale;
      if (s[j] > mx) mx = s[j];
    }
    for (long j = 0; j < S; j++) sum += (s[j] = exp(s[j] - mx));
    for (long e = 0; e < D; e++) {
      double want = 0;
      for (long j = 0; j < S; j++) want += s[j] * vp[(kv + j * D + e) % DC_PAT];
      want /= sum;
      double got = val(o[bh * D + e]);
      if (!(fabs(got - want) <= (bf ? 1e-2 : 2e-3) + (bf ? 2e-2 : 4e-3) * fabs(want))) return "wrong output";
    }
    double want = mx + log(sum);
    if (!(fabs(lse[bh] - want) <= 1e-4 + 2e-5 * fabs(want))) return "wrong log-sum-exp";
  }
  return NULL;
}

/* Compiles attention_decode.tk for T = dtype and configuration cfg (NULL: defaults). */
static tk_module *compile(bench *b, const char *dtype, const int *cfg, tk_kernel **split,
                          tk_kernel **combine) {
  char path[512], v[3][16];
  snprintf(path, sizeof path, "%s/attention_decode.tk", b->samples);
  for (int i = 0; i < 3; i++) snprintf(v[i], sizeof v[i], "%d", cfg[i]);
  tk_define df[] = {{"T", dtype}, {"BN", v[0]}, {"stages", v[1]}, {"warps", v[2]}};
  tk_compile_options o = {.defines = df, .ndefines = 4, .opt_level = 3};
  tk_module *m = NULL;
  if (tk_module_compile_file(b->ctx, &m, path, &o) != TK_OK ||
      tk_module_get_kernel(m, "decode_split", split) != TK_OK ||
      tk_module_get_kernel(m, "decode_combine", combine) != TK_OK) {
    if (m) tk_module_destroy(m);
    return NULL;
  }
  return m;
}

static void run_case(bench *b, const dc_case *c, int sms) {
  char name[96];
  dc_name(c, name, sizeof name);
  fprintf(stderr, "tkbench: %s\n", name);
  bool bf = !strcmp(c->dtype, "bf16");
  long B = c->b, S = c->s, D = DC_D;
  size_t nq = (size_t)B * DC_HQ * D, nkv = (size_t)B * DC_HKV * S * D;
  double bytes = 2.0 * (double)nkv * 2;
  uint16_t *hq = malloc(nq * 2), *ho = malloc(nq * 2), *pk = malloc((size_t)DC_PAT * 2), *pv = malloc((size_t)DC_PAT * 2);
  float *fk = malloc((size_t)DC_PAT * 4), *fv = malloc((size_t)DC_PAT * 4), *hl = malloc((size_t)B * DC_HQ * 4);
  int32_t *lens = malloc((size_t)B * 4);
  double *s = malloc((size_t)S * sizeof *s);
  tk_devptr dq = 0, dk = 0, dv = 0, dlens = 0, dout = 0, dlse = 0;
  const char *why = NULL;
  if (!hq || !ho || !pk || !pv || !fk || !fv || !hl || !lens || !s) why = "out of host memory";
  uint16_t (*to)(float) = bf ? tb_f32_to_bf16 : tb_f32_to_f16;
  float (*from)(uint16_t) = bf ? tb_bf16_to_f32 : tb_f16_to_f32;
  /* uniform in [-1, 1), as tkbench_attn.c draws */
  for (size_t i = 0; !why && i < nq; i++) hq[i] = to((float)((double)(tb_rng_next(b) >> 11) / 4503599627370496.0 - 1.0));
  for (size_t i = 0; !why && i < DC_PAT; i++) {
    pk[i] = to((float)((double)(tb_rng_next(b) >> 11) / 4503599627370496.0 - 1.0));
    pv[i] = to((float)((double)(tb_rng_next(b) >> 11) / 4503599627370496.0 - 1.0));
    fk[i] = from(pk[i]);
    fv[i] = from(pv[i]);
  }
  for (long i = 0; !why && i < B; i++) lens[i] = (int32_t)S;
  if (!why && (tk_malloc(b->ctx, &dq, nq * 2) != TK_OK || tk_malloc(b->ctx, &dk, nkv * 2) != TK_OK ||
               tk_malloc(b->ctx, &dv, nkv * 2) != TK_OK || tk_malloc(b->ctx, &dlens, (size_t)B * 4) != TK_OK ||
               tk_malloc(b->ctx, &dout, nq * 2) != TK_OK || tk_malloc(b->ctx, &dlse, (size_t)B * DC_HQ * 4) != TK_OK))
    why = "out of device memory";
  if (!why && (tk_memcpy_htod(b->ctx, dq, hq, nq * 2) != TK_OK || !upload_repeated(b, dk, pk, nkv) ||
               !upload_repeated(b, dv, pv, nkv) || tk_memcpy_htod(b->ctx, dlens, lens, (size_t)B * 4) != TK_OK))
    why = "copy failed";
  double best = NAN;
  int bi = -1, runs = b->runs;
  double pred = NAN;
  const char *bound = "";
  long best_splits = 0;
  char lastbad[200] = "";
  for (size_t ci = 0; !why && ci < sizeof DC_CFG / sizeof *DC_CFG; ci++) {
    tk_kernel *ks = NULL, *kc = NULL;
    tk_module *m = compile(b, c->dtype, DC_CFG[ci], &ks, &kc);
    if (!m) {
      snprintf(lastbad, sizeof lastbad, "%s", tk_last_error(b->ctx));
      continue;
    }
    long splits, chunk;
    split_policy(sms, DC_CFG[ci][3], B, DC_HKV, S, DC_CFG[ci][0], &splits, &chunk);
    size_t np = (size_t)B * DC_HQ * splits;
    tk_devptr po = 0, pm = 0, pl = 0;
    const char *bad = NULL;
    if (tk_malloc(b->ctx, &po, np * D * 4) != TK_OK || tk_malloc(b->ctx, &pm, np * 4) != TK_OK ||
        tk_malloc(b->ctx, &pl, np * 4) != TK_OK)
      bad = "out of device memory (scratch)";
    int64_t qs[2] = {(int64_t)DC_HQ * D, D}, kvs[3] = {(int64_t)DC_HKV * S * D, (int64_t)S * D, D};
    tk_arg a1[24] = {tk_arg_ptr(dq), tk_arg_ptr(dk), tk_arg_ptr(dv), tk_arg_ptr(dlens), tk_arg_ptr(po),
                     tk_arg_ptr(pm), tk_arg_ptr(pl), tk_arg_i32(DC_HQ), tk_arg_i32(DC_HKV),
                     tk_arg_i32((int32_t)splits), tk_arg_i32((int32_t)chunk),
                     tk_arg_f32((float)(1.0 / sqrt((double)D))), tk_arg_i64(qs[0]), tk_arg_i64(qs[1])};
    for (int i = 0; i < 3; i++) {
      a1[14 + i] = tk_arg_i64(kvs[i]);
      a1[17 + i] = tk_arg_i64(kvs[i]);
    }
    a1[20] = tk_arg_ptr(dout), a1[21] = tk_arg_ptr(dlse), a1[22] = tk_arg_i64(qs[0]), a1[23] = tk_arg_i64(qs[1]);
    tk_arg a2[11] = {tk_arg_ptr(po), tk_arg_ptr(pm), tk_arg_ptr(pl), tk_arg_ptr(dlens), tk_arg_ptr(dout),
                     tk_arg_ptr(dlse), tk_arg_i32(DC_HQ), tk_arg_i32((int32_t)splits),
                     tk_arg_i32((int32_t)chunk), tk_arg_i64(qs[0]), tk_arg_i64(qs[1])};
    tb_launch seq[2] = {{ks, {(unsigned)splits, DC_HKV, (unsigned)B}, a1, 24},
                        {kc, {DC_HQ, (unsigned)B, 1}, a2, 11}};
    int nseq = splits > 1 ? 2 : 1; /* one split writes O itself */
    memset(ho, 0xff, nq * 2);
    if (!bad && (tk_memcpy_htod(b->ctx, dout, ho, nq * 2) != TK_OK ||
                 tk_launch(ks, seq[0].g, NULL, a1, 24) != TK_OK ||
                 (nseq > 1 && tk_launch(kc, seq[1].g, NULL, a2, 11) != TK_OK) ||
                 tk_synchronize(b->ctx) != TK_OK || tk_memcpy_dtoh(b->ctx, ho, dout, nq * 2) != TK_OK ||
                 tk_memcpy_dtoh(b->ctx, hl, dlse, (size_t)B * DC_HQ * 4) != TK_OK))
      bad = tk_last_error(b->ctx);
    if (!bad) bad = check(b, c, bf, hq, fk, fv, ho, hl, s);
    /* about a third of a second of timed runs per configuration, 10 at least */
    b->runs = (int)fmax(10, fmin(runs, 0.3 / (bytes / 4e12)));
    double t = bad ? NAN : tb_time_sequence(b, seq, nseq);
    b->runs = runs;
    fprintf(stderr, "tkbench:   BN=%d stages=%d warps=%d, %d per SM: splits=%ld chunk=%ld: %s %.1f us (%.0f GB/s)\n",
            DC_CFG[ci][0], DC_CFG[ci][1], DC_CFG[ci][2], DC_CFG[ci][3], splits, chunk, bad ? bad : "ok", t,
            bytes / (t * 1e-6) / 1e9);
    if (bad) snprintf(lastbad, sizeof lastbad, "%s", bad);
    if (!isnan(t) && (isnan(best) || t < best)) {
      best = t;
      bi = (int)ci;
      best_splits = splits;
      pred = tb_predict(b, seq, nseq, &bound);
    }
    if (po) tk_free(b->ctx, po);
    if (pm) tk_free(b->ctx, pm);
    if (pl) tk_free(b->ctx, pl);
    tk_module_destroy(m);
  }
  char note[240];
  if (bi >= 0)
    snprintf(note, sizeof note, "checked, BN=%d stages=%d warps=%d, %ld splits (%d programs per SM), %.0f GB/s of K and V read",
             DC_CFG[bi][0], DC_CFG[bi][1], DC_CFG[bi][2], best_splits, DC_CFG[bi][3], bytes / (best * 1e-6) / 1e9);
  else
    snprintf(note, sizeof note, "%s", why ? why : lastbad);
  tb_emit(name, best, "us", note);
  if (!isnan(best)) tb_emit(name, bytes / (best * 1e-6) / 1e9, "GB/s", "K and V read");
  tb_emit_roofline(name, pred, bound, best);
  tk_devptr d[6] = {dq, dk, dv, dlens, dout, dlse};
  for (int i = 0; i < 6; i++)
    if (d[i]) tk_free(b->ctx, d[i]);
  free(hq), free(ho), free(pk), free(pv), free(fk), free(fv), free(hl), free(lens), free(s);
}

void tb_decode(bench *b, const char *only) {
  int sms = 132; /* the H200's, should the driver not say */
  CUdevice dev;
  if (b->cu.DeviceGet(&dev, 0) != CUDA_SUCCESS ||
      b->cu.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS ||
      sms < 1)
    sms = 132;
  for (size_t i = 0; i < sizeof DC_CASES / sizeof *DC_CASES; i++) {
    char name[96];
    dc_name(&DC_CASES[i], name, sizeof name);
    if (!only || strstr(name, only)) run_case(b, &DC_CASES[i], sms);
  }
}
