/* cg_emit: the whole GPU pipeline for one module — each kernel to LLVM IR, verify,
 * libdevice, optimize, then print the IR or emit PTX. One LLVM context per call. */
#include "cg.h"

#include <llvm-c/Analysis.h>

static const char DEFAULT_ARCH[] = "sm_90a";

static void set_target(cg_ctx *c, LLVMTargetMachineRef tm) {
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(c->mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *dl = LLVMCopyStringRepOfTargetData(td);
  LLVMSetDataLayout(c->mod, dl);
  LLVMDisposeMessage(dl);
  LLVMDisposeTargetData(td);
}

/* A verifier failure is our bug, not the user's: abort with LLVM's explanation. */
static void verify(cg_ctx *c) {
  char *msg = NULL;
  if (LLVMVerifyModule(c->mod, LLVMReturnStatusAction, &msg)) {
    char *ir = LLVMPrintModuleToString(c->mod);
    fprintf(stderr, "%s\n", ir);
    su_fatal("codegen produced invalid LLVM IR: %s", msg);
  }
  LLVMDisposeMessage(msg);
}

static bool emit_module(cg_ctx *c, const cg_options *o, LLVMTargetMachineRef tm, cg_format f,
                        su_buf *out) {
  set_target(c, tm);
  for (int i = 0; i < c->m->nfuncs; i++) {
    cg_emit_kernel(c, c->m->funcs[i]);
    c->failed_any |= c->failed;
    c->failed = false;
  }
  if (c->failed_any) return false;
  for (int i = 0; i < 2; i++) { /* smem.c's placeholders, all replaced by now */
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, i ? "tk.smem.half" : "tk.smem.base");
    if (fn) LLVMDeleteFunction(fn);
  }
  verify(c);
  if (!cg_link_libdevice(c, o)) return false;
  cg_optimize(c, tm, o ? o->opt_level : 3);
  if (f == CG_PTX) {
    cg_emit_ptx(c, tm, out);
    su_buf_puts(out, su_buf_str(&c->shared_note));
  } else {
    char *ir = LLVMPrintModuleToString(c->mod);
    su_buf_puts(out, ir);
    LLVMDisposeMessage(ir);
  }
  return true;
}

bool cg_emit(const ir_module *m, const cg_options *o, cg_format f, su_buf *out, su_diags *d) {
  cg_ctx c = {0};
  c.m = m;
  c.diags = d;
  c.arena = su_arena_new();
  const char *name = m->source_name ? m->source_name : "<ir>";
  /* Diagnostics outlive this call: their source lives with them. */
  c.src = su_source_new(d->arena, name, "", 0);
  c.llc = LLVMContextCreate();
  bool ok = false;
  LLVMTargetMachineRef tm = cg_target_machine(&c, o && o->arch ? o->arch : DEFAULT_ARCH,
                                              o ? o->opt_level : 3);
  if (tm) {
    c.mod = LLVMModuleCreateWithNameInContext(name, c.llc);
    c.b = LLVMCreateBuilderInContext(c.llc);
    ok = emit_module(&c, o, tm, f, out);
    LLVMDisposeBuilder(c.b);
    LLVMDisposeModule(c.mod);
    LLVMDisposeTargetMachine(tm);
  }
  LLVMContextDispose(c.llc);
  su_buf_free(&c.shared_note);
  su_arena_free(c.arena);
  su_buf_str(out); /* NUL-terminated even when nothing was appended */
  return ok;
}
