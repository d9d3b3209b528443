/* The pass table and the pipeline: which passes exist, in what order they run, and the
 * instrumentation around each run (verification, printing, timing).
 *
 * To add a pass: write pass_NAME in its own file, declare it in passes.h, add NAME to
 * PASS_LIST below and where it belongs in `pipeline`. */
#include "pass_util.h"

#include <string.h>
#include <time.h>

typedef bool (*pass_fn)(ir_module *m, ir_func *f);

typedef struct {
  const char *name;
  pass_fn run; /* NULL for the canonicalize group */
} pass_entry;

/* Every pass, by name; its entry point is pass_NAME. One list, so the table and the
 * names printed by --list-passes cannot drift apart. */
#define PASS_LIST(X)                                                                        \
  X(constfold) X(simplify) X(cse) X(dce) X(kloop) X(licm) X(fuse) X(materialize) X(fp8dot) X(rowsum) X(tiling) X(persist) X(streamk) X(swpipe) \
  X(lower_dot) X(rotate) X(skipscale) X(expfold) X(complement) X(unmask) X(tmastore) X(warpspec) X(sink) X(wgstore) X(contract) X(histogram) X(clusterkeep) X(smemkeep)

/* The passes, then the canonicalize group as the last row. */
static const pass_entry passes[] = {
#define ROW(n) {#n, pass_##n},
    PASS_LIST(ROW)
#undef ROW
    {"canonicalize", NULL},
};
enum { NPASSES = sizeof passes / sizeof passes[0], CANONICALIZE = NPASSES - 1 };

/* The canonicalize group, run until nothing changes. The bound only guards against two
 * rules undoing each other; real kernels settle in two or three rounds. */
static const char *const canonical[] = {"constfold", "simplify", "cse", "dce"};
enum { NCANONICAL = sizeof canonical / sizeof canonical[0], CANON_MAX_ROUNDS = 8 };

/* The default pipeline at -O1 and above. kloop turns a dot over a logical K into the
 * user's K loop before licm, which hoists out of it what the step does not change, as
 * out of a written loop (the two then lower alike). licm exposes new constants and duplicates at
 * the loop's level, hence the second canonicalize. Fuse sees the canonical ops (one
 * splat per scalar, no dead loads) and builds its chunk loops already hoisted. That much
 * is the target-independent part, what the interpreter runs. For a GPU target (m->arch)
 * the target part follows: fp8dot gives wgmma the fp8 tiles of a dot that sema cast to
 * f16 (before tiling, whose layouts follow the dtypes); rowsum puts a loop's row sum of a
 * product's A operand on the tensor cores (a dot, before tiling lays it out); tiling lays out fuse's chunks (what it inserts, layout
 * conversions, must not be folded away); expfold folds exp's change of base into an fma;
 * complement computes 1 ± erf(z) as erfc(∓z);
 * unmask runs a loop's edge masks only on the iterations where some element may be off;
 * persist wraps a dot kernel in its tile loop
 * before swpipe threads its ring counter through it; lower_dot reads the slots swpipe
 * made; rotate overlaps the second product of a loop with the next iteration's first;
 * tmastore turns the epilogue's store into a TMA copy; histogram (right after tiling, whose
 * layouts its shared-memory ops take, and alone at -O0) builds each program's counts with
 * shared-memory atomics; clusterkeep splits the chunk loops fuse marked for the cluster
 * keep over the CTAs of a cluster, before smemkeep (after tiling too, whose layouts its buffers take) turns
 * the loads fuse marked for the shared-memory keep into a staging store and reads back; warpspec splits the single stream that results; a last canonicalize folds the
 * constants the lowering repeated and sweeps what it left dead (the loads' address
 * computations); sink then moves what the epilogue computes before the loop past it;
 * wgstore, last, lets each consumer warpgroup store its own rows of the epilogue. */
static const char *const pipeline[] = {"canonicalize", "kloop", "licm", "canonicalize", "fuse"};
static const char *const target_pipeline[] = {"fp8dot", "rowsum", "tiling",   "histogram", "clusterkeep", "smemkeep", "expfold", "complement", "unmask", "persist", "streamk", "swpipe", "lower_dot",
                                              "rotate",   "skipscale", "tmastore", "warpspec", "canonicalize", "sink", "wgstore"};
enum {
  NPIPELINE = sizeof pipeline / sizeof pipeline[0],
  NTARGET = sizeof target_pipeline / sizeof target_pipeline[0]
};

const char *const *pass_names(void) {
  static const char *const names[] = {
#define NAME(n) #n,
      PASS_LIST(NAME)
#undef NAME
      "canonicalize", NULL};
  return names;
}

static int pass_index(const char *name, size_t n) {
  for (int i = 0; i < NPASSES; i++)
    if (strlen(passes[i].name) == n && memcmp(passes[i].name, name, n) == 0) return i;
  return -1;
}

typedef struct {
  ir_module *m;
  const pass_options *o;
  su_diags *d;
  FILE *log;
  bool print[NPASSES]; /* print after this pass (from print_after) */
  double secs[NPASSES];
  int runs[NPASSES];
  bool ok;
} runner;

static su_loc no_loc(void) {
  su_loc l = {0};
  return l;
}

/* Splits a comma-separated list of pass names into indices (out may be NULL to only
 * check); reports each unknown name. Returns the count, or -1 after an error. Empty
 * items ("a,,b", a trailing comma) are skipped. */
static int parse_list(const char *list, const char *option, int *out, su_diags *d) {
  int n = 0;
  bool ok = true;
  for (const char *s = list; *s;) {
    size_t len = strcspn(s, ",");
    if (len > 0) {
      int i = pass_index(s, len);
      if (i < 0) {
        su_error(d, no_loc(), "unknown pass '%.*s' in %s", (int)len, s, option);
        ok = false;
      } else if (out) {
        out[n] = i;
      }
      n++;
    }
    s += len;
    if (*s == ',') s++;
  }
  return ok ? n : -1;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void print_module(runner *r, const char *name) {
  su_buf b = {0};
  ir_print(&b, r->m);
  fprintf(r->log, "// -----// IR after %s //----- //\n%s", name, su_buf_str(&b));
  su_buf_free(&b);
}

/* Verification after a pass is the one place a pass's bug turns into a diagnostic: the
 * verifier says what is wrong, the note says who did it. */
static void verify_after(runner *r, const char *name) {
  if (!r->o->verify_each || ir_verify(r->m, r->d)) return;
  su_error(r->d, no_loc(), "the IR is invalid after pass '%s' (a compiler bug)", name);
  r->ok = false;
}

/* Runs pass i over every kernel; returns whether it changed anything. */
static bool run_one(runner *r, int i) {
  bool changed = false;
  double t0 = now();
  for (int k = 0; k < r->m->nfuncs; k++) changed |= passes[i].run(r->m, r->m->funcs[k]);
  r->secs[i] += now() - t0;
  r->runs[i]++;
  if (r->o->print_after_all || r->print[i]) print_module(r, passes[i].name);
  verify_after(r, passes[i].name);
  return changed;
}

static void run_canonicalize(runner *r) {
  for (int round = 0; round < CANON_MAX_ROUNDS && r->ok; round++) {
    bool changed = false;
    for (int j = 0; j < NCANONICAL && r->ok; j++)
      changed |= run_one(r, pass_index(canonical[j], strlen(canonical[j])));
    if (!changed) break;
  }
  if (r->ok && r->print[CANONICALIZE]) print_module(r, "canonicalize");
}

static void run_entry(runner *r, int i) {
  if (i == CANONICALIZE)
    run_canonicalize(r);
  else
    run_one(r, i);
}

static void print_times(runner *r) {
  double total = 0;
  for (int i = 0; i < NPASSES; i++) total += r->secs[i];
  fprintf(r->log, "// ----- pass times (wall clock, all kernels) -----\n");
  fprintf(r->log, "//   %-14s %6s %10s %7s\n", "pass", "runs", "ms", "share");
  for (int i = 0; i < NPASSES; i++) {
    if (!r->runs[i]) continue;
    double share = total > 0 ? 100.0 * r->secs[i] / total : 0;
    fprintf(r->log, "//   %-14s %6d %10.3f %6.1f%%\n", passes[i].name, r->runs[i],
            r->secs[i] * 1e3, share);
  }
  fprintf(r->log, "//   %-14s %6s %10.3f\n", "total", "", total * 1e3);
}

/* Reads a comma-separated option into pass indices (arena array); -1 after an error. */
static int read_list(su_arena *a, const char *list, const char *option, int **out, su_diags *d) {
  int n = parse_list(list, option, NULL, d);
  if (n < 0) return -1;
  *out = SU_NEW_ARRAY(a, int, n + 1);
  parse_list(list, option, *out, d);
  return n;
}

bool pass_run(ir_module *m, const pass_options *o, su_diags *d) {
  runner r = {.m = m, .o = o, .d = d, .log = o->log ? o->log : stderr, .ok = true};
  su_arena *scratch = su_arena_new();
  int *order = SU_NEW_ARRAY(scratch, int, NPIPELINE + NTARGET + 1);
  int norder = 0;
  /* contract (-ffp-contract=fast) runs after the canonical forms are reached (a product
   * CSE shares is left alone) and before fuse (or materialize) copies the ops into its loops */
  if (!o->target_only)
    for (int i = 0; i < NPIPELINE; i++) {
      /* -fno-fuse: the unfused baseline in fusion's place */
      const char *name = o->no_fuse && !strcmp(pipeline[i], "fuse") ? "materialize" : pipeline[i];
      if (o->fp_contract && !strcmp(pipeline[i], "fuse")) order[norder++] = pass_index("contract", 8);
      order[norder++] = pass_index(name, strlen(name));
    }
  if (m->arch)
    for (int i = 0; i < NTARGET; i++)
      order[norder++] = pass_index(target_pipeline[i], strlen(target_pipeline[i]));

  int *printed = NULL;
  int nprinted = o->print_after ? read_list(scratch, o->print_after, "--print-after", &printed, d) : 0;
  for (int i = 0; i < nprinted; i++) r.print[printed[i]] = true;
  if (o->only) norder = read_list(scratch, o->only, "--passes", &order, d);
  /* Both lists are checked before anything runs, so a typo costs no work. */
  if (nprinted < 0 || norder < 0) r.ok = false;
  else if (!o->only && o->opt_level <= 0) {
    /* -O0 optimizes nothing, but a GPU target still needs the lowerings its back end reads
     * instead of the user's op (codegen has no histogram of its own) */
    norder = 0;
    if (m->arch) order[norder++] = pass_index("histogram", 9);
  }

  m->remarks = o->remarks;
  m->remark_passes = o->remark_passes;
  m->remark_done_passes = o->remark_done_passes;
  m->fuse_keep = o->fuse_keep;
  for (int i = 0; i < norder && r.ok; i++) run_entry(&r, order[i]);
  m->remarks = NULL;
  m->fuse_keep = IR_KEEP_AUTO;
  if (r.ok && o->time_passes) print_times(&r);
  su_arena_free(scratch);
  return r.ok;
}
