/*
 * cg.h — private to codegen/: the state every emitter shares, and the helpers the
 * emitters call across files. Every emitter takes the context first.
 */
#ifndef TK_CG_H
#define TK_CG_H

#include "codegen.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

enum { CG_GLOBAL_AS = 1, CG_SHARED_AS = 3, CG_WARP = 32, CG_VEC_BYTES = 16 };

/* How a value is spread over the CTA's threads. Scalars: numel = per = vec = 1, !tile.
 * Thread t's slot j holds element  (j / vec) * vec * threads + (t * vec) % min(numel,
 * vec * threads) + j % vec; threads with t * vec >= numel hold replicas. */
typedef struct {
  bool tile;
  int numel;   /* elements of the tile */
  int vec;     /* contiguous elements per thread in each repetition */
  int threads; /* 32 * num_warps */
  int per;     /* slots per thread */
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
  int vec_for_log2[32]; /* chosen vec per tile size 2^k (0: none chosen yet) */
  int nshared;      /* shared-memory scratch arrays made so far (for names) */
} cg_ctx;

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
/* Picks, for every 1-D tile size in f, the vector width its layout uses. */
void cg_layout_choose(cg_ctx *c, const ir_func *f);
/* The layout of a value of type t (a scalar gives the trivial layout). */
cg_layout cg_layout_of(cg_ctx *c, const ir_type *t);
/* The i32 index of the element in slot j of this thread. */
LLVMValueRef cg_layout_index(cg_ctx *c, const cg_layout *l, int j);
/* An i1 that is true when this thread is the owner (not a replica) of its elements;
 * NULL when every thread owns its elements. */
LLVMValueRef cg_layout_owner(cg_ctx *c, const cg_layout *l);

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
/* A fresh shared-memory array of n elements of type t (for cross-warp exchange). */
LLVMValueRef cg_shared_array(cg_ctx *c, LLVMTypeRef t, int n);

/* ---- emitters by concern; each returns after setting the op's results ---- */
void cg_emit_value_op(cg_ctx *c, const ir_op *op);       /* emit_values.c */
void cg_emit_elementwise(cg_ctx *c, const ir_op *op);    /* emit_elementwise.c */
void cg_emit_memory(cg_ctx *c, const ir_op *op);         /* emit_memory.c */
void cg_emit_control(cg_ctx *c, const ir_op *op);        /* emit_control.c */
void cg_emit_reduce(cg_ctx *c, const ir_op *op);         /* emit_reduce.c */
/* Converts one scalar x of dtype from to dtype to (the language's `as`). */
LLVMValueRef cg_convert(cg_ctx *c, LLVMValueRef x, tk_dtype from, tk_dtype to);
/* Combines two scalars of dtype dt as reduction kind k (also used by MIN/MAX). */
LLVMValueRef cg_combine(cg_ctx *c, ir_reduce_kind k, tk_dtype dt, LLVMValueRef x,
                        LLVMValueRef y);

/* ---- target.c ---- */
/* The target machine for arch (validated; reported and NULL when unknown). */
LLVMTargetMachineRef cg_target_machine(cg_ctx *c, const char *arch, int opt_level);
/* Links libdevice into c->mod when a __nv_ function is used; false (reported) when the
 * file cannot be read. */
bool cg_link_libdevice(cg_ctx *c, const cg_options *o);
/* Runs the O0..O3 pipeline. */
void cg_optimize(cg_ctx *c, LLVMTargetMachineRef tm, int opt_level);
/* Appends the PTX of c->mod, NUL-terminated. */
void cg_emit_ptx(cg_ctx *c, LLVMTargetMachineRef tm, su_buf *out);

#endif
