/*
 * tkbench_mm8.c — fp8 matmul (samples/matmul_fp8.tk): C = (A B^T) * scale with e4m3 A
 * (M x K) and B (N x K), f16 C, on wgmma's e4m3 form on sm_90a; anchored by cuBLAS's fp8
 * GEMM (torch._scaled_mm, bench/anchors.py). Each configuration is checked on 64 sampled
 * outputs against exact products summed in double, then timed; the fastest is kept.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/tkbench.h"
#include "ir/ir.h" /* ir_fp8_value */

typedef struct {
  const char *name; /* as anchors.py names it */
  int m, n, k;
} m8_case;

static const m8_case M8_CASES[] = {
    {"matmul fp8 e4m3 4096^3", 4096, 4096, 4096},
    {"matmul fp8 e4m3 8192^3", 8192, 8192, 8192},
};

/* BM, BN, BK, warps, stages */
static const int M8_CFG[][5] = {{128, 256, 128, 8, 4}, {128, 256, 128, 8, 3}, {128, 256, 64, 8, 4},
                                {256, 128, 128, 8, 3}, {128, 128, 128, 8, 4}};

static const char *check(bench *b, const m8_case *c, const uint8_t *a, const uint8_t *bt, const uint16_t *o,
                         float scale) {
  for (int s = 0; s < 64; s++) {
    size_t i = (size_t)(tb_rng_next(b) % (uint64_t)c->m), j = (size_t)(tb_rng_next(b) % (uint64_t)c->n);
    /* the exact sum, and the bound of the fp8 accumulation (ir_fp8_acc) */
    ir_fp8_acc acc = {0};
    for (int q = 0; q < c->k; q++)
      ir_fp8_acc_add(&acc, ir_fp8_value(TK_F8E4M3, a[i * c->k + q]) * ir_fp8_value(TK_F8E4M3, bt[j * c->k + q]));
    double want = acc.sum, bound = ir_fp8_acc_bound(&acc);
    want *= scale;
    double got = tb_f16_to_f32(o[i * c->n + j]);
    if (!(fabs(got - want) <= 1e-2 + 2e-3 * fabs(want) + bound * scale)) return "wrong result";
  }
  return NULL;
}

static void run_case(bench *b, const m8_case *c) {
  fprintf(stderr, "tkbench: %s\n", c->name);
  size_t na = (size_t)c->m * c->k, nb = (size_t)c->n * c->k, nc = (size_t)c->m * c->n;
  uint8_t *ha = malloc(na), *hb = malloc(nb);
  uint16_t *hc = malloc(nc * 2);
  tk_devptr da = 0, db = 0, dc = 0;
  const char *why = NULL;
  if (!ha || !hb || !hc || tk_malloc(b->ctx, &da, na) != TK_OK || tk_malloc(b->ctx, &db, nb) != TK_OK ||
      tk_malloc(b->ctx, &dc, nc * 2) != TK_OK)
    why = "out of memory";
  /* random finite e4m3 values with magnitudes 1/8 .. 7.5 (exponent fields 4 .. 9) */
  uint8_t *in[2] = {ha, hb};
  size_t nin[2] = {na, nb};
  for (int t = 0; !why && t < 2; t++)
    for (size_t i = 0; i < nin[t]; i++) {
      uint64_t r = tb_rng_next(b);
      in[t][i] = (uint8_t)((r & 1) << 7 | (4 + (r >> 1) % 6) << 3 | ((r >> 8) & 7));
    }
  if (!why && (tk_memcpy_htod(b->ctx, da, ha, na) != TK_OK || tk_memcpy_htod(b->ctx, db, hb, nb) != TK_OK))
    why = tk_last_error(b->ctx);
  const float scale = 1.0f / 64;
  tk_arg args[] = {tk_arg_ptr(da), tk_arg_ptr(db), tk_arg_ptr(dc), tk_arg_i32(c->m), tk_arg_i32(c->n),
                   tk_arg_i32(c->k), tk_arg_f32(scale)};
  double best = NAN, pred = NAN;
  const char *bound = "";
  int bi = -1;
  char lastbad[200] = "", path[512];
  snprintf(path, sizeof path, "%s/matmul_fp8.tk", b->samples);
  for (size_t ci = 0; !why && ci < sizeof M8_CFG / sizeof *M8_CFG; ci++) {
    char v[5][16];
    for (int q = 0; q < 5; q++) snprintf(v[q], sizeof v[q], "%d", M8_CFG[ci][q]);
    tk_define d[] = {{"BM", v[0]}, {"BN", v[1]}, {"BK", v[2]}, {"warps", v[3]}, {"stages", v[4]}};
    tk_compile_options o = {.defines = d, .ndefines = 5, .opt_level = 3};
    tk_module *m = NULL;
    tk_kernel *k = NULL;
    if (tk_module_compile_file(b->ctx, &m, path, &o) != TK_OK || tk_module_get_kernel(m, "matmul_fp8", &k) != TK_OK) {
      snprintf(lastbad, sizeof lastbad, "%s", tk_last_error(b->ctx));
      if (m) tk_module_destroy(m);
      continue;
    }
    tk_grid g = {(unsigned)((c->m + M8_CFG[ci][0] - 1) / M8_CFG[ci][0]),
                 (unsigned)((c->n + M8_CFG[ci][1] - 1) / M8_CFG[ci][1]), 1};
    memset(hc, 0xff, nc * 2);
    const char *bad = NULL;
    if (tk_memcpy_htod(b->ctx, dc, hc, nc * 2) != TK_OK || tk_launch(k, g, NULL, args, 7) != TK_OK ||
        tk_synchronize(b->ctx) != TK_OK || tk_memcpy_dtoh(b->ctx, hc, dc, nc * 2) != TK_OK)
      bad = tk_last_error(b->ctx);
    if (!bad) bad = check(b, c, ha, hb, hc, scale);
    double t = bad ? NAN : tb_time_launches(b, k, g, args, 7);
    fprintf(stderr, "tkbench:   BM=%d BN=%d BK=%d warps=%d stages=%d: %s %.1f us\n", M8_CFG[ci][0], M8_CFG[ci][1],
            M8_CFG[ci][2], M8_CFG[ci][3], M8_CFG[ci][4], bad ? bad : "ok", t);
    if (bad) snprintf(lastbad, sizeof lastbad, "%s", bad);
    if (!isnan(t) && (isnan(best) || t < best)) {
      best = t;
      bi = (int)ci;
      pred = tb_predict(b, &(tb_launch){k, g, args, 7}, 1, &bound);
    }
    tk_module_destroy(m);
  }
  tb_emit_roofline(c->name, pred, bound, best);
  char note[200];
  if (bi >= 0)
    snprintf(note, sizeof note, "checked, BM=%d BN=%d BK=%d warps=%d stages=%d, %.0f TFLOP/s", M8_CFG[bi][0],
             M8_CFG[bi][1], M8_CFG[bi][2], M8_CFG[bi][3], M8_CFG[bi][4],
             2.0 * c->m * c->n * (double)c->k / (best * 1e-6) / 1e12);
  else
    snprintf(note, sizeof note, "%s", why ? why : lastbad);
  tb_emit(c->name, best, "us", note);
  if (da) tk_free(b->ctx, da);
  if (db) tk_free(b->ctx, db);
  if (dc) tk_free(b->ctx, dc);
  free(ha);
  free(hb);
  free(hc);
}

void tb_matmul_fp8(bench *b, const char *only) {
  for (size_t i = 0; i < sizeof M8_CASES / sizeof *M8_CASES; i++)
    if (!only || strstr(M8_CASES[i].name, only)) run_case(b, &M8_CASES[i]);
}
