/*
 * tkbench_hist.c — bincount (samples/bincount.tk): 2^28 i32 values into 256 bins, each
 * program counting its BLOCK values in shared memory (the histogram builtin) and adding
 * them to the result with one atomic per bin; anchored by torch.bincount(x, minlength=256)
 * and Triton's tl.histogram (bench/anchors.py). Values uniform in [0, 256), and a skewed
 * case where 90% of them fall in one bin (the contention shared atomics must absorb). The
 * counts are checked exactly after one launch; the timed launches keep adding (the counts
 * wrap after ~2000 runs, which changes no timing). The rate is the bytes of x read.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/tkbench.h"

enum { HB_BINS = 256 };

typedef struct {
  const char *name; /* as anchors.py names it */
  int skew;         /* percent of the values in bin 7 */
  int block;        /* BLOCK of the sample */
} hb_case;

static const hb_case HB_CASES[] = {
    {"bincount i32 2^28 256 bins", 0, 4096},
    {"bincount i32 2^28 256 bins skewed", 90, 4096},
};

static void run_case(bench *b, const hb_case *hc) {
  fprintf(stderr, "tkbench: %s\n", hc->name);
  long n = 1l << 28;
  int32_t *x = malloc((size_t)n * 4), h[HB_BINS];
  long want[HB_BINS] = {0};
  tk_devptr dx = 0, dh = 0;
  tk_module *m = NULL;
  tk_kernel *k = NULL;
  const char *why = NULL;
  char path[512], blk[16];
  snprintf(path, sizeof path, "%s/bincount.tk", b->samples);
  snprintf(blk, sizeof blk, "%d", hc->block);
  tk_define d[1] = {{"BLOCK", blk}};
  tk_compile_options o = {.defines = d, .ndefines = 1, .opt_level = 3};
  if (!x) why = "out of memory";
  else if (tk_module_compile_file(b->ctx, &m, path, &o) != TK_OK ||
           tk_module_get_kernel(m, "bincount", &k) != TK_OK)
    why = tk_last_error(b->ctx);
  for (long i = 0; !why && i < n; i++) {
    uint64_t r = tb_rng_next(b);
    x[i] = (int)(r % 100) < hc->skew ? 7 : (int32_t)((r >> 8) % HB_BINS);
    want[x[i]]++;
  }
  memset(h, 0, sizeof h);
  if (!why && (tk_malloc(b->ctx, &dx, (size_t)n * 4) != TK_OK || tk_malloc(b->ctx, &dh, sizeof h) != TK_OK ||
               tk_memcpy_htod(b->ctx, dx, x, (size_t)n * 4) != TK_OK ||
               tk_memcpy_htod(b->ctx, dh, h, sizeof h) != TK_OK))
    why = tk_last_error(b->ctx);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dh), tk_arg_i32((int32_t)n)};
  tk_grid g = {(unsigned)((n + hc->block - 1) / hc->block), 1, 1};
  if (!why && (tk_launch(k, g, NULL, args, 3) != TK_OK || tk_synchronize(b->ctx) != TK_OK ||
               tk_memcpy_dtoh(b->ctx, h, dh, sizeof h) != TK_OK))
    why = tk_last_error(b->ctx);
  for (int i = 0; !why && i < HB_BINS; i++)
    if (h[i] != want[i]) why = "wrong counts";
  double us = why ? NAN : tb_time_launches(b, k, g, args, 3);
  if (!why && isnan(us)) why = tk_last_error(b->ctx);
  tb_emit(hc->name, us, "us", why ? why : "checked");
  if (!isnan(us)) {
    tb_emit(hc->name, 4.0 * (double)n / (us * 1e-6) / 1e9, "GB/s", "");
    const char *bound;
    double pred = tb_predict(b, &(tb_launch){k, g, args, 3}, 1, &bound);
    tb_emit_roofline(hc->name, pred, bound, us);
  }
  if (dx) tk_free(b->ctx, dx);
  if (dh) tk_free(b->ctx, dh);
  if (m) tk_module_destroy(m);
  free(x);
}

void tb_bincount(bench *b, const char *only) {
  for (size_t i = 0; i < sizeof HB_CASES / sizeof *HB_CASES; i++)
    if (!only || strstr(HB_CASES[i].name, only)) run_case(b, &HB_CASES[i]);
}
