/* Shared-memory scratch: reductions across warps, layout conversions and scans exchange
 * values through one buffer per kernel. Its size is known only once the kernel is
 * emitted, so uses address it through two placeholders (the base, the offset of the second
 * half) replaced at the end: by a static array when the kernel needs at most 48 KB (no
 * launch attribute needed), else by the module's dynamic buffer `tk_dyn_smem`, whose size
 * the launcher must pass (the ".tk.shared" lines after the PTX, read by
 * cg_ptx_shared_bytes).
 *
 * Why two halves: a use writes, waits at one barrier, then reads. The next use writes the
 * other half, so it cannot clobber values a slow thread is still reading; the use after
 * that comes back to the first half, but only after everyone passed the barrier in
 * between, hence after the slow reads. Control flow breaks the alternation (a loop body
 * with one use meets itself), so regions that used scratch end with a barrier. */
#include "cg.h"

#include <stdlib.h>
#include <string.h>

enum { STATIC_LIMIT = 48 * 1024 };

static LLVMTypeRef smem_ptr(cg_ctx *c) { return LLVMPointerTypeInContext(c->llc, CG_SHARED_AS); }

/* A call to a body-less function standing for a value fixed later. */
static LLVMValueRef placeholder(cg_ctx *c, const char *name, LLVMTypeRef t) {
  LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
  if (!fn) fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(t, NULL, 0, false));
  return LLVMBuildCall2(c->b, LLVMGlobalGetValueType(fn), fn, NULL, 0, "");
}

void cg_smem_begin_kernel(cg_ctx *c) {
  c->smem_base = placeholder(c, "tk.smem.base", smem_ptr(c));
  c->smem_half = placeholder(c, "tk.smem.half", LLVMInt32TypeInContext(c->llc));
  c->smem_need = 0;
  c->smem_uses = 0;
}

LLVMValueRef cg_smem_take(cg_ctx *c, int bytes) {
  bytes = (bytes + CG_VEC_BYTES - 1) / CG_VEC_BYTES * CG_VEC_BYTES;
  if (bytes > c->smem_need) c->smem_need = bytes;
  if (c->smem_uses++ % 2 == 0) return c->smem_base;
  return LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->llc), c->smem_base, &c->smem_half,
                               1, "smem.hi");
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

void cg_smem_end_kernel(cg_ctx *c) {
  int total = c->smem_uses > 1 ? 2 * c->smem_need : c->smem_need;
  LLVMValueRef buf;
  if (total == 0) {
    buf = LLVMConstNull(smem_ptr(c));
  } else if (total <= STATIC_LIMIT) {
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
  drop(c->smem_base, buf);
  drop(c->smem_half, cg_i32(c, c->smem_need));
  su_buf_printf(&c->shared_note, "// .tk.shared %s %d\n", c->f->name,
                total > STATIC_LIMIT ? total : 0);
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
