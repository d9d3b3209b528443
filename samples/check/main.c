/*
 * tk-samples — runs every sample kernel of the .tk files in samples/ through libtk and
 * checks it against a plain C reference (samples/check/cases.c), on the GPU when there is
 * one and on the interpreter otherwise.
 *
 *   tk-samples [--interp|--gpu] [--only TEXT] [SAMPLES_DIR]
 *
 * --only runs the cases whose name contains TEXT (the GPU host's time is short; the
 * matmul references alone take a minute there).
 * One line a case: its sizes, then "ok" with the largest error, "FAILED: why", or
 * "skipped: why" when the backend cannot compile the kernel yet. The last line counts
 * them; the exit status is 1 if any failed, 2 on a usage or setup error.
 * TK_TEST_SEED in the environment changes the inputs.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/check/cases.h"

typedef enum { PASSED, FAILED, SKIPPED } outcome;

/* libtk does not name the device; the ordinal is what the context was asked for. */
static const char *backend_name(tk_backend b) {
  return b == TK_BACKEND_CUDA ? "CUDA device 0" : "the interpreter";
}

/* A backend that cannot compile a construct yet says so in the message; that is a gap
 * the backend already knows about, not a wrong result. */
static bool not_supported_yet(tk_status s, const char *msg) {
  return (s == TK_ERR_COMPILE || s == TK_ERR_UNSUPPORTED) && strstr(msg, "not supported yet");
}

/* Prints the first line of msg, for messages that carry whole diagnostics. */
static void print_first_line(const char *msg) {
  printf("%.*s\n", (int)strcspn(msg, "\n"), msg);
}

/* Compiles, runs and checks case c at each of its sizes for the context's backend, and
 * prints its line. */
static outcome check_case(tk_context *ctx, const char *dir, const ck_case *c, uint64_t seed) {
  bool gpu = tk_context_backend(ctx) == TK_BACKEND_CUDA;
  const ck_size *sizes = gpu ? c->gpu_sizes : c->interp_sizes;
  char list[256] = "";
  for (int i = 0; i < CK_MAX_SIZES && sizes[i].d[0]; i++) {
    char one[64];
    ck_size_format(c, sizes[i], one, sizeof one);
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", one);
  }
  printf("  %-18s %-34s ", c->name, list);
  fflush(stdout);

  tk_module *m;
  tk_kernel *k, *k2;
  tk_status s = ck_compile(ctx, dir, c, &m, &k, &k2);
  if (s != TK_OK) {
    const char *msg = tk_last_error(ctx);
    bool skip = not_supported_yet(s, msg);
    if (skip) printf("skipped: ");
    else printf("FAILED: %s: ", tk_status_name(s));
    print_first_line(msg);
    return skip ? SKIPPED : FAILED;
  }
  double max_err = 0;
  for (int i = 0; i < CK_MAX_SIZES && sizes[i].d[0]; i++) {
    ck_result r = ck_run(ctx, k, k2, c, seed, sizes[i]);
    if (r.status != CK_OK) {
      char one[64];
      ck_size_format(c, sizes[i], one, sizeof one);
      printf("FAILED: at %s: ", one);
      print_first_line(r.msg);
      tk_module_destroy(m);
      return FAILED;
    }
    if (r.max_err > max_err) max_err = r.max_err;
  }
  printf("ok   (max abs err %.1g)\n", max_err);
  tk_module_destroy(m);
  return PASSED;
}

/* Reports the .tk files of dir that no case checks, so that a new sample is seen to be
 * unchecked rather than silently left out; returns how many. */
static int unchecked_files(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 3, ".tk") != 0) continue;
    bool covered = false;
    for (int i = 0; i < ck_ncases && !covered; i++)
      covered = strcmp(ck_cases[i].file, e->d_name) == 0;
    if (covered) continue;
    printf("  %-18s %-34s skipped: no C reference in samples/check\n", e->d_name, "");
    n++;
  }
  closedir(d);
  return n;
}

/* Prints the usage line to f and returns status, the exit status to go with it. */
static int usage(FILE *f, const char *argv0, int status) {
  fprintf(f, "usage: %s [--interp|--gpu] [--only TEXT] [SAMPLES_DIR]   (default: auto, every case, ./samples)\n",
          argv0);
  return status;
}

int main(int argc, char **argv) {
  tk_context_options opts = {TK_BACKEND_AUTO, 0};
  const char *dir = "samples", *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--interp") == 0) opts.backend = TK_BACKEND_INTERP;
    else if (strcmp(argv[i], "--gpu") == 0) opts.backend = TK_BACKEND_CUDA;
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
      return usage(stdout, argv[0], 0);
    else if (argv[i][0] == '-' || i != argc - 1) return usage(stderr, argv[0], 2);
    else dir = argv[i];
  }
  const char *seed_env = getenv("TK_TEST_SEED");
  uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 0x9e3779b97f4a7c15ull;

  tk_context *ctx;
  tk_status s = tk_context_create(&ctx, &opts);
  if (s != TK_OK) {
    fprintf(stderr, "tk-samples: cannot start the backend: %s: %s\n", tk_status_name(s),
            tk_last_error(NULL));
    return 2;
  }
  const char *where = backend_name(tk_context_backend(ctx));
  printf("running %d sample kernels from %s on %s (seed %#llx)\n", ck_ncases, dir, where,
         (unsigned long long)seed);
  printf("  sizes: n, rows x n[/row stride], M x N, M x N x K\n");
  int count[3] = {0}, ran = 0;
  for (int i = 0; i < ck_ncases; i++)
    if (!only || strstr(ck_cases[i].name, only)) {
      count[check_case(ctx, dir, &ck_cases[i], seed)]++;
      ran++;
    }
  int extra = only ? 0 : unchecked_files(dir);
  count[SKIPPED] += extra;
  tk_context_destroy(ctx);
  printf("%d samples: %d passed, %d failed, %d skipped (on %s)\n", ran + extra,
         count[PASSED], count[FAILED], count[SKIPPED], where);
  return count[FAILED] ? 1 : 0;
}
