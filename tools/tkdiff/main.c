/* tkdiff: generates random valid kernels and runs each on every execution it can (see
 * tkdiff.h), reporting each failure with the seed that replays it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
          "  --no-persist     do not compare the optimized IR after the persist pass (run on\n"
          "                   the interpreter as a persistent launch of 3 programs)\n"
          "  --no-scalar      do not compare the interpreter's scalar rules (no typed loops)\n"
          "  --self-check     perturb one output element of every kernel's -O0 run: every\n"
          "                   kernel must then fail (checks that the comparison can fail)\n"
          "  --no-ptx         do not compile to PTX for sm_90a\n"
          "  --ptxas PATH     the ptxas to assemble with (default: $TK_PTXAS, ptxas on PATH,\n"
          "                   $CUDA_HOME/bin/ptxas, /usr/local/cuda/bin/ptxas; none: skip)\n"
          "  --no-ptxas       compile to PTX but do not assemble it\n"
          "  --batch N        kernels per ptxas run (default 32, at most 256)\n"
          "  --ptx-every N    compile only every Nth kernel to PTX (default 1: all)\n"
          "  --max-elems N    elements of a kernel's main tile (default 1024)\n"
          "  --depth N        expression depth (default 4)\n"
          "  --no-dot         generate no dot\n"
          "  --source FILE    with --count 1: run FILE instead of the generated source, with the\n"
          "                   seed's buffers, arguments, grid and tolerances (edit the body of\n"
          "                   a --write'd kernel, keeping its signature, to minimize a failure)\n"
          "  --write FILE     write the source of the first failing kernel (with --count 1: of\n"
          "                   that kernel) to FILE\n"
          "  --reduce         with --count 1, for a failing kernel: delete statements and\n"
          "                   replace expressions by simpler ones while the same output\n"
          "                   still differs in the same comparison, then print the smallest\n"
          "                   source (and --write it); with --self-check it reduces against\n"
          "                   the injected fault (a test of the reducer without a GPU)\n"
          "  --reduce-runs N  at most N executions while reducing (default 3000)\n"
          "  --reduce-keep S  while reducing, take only sources that still contain the text S\n"
          "                   (with --self-check: a fake bug in S's construct, for testing)\n"
          "  --print          print each kernel's source\n"
          "  --max-failures N stop after N failures (default 20; per process with --jobs)\n"
          "  -j, --jobs N     run N processes, kernel i in process i mod N (default 1)\n"
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
static const char *source_path;
static bool written;
static bool reduce;
static long long reduce_runs = 3000;
static const char *reduce_keep;

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

enum { MAX_SEEDS = 64 };

/* What a run (or one shard of it) found. */
typedef struct {
  long long n, mismatches, rejected, runtime, ptxfail, known;
  uint64_t seeds[MAX_SEEDS];
  int nseeds;
  double elapsed;
  bool gpu, broken;
} tally;

/* One shard's work: kernels i < count with i % nshards == shard, seed + i each. */
typedef struct {
  unsigned long long seed;
  long long count, max_fail, ptx_every;
  double limit;
  int shard, nshards;
  bool print, verbose, require_gpu;
} job;

/* --source: k's text becomes the file's. */
static bool replace_source(td_kernel *k) {
  FILE *f = fopen(source_path, "r");
  if (!f) {
    fprintf(stderr, "tkdiff: cannot read %s: %s\n", source_path, strerror(errno));
    return false;
  }
  su_buf b = {0};
  char tmp[4096];
  size_t n;
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) su_buf_put(&b, tmp, n);
  fclose(f);
  su_buf_free(&k->src);
  k->src = b;
  su_buf_str(&k->src);
  return true;
}

static void note_seed(tally *t, uint64_t s) {
  if (t->nseeds < MAX_SEEDS) t->seeds[t->nseeds++] = s;
}

static void flush_ptx(td_runner *r, tally *t) {
  su_buf log = {0};
  uint64_t fs[MAX_SEEDS];
  int nknown = 0;
  int nf = td_runner_flush(r, &log, fs, MAX_SEEDS, &nknown);
  t->known += nknown;
  if (nknown && !nf) printf("%s", su_buf_str(&log));
  if (nf) {
    printf("FAIL (PTX or ptxas):\n%s", su_buf_str(&log));
    for (int j = 0; j < nf && j < MAX_SEEDS; j++) {
      printf("  replay: tkdiff --seed %llu --count 1 --print\n", (unsigned long long)fs[j]);
      note_seed(t, fs[j]);
    }
    t->ptxfail += nf;
    fflush(stdout);
  }
  su_buf_free(&log);
}

/* What --reduce holds fixed: the kernel (its buffers, arguments, grid, tolerances) and
 * the failure's key; each candidate source runs as --source would run it. */
typedef struct {
  td_runner *r;
  const td_kernel *k;
  const char *key;
  bool verbose;
} reduce_ctx;

static bool still_fails(void *ctx, const char *src) {
  reduce_ctx *rc = ctx;
  if (reduce_keep && !strstr(src, reduce_keep)) return false;
  td_kernel k = *rc->k;
  k.src = (su_buf){0};
  su_buf_puts(&k.src, src);
  su_buf detail = {0}, key = {0};
  td_result res = td_run(rc->r, &k, false, &detail);
  bool same = res == TD_MISMATCH && !strcmp(td_failure_key(su_buf_str(&detail), &key), rc->key);
  if (rc->verbose) printf("reduce: %s\n", same ? "kept" : "not taken");
  su_buf_free(&detail);
  su_buf_free(&key);
  su_buf_free(&k.src);
  return same;
}

/* --reduce of k, which failed with detail: prints the smallest source that fails alike. */
static void reduce_kernel(td_runner *r, td_kernel *k, const char *detail, bool verbose) {
  su_buf key = {0};
  td_failure_key(detail, &key);
  if (!key.len) {
    printf("reduce: the failure names no differing output; nothing to reduce\n");
    su_buf_free(&key);
    return;
  }
  reduce_ctx rc = {r, k, su_buf_str(&key), verbose};
  int runs = 0;
  char *small = td_reduce(k->src.data, still_fails, &rc, (int)reduce_runs, &runs);
  int before = 0, after = 0;
  for (const char *p = k->src.data; *p; p++) before += *p == '\n';
  for (const char *p = small; *p; p++) after += *p == '\n';
  printf("reduce: %s, kept by %d executions: %d lines of %d\n// seed %llu, reduced\n%s",
         su_buf_str(&key), runs, after, before, (unsigned long long)k->seed, small);
  printf("  replay: tkdiff --seed %llu --count 1 --source FILE   (this source in FILE)\n",
         (unsigned long long)k->seed);
  su_buf_free(&k->src);
  su_buf_puts(&k->src, small);
  written = false;
  write_kernel(k);
  free(small);
  su_buf_free(&key);
}

/* Runs the shard; false when its contexts could not be made. */
static bool run_shard(const job *j, const td_run_options *ro0, const td_gen_options *go, tally *t) {
  td_run_options ro = *ro0;
  td_runner *r = td_runner_new(&ro);
  if (!r) return false;
  if (j->require_gpu && !td_runner_has_gpu(r)) {
    fprintf(stderr, "tkdiff: --require-gpu, and there is no CUDA device\n");
    td_runner_free(r);
    return false;
  }
  t->gpu = td_runner_has_gpu(r);
  if (j->shard == 0)
    printf("tkdiff (generator %d): seed %llu, %lld kernels%s; executions: interpreter%s%s%s%s%s%s%s\n",
           TD_GEN_VERSION, j->seed, j->count,
           j->nshards > 1 ? " over several processes" : "", ro.o0 ? ", interpreter -O0" : "",
           ro.roundtrip ? ", IR text round trip" : "", ro.persist ? ", persist" : "", ro.scalar ? ", scalar rules" : "", t->gpu ? ", CUDA" : "", ro.ptx ? ", PTX sm_90a" : "",
           ro.ptxas ? " + ptxas" : "");
  fflush(stdout);
  double t0 = now();
  for (long long i = j->shard; i < j->count; i += j->nshards) {
    if (j->limit > 0 && now() - t0 > j->limit) break;
    if (t->mismatches + t->rejected + t->runtime + t->ptxfail >= j->max_fail) break;
    td_kernel k = {0};
    uint64_t s = j->seed + (uint64_t)i;
    td_generate(&k, s, go);
    if (source_path && !replace_source(&k)) {
      td_kernel_free(&k);
      return false;
    }
    if (j->print) printf("// seed %llu\n%s\n", (unsigned long long)s, k.src.data);
    if (j->count == 1) write_kernel(&k);
    su_buf detail = {0};
    td_result res = td_run(r, &k, j->ptx_every > 0 && i % j->ptx_every == 0, &detail);
    t->n++;
    if (reduce && res == TD_MISMATCH) {
      printf("FAIL seed %llu (mismatch; uses %s):\n%s", (unsigned long long)s,
             k.features.data ? k.features.data : "-", su_buf_str(&detail));
      fflush(stdout);
      reduce_kernel(r, &k, su_buf_str(&detail), j->verbose);
      if (!ro.inject) {
        t->mismatches++;
        note_seed(t, s);
      }
    } else if (ro.inject) { /* the self-check: every kernel must be caught */
      if (res != TD_MISMATCH) {
        printf("FAIL seed %llu: the injected fault was %s\n%s", (unsigned long long)s,
               res == TD_PASS ? "not detected" : "not reached", su_buf_str(&detail));
        t->runtime++;
        note_seed(t, s);
      } else if (j->verbose) {
        printf("ok   seed %llu: the injected fault was caught\n", (unsigned long long)s);
      }
    } else if (res != TD_PASS && td_known_match(su_buf_str(&detail))) {
      const td_known *kn = td_known_match(su_buf_str(&detail));
      printf("KNOWN %s: seed %llu\n", kn->id, (unsigned long long)s);
      t->known++;
    } else if (res != TD_PASS) {
      const char *what = res == TD_MISMATCH ? "mismatch" : res == TD_REJECTED ? "rejected" : "runtime error";
      if (res == TD_MISMATCH) t->mismatches++;
      else if (res == TD_REJECTED) t->rejected++;
      else t->runtime++;
      printf("FAIL seed %llu (%s; uses %s):\n%s", (unsigned long long)s, what,
             k.features.data ? k.features.data : "-", su_buf_str(&detail));
      printf("  replay: tkdiff --seed %llu --count 1 --print   (--write k.tk for the source)\n",
             (unsigned long long)s);
      note_seed(t, s);
      write_kernel(&k);
    } else if (j->verbose) {
      printf("ok   seed %llu (%s)\n", (unsigned long long)s, k.features.data ? k.features.data : "-");
    }
    fflush(stdout);
    su_buf_free(&detail);
    td_kernel_free(&k);
    if (ro.ptx && td_runner_pending(r) >= ro.ptx_batch) flush_ptx(r, t);
  }
  if (ro.ptx) flush_ptx(r, t);
  t->elapsed = now() - t0;
  td_runner_free(r);
  return true;
}

/* The summary line; the exit status. */
static int summary(const tally *t, unsigned long long seed, bool ptxas) {
  long long bad = t->mismatches + t->rejected + t->runtime + t->ptxfail;
  printf("tkdiff: %lld kernels, %lld mismatches, %lld rejected, %lld runtime errors, %lld PTX/ptxas failures, "
         "%lld known, in %.1f s (generator %d, seed %llu%s%s)",
         t->n, t->mismatches, t->rejected, t->runtime, t->ptxfail, t->known, t->elapsed, TD_GEN_VERSION, seed,
         t->gpu ? ", GPU compared" : ", no GPU", ptxas ? ", ptxas" : "");
  if (t->nseeds) {
    printf("; failing seeds:");
    for (int j = 0; j < t->nseeds; j++) printf(" %llu", (unsigned long long)t->seeds[j]);
  }
  printf("\n");
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  long long count = 100, max_fail = 20, ptx_every = 1, jobs = 1;
  unsigned long long seed = (unsigned long long)time(NULL) * 1000003ull ^ (unsigned long long)getpid();
  double limit = 0;
  bool print = false, verbose = false, require_gpu = false, no_ptxas = false;
  const char *ptxas = NULL;
  td_run_options ro = {.gpu = true, .o0 = true, .roundtrip = true, .persist = true, .scalar = true, .ptx = true,
                       .ptx_batch = 32};
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
    else if (!strcmp(a, "--no-persist")) ro.persist = false;
    else if (!strcmp(a, "--no-scalar")) ro.scalar = false;
    else if (!strcmp(a, "--self-check")) ro.inject = true;
    else if (!strcmp(a, "--no-ptx")) ro.ptx = false;
    else if (!strcmp(a, "--ptxas")) ptxas = v, i++;
    else if (!strcmp(a, "--no-ptxas")) no_ptxas = true;
    else if (!strcmp(a, "--batch")) ro.ptx_batch = (int)num(a, v), i++;
    else if (!strcmp(a, "--ptx-every")) ptx_every = num(a, v), i++;
    else if (!strcmp(a, "--jobs") || !strcmp(a, "-j")) jobs = num(a, v), i++;
    else if (!strcmp(a, "--max-elems")) go.max_elems = (int)num(a, v), i++;
    else if (!strcmp(a, "--no-dot")) go.no_dot = true;
    else if (!strcmp(a, "--depth")) go.max_depth = (int)num(a, v), i++;
    else if (!strcmp(a, "--write")) write_path = v, i++;
    else if (!strcmp(a, "--source")) source_path = v, i++;
    else if (!strcmp(a, "--print")) print = true;
    else if (!strcmp(a, "--reduce")) reduce = true;
    else if (!strcmp(a, "--reduce-runs")) reduce_runs = num(a, v), i++;
    else if (!strcmp(a, "--reduce-keep")) reduce_keep = v, i++;
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
  if (source_path && count != 1) {
    fprintf(stderr, "tkdiff: --source needs --count 1 (and the --seed whose signature it keeps)\n");
    return 2;
  }
  if (reduce && count != 1) {
    fprintf(stderr, "tkdiff: --reduce needs --count 1 (the failing seed)\n");
    return 2;
  }
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
  if (jobs < 1) jobs = 1;
  if (jobs > 256) jobs = 256;
  if (jobs == 1) {
    job j = {.seed = seed, .count = count, .limit = limit, .max_fail = max_fail, .ptx_every = ptx_every,
             .shard = 0, .nshards = 1, .print = print, .verbose = verbose, .require_gpu = require_gpu};
    tally t = {0};
    if (!run_shard(&j, &ro, &go, &t)) return 1;
    return summary(&t, seed, ptxas != NULL);
  }
  /* --jobs: a process per shard (kernel i goes to shard i mod jobs), each with its own
   * contexts; the parent adds up their tallies */
  fflush(stdout);
  int fds[256];
  pid_t pids[256];
  for (int sh = 0; sh < jobs; sh++) {
    int p[2];
    if (pipe(p) != 0) {
      perror("tkdiff: pipe");
      return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
      perror("tkdiff: fork");
      return 1;
    }
    if (pid == 0) {
      close(p[0]);
      /* a kernel's report leaves in one write (fflush after each), so the shards' reports
       * do not interleave line by line in a shared log */
      setvbuf(stdout, NULL, _IOFBF, 1 << 20);
      job j = {.seed = seed, .count = count, .limit = limit, .max_fail = max_fail, .ptx_every = ptx_every,
               .shard = sh, .nshards = jobs, .print = print, .verbose = verbose, .require_gpu = require_gpu};
      tally t = {0};
      bool ok = run_shard(&j, &ro, &go, &t);
      t.broken = !ok;
      ssize_t w = write(p[1], &t, sizeof t);
      _exit(w == (ssize_t)sizeof t ? 0 : 1);
    }
    close(p[1]);
    fds[sh] = p[0];
    pids[sh] = pid;
  }
  tally all = {0};
  for (int sh = 0; sh < jobs; sh++) {
    tally t;
    ssize_t got = read(fds[sh], &t, sizeof t);
    close(fds[sh]);
    int st = 0;
    waitpid(pids[sh], &st, 0);
    if (got != (ssize_t)sizeof t || !WIFEXITED(st)) {
      printf("tkdiff: shard %d died (%s)\n", sh, WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "no tally");
      all.runtime++;
      continue;
    }
    if (t.broken) all.broken = true;
    all.n += t.n, all.mismatches += t.mismatches, all.rejected += t.rejected;
    all.runtime += t.runtime, all.ptxfail += t.ptxfail, all.known += t.known;
    all.gpu = all.gpu || t.gpu;
    if (t.elapsed > all.elapsed) all.elapsed = t.elapsed;
    for (int k = 0; k < t.nseeds && all.nseeds < MAX_SEEDS; k++) all.seeds[all.nseeds++] = t.seeds[k];
  }
  if (all.broken) return 1;
  return summary(&all, seed, ptxas != NULL);
}
