/*
 * tkbench — times tk on the GPU, the way DESIGN.md §8 asks: CUDA events around each run,
 * warm-up first, the median of many runs, inputs larger than L2 (and L2 flushed before
 * every timed run, as triton.testing.do_bench does, so the anchors and tk see the same
 * memory), random non-zero inputs, outputs poisoned before and checked after.
 *
 * Measures: each workload's kernel time and bandwidth; the host cost of tk_launch against
 * a raw cuLaunchKernel of the same CUfunction; cold `tkc` compile time per sample (a
 * fresh process, no cache); and libtk JIT compile time cold and on a cache hit.
 *
 * Output: one tab-separated line per figure on stdout,
 *   tk <TAB> workload <TAB> value <TAB> unit <TAB> note
 * (bench/anchors.py reads them); progress and failures go to stderr. A workload that
 * fails (compile, launch or check) prints value "nan" and the reason as its note.
 *
 * usage: tkbench [--tkc PATH] [--samples DIR] [--quick] [--only TEXT] [--configs I,J]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/tkbench.h"

void tb_emit(const char *workload, double value, const char *unit, const char *note) {
  /* a note is one field: its tabs and newlines (a driver's message) become spaces */
  printf("tk\t%s\t%.6g\t%s\t", workload, value, unit);
  for (const char *c = note ? note : ""; *c; c++) putchar(*c == '\t' || *c == '\n' ? ' ' : *c);
  putchar('\n');
  fflush(stdout);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Whether v is a --configs list: decimal indices separated by single commas. */
static bool configs_ok(const char *v) {
  bool digit = false;
  for (; *v; v++) {
    if (*v >= '0' && *v <= '9') digit = true;
    else if (*v == ',' && digit) digit = false;
    else return false;
  }
  return digit;
}

bool tb_config_wanted(const bench *b, int i) {
  char want[16];
  snprintf(want, sizeof want, ",%d,", i);
  return !b->configs || strstr(b->configs, want);
}

uint64_t tb_rng_next(bench *b) {
  b->rng ^= b->rng << 13;
  b->rng ^= b->rng >> 7;
  b->rng ^= b->rng << 17;
  return b->rng;
}

/* ---- workloads ------------------------------------------------------------------------ */

typedef enum { W_IN, W_OUT, W_N, W_STRIDE, W_EPS, W_ROWS } wrole;
typedef enum { Z_N, Z_ROWS, Z_MAT } wsize;
typedef struct {
  wrole r;
  tk_dtype t;
  wsize z;
} wparam;

typedef enum { CHECK_NONE, CHECK_VADD, CHECK_COSCOS, CHECK_SOFTMAX } wcheck;

typedef struct {
  const char *name; /* as anchors.py names it */
  const char *file, *kernel;
  int block;
  bool per_row;
  long rows, n;
  double bytes;     /* the bytes the kernel must move: the bandwidth figure's numerator */
  wcheck check;
  int nparams;
  wparam p[10];
  int rows_per_prog; /* > 0: the kernel takes ROWS rows per program (tuned over 1, 2, 4, 8) */
} workload;

#define N28 (1l << 28)
static const workload workloads[] = {
  {"vadd f32 2^28", "vadd.tk", "vadd", 1024, false, 1, N28, 12.0 * N28, CHECK_VADD, 4,
   {{W_IN, TK_F32, Z_N}, {W_IN, TK_F32, Z_N}, {W_OUT, TK_F32, Z_N}, {W_N, TK_I32, 0}}, 0},
  {"coscos f32 2^28", "coscos.tk", "coscos", 4096, false, 1, N28, 8.0 * N28, CHECK_COSCOS, 3,
   {{W_IN, TK_F32, Z_N}, {W_OUT, TK_F32, Z_N}, {W_N, TK_I64, 0}}, 0},
  {"gelu_tanh f16 2^28", "gelu.tk", "gelu_tanh", 2048, false, 1, N28, 4.0 * N28, CHECK_NONE, 3,
   {{W_IN, TK_F16, Z_N}, {W_OUT, TK_F16, Z_N}, {W_N, TK_I32, 0}}, 0},
  /* short rows: the several-rows-per-program sample, as a user would pick for them */
  {"softmax f32 4096x1024", "softmax_rows.tk", "softmax_rows", 1024, true, 4096, 1024,
   8.0 * 4096 * 1024, CHECK_SOFTMAX, 5,
   {{W_IN, TK_F32, Z_MAT}, {W_OUT, TK_F32, Z_MAT}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0},
    {W_ROWS, TK_I32, 0}}, 1},
  {"softmax f32 4096x4096", "softmax.tk", "softmax", 4096, true, 4096, 4096,
   8.0 * 4096 * 4096, CHECK_SOFTMAX, 4,
   {{W_IN, TK_F32, Z_MAT}, {W_OUT, TK_F32, Z_MAT}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0}}, 0},
  {"softmax f32 8192x8192", "softmax.tk", "softmax", 8192, true, 8192, 8192,
   8.0 * 8192 * 8192, CHECK_SOFTMAX, 4,
   {{W_IN, TK_F32, Z_MAT}, {W_OUT, TK_F32, Z_MAT}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0}}, 0},
  {"softmax f32 1024x131072", "softmax_online.tk", "softmax_online", 4096, true, 1024, 131072,
   8.0 * 1024 * 131072, CHECK_SOFTMAX, 4,
   {{W_IN, TK_F32, Z_MAT}, {W_OUT, TK_F32, Z_MAT}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0}}, 0},
  /* issue 10's rows: softmax written as one logical tile (arange(0, N), no user loop);
   * fuse cuts it into chunk loops and its cost model picks how x is kept (the online
   * rewrite for both: x read twice, tkc -Rpass=fuse says why) */
  {"softmax f32 4096x32768 one tile", "softmax.tk", "softmax", 32768, true, 4096, 32768,
   8.0 * 4096 * 32768, CHECK_SOFTMAX, 4,
   {{W_IN, TK_F32, Z_MAT}, {W_OUT, TK_F32, Z_MAT}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0}}, 0},
  {"softmax f32 1024x131072 one tile", "softmax.tk", "softmax", 131072, true, 1024, 131072,
   8.0 * 1024 * 131072, CHECK_SOFTMAX, 4,
   {{W_IN, TK_F32, Z_MAT}, {W_OUT, TK_F32, Z_MAT}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0}}, 0},
  {"layernorm f16 8192x4096", "layernorm.tk", "layernorm", 4096, true, 8192, 4096,
   4.0 * 8192 * 4096, CHECK_NONE, 9,
   {{W_IN, TK_F16, Z_MAT}, {W_OUT, TK_F16, Z_MAT}, {W_IN, TK_F16, Z_N}, {W_IN, TK_F16, Z_N},
    {W_OUT, TK_F32, Z_ROWS}, {W_OUT, TK_F32, Z_ROWS}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0},
    {W_EPS, TK_F32, 0}}, 0},
  /* the same layernorm, several rows per program (tuned ROWS); anchors.py keeps the faster */
  {"layernorm f16 8192x4096", "layernorm_rows.tk", "layernorm_rows", 4096, true, 8192, 4096,
   4.0 * 8192 * 4096, CHECK_NONE, 10,
   {{W_IN, TK_F16, Z_MAT}, {W_OUT, TK_F16, Z_MAT}, {W_IN, TK_F16, Z_N}, {W_IN, TK_F16, Z_N},
    {W_OUT, TK_F32, Z_ROWS}, {W_OUT, TK_F32, Z_ROWS}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0},
    {W_ROWS, TK_I32, 0}, {W_EPS, TK_F32, 0}}, 1},
  {"rmsnorm f16 8192x4096", "rmsnorm.tk", "rmsnorm", 4096, true, 8192, 4096,
   4.0 * 8192 * 4096, CHECK_NONE, 7,
   {{W_IN, TK_F16, Z_MAT}, {W_OUT, TK_F16, Z_MAT}, {W_IN, TK_F16, Z_N}, {W_OUT, TK_F32, Z_ROWS},
    {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0}, {W_EPS, TK_F32, 0}}, 0},
  /* rows wider than a thread's registers (128 values a thread at 4 warps): fuse's chunk
   * loops, one read of the row kept in registers chunk by chunk or recomputed */
  {"layernorm f16 4096x16384", "layernorm.tk", "layernorm", 16384, true, 4096, 16384,
   4.0 * 4096 * 16384, CHECK_NONE, 9,
   {{W_IN, TK_F16, Z_MAT}, {W_OUT, TK_F16, Z_MAT}, {W_IN, TK_F16, Z_N}, {W_IN, TK_F16, Z_N},
    {W_OUT, TK_F32, Z_ROWS}, {W_OUT, TK_F32, Z_ROWS}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0},
    {W_EPS, TK_F32, 0}}, 0},
  {"rmsnorm f16 4096x16384", "rmsnorm.tk", "rmsnorm", 16384, true, 4096, 16384,
   4.0 * 4096 * 16384, CHECK_NONE, 7,
   {{W_IN, TK_F16, Z_MAT}, {W_OUT, TK_F16, Z_MAT}, {W_IN, TK_F16, Z_N}, {W_OUT, TK_F32, Z_ROWS},
    {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0}, {W_EPS, TK_F32, 0}}, 0},  /* issue 10's norm rows: one logical tile a row, wider than 4096 */
  {"layernorm f16 8192x16384", "layernorm.tk", "layernorm", 16384, true, 8192, 16384,
   4.0 * 8192 * 16384, CHECK_NONE, 9,
   {{W_IN, TK_F16, Z_MAT}, {W_OUT, TK_F16, Z_MAT}, {W_IN, TK_F16, Z_N}, {W_IN, TK_F16, Z_N},
    {W_OUT, TK_F32, Z_ROWS}, {W_OUT, TK_F32, Z_ROWS}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0},
    {W_EPS, TK_F32, 0}}, 0},
  {"rmsnorm f16 8192x16384", "rmsnorm.tk", "rmsnorm", 16384, true, 8192, 16384,
   4.0 * 8192 * 16384, CHECK_NONE, 7,
   {{W_IN, TK_F16, Z_MAT}, {W_OUT, TK_F16, Z_MAT}, {W_IN, TK_F16, Z_N}, {W_OUT, TK_F32, Z_ROWS},
    {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0}, {W_EPS, TK_F32, 0}}, 0},
  {"layernorm f16 2048x65536", "layernorm.tk", "layernorm", 65536, true, 2048, 65536,
   4.0 * 2048 * 65536, CHECK_NONE, 9,
   {{W_IN, TK_F16, Z_MAT}, {W_OUT, TK_F16, Z_MAT}, {W_IN, TK_F16, Z_N}, {W_IN, TK_F16, Z_N},
    {W_OUT, TK_F32, Z_ROWS}, {W_OUT, TK_F32, Z_ROWS}, {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0},
    {W_EPS, TK_F32, 0}}, 0},
  {"rmsnorm f16 2048x65536", "rmsnorm.tk", "rmsnorm", 65536, true, 2048, 65536,
   4.0 * 2048 * 65536, CHECK_NONE, 7,
   {{W_IN, TK_F16, Z_MAT}, {W_OUT, TK_F16, Z_MAT}, {W_IN, TK_F16, Z_N}, {W_OUT, TK_F32, Z_ROWS},
    {W_STRIDE, TK_I64, 0}, {W_N, TK_I32, 0}, {W_EPS, TK_F32, 0}}, 0},
};

static size_t dsize(tk_dtype t) { return t == TK_F16 ? 2 : t == TK_I64 ? 8 : 4; }

static long welems(const workload *w, wsize z) {
  return z == Z_N ? w->n : z == Z_ROWS ? w->rows : w->rows * w->n;
}

/* Random non-zero values in ±[0.5, 2): f32 or f16 bit patterns. */
static void fill_random(bench *b, void *p, tk_dtype t, long n) {
  if (t == TK_F16) {
    uint16_t *h = p;
    for (long i = 0; i < n; i++) {
      uint64_t r = tb_rng_next(b);
      h[i] = (uint16_t)((r & 1) << 15 | (14 + (r >> 1) % 2) << 10 | ((r >> 8) & 1023));
    }
  } else {
    float *f = p;
    for (long i = 0; i < n; i++) {
      uint64_t r = tb_rng_next(b);
      float v = 0.5f + 1.5f * (float)((r >> 11) & 0xffffff) / 16777216.0f;
      f[i] = (r & 1) ? -v : v;
    }
  }
}

/* Checks a sample of the output against the host; NULL when it matches, else a reason. */
static const char *check_output(const workload *w, const float *in0, const float *in1,
                                const void *out, tk_dtype out_t, long out_n) {
  const float *y = out;
  const uint16_t *h = out;
  long stride = w->per_row ? 9973 : 4099; /* a prime, so every position class is sampled */
  switch (w->check) {
  case CHECK_VADD:
    for (long i = 0; i < w->n; i += stride)
      if (y[i] != in0[i] + in1[i]) return "wrong sum";
    return y[w->n - 1] == in0[w->n - 1] + in1[w->n - 1] ? NULL : "wrong last element";
  case CHECK_COSCOS:
    for (long i = 0; i < w->n; i += stride)
      if (!(fabsf(y[i] - cosf(cosf(in0[i]))) <= 1e-5f)) return "wrong cos(cos(x))"; /* NaN fails */
    return NULL;
  case CHECK_SOFTMAX:
    for (long r = 0; r < w->rows; r += 97) {
      double s = 0;
      for (long c = 0; c < w->n; c++) s += y[r * w->n + c];
      if (!(fabs(s - 1.0) < 1e-3)) return "a row does not sum to 1";
    }
    return NULL;
  case CHECK_NONE: /* the poison (0xff: NaN) must be gone */
    for (long i = 0; i < out_n; i += stride)
      if (out_t == TK_F16 ? (h[i] & 0x7c00) == 0x7c00 : isnan(y[i]))
        return "output not written (poison left)";
    return NULL;
  }
  return NULL;
}

double tb_time_sequence(bench *b, const tb_launch *l, int nl) {
  CUevent start, end;
  double *t = calloc((size_t)b->runs, sizeof *t);
  b->cu.EventCreate(&start, CU_EVENT_DEFAULT);
  b->cu.EventCreate(&end, CU_EVENT_DEFAULT);
  bool ok = t != NULL;
  for (int i = 0; i < 5 * nl && ok; i++) ok = tk_launch(l[i % nl].k, l[i % nl].g, NULL, l[i % nl].args, l[i % nl].n) == TK_OK;
  for (int i = 0; i < b->runs && ok; i++) {
    b->cu.MemsetD8(b->flush, (unsigned char)i, b->flush_bytes);
    b->cu.EventRecord(start, NULL);
    for (int j = 0; j < nl && ok; j++) ok = tk_launch(l[j].k, l[j].g, NULL, l[j].args, l[j].n) == TK_OK;
    b->cu.EventRecord(end, NULL);
    float ms = 0;
    ok = ok && b->cu.EventSynchronize(end) == CUDA_SUCCESS &&
         b->cu.EventElapsedTime(&ms, start, end) == CUDA_SUCCESS;
    t[i] = 1000.0 * ms;
  }
  double med = ok ? median(t, b->runs) : NAN;
  b->cu.EventDestroy(start);
  b->cu.EventDestroy(end);
  free(t);
  return med;
}

double tb_predict(bench *b, const tb_launch *l, int nl, const char **bound) {
  double total = 0, longest = -1;
  *bound = "";
  for (int i = 0; i < nl; i++) {
    tk_roofline_report r;
    if (tk_roofline(l[i].k, NULL, l[i].g, l[i].args, l[i].n, &r) != TK_OK) {
      fprintf(stderr, "tkbench: roofline: %s\n", tk_last_error(b->ctx));
      return NAN;
    }
    total += r.predicted_us;
    if (r.predicted_us > longest) {
      longest = r.predicted_us;
      *bound = r.bound_name;
    }
  }
  return total;
}

/* Every workload's predicted bound as % of its measured time, for the summary at the end
 * (issue 10: prediction and measurement within 20% on every workload, or a listed why). */
enum { RL_MAX = 256 };
static struct {
  char name[120];
  double pct;
} rl_seen[RL_MAX];
static int rl_n;

void tb_emit_roofline(const char *workload, double predicted, const char *bound, double measured) {
  if (isnan(predicted) || isnan(measured)) return;
  if (rl_n < RL_MAX) {
    snprintf(rl_seen[rl_n].name, sizeof rl_seen[rl_n].name, "%s", workload);
    rl_seen[rl_n++].pct = 100.0 * predicted / measured;
  }
  char name[200];
  snprintf(name, sizeof name, "%s roofline", workload);
  tb_emit(name, predicted, "us", bound);
  snprintf(name, sizeof name, "%s %% of bound", workload);
  tb_emit(name, 100.0 * predicted / measured, "%", "predicted bound / measured time");
}

/* The workloads whose measured time is not within 20% of the roofline's prediction (below
 * 80% of bound: the kernel is slower than the model says it could be; above 120%: the
 * model over-charges it), one row: how many agree, the others named with their %. */
static void roofline_summary(void) {
  if (!rl_n) return;
  char note[4096] = "";
  size_t used = 0;
  int agree = 0, unnamed = 0;
  for (int i = 0; i < rl_n; i++) {
    if (rl_seen[i].pct >= 80.0 && rl_seen[i].pct <= 120.0) {
      agree++;
      continue;
    }
    /* keep room for the count of those that did not fit */
    size_t room = sizeof note - used > 32 ? sizeof note - used - 32 : 0;
    int w = snprintf(note + used, room, "%s%s %.0f%%", used ? "; " : "outside: ", rl_seen[i].name, rl_seen[i].pct);
    if (w < 0 || (size_t)w >= room) {
      note[used] = '\0';
      unnamed++;
      continue;
    }
    used += (size_t)w;
  }
  if (unnamed) snprintf(note + used, sizeof note - used, "; and %d more", unnamed);
  char name[64];
  snprintf(name, sizeof name, "roofline within 20%% (of %d)", rl_n);
  tb_emit(name, agree, "workloads", note);
  fprintf(stderr, "tkbench: %d of %d workloads within 20%% of the roofline's prediction\n", agree, rl_n);
}

double tb_time_launches(bench *b, tk_kernel *k, tk_grid g, const tk_arg *args, int n) {
  return tb_time_sequence(b, &(tb_launch){k, g, args, n}, 1);
}

/* Compiles a sample with BLOCK (and warps and ROWS, when not 0) set; no_fuse: -fno-fuse. */
static tk_kernel *compile_as(bench *b, const char *file, const char *kernel, int block,
                             int warps, int rows, int no_cache, int no_fuse, tk_module **mod) {
  char path[512], blk[16], wrp[16], rws[16];
  snprintf(path, sizeof path, "%s/%s", b->samples, file);
  snprintf(blk, sizeof blk, "%d", block);
  snprintf(wrp, sizeof wrp, "%d", warps);
  snprintf(rws, sizeof rws, "%d", rows);
  tk_define d[3] = {{"BLOCK", blk}, {"warps", wrp}, {"ROWS", rws}};
  int nd = 1;
  if (warps) d[nd++] = d[1];
  if (rows) d[nd++] = d[2];
  tk_compile_options o = {.defines = d, .ndefines = nd, .opt_level = 3, .no_cache = no_cache,
                          .no_fuse = no_fuse, .fuse_keep = (tk_fuse_keep)b->fuse_keep};
  tk_kernel *k = NULL;
  if (tk_module_compile_file(b->ctx, mod, path, &o) != TK_OK ||
      tk_module_get_kernel(*mod, kernel, &k) != TK_OK) {
    fprintf(stderr, "tkbench: %s: %s\n", file, tk_last_error(b->ctx));
    return NULL;
  }
  return k;
}

static tk_kernel *compile_tuned(bench *b, const char *file, const char *kernel, int block,
                                int warps, int rows, int no_cache, tk_module **mod) {
  return compile_as(b, file, kernel, block, warps, rows, no_cache, 0, mod);
}

static tk_kernel *compile_sample(bench *b, const char *file, const char *kernel, int block,
                                 int no_cache, tk_module **mod) {
  return compile_tuned(b, file, kernel, block, 0, 0, no_cache, mod);
}

/* One configuration of a row workload (warps, ROWS; 0: the kernel's own) compiled fused
 * or -fno-fuse: checked on a poisoned output, then timed (us); NaN after saying why. */
static double try_config(bench *b, const workload *w, int warps, int rows, int no_fuse,
                         const tk_arg *args, tk_devptr *dev, void **host, int out) {
  tk_module *m2 = NULL;
  tk_kernel *k2 = compile_as(b, w->file, w->kernel, w->block, warps, rows, 0, no_fuse, &m2);
  if (!k2) return NAN;
  long per = rows ? rows : w->rows_per_prog > 0 ? w->rows_per_prog : 1;
  tk_grid g2 = {w->per_row ? (unsigned)((w->rows + per - 1) / per)
                           : (unsigned)((w->n + w->block - 1) / w->block), 1, 1};
  size_t bytes = (size_t)welems(w, w->p[out].z) * dsize(w->p[out].t);
  memset(host[out], 0xff, bytes);
  const char *bad = NULL;
  if (tk_memcpy_htod(b->ctx, dev[out], host[out], bytes) != TK_OK ||
      tk_launch(k2, g2, NULL, args, w->nparams) != TK_OK || tk_synchronize(b->ctx) != TK_OK ||
      tk_memcpy_dtoh(b->ctx, host[out], dev[out], bytes) != TK_OK)
    bad = tk_last_error(b->ctx);
  else
    bad = check_output(w, host[0], w->p[1].r == W_IN ? host[1] : NULL, host[out],
                       w->p[out].t, welems(w, w->p[out].z));
  double t = bad ? NAN : tb_time_launches(b, k2, g2, args, w->nparams);
  if (bad) fprintf(stderr, "tkbench: %s warps=%d rows=%d%s: %s\n", w->name, warps, rows,
                   no_fuse ? " -fno-fuse" : "", bad);
  else fprintf(stderr, "tkbench:   warps=%d rows=%d%s: %.1f us\n", warps, rows, no_fuse ? " -fno-fuse" : "", t);
  tk_module_destroy(m2);
  return t;
}

static void run_workload(bench *b, const workload *w) {
  fprintf(stderr, "tkbench: %s\n", w->name);
  tk_module *m = NULL;
  tk_kernel *k = compile_tuned(b, w->file, w->kernel, w->block, 0, w->rows_per_prog, 0, &m);
  if (!k) {
    tb_emit(w->name, NAN, "us", "compile failed");
    return;
  }
  tk_arg args[10];
  tk_devptr dev[10] = {0};
  void *host[10] = {0};
  const char *why = NULL;
  for (int i = 0; i < w->nparams && !why; i++) {
    const wparam *p = &w->p[i];
    if (p->r == W_N) { args[i] = p->t == TK_I64 ? tk_arg_i64(w->n) : tk_arg_i32((int)w->n); continue; }
    if (p->r == W_STRIDE) { args[i] = tk_arg_i64(w->n); continue; }
    if (p->r == W_EPS) { args[i] = tk_arg_f32(1e-5f); continue; }
    if (p->r == W_ROWS) { args[i] = tk_arg_i32((int)w->rows); continue; }
    size_t bytes = (size_t)welems(w, p->z) * dsize(p->t);
    host[i] = malloc(bytes);
    if (!host[i] || tk_malloc(b->ctx, &dev[i], bytes) != TK_OK) { why = "out of memory"; break; }
    if (p->r == W_IN) fill_random(b, host[i], p->t, welems(w, p->z));
    else memset(host[i], 0xff, bytes); /* poison: NaN in f32 and f16 */
    if (tk_memcpy_htod(b->ctx, dev[i], host[i], bytes) != TK_OK) why = "copy failed";
    args[i] = tk_arg_ptr(dev[i]);
  }
  long per = w->rows_per_prog > 0 ? w->rows_per_prog : 1;
  tk_grid g = {w->per_row ? (unsigned)((w->rows + per - 1) / per)
                          : (unsigned)((w->n + w->block - 1) / w->block), 1, 1};
  double us = NAN;
  if (!why) {
    /* one checked run on poisoned outputs before timing */
    if (tk_launch(k, g, NULL, args, w->nparams) != TK_OK || tk_synchronize(b->ctx) != TK_OK)
      why = tk_last_error(b->ctx);
  }
  int out = -1;
  for (int i = 0; i < w->nparams; i++)
    if (w->p[i].r == W_OUT && out < 0) out = i;
  if (!why) {
    size_t bytes = (size_t)welems(w, w->p[out].z) * dsize(w->p[out].t);
    if (tk_memcpy_dtoh(b->ctx, host[out], dev[out], bytes) != TK_OK) why = "copy back failed";
    else why = check_output(w, host[0], w->p[1].r == W_IN ? host[1] : NULL, host[out],
                            w->p[out].t, welems(w, w->p[out].z));
  }
  if (!why) us = tb_time_launches(b, k, g, args, w->nparams);
  if (!why && isnan(us)) why = tk_last_error(b->ctx);
  /* Row kernels: a user tunes warps per program to the row length (as Triton's autotune
   * would); try each, check its output, keep the fastest. */
  int best_warps = 0, best_rows = 0;
  static const int cands[] = {4, 8, 16}, rcands[] = {1, 2, 4, 8};
  int nr = w->rows_per_prog > 0 ? 4 : 1;
  for (int ci = 0; w->per_row && !why && ci < 3 * nr; ci++) {
    int warps = cands[ci % 3], rows = w->rows_per_prog > 0 ? rcands[ci / 3] : 0;
    double t = try_config(b, w, warps, rows, 0, args, dev, host, out);
    if (!isnan(t) && t < us) {
      us = t;
      best_warps = warps;
      best_rows = rows;
    }
  }
  char note[160];
  if (best_rows)
    snprintf(note, sizeof note, "checked, warps=%d, %d rows/program", best_warps, best_rows);
  else if (best_warps)
    snprintf(note, sizeof note, "checked, warps=%d", best_warps);
  else
    snprintf(note, sizeof note, "%s", why ? why : "checked");
  tb_emit(w->name, us, "us", note);
  if (!isnan(us)) tb_emit(w->name, w->bytes / (us * 1e-6) / 1e9, "GB/s", "");
  if (!isnan(us)) {
    /* the prediction for the launch measured: the winning configuration's kernel and
     * grid (a kernel of ROWS rows a program on the grid of another ROWS is counted for
     * that many more or fewer rows) */
    long per_b = best_rows ? best_rows : per;
    tk_grid gb = {w->per_row ? (unsigned)((w->rows + per_b - 1) / per_b) : g.x, 1, 1};
    tk_module *mb = NULL;
    tk_kernel *kb = best_warps ? compile_tuned(b, w->file, w->kernel, w->block, best_warps,
                                               best_rows, 0, &mb)
                               : k;
    const char *bound = "";
    double pred = kb ? tb_predict(b, &(tb_launch){kb, gb, args, w->nparams}, 1, &bound) : NAN;
    if (mb) tk_module_destroy(mb);
    tb_emit_roofline(w->name, pred, bound, us);
  }
  /* What fusion buys: the winning configuration compiled -fno-fuse (every op's result
   * through global scratch memory), checked and timed; the ratio is unfused / fused. */
  if (!isnan(us)) {
    char name[160];
    snprintf(name, sizeof name, "%s -fno-fuse", w->name);
    double nf = try_config(b, w, best_warps, best_rows ? best_rows : w->rows_per_prog, 1, args, dev, host, out);
    snprintf(note, sizeof note, "%s", isnan(nf) ? "failed (see stderr)" : "checked, same configuration");
    tb_emit(name, nf, "us", note);
    if (!isnan(nf)) {
      snprintf(name, sizeof name, "%s fusion speedup", w->name);
      tb_emit(name, nf / us, "x", "-fno-fuse time / fused time");
    }
  }
  for (int i = 0; i < w->nparams; i++) {
    if (dev[i]) tk_free(b->ctx, dev[i]);
    free(host[i]);
  }
  tk_module_destroy(m);
}

/* ---- matmul --------------------------------------------------------------------------- */

uint16_t tb_f32_to_f16(float f) {
  _Float16 h = (_Float16)f;
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}

float tb_f16_to_f32(uint16_t u) {
  _Float16 h;
  memcpy(&h, &u, 2);
  return (float)h;
}

/* bf16: the top half of an f32, rounded to nearest even */
uint16_t tb_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

float tb_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* One matmul workload: C = A @ B (+ bias, gelu when `fused`) in dtype, M x N x K. */
typedef struct {
  const char *name;
  const char *dtype; /* "f16" | "bf16" */
  int m, n, k;
  bool fused;        /* samples/matmul_bias_gelu.tk */
  bool logical;      /* samples/matmul_logical.tk: K as one tile, the loop kloop's */
} mm_case;

static const mm_case MM_CASES[] = {
    {"matmul f16 4096^3", "f16", 4096, 4096, 4096, false, false},
    /* issue 10 item 6: within 5% of the row above (the note gives the ratio) */
    {"matmul logical-K f16 4096^3", "f16", 4096, 4096, 4096, false, true},
    {"matmul bf16 4096^3", "bf16", 4096, 4096, 4096, false, false},
    {"matmul f16 8192^3", "f16", 8192, 8192, 8192, false, false},
    {"matmul bf16 8192^3", "bf16", 8192, 8192, 8192, false, false},
    {"matmul f16 16384x4096x4096", "f16", 16384, 4096, 4096, false, false},
    {"matmul bf16 16384x4096x4096", "bf16", 16384, 4096, 4096, false, false},
    {"matmul f16 8192x1024x8192", "f16", 8192, 1024, 8192, false, false},
    {"matmul bf16 8192x1024x8192", "bf16", 8192, 1024, 8192, false, false},
    {"matmul+bias+gelu f16 4096^3", "f16", 4096, 4096, 4096, true, false},
};

/* The configurations tried, the fastest kept (tk's autotuning is issue 11): BM, BN, BK,
 * warps, stages. */
/* BM, BN, BK, warps, stages, programs_per_sm (0: the compiler's). Two programs of 128 x 128
 * per SM measured 213.5 us plain, 230.3 fused at 4096^3 (docs/decisions.md): not swept. */
static const int MM_CFG[][6] = {{128, 256, 64, 8, 4, 0}, {128, 256, 64, 8, 3, 0}, {128, 256, 32, 8, 6, 0},
                                {128, 128, 64, 8, 4, 0}, {256, 128, 64, 8, 3, 0},
                                /* 5-8: shallow rings (measured for issue 8's epilogue park, which
                                 * went: docs/decisions.md); only with --configs */
                                {128, 256, 64, 8, 2, 0}, {128, 256, 32, 8, 3, 0}, {128, 256, 32, 8, 4, 0},
                                {128, 256, 32, 8, 5, 0}};
enum { MM_SWEPT = 5 }; /* the configurations swept without --configs */

/* The looped f16 time per shape, for the logical-K row's ratio (the rows run in order). */
typedef struct {
  int m, n, k;
  double us;
} mm_time;
static mm_time mm_looped[sizeof MM_CASES / sizeof *MM_CASES];
static int mm_nlooped;

/* The K tile of the logical kernel: the power of two at least k. */
static int mm_kp(int k) {
  int p = 16;
  while (p < k) p *= 2;
  return p;
}

static float mm_to_f32(bool bf, uint16_t u) { return bf ? tb_bf16_to_f32(u) : tb_f16_to_f32(u); }

/* 64 sampled outputs against a double-precision dot product on the host. */
static const char *mm_check(bench *b, const mm_case *mc, const uint16_t *ha, const uint16_t *hb,
                            const uint16_t *hbias, const uint16_t *hc) {
  bool bf = !strcmp(mc->dtype, "bf16");
  for (int s = 0; s < 64; s++) {
    size_t i = (size_t)(tb_rng_next(b) % (uint64_t)mc->m), j = (size_t)(tb_rng_next(b) % (uint64_t)mc->n);
    double ref = 0;
    for (int kk = 0; kk < mc->k; kk++)
      ref += (double)mm_to_f32(bf, ha[i * mc->k + kk]) * mm_to_f32(bf, hb[(size_t)kk * mc->n + j]);
    if (mc->fused) {
      ref += mm_to_f32(bf, hbias[j]);
      ref = 0.5 * ref * (1.0 + erf(ref * 0.7071067811865476));
    }
    double got = mm_to_f32(bf, hc[i * mc->n + j]);
    if (!(fabs(got - ref) <= 0.03 + 0.01 * fabs(ref))) return "wrong result";
  }
  return NULL;
}

static void run_matmul_case(bench *b, const mm_case *mc) {
  fprintf(stderr, "tkbench: %s\n", mc->name);
  bool bf = !strcmp(mc->dtype, "bf16");
  size_t na = (size_t)mc->m * mc->k, nb = (size_t)mc->k * mc->n, nc = (size_t)mc->m * mc->n;
  uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hc = malloc(nc * 2), *hbias = malloc((size_t)mc->n * 2);
  tk_devptr da = 0, db = 0, dc = 0, dbias = 0;
  const char *why = NULL;
  if (!ha || !hb || !hc || !hbias || tk_malloc(b->ctx, &da, na * 2) != TK_OK ||
      tk_malloc(b->ctx, &db, nb * 2) != TK_OK || tk_malloc(b->ctx, &dc, nc * 2) != TK_OK ||
      tk_malloc(b->ctx, &dbias, (size_t)mc->n * 2) != TK_OK)
    why = "out of memory";
  uint16_t (*to)(float) = bf ? tb_f32_to_bf16 : tb_f32_to_f16;
  for (size_t i = 0; !why && i < na; i++) ha[i] = to((float)((double)(tb_rng_next(b) >> 11) / 9007199254740992.0 - 0.5));
  for (size_t i = 0; !why && i < nb; i++) hb[i] = to((float)((double)(tb_rng_next(b) >> 11) / 9007199254740992.0 - 0.5));
  for (int i = 0; !why && i < mc->n; i++) hbias[i] = to((float)((double)(tb_rng_next(b) >> 11) / 9007199254740992.0 - 0.5));
  if (!why && (tk_memcpy_htod(b->ctx, da, ha, na * 2) != TK_OK || tk_memcpy_htod(b->ctx, db, hb, nb * 2) != TK_OK ||
               tk_memcpy_htod(b->ctx, dbias, hbias, (size_t)mc->n * 2) != TK_OK))
    why = "copy failed";
  double pred = NAN;
  const char *bound = "";
  double best = NAN;
  int bi = -1;
  char lastbad[200] = "";
  tk_arg args[8];
  int nargs = 0;
  args[nargs++] = tk_arg_ptr(da);
  args[nargs++] = tk_arg_ptr(db);
  if (mc->fused) args[nargs++] = tk_arg_ptr(dbias);
  args[nargs++] = tk_arg_ptr(dc);
  args[nargs++] = tk_arg_i32(mc->m);
  args[nargs++] = tk_arg_i32(mc->n);
  args[nargs++] = tk_arg_i32(mc->k);
  const char *file = mc->fused ? "matmul_bias_gelu.tk" : mc->logical ? "matmul_logical.tk" : "matmul.tk";
  const char *kernel = mc->fused ? "matmul_bias_gelu" : mc->logical ? "matmul_logical" : bf ? "matmul_bf16" : "matmul";
  for (size_t ci = 0; !why && ci < sizeof MM_CFG / sizeof *MM_CFG; ci++) {
    /* the logical kernel's step is kloop's (64 for f16): the configurations with that BK */
    if (mc->logical && MM_CFG[ci][2] != 64) continue;
    if (b->configs ? !tb_config_wanted(b, (int)ci) : ci >= MM_SWEPT) continue;
    char path[512], v[6][16];
    snprintf(path, sizeof path, "%s/%s", b->samples, file);
    for (int q = 0; q < 6; q++) snprintf(v[q], sizeof v[q], "%d", MM_CFG[ci][q]);
    if (mc->logical) snprintf(v[2], sizeof v[2], "%d", mm_kp(mc->k));
    tk_define d[] = {{"BM", v[0]}, {"BN", v[1]}, {mc->logical ? "KP" : "BK", v[2]}, {"warps", v[3]}, {"stages", v[4]},
                     {"programs_per_sm", v[5]}};
    tk_compile_options o = {.defines = d, .ndefines = MM_CFG[ci][5] ? 6 : 5, .opt_level = 3};
    tk_module *m = NULL;
    tk_kernel *k = NULL;
    if (tk_module_compile_file(b->ctx, &m, path, &o) != TK_OK || tk_module_get_kernel(m, kernel, &k) != TK_OK) {
      snprintf(lastbad, sizeof lastbad, "%s", tk_last_error(b->ctx));
      if (m) tk_module_destroy(m);
      continue;
    }
    tk_grid g = {(unsigned)((mc->m + MM_CFG[ci][0] - 1) / MM_CFG[ci][0]),
                 (unsigned)((mc->n + MM_CFG[ci][1] - 1) / MM_CFG[ci][1]), 1};
    memset(hc, 0xff, nc * 2);
    const char *bad = NULL;
    if (tk_memcpy_htod(b->ctx, dc, hc, nc * 2) != TK_OK || tk_launch(k, g, NULL, args, nargs) != TK_OK ||
        tk_synchronize(b->ctx) != TK_OK || tk_memcpy_dtoh(b->ctx, hc, dc, nc * 2) != TK_OK)
      bad = tk_last_error(b->ctx);
    if (!bad) bad = mm_check(b, mc, ha, hb, hbias, hc);
    double t = bad ? NAN : tb_time_launches(b, k, g, args, nargs);
    fprintf(stderr, "tkbench:   BM=%d BN=%d BK=%d warps=%d stages=%d per_sm=%d: %s %.1f us\n", MM_CFG[ci][0],
            MM_CFG[ci][1], MM_CFG[ci][2], MM_CFG[ci][3], MM_CFG[ci][4], MM_CFG[ci][5], bad ? bad : "ok", t);
    if (bad) snprintf(lastbad, sizeof lastbad, "%s", bad);
    if (!isnan(t) && (isnan(best) || t < best)) {
      best = t;
      bi = (int)ci;
      pred = tb_predict(b, &(tb_launch){k, g, args, nargs}, 1, &bound);
    }
    tk_module_destroy(m);
  }
  tb_emit_roofline(mc->name, pred, bound, best);
  char note[240];
  double looped = NAN;
  for (int i = 0; i < mm_nlooped; i++)
    if (mm_looped[i].m == mc->m && mm_looped[i].n == mc->n && mm_looped[i].k == mc->k) looped = mm_looped[i].us;
  if (!mc->logical && !mc->fused && !bf && !isnan(best) && mm_nlooped < (int)(sizeof mm_looped / sizeof *mm_looped))
    mm_looped[mm_nlooped++] = (mm_time){mc->m, mc->n, mc->k, best};
  if (bi >= 0 && mc->logical)
    snprintf(note, sizeof note, "checked, BM=%d BN=%d KP=%d warps=%d stages=%d per_sm=%d, %.0f TFLOP/s, %.3fx the looped kernel's time",
             MM_CFG[bi][0], MM_CFG[bi][1], mm_kp(mc->k), MM_CFG[bi][3], MM_CFG[bi][4], MM_CFG[bi][5],
             2.0 * mc->m * mc->n * (double)mc->k / (best * 1e-6) / 1e12, best / looped);
  else if (bi >= 0)
    snprintf(note, sizeof note, "checked, BM=%d BN=%d BK=%d warps=%d stages=%d per_sm=%d, %.0f TFLOP/s", MM_CFG[bi][0],
             MM_CFG[bi][1], MM_CFG[bi][2], MM_CFG[bi][3], MM_CFG[bi][4], MM_CFG[bi][5],
             2.0 * mc->m * mc->n * (double)mc->k / (best * 1e-6) / 1e12);
  else
    snprintf(note, sizeof note, "%s", why ? why : lastbad);
  tb_emit(mc->name, best, "us", note);
  if (da) tk_free(b->ctx, da);
  if (db) tk_free(b->ctx, db);
  if (dc) tk_free(b->ctx, dc);
  if (dbias) tk_free(b->ctx, dbias);
  free(ha);
  free(hb);
  free(hc);
  free(hbias);
}

/* ---- launch overhead ------------------------------------------------------------------ */

static const char TINY_TK[] =
  "kernel tiny<BLOCK: i32 = 128>(x: *f32, n: i32) {\n"
  "    let o = program_id(0) * BLOCK + arange(0, BLOCK);\n"
  "    store(x + o, 1.0, o < n);\n"
  "}\n";

/* Host microseconds per launch: batches of `batch` back-to-back launches (few enough that
 * the driver's queue never fills, which would time the GPU instead), median over batches. */
static void launch_overhead(bench *b) {
  fprintf(stderr, "tkbench: launch overhead\n");
  tk_module *m;
  tk_kernel *k;
  if (tk_module_compile(b->ctx, &m, TINY_TK, sizeof TINY_TK - 1, "tiny.tk", NULL) != TK_OK ||
      tk_module_get_kernel(m, "tiny", &k) != TK_OK) {
    tb_emit("launch tk_launch", NAN, "us", "compile failed");
    return;
  }
  tk_devptr x;
  tk_malloc(b->ctx, &x, 512);
  tk_arg args[] = {tk_arg_ptr(x), tk_arg_i32(0)};
  CUfunction fn = rt_cuda_kernel_function(k);
  CUdeviceptr xp = x;
  int n0 = 0;
  void *raw[] = {&xp, &n0};
  enum { BATCH = 256, BATCHES = 60 };
  double tk_t[BATCHES], raw_t[BATCHES];
  bool ok = true;
  for (int rep = 0; rep < BATCHES && ok; rep++) {
    /* interleaved, so drift in clocks or load hits both alike */
    double t0 = now_s();
    for (int i = 0; i < BATCH; i++) ok &= tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 2) == TK_OK;
    double t1 = now_s();
    b->cu.CtxSynchronize();
    double t2 = now_s();
    for (int i = 0; i < BATCH; i++)
      ok &= b->cu.LaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, NULL, raw, NULL) == CUDA_SUCCESS;
    double t3 = now_s();
    b->cu.CtxSynchronize();
    tk_t[rep] = (t1 - t0) * 1e6 / BATCH;
    raw_t[rep] = (t3 - t2) * 1e6 / BATCH;
  }
  double tk_us = ok ? median(tk_t, BATCHES) : NAN, raw_us = ok ? median(raw_t, BATCHES) : NAN;
  tb_emit("launch tk_launch", tk_us, "us", "host time per launch, tiny kernel");
  tb_emit("launch cuLaunchKernel", raw_us, "us", "same CUfunction, raw");
  tb_emit("launch tk/raw", tk_us / raw_us, "x", "target <= 1.15");
  tk_free(b->ctx, x);
  tk_module_destroy(m);
}

/* ---- compile times -------------------------------------------------------------------- */

/* Wall milliseconds of `tkc file -o /dev/null` in a fresh process; NAN if it fails. */
static double tkc_once(const char *tkc, const char *file) {
  double t0 = now_s();
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stderr)) _exit(127);
    execl(tkc, tkc, file, "-o", "/dev/null", (char *)NULL);
    _exit(127);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return NAN;
  return (now_s() - t0) * 1e3;
}

static void compile_times(bench *b) {
  static const char *files[] = {"vadd.tk", "coscos.tk", "gelu.tk", "softmax.tk",
                                "softmax_online.tk", "layernorm.tk", "rmsnorm.tk",
                                "cross_entropy.tk", "row_sum_chunked.tk"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char path[512], name[96];
    snprintf(path, sizeof path, "%s/%s", b->samples, files[i]);
    double t[5];
    int n = 0;
    for (int r = 0; r < 5; r++) {
      t[n] = tkc_once(b->tkc, path);
      if (isnan(t[n])) break;
      n++;
    }
    snprintf(name, sizeof name, "compile tkc %s", files[i]);
    tb_emit(name, n == 5 ? median(t, 5) : NAN, "ms", n == 5 ? "cold process, -o /dev/null" : "tkc failed");
  }
  /* libtk JIT: softmax cold (cache bypassed) and from a warm cache */
  double cold[5], hit[20];
  bool ok = true;
  tk_module *m;
  for (int r = 0; r < 5 && ok; r++) {
    double t0 = now_s();
    ok = compile_sample(b, "softmax.tk", "softmax", 1024, 1, &m) != NULL;
    cold[r] = (now_s() - t0) * 1e3;
    if (ok) tk_module_destroy(m);
  }
  ok = ok && compile_sample(b, "softmax.tk", "softmax", 1024, 0, &m) != NULL; /* fills it */
  if (ok) tk_module_destroy(m);
  for (int r = 0; r < 20 && ok; r++) {
    double t0 = now_s();
    ok = compile_sample(b, "softmax.tk", "softmax", 1024, 0, &m) != NULL;
    hit[r] = (now_s() - t0) * 1e3;
    if (ok) tk_module_destroy(m);
  }
  tb_emit("compile jit softmax cold", ok ? median(cold, 5) : NAN, "ms", "tk_module_compile, no cache");
  tb_emit("compile jit softmax cache hit", ok ? median(hit, 20) : NAN, "ms", "tk_module_compile, warm cache");
}

int main(int argc, char **argv) {
  bench b = {0};
  b.samples = "samples";
  b.tkc = "build/tools/tkc";
  b.runs = 100;
  b.rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
  bool quick = false;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tkc") && i + 1 < argc) b.tkc = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--samples") && i + 1 < argc) b.samples = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--configs") && i + 1 < argc) {
      static char list[256];
      const char *v = argv[++i];
      if (!configs_ok(v) || strlen(v) + 3 > sizeof list) {
        fprintf(stderr, "tkbench: --configs takes indices separated by commas (0,3,8), got '%s'\n", v);
        return 2;
      }
      snprintf(list, sizeof list, ",%s,", v);
      b.configs = list;
    }
    else if (!strcmp(argv[i], "--fuse-keep") && i + 1 < argc) {
      const char *k = argv[++i];
      static const char *const names[] = {"auto", "recompute", "online", "smem", "cluster"};
      b.fuse_keep = -1;
      for (int j = 0; j < 5; j++)
        if (!strcmp(k, names[j])) b.fuse_keep = j;
      if (b.fuse_keep < 0) {
        fprintf(stderr, "tkbench: --fuse-keep takes auto, recompute, online, smem or cluster\n");
        return 2;
      }
    } else {
      fprintf(stderr, "usage: tkbench [--tkc PATH] [--samples DIR] [--quick] [--only TEXT]\n"
                      "               [--fuse-keep auto|recompute|online|smem] [--configs I,J]\n"
                      "  --only TEXT  run only the workloads whose name contains TEXT\n"
                      "  --configs    attention and matmul: try only these configurations of the\n"
                      "               sweep (indices into AT_CFG, bench/tkbench_attn.c, and MM_CFG)\n"
                      "  --fuse-keep  force fusion's keep choice for the row kernels\n");
      return 2;
    }
  }
  if (quick) b.runs = 50;
  su_buf why = {0};
  if (!rt_cuda_load(&b.cu, &why)) {
    printf("skipped: no CUDA device\n  (%s)\n", su_buf_str(&why));
    su_buf_free(&why);
    return 0;
  }
  if (tk_context_create(&b.ctx, &(tk_context_options){TK_BACKEND_CUDA, 0}) != TK_OK) {
    printf("skipped: no CUDA device\n  (%s)\n", tk_last_error(NULL));
    rt_cuda_unload(&b.cu);
    su_buf_free(&why);
    return 0;
  }
  /* 256 MiB, well over the H200's L2: writing it evicts the previous run's data */
  b.flush_bytes = (size_t)256 << 20;
  if (tk_malloc(b.ctx, &b.flush, b.flush_bytes) != TK_OK) {
    fprintf(stderr, "tkbench: %s\n", tk_last_error(b.ctx));
    return 1;
  }
  if (!only) launch_overhead(&b);
  for (size_t i = 0; i < sizeof workloads / sizeof *workloads; i++)
    if (!only || strstr(workloads[i].name, only)) run_workload(&b, &workloads[i]);
  for (size_t i = 0; i < sizeof MM_CASES / sizeof *MM_CASES; i++)
    if (!only || strstr(MM_CASES[i].name, only)) run_matmul_case(&b, &MM_CASES[i]);
  tb_matmul_fp8(&b, only);
  tb_attention(&b, only);
  tb_decode(&b, only);
  tb_bincount(&b, only);
  if (!only) compile_times(&b);
  roofline_summary();
  tk_free(b.ctx, b.flush);
  tk_context_destroy(b.ctx);
  /* the driver has started: it stays loaded (runtime/cuda.h), the process ends anyway */
  su_buf_free(&why);
  return 0;
}
