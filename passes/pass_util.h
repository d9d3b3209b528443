/*
 * passes/pass_util.h — helpers the passes share: reading and making constants with the
 * language's arithmetic (wrap-around integers, floats rounded to their type), and
 * replacing an op by a value. Internal to passes/; not part of the folder's contract.
 */
#ifndef TK_PASS_UTIL_H
#define TK_PASS_UTIL_H

#include "passes.h"

/* True if v is the result of a const op (a scalar, or a tile filled with one value). */
bool pass_is_const(const ir_value *v);

/* v reduced to dtype d's width, in the canonical form folded constants are stored in:
 * sign-extended for signed types, zero-extended for unsigned ones and i1 (0 or 1). */
int64_t pass_int_wrap(tk_dtype d, int64_t v);
/* x rounded to nearest even in float type d's precision and range (overflow gives inf). */
double pass_float_round(tk_dtype d, double x);

/* The value of an integer (or i1) constant, canonical for its dtype. */
int64_t pass_const_int(const ir_value *v);
/* The value of a float constant, rounded to its dtype. */
double pass_const_float(const ir_value *v);
/* True if v is a constant equal to k in its dtype (for floats, exactly k: 0.0 is not -0.0). */
bool pass_const_eq(const ir_value *v, double k);
/* True if v is an integer constant with every bit of its width set. */
bool pass_const_all_ones(const ir_value *v);

/* The index of v among f's parameters, or -1 when it is none of them. */
int pass_param_index(const ir_func *f, const ir_value *v);
/* How many operands of the ops in blk (and in their regions, at any depth) are v. */
int pass_count_uses(const ir_block *blk, const ir_value *v);

/* A new constant of type t (canonicalized) placed just before op. */
ir_value *pass_const_int_before(ir_module *m, ir_op *op, const ir_type *t, int64_t v);
ir_value *pass_const_float_before(ir_module *m, ir_op *op, const ir_type *t, double v);

/* Redirects every use of op's single result to v, then erases op. */
void pass_replace_op(ir_func *f, ir_op *op, ir_value *v);

/* -Rpass-missed: reports "PASS: MESSAGE [-Rpass-missed=PASS]" as a remark at loc (with
 * the source line, when the module has its source) if m's remark_passes name pass (or are
 * "all"); nothing otherwise. What a pass left unchanged should say why, not be silent. */
void pass_remark_missed(const ir_module *m, const char *pass, ir_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* -Rpass: the same for what a pass did and why (fuse's keep choice), reported when m's
 * remark_done_passes name pass: "PASS: MESSAGE [-Rpass=PASS]". */
void pass_remark(const ir_module *m, const char *pass, ir_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- fusion's keep-or-recompute cost model (fusecost.c) ---- */
typedef enum {
  PASS_KEEP_REGISTERS, PASS_KEEP_RECOMPUTE, PASS_KEEP_ONLINE, PASS_KEEP_SMEM, PASS_KEEP_CLUSTER,
  PASS_NKEEP
} pass_keep;
typedef struct {
  /* what fuse tells it, per program */
  const char *arch;       /* the target; NULL or one without ceilings: TG_DEFAULT_ARCH's */
  int64_t kept_bytes;     /* the wide loads more than one chunk loop reads, in bytes */
  int64_t other_bytes;    /* the rest of its wide traffic (stores, loads read once): the
                           * same under every option, but slowed alike by low occupancy */
  int64_t scratch_bytes;  /* the most exchange scratch one use in the chunk loops takes */
  int reductions;         /* reductions along the wide axis: one cluster exchange each */
  int reads_recompute;    /* loops reading them when recomputed (the most of any) */
  int reads_online;       /* the same after the online rewrite; 0: no max/sum pair */
  int64_t online_flops;   /* the rewrite's extra FLOPs */
  int threads;
  int64_t values_per_thread, register_budget; /* for the registers option */
  int cluster_sizes;      /* bit n set: the kernel can be split over a cluster of n CTAs */
  /* what it says: bytes per program from HBM and from L2, seconds of the machine per
   * program, which options exist here, and the choice */
  double hbm[PASS_NKEEP], l2[PASS_NKEEP], seconds[PASS_NKEEP];
  bool avail[PASS_NKEEP];
  double smem_bytes, cluster_bytes; /* per program (per CTA) with the reserve */
  int resident_smem;                /* programs per SM with the shared-memory keep */
  int cluster_ctas, resident_cluster; /* the cluster option's CTAs, and CTAs per SM (0: none) */
  pass_keep best;                   /* the cheapest available option */
  const char *arch_used;
} pass_keep_cost;
/* Costs every option of c and picks one (fusecost.c has the rules). */
void pass_keep_choose(pass_keep_cost *c);
/* "registers", "recompute", "online", "smem", "cluster". */
const char *pass_keep_name(pass_keep k);

/* ---- the target (its row of target/targets.def) ---- */
typedef enum { PASS_MMA, PASS_CP_ASYNC, PASS_WGMMA, PASS_TMA } pass_feature;
/* Whether the module's target (m->arch; none when NULL) has the feature: the table's
 * TG_MMA_SYNC, TG_CP_ASYNC (sm_80 on), TG_WGMMA (sm_90a), TG_TMA (sm_90 on). */
bool pass_has(const ir_module *m, pass_feature f);

/* ---- slices ---- */
/* The pure computation of v inside `region` (a loop body) copied before b's point with
 * the values of map substituted (e.g. the induction variable by a later iteration's):
 * values defined outside the region are used as they are, pure ops inside are copied
 * (once; the copies are entered into map). NULL when v depends on something that cannot
 * be recomputed there (an op with effects, a carried value not in map). */
ir_value *pass_clone_slice(ir_module *m, ir_builder *b, const ir_block *region, ir_value *v,
                           ir_vmap *map);
/* The ops of opcode opc in blk and the regions nested in it, in pre-order, into out (at
 * most cap of them; the rest are not seen). Returns how many. */
int pass_collect(ir_block *blk, ir_opcode opc, ir_op **out, int cap);
/* v made a tile of type t (rank 2): a scalar splat, a tile of t's rows ([M]) stretched
 * along the last axis (expand_dims at 1, then broadcast; the column in t's layout when t
 * has one). Built at b. */
ir_value *pass_spread(ir_module *m, ir_builder *b, ir_value *v, const ir_type *t);
/* Whether op lies in block blk or in a region nested in it. */
bool pass_op_within(const ir_op *op, const ir_block *blk);
/* Whether v may differ between the programs of a launch, or between the iterations of an
 * enclosing loop: it reads the program id or a block argument (a loop's variable or carried
 * value; persist makes the program id its tile loop's variable), or it cannot be told.
 * The kernel's parameters are the same for every program. */
bool pass_varies(const ir_func *f, const ir_value *v);
/* Whether every program runs for loop L the same number of times (its bounds vary with
 * neither the program id nor an enclosing loop: pass_varies). */
bool pass_loop_uniform(const ir_func *f, const ir_op *L);
/* Whether f has a workspace op: stream-K (streamk.c) split its persistent tile loop. */
bool pass_has_workspace(ir_func *f);

/* log2(e): the factor expfold writes exp(x) with (ex2(x log2 e)), and carry.c looks for
 * in expfold's output; one definition so that what one writes the other recognizes. */
#define PASS_LOG2E 1.4426950408889634

/* ---- what a loop carries, for cutting its steps in two pieces (carry.c) ---- */
enum { PASS_CARRY_VALUES = 16 };
typedef enum {
  PASS_CARRY_SAME,   /* yielded unchanged: both pieces hold the initial value */
  PASS_CARRY_SUM,    /* a dot's sum from zeros of products the loop does not feed: x1 + x2 */
  PASS_CARRY_SCALED, /* an online softmax's sum rescaled by exp(m - m'): x1 e^(m1-M) + x2 e^(m2-M) */
  PASS_CARRY_MAX     /* that running max m: M = max(m1, m2) */
} pass_carry_role;
typedef struct {
  int n;                           /* the loop's carried values */
  int role[PASS_CARRY_VALUES];     /* a pass_carry_role each */
  int max_index;                   /* the PASS_CARRY_MAX value, -1 when none */
} pass_carry;
/* The role of each value for loop L carries, such that two pieces of its steps (each
 * from the initial values) merge into what the whole loop computes, exactly in real
 * arithmetic; false, with *why, when one has none or L writes memory (carry.c checks
 * the rescaled sums with a degree analysis of the body, not by their shape). */
bool pass_carry_roles(ir_op *L, pass_carry *out, const char **why);

/* ---- block pointers (blockptr.c) ---- */
/* A tile load that reads one box of a strided tensor (see blockptr.c): the tensor at
 * `base` (a pointer parameter) with `rank` dims, outermost first; per dim the box's
 * origin (an i32 valid where the load stands), stride in elements (a parameter or
 * constant; NULL for the innermost, 1), extent (a parameter or constant; NULL:
 * unbounded), box size, and the tile dim it is (-1: a dim of box 1 the tile has not). */
typedef struct {
  ir_value *base;
  int rank;
  ir_value *coord[IR_MAX_RANK], *stride[IR_MAX_RANK], *bound[IR_MAX_RANK];
  int box[IR_MAX_RANK], tile_dim[IR_MAX_RANK];
} pass_block;
/* Recognizes load (its pointer tile, mask and zero `other`) or a store (pointer and mask)
 * as a box copy; false when it is none. May add pure scalar ops before it (the
 * coordinates). A store's mask bounds its dims as a load's does: what lies outside is not
 * written. */
bool pass_block_of(ir_module *m, ir_op *load, pass_block *out);
/* Whether kernel f's launch guarantees what a TMA map of block b (elements of elem_bytes)
 * needs: the base and every stride 16-byte aligned by the parameters' facts, boxes of at
 * most 256, an inner extent of a whole 32-, 64- or 128-byte swizzle line. */
bool pass_block_tma_ready(const ir_func *f, const pass_block *b, int elem_bytes);
/* A tensor_map of block b at the top of f (its inner box: one swizzle line). */
ir_value *pass_tensor_map(ir_module *m, ir_func *f, const pass_block *b, int swizzle, int elem_bytes);
/* Shared memory kernel f's buffers take, as codegen lays them out (ir_smem_buffer_bytes
 * each, and the area's own alignment). */
int64_t pass_smem_bytes(const ir_func *f);
/* smem<nslots x rows x cols x elem> in the row-major shared layout with the given swizzle
 * (bytes): the slots of rings and staging tiles. */
const ir_type *pass_slots_type(ir_module *m, const ir_type *elem, int nslots, int rows, int cols, int swizzle);
/* The swizzle (bytes) for a slot whose rows are inner_bytes long: 128, 64, 32, or 0. */
int pass_swizzle_for(int inner_bytes);

/* ---- liveness with other roots (dce.c) ---- */
/* DCE whose roots are the ops `root` accepts (and return), sweeping only inside scope (a
 * region of f): there every op not live is erased, with effects or not. Used to carve a
 * warp_spec producer out of a copy of the kernel. */
bool pass_dce_scoped(ir_module *m, ir_func *f, ir_block *scope, bool (*root)(const ir_op *op, void *arg),
                     void *arg);

#endif
