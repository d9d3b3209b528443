/* cg_emit: the whole GPU pipeline for one module — each kernel to LLVM IR, verify,
 * libdevice, optimize, then print the IR or emit PTX. A unit (one LLVM context) holds
 * every kernel, or, for the PTX of several kernels, one kernel each, the units compiled
 * on several threads and their PTX merged (parallel.c, ptx_merge.c). */
#include "cg.h"

#include <llvm-c/Analysis.h>
#include <stdlib.h>

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

/* A verifier failure is our bug, not the user's, but it must not take the host process
 * down: it is an error diagnostic saying so, with LLVM's explanation (and the IR, when
 * TK_DEBUG_CODEGEN is set, for whoever fixes it). */
static bool verify(cg_ctx *c) {
  char *msg = NULL;
  bool bad = LLVMVerifyModule(c->mod, LLVMReturnStatusAction, &msg);
  if (bad) {
    if (getenv("TK_DEBUG_CODEGEN")) {
      char *ir = LLVMPrintModuleToString(c->mod);
      fprintf(stderr, "%s\n", ir);
      LLVMDisposeMessage(ir);
    }
    su_loc loc = {c->src, UINT32_MAX, 0, 0, 0};
    su_error(c->diags, loc, "internal compiler error: the GPU back end produced invalid LLVM "
             "IR (please report it with the input): %s", msg ? msg : "");
  }
  LLVMDisposeMessage(msg);
  return !bad;
}

static int opt_level(const cg_options *o) { return o ? o->opt_level : TG_DEFAULT_OPT_LEVEL; }

static const char *arch_of(const cg_options *o) {
  return o && o->arch ? o->arch : TG_DEFAULT_ARCH;
}

static bool emit_module(cg_ctx *c, cg_unit *u, LLVMTargetMachineRef tm) {
  set_target(c, tm);
  for (int i = u->lo; i < u->hi; i++) {
    cg_emit_kernel(c, c->m->funcs[i]);
    c->failed_any |= c->failed;
    c->failed = false;
  }
  if (c->failed_any) return false;
  for (int i = 0; i < 2; i++) { /* smem.c's placeholders, all replaced by now */
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, i ? "tk.smem.half" : "tk.smem.base");
    if (fn) LLVMDeleteFunction(fn);
  }
  if (!verify(c)) return false;
  if (!cg_link_libdevice(c, u->o)) return false;
  cg_optimize(c, tm, opt_level(u->o));
  if (u->format == CG_PTX) {
    if (u->unique_names) {
      SU_ASSERT(u->hi - u->lo == 1);
      cg_ptx_unique_names(c->mod, c->m->funcs[u->lo]->name);
    }
    su_buf raw = {0};
    cg_emit_ptx(c, tm, &raw);
    cg_ptx_cluster_dims(&u->text, su_buf_str(&raw), c->m, u->lo, u->hi);
    su_buf_free(&raw);
  } else {
    char *ir = LLVMPrintModuleToString(c->mod);
    su_buf_puts(&u->text, ir);
    LLVMDisposeMessage(ir);
  }
  return true;
}

void cg_compile_unit(cg_unit *u) {
  cg_ctx c = {0};
  c.m = u->m;
  c.diags = u->diags;
  c.src = u->src;
  c.arch = arch_of(u->o);
  c.arena = su_arena_new();
  c.llc = LLVMContextCreate();
  LLVMTargetMachineRef tm = cg_target_machine(arch_of(u->o), opt_level(u->o));
  c.mod = LLVMModuleCreateWithNameInContext(u->src->name, c.llc);
  c.b = LLVMCreateBuilderInContext(c.llc);
  /* An internal error (an assertion, LLVM's report_fatal_error through target.c's
   * handler) fails this unit with a diagnostic instead of aborting the process; the LLVM
   * objects it was building may be half-changed, so they are leaked, not disposed. */
  su_trap trap;
  su_trap_push(&trap);
  if (setjmp(trap.jb)) {
    su_loc loc = {u->src, UINT32_MAX, 0, 0, 0};
    su_error(u->diags, loc, "internal compiler error in the GPU back end%s: %s",
             trap.oom ? " (out of memory)" : "", trap.msg);
    u->ok = false;
    su_arena_free(c.arena);
    return;
  }
  u->ok = emit_module(&c, u, tm);
  su_trap_clear(&trap);
  LLVMDisposeBuilder(c.b);
  LLVMDisposeModule(c.mod);
  LLVMDisposeTargetMachine(tm);
  LLVMContextDispose(c.llc);
  u->shared_note = c.shared_note; /* handed over, not freed here */
  su_arena_free(c.arena);
  su_buf_str(&u->text);
}

/* The PTX of every kernel compiled apart, at once, then merged. --emit=llvm stays one
 * module: it is for reading, not for speed. */
static bool emit_apart(const cg_unit *proto, su_buf *out, su_diags *d) {
  int n = proto->m->nfuncs;
  su_arena *scratch = su_arena_new();
  cg_unit *units = SU_NEW_ARRAY(scratch, cg_unit, n);
  const char **texts = SU_NEW_ARRAY(scratch, const char *, n);
  for (int i = 0; i < n; i++) {
    units[i] = *proto;
    units[i].lo = i;
    units[i].hi = i + 1;
    units[i].unique_names = true;
    units[i].diags = SU_NEW(scratch, su_diags);
    /* an arena each: the units report from their own threads */
    su_diags_init(units[i].diags, su_arena_new(), NULL);
  }
  cg_compile_units(units, n, d);
  bool ok = true;
  for (int i = 0; i < n; i++) {
    ok &= units[i].ok;
    texts[i] = su_buf_str(&units[i].text);
  }
  if (ok) {
    cg_ptx_merge(texts, n, out);
    for (int i = 0; i < n; i++) su_buf_puts(out, su_buf_str(&units[i].shared_note));
  }
  for (int i = 0; i < n; i++) {
    su_buf_free(&units[i].text);
    su_buf_free(&units[i].shared_note);
    su_arena_free(units[i].diags->arena);
  }
  su_arena_free(scratch);
  return ok;
}

bool cg_emit(const ir_module *m, const cg_options *o, cg_format f, su_buf *out, su_diags *d) {
  su_buf_str(out); /* NUL-terminated even when nothing is appended */
  if (!cg_check_arch(d, arch_of(o))) return false;
  const char *name = m->source_name ? m->source_name : "<ir>";
  /* Diagnostics outlive this call: their source lives with them. */
  cg_unit u = {.m = m, .o = o, .format = f, .src = su_source_new(d->arena, name, "", 0),
               .lo = 0, .hi = m->nfuncs, .diags = d};
  if (f == CG_PTX && m->nfuncs > 1) return emit_apart(&u, out, d);
  cg_compile_unit(&u);
  if (u.ok) {
    const char *text = su_buf_str(&u.text);
    if (f == CG_PTX)
      cg_ptx_merge(&text, 1, out);
    else
      su_buf_puts(out, text);
    su_buf_puts(out, su_buf_str(&u.shared_note));
  }
  su_buf_free(&u.text);
  su_buf_free(&u.shared_note);
  return u.ok;
}
