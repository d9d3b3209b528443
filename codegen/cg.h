/*
 * cg.h — private to codegen/: the state every emitter shares, and the helpers the
 * emitters call across files. Every emitter takes the context first.
 */
#ifndef TK_CG_H
#define TK_CG_H

#include "codegen.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

enum { CG_GLOBAL_AS = 1, CG_SHARED_AS = 3, CG_WARP = TG_WARP, CG_VEC_BYTES = TG_VEC_BYTES };

/* How a value is spread over the CTA's threads, resolved from the IR layout (or from the
 * tiling pass's default when the IR has none). Every layout is a blocked base (rank brank)
 * of which the tile keeps some dims (a slice removes one). Along base dim d a thread's
 * coordinate is tc = warp_d * tpw + lane_d; tile dim i (base dim base[i]) gives thread
 * slots k in [0, ext[i]), k = (r * rpw + h) * spt + e, holding index (r * cta +
 * warp_d * spt*rpw*tpw + h * spt*tpw + lane_d * spt + e) mod shape[i] (rpw = 1: that is
 * r * cta + tc * spt + e; cta = spt*rpw*tpw*wpc). Slot j of a thread is k_i = (j / stride[i]) % ext[i] per tile dim; the tile
 * dim `fast` has stride 1, so the spt elements a thread owns along it are adjacent slots.
 * An element whose unreduced index reaches shape[i], or that a thread holds for a nonzero
 * coordinate along a removed dim, is a replica: stores and reductions skip it. Scalars:
 * tile = false, numel = per = 1. */
typedef struct {
  bool tile;
  int rank, numel, per, threads, fast;
  int shape[IR_MAX_RANK], base[IR_MAX_RANK], ext[IR_MAX_RANK], stride[IR_MAX_RANK];
  /* the blocked base, by base dim */
  int brank;
  bool kept[IR_MAX_RANK];
  int spt[IR_MAX_RANK], tpw[IR_MAX_RANK], wpc[IR_MAX_RANK], order[IR_MAX_RANK], rpw[IR_MAX_RANK];
  int lstride[IR_MAX_RANK], wstride[IR_MAX_RANK], cta[IR_MAX_RANK];
} cg_layout;

/* What is provable about an integer or pointer value (Triton's axis info), 1-D:
 * contig — elements come in aligned runs of this many consecutive values (x, x+1, ...);
 * constancy — in aligned runs of this many equal values;
 * div — a power of two dividing the first element of every contiguous run (pointers: in
 * bytes). Scalars have contig = constancy = 1. */
typedef struct {
  int contig, constancy;
  int64_t div;
} cg_axis;

/* One IR value as this thread sees it: its slots (one for a scalar). */
typedef struct {
  LLVMValueRef *v;
  int n;
} cg_val;

typedef struct {
  /* whole compilation */
  const ir_module *m;
  su_arena *arena; /* scratch for this compilation */
  su_diags *diags;
  su_source *src;  /* stands for module->source_name in diagnostics */
  const char *arch; /* the target: a row of target/targets.def */
  bool failed;     /* the current kernel hit an unsupported op */
  bool failed_any;
  LLVMContextRef llc;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  /* current kernel */
  const ir_func *f;
  LLVMValueRef fn;
  LLVMValueRef tid; /* threadIdx.x, read once in the entry block */
  int threads;
  int nvalues;
  cg_val *vals;     /* by value id */
  cg_axis *axis;    /* by value id */
  int vec;         /* the tiling pass's vector width for untiled values */
  /* shared memory (smem.c): the IR's buffers, then one scratch in two halves used in turn */
  LLVMValueRef smem_root, smem_scratch, smem_half; /* placeholders until sizes are known */
  LLVMValueRef smem_base; /* the scratch */
  int smem_need;    /* bytes the largest single use of the scratch needs */
  int smem_uses;    /* uses so far in this kernel */
  int64_t smem_bufs; /* bytes of the IR's buffers so far */
  int smem_total;   /* after cg_smem_end_kernel: the kernel's bytes of shared memory */
  const ir_op *op;  /* the op being emitted (emit_op), for what shared memory is for */
  const ir_op *smem_need_op, *smem_buf_op; /* the largest scratch use and buffer, or NULL */
  int64_t smem_buf_max; /* that buffer's bytes */
  su_buf shared_note; /* ".tk.shared" and ".tk.abi" lines appended to the PTX */
  /* the region being emitted (emit_warpspec.c): its barrier, and whether it runs on one
   * thread (a warp_spec producer) */
  int bar_id, bar_threads; /* bar_id 0: the whole CTA (bar.sync 0) */
  bool single_thread;
  bool in_turn;            /* between a warpgroup's wg_turn wait and its pass */
  int launch_threads;      /* the CTA's threads: 32 * warps, plus a warp_spec's producers */
  LLVMValueRef grid[3];    /* a persistent kernel's launched grid (hidden arguments) */
  int tmaps_seen;          /* tensor_map ops emitted so far (their hidden arguments) */
  LLVMValueRef scratch;    /* the global scratch buffer (hidden argument; NULL: none) */
  LLVMValueRef workspace;  /* the workspace buffer (hidden argument after scratch; NULL: none) */
  /* a cluster kernel's exchanges (emit_cluster.c): per cluster_reduce, in body order, its
   * barrier and its C slots; the next one to emit */
  LLVMValueRef *cl_bar, *cl_slot;
  int cl_n, cl_next;
} cg_ctx;

enum { CG_ASM_MAX_ARGS = 16, CG_WARPGROUP = 4 * 32 };

/* ---- diagnostics (emit_kernel.c) ---- */
/* Reports "NAME is not supported yet by the GPU back end" at op and marks ctx failed. */
void cg_unsupported(cg_ctx *c, const ir_op *op, const char *what);

/* ---- types.c ---- */
/* The register type of a scalar or pointer IR type (tiles: their element's). */
LLVMTypeRef cg_type(cg_ctx *c, const ir_type *t);
/* The in-memory type of a scalar dtype (i1 is a byte). */
LLVMTypeRef cg_mem_type(cg_ctx *c, tk_dtype dt);
LLVMTypeRef cg_dtype_type(cg_ctx *c, tk_dtype dt);
/* The global-memory pointer type. */
LLVMTypeRef cg_ptr_type(cg_ctx *c);
LLVMValueRef cg_i32(cg_ctx *c, int64_t v);

/* ---- layout.c ---- */
/* Picks the default vector width for values the IR leaves without a layout. */
void cg_layout_choose(cg_ctx *c, const ir_func *f);
/* Resolves layout il (NULL: the tiling pass's default) for a tile of type t. False when il
 * does not fit: rank, a warp of 32 lanes, threads / 32 warps, positive entries. */
bool cg_layout_resolve(const ir_layout *il, const ir_type *t, int threads, int vec, cg_layout *out);
/* The layout of a value of type t (a scalar gives the trivial layout). */
cg_layout cg_layout_of(cg_ctx *c, const ir_type *t);
/* l with tile dim `axis` removed: where a reduction along axis leaves its result. */
cg_layout cg_layout_slice(const cg_layout *l, int axis);
/* The largest group size g (a power of two, 1 when none) such that every aligned group of
 * g adjacent slots of a thread (slots j0 .. j0+g-1, j0 a multiple of g) holds elements
 * lying in one aligned run of `run` consecutive row-major elements: what axis facts
 * (contiguity, constancy) about a value of layout l tell a thread. */
int cg_layout_group(const cg_layout *l, int run);
/* The slot of l holding, along tile dim axis, slot ka of the elements that slot js of
 * s = cg_layout_slice(l, axis) stands for. */
int cg_layout_slice_slot(const cg_layout *l, const cg_layout *s, int axis, int js, int ka);
/* True when a and b place every element alike. */
bool cg_layout_same(const cg_layout *a, const cg_layout *b);
/* The index along tile dim i and the row-major linear index of thread t's slot j
 * (evaluated on the host: for static checks and tests); *owner tells it is no replica. */
int cg_layout_coord_at(const cg_layout *l, int t, int j, int i, bool *owner);
int64_t cg_layout_elem_at(const cg_layout *l, int t, int j, bool *owner);
/* The same, as i32 values of this thread. */
LLVMValueRef cg_layout_coord(cg_ctx *c, const cg_layout *l, int j, int i);
LLVMValueRef cg_layout_index(cg_ctx *c, const cg_layout *l, int j);
/* An i1: this thread's slot j is no replica; NULL when that holds for every thread. Along
 * tile dim `skip` (-1: none) replicas are not looked for. */
LLVMValueRef cg_layout_owner(cg_ctx *c, const cg_layout *l, int j, int skip);
/* An i1: slot j's unwrapped index along tile dim i is in range; NULL when always. */
LLVMValueRef cg_layout_in_range(cg_ctx *c, const cg_layout *l, int j, int i);
/* This thread's coordinate along base dim d, and its lane's part alone. */
LLVMValueRef cg_thread_coord(cg_ctx *c, const cg_layout *l, int d);
LLVMValueRef cg_lane_coord(cg_ctx *c, const cg_layout *l, int d);
LLVMValueRef cg_warp_coord(cg_ctx *c, const cg_layout *l, int d);

/* ---- relayout.c ---- */
/* v's slots rearranged into layout to (v's shape), through registers when every thread
 * already holds what it needs, else through shared memory. */
cg_val cg_get_in(cg_ctx *c, const ir_value *v, const cg_layout *to);
/* The same for slots x held in layout from (same shape). */
cg_val cg_relayout(cg_ctx *c, cg_val x, const cg_layout *from, const cg_layout *to);
/* x (slots of layout l) where only each element's owner (cg_layout_owner) computed it —
 * an atomic's old values — with every replica given its owner's value: the owners store
 * by logical index, a barrier, every thread loads its slots. x itself when l has no
 * replicas. */
cg_val cg_from_owners(cg_ctx *c, cg_val x, const cg_layout *l);
/* Result of the shape op `op` (broadcast, expand_dims, reshape, trans, convert_layout). */
/* join: both operands through shared memory, each element stored at its place in the
 * result (2i + k), then read back in the result's layout. */
void cg_emit_join(cg_ctx *c, const ir_op *op);
/* gather: the source through shared memory, each result slot read at its index. */
void cg_emit_gather(cg_ctx *c, const ir_op *op);
void cg_emit_shape_op(cg_ctx *c, const ir_op *op);

/* ---- smem.c ---- */
/* The base (shared address space) of the scratch for the next use, which needs `bytes`;
 * the caller writes it, calls cg_barrier, then reads it. Consecutive uses alternate two
 * halves, so that one barrier per use is enough. */
LLVMValueRef cg_smem_take(cg_ctx *c, int bytes);
/* A buffer of `bytes` for the whole kernel (smem_alloc, mbar_alloc), at a 1024-byte
 * boundary of the shared area: its address. */
LLVMValueRef cg_smem_buffer(cg_ctx *c, int64_t bytes);
/* After a region (loop body, if arm) that used scratch: a barrier, so that the next use,
 * whichever half it takes, cannot overtake a reader. `before` is the use count at the
 * region's start. */
void cg_smem_region_end(cg_ctx *c, int before);
/* Before and after a kernel: the placeholders, then the buffer sized to what was used. */
void cg_smem_begin_kernel(cg_ctx *c);
void cg_smem_end_kernel(cg_ctx *c);
/* The address of element i (i32) of type t in scratch base. */
LLVMValueRef cg_smem_at(cg_ctx *c, LLVMValueRef base, LLVMTypeRef t, LLVMValueRef i);

/* ---- axis.c ---- */
/* Computes the axis facts of every value of f (values must be numbered). */
void cg_axis_analyze(cg_ctx *c, const ir_func *f);
cg_axis cg_axis_of(const cg_ctx *c, const ir_value *v);

/* ---- emit_kernel.c ---- */
/* Emits kernel f into c->mod (sets c->failed, reported, on an unsupported op). */
void cg_emit_kernel(cg_ctx *c, ir_func *f);
/* The slots of an emitted value. */
cg_val cg_get(cg_ctx *c, const ir_value *v);
/* Slot j of v (a scalar's only slot for any j). */
LLVMValueRef cg_slot(cg_ctx *c, const ir_value *v, int j);
/* Records the n slots of v. */
void cg_set(cg_ctx *c, const ir_value *v, LLVMValueRef *slots, int n);
/* Allocates n slots in the compilation arena. */
LLVMValueRef *cg_slots(cg_ctx *c, int n);
/* Emits the ops of blk up to its terminator, which it returns (NULL if none). */
const ir_op *cg_emit_block(cg_ctx *c, const ir_block *blk);
/* Appends a new basic block to the current function. */
LLVMBasicBlockRef cg_block(cg_ctx *c, const char *name);
/* Calls the intrinsic `name` overloaded on the given types. */
LLVMValueRef cg_intrinsic(cg_ctx *c, const char *name, LLVMTypeRef *over, int nover,
                          LLVMValueRef *args, int nargs);
/* Calls (declaring if needed) the external function name: ret(params). */
LLVMValueRef cg_call(cg_ctx *c, const char *name, LLVMTypeRef ret, LLVMValueRef *args,
                     int nargs);
/* A __syncthreads(). */
void cg_barrier(cg_ctx *c);
/* x as stored in shared memory (i1 as a byte) and back. */
LLVMValueRef cg_to_smem(cg_ctx *c, LLVMValueRef x);
LLVMValueRef cg_from_smem(cg_ctx *c, LLVMValueRef x, LLVMTypeRef reg);

/* ---- emitters by concern; each returns after setting the op's results ---- */
void cg_emit_value_op(cg_ctx *c, const ir_op *op);       /* emit_values.c */
void cg_emit_elementwise(cg_ctx *c, const ir_op *op);    /* emit_elementwise.c */
void cg_emit_memory(cg_ctx *c, const ir_op *op);         /* emit_memory.c */
void cg_emit_control(cg_ctx *c, const ir_op *op);        /* emit_control.c */
void cg_emit_reduce(cg_ctx *c, const ir_op *op);         /* emit_reduce.c: reduce, argreduce, warp_any */
void cg_emit_scan(cg_ctx *c, const ir_op *op);           /* emit_scan.c */
void cg_emit_dot(cg_ctx *c, const ir_op *op);            /* emit_dot.c: mma.sync */
/* The value of x held by lane (this lane ^ lane_xor), for any register type. */
LLVMValueRef cg_shfl_xor(cg_ctx *c, LLVMValueRef x, int lane_xor);
/* Converts one scalar x of dtype from to dtype to (the language's `as`). */
LLVMValueRef cg_convert(cg_ctx *c, LLVMValueRef x, tk_dtype from, tk_dtype to);
/* fp8.c: the f32 x as an fp8 byte of dtype dt (an i8: nearest even, saturating, NaN 0x7f),
 * and the fp8 byte b of dtype dt as an f16 (exact; a NaN is 0x7fff). PTX's cvt where the
 * target has it, the same bits from integer ops where not (sm_80). */
LLVMValueRef cg_fp8_from_f32(cg_ctx *c, tk_dtype dt, LLVMValueRef x);
LLVMValueRef cg_fp8_to_f16(cg_ctx *c, tk_dtype dt, LLVMValueRef b);
/* Combines two scalars of dtype dt as reduction kind k (also used by MIN/MAX). */
LLVMValueRef cg_combine(cg_ctx *c, ir_reduce_kind k, tk_dtype dt, LLVMValueRef x,
                        LLVMValueRef y);

/* ---- inline_ptx.c: the PTX without LLVM intrinsics, each instruction kind once ---- */
/* A sideeffect inline-asm call of text with constraints cons (ret NULL: void). */
LLVMValueRef cg_asm(cg_ctx *c, LLVMTypeRef ret, const char *text, const char *cons,
                    LLVMValueRef *args, int nargs);
/* The same for a pure computation (no side effect, no memory), which LLVM may merge, move
 * or drop like the instruction it is. */
LLVMValueRef cg_asm_pure(cg_ctx *c, LLVMTypeRef ret, const char *text, const char *cons,
                         LLVMValueRef *args, int nargs);
/* x / y by div.full.f32: within 2 ulp of the quotient over the whole f32 range. */
LLVMValueRef cg_ptx_div_full(cg_ctx *c, LLVMValueRef x, LLVMValueRef y);
/* Rewrites what LLVM 19's NVPTX back end miscompiles in the optimized module (see
 * llvm_fixup.c); cg_optimize calls it last. */
void cg_llvm_fixup(cg_ctx *c);
/* cvt.rz.f32 of x (a 32- or 64-bit integer of dtype from, or an f64): rounded toward zero,
 * which LLVM has no instruction for (it folds llvm.nvvm.i2f.rz into a sitofp). */
LLVMValueRef cg_ptx_cvt_rz_f32(cg_ctx *c, LLVMValueRef x, tk_dtype from);
/* cvt.f64.f32 of x: exact, and opaque to LLVM's load folding. */
LLVMValueRef cg_ptx_cvt_f64_f32(cg_ctx *c, LLVMValueRef x);
/* The f32 values hi and lo rounded to the half dtype dt (f16 or bf16) by one
 * cvt.rn.{f16,bf16}x2.f32, packed in an i32: lo in the low half. */
LLVMValueRef cg_ptx_cvt_rn_x2(cg_ctx *c, tk_dtype dt, LLVMValueRef hi, LLVMValueRef lo);
/* The f32 x rounded to the fp8 dtype dt (nearest even, saturating; NaN gives 0x7f) by
 * cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32, as an i8. sm_90 and later (TG_FP8_CVT). */
LLVMValueRef cg_ptx_cvt_f8_f32(cg_ctx *c, tk_dtype dt, LLVMValueRef x);
/* The fp8 byte b (an i8) of dtype dt as an f16 (exact) by cvt.rn.f16x2.{e4m3x2,e5m2x2};
 * a NaN gives 0x7fff. sm_90 and later. */
LLVMValueRef cg_ptx_cvt_f16_f8(cg_ctx *c, tk_dtype dt, LLVMValueRef b);
/* The 32-bit .shared address of the shared pointer p. */
LLVMValueRef cg_shared_addr(cg_ctx *c, LLVMValueRef p);
void cg_ptx_mbar_init_fence(cg_ctx *c);
/* An i32, nonzero when the barrier at shared address bar completed the phase of parity. */
LLVMValueRef cg_ptx_mbar_try_wait(cg_ctx *c, LLVMValueRef bar, LLVMValueRef parity);
/* An arrive on the barrier at shared address bar that also expects `bytes` more bytes of
 * asynchronous copies (TMA, st.async) in the current phase. */
void cg_ptx_mbar_expect(cg_ctx *c, LLVMValueRef bar, int bytes);
/* try_wait with acquire at cluster scope: what peers' st.async wrote (its completion on
 * this barrier releases at cluster scope) is visible once the phase completes. */
LLVMValueRef cg_ptx_mbar_try_wait_cluster(cg_ctx *c, LLVMValueRef bar, LLVMValueRef parity);
/* The shared::cluster address of the .shared address addr in the CTA of the given rank. */
LLVMValueRef cg_ptx_mapa_shared(cg_ctx *c, LLVMValueRef addr, LLVMValueRef rank);
/* Stores bits (an i32 or i64) at the shared::cluster address addr asynchronously
 * (st.async, PTX 8.1): the store completes its bytes on the barrier at shared::cluster
 * address bar, with release at cluster scope, and needs no fence of its own. */
void cg_ptx_st_async(cg_ctx *c, LLVMValueRef addr, LLVMValueRef bits, LLVMValueRef bar);
/* A TMA box copy of map (a generic pointer to the kernel's tensor-map argument) at the
 * coordinates (innermost first) into shared address dst, completing on barrier bar. */
void cg_ptx_tma_load(cg_ctx *c, int rank, LLVMValueRef dst, LLVMValueRef map, LLVMValueRef bar,
                     const LLVMValueRef *inner_first);
/* A TMA box copy out of shared address src to map at the coordinates (innermost first),
 * in the issuing thread's current bulk group; the group's commit and its wait (for the
 * reads of shared memory only: the buffer may then be written again). */
void cg_ptx_tma_store(cg_ctx *c, int rank, LLVMValueRef src, LLVMValueRef map, const LLVMValueRef *inner_first);
void cg_ptx_bulk_commit(cg_ctx *c);
void cg_ptx_bulk_wait(cg_ctx *c, int pending);
void cg_ptx_fence_async(cg_ctx *c);
/* fence.acq_rel.gpu: this thread's earlier memory accesses before its later ones, at gpu
 * scope (the release and acquire halves of an ordered atomic around a relaxed atom). */
void cg_ptx_fence_gpu(cg_ctx *c);
/* bar.arrive on named barrier id (an i32) of `threads` threads: counts this warp without
 * waiting (LLVM 19 has barrier.sync.cnt but no arrive). */
void cg_ptx_bar_arrive(cg_ctx *c, LLVMValueRef id, int threads);
void cg_ptx_setmaxnreg(cg_ctx *c, bool inc, int regs);
/* griddepcontrol (sm_90): wait for the grids this one depends on (a programmatic dependent
 * launch) to complete with their memory visible; let the grids that depend on this one be
 * scheduled (once every program of it has done so or exited). */
void cg_ptx_griddep_wait(cg_ctx *c);
void cg_ptx_griddep_launch_dependents(cg_ctx *c);
/* wgmma.fence, with the n registers the next products read passing through it
 * (rewritten in regs): nothing that defines them can move after it. */
void cg_ptx_wgmma_fence(cg_ctx *c, LLVMValueRef *regs, int n);
void cg_ptx_wgmma_commit(cg_ctx *c);
/* wgmma.wait_group pending, with the n registers passing through it (rewritten in regs). */
void cg_ptx_wgmma_wait(cg_ctx *c, int pending, LLVMValueRef *regs, int n);
/* One wgmma instruction's form: m64 n k, "f32.f16.f16"-style types, which immediates it
 * takes. */
typedef struct {
  int n, k;
  const char *types;
  bool imm_scale, imm_trans;
} cg_wgmma_form;
/* One wgmma.mma_async of the form on the n accumulator registers (in the instruction's
 * order; rewritten in acc; added to the product when `add`, else ignored) with b's matrix
 * descriptor and a's: a descriptor, or (a_regs not NULL, desc_a unused) the four b32
 * registers of its A fragment. */
void cg_ptx_wgmma(cg_ctx *c, const cg_wgmma_form *form, int trans_a, int trans_b, bool add, LLVMValueRef *acc,
                  int n, LLVMValueRef desc_a, const LLVMValueRef *a_regs, LLVMValueRef desc_b);

/* ---- emit_async.c ---- */
/* The shared address of slot `slot` (i32) of buffer value buf. */
LLVMValueRef cg_slot_base(cg_ctx *c, const ir_value *buf, LLVMValueRef slot);
/* The byte offset (i32) in a slot of buffer type buf of the element at idx (per slot dim),
 * by its #shared layout (docs/ir.md). */
LLVMValueRef cg_slot_offset(cg_ctx *c, const ir_type *buf, const LLVMValueRef *idx);
/* `if (cond) {`: returns the join block; cg_if_end closes it (the builder ends there). */
LLVMBasicBlockRef cg_if_begin(cg_ctx *c, LLVMValueRef cond);
void cg_if_end(cg_ctx *c, LLVMBasicBlockRef join);
void cg_emit_async(cg_ctx *c, const ir_op *op); /* the GPU level's memory and barrier ops */
void cg_emit_wgmma(cg_ctx *c, const ir_op *op); /* emit_wgmma.c: wgmma, commit, wait */
void cg_emit_warp_spec(cg_ctx *c, const ir_op *op); /* emit_warpspec.c: warp_spec */

/* ---- emit_cluster.c: a program run as a cluster of CTAs (ir_func.cluster) ---- */
/* cluster_rank and cluster_reduce (identities when the kernel has no cluster). */
void cg_emit_cluster(cg_ctx *c, const ir_op *op);
/* At the kernel's entry and before its return: the barrier phase every cluster_reduce
 * closes and reopens (nothing without a cluster). */
void cg_cluster_begin(cg_ctx *c);
void cg_cluster_end(cg_ctx *c);
/* ptx with `.explicitcluster` and `.reqnctapercluster C, 1, 1` in the entry of each kernel
 * of m's funcs [lo, hi) that has a cluster, appended to out. */
void cg_ptx_cluster_dims(su_buf *out, const char *ptx, const ir_module *m, int lo, int hi);

/* ---- abi.c ---- */
/* Appends kernel f's ".tk.abi"/".tk.tmap" lines to c->shared_note. */
void cg_abi_note(cg_ctx *c, const ir_func *f, const cg_abi *abi);
/* tensor_map (its hidden argument), grid_size (the launched grid), scratch (the scratch buffer)
 * and workspace (the workspace buffer). */
void cg_emit_abi_value(cg_ctx *c, const ir_op *op);
/* mma (emit_dot.c): mma.sync with operands read from shared slots. */
void cg_emit_mma(cg_ctx *c, const ir_op *op);

/* ---- emit_memory.c ---- */
/* The vector width of an access through pointer tile ptr (mask: NULL or its mask) under
 * layout l for elements of `bytes`: adjacent, contiguous, aligned, uniformly masked slots. */
int cg_access_width(cg_ctx *c, const ir_value *ptr, const ir_value *mask, const cg_layout *l, int bytes);

/* ---- math.c ---- */
/* The float math op opc (exp, sin, sqrt, pow, copysign, fdiv, ...) on one f32 or f64
 * element of each operand a[0..], with the accuracy codegen.h promises (accurate: the op's
 * attr, ir_op_has_accurate); NULL when opc is no math op. */
LLVMValueRef cg_math(cg_ctx *c, ir_opcode opc, bool accurate, tk_dtype dt, LLVMValueRef *a);
/* erfc op on one element x of dtype dt (f32 or f64), with its folded factors (in, out:
 * docs/ir.md) and its accuracy flag: the fast f32 lowering takes them into its constants. */
LLVMValueRef cg_erfc(cg_ctx *c, const ir_op *op, tk_dtype dt, LLVMValueRef x);

/* f32 2^x with results below 2^-126 flushed to +0 (`exp2 ftz`, docs/ir.md): one ex2.ftz,
 * where the subnormal-keeping ex2 costs a compare and two multiplies around it. */
LLVMValueRef cg_exp2_ftz(cg_ctx *c, LLVMValueRef x);
/* The integer op opc (umulhi, cdiv) on one element of dtype dt of each operand a[0..];
 * NULL when opc is none of these. */
LLVMValueRef cg_int_math(cg_ctx *c, ir_opcode opc, tk_dtype dt, LLVMValueRef *a);

/* ---- target.c ---- */
/* False (reported to d) when arch is no GPU architecture tk knows. */
bool cg_check_arch(su_diags *d, const char *arch);
/* A new target machine for arch, which cg_check_arch accepted; safe on any thread. */
LLVMTargetMachineRef cg_target_machine(const char *arch, int opt_level);
/* Links the libdevice routines c->mod calls (__nv_*), and only those and what they call,
 * then internalizes every non-kernel; false (reported) when the file cannot be read,
 * parsed or linked. */
bool cg_link_libdevice(cg_ctx *c, const cg_options *o);
/* Runs the O0..O3 pipeline. */
void cg_optimize(cg_ctx *c, LLVMTargetMachineRef tm, int opt_level);
/* Appends the PTX of c->mod, NUL-terminated. */
void cg_emit_ptx(cg_ctx *c, LLVMTargetMachineRef tm, su_buf *out);
/* Appends the len bytes of LLVM's PTX at ptx to out with ptxas's miscompiled forms
 * rewritten (ptx_fixup.c: neg.s16 / abs.s16 of -32768, negations into VIMNMX3, selp.f32
 * of -0.0, unsigned conversions of a sign-extended byte). */
void cg_ptx_fixup(su_buf *out, const char *ptx, size_t len);

/* ---- codegen.c, parallel.c: compiling kernels apart ----
 * A unit is one LLVM compilation (own context, module, target machine) of kernels
 * [lo, hi) of m. cg_emit compiles a module of several kernels to PTX as one unit per
 * kernel, on several threads, then merges the PTX texts. Hence every emitter must treat
 * the IR module as read-only (its arena and type tables are shared between threads):
 * write only the kernel's own values (their ids) and the cg_ctx. */
typedef struct {
  const ir_module *m;
  const cg_options *o;
  cg_format format;
  su_source *src;       /* module->source_name, for diagnostics */
  int lo, hi;
  bool unique_names;    /* the PTX goes into a merge: see cg_ptx_unique_names */
  su_diags *diags;      /* this unit's own when compiled on a thread */
  su_buf text;          /* out: PTX or LLVM IR, NUL-terminated */
  su_buf shared_note;   /* out: the ".tk.shared" lines of its kernels */
  bool ok;              /* out */
} cg_unit;

/* Compiles u (codegen.c); thread-safe given distinct units of distinct kernels. */
void cg_compile_unit(cg_unit *u);
/* Compiles the n units, on up to min(n, cores, 8) threads (the caller's among them),
 * then reports their diagnostics to d in unit order, an error repeated by several units
 * (e.g. a missing libdevice) once. Each unit's diags must be its own. */
void cg_compile_units(cg_unit *units, int n, su_diags *d);

/* ---- ptx_merge.c ---- */
/* Renames every module-local symbol of mod (libdevice routines and tables the optimizer
 * kept), appending "$kernel", so that PTX of per-kernel modules can be merged: '$' is in
 * no tk or libdevice name, hence no two kernels' symbols collide. */
void cg_ptx_unique_names(LLVMModuleRef mod, const char *kernel);
/* Appends one PTX module made of the n PTX texts (same target, as cg_emit_ptx made
 * them): the first header, then every body in order, each `.extern` declaration once,
 * NVPTX's call-sequence comments renumbered so that the text depends on the input alone
 * (for n = 1 too: NVPTX numbers them process-wide). */
void cg_ptx_merge(const char *const *ptx, int n, su_buf *out);

#endif
