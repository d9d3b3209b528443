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

tk_status rt_error(tk_context *ctx, tk_status status, const char *fmt, ...) {
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

const char *tk_last_error(const tk_context *ctx) {
  if (!ctx) return no_context_error;
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

static tk_status start_backend(tk_context *ctx, tk_backend kind, int device) {
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
  tk_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return rt_error(NULL, TK_ERR_MEMORY, "tk_context_create: out of host memory");
  tk_status s;
  if (kind != TK_BACKEND_AUTO) {
    s = start_backend(ctx, kind, device);
  } else if (interpret_requested()) {
    s = start_backend(ctx, TK_BACKEND_INTERP, device);
  } else {
    /* AUTO prefers the GPU, and falls back to the interpreter only when there is none:
     * a driver that is present but broken is an error worth seeing. */
    s = start_backend(ctx, TK_BACKEND_CUDA, device);
    if (s == TK_ERR_NO_DEVICE || s == TK_ERR_UNSUPPORTED) s = start_backend(ctx, TK_BACKEND_INTERP, device);
  }
  if (s != TK_OK) {
    rt_error(NULL, s, "%s", tk_last_error(ctx));
    su_buf_free(&ctx->err);
    free(ctx);
    return s;
  }
  ctx->err.len = 0;
  *out = ctx;
  return TK_OK;
}

static void module_release(tk_module *m) {
  m->ctx->be->unload(m->ctx, m);
  su_arena_free(m->arena);
}

void tk_context_destroy(tk_context *ctx) {
  if (!ctx) return;
  for (tk_module *m = ctx->modules, *next; m; m = next) {
    next = m->next;
    module_release(m);
  }
  ctx->be->shutdown(ctx);
  su_buf_free(&ctx->err);
  free(ctx);
}

tk_backend tk_context_backend(const tk_context *ctx) {
  return ctx ? ctx->kind : TK_BACKEND_AUTO;
}

/* ---- memory --------------------------------------------------------------------------- */

tk_status tk_malloc(tk_context *ctx, tk_devptr *out, size_t bytes) {
  REQUIRE(NULL, ctx, "tk_malloc: context is NULL");
  REQUIRE(ctx, out, "tk_malloc: out is NULL");
  *out = 0;
  REQUIRE(ctx, bytes > 0, "tk_malloc: cannot allocate 0 bytes");
  return ctx->be->malloc_(ctx, out, bytes);
}

tk_status tk_free(tk_context *ctx, tk_devptr p) {
  REQUIRE(NULL, ctx, "tk_free: context is NULL");
  return p ? ctx->be->free_(ctx, p) : TK_OK;
}

tk_status tk_memcpy_htod(tk_context *ctx, tk_devptr dst, const void *src, size_t bytes) {
  REQUIRE(NULL, ctx, "tk_memcpy_htod: context is NULL");
  if (bytes == 0) return TK_OK;
  REQUIRE(ctx, src, "tk_memcpy_htod: src is NULL");
  REQUIRE(ctx, dst, "tk_memcpy_htod: dst is the null device address");
  return ctx->be->htod(ctx, dst, src, bytes);
}

tk_status tk_memcpy_dtoh(tk_context *ctx, void *dst, tk_devptr src, size_t bytes) {
  REQUIRE(NULL, ctx, "tk_memcpy_dtoh: context is NULL");
  if (bytes == 0) return TK_OK;
  REQUIRE(ctx, dst, "tk_memcpy_dtoh: dst is NULL");
  REQUIRE(ctx, src, "tk_memcpy_dtoh: src is the null device address");
  return ctx->be->dtoh(ctx, dst, src, bytes);
}

tk_status tk_synchronize(tk_context *ctx) {
  REQUIRE(NULL, ctx, "tk_synchronize: context is NULL");
  return ctx->be->sync(ctx);
}

/* ---- compiling ------------------------------------------------------------------------ */

static tk_module *module_new(tk_context *ctx) {
  su_arena *a = su_arena_new();
  tk_module *m = SU_NEW(a, tk_module);
  m->ctx = ctx;
  m->arena = a;
  return m;
}

static void module_link(tk_context *ctx, tk_module *m) {
  m->next = ctx->modules;
  ctx->modules = m;
}

/* The kernel table of a module, read off its IR: the signatures launches are checked
 * against. */
static void kernels_from_ir(tk_module *m) {
  const ir_module *ir = m->ir;
  m->nkernels = ir->nfuncs;
  m->kernels = SU_NEW_ARRAY(m->arena, tk_kernel, ir->nfuncs);
  for (int i = 0; i < ir->nfuncs; i++) {
    tk_kernel *k = &m->kernels[i];
    k->module = m;
    k->ir = ir->funcs[i];
    k->sig = ir_func_signature(m->arena, k->ir);
  }
}

/* Fills the driver's options from the API's; false after reporting a bad field. */
static bool driver_options(tk_context *ctx, su_arena *a, const tk_compile_options *opts,
                           drv_options *o) {
  drv_options_init(o);
  /* Compiled without a target: the interpreter runs that IR, and the JIT lowers and
   * generates each variant for the arch load_ir is given. */
  o->arch = NULL;
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
  return true;
}

/* Reports every diagnostic of d, rendered, as a compile error. */
static tk_status compile_error(tk_context *ctx, const su_diags *d) {
  su_buf text = {0};
  su_diags_render(d, &text);
  while (text.len && text.data[text.len - 1] == '\n') text.data[--text.len] = 0;
  rt_error(ctx, TK_ERR_COMPILE, "%s", text.len ? text.data : "compilation failed");
  su_buf_free(&text);
  return TK_ERR_COMPILE;
}

tk_status tk_module_compile(tk_context *ctx, tk_module **out, const char *source, size_t len,
                            const char *name, const tk_compile_options *opts) {
  REQUIRE(NULL, ctx, "tk_module_compile: context is NULL");
  REQUIRE(ctx, out, "tk_module_compile: out is NULL");
  *out = NULL;
  REQUIRE(ctx, source || len == 0, "tk_module_compile: source is NULL");
  tk_module *m = module_new(ctx);
  drv_options o;
  if (!driver_options(ctx, m->arena, opts, &o)) {
    su_arena_free(m->arena);
    return TK_ERR_INVALID;
  }
  su_source *src = su_source_new(m->arena, name ? name : "<source>", source ? source : "", len);
  su_diags d;
  su_diags_init(&d, m->arena, NULL);
  m->ir = drv_compile(m->arena, src, &o, &d);
  if (!m->ir) {
    tk_status s = compile_error(ctx, &d);
    su_arena_free(m->arena);
    return s;
  }
  kernels_from_ir(m);
  drv_options target = o;
  target.arch = opts && opts->arch ? opts->arch : ctx->arch;
  tk_status s = ctx->be->load_ir(ctx, m, opts, &target, src->text, src->len);
  if (s != TK_OK) {
    module_release(m);
    return s;
  }
  module_link(ctx, m);
  *out = m;
  return TK_OK;
}

tk_status tk_module_compile_file(tk_context *ctx, tk_module **out, const char *path,
                                 const tk_compile_options *opts) {
  REQUIRE(NULL, ctx, "tk_module_compile_file: context is NULL");
  REQUIRE(ctx, out, "tk_module_compile_file: out is NULL");
  *out = NULL;
  REQUIRE(ctx, path, "tk_module_compile_file: path is NULL");
  su_arena *a = su_arena_new();
  const char *why = NULL;
  su_source *src = su_source_read(a, path, &why);
  tk_status s = src ? tk_module_compile(ctx, out, src->text, src->len, path, opts)
                    : rt_error(ctx, TK_ERR_IO, "cannot read '%s': %s", path, why ? why : "error");
  su_arena_free(a);
  return s;
}

tk_status tk_module_load_ptx(tk_context *ctx, tk_module **out, const char *ptx, size_t len) {
  REQUIRE(NULL, ctx, "tk_module_load_ptx: context is NULL");
  REQUIRE(ctx, out, "tk_module_load_ptx: out is NULL");
  *out = NULL;
  REQUIRE(ctx, ptx && len > 0, "tk_module_load_ptx: no PTX text");
  tk_module *m = module_new(ctx);
  tk_status s = ctx->be->load_ptx(ctx, m, ptx, len);
  if (s != TK_OK) {
    module_release(m);
    return s;
  }
  module_link(ctx, m);
  *out = m;
  return TK_OK;
}

void tk_module_destroy(tk_module *m) {
  if (!m) return;
  for (tk_module **p = &m->ctx->modules; *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      break;
    }
  module_release(m);
}

tk_status tk_module_get_kernel(tk_module *m, const char *name, tk_kernel **out) {
  REQUIRE(NULL, m, "tk_module_get_kernel: module is NULL");
  REQUIRE(m->ctx, name && out, "tk_module_get_kernel: %s is NULL", name ? "out" : "name");
  *out = NULL;
  for (int i = 0; i < m->nkernels; i++)
    if (strcmp(m->kernels[i].sig->name, name) == 0) {
      *out = &m->kernels[i];
      return TK_OK;
    }
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
static const ir_sig_param *param(const tk_kernel *k, int i) {
  return k && i >= 0 && i < k->sig->nparams ? &k->sig->params[i] : NULL;
}

int tk_kernel_num_params(const tk_kernel *k) {
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

int tk_kernel_num_threads(const tk_kernel *k) {
  return k ? 32 * k->sig->num_warps : -1;
}

int tk_module_num_kernels(const tk_module *m) {
  return m ? m->nkernels : -1;
}

tk_kernel *tk_module_kernel(tk_module *m, int i) {
  return m && i >= 0 && i < m->nkernels ? &m->kernels[i] : NULL;
}

const char *tk_kernel_name(const tk_kernel *k) {
  return k ? k->sig->name : NULL;
}

int tk_kernel_num_cparams(const tk_kernel *k) {
  return k ? k->sig->nconsts : -1;
}

tk_status tk_kernel_cparam(const tk_kernel *k, int i, const char **name, tk_arg *value) {
  REQUIRE(NULL, k, "tk_kernel_cparam: kernel is NULL");
  tk_context *ctx = k->module->ctx;
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
static bool type_accepts(const tk_kernel *k, tk_dtype want, tk_dtype got) {
  if (want == got) return true;
  /* Without IR (AOT PTX) a signature only says u64 for a pointer: PTX for CUDA does not
   * mark pointer parameters, so any 64-bit value, a pointer included, is accepted. */
  if (!k->ir && ir_dtype_bits(want) == 64 && got == TK_PTR) return true;
  return !k->ir && ir_dtype_is_int(want) && ir_dtype_is_int(got) && want != TK_I1 &&
         got != TK_I1 && ir_dtype_bits(want) == ir_dtype_bits(got);
}

/* True if an integer argument's value is representable in its type. */
static bool fits(const tk_arg *a) {
  int bits = ir_dtype_bits(a->type);
  if (!ir_dtype_is_int(a->type) || a->type == TK_I1 || bits >= 64) return true;
  if (ir_dtype_is_signed(a->type))
    return a->v.i >= -(INT64_C(1) << (bits - 1)) && a->v.i < (INT64_C(1) << (bits - 1));
  return a->v.u < (UINT64_C(1) << bits);
}

tk_status rt_check_args(tk_context *ctx, const tk_kernel *k, const tk_arg *args, int nargs) {
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

tk_status tk_launch(tk_kernel *k, tk_grid grid, void *stream, const tk_arg *args, int nargs) {
  REQUIRE(NULL, k, "tk_launch: kernel is NULL");
  tk_context *ctx = k->module->ctx;
  REQUIRE(ctx, nargs >= 0, "tk_launch: negative argument count %d", nargs);
  REQUIRE(ctx, args || nargs == 0, "tk_launch: args is NULL but nargs is %d", nargs);
  tk_status s = rt_check_args(ctx, k, args, nargs);
  return s != TK_OK ? s : ctx->be->launch(ctx, k, grid, stream, args, nargs);
}
