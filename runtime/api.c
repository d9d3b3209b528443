/* The public API (include/tk.h): every entry point validates its arguments, turns each
 * failure into a status plus a message (rt_error), and hands validated work to the
 * context's backend. Nothing here knows how a backend runs a kernel. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../driver/driver.h"
#include "runtime.h"

/* ---- errors --------------------------------------------------------------------------- */

/* The message of the last failure that had no context to hold it (tk_context_create,
 * a NULL handle). Thread-local so two threads creating contexts do not mix messages;
 * fixed-size so nothing has to free it. */
static _Thread_local char no_context_error[1024];

tk_status rt_error(rt_context *ctx, tk_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (ctx) {
    ctx->err.len = 0;
    su_buf_vprintf(&ctx->err, fmt, ap);
  } else {
    vsnprintf(no_context_error, sizeof no_context_error, fmt, ap);
  }
  va_end(ap);
  return status;
}

/* ---- handles ------------------------------------------------------------------------ */

static rt_context *ctx_of(const tk_context *h) {
  return rt_handle_get((uint64_t)(uintptr_t)h, RT_H_CONTEXT);
}
static rt_module *module_of(const tk_module *h) {
  return rt_handle_get((uint64_t)(uintptr_t)h, RT_H_MODULE);
}
static rt_kernel *kernel_of(const tk_kernel *h) {
  return rt_handle_get((uint64_t)(uintptr_t)h, RT_H_KERNEL);
}

/* Why a handle was refused: NULL, or not (any longer) a live object. */
static const char *dead(const void *h) {
  return h ? "not a live handle (destroyed, or never one)" : "NULL";
}

/* var = the object behind handle h, or return TK_ERR_INVALID saying why not. */
#define GET(var, of, h, what)                                                      \
  var = of(h);                                                                     \
  do {                                                                             \
    if (!var) return rt_error(NULL, TK_ERR_INVALID, "%s is %s", (what), dead(h)); \
  } while (0)

const char *tk_last_error(const tk_context *h) {
  if (!h) return no_context_error;
  const rt_context *ctx = ctx_of(h);
  if (!ctx) return "tk_last_error: the context is not a live handle (destroyed, or never one)";
  return ctx->err.len ? ctx->err.data : "";
}

const char *tk_status_name(tk_status s) {
  static const char *const names[] = {
      "TK_OK", "TK_ERR_INVALID", "TK_ERR_IO", "TK_ERR_COMPILE", "TK_ERR_NOT_FOUND",
      "TK_ERR_ARGS", "TK_ERR_RUNTIME", "TK_ERR_NO_DEVICE", "TK_ERR_DRIVER", "TK_ERR_MEMORY",
      "TK_ERR_UNSUPPORTED",
  };
  return (unsigned)s < sizeof names / sizeof *names ? names[s] : "TK_ERR_UNKNOWN";
}

#define REQUIRE(ctx, cond, ...) \
  do { if (!(cond)) return rt_error((ctx), TK_ERR_INVALID, __VA_ARGS__); } while (0)

/* ---- contexts ------------------------------------------------------------------------- */

/* TK_INTERPRET=1 (any value but empty or "0") asks AUTO for the interpreter. */
static bool interpret_requested(void) {
  const char *v = getenv("TK_INTERPRET");
  return v && *v && strcmp(v, "0") != 0;
}

static tk_status start_backend(rt_context *ctx, tk_backend kind, int device) {
  ctx->kind = kind;
  ctx->device = device;
  ctx->be = &rt_interp_backend;
#ifdef TK_HAVE_CUDA_BACKEND
  if (kind == TK_BACKEND_CUDA) ctx->be = &rt_cuda_backend;
#else
  if (kind == TK_BACKEND_CUDA)
    return rt_error(ctx, TK_ERR_UNSUPPORTED, "this libtk was built without the CUDA backend");
#endif
  return ctx->be->init(ctx, device);
}

tk_status tk_context_create(tk_context **out, const tk_context_options *opts) {
  REQUIRE(NULL, out, "tk_context_create: out is NULL");
  *out = NULL;
  tk_backend kind = opts ? opts->backend : TK_BACKEND_AUTO;
  int device = opts ? opts->device : 0;
  REQUIRE(NULL, kind == TK_BACKEND_AUTO || kind == TK_BACKEND_CUDA || kind == TK_BACKEND_INTERP,
          "tk_context_create: unknown backend %d", (int)kind);
  REQUIRE(NULL, device >= 0, "tk_context_create: device %d is negative", device);
  rt_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return rt_error(NULL, TK_ERR_MEMORY, "tk_context_create: out of host memory");
  ctx->id = rt_handle_new(RT_H_CONTEXT, ctx);
  if (!ctx->id) {
    free(ctx);
    return rt_error(NULL, TK_ERR_MEMORY, "tk_context_create: out of handles");
  }
  tk_status s;
  if (kind != TK_BACKEND_AUTO) {
    s = start_backend(ctx, kind, device);
  } else if (interpret_requested()) {
    s = start_backend(ctx, TK_BACKEND_INTERP, device);
  } else {
    /* AUTO prefers the GPU, and falls back to the interpreter only when there is none
     * (no driver library, or a driver that reports no device): a driver that fails to
     * start, a bad ordinal or a device tk cannot compile for is an error worth seeing. */
#ifdef TK_HAVE_CUDA_BACKEND
    s = start_backend(ctx, TK_BACKEND_CUDA, device);
    if (s == TK_ERR_NO_DEVICE) s = start_backend(ctx, TK_BACKEND_INTERP, device);
#else
    s = start_backend(ctx, TK_BACKEND_INTERP, device);
#endif
  }
  if (s != TK_OK) {
    rt_error(NULL, s, "%s", su_buf_str(&ctx->err));
    rt_handle_release(ctx->id);
    su_buf_free(&ctx->err);
    free(ctx);
    return s;
  }
  ctx->err.len = 0;
  *out = (tk_context *)(uintptr_t)ctx->id;
  return TK_OK;
}

/* Ends m's handles (its own and its kernels'), then frees it. */
static void module_release(rt_module *m) {
  rt_handle_release(m->id);
  for (int i = 0; i < m->nkernels; i++) rt_handle_release(m->kernels[i].id);
  m->ctx->be->unload(m->ctx, m);
  su_arena_free(m->arena);
}

void tk_context_destroy(tk_context *h) {
  if (!h) return;
  rt_context *ctx = ctx_of(h);
  if (!ctx) {
    rt_error(NULL, TK_ERR_INVALID, "tk_context_destroy: the context is %s", dead(h));
    return;
  }
  rt_handle_release(ctx->id);
  for (rt_module *m = ctx->modules, *next; m; m = next) {
    next = m->next;
    module_release(m);
  }
  ctx->be->shutdown(ctx);
  su_buf_free(&ctx->err);
  free(ctx);
}

tk_backend tk_context_backend(const tk_context *h) {
  const rt_context *ctx = ctx_of(h);
  return ctx ? ctx->kind : TK_BACKEND_AUTO;
}

/* ---- memory --------------------------------------------------------------------------- */

tk_status tk_malloc(tk_context *h, tk_devptr *out, size_t bytes) {
  rt_context *GET(ctx, ctx_of, h, "tk_malloc: context");
  REQUIRE(ctx, out, "tk_malloc: out is NULL");
  *out = 0;
  REQUIRE(ctx, bytes > 0, "tk_malloc: cannot allocate 0 bytes");
  return ctx->be->malloc_(ctx, out, bytes);
}

tk_status tk_free(tk_context *h, tk_devptr p) {
  rt_context *GET(ctx, ctx_of, h, "tk_free: context");
  return p ? ctx->be->free_(ctx, p) : TK_OK;
}

tk_status tk_memcpy_htod(tk_context *h, tk_devptr dst, const void *src, size_t bytes) {
  rt_context *GET(ctx, ctx_of, h, "tk_memcpy_htod: context");
  if (bytes == 0) return TK_OK;
  REQUIRE(ctx, src, "tk_memcpy_htod: src is NULL");
  REQUIRE(ctx, dst, "tk_memcpy_htod: dst is the null device address");
  return ctx->be->htod(ctx, dst, src, bytes);
}

tk_status tk_memcpy_dtoh(tk_context *h, void *dst, tk_devptr src, size_t bytes) {
  rt_context *GET(ctx, ctx_of, h, "tk_memcpy_dtoh: context");
  if (bytes == 0) return TK_OK;
  REQUIRE(ctx, dst, "tk_memcpy_dtoh: dst is NULL");
  REQUIRE(ctx, src, "tk_memcpy_dtoh: src is the null device address");
  return ctx->be->dtoh(ctx, dst, src, bytes);
}

tk_status tk_synchronize(tk_context *h) {
  rt_context *GET(ctx, ctx_of, h, "tk_synchronize: context");
  return ctx->be->sync(ctx);
}

/* ---- compiling ------------------------------------------------------------------------ */

static rt_module *module_new(rt_context *ctx) {
  su_arena *a = su_arena_new();
  rt_module *m = SU_NEW(a, rt_module);
  m->ctx = ctx;
  m->arena = a;
  return m;
}

/* Adds m to ctx's modules and gives it its handle (*out); false (m released) when the
 * handle table is full. */
static tk_status module_link(rt_context *ctx, rt_module *m, tk_module **out) {
  m->id = rt_handle_new(RT_H_MODULE, m);
  if (!m->id) {
    module_release(m);
    return rt_error(ctx, TK_ERR_MEMORY, "out of handles");
  }
  m->next = ctx->modules;
  ctx->modules = m;
  *out = (tk_module *)(uintptr_t)m->id;
  return TK_OK;
}

/* The kernel table of a module, read off its IR: the signatures launches are checked
 * against. */
static void kernels_from_ir(rt_module *m) {
  const ir_module *ir = m->ir;
  m->nkernels = ir->nfuncs;
  m->kernels = SU_NEW_ARRAY(m->arena, rt_kernel, ir->nfuncs);
  for (int i = 0; i < ir->nfuncs; i++) {
    rt_kernel *k = &m->kernels[i];
    k->module = m;
    k->ir = ir->funcs[i];
    k->sig = ir_func_signature(m->arena, k->ir);
  }
}

/* Fills the driver's options from the API's; false after reporting a bad field. */
static bool driver_options(rt_context *ctx, su_arena *a, const tk_compile_options *opts,
                           drv_options *o) {
  drv_options_init(o);
  /* Compiled without a target: the interpreter runs that IR, and the JIT lowers and
   * generates each variant for the arch load_ir is given. */
  o->arch = NULL;
  /* The compile-time work budget (helper calls inlined, static_range iterations) is the
   * environment's: a host that compiles untrusted kernels may lower it, one that compiles
   * huge generated ones raise it, without a new field in tk_compile_options. */
  const char *budget = getenv("TK_COMPILE_BUDGET");
  if (budget && *budget) {
    char *end;
    long long v = strtoll(budget, &end, 10);
    if (*end || v <= 0) {
      rt_error(ctx, TK_ERR_INVALID, "TK_COMPILE_BUDGET='%s' is not a positive integer", budget);
      return false;
    }
    o->budget = v;
  }
  if (!opts) return true;
  if (opts->ndefines < 0 || (opts->ndefines > 0 && !opts->defines)) {
    rt_error(ctx, TK_ERR_INVALID, "compile options: %d defines but no array", opts->ndefines);
    return false;
  }
  if (opts->opt_level < 0 || opts->opt_level > 3) {
    rt_error(ctx, TK_ERR_INVALID, "compile options: opt_level %d is not in 0..3", opts->opt_level);
    return false;
  }
  if (opts->arch && !tg_find(opts->arch)) {
    su_buf names = {0};
    tg_names(&names, ", ");
    rt_error(ctx, TK_ERR_INVALID, "compile options: unknown arch '%s' (expected one of %s)",
             opts->arch, su_buf_str(&names));
    su_buf_free(&names);
    return false;
  }
  sema_define *defs = SU_NEW_ARRAY(a, sema_define, opts->ndefines);
  for (int i = 0; i < opts->ndefines; i++) {
    if (!opts->defines[i].name || !opts->defines[i].value) {
      rt_error(ctx, TK_ERR_INVALID, "compile options: define %d has a NULL name or value", i);
      return false;
    }
    defs[i] = (sema_define){opts->defines[i].name, opts->defines[i].value};
  }
  o->defines = defs;
  o->ndefines = opts->ndefines;
  if (opts->opt_level) o->opt_level = opts->opt_level;
  if (opts->dot_precision < TK_DOT_DEFAULT || opts->dot_precision > TK_DOT_TF32X3) {
    rt_error(ctx, TK_ERR_INVALID, "compile options: dot_precision %d is not a tk_dot_precision",
             (int)opts->dot_precision);
    return false;
  }
  static const int prec[] = {IR_DOT_TF32, IR_DOT_TF32, IR_DOT_IEEE, IR_DOT_TF32X3};
  o->dot_precision = prec[opts->dot_precision];
  o->accurate_math = opts->accurate_math != 0;
  o->fp_contract = opts->fp_contract != 0;
  o->no_fuse = opts->no_fuse != 0;
  if (opts->fuse_keep < TK_FUSE_KEEP_AUTO || opts->fuse_keep > TK_FUSE_KEEP_CLUSTER) {
    rt_error(ctx, TK_ERR_INVALID, "compile options: fuse_keep %d is not a tk_fuse_keep",
             (int)opts->fuse_keep);
    return false;
  }
  o->fuse_keep = (int)opts->fuse_keep; /* the same order as ir_keep */
  return true;
}

/* Reports every diagnostic of d, rendered, as a compile error. */
static tk_status compile_error(rt_context *ctx, const su_diags *d) {
  su_buf text = {0};
  su_diags_render(d, &text);
  while (text.len && text.data[text.len - 1] == '\n') text.data[--text.len] = 0;
  rt_error(ctx, TK_ERR_COMPILE, "%s", text.len ? text.data : "compilation failed");
  su_buf_free(&text);
  return TK_ERR_COMPILE;
}

tk_status tk_module_compile(tk_context *h, tk_module **out, const char *source, size_t len,
                            const char *name, const tk_compile_options *opts) {
  rt_context *GET(ctx, ctx_of, h, "tk_module_compile: context");
  REQUIRE(ctx, out, "tk_module_compile: out is NULL");
  *out = NULL;
  REQUIRE(ctx, source || len == 0, "tk_module_compile: source is NULL");
  rt_module *m = module_new(ctx);
  drv_options o;
  if (!driver_options(ctx, m->arena, opts, &o)) {
    su_arena_free(m->arena);
    return TK_ERR_INVALID;
  }
  su_source *src = su_source_new(m->arena, name ? name : "<source>", source ? source : "", len);
  su_diags d;
  su_diags_init(&d, m->arena, NULL);
  /* No internal error of the compiler (an assertion, memory running out) takes the host
   * process down: it unwinds to here and the module is thrown away. */
  su_trap trap;
  su_trap_push(&trap);
  if (setjmp(trap.jb)) {
    tk_status s = rt_error(ctx, trap.oom ? TK_ERR_MEMORY : TK_ERR_COMPILE,
                           "%s: internal compiler error%s: %s (the context is still usable)",
                           src->name, trap.oom ? " (out of memory)" : "", trap.msg);
    module_release(m);
    return s;
  }
  m->ir = drv_compile(m->arena, src, &o, &d);
  if (!m->ir) {
    su_trap_clear(&trap);
    tk_status s = compile_error(ctx, &d);
    su_arena_free(m->arena);
    return s;
  }
  kernels_from_ir(m);
  drv_options target = o;
  target.arch = opts && opts->arch ? opts->arch : ctx->arch;
  tk_status s = ctx->be->load_ir(ctx, m, opts, &target, src->text, src->len);
  su_trap_clear(&trap);
  if (s != TK_OK) {
    module_release(m);
    return s;
  }
  return module_link(ctx, m, out);
}

tk_status tk_module_compile_file(tk_context *h, tk_module **out, const char *path,
                                 const tk_compile_options *opts) {
  rt_context *GET(ctx, ctx_of, h, "tk_module_compile_file: context");
  REQUIRE(ctx, out, "tk_module_compile_file: out is NULL");
  *out = NULL;
  REQUIRE(ctx, path, "tk_module_compile_file: path is NULL");
  su_arena *a = su_arena_new();
  const char *why = NULL;
  su_source *src = su_source_read(a, path, &why);
  tk_status s = src ? tk_module_compile(h, out, src->text, src->len, path, opts)
                    : rt_error(ctx, TK_ERR_IO, "cannot read '%s': %s", path, why ? why : "error");
  su_arena_free(a);
  return s;
}

tk_status tk_module_load_ptx(tk_context *h, tk_module **out, const char *ptx, size_t len) {
  rt_context *GET(ctx, ctx_of, h, "tk_module_load_ptx: context");
  REQUIRE(ctx, out, "tk_module_load_ptx: out is NULL");
  *out = NULL;
  REQUIRE(ctx, ptx && len > 0, "tk_module_load_ptx: no PTX text");
  rt_module *m = module_new(ctx);
  tk_status s = ctx->be->load_ptx(ctx, m, ptx, len);
  if (s != TK_OK) {
    module_release(m);
    return s;
  }
  return module_link(ctx, m, out);
}

void tk_module_destroy(tk_module *h) {
  if (!h) return;
  rt_module *m = module_of(h);
  if (!m) {
    rt_error(NULL, TK_ERR_INVALID, "tk_module_destroy: the module is %s", dead(h));
    return;
  }
  for (rt_module **p = &m->ctx->modules; *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      break;
    }
  module_release(m);
}

/* The kernel's handle, made the first time it is asked for. */
static tk_status kernel_handle(rt_module *m, rt_kernel *k, tk_kernel **out) {
  if (!k->id) k->id = rt_handle_new(RT_H_KERNEL, k);
  if (!k->id) return rt_error(m->ctx, TK_ERR_MEMORY, "out of handles");
  *out = (tk_kernel *)(uintptr_t)k->id;
  return TK_OK;
}

tk_status tk_module_get_kernel(tk_module *h, const char *name, tk_kernel **out) {
  rt_module *GET(m, module_of, h, "tk_module_get_kernel: module");
  REQUIRE(m->ctx, name && out, "tk_module_get_kernel: %s is NULL", name ? "out" : "name");
  *out = NULL;
  for (int i = 0; i < m->nkernels; i++)
    if (strcmp(m->kernels[i].sig->name, name) == 0) return kernel_handle(m, &m->kernels[i], out);
  su_buf have = {0};
  for (int i = 0; i < m->nkernels; i++)
    su_buf_printf(&have, "%s'%s'", i ? ", " : "", m->kernels[i].sig->name);
  const char *mname = m->ir && m->ir->source_name ? m->ir->source_name : "PTX";
  tk_status s = rt_error(m->ctx, TK_ERR_NOT_FOUND, "no kernel '%s' in module '%s' (%s%s)", name,
                         mname, m->nkernels ? "it has " : "it has no kernels",
                         m->nkernels ? have.data : "");
  su_buf_free(&have);
  return s;
}

/* Parameter i of k, or NULL when there is no such parameter. */
static const ir_sig_param *param(const tk_kernel *h, int i) {
  const rt_kernel *k = kernel_of(h);
  return k && i >= 0 && i < k->sig->nparams ? &k->sig->params[i] : NULL;
}

int tk_kernel_num_params(const tk_kernel *h) {
  const rt_kernel *k = kernel_of(h);
  return k ? k->sig->nparams : -1;
}

tk_dtype tk_kernel_param_type(const tk_kernel *k, int i) {
  return param(k, i) ? param(k, i)->type : TK_NDTYPE;
}

tk_dtype tk_kernel_param_pointee(const tk_kernel *k, int i) {
  return param(k, i) ? param(k, i)->pointee : TK_NDTYPE;
}

const char *tk_kernel_param_name(const tk_kernel *k, int i) {
  return param(k, i) ? param(k, i)->name : NULL;
}

int tk_kernel_num_threads(const tk_kernel *h) {
  const rt_kernel *k = kernel_of(h);
  return k ? 32 * k->sig->num_warps : -1;
}

tk_status tk_kernel_resources(const tk_kernel *h, const char *arch, tk_resources *out) {
  rt_kernel *GET(k, kernel_of, h, "tk_kernel_resources: kernel");
  rt_context *ctx = k->module->ctx;
  REQUIRE(ctx, out, "tk_kernel_resources: out is NULL");
  memset(out, 0, sizeof *out);
  if (!arch) arch = ctx->arch ? ctx->arch : TG_DEFAULT_ARCH;
  if (!tg_find(arch)) return rt_error(ctx, TK_ERR_INVALID, "tk_kernel_resources: unknown arch '%s'", arch);
  bool has_ir = k->ir && k->module->ir, ptxas = drv_ptxas_path() != NULL;
  if (!has_ir || !ptxas) {
    /* without ptxas (or the IR it would compile), the driver can say what it loaded, but
     * only for the arch it loaded it for */
    if (ctx->be->resources && ctx->arch && strcmp(arch, ctx->arch) == 0)
      return ctx->be->resources(ctx, k, out);
    const char *why = !has_ir ? "was loaded from PTX, without its IR"
                              : "has no ptxas to measure it (set TK_PTXAS or CUDA_HOME; "
                                "tkc --resources needs it too)";
    if (!ctx->be->resources)
      return rt_error(ctx, TK_ERR_UNSUPPORTED, "tk_kernel_resources: kernel '%s' %s, and the "
                      "%s backend has no driver to ask", k->sig->name, why, ctx->be->name);
    return rt_error(ctx, TK_ERR_UNSUPPORTED, "tk_kernel_resources: kernel '%s' %s, and the "
                    "driver can only measure it for this context's arch %s, not %s", k->sig->name,
                    why, ctx->arch ? ctx->arch : "(none)", arch);
  }
  /* the unspecialized variant, lowered for arch in a scratch arena: the module is left as
   * it was */
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  drv_options o;
  drv_options_init(&o);
  o.arch = arch;
  ir_module *v = drv_variant(k->module->ir, k->ir, 0, &o, &d);
  su_buf ptx = {0}, why = {0};
  drv_resources *r = NULL;
  int n = 0;
  tk_status s = TK_OK;
  if (!v || !drv_codegen(v, &o, CG_PTX, &ptx, &d)) {
    su_diags_render(&d, &why);
    s = rt_error(ctx, TK_ERR_COMPILE, "tk_kernel_resources: '%s' for %s: %s", k->sig->name, arch,
                 why.len ? su_buf_str(&why) : "code generation failed");
  } else if (!drv_ptxas_resources(a, su_buf_str(&ptx), arch, &r, &n, &why) || n != 1) {
    s = rt_error(ctx, TK_ERR_UNSUPPORTED, "tk_kernel_resources: ptxas: %s", su_buf_str(&why));
  } else {
    *out = (tk_resources){r->regs, r->spill_stores, r->spill_loads, r->stack, r->smem_static,
                          r->smem_dynamic, r->threads, r->blocks_sm, r->occupancy,
                          TK_RES_PTXAS};
  }
  su_buf_free(&ptx);
  su_buf_free(&why);
  su_arena_free(a);
  return s;
}

int tk_module_num_kernels(const tk_module *h) {
  const rt_module *m = module_of(h);
  return m ? m->nkernels : -1;
}

tk_kernel *tk_module_kernel(tk_module *h, int i) {
  rt_module *m = module_of(h);
  tk_kernel *out = NULL;
  if (m && i >= 0 && i < m->nkernels) kernel_handle(m, &m->kernels[i], &out);
  return out;
}

const char *tk_kernel_name(const tk_kernel *h) {
  const rt_kernel *k = kernel_of(h);
  return k ? k->sig->name : NULL;
}

int tk_kernel_num_cparams(const tk_kernel *h) {
  const rt_kernel *k = kernel_of(h);
  return k ? k->sig->nconsts : -1;
}

tk_status tk_kernel_cparam(const tk_kernel *h, int i, const char **name, tk_arg *value) {
  const rt_kernel *GET(k, kernel_of, h, "tk_kernel_cparam: kernel");
  rt_context *ctx = k->module->ctx;
  REQUIRE(ctx, name && value, "tk_kernel_cparam: %s is NULL", name ? "value" : "name");
  REQUIRE(ctx, i >= 0 && i < k->sig->nconsts, "tk_kernel_cparam: kernel '%s' has %d compile-time parameters, not %d",
          k->sig->name, k->sig->nconsts, i + 1);
  const ir_binding *b = &k->sig->consts[i];
  *name = b->name;
  if (b->is_dtype) {
    value->type = TK_NDTYPE;
    value->v.i = b->ival;
  } else if (b->is_float) {
    value->type = TK_F64;
    value->v.f = b->fval;
  } else {
    value->type = TK_I64;
    value->v.i = b->ival;
  }
  return TK_OK;
}

/* ---- launching ------------------------------------------------------------------------ */

static const char *dtype_name(tk_dtype t) {
  return (unsigned)t < TK_NDTYPE ? ir_dtype_name(t) : "invalid";
}

/* "i32", "*f32", or "pointer" when the pointee is unknown (AOT PTX). */
static void param_type_text(su_buf *b, const ir_sig_param *p) {
  if (p->type != TK_PTR)
    su_buf_puts(b, dtype_name(p->type));
  else if (p->pointee != TK_NDTYPE)
    su_buf_printf(b, "*%s", dtype_name(p->pointee));
  else
    su_buf_puts(b, "pointer");
}

/* PTX keeps no signedness, so a kernel without IR accepts either of a width. */
static bool type_accepts(const rt_kernel *k, tk_dtype want, tk_dtype got) {
  if (want == got) return true;
  /* Without IR (AOT PTX) a signature only says u64 for a pointer: PTX for CUDA does not
   * mark pointer parameters, so any 64-bit value, a pointer included, is accepted. */
  if (!k->ir && ir_dtype_bits(want) == 64 && got == TK_PTR) return true;
  return !k->ir && ir_dtype_is_int(want) && ir_dtype_is_int(got) && want != TK_I1 &&
         got != TK_I1 && ir_dtype_bits(want) == ir_dtype_bits(got);
}

/* True if an integer argument's value is representable in its type (a switch the
 * compiler keeps inline: this runs per argument of every launch). */
static bool fits(const tk_arg *a) {
  switch (a->type) {
  case TK_I8: return a->v.i >= INT8_MIN && a->v.i <= INT8_MAX;
  case TK_I16: return a->v.i >= INT16_MIN && a->v.i <= INT16_MAX;
  case TK_I32: return a->v.i >= INT32_MIN && a->v.i <= INT32_MAX;
  case TK_U8: return a->v.u <= UINT8_MAX;
  case TK_U16: return a->v.u <= UINT16_MAX;
  case TK_U32: return a->v.u <= UINT32_MAX;
  default: return true; /* i1 (any value is 0 or not), 64-bit integers, floats, pointers */
  }
}

tk_status rt_check_args(rt_context *ctx, const rt_kernel *k, const tk_arg *args, int nargs) {
  const ir_signature *sig = k->sig;
  if (nargs != sig->nparams)
    return rt_error(ctx, TK_ERR_ARGS, "kernel '%s' expects %d argument%s, got %d", sig->name,
                    sig->nparams, sig->nparams == 1 ? "" : "s", nargs);
  for (int i = 0; i < nargs; i++) {
    const ir_sig_param *p = &sig->params[i];
    if ((unsigned)args[i].type >= TK_NDTYPE)
      return rt_error(ctx, TK_ERR_ARGS, "argument %d of '%s' ('%s') has an invalid type field (%d)",
                      i, sig->name, p->name, (int)args[i].type);
    if (!type_accepts(k, p->type, args[i].type)) {
      const char *got = args[i].type == TK_PTR ? "pointer" : dtype_name(args[i].type);
      su_buf want = {0};
      param_type_text(&want, p);
      rt_error(ctx, TK_ERR_ARGS, "argument %d of '%s' ('%s') has type %s, but %s %s was passed",
               i, sig->name, p->name, want.data, strchr("if", got[0]) ? "an" : "a", got);
      su_buf_free(&want);
      return TK_ERR_ARGS;
    }
    if (!fits(&args[i]))
      return rt_error(ctx, TK_ERR_ARGS, "argument %d of '%s' ('%s') is %lld, which does not fit in %s",
                      i, sig->name, p->name, (long long)args[i].v.i, dtype_name(args[i].type));
  }
  return TK_OK;
}

_Static_assert((int)TK_BOUND_HBM == (int)DRV_BOUND_HBM && (int)TK_BOUND_L2 == (int)DRV_BOUND_L2 &&
               (int)TK_BOUND_F32 == (int)DRV_BOUND_F32 && (int)TK_BOUND_TENSOR == (int)DRV_BOUND_TENSOR &&
               (int)TK_BOUND_LAUNCH == (int)DRV_BOUND_LAUNCH && (int)TK_BOUND_SFU == (int)DRV_BOUND_SFU,
               "tk_bound and drv_bound disagree");

tk_status tk_roofline(tk_kernel *h, const char *arch, tk_grid grid, const tk_arg *args,
                      int nargs, tk_roofline_report *out) {
  rt_kernel *GET(k, kernel_of, h, "tk_roofline: kernel");
  rt_context *ctx = k->module->ctx;
  REQUIRE(ctx, out, "tk_roofline: out is NULL");
  REQUIRE(ctx, nargs >= 0 && (args || nargs == 0), "tk_roofline: %d arguments at %p", nargs,
          (const void *)args);
  if (!k->ir)
    return rt_error(ctx, TK_ERR_INVALID, "tk_roofline: kernel '%s' was loaded from PTX: there "
                    "is no IR to count", k->sig->name);
  const char *a = arch ? arch : ctx->arch ? ctx->arch : TG_DEFAULT_ARCH;
  /* the card's own ceilings when the table has them, for the context's arch only: an
   * explicit other arch asks about another machine */
  tg_arch on_card;
  const tg_arch *t =
      tg_on_device(a, ctx->arch && !strcmp(a, ctx->arch) ? ctx->device_name : NULL, &on_card);
  if (!tg_has_ceilings(a))
    return rt_error(ctx, TK_ERR_INVALID, "tk_roofline: the target table has no ceilings for "
                    "'%s'", a);
  tk_status s = rt_check_args(ctx, k, args, nargs);
  if (s != TK_OK) return s;
  int np = k->ir->body->nargs;
  drv_rl_value *v = calloc((size_t)np + 1, sizeof *v);
  if (!v) return rt_error(ctx, TK_ERR_MEMORY, "out of host memory");
  for (int i = 0; i < np && i < nargs; i++)
    if (args[i].type != TK_PTR && ir_dtype_is_int(args[i].type))
      v[i] = (drv_rl_value){true, args[i].v.i};
  unsigned g[3] = {grid.x ? grid.x : 1, grid.y ? grid.y : 1, grid.z ? grid.z : 1};
  drv_rl_result r;
  drv_roofline_kernel(k->ir, t, g, v, &r);
  free(v);
  double p = r.predicted_s;
  *out = (tk_roofline_report){r.hbm_bytes, r.l2_bytes, r.flops, r.tc_flops, p * 1e6,
                              (tk_bound)r.bound, drv_bound_name(r.bound), r.t_hbm / p,
                              r.t_l2 / p, r.t_f32 / p, r.t_tensor / p, r.unknown_trips,
                              r.mufu, r.t_sfu / p};
  return TK_OK;
}

tk_status tk_launch(tk_kernel *h, tk_grid grid, void *stream, const tk_arg *args, int nargs) {
  rt_kernel *GET(k, kernel_of, h, "tk_launch: kernel");
  rt_context *ctx = k->module->ctx;
  REQUIRE(ctx, nargs >= 0, "tk_launch: negative argument count %d", nargs);
  REQUIRE(ctx, args || nargs == 0, "tk_launch: args is NULL but nargs is %d", nargs);
  /* The CUDA limits hold on every backend, checked before any driver call, so that a
   * grid the GPU would refuse is refused the same way by the interpreter. */
  if (grid.x > INT32_MAX || grid.y > 65535 || grid.z > 65535) {
    const char *axis = grid.x > INT32_MAX ? "x" : grid.y > 65535 ? "y" : "z";
    unsigned v = grid.x > INT32_MAX ? grid.x : grid.y > 65535 ? grid.y : grid.z;
    return rt_error(ctx, TK_ERR_INVALID, "kernel '%s': grid (%u, %u, %u) exceeds the CUDA limits "
                    "(x at most 2147483647, y and z at most 65535): %s is %u, more than %s",
                    k->sig->name, grid.x, grid.y, grid.z, axis, v,
                    grid.x > INT32_MAX ? "2^31 - 1" : "65535");
  }
  tk_status s = rt_check_args(ctx, k, args, nargs);
  return s != TK_OK ? s : ctx->be->launch(ctx, k, grid, stream, args, nargs);
}
