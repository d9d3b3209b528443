/* tkdiff: generates random valid kernels and runs each on every execution it can (see
 * tkdiff.h), reporting each failure with the seed that replays it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tkdiff.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: tkdiff [options]\n"
          "  --count N        kernels to generate (default 100)\n"
          "  --seed S         the first kernel's seed; kernel i has seed S + i (default: from the clock)\n"
          "  --time-limit T   stop after T seconds (the summary counts what ran)\n"
          "  --no-gpu         do not run on the CUDA backend even when there is a device\n"
          "  --require-gpu    fail when there is no CUDA device\n"
          "  --no-o0          do not compare the unoptimized IR on the interpreter\n"
          "  --no-roundtrip   do not compare the optimized IR printed and parsed back\n"
          "  --self-check     perturb one output element of every kernel's -O0 run: every\n"
          "                   kernel must then fail (checks that the comparison can fail)\n"
          "  --no-ptx         do not compile to PTX for sm_90a\n"
          "  --ptxas PATH     the ptxas to assemble with (default: $TK_PTXAS, ptxas on PATH,\n"
          "                   $CUDA_HOME/bin/ptxas, /usr/local/cuda/bin/ptxas; none: skip)\n"
          "  --no-ptxas       compile to PTX but do not assemble it\n"
          "  --batch N        kernels per ptxas run (default 32, at most 256)\n"
          "  --ptx-every N    compile only every Nth kernel to PTX (default 1: all)\n"
          "  --max-elems N    elements of a kernel's main tile (default 1024)\n"
          "  --no-dot         generate no dot\n"
          "  --write FILE     write the source of the first failing kernel (with --count 1: of\n"
          "                   that kernel) to FILE\n"
          "  --print          print each kernel's source\n"
          "  --max-failures N stop after N failures (default 20)\n"
          "  -v, --verbose    one line per kernel\n"
          "Exit status: 0 when every kernel passed, 1 otherwise, 2 on bad usage.\n");
}

static bool executable(const char *p) { return p && *p && access(p, X_OK) == 0; }

/* ptxas, looked up as usage() says; NULL when there is none. */
static const char *find_ptxas(char *buf, size_t n) {
  const char *e = getenv("TK_PTXAS");
  if (executable(e)) return e;
  const char *path = getenv("PATH");
  while (path && *path) {
    const char *c = strchr(path, ':');
    size_t len = c ? (size_t)(c - path) : strlen(path);
    snprintf(buf, n, "%.*s/ptxas", (int)len, path);
    if (len && executable(buf)) return buf;
    path = c ? c + 1 : NULL;
  }
  const char *cuda = getenv("CUDA_HOME");
  if (cuda) {
    snprintf(buf, n, "%s/bin/ptxas", cuda);
    if (executable(buf)) return buf;
  }
  if (executable("/usr/local/cuda/bin/ptxas")) return "/usr/local/cuda/bin/ptxas";
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static long long num(const char *opt, const char *v) {
  char *end;
  errno = 0;
  long long x = v ? strtoll(v, &end, 0) : 0;
  if (!v || errno || *end || x < 0) {
    fprintf(stderr, "tkdiff: %s needs a non-negative number\n", opt);
    usage(stderr);
    exit(2);
  }
  return x;
}

static const char *write_path;
static bool written;

static void write_kernel(const td_kernel *k) {
  if (!write_path || written) return;
  FILE *f = fopen(write_path, "w");
  if (!f || fputs(k->src.data, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "tkdiff: cannot write %s: %s\n", write_path, strerror(errno));
    return;
  }
  written = true;
  fprintf(stderr, "tkdiff: wrote the kernel of seed %llu to %s\n", (unsigned long long)k->seed, write_path);
}

int main(int argc, char **argv) {
  long long count = 100, max_fail = 20, ptx_every = 1;
  unsigned long long seed = (unsigned long long)time(NULL) * 1000003ull ^ (unsigned long long)getpid();
  double limit = 0;
  bool print = false, verbose = false, require_gpu = false, no_ptxas = false;
  const char *ptxas = NULL;
  td_run_options ro = {.gpu = true, .o0 = true, .roundtrip = true, .ptx = true, .ptx_batch = 32};
  td_gen_options go = {.max_depth = 4, .max_elems = 1024};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--count")) count = num(a, v), i++;
    else if (!strcmp(a, "--seed")) seed = (unsigned long long)num(a, v), i++;
    else if (!strcmp(a, "--time-limit")) limit = (double)num(a, v), i++;
    else if (!strcmp(a, "--no-gpu")) ro.gpu = false;
    else if (!strcmp(a, "--require-gpu")) require_gpu = true;
    else if (!strcmp(a, "--no-o0")) ro.o0 = false;
    else if (!strcmp(a, "--no-roundtrip")) ro.roundtrip = false;
    else if (!strcmp(a, "--self-check")) ro.inject = true;
    else if (!strcmp(a, "--no-ptx")) ro.ptx = false;
    else if (!strcmp(a, "--ptxas")) ptxas = v, i++;
    else if (!strcmp(a, "--no-ptxas")) no_ptxas = true;
    else if (!strcmp(a, "--batch")) ro.ptx_batch = (int)num(a, v), i++;
    else if (!strcmp(a, "--ptx-every")) ptx_every = num(a, v), i++;
    else if (!strcmp(a, "--max-elems")) go.max_elems = (int)num(a, v), i++;
    else if (!strcmp(a, "--no-dot")) go.no_dot = true;
    else if (!strcmp(a, "--write")) write_path = v, i++;
    else if (!strcmp(a, "--print")) print = true;
    else if (!strcmp(a, "--max-failures")) max_fail = num(a, v), i++;
    else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) verbose = true;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
    else {
      fprintf(stderr, "tkdiff: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (ro.ptx_batch > 256) ro.ptx_batch = 256;
  if (ro.inject && !ro.o0) {
    fprintf(stderr, "tkdiff: --self-check perturbs the -O0 run: it cannot go with --no-o0\n");
    return 2;
  }
  char pbuf[4096];
  if (ro.ptx && !no_ptxas) {
    if (!ptxas) ptxas = find_ptxas(pbuf, sizeof pbuf);
    else if (!executable(ptxas)) {
      fprintf(stderr, "tkdiff: ptxas '%s' is not executable\n", ptxas);
      return 2;
    }
  } else {
    ptxas = NULL;
  }
  ro.ptxas = ptxas;
  ro.verbose = verbose;
  td_runner *r = td_runner_new(&ro);
  if (!r) return 1;
  if (require_gpu && !td_runner_has_gpu(r)) {
    fprintf(stderr, "tkdiff: --require-gpu, and there is no CUDA device\n");
    td_runner_free(r);
    return 1;
  }
  printf("tkdiff: seed %llu, %lld kernels; executions: interpreter%s%s%s%s%s\n", seed, count,
         ro.o0 ? ", interpreter -O0" : "", ro.roundtrip ? ", IR text round trip" : "", td_runner_has_gpu(r) ? ", CUDA" : "",
         ro.ptx ? ", PTX sm_90a" : "", ptxas ? " + ptxas" : "");
  fflush(stdout);

  enum { MAX_SEEDS = 64 };
  uint64_t failed_seeds[MAX_SEEDS];
  int nseeds = 0;
  long long n = 0, mismatches = 0, rejected = 0, runtime = 0, ptxfail = 0;
  double t0 = now();
  su_buf flushlog = {0};
  for (long long i = 0; i < count; i++) {
    if (limit > 0 && now() - t0 > limit) break;
    if (mismatches + rejected + runtime + ptxfail >= max_fail) break;
    td_kernel k = {0};
    uint64_t s = seed + (uint64_t)i;
    td_generate(&k, s, &go);
    if (print) printf("// seed %llu\n%s\n", (unsigned long long)s, k.src.data);
    if (count == 1) write_kernel(&k);
    su_buf detail = {0};
    td_result res = td_run(r, &k, ptx_every > 0 && i % ptx_every == 0, &detail);
    n++;
    if (ro.inject) { /* the self-check: every kernel must be caught */
      if (res != TD_MISMATCH) {
        printf("FAIL seed %llu: the injected fault was %s\n%s", (unsigned long long)s,
               res == TD_PASS ? "not detected" : "not reached", su_buf_str(&detail));
        runtime++;
      } else if (verbose) {
        printf("ok   seed %llu: the injected fault was caught\n", (unsigned long long)s);
      }
    } else if (res != TD_PASS) {
      const char *what = res == TD_MISMATCH ? "mismatch" : res == TD_REJECTED ? "rejected" : "runtime error";
      if (res == TD_MISMATCH) mismatches++;
      else if (res == TD_REJECTED) rejected++;
      else runtime++;
      printf("FAIL seed %llu (%s; uses %s):\n%s", (unsigned long long)s, what, k.features.data ? k.features.data : "-",
             su_buf_str(&detail));
      printf("  replay: tkdiff --seed %llu --count 1 --print   (--write k.tk for the source)\n",
             (unsigned long long)s);
      if (nseeds < MAX_SEEDS) failed_seeds[nseeds++] = s;
      write_kernel(&k);
    } else if (verbose) {
      printf("ok   seed %llu (%s)\n", (unsigned long long)s, k.features.data ? k.features.data : "-");
    }
    fflush(stdout);
    su_buf_free(&detail);
    td_kernel_free(&k);
    if (ro.ptx && td_runner_pending(r) >= (ro.ptx_batch > 0 ? ro.ptx_batch : 32)) {
      uint64_t fs[MAX_SEEDS];
      int nf = td_runner_flush(r, &flushlog, fs, MAX_SEEDS);
      if (nf) {
        printf("FAIL (PTX or ptxas):\n%s", su_buf_str(&flushlog));
        for (int j = 0; j < nf && j < MAX_SEEDS; j++) {
          printf("  replay: tkdiff --seed %llu --count 1 --print\n", (unsigned long long)fs[j]);
          if (nseeds < MAX_SEEDS) failed_seeds[nseeds++] = fs[j];
        }
        ptxfail += nf;
        su_buf_free(&flushlog);
      }
    }
  }
  if (ro.ptx) {
    uint64_t fs[MAX_SEEDS];
    int nf = td_runner_flush(r, &flushlog, fs, MAX_SEEDS);
    if (nf) {
      printf("FAIL (PTX or ptxas):\n%s", su_buf_str(&flushlog));
      for (int j = 0; j < nf && j < MAX_SEEDS; j++) {
        printf("  replay: tkdiff --seed %llu --count 1 --print\n", (unsigned long long)fs[j]);
        if (nseeds < MAX_SEEDS) failed_seeds[nseeds++] = fs[j];
      }
      ptxfail += nf;
    }
  }
  su_buf_free(&flushlog);
  long long bad = mismatches + rejected + runtime + ptxfail;
  printf("tkdiff: %lld kernels, %lld mismatches, %lld rejected, %lld runtime errors, %lld PTX/ptxas failures "
         "in %.1f s (seed %llu%s%s)",
         n, mismatches, rejected, runtime, ptxfail, now() - t0, seed,
         td_runner_has_gpu(r) ? ", GPU compared" : ", no GPU", ptxas ? ", ptxas" : "");
  if (nseeds) {
    printf("; failing seeds:");
    for (int j = 0; j < nseeds; j++) printf(" %llu", (unsigned long long)failed_seeds[j]);
  }
  printf("\n");
  td_runner_free(r);
  return bad ? 1 : 0;
}
