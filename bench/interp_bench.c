/*
 * interp-bench — how fast the reference interpreter runs, on the CPU: what issue 12 asks
 * of it at model sizes. Not a test (it checks only that results are sane); the figures
 * go to bench/RESULTS.md by hand.
 *
 * Measures, each with one thread (per core) and with every core (TK_INTERPRET_THREADS
 * unset):
 *  - dot: a loop of acc = dot(a, b, acc) on 64x64x64 tiles loaded once, GFLOP/s
 *    (2·M·N·K per dot) for f16, bf16, f32 and i8 operands;
 *  - elementwise: a loop of v = v * 0.5 + 1.0 on a 4096-element tile (two tile ops per
 *    iteration, the loop's own cost included), M elements/s (result elements of
 *    elementwise ops per second);
 *  - vadd: a whole masked vadd kernel over 2^22 f32 elements (1024 a program; about 15
 *    tile ops an element: index math, mask, 2 loads, add, store), M output elements/s;
 *  - matmul: samples/matmul.tk at 512^3 (its default 128x128x64 tiles), seconds;
 *  - attention: bench/attention.tk, 8 heads of 512 x 64 f16, seconds.
 * Output: one line per figure, "workload  value unit  (threads; the rate per CPU second or
 * the CPU seconds; note)": wall time is the figure, CPU time (all threads' together) shows
 * what other load on the machine took from it. Exits 1 if a
 * matmul or attention result is off (against a C reference on a sample of rows).
 *
 * usage: interp-bench [--samples DIR] [--bench DIR] [--quick] [--only NAME] [--threads N]
 *   --only runs the workloads whose name starts with NAME (dot, elementwise, vadd,
 *   matmul, attention); --threads N runs with N threads only (default: 1, then all).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "include/tk.h"

typedef struct {
  tk_context *ctx;
  const char *samples, *benchdir;
  const char *only; /* run the workloads whose name starts with this */
  int quick, failed;
  uint64_t rng;
} bench;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check(bench *b, tk_status s, const char *what) {
  if (s == TK_OK) return;
  fprintf(stderr, "interp-bench: %s: %s: %s\n", what, tk_status_name(s), tk_last_error(b->ctx));
  exit(1);
}

/* Uniform in [-1, 1), the same sequence on every run. */
static float uniform(bench *b) {
  uint64_t x = b->rng;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  b->rng = x;
  return (float)((double)(x >> 11) / 4503599627370496.0 - 1.0);
}

static tk_devptr upload(bench *b, const void *host, size_t bytes) {
  tk_devptr p;
  check(b, tk_malloc(b->ctx, &p, bytes), "tk_malloc");
  check(b, tk_memcpy_htod(b->ctx, p, host, bytes), "tk_memcpy_htod");
  return p;
}

static tk_kernel *compile(bench *b, const char *src, const char *name, tk_module **m) {
  tk_compile_options o = {.no_cache = 1};
  check(b, tk_module_compile(b->ctx, m, src, strlen(src), name, &o), "tk_module_compile");
  tk_kernel *k;
  check(b, tk_module_get_kernel(*m, name, &k), "tk_module_get_kernel");
  return k;
}

static tk_kernel *compile_file(bench *b, const char *dir, const char *file, const char *name,
                               tk_module **m) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  tk_compile_options o = {.no_cache = 1};
  check(b, tk_module_compile_file(b->ctx, m, path, &o), "tk_module_compile_file");
  tk_kernel *k;
  check(b, tk_module_get_kernel(*m, name, &k), "tk_module_get_kernel");
  return k;
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wall and process CPU seconds of a launch (CPU time is what the launch's threads ran,
 * which other load on the machine inflates far less than the wall time). */
typedef struct {
  double wall, cpu;
} timing;

/* A launch with `threads` threads (0: the default, every core): the best of three (one
 * with --quick), the machine being shared. */
static timing timed_launch(bench *b, tk_kernel *k, tk_grid g, const tk_arg *args, int n,
                           int threads) {
  char v[16];
  snprintf(v, sizeof v, "%d", threads);
  if (threads) setenv("TK_INTERPRET_THREADS", v, 1);
  else unsetenv("TK_INTERPRET_THREADS");
  timing best = {INFINITY, INFINITY};
  for (int run = 0; run < (b->quick ? 1 : 3); run++) {
    double t0 = now_s(), c0 = cpu_s();
    check(b, tk_launch(k, g, NULL, args, n), "tk_launch");
    timing t = {now_s() - t0, cpu_s() - c0};
    if (t.wall < best.wall) best = t;
  }
  return best;
}

static const char *who(int threads, char *buf, size_t n) {
  if (threads) snprintf(buf, n, "%d thread%s", threads, threads > 1 ? "s" : "");
  else snprintf(buf, n, "all cores");
  return buf;
}

/* work per wall second (and per CPU second) in unit. */
static void report_rate(const char *workload, double work, const char *unit, timing t,
                        int threads, const char *note) {
  char w[32];
  printf("%-26s %9.3f %-9s (%s; %.3f per CPU second%s%s)\n", workload, work / t.wall, unit,
         who(threads, w, sizeof w), work / t.cpu, note ? "; " : "", note ? note : "");
  fflush(stdout);
}

static void report_time(const char *workload, timing t, int threads, const char *note) {
  char w[32];
  printf("%-26s %9.3f s         (%s; CPU %.3f s; %s)\n", workload, t.wall,
         who(threads, w, sizeof w), t.cpu, note);
  fflush(stdout);
}

static bool wanted(const bench *b, const char *name) {
  return !b->only || !strncmp(name, b->only, strlen(b->only));
}

/* ---- dot ------------------------------------------------------------------------------- */

static void bench_dot(bench *b, const char *in, const char *acc, int threads) {
  enum { M = 64, N = 64, K = 64 };
  char src[1024];
  snprintf(src, sizeof src,
           "kernel dotk(a: *%s, b: *%s, c: *%s, R: i32) {\n"
           "  let rm = arange(0, %d); let rn = arange(0, %d); let rk = arange(0, %d);\n"
           "  let ta = load(a + rm[:, None] * %d + rk[None, :]);\n"
           "  let tb = load(b + rk[:, None] * %d + rn[None, :]);\n"
           "  var acc = zeros<%s>(%d, %d);\n"
           "  for i in range(0, R) { acc = dot(ta, tb, acc); }\n"
           "  store(c + program_id(0) * %d + rm[:, None] * %d + rn[None, :], acc);\n"
           "}\n",
           in, in, acc, M, N, K, K, N, acc, M, N, M * N, N);
  tk_module *m;
  tk_kernel *k = compile(b, src, "dotk", &m);
  /* The operands stay zero (tk_malloc zeroes): the interpreter's time does not depend on
   * the values. */
  tk_devptr pa, pb, pc;
  check(b, tk_malloc(b->ctx, &pa, M * K * 8), "tk_malloc");
  check(b, tk_malloc(b->ctx, &pb, K * N * 8), "tk_malloc");
  check(b, tk_malloc(b->ctx, &pc, (size_t)8 * M * N * 4), "tk_malloc");
  int reps = b->quick ? 16 : 128, progs = 8;
  tk_arg args[] = {tk_arg_ptr(pa), tk_arg_ptr(pb), tk_arg_ptr(pc), tk_arg_i32(reps)};
  timing t = timed_launch(b, k, (tk_grid){progs, 1, 1}, args, 4, threads);
  char name[64];
  snprintf(name, sizeof name, "dot %s->%s 64^3", in, acc);
  report_rate(name, 2e-9 * M * N * K * reps * progs, "GFLOP/s", t, threads, NULL);
  tk_free(b->ctx, pa), tk_free(b->ctx, pb), tk_free(b->ctx, pc);
  tk_module_destroy(m);
}

/* ---- elementwise ------------------------------------------------------------------------ */

static void bench_elementwise(bench *b, const char *t, size_t bytes, int threads) {
  enum { B = 4096 };
  char src[1024];
  snprintf(src, sizeof src,
           "kernel ew(x: *%s, y: *%s, R: i32) {\n"
           "  let offs = program_id(0) * %d + arange(0, %d);\n"
           "  var v = load(x + offs);\n"
           "  for i in range(0, R) { v = v * 0.5 + 1.0; }\n"
           "  store(y + offs, v);\n"
           "}\n",
           t, t, B, B);
  tk_module *m;
  tk_kernel *k = compile(b, src, "ew", &m);
  int progs = 8, reps = b->quick ? 50 : 400;
  tk_devptr px, py;
  check(b, tk_malloc(b->ctx, &px, (size_t)progs * B * bytes), "tk_malloc");
  check(b, tk_malloc(b->ctx, &py, (size_t)progs * B * bytes), "tk_malloc");
  tk_arg args[] = {tk_arg_ptr(px), tk_arg_ptr(py), tk_arg_i32(reps)};
  timing tm = timed_launch(b, k, (tk_grid){progs, 1, 1}, args, 3, threads);
  char name[64];
  snprintf(name, sizeof name, "elementwise %s mul+add", t);
  report_rate(name, 2e-6 * B * reps * progs, "M elem/s", tm, threads, NULL);
  tk_free(b->ctx, px), tk_free(b->ctx, py);
  tk_module_destroy(m);
}

static void bench_vadd(bench *b, int threads) {
  static const char *src =
      "kernel vadd(x: *f32, y: *f32, z: *f32, n: i32) {\n"
      "  let offs = program_id(0) * 1024 + arange(0, 1024);\n"
      "  let m = offs < n;\n"
      "  store(z + offs, load(x + offs, m) + load(y + offs, m), m);\n"
      "}\n";
  tk_module *m;
  tk_kernel *k = compile(b, src, "vadd", &m);
  int n = b->quick ? 1 << 18 : 1 << 22;
  float *h = malloc((size_t)n * sizeof *h);
  for (int i = 0; i < n; i++) h[i] = uniform(b);
  tk_devptr px = upload(b, h, (size_t)n * 4), py = upload(b, h, (size_t)n * 4), pz;
  check(b, tk_malloc(b->ctx, &pz, (size_t)n * 4), "tk_malloc");
  tk_arg args[] = {tk_arg_ptr(px), tk_arg_ptr(py), tk_arg_ptr(pz), tk_arg_i32(n)};
  timing t = timed_launch(b, k, (tk_grid){(unsigned)(n / 1024), 1, 1}, args, 4, threads);
  check(b, tk_memcpy_dtoh(b->ctx, h, pz, sizeof *h), "tk_memcpy_dtoh");
  report_rate("vadd f32 2^22", 1e-6 * n, "M elem/s", t, threads, "whole kernel, output elements");
  free(h);
  tk_free(b->ctx, px), tk_free(b->ctx, py), tk_free(b->ctx, pz);
  tk_module_destroy(m);
}

/* ---- matmul and attention ------------------------------------------------------------- */

static float *random_f16(bench *b, size_t n, _Float16 **dev_copy) {
  float *f = malloc(n * sizeof *f);
  _Float16 *h = malloc(n * sizeof *h);
  for (size_t i = 0; i < n; i++) h[i] = (_Float16)uniform(b), f[i] = (float)h[i];
  *dev_copy = h;
  return f;
}

static void bench_matmul(bench *b, int threads) {
  tk_module *m;
  tk_kernel *k = compile_file(b, b->samples, "matmul.tk", "matmul", &m);
  int n = 512;
  _Float16 *ha, *hb;
  float *a = random_f16(b, (size_t)n * n, &ha), *bb = random_f16(b, (size_t)n * n, &hb);
  tk_devptr pa = upload(b, ha, (size_t)n * n * 2), pb = upload(b, hb, (size_t)n * n * 2), pc;
  check(b, tk_malloc(b->ctx, &pc, (size_t)n * n * 2), "tk_malloc");
  tk_arg args[] = {tk_arg_ptr(pa), tk_arg_ptr(pb), tk_arg_ptr(pc),
                   tk_arg_i32(n), tk_arg_i32(n), tk_arg_i32(n)};
  timing t = timed_launch(b, k, (tk_grid){n / 128, n / 128, 1}, args, 6, threads);
  _Float16 *hc = malloc((size_t)n * n * 2);
  check(b, tk_memcpy_dtoh(b->ctx, hc, pc, (size_t)n * n * 2), "tk_memcpy_dtoh");
  double err = 0;
  for (int i = 0; i < n; i += 37) /* a sample of rows is enough to catch a wrong kernel */
    for (int j = 0; j < n; j++) {
      float s = 0;
      for (int kk = 0; kk < n; kk++) s += a[i * n + kk] * bb[kk * n + j];
      err = fmax(err, fabs((double)hc[i * n + j] - s));
    }
  char note[64];
  snprintf(note, sizeof note, "%.2f GFLOP/s, max err %.2g", 2.0 * n * n * n / t.wall * 1e-9, err);
  report_time("matmul f16 512^3", t, threads, note);
  if (!(err < 0.05)) b->failed = 1; /* f16 results near 10: an ulp is 2^-7 */
  free(a), free(bb), free(ha), free(hb), free(hc);
  tk_free(b->ctx, pa), tk_free(b->ctx, pb), tk_free(b->ctx, pc);
  tk_module_destroy(m);
}

static void bench_attention(bench *b, int threads) {
  tk_module *m;
  tk_kernel *k = compile_file(b, b->benchdir, "attention.tk", "attention", &m);
  enum { H = 8, S = 512, D = 64 };
  size_t n = (size_t)H * S * D;
  _Float16 *hq, *hk, *hv;
  float *q = random_f16(b, n, &hq), *kk = random_f16(b, n, &hk), *v = random_f16(b, n, &hv);
  tk_devptr pq = upload(b, hq, n * 2), pk = upload(b, hk, n * 2), pv = upload(b, hv, n * 2), po;
  check(b, tk_malloc(b->ctx, &po, n * 2), "tk_malloc");
  float scale = 1.0f / sqrtf((float)D);
  tk_arg args[] = {tk_arg_ptr(pq), tk_arg_ptr(pk), tk_arg_ptr(pv), tk_arg_ptr(po),
                   tk_arg_i32(S), tk_arg_f32(scale)};
  timing t = timed_launch(b, k, (tk_grid){S / 64, H, 1}, args, 6, threads);
  _Float16 *ho = malloc(n * 2);
  check(b, tk_memcpy_dtoh(b->ctx, ho, po, n * 2), "tk_memcpy_dtoh");
  double err = 0, p[S];
  for (int h = 0; h < H; h++)
    for (int i = 0; i < S; i += 41) {
      const float *qi = &q[((size_t)h * S + i) * D];
      double mx = -INFINITY, l = 0;
      for (int j = 0; j < S; j++) {
        double s = 0;
        for (int d = 0; d < D; d++) s += qi[d] * kk[((size_t)h * S + j) * D + d];
        p[j] = s * scale;
        mx = fmax(mx, p[j]);
      }
      for (int j = 0; j < S; j++) l += p[j] = exp(p[j] - mx);
      for (int d = 0; d < D; d++) {
        double o = 0;
        for (int j = 0; j < S; j++) o += p[j] * v[((size_t)h * S + j) * D + d];
        err = fmax(err, fabs(o / l - (double)ho[((size_t)h * S + i) * D + d]));
      }
    }
  char note[64];
  snprintf(note, sizeof note, "%.2f GFLOP/s, max err %.2g", 4.0 * H * S * S * D / t.wall * 1e-9,
           err);
  report_time("attention f16 8x512x64", t, threads, note);
  if (!(err < 1e-3)) b->failed = 1; /* averages of values in [-1, 1] rounded to f16 */
  free(q), free(kk), free(v), free(hq), free(hk), free(hv), free(ho);
  tk_free(b->ctx, pq), tk_free(b->ctx, pk), tk_free(b->ctx, pv), tk_free(b->ctx, po);
  tk_module_destroy(m);
}

int main(int argc, char **argv) {
  int threads = -1;
  bench b = {.samples = "samples", .benchdir = "bench", .rng = 0x9e3779b97f4a7c15ull};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--samples") && i + 1 < argc) b.samples = argv[++i];
    else if (!strcmp(argv[i], "--bench") && i + 1 < argc) b.benchdir = argv[++i];
    else if (!strcmp(argv[i], "--quick")) b.quick = 1;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) b.only = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: interp-bench [--samples DIR] [--bench DIR] [--quick] "
                      "[--only NAME] [--threads N]\n");
      return 2;
    }
  }
  tk_context_options o = {.backend = TK_BACKEND_INTERP};
  check(&b, tk_context_create(&b.ctx, &o), "tk_context_create");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  printf("interp-bench: the interpreter on the CPU, %ld cores\n", cores);
  int counts[] = {1, 0}, ncounts = cores > 1 ? 2 : 1;
  if (threads >= 0) counts[0] = threads, ncounts = 1;
  for (int c = 0; c < ncounts; c++) {
    int th = counts[c];
    if (wanted(&b, "dot")) {
      bench_dot(&b, "f16", "f32", th);
      bench_dot(&b, "bf16", "f32", th);
      bench_dot(&b, "f32", "f32", th);
      bench_dot(&b, "i8", "i32", th);
    }
    if (wanted(&b, "elementwise")) {
      bench_elementwise(&b, "f32", 4, th);
      bench_elementwise(&b, "f16", 2, th);
    }
    if (wanted(&b, "vadd")) bench_vadd(&b, th);
    if (wanted(&b, "matmul")) bench_matmul(&b, th);
    if (wanted(&b, "attention")) bench_attention(&b, th);
  }
  tk_context_destroy(b.ctx);
  if (b.failed) fprintf(stderr, "interp-bench: a result is wrong (max err above)\n");
  return b.failed;
}
