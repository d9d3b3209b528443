/* The NVPTX target: target machine from the arch (its row of target/targets.def),
 * libdevice linking, the optimization pipeline, and PTX emission. */
#include "cg.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/ErrorHandling.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char TRIPLE[] = "nvptx64-nvidia-cuda";

/* LLVM's target registry is process-wide; registering once, and the fatal error handler,
 * are the only global state. */
static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;

/* LLVM's report_fatal_error ("Symbol name with unsupported characters", a selection
 * failure) would exit the process. Through su_fatal it unwinds to the compiling thread's
 * trap (codegen.c: the unit fails with the message); a thread with no trap prints the
 * message and aborts, as before. The handler is the process's (LLVM has one), so another
 * user of this libLLVM in the process gets the same: print and abort. */
static void on_llvm_fatal(const char *reason) {
  su_fatal("LLVM error: %s", reason);
}

static void init_nvptx(void) {
  LLVMInstallFatalErrorHandler(on_llvm_fatal);
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

static su_loc no_loc(void) { return (su_loc){0}; }

bool cg_check_arch(su_diags *d, const char *arch) {
  if (tg_find(arch)) return true;
  su_buf names = {0};
  tg_names(&names, ", ");
  su_error(d, no_loc(), "unknown GPU architecture '%s'", arch);
  su_note(d, no_loc(), "expected one of %s", su_buf_str(&names));
  su_buf_free(&names);
  return false;
}

LLVMTargetMachineRef cg_target_machine(const char *arch, int opt_level) {
  pthread_once(&nvptx_once, init_nvptx);
  LLVMTargetRef t;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(TRIPLE, &t, &err)) su_fatal("NVPTX target missing: %s", err);
  /* O3 keeps the back end at its default level: at the aggressive one NVPTX reruns GVN
   * twice after the O3 pipeline has already run it, which doubled the back end's time on
   * large kernels for no change in the PTX of any sample. */
  LLVMCodeGenOptLevel lv = opt_level <= 0   ? LLVMCodeGenLevelNone
                           : opt_level == 1 ? LLVMCodeGenLevelLess
                                            : LLVMCodeGenLevelDefault;
  const tg_arch *row = tg_find(arch);
  SU_ASSERT(row); /* cg_check_arch ran first */
  char features[16];
  snprintf(features, sizeof features, "+ptx%d", row->ptx);
  return LLVMCreateTargetMachine(t, TRIPLE, arch, features, lv, LLVMRelocDefault,
                                 LLVMCodeModelDefault);
}

void cg_libdevice_path(const cg_options *o, su_buf *out) {
  if (o && o->libdevice) {
    su_buf_puts(out, o->libdevice);
    return;
  }
  const char *env = getenv("TK_LIBDEVICE");
  if (env && *env) {
    su_buf_puts(out, env);
    return;
  }
  const char *cuda = getenv("CUDA_HOME");
  su_buf_printf(out, "%s/nvvm/libdevice/libdevice.10.bc", cuda && *cuda ? cuda : "/usr/local/cuda");
}

static bool uses_libdevice(LLVMModuleRef m) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    size_t n;
    const char *name = LLVMGetValueName2(f, &n);
    if (LLVMIsDeclaration(f) && n > 5 && !strncmp(name, "__nv_", 5)) return true;
  }
  return false;
}

/* LLVM reports bad bitcode and failed links to the context's diagnostic handler, whose
 * default prints and exits the process; this one keeps the first error to report it. */
static void keep_error(LLVMDiagnosticInfoRef di, void *why) {
  su_buf *msg = why;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || msg->len) return;
  char *text = LLVMGetDiagInfoDescription(di);
  su_buf_puts(msg, text);
  LLVMDisposeMessage(text);
}

/* Reads libdevice lazily: only its symbol table and function headers are parsed now; a
 * body is materialized when the linker copies it. Parsing all ~350 bodies, then
 * optimizing them, cost more than the rest of a compilation together. */
static LLVMModuleRef read_libdevice(cg_ctx *c, const char *path, su_buf *why) {
  LLVMMemoryBufferRef buf;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
    su_error(c->diags, no_loc(), "cannot read libdevice '%s': %s", path, msg);
    su_note(c->diags, no_loc(), "math functions need it: set TK_LIBDEVICE or CUDA_HOME");
    LLVMDisposeMessage(msg);
    return NULL;
  }
  LLVMModuleRef lib = NULL;
  /* The module owns buf from here on, but only when reading succeeded. */
  if (LLVMGetBitcodeModuleInContext2(c->llc, buf, &lib)) {
    su_error(c->diags, no_loc(), "'%s' is not a valid libdevice bitcode file: %s", path,
             why->len ? su_buf_str(why) : "unreadable");
    LLVMDisposeMemoryBuffer(buf);
    return NULL;
  }
  /* libdevice says "nvptx64-nvidia-gpulibs"; adopting ours keeps the linker quiet. */
  LLVMSetTarget(lib, LLVMGetTarget(c->mod));
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(c->mod));
  return lib;
}

/* The linker copies every external definition of its source, but a linkonce_odr one only
 * when something it already copies refers to it. Marking libdevice's functions so makes
 * the link pull exactly the kernels' math functions and what they call, transitively. Its
 * data (tables of constants) is internal already, so pulled the same way. */
static void link_on_demand(LLVMModuleRef lib) {
  for (LLVMValueRef f = LLVMGetFirstFunction(lib); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMExternalLinkage)
      LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
}

/* Links the libdevice at path into c->mod; false (reported) when it is unreadable,
 * not bitcode, or its bodies do not link. */
static bool link_file(cg_ctx *c, const char *path) {
  su_buf why = {0};
  LLVMDiagnosticHandler prev = LLVMContextGetDiagnosticHandler(c->llc);
  void *prev_ctx = LLVMContextGetDiagnosticContext(c->llc);
  LLVMContextSetDiagnosticHandler(c->llc, keep_error, &why);
  LLVMModuleRef lib = read_libdevice(c, path, &why);
  bool ok = lib != NULL;
  if (lib) { /* the link consumes lib, success or not */
    link_on_demand(lib);
    ok = !LLVMLinkModules2(c->mod, lib);
    if (!ok)
      su_error(c->diags, no_loc(), "cannot link libdevice '%s': %s", path,
               why.len ? su_buf_str(&why) : "unknown error");
  }
  LLVMContextSetDiagnosticHandler(c->llc, prev, prev_ctx);
  su_buf_free(&why);
  return ok;
}

bool cg_link_libdevice(cg_ctx *c, const cg_options *o) {
  if (!uses_libdevice(c->mod)) return true;
  su_buf path = {0};
  cg_libdevice_path(o, &path);
  bool ok = link_file(c, su_buf_str(&path));
  su_buf_free(&path);
  if (!ok) return false;
  /* Only the kernels stay visible, so the optimizer may inline and drop the rest; a
   * blind internalize pass would hide the kernels too. */
  for (LLVMValueRef f = LLVMGetFirstFunction(c->mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && LLVMGetFunctionCallConv(f) != LLVMPTXKernelCallConv)
      LLVMSetLinkage(f, LLVMInternalLinkage);
  LLVMValueRef zero = LLVMConstInt(LLVMInt32TypeInContext(c->llc), 0, false);
  LLVMAddModuleFlag(c->mod, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                    LLVMValueAsMetadata(zero));
  return true;
}

void cg_optimize(cg_ctx *c, LLVMTargetMachineRef tm, int opt_level) {
  char pipeline[48];
  int lv = opt_level < 0 ? 0 : opt_level > 3 ? 3 : opt_level;
  /* globaldce also at O0: the unused part of libdevice must not reach the PTX. */
  snprintf(pipeline, sizeof pipeline, "default<O%d>,globaldce", lv);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(c->mod, pipeline, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (err) {
    char *msg = LLVMGetErrorMessage(err);
    su_fatal("LLVM pipeline failed: %s", msg);
  }
  cg_llvm_fixup(c);
}

void cg_emit_ptx(cg_ctx *c, LLVMTargetMachineRef tm, su_buf *out) {
  LLVMMemoryBufferRef mb;
  char *err = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, c->mod, LLVMAssemblyFile, &err, &mb))
    su_fatal("PTX emission failed: %s", err);
  cg_ptx_fixup(out, LLVMGetBufferStart(mb), LLVMGetBufferSize(mb));
  LLVMDisposeMemoryBuffer(mb);
}
