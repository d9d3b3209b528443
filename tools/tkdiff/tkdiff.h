/*
 * tools/tkdiff/ — the differential tester (issue 13, item 8): a generator of random valid
 * .tk kernels and a driver that runs each one on several executions of the same program
 * and compares every output buffer.
 *
 * Executions: the interpreter through libtk's public API (the optimized IR, the reference),
 * the interpreter on the unoptimized IR (internal driver, opt level 0: must agree bit for
 * bit — the passes may not change a result) and on the optimized IR printed and parsed
 * back as .tkir (bit for bit: the text form loses nothing), on the optimized IR made
 * persistent by the persist pass where it applies, launched as the GPU launches it (bit for
 * bit: persist only hands the tiles to fewer programs) and on the interpreter's scalar
 * rules without its typed fast loops (bit for bit: the loops are an optimization), the CUDA backend through libtk when there is a
 * device (within the per-buffer tolerance the generator derived, see bounds.c), and PTX for
 * sm_90a through the GPU back end, assembled by ptxas when it is on PATH.
 *
 * Contract:
 *  - td_generate is a pure function of its seed: the same seed gives the same source, the
 *    same buffers, arguments, grid and tolerances, and td_fill the same data, so a seed
 *    replays any failure (tkdiff --seed S --count 1).
 *  - Every generated kernel is valid: the checker must accept it, it never reads or writes
 *    outside its buffers, never divides an integer by zero, never shifts by the width or
 *    more, and its programs do not race except through atomics whose final memory does not
 *    depend on the order (bitwise and integer atomics, float atomic_add within its bound).
 *    A rejection or a runtime error is a bug of the generator or of tk: report it.
 *  - Each output buffer carries an absolute tolerance per element, the bound of the error
 *    model of bounds.c on |GPU − interpreter|; 0 means the result must be equal (floats by
 *    value, NaN equal to NaN).
 * Prefix: td_.
 */
#ifndef TK_TOOLS_TKDIFF_H
#define TK_TOOLS_TKDIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "include/tk.h"
#include "support/support.h"

enum { TD_MAX_BUFS = 24, TD_MAX_PARAMS = 40 };
#define TD_PERSIST_SMS_TEXT "3" /* programs of a persistent launch on the interpreter */

/* The generator's version: a seed names the same kernel only under the same version.
 * Raise it with any change to gen.c that changes what a seed generates; the header line
 * of every run prints it, so a failure report says which generator its seeds are for. */
#define TD_GEN_VERSION 8

/* How a buffer is filled before the launch: uniform values in [lo, hi] rounded to the
 * dtype (floats with at most `bits` significant bits, so narrow types hold them exactly),
 * or for integers uniform in [lo, hi]. */
typedef struct {
  const char *name; /* the kernel's parameter name */
  tk_dtype dt;
  size_t n;         /* elements */
  double lo, hi;
  int bits;         /* float fill: significant bits (0: the type's own) */
  bool out;         /* written by the kernel: compared after the launch */
  double tol;       /* |GPU - interpreter| bound per element (0: equal) */
  const char *why;  /* what the tolerance comes from, for reports */
} td_buf;

typedef struct {
  bool is_ptr;
  int buf;          /* is_ptr: index into bufs */
  tk_arg arg;       /* a scalar's value */
  const char *name;
} td_param;

typedef struct {
  uint64_t seed;
  char name[40];     /* the kernel's name: k_<seed in hex> */
  su_buf src;        /* the .tk source of this one kernel */
  td_buf bufs[TD_MAX_BUFS];
  int nbufs;
  td_param params[TD_MAX_PARAMS];
  int nparams;
  tk_grid grid;
  su_buf features;   /* a short list of what the kernel uses, for the log */
} td_kernel;

/* Options of the generator. */
typedef struct {
  int max_depth;     /* expression depth (default 4) */
  int max_elems;     /* elements of the kernel's main tile (default 1024) */
  bool no_dot;       /* leave dot out (ASan builds: the interpreter's dot is slow there) */
} td_gen_options;

/* Generates the kernel of seed into k (which the caller zeroed; td_kernel_free releases
 * it). Never fails: a generator that cannot satisfy a rule picks a simpler form. */
void td_generate(td_kernel *k, uint64_t seed, const td_gen_options *o);
void td_kernel_free(td_kernel *k);

/* Writes buffer b's initial contents (k->bufs[b].n elements of its dtype) to host, a
 * function of k's seed and b only. */
void td_fill(const td_kernel *k, int b, void *host);

/* Compares buffer b of two executions: got against ref with the buffer's tolerance
 * (tol_override >= 0 replaces it: 0 for the bit-exact comparisons). Returns the number
 * of differing elements and writes the first few to why. */
size_t td_compare(const td_kernel *k, int b, const void *ref, const void *got,
                  double tol_override, su_buf *why);

/* ---- the error model (bounds.c): the documented precision rules as numbers ----------- */

/* Unit in the last place relative to a value of magnitude 1: 2^-10 (f16), 2^-7 (bf16),
 * 2^-23 (f32), 2^-52 (f64); 0 for integers. */
double td_ulp(tk_dtype d);
/* The largest finite magnitude the generator lets a value of dtype d reach while it
 * carries an error (so that no bound overflows): well inside the type's range. */
double td_mag_limit(tk_dtype d);

/* ---- the reducer (reduce.c) ------------------------------------------------------------ */

/* Whether the kernel source src still fails as the one being reduced does. */
typedef bool (*td_reduce_pred)(void *ctx, const char *src);

/* Greedily simplifies src while pred holds (src itself must satisfy it): deletes body
 * statements and blocks, replaces calls and parenthesized expressions by their operands,
 * drops calls' last arguments, until nothing more is taken or budget predicate runs are
 * spent (*runs: how many ran). Returns the smallest source found (malloc'd). */
char *td_reduce(const char *src, td_reduce_pred pred, void *ctx, int budget, int *runs);
/* The part of a failure's report that names what differs — which comparison and which
 * output buffer, without the counts ("GPU against the interpreter: elements of out2
 * (f32)") — in key; empty when detail reports no differing buffer. */
const char *td_failure_key(const char *detail, su_buf *key);

/* ---- the KNOWN list (known.c) ------------------------------------------------------------ */

typedef struct {
  const char *id;    /* a short name */
  const char *what;  /* the bug, where it is, the seed that found it */
  const char *match; /* text that recognizes it in a failure's report */
} td_known;

/* The known failure that report shows, or NULL. */
const td_known *td_known_match(const char *report);

/* ---- running (run.c) --------------------------------------------------------------------- */

typedef struct td_runner td_runner;

typedef struct {
  bool gpu;          /* also run on the CUDA backend (skipped without a device) */
  bool o0;           /* also run the unoptimized IR on the interpreter */
  bool roundtrip;    /* also run the -O3 IR printed and parsed back (.tkir) */
  bool persist;      /* also run the -O3 IR after the persist pass (sm_90a), as the GPU
                        launches a persistent kernel (TD_PERSIST_SMS_TEXT programs), where the
                        pass applies */
  bool scalar;       /* also run the -O3 IR on the interpreter's scalar rules alone
                        (ip_typed_loops off: its fast loops must not change a bit) */
  bool inject;       /* self-check: perturb one -O0 output element (every kernel must then
                        fail as a mismatch) */
  bool ptx;          /* compile for sm_90a through the GPU back end */
  const char *ptxas; /* assemble that PTX with this ptxas (NULL: do not) */
  int ptx_batch;     /* kernels per ptxas run (at most 256) */
  bool verbose;
} td_run_options;

/* The outcome of one kernel. */
typedef enum { TD_PASS, TD_MISMATCH, TD_REJECTED, TD_RUNTIME, TD_PTX, TD_PTXAS } td_result;

/* Creates the contexts. gpu is cleared in *o when there is no CUDA device (a note on
 * stderr says why). NULL with a message on stderr if the interpreter cannot be made. */
td_runner *td_runner_new(td_run_options *o);
void td_runner_free(td_runner *r);
/* Runs k on every execution the options ask for and compares; detail gets what failed.
 * With ptx (and o->ptx), k joins the pending PTX batch instead of being compiled now:
 * td_runner_flush compiles and assembles the batch and names the kernels that failed,
 * so td_run's result says nothing of PTX. */
td_result td_run(td_runner *r, const td_kernel *k, bool ptx, su_buf *detail);
/* The number of kernels waiting in the PTX batch. */
int td_runner_pending(const td_runner *r);
/* Compiles the pending batch as one module for sm_90a and assembles it; when that fails,
 * does so for each kernel alone and appends "seed S: message" for each failing one to
 * failed, its seed to seeds (at most max_seeds). Returns the number that failed; those
 * the KNOWN list recognizes are reported as "KNOWN id: seed S" in failed and counted in
 * *nknown instead. */
int td_runner_flush(td_runner *r, su_buf *failed, uint64_t *seeds, int max_seeds, int *nknown);
/* Whether the runner has a real CUDA device. */
bool td_runner_has_gpu(const td_runner *r);

#endif
