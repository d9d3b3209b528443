/* Shared memory of a kernel: first the buffers the IR allocates (smem_alloc, mbar_alloc:
 * each at a 1024-byte boundary, as the swizzled layouts need), then the scratch through
 * which reductions across warps, layout conversions and scans exchange values. Sizes are
 * known only once the kernel is emitted, so uses address the area through placeholders
 * (its base, the scratch's offset, the offset of the scratch's second half) replaced at
 * the end: by a static array when the kernel needs at most the target's static shared
 * memory (48 KB: no launch attribute needed), else by the module's dynamic buffer
 * `tk_dyn_smem`, whose size the launcher must pass (the ".tk.shared" lines after the PTX,
 * read by cg_ptx_shared_bytes). With buffers, the base is the first 1024-byte boundary of
 * the area, found at run time (no alignment of the dynamic buffer is promised beyond 16
 * bytes), and the area is 1024 bytes larger. A kernel needing more than a block may have
 * on the target (target/targets.def) is a located compile error here (over_limit), not a
 * launch failure.
 *
 * Why two halves: a use writes, waits at one barrier, then reads. The next use writes the
 * other half, so it cannot clobber values a slow thread is still reading; the use after
 * that comes back to the first half, but only after everyone passed the barrier in
 * between, hence after the slow reads. Control flow breaks the alternation (a loop body
 * with one use meets itself), so regions that used scratch end with a barrier. */
#include "cg.h"

#include <stdlib.h>
#include <string.h>

static LLVMTypeRef smem_ptr(cg_ctx *c) { return LLVMPointerTypeInContext(c->llc, CG_SHARED_AS); }

/* A call to a body-less function standing for a value fixed later. */
static LLVMValueRef placeholder(cg_ctx *c, const char *name, LLVMTypeRef t) {
  LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
  if (!fn) fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(t, NULL, 0, false));
  return LLVMBuildCall2(c->b, LLVMGlobalGetValueType(fn), fn, NULL, 0, "");
}

static LLVMValueRef byte_gep(cg_ctx *c, LLVMValueRef base, LLVMValueRef off, const char *name) {
  return LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->llc), base, &off, 1, name);
}

void cg_smem_begin_kernel(cg_ctx *c) {
  c->smem_root = placeholder(c, "tk.smem.root", smem_ptr(c));
  c->smem_scratch = placeholder(c, "tk.smem.scratch", LLVMInt32TypeInContext(c->llc));
  c->smem_half = placeholder(c, "tk.smem.half", LLVMInt32TypeInContext(c->llc));
  c->smem_base = byte_gep(c, c->smem_root, c->smem_scratch, "smem.scratch");
  c->smem_need = 0;
  c->smem_uses = 0;
  c->smem_bufs = 0;
  c->op = c->smem_need_op = c->smem_buf_op = NULL;
  c->smem_buf_max = 0;
}

LLVMValueRef cg_smem_take(cg_ctx *c, int bytes) {
  bytes = (bytes + CG_VEC_BYTES - 1) / CG_VEC_BYTES * CG_VEC_BYTES;
  if (bytes > c->smem_need) c->smem_need = bytes, c->smem_need_op = c->op;
  if (c->smem_uses++ % 2 == 0) return c->smem_base;
  return byte_gep(c, c->smem_base, c->smem_half, "smem.hi");
}

LLVMValueRef cg_smem_buffer(cg_ctx *c, int64_t bytes) {
  int64_t at = c->smem_bufs;
  if (bytes > c->smem_buf_max) c->smem_buf_max = bytes, c->smem_buf_op = c->op;
  c->smem_bufs += (bytes + IR_SMEM_ALIGN - 1) / IR_SMEM_ALIGN * IR_SMEM_ALIGN;
  if (c->smem_bufs > INT32_MAX / 2) c->smem_bufs = INT32_MAX / 2; /* the limit check reports it */
  return byte_gep(c, c->smem_root, cg_i32(c, at), "smem.buf");
}

void cg_smem_region_end(cg_ctx *c, int before) {
  if (c->smem_uses != before) cg_barrier(c);
}

LLVMValueRef cg_smem_at(cg_ctx *c, LLVMValueRef base, LLVMTypeRef t, LLVMValueRef i) {
  return LLVMBuildInBoundsGEP2(c->b, t, base, &i, 1, "");
}

static void drop(LLVMValueRef placeholder, LLVMValueRef by) {
  LLVMReplaceAllUsesWith(placeholder, by);
  LLVMInstructionEraseFromParent(placeholder);
}

/* The module's dynamic buffer: `.extern .shared .align 16 .b8 tk_dyn_smem[]`. */
static LLVMValueRef dynamic_buffer(cg_ctx *c) {
  LLVMValueRef g = LLVMGetNamedGlobal(c->mod, "tk_dyn_smem");
  if (g) return g;
  LLVMTypeRef at = LLVMArrayType2(LLVMInt8TypeInContext(c->llc), 0);
  g = LLVMAddGlobalInAddressSpace(c->mod, at, "tk_dyn_smem", CG_SHARED_AS);
  LLVMSetLinkage(g, LLVMExternalLinkage);
  LLVMSetAlignment(g, CG_VEC_BYTES);
  return g;
}

/* The first IR_SMEM_ALIGN boundary at or after buf (a shared pointer), computed in the
 * entry block. */
static LLVMValueRef align_up(cg_ctx *c, LLVMValueRef buf) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c->llc);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(c->fn);
  LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(entry));
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c->llc);
  LLVMValueRef a = LLVMBuildPtrToInt(b, buf, i32, "");
  LLVMValueRef pad = LLVMBuildAnd(b, LLVMBuildSub(b, LLVMConstInt(i32, 0, 0), a, ""),
                                  LLVMConstInt(i32, IR_SMEM_ALIGN - 1, 0), "");
  LLVMValueRef r = LLVMBuildInBoundsGEP2(b, LLVMInt8TypeInContext(c->llc), buf, &pad, 1, "smem.root");
  LLVMDisposeBuilder(b);
  return r;
}

/* A kernel needing more shared memory than a block may have on the target is a compile
 * error (the launch would fail), located at the op needing the largest part: the biggest
 * of the IR's buffers (a pipeline's ring: its slots times its stages) or the scratch's
 * largest use (a layout conversion, a dot's staging; twice over when the scratch's two
 * halves are in use). */
/* The first op of blk (at any depth) using v that has a location of its own: where a
 * buffer the pipeliner allocated at the kernel's top is filled (the load it stands for). */
static const ir_op *located_user(const cg_ctx *c, const ir_block *blk, const ir_value *v) {
  for (const ir_op *op = blk->first; op; op = op->next) {
    for (int i = 0; i < op->noperands; i++)
      if (op->operands[i] == v && op->loc.line && op->loc.line != c->f->loc.line) return op;
    for (int r = 0; r < op->nregions; r++) {
      const ir_op *u = located_user(c, op->regions[r], v);
      if (u) return u;
    }
  }
  return NULL;
}

static int smem_limit(const cg_ctx *c) { return tg_smem_program(c->arch, c->f->programs_per_sm); }

static void over_limit(cg_ctx *c, int total, int scratch) {
  bool buf = c->smem_buf_op && c->smem_buf_max >= scratch;
  const ir_op *op = buf ? c->smem_buf_op : c->smem_need_op;
  ir_loc at = op && op->loc.line ? op->loc : c->f->loc;
  const ir_op *user = buf && op->nresults ? located_user(c, c->f->body, op->results[0]) : NULL;
  if (user) at = user->loc;
  su_loc loc = {c->src, UINT32_MAX, 0, at.line, at.col};
  if (c->f->programs_per_sm > 1)
    su_error(c->diags, loc, "kernel '%s' needs %d bytes of shared memory; at programs_per_sm = %d, %s "
             "allows at most %d per program (target/targets.def)", c->f->name, total,
             c->f->programs_per_sm, c->arch, smem_limit(c));
  else
    su_error(c->diags, loc, "kernel '%s' needs %d bytes of shared memory; %s allows at most %d "
             "per block (target/targets.def)", c->f->name, total, c->arch, tg_smem_max(c->arch));
  if (op) {
    su_buf t = {0};
    const ir_type *ty = op->nresults ? op->results[0]->type
                        : op->noperands ? op->operands[op->noperands - 1]->type : NULL;
    if (ty) ir_type_print(&t, ty);
    char *lay = t.data ? strstr(t.data, ", #") : NULL; /* the shape is what the user wrote */
    if (lay) strcpy(lay, ">");
    bool twice = !buf && c->smem_uses > 1;
    if (buf)
      su_note(c->diags, loc, "%d bytes of it are the buffer %s filled here (one slot per stage)",
              (int)c->smem_buf_max, su_buf_str(&t));
    else
      su_note(c->diags, loc, "%d bytes of it are for this '%s'%s%s%s", c->smem_need,
              ir_op_info(op->opc)->name, ty ? " of " : "", ty ? su_buf_str(&t) : "",
              twice ? ", twice over (the scratch's two halves)" : "");
    su_buf_free(&t);
  }
  su_note(c->diags, loc, "smaller tiles or fewer stages need less");
  c->failed = true;
}

void cg_smem_end_kernel(cg_ctx *c) {
  int scratch = c->smem_uses > 1 ? 2 * c->smem_need : c->smem_need;
  int64_t total64 = c->smem_bufs ? c->smem_bufs + IR_SMEM_ALIGN + scratch : scratch;
  int total = total64 > INT32_MAX ? INT32_MAX : (int)total64;
  c->smem_total = total;
  int static_limit = tg_smem_static(c->arch);
  if (total > smem_limit(c)) over_limit(c, total, scratch);
  LLVMValueRef buf;
  if (total == 0) {
    buf = LLVMConstNull(smem_ptr(c));
  } else if (total <= static_limit) {
    char name[256];
    snprintf(name, sizeof name, "tk_smem_%s", c->f->name);
    LLVMTypeRef at = LLVMArrayType2(LLVMInt8TypeInContext(c->llc), (uint64_t)total);
    buf = LLVMAddGlobalInAddressSpace(c->mod, at, name, CG_SHARED_AS);
    LLVMSetInitializer(buf, LLVMGetUndef(at));
    LLVMSetLinkage(buf, LLVMInternalLinkage);
    LLVMSetAlignment(buf, CG_VEC_BYTES);
  } else {
    buf = dynamic_buffer(c);
  }
  if (c->smem_bufs) buf = align_up(c, buf);
  drop(c->smem_root, buf);
  drop(c->smem_scratch, cg_i32(c, (int64_t)c->smem_bufs));
  drop(c->smem_half, cg_i32(c, c->smem_need));
  su_buf_printf(&c->shared_note, "// .tk.shared %s %d\n", c->f->name,
                total > static_limit ? total : 0);
}

bool cg_ptx_shared_bytes(const char *ptx, const char *kernel, int *bytes) {
  static const char key[] = "// .tk.shared ";
  size_t n = strlen(kernel);
  for (const char *p = strstr(ptx, key); p; p = strstr(p + 1, key)) {
    const char *name = p + sizeof key - 1;
    if (strncmp(name, kernel, n) == 0 && name[n] == ' ') {
      *bytes = atoi(name + n + 1);
      return true;
    }
  }
  return false;
}
