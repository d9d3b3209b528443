/*
 * passes/ — the optimization passes over the Tile IR, one file a pass, and the pipeline
 * that orders them (pipeline.c).
 *
 * Contract:
 *  - Every pass has one entry point `bool pass_NAME(ir_module *m, ir_func *f)` that
 *    rewrites one kernel in place and returns whether it changed anything. A pass takes
 *    valid IR and leaves valid IR; it never reports user errors (the input was checked).
 *  - Passes preserve the program's observable behaviour: stores, atomics, loads (they may
 *    fault), prints and asserts are never removed, reordered or duplicated (fuse
 *    alone re-runs and reorders loads, under the rules of fuse.c); an op that may
 *    fault at run time (integer division) is never evaluated where the program would not.
 *  - A pass that depends on the target reads it from the table: tg_*(m->arch) (target.h).
 *  - The canonical pipeline is: canonicalize (constfold, simplify, cse, dce, repeated to a
 *    fixed point with a bound), kloop, licm, canonicalize again, [contract,] fuse (materialize with
 *    no_fuse); then, when the module
 *    has a target (ir_module.arch), the target part: fp8dot, rowsum, tiling, histogram, clusterkeep, smemkeep, expfold, complement, unmask, persist, swpipe, lower_dot,
 *    rotate, skipscale, tmastore, warpspec, canonicalize, sink, wgstore. The interpreter runs the IR of the first part; `only` replaces both.
 * Prefix: pass_.
 */
#ifndef TK_PASSES_H
#define TK_PASSES_H

#include <stdbool.h>
#include <stdio.h>

#include "../ir/ir.h"

typedef struct {
  int opt_level;             /* 0: run nothing */
  bool verify_each;          /* ir_verify after every pass; on failure report which pass broke it */
  bool print_after_all;      /* print the module (ir_print) to log after every pass, headed "// -----// IR after NAME //----- //" */
  const char *print_after;   /* comma-separated pass names to print after, or NULL */
  const char *only;          /* comma-separated pass names to run (in that order) instead of the pipeline, or NULL */
  bool target_only;          /* run only the target part of the pipeline (m->arch must be set) */
  bool time_passes;          /* print a table of per-pass wall time to log at the end */
  bool fp_contract;          /* contract a * b + c into fma (contract, before fuse) */
  bool no_fuse;              /* -fno-fuse: materialize runs where fuse would */
  int fuse_keep;             /* -ffuse-keep=: an ir_keep for fuse (0: its cost model) */
  su_diags *remarks;         /* -Rpass-missed: where passes' remarks go (NULL: none) */
  const char *remark_passes; /* which passes report: names, comma-separated, or "all" */
  const char *remark_done_passes; /* -Rpass: which also say what they did (to remarks) */
  FILE *log;                 /* NULL means stderr */
} pass_options;

/* Runs the pipeline (or o->only) over every kernel of m. False if verification failed
 * after a pass or a name in only/print_after is unknown (reported to d). An explicit
 * `only` list runs even at opt_level 0: asking for a pass by name is a request to run it. */
bool pass_run(ir_module *m, const pass_options *o, su_diags *d);
/* The names of all passes, NULL-terminated (for --help). "canonicalize" names the
 * fixed-point group and is accepted wherever a pass name is. */
const char *const *pass_names(void);

/* ---- the passes (each: one kernel, returns whether it changed anything) --------------- */

/* Folds ops whose operands are all constants into constants (constfold.c). */
bool pass_constfold(ir_module *m, ir_func *f);
/* Algebraic identities: x+0, x*1, x-x, double negation, select on a constant, ... (simplify.c). */
bool pass_simplify(ir_module *m, ir_func *f);
/* Common subexpression elimination of pure ops, scoped by regions (cse.c). */
bool pass_cse(ir_module *m, ir_func *f);
/* Removes pure ops, loop-carried values and if results that nothing observable needs (dce.c). */
bool pass_dce(ir_module *m, ir_func *f);
/* a * b + c (and a * b - c, c - a * b) into fma where the f32 or f64 product has no
 * other use (contract.c; in the pipeline with pass_options.fp_contract only). */
bool pass_contract(ir_module *m, ir_func *f);
/* Hoists loop-invariant pure ops out of for bodies (licm.c). */
bool pass_licm(ir_module *m, ir_func *f);
/* A 2-D dot outside any loop whose K (the operands' inner axis) is longer than one step
 * (128 bytes of the element, at least 16) and whose operands are loads used by it alone:
 * the loop `for k in range(0, min(B, K), step)` carrying the accumulator, with the loads
 * rebuilt on the step's columns (B the bound of `kk < B` in both masks, when there is
 * one). What the user writes as one logical K tile becomes the K loop swpipe pipelines;
 * what it leaves with K > step gets a remark (kloop.c, docs/passes.md). */
bool pass_kloop(ir_module *m, ir_func *f);
/* Rewrites a kernel whose 1-D tiles are too long for registers into loops over
 * register-sized chunks, one loop per group of ops between reductions, recomputing
 * (reloading) in a later loop what an earlier one loaded; the only pass that re-executes
 * loads, and only where their memory cannot have changed. Kernels outside the class it
 * handles are left unchanged (fuse.c, docs/passes.md). */
bool pass_fuse(ir_module *m, ir_func *f);
/* -fno-fuse: every op computing a tile of data stores its result to the launch's global
 * scratch memory (scratch ops: the launcher allocates per_program bytes per program) and
 * its consumers load it back, behind barriers: the unfused baseline, with results
 * identical to the fused kernel's. Tiled IR is left unchanged (materialize.c). */
bool pass_materialize(ir_module *m, ir_func *f);
/* The shared-memory keep fuse chose (GPU targets, after tiling): the first chunk loop's
 * load of a kept value also stores each chunk to a shared buffer, and the later loops'
 * reloads read it back there instead (smemkeep.c). */
bool pass_smemkeep(ir_module *m, ir_func *f);
/* The cluster keep fuse chose (sm_90 targets, after tiling, before smemkeep): every chunk
 * loop it marked runs its CTA's share of the wide axis, each loop result's reduction is
 * combined over the cluster (cluster_reduce), and the kernel becomes a cluster of C CTAs
 * a program (ir_func.cluster); or, where the marks are not fuse's, they are dropped and
 * the kernel runs unsplit (clusterkeep.c). */
bool pass_clusterkeep(ir_module *m, ir_func *f);
/* On sm_90a, a dot of fp8 tiles cast to f16 whose operands lie K-major takes the fp8
 * tiles themselves (wgmma's e4m3/e5m2 forms), the casts gone (fp8dot.c). */
bool pass_fp8dot(ir_module *m, ir_func *f);
/* In a loop, a carried row vector updated as `l * alpha + sum(cast(x, f32), 1)` where x
 * (f16 or bf16) is the A operand of a product on wgmma becomes a carried [M, 8]
 * accumulator `dot(x, ones, lacc * alpha[:, None])`, read back after the loop as its
 * row max: the sum on the tensor cores instead of an add an element (rowsum.c). */
bool pass_rowsum(ir_module *m, ir_func *f);
/* Gives every tile value a thread layout: memory accesses choose coalesced blocked layouts,
 * which spread through elementwise, shape and control ops; reductions yield slices of
 * their operand's layout; where two choices meet, an explicit convert_layout (tiling.c).
 * A kernel whose tiles all have layouts is left alone. */
bool pass_tiling(ir_module *m, ir_func *f);

/* Makes a dot kernel persistent on sm_90a: a loop over the launched grid on a grid of
 * one program per SM, in grouped (L2-friendly) order (persist.c). */
bool pass_persist(ir_module *m, ir_func *f);
/* Splits the last round of persist's tile loop along K over every program, pieces summed
 * in program order by whichever piece finishes last (streamk.c). */
bool pass_streamk(ir_module *m, ir_func *f);
/* Pipelines the loads feeding a dot in a for loop through rings of `stages` shared slots
 * filled ahead: TMA and mbarriers on sm_90a, cp.async from sm_80 (swpipe.c). */
bool pass_swpipe(ir_module *m, ir_func *f);
/* Lowers dot to wgmma (asynchronous, one group in flight across a pipelined loop) or to
 * mma from shared slots (lower_dot.c). */
bool pass_lower_dot(ir_module *m, ir_func *f);
/* exp(a - broadcast(r)) as exp2(fma(a, log2 e, broadcast(-r log2 e))) on f32 (expfold.c). */
bool pass_expfold(ir_module *m, ir_func *f);
/* 1 + erf(z) and erf(z) + 1 as erfc(-z), 1 - erf(z) as erfc(z), where the erf has no other
 * use (complement.c; GPU targets). */
bool pass_complement(ir_module *m, ir_func *f);
/* A select in a loop body whose condition is a conjunction of index compares, all true
 * on an iteration by a scalar test of the induction variable, as `if test { a } else
 * { select }` (unmask.c). */
bool pass_unmask(ir_module *m, ir_func *f);
/* Rotates a loop of two wgmma products whose second is the only reader of its carried
 * accumulator, so that the second of one iteration overlaps the next one's first and
 * what follows it (rotate.c). */
bool pass_rotate(ir_module *m, ir_func *f);
/* Skips a wgmma accumulator's rescale by a row factor in a loop when the factor is 1 for
 * every row of the warp (a vote; exact) (skipscale.c). */
bool pass_skipscale(ir_module *m, ir_func *f);
/* Turns a store of a wgmma result that writes a block of a strided tensor into a TMA copy
 * through a shared buffer, overlapped with what follows (tmastore.c). */
bool pass_tmastore(ir_module *m, ir_func *f);
/* Splits a TMA-pipelined kernel into a producer warpgroup and the consumers (warpspec.c). */
bool pass_warpspec(ir_module *m, ir_func *f);
/* Lets each consumer warpgroup of a TMA-store epilogue stage and copy out its own rows,
 * waiting for no other warpgroup (wgstore.c). */
bool pass_wgstore(ir_module *m, ir_func *f);

/* Moves pure ops computed before a loop that does not use them down to their first user
 * (sink.c). */
bool pass_sink(ir_module *m, ir_func *f);
/* histogram (GPU targets): each histogram op becomes the program's counts in a shared
 * buffer, zeroed, filled by shared-memory atomics (values outside [0, bins) and masked-off
 * elements not counted) and read back as the tile, between barriers (docs/passes.md).
 * Runs after tiling, and at -O0 (codegen reads only the lowered form). */
bool pass_histogram(ir_module *m, ir_func *f);

/* The tiling pass's anchor layout for a tile of the given shape (rank 1..IR_MAX_RANK),
 * written to *out (not interned): `vec` contiguous elements per thread along the last
 * (fastest) dim, the 32 lanes of a warp spread fastest dim first, num_warps warps slowest
 * dim first (a row reduction then stays within a warp), tiles smaller than the CTA spread
 * one element per thread before replicating. The back end uses the same choice for IR
 * that was not tiled. */
void pass_tiling_blocked(int rank, const int *shape, int vec, int num_warps, ir_layout *out);
/* The layout of a dot's [m, n] result (m, n >= 16, powers of two) for num_warps warps
 * (a power of two), written to *out (not interned): IR_LAYOUT_MMA with the fields of the
 * blocked layout it equals, spt=[1,2], tpw=[8,4], order=[1,0] (the accumulator of
 * mma.sync m16n8: lane 4g+t holds rows g, g+8 and columns 2t, 2t+1 of each 16x8 tile),
 * wpc=[wm,wn] tiling [m, n] with warps of whole 16x8 tiles (m >= 16 * wm). */
void pass_tiling_mma(int m, int n, int num_warps, ir_layout *out);
/* The layout of a dot's [m, n] result computed by wgmma (sm_90a) with num_warps warps
 * (a multiple of 4, m a multiple of 16 * num_warps): IR_LAYOUT_WGMMA, spt=[1,2],
 * rpw=[2,1], tpw=[8,4], wpc=[num_warps,1], order=[1,0] (docs/ir.md). */
void pass_tiling_wgmma(int m, int n, int num_warps, ir_layout *out);
/* Whether the dot op of kernel f runs on wgmma for m's target: sm_90a, f16 or bf16 into
 * f32, warps a multiple of 4 and a tile they divide into 64-row warpgroup blocks. The one
 * rule tiling and lower_dot both follow. */
bool pass_dot_uses_wgmma(const ir_module *m, const ir_func *f, const ir_op *dot);
/* The vector width of kernel f's accesses: 16 bytes of the narrowest element a tile load,
 * store or atomic moves (4 when there is none). */
int pass_tiling_vec(const ir_func *f);

#endif
