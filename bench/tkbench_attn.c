/*
 * tkbench_attn.c — attention forward (samples/attention.tk) at the sizes of the issue:
 * B = 4, H = 32, S = 4096 and 16384, D = 128 and 64, causal and not, f16 and bf16, Q, K, V
 * and O contiguous [B, H, S, D] as PyTorch's SDPA takes them. Each case is timed over a
 * few configurations (the best is reported, with its TFLOP/s, counting 4 B H S^2 D FLOPs,
 * halved when causal) after sampled rows of O and of the log-sum-exp are checked against
 * a double reference on the host. `--configs` picks configurations by their index in
 * AT_CFG (an A/B of a compiler change on one configuration costs seconds, not a sweep).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/tkbench.h"

typedef struct {
  const char *dtype;
  int s, d;
  bool causal;
} at_case;

enum { AT_B = 4, AT_H = 32 };

static const at_case AT_CASES[] = {
    {"f16", 4096, 128, false}, {"f16", 4096, 128, true}, {"f16", 16384, 128, false}, {"f16", 16384, 128, true},
    {"f16", 4096, 64, false},  {"f16", 4096, 64, true},  {"f16", 16384, 64, false},  {"f16", 16384, 64, true},
    {"bf16", 4096, 128, false}, {"bf16", 4096, 128, true}, {"bf16", 16384, 128, false}, {"bf16", 16384, 128, true},
    {"bf16", 4096, 64, false},  {"bf16", 4096, 64, true},  {"bf16", 16384, 64, false},  {"bf16", 16384, 64, true},
};

/* D, BM, BN, warps, stages, programs_per_sm (0: the kernel's own), SLACK (the sample's
 * row-max slack, 0: none), streamk (1: the last rounds split along the keys; non-causal
 * rows only, causal attention is not persistent): what each head dimension tries. The slack pays on short loops
 * (causal D64: 3-5%) and costs elsewhere (bench/RESULTS.md, eighteenth session), so the
 * two D64 configurations the causal rows pick are also tried with it. BM = 256 gives 4
 * consumer warpgroups, which only D = 64 fits in registers; BM = 64 with 4 warps is one
 * consumer warpgroup a program, and 2 or 3 programs an SM put 2 or 3 of them side by side
 * without a barrier between them (measured on causal D64, S4096: 720-741 us against 800
 * for the 8-warp kernel, docs/decisions.md, fourteenth session). */
static const int AT_CFG[][8] = {
    {128, 128, 128, 8, 2, 0, 0, 0}, {128, 128, 64, 8, 2, 0, 0, 0}, {128, 64, 64, 4, 2, 2, 0, 0},
    {64, 128, 128, 8, 2, 0, 0, 0},  {64, 256, 64, 16, 2, 0, 0, 0}, {64, 128, 64, 8, 3, 0, 0, 0},
    {64, 64, 128, 4, 2, 2, 0, 0},   {64, 64, 128, 4, 3, 2, 0, 0},  {64, 64, 64, 4, 2, 3, 0, 0},
    {64, 64, 64, 4, 3, 3, 0, 0},    {64, 64, 64, 4, 2, 3, 8, 0},   {64, 128, 128, 8, 2, 0, 8, 0},
    {128, 128, 128, 8, 2, 0, 0, 1}, {64, 256, 64, 16, 2, 0, 0, 1}, {64, 128, 128, 8, 2, 0, 0, 1}};

static double val(bool bf, const uint16_t *p, size_t i) {
  return bf ? tb_bf16_to_f32(p[i]) : tb_f16_to_f32(p[i]);
}

/* 36 sampled rows (the last of a head among them) against a double reference; every
 * third in the last batch's last quarter of rows, where a persistent kernel's last rounds
 * (stream-K's split tiles, in persist's grouped order with the batch outermost) fall. */
static const char *check(bench *b, const at_case *c, bool bf, const uint16_t *q, const uint16_t *k,
                         const uint16_t *v, const uint16_t *o, const float *lse, double *s) {
  long S = c->s, D = c->d;
  for (int t = 0; t < 36; t++) {
    long bh = (long)(tb_rng_next(b) % (AT_B * AT_H)), i = t == 0 ? S - 1 : (long)(tb_rng_next(b) % (uint64_t)S);
    if (t % 3 == 2) {
      bh = (AT_B - 1) * AT_H + bh % AT_H;
      i = S - 1 - i % (S / 4);
    }
    size_t base = (size_t)bh * S * D;
    long n = c->causal ? i + 1 : S;
    double mx = -INFINITY, sum = 0, scale = 1.0 / sqrt((double)D);
    for (long j = 0; j < n; j++) {
      double dot = 0;
      for (long e = 0; e < D; e++) dot += val(bf, q, base + i * D + e) * val(bf, k, base + j * D + e);
      s[j] = dot * scale;
      if (s[j] > mx) mx = s[j];
    }
    for (long j = 0; j < n; j++) sum += (s[j] = exp(s[j] - mx));
    for (long e = 0; e < D; e++) {
      double want = 0;
      for (long j = 0; j < n; j++) want += s[j] * val(bf, v, base + j * D + e);
      want /= sum;
      double got = val(bf, o, base + i * D + e);
      if (!(fabs(got - want) <= (bf ? 1e-2 : 2e-3) + (bf ? 2e-2 : 4e-3) * fabs(want))) return "wrong output";
    }
    double l = lse[(size_t)bh * S + i];
    /* the sample sums the weights rounded to T: log(l) within T's unit roundoff */
    if (!(fabs(l - (mx + log(sum))) <= 1e-4 + (bf ? 0x1p-8 : 0x1p-11) + 2e-5 * fabs(mx + log(sum)))) return "wrong log-sum-exp";
  }
  return NULL;
}

static void run_case(bench *b, const at_case *c) {
  char name[96];
  snprintf(name, sizeof name, "attention %s B%d H%d S%d D%d%s", c->dtype, AT_B, AT_H, c->s, c->d,
           c->causal ? " causal" : "");
  fprintf(stderr, "tkbench: %s\n", name);
  bool bf = !strcmp(c->dtype, "bf16");
  size_t n = (size_t)AT_B * AT_H * c->s * c->d, nl = (size_t)AT_B * AT_H * c->s;
  uint16_t *h[4] = {malloc(n * 2), malloc(n * 2), malloc(n * 2), malloc(n * 2)};
  float *hl = malloc(nl * 4);
  double *s = malloc((size_t)c->s * sizeof *s);
  tk_devptr d[5] = {0};
  const char *why = NULL;
  for (int i = 0; i < 4; i++)
    if (!h[i] || tk_malloc(b->ctx, &d[i], n * 2) != TK_OK) why = "out of memory";
  if (!hl || !s || tk_malloc(b->ctx, &d[4], nl * 4) != TK_OK) why = "out of memory";
  uint16_t (*to)(float) = bf ? tb_f32_to_bf16 : tb_f32_to_f16;
  for (int t = 0; t < 3 && !why; t++)
    for (size_t i = 0; i < n; i++) h[t][i] = to((float)((double)(tb_rng_next(b) >> 11) / 4503599627370496.0 - 1.0));
  for (int t = 0; t < 3 && !why; t++)
    if (tk_memcpy_htod(b->ctx, d[t], h[t], n * 2) != TK_OK) why = "copy failed";
  int64_t st[3] = {(int64_t)AT_H * c->s * c->d, (int64_t)c->s * c->d, c->d};
  tk_arg args[22] = {tk_arg_ptr(d[0]), tk_arg_ptr(d[1]), tk_arg_ptr(d[2]), tk_arg_ptr(d[3]), tk_arg_ptr(d[4]),
                     tk_arg_i32(AT_H), tk_arg_i32(AT_H), tk_arg_i32(c->s), tk_arg_i32(c->s),
                     tk_arg_f32((float)(1.0 / sqrt((double)c->d)))};
  for (int i = 0; i < 12; i++) args[10 + i] = tk_arg_i64(st[i % 3]);
  double best = NAN, flops = 4.0 * AT_B * AT_H * (double)c->s * c->s * c->d * (c->causal ? 0.5 : 1.0);
  int bi = -1, runs = b->runs;
  double pred = NAN;
  const char *bound = "";
  char lastbad[200] = "";
  const char *kernel = "attention";
  for (size_t ci = 0; !why && ci < sizeof AT_CFG / sizeof *AT_CFG; ci++) {
    if (AT_CFG[ci][0] != c->d || !tb_config_wanted(b, (int)ci) || (AT_CFG[ci][7] && c->causal)) continue;
    const int *cf = AT_CFG[ci] + 1;
    char path[512], v[7][16];
    snprintf(path, sizeof path, "%s/attention.tk", b->samples);
    for (int q = 0; q < 4; q++) snprintf(v[q], sizeof v[q], "%d", cf[q]);
    snprintf(v[4], sizeof v[4], "%d", c->d);
    snprintf(v[5], sizeof v[5], "%d", cf[4]);
    snprintf(v[6], sizeof v[6], "%d", cf[5]);
    tk_define df[9] = {{"BM", v[0]}, {"BN", v[1]}, {"warps", v[2]}, {"stages", v[3]}, {"D", v[4]},
                       {"CAUSAL", c->causal ? "true" : "false"}, {"T", c->dtype}};
    int nd = 7;
    if (cf[4]) df[nd++] = (tk_define){"programs_per_sm", v[5]};
    if (cf[5]) df[nd++] = (tk_define){"SLACK", v[6]};
    if (cf[6]) df[nd++] = (tk_define){"streamk", "true"};
    tk_compile_options o = {.defines = df, .ndefines = nd, .opt_level = 3};
    tk_module *m = NULL;
    tk_kernel *k = NULL;
    if (tk_module_compile_file(b->ctx, &m, path, &o) != TK_OK || tk_module_get_kernel(m, kernel, &k) != TK_OK) {
      snprintf(lastbad, sizeof lastbad, "%s", tk_last_error(b->ctx));
      if (m) tk_module_destroy(m);
      continue;
    }
    tk_grid g = {(unsigned)((c->s + cf[0] - 1) / cf[0]), AT_H, AT_B};
    memset(h[3], 0xff, n * 2);
    const char *bad = NULL;
    if (tk_memcpy_htod(b->ctx, d[3], h[3], n * 2) != TK_OK || tk_launch(k, g, NULL, args, 22) != TK_OK ||
        tk_synchronize(b->ctx) != TK_OK || tk_memcpy_dtoh(b->ctx, h[3], d[3], n * 2) != TK_OK ||
        tk_memcpy_dtoh(b->ctx, hl, d[4], nl * 4) != TK_OK)
      bad = tk_last_error(b->ctx);
    if (!bad) bad = check(b, c, bf, h[0], h[1], h[2], h[3], hl, s);
    /* about half a second of timed runs per configuration, 10 at least */
    b->runs = (int)fmax(10, fmin(runs, 0.5 / (flops / 4e14)));
    double t = bad ? NAN : tb_time_launches(b, k, g, args, 22);
    b->runs = runs;
    fprintf(stderr, "tkbench:   BM=%d BN=%d warps=%d stages=%d programs/SM=%d slack=%d%s: %s %.1f us (%.0f TFLOP/s)\n",
            cf[0], cf[1], cf[2], cf[3], cf[4] ? cf[4] : 1, cf[5], cf[6] ? " streamk" : "", bad ? bad : "ok", t,
            flops / (t * 1e-6) / 1e12);
    if (bad) snprintf(lastbad, sizeof lastbad, "%s", bad);
    if (!isnan(t) && (isnan(best) || t < best)) {
      best = t;
      bi = (int)ci;
      pred = tb_predict(b, &(tb_launch){k, g, args, 22}, 1, &bound);
    }
    tk_module_destroy(m);
  }
  tb_emit_roofline(name, pred, bound, best);
  char note[240];
  if (bi >= 0)
    snprintf(note, sizeof note, "checked, BM=%d BN=%d warps=%d stages=%d programs/SM=%d slack=%d%s, %.0f TFLOP/s",
             AT_CFG[bi][1], AT_CFG[bi][2], AT_CFG[bi][3], AT_CFG[bi][4], AT_CFG[bi][5] ? AT_CFG[bi][5] : 1,
             AT_CFG[bi][6], AT_CFG[bi][7] ? " streamk" : "", flops / (best * 1e-6) / 1e12);
  else
    snprintf(note, sizeof note, "%s", why ? why : lastbad);
  tb_emit(name, best, "us", note);
  for (int i = 0; i < 5; i++)
    if (d[i]) tk_free(b->ctx, d[i]);
  for (int i = 0; i < 4; i++) free(h[i]);
  free(hl);
  free(s);
}

void tb_attention(bench *b, const char *only) {
  for (size_t i = 0; i < sizeof AT_CASES / sizeof *AT_CASES; i++) {
    char name[96];
    const at_case *c = &AT_CASES[i];
    snprintf(name, sizeof name, "attention %s B%d H%d S%d D%d%s", c->dtype, AT_B, AT_H, c->s, c->d,
             c->causal ? " causal" : "");
    if (!only || strstr(name, only)) run_case(b, c);
  }
}
