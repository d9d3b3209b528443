/*
 * ir/ — the Tile IR: types (scalars, pointers, tiles with an optional thread layout), SSA
 * values, ops from one opcode table (ops.def), structured control flow (for with
 * loop-carried values, if with results), kernels and modules; the builder, the verifier,
 * the text printer and the text parser.
 *
 * Contract:
 *  - Everything lives in the module's arena; types are interned per module, so two types
 *    are equal exactly when their pointers are.
 *  - Every op carries the source location (line:col in module->source_name) it came from.
 *  - ir_verify checks the invariants documented in ops.def and returns false after
 *    reporting each violation, located, to the diagnostics.
 *  - ir_print writes the text form; ir_parse reads it back; print(parse(t)) == t for any
 *    t that ir_print produced. Value names are renumbered %0, %1, ... in print order.
 * Prefix: ir_ / IR_.
 */
#ifndef TK_IR_H
#define TK_IR_H

#include "../include/tk.h"
#include "../support/support.h"
#include "../target/target.h"

enum { IR_MAX_RANK = 4 };

/* ---- types ---------------------------------------------------------------------------- */

/* SMEM, MBAR and TMAP exist only at the GPU level, after lowering (docs/ir.md): a
 * shared-memory buffer (a ring of slots), an array of mbarriers, a TMA tensor map. */
typedef enum { IR_SCALAR, IR_PTR, IR_TILE, IR_SMEM, IR_MBAR, IR_TMAP } ir_type_kind;

typedef enum {
  IR_LAYOUT_BLOCKED, /* Triton's blocked layout */
  IR_LAYOUT_SLICE,   /* parent layout with dim slice_dim removed (reduction results) */
  IR_LAYOUT_MMA,     /* the accumulator of mma.sync (fields of a blocked layout) */
  IR_LAYOUT_WGMMA,   /* the accumulator of wgmma (fields of a blocked layout, rpw=[2,1]) */
  IR_LAYOUT_SHARED   /* how a shared buffer's slot lies in memory: swizzle, order */
} ir_layout_kind;

/* How a tile's elements are spread over a CTA's threads. For BLOCKED: each thread holds
 * size_per_thread[d] contiguous elements along d, a warp spans threads_per_warp[d] threads
 * along d, the CTA warps_per_cta[d] warps; the pattern repeats to cover the shape. order
 * lists dims from fastest-varying to slowest. reps_per_warp[d] (rpw, 1 unless set) puts
 * that many copies of a warp's lane pattern side by side along d before the next warp's
 * block: along d, slot k of a thread (e = k % spt, h = k / spt % rpw, r = k / (spt rpw))
 * holds index r*cta + warp_d*spt*rpw*tpw + h*spt*tpw + lane_d*spt + e, cta being
 * spt*rpw*tpw*wpc. (wgmma's accumulator needs it: a warp holds rows g and g + 8 of its own
 * 16-row block.) Interned like types.
 * SHARED (the layout of an smem slot, not of threads): order lists the slot's dims fastest
 * first; with swizzle W (32, 64 or 128 bytes) a 2-D slot is cut into column chunks of W
 * bytes (a chunk holds every row), and the 16-byte units of each row are permuted as the
 * TMA engine and wgmma expect (docs/ir.md gives the address formula). */
typedef struct ir_layout {
  ir_layout_kind kind;
  int rank;
  int size_per_thread[IR_MAX_RANK];
  int threads_per_warp[IR_MAX_RANK];
  int warps_per_cta[IR_MAX_RANK];
  int order[IR_MAX_RANK];
  int reps_per_warp[IR_MAX_RANK]; /* 0 reads as 1 */
  const struct ir_layout *parent; /* SLICE */
  int slice_dim;                  /* SLICE */
  int swizzle;                    /* SHARED: 0, 32, 64 or 128 (bytes) */
} ir_layout;

typedef struct ir_type {
  ir_type_kind kind;
  tk_dtype dtype;              /* SCALAR: its dtype; PTR: TK_PTR; TILE, SMEM: the element's */
  const struct ir_type *elem;  /* PTR: the pointee (a scalar); TILE: the element (scalar or
                                  ptr); SMEM: the element (a scalar) */
  int rank;                    /* TILE; SMEM (the ring's slots first); MBAR: 1 */
  int shape[IR_MAX_RANK];      /* TILE; SMEM: [slots, slot dims...]; MBAR: [count] */
  const ir_layout *layout;     /* TILE: NULL until the tiling pass; SMEM: a SHARED layout */
} ir_type;

typedef struct ir_module ir_module;

/* Interned type constructors. */
const ir_type *ir_type_scalar(ir_module *m, tk_dtype dt);
const ir_type *ir_type_ptr(ir_module *m, const ir_type *pointee);
const ir_type *ir_type_tile(ir_module *m, const ir_type *elem, int rank, const int *shape);
/* A shared buffer of `shape[0]` slots, each a tile of shape[1..rank) elements laid out as
 * `shared` (a SHARED layout of rank rank - 1). */
const ir_type *ir_type_smem(ir_module *m, const ir_type *elem, int rank, const int *shape,
                            const ir_layout *shared);
/* count mbarriers; a tensor map. */
const ir_type *ir_type_mbar(ir_module *m, int count);
const ir_type *ir_type_tmap(ir_module *m);
/* How shared buffers lie in a kernel's shared memory, as codegen lays them out and the
 * passes budget them: each slot of an smem buffer and each buffer at an IR_SMEM_ALIGN
 * boundary (the swizzled layouts need it), an mbarrier IR_MBAR_BYTES, and the area one
 * IR_SMEM_ALIGN larger than its buffers (its base is aligned at run time). */
enum { IR_SMEM_ALIGN = 1024, IR_MBAR_BYTES = 8 };
/* The bytes one slot of smem buffer type t takes. */
int64_t ir_smem_slot_bytes(const ir_type *t);
/* The bytes a buffer of type t (smem or mbar) takes. */
int64_t ir_smem_buffer_bytes(const ir_type *t);
/* The tile type of one slot of shared buffer type t (no layout). */
const ir_type *ir_type_slot(ir_module *m, const ir_type *t);
/* The same tile type with layout l (NULL removes it). */
const ir_type *ir_type_with_layout(ir_module *m, const ir_type *tile, const ir_layout *l);
/* Interns a layout. */
const ir_layout *ir_layout_intern(ir_module *m, const ir_layout *l);
/* The element type of a tile, or t itself for a scalar or pointer. */
const ir_type *ir_type_elem(const ir_type *t);
/* A tile of shape like's shape (none if like is not a tile) with element elem. */
const ir_type *ir_type_like(ir_module *m, const ir_type *like, const ir_type *elem);
/* Number of elements (1 for non-tiles). */
int64_t ir_type_numel(const ir_type *t);
/* Writes the type's text form ("f32", "ptr<f16>", "tile<128x64xf32>", with "#layout" when
 * set) to b. */
void ir_type_print(su_buf *b, const ir_type *t);
/* Writes a layout's text form ("#blocked<spt=[1,4], tpw=[8,4], wpc=[4,1], order=[1,0]>",
 * "#slice<dim=1, parent=#blocked<...>>", "#mma<...>", "#wgmma<...>",
 * "#shared<swizzle=128, order=[1,0]>") to b. */
void ir_layout_print(su_buf *b, const ir_layout *l);
/* reps_per_warp[d] of a thread layout, 1 when unset. */
int ir_layout_rpw(const ir_layout *l, int d);
/* dtype helpers */
/* A cluster size any target may have: 2, 4, 8 or 16 CTAs (whether this one has it is the
 * target table's: TG_CLUSTERS up to 8, TG_CLUSTER16 for 16). */
enum { IR_CLUSTER_MAX = 16 };
bool ir_cluster_size_ok(long long ctas);
bool ir_dtype_is_int(tk_dtype d);      /* i1..i64, u8..u64 */
bool ir_dtype_is_signed(tk_dtype d);   /* i8..i64 (i1 is not) */
bool ir_dtype_is_float(tk_dtype d);    /* f16 bf16 f32 f64, and the fp8 types */
bool ir_dtype_is_fp8(tk_dtype d);      /* f8e4m3 f8e5m2: storage types (no arithmetic) */
int ir_dtype_bits(tk_dtype d);         /* i1: 1; ptr: 64 */
int ir_dtype_bytes(tk_dtype d);        /* storage size: i1 is 1 byte */
const char *ir_dtype_name(tk_dtype d); /* "f32", "ptr" */
/* Parses a dtype name; returns false if s (n bytes) is none. */
bool ir_dtype_parse(const char *s, size_t n, tk_dtype *out);
/* x rounded to the float dtype d (f16, bf16, f32, f64): nearest even, subnormals kept,
 * beyond the largest finite value to inf. The fp8 types round to nearest even too but
 * saturate, as PTX's cvt.rn.satfinite does: beyond the largest finite value (448 for
 * f8e4m3, 57344 for f8e5m2), infinities included, to that value; a NaN stays a NaN. The
 * one definition of a dtype's precision, used by constant folding and the interpreter
 * alike. */
double ir_dtype_round(tk_dtype d, double x);
/* The byte of fp8 dtype d holding x, which is rounded to d first (ir_dtype_round), except
 * an infinity, which f8e5m2 holds as such (0x7c / 0xfc), and a NaN: one from
 * ir_fp8_value is its byte again (sign and pattern kept, as the GPU moves bytes); any
 * other NaN is 0x7f, the pattern the GPU's cvt.rn.satfinite writes. */
uint8_t ir_fp8_bits(tk_dtype d, double x);
/* The value of fp8 byte b of dtype d (exact); a NaN pattern gives a NaN that
 * ir_fp8_bits turns back into b. */
double ir_fp8_value(tk_dtype d, uint8_t b);
/* The accumulation bound of an fp8 dot on the tensor cores (docs/language.md §6.6): each
 * step of 32 products may be off by 2^-12 (|S| + sum |a b|), S the exact sum before the
 * step. Feed the products in K order with ir_fp8_acc_add (sum is then the exact dot);
 * ir_fp8_acc_bound is the bound so far. The one statement of the rule that the GPU
 * checks (tk-samples, tkbench) compare against. */
typedef struct {
  double sum, mag, bound; /* exact sum; this step's |S| + sum |a b|; the closed steps' bound */
  long n;
} ir_fp8_acc;
void ir_fp8_acc_add(ir_fp8_acc *a, double product);
double ir_fp8_acc_bound(const ir_fp8_acc *a);

/* ---- ops ------------------------------------------------------------------------------ */

typedef enum {
#define X(e, name, nopnd, nres, traits) IR_##e,
#include "ops.def"
#undef X
  IR_NOPCODES
} ir_opcode;

enum { IR_PURE = 1, IR_ELEM = 2, IR_MEM = 4, IR_TERM = 8, IR_REGION = 16, IR_COMMUT = 32 };

typedef enum { IR_CMP_EQ, IR_CMP_NE, IR_CMP_LT, IR_CMP_LE, IR_CMP_GT, IR_CMP_GE } ir_cmp;
typedef enum { IR_RED_SUM, IR_RED_MAX, IR_RED_MIN } ir_reduce_kind;
typedef enum {
  IR_ATOM_ADD, IR_ATOM_MAX, IR_ATOM_MIN, IR_ATOM_AND, IR_ATOM_OR, IR_ATOM_XOR, IR_ATOM_XCHG
} ir_atomic_kind;
/* dot's attr: how f32 operands are multiplied (docs/language.md, "Precision"). tf32 is 0,
 * the default, written as nothing in the text form; other operand types ignore it. */
typedef enum { IR_DOT_TF32, IR_DOT_IEEE, IR_DOT_TF32X3 } ir_dot_precision;
/* load's and store's attr: the cache operator (PTX's ld/st .cop; Triton's cache_modifier),
 * 0 for none. ca, lu and cv are loads' only, wb and wt stores' only, cg and cs both's. */
typedef enum {
  IR_CACHE_NONE, IR_CACHE_CA, IR_CACHE_CG, IR_CACHE_CS, IR_CACHE_LU, IR_CACHE_CV, IR_CACHE_WB, IR_CACHE_WT
} ir_cache;
/* load's and store's attr2: the L1 eviction priority (PTX's L1::evict_*; Triton's
 * eviction_policy), 0 for the normal one. PTX takes it or a cache operator, not both. */
typedef enum { IR_EVICT_NORMAL, IR_EVICT_FIRST, IR_EVICT_LAST } ir_evict;
/* atomic's and atomic_cas's attr2: the memory order at the program level (docs/ir.md;
 * Triton's sem), gpu scope; 0, relaxed, written as nothing in the text form. */
typedef enum { IR_SEM_RELAXED, IR_SEM_ACQUIRE, IR_SEM_RELEASE, IR_SEM_ACQ_REL } ir_sem;

typedef struct {
  const char *name;
  int noperands, nresults, traits;
} ir_opinfo;

/* The table row of an opcode. */
const ir_opinfo *ir_op_info(ir_opcode op);
/* True for the math ops whose f32 form is approximate on the GPU unless their attr is 1
 * (accurate: libdevice's routines; docs/language.md, "Precision"): sin, cos, exp, exp2,
 * sigmoid. */
bool ir_op_has_accurate(ir_opcode op);
/* Text names of predicates and kinds ("lt", "sum", "xchg"); NULL when out of range. */
const char *ir_cmp_name(ir_cmp c);
const char *ir_reduce_name(ir_reduce_kind k);
const char *ir_atomic_name(ir_atomic_kind k);
const char *ir_dot_precision_name(ir_dot_precision p);
const char *ir_cache_name(ir_cache c);   /* "cg"; NULL for none or out of range */
const char *ir_evict_name(ir_evict e);   /* "evict_first"; NULL for normal or out of range */
const char *ir_sem_name(ir_sem s);       /* "acq_rel"; NULL for relaxed or out of range */
/* True if op (load or store) takes the cache operator c (IR_CACHE_NONE: always). */
bool ir_cache_allowed(ir_opcode op, ir_cache c);
/* The inverse lookups on the n bytes at s; -1 when s names none. */
int ir_cmp_parse(const char *s, size_t n);
int ir_reduce_parse(const char *s, size_t n);
int ir_atomic_parse(const char *s, size_t n);
int ir_dot_precision_parse(const char *s, size_t n);
int ir_cache_parse(const char *s, size_t n); /* "ca".."wt" (no leading dot) */
int ir_evict_parse(const char *s, size_t n); /* "evict_first", "evict_last" */
int ir_sem_parse(const char *s, size_t n);   /* "acquire", "release", "acq_rel" */

typedef struct { uint32_t line, col; } ir_loc;

typedef struct ir_op ir_op;
typedef struct ir_block ir_block;

typedef struct ir_value {
  const ir_type *type;
  ir_op *def;        /* the defining op, NULL for a block argument */
  ir_block *owner;   /* for a block argument: its block */
  int index;         /* result index in def, or argument index in owner */
  int id;            /* scratch number (printer, passes) */
  const char *name;  /* optional hint (a .tk variable name), printed as a comment */
} ir_value;

struct ir_op {
  ir_opcode opc;
  ir_loc loc;
  ir_value **operands;
  int noperands;
  ir_value **results;
  int nresults;
  ir_block **regions;
  int nregions;
  int64_t attr, attr2;
  union {
    int64_t i;   /* integer / i1 constants (unsigned ones stored in the same bits) */
    double f;    /* float constants, in f64 */
  } cval;
  const int *ints; /* TRANS permutation */
  int nints;
  const char *str; /* PRINT prefix, ASSERT message */
  ir_op *prev, *next;
  ir_block *parent;
};

struct ir_block {
  ir_value **args;
  int nargs;
  ir_op *first, *last;
  ir_op *parent; /* the op owning this region (NULL for a kernel body) */
};

typedef struct {
  const char *name;
  int64_t ival;
  double fval;
  bool is_float;
  bool is_dtype; /* a dtype parameter: ival is the tk_dtype it is bound to */
} ir_binding; /* a compile-time parameter's bound value, kept for reports */

typedef struct ir_func {
  const char *name;
  ir_loc loc;
  /* Unique in the process, never reused (ir_func_new, ir_func_clone): what the
   * interpreter's workspace remembers of the kernel whose counters it holds, where a
   * pointer could name a later function allocated at the same address. */
  uint64_t uid;
  ir_block *body;           /* args = the kernel's parameters, in order */
  const char **param_names; /* parallel to body->args */
  int num_warps, num_stages;
  /* Launch attributes a user may set (0: the compiler decides, docs/language.md):
   * warp specialization and a persistent grid of dot loops (sm_90a). */
  int warp_specialize, persist; /* 1 on, -1 off, 0 auto */
  /* `@launch(streamk)`: the last round of a persistent dot kernel split along K (1 on, -1
   * off, 0 auto: on where persist applies). */
  int streamk;
  /* Set by the persist pass: the kernel loops over the grid it was launched with, on a
   * grid of its own (one program per SM); grid_size reads the launched grid. */
  bool persistent;
  /* Programs resident on one SM that the kernel is built for (`@launch(programs_per_sm)`;
   * 0: unset, the compiler decides): codegen caps registers to let that many CTAs share an
   * SM, and a persistent kernel's grid has that many programs per SM. */
  int programs_per_sm;
  /* `@launch(pdl = true)`: launched as a programmatic dependent launch (sm_90+), so that
   * it may start while the stream's previous kernel finishes; it waits for that kernel's
   * completion and memory before its first instruction of its own. */
  bool pdl;
  /* Set by the clusterkeep pass: each program runs as a cluster of `cluster` CTAs
   * (ir_cluster_size_ok; 0: one CTA), launched with grid x times as many CTAs; program_id(0) and
   * num_programs(0) count clusters, cluster_rank tells its CTAs apart. */
  int cluster;
  ir_binding *bindings;
  int nbindings;
  /* Per parameter, parallel to body->args (NULL: nothing known): a power of two D known to
   * divide it — an integer's value, a pointer's address in bytes; 1 when nothing is known.
   * Set for integer and pointer parameters only. The JIT sets them per argument signature
   * (Triton's specialization), tkc from --specialize; codegen relies on them. */
  int *param_div;
  /* Per parameter, parallel to body->args (NULL: nothing known): the argument is known
   * positive and finite (0 < x < inf). Set for float parameters only, by the same
   * specialization bit as param_div (docs/ir.md, "Parameter facts"); lets a pass move a
   * multiply by it across max (expfold). */
  bool *param_pos;
  /* What a pass decided that the IR itself does not show (fuse's keep-or-recompute choice
   * and the estimated bytes of each option), printed `note("...")` after the kernel's
   * launch attributes; NULL: nothing. */
  const char *note;
} ir_func;

struct ir_module {
  su_arena *arena;
  const char *source_name; /* the .tk file the locations refer to */
  /* The GPU architecture the target-dependent passes lower for ("sm_90a", a row of
   * target/targets.def: they read it there, tg_has(m->arch, TG_TMA), tg_smem_max(m->arch));
   * NULL for a module that stays target-independent (the interpreter runs it). Not
   * printed. */
  const char *arch;
  /* The source the locations point into (the .tk or .tkir text; NULL: none), and where
   * passes report what they leave unchanged (-Rpass-missed: `remarks`, NULL for silence;
   * `remark_passes` the comma-separated pass names that may, or "all"). Not printed. */
  const su_source *src;
  su_diags *remarks;
  const char *remark_passes;
  /* -Rpass: the passes (comma-separated, or "all") that also say what they did (fuse's
   * keep choice); NULL: none. Not printed. */
  const char *remark_done_passes;
  /* How fuse keeps a value two chunk loops need (ir_keep; pass_options.fuse_keep for the
   * run). Not printed. */
  int fuse_keep;
  ir_func **funcs;
  int nfuncs, capfuncs;
  void *types; /* interning tables (private to types.c) */
};

/* How fuse keeps a wide value that two chunk loops need (-ffuse-keep=, docs/passes.md
 * "Keep or recompute"): chosen by its cost model, or forced. */
typedef enum {
  IR_KEEP_AUTO = 0,  /* the cost model's choice */
  IR_KEEP_RECOMPUTE, /* reload it and re-run its producers in each later loop */
  IR_KEEP_ONLINE,    /* max/sum pairs: one loop with the online rescaling; others recompute */
  IR_KEEP_SMEM,      /* the first loop stages it in shared memory; later loops read it back */
  IR_KEEP_CLUSTER,   /* sm_90: the program runs as a cluster of CTAs, each keeping its share in shared memory */
} ir_keep;

/* ---- building ------------------------------------------------------------------------- */

/* A new empty module whose memory lives in a. */
ir_module *ir_module_new(su_arena *a, const char *source_name);
/* Appends a kernel with an empty body (no params), with the default launch attributes
 * (TG_DEFAULT_WARPS, TG_DEFAULT_STAGES). */
ir_func *ir_func_new(ir_module *m, const char *name, ir_loc loc);
/* A fresh ir_func uid (> 0, thread-safe): ir_func_new and ir_func_clone give each
 * function its own. */
uint64_t ir_func_new_uid(void);
/* Appends a parameter to the kernel and returns its value. */
ir_value *ir_func_add_param(ir_module *m, ir_func *f, const char *name, const ir_type *t);
/* The known divisibility of f's parameter i (1 when nothing is known). */
int ir_param_div(const ir_func *f, int i);
/* Records that parameter i (integer or pointer) is divisible by d, a power of two (1:
 * nothing known); the array is allocated in m's arena on first use. */
void ir_func_set_param_div(ir_module *m, ir_func *f, int i, int d);
/* Whether a parameter of type t can carry a divisibility fact: an integer other than i1,
 * or a pointer. */
bool ir_param_can_divide(const ir_type *t);
/* Whether f's parameter i is known positive and finite. */
bool ir_param_pos(const ir_func *f, int i);
/* Records that parameter i (an f32 or f64 scalar) is positive and finite, or (pos false)
 * that nothing is known. */
void ir_func_set_param_pos(ir_module *m, ir_func *f, int i, bool pos);
/* Whether a parameter of type t can carry the positivity fact: an f32 or f64 scalar. */
bool ir_param_can_be_positive(const ir_type *t);
/* Whether a parameter of type t has a specialization bit (the JIT's signature): one of
 * the two above. */
bool ir_param_specializable(const ir_type *t);
/* Finds a kernel by name. */
ir_func *ir_module_find(const ir_module *m, const char *name);

/* ---- signatures ----------------------------------------------------------------------- */

/* One parameter of a kernel as a caller sees it. */
typedef struct {
  const char *name;    /* the .tk name; "" when it has none */
  tk_dtype type;       /* a scalar's dtype, or TK_PTR */
  tk_dtype pointee;    /* a pointer's element dtype; TK_NDTYPE for a scalar or when unknown */
  bool specializable;  /* ir_param_specializable: the JIT may specialize on its divisibility
                        * (integers, pointers) or positivity (f32, f64) */
} ir_sig_param;

/* What a caller must know of a kernel to launch it: its parameters, its compile-time
 * parameters as bound, and its launch attributes. Derived once, by ir_func_signature, and
 * read by everything that checks, packs or forwards arguments (libtk's launch checks and
 * JIT, tkc --emit=c, the bindings). Kernels without IR (AOT PTX) get one from the PTX. */
typedef struct {
  const char *name;
  ir_sig_param *params;
  int nparams;
  const ir_binding *consts; /* the compile-time parameters, bound */
  int nconsts;
  int num_warps, num_stages;
} ir_signature;

/* f's signature, allocated in a (names shared with f: a must not outlive f's module). */
ir_signature *ir_func_signature(su_arena *a, const ir_func *f);
/* Writes a parameter's type as the IR prints it ("i32", "ptr<f32>"; "ptr" when the pointee
 * is unknown). */
void ir_sig_param_print(su_buf *b, const ir_sig_param *p);

/* Where new ops go: at the end of block, or before `before` when it is set. */
typedef struct {
  ir_module *m;
  ir_block *block;
  ir_op *before;
  ir_loc loc; /* stamped on every op built */
} ir_builder;

/* Creates an op with the given operands and nres results of the given types (regions are
 * added by ir_op_add_region) and inserts it at the builder's point. */
ir_op *ir_build(ir_builder *b, ir_opcode opc, int nopnds, ir_value *const *opnds, int nres,
                const ir_type *const *restypes);
/* Single-result shorthands; each returns the result value. */
ir_value *ir_build1(ir_builder *b, ir_opcode opc, const ir_type *t, int nopnds, ir_value *const *opnds);
ir_value *ir_const_int(ir_builder *b, const ir_type *t, int64_t v);
ir_value *ir_const_float(ir_builder *b, const ir_type *t, double v);
ir_value *ir_unary(ir_builder *b, ir_opcode opc, ir_value *x);           /* result type = x's */
ir_value *ir_binary(ir_builder *b, ir_opcode opc, ir_value *x, ir_value *y); /* result type = x's */
ir_value *ir_cmp_build(ir_builder *b, ir_cmp pred, ir_value *x, ir_value *y);
/* Adds an empty region (block) with the given argument types to op. */
ir_block *ir_op_add_region(ir_module *m, ir_op *op, int nargs, const ir_type *const *argtypes);
/* Builds `for` with lb, ub, step and the initial carried values; its region's args are
 * (iv of lb's type, one per init). The body is empty: fill it and end it with yield. */
ir_op *ir_build_for(ir_builder *b, ir_value *lb, ir_value *ub, ir_value *step, int ninit,
                    ir_value *const *inits);
/* Builds `if` with nres results; two empty regions, each to be ended with yield. */
ir_op *ir_build_if(ir_builder *b, ir_value *cond, int nres, const ir_type *const *restypes);

/* ---- editing (for passes) ------------------------------------------------------------- */

/* Creates an op like ir_build but inserts it nowhere (op->parent is NULL). */
ir_op *ir_op_new(ir_module *m, ir_opcode opc, ir_loc loc, int nopnds, ir_value *const *opnds,
                 int nres, const ir_type *const *restypes);
/* Links the unlinked op into blk just before `before` (at the end when before is NULL). */
void ir_block_insert_before(ir_block *blk, ir_op *op, ir_op *before);
/* Appends an argument of type t to block b and returns it. */
ir_value *ir_block_add_arg(ir_module *m, ir_block *b, const ir_type *t);
/* Numbers f's values (ir_value.id) 0.. in print order: params, then per op in pre-order
 * its results followed by its regions' arguments. Returns how many. */
int ir_number_values(ir_func *f);
/* Unlinks op from its block (it must have no remaining uses). */
void ir_op_erase(ir_op *op);
/* Moves op to just before `before` (another block allowed). */
void ir_op_move_before(ir_op *op, ir_op *before);
/* Replaces every use of from by to inside the whole function f. */
void ir_replace_all_uses(ir_func *f, ir_value *from, ir_value *to);
/* Calls fn on every op of block and of the regions nested in it, in pre-order. */
void ir_walk(ir_block *block, void (*fn)(ir_op *op, void *ctx), void *ctx);
/* Counts uses of each value of f into an array indexed by value id after numbering
 * every value of f (ids are renumbered); returns the array (arena) and its length. */
int *ir_count_uses(ir_module *m, ir_func *f, int *nvalues);

/* ---- cloning (for passes, and the runtime's per-variant lowering) ---------------------- */

/* A map from values to values (arena-backed): what a clone's operands are renamed to. */
typedef struct {
  su_map *map;
} ir_vmap;
ir_vmap *ir_vmap_new(su_arena *a);
void ir_vmap_put(ir_vmap *m, const ir_value *from, ir_value *to);
/* v's image, or v itself when it has none. */
ir_value *ir_vmap_get(const ir_vmap *m, const ir_value *v);
/* Copies src's attributes (attr, attr2, constant, ints, str) to dst: what makes an op of
 * the same opcode the same op. */
void ir_op_copy_attrs(ir_op *dst, const ir_op *src);
/* A deep copy of op (its regions too), not linked anywhere: operands renamed through vm,
 * and the copy's results and region arguments entered into vm. */
ir_op *ir_op_clone(ir_module *m, const ir_op *op, ir_vmap *vm);
/* A deep copy of kernel f (parameters, facts and body) in m, not added to m's kernels. */
ir_func *ir_func_clone(ir_module *m, const ir_func *f);
/* Appends a carried value to `for` loop: init as its initial value; returns the new result
 * and sets *arg to the new region argument. The body's yield must be extended to match
 * (ir_yield_add). */
ir_value *ir_for_add_carried(ir_module *m, ir_op *loop, ir_value *init, ir_value **arg);
/* Appends a result of type t to `if` op; both yields must be extended to match. */
ir_value *ir_if_add_result(ir_module *m, ir_op *op, const ir_type *t);
/* Appends v to yield's operands. */
void ir_yield_add(ir_module *m, ir_op *yield, ir_value *v);

/* ---- checking, text ------------------------------------------------------------------- */

/* Checks every invariant; reports each violation (with the op's loc) to d. */
bool ir_verify(const ir_module *m, su_diags *d);
/* Writes the text form of the whole module. */
void ir_print(su_buf *out, const ir_module *m);
/* Parses the text form (a .tkir source); errors located in src go to d. NULL on error. */
ir_module *ir_parse(su_arena *a, const su_source *src, su_diags *d);

#endif
