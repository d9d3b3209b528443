/* rt_interp_backend: libtk on the CPU through the reference interpreter. Device memory
 * is the interpreter's buffer table (interp.h: synthetic addresses, bounds-checked);
 * launches run to completion before returning, so streams and synchronize are no-ops. */
#include <string.h>
#include <time.h>

#include "../interp/interp.h"
#include "runtime.h"

static ip_memory *memory(rt_context *ctx) {
  return ctx->state;
}

/* Moves a message the interpreter wrote into the context's error. */
static tk_status report(rt_context *ctx, tk_status s, const char *what, su_buf *why) {
  rt_error(ctx, s, "%s%s", what, su_buf_str(why));
  su_buf_free(why);
  return s;
}

static tk_status interp_init(rt_context *ctx, int device) {
  (void)device; /* one host, one "device" */
  ctx->state = ip_memory_new();
  return ctx->state ? TK_OK : rt_error(ctx, TK_ERR_MEMORY, "out of host memory");
}

static void interp_shutdown(rt_context *ctx) {
  ip_memory_free(memory(ctx));
  ctx->state = NULL;
}

static tk_status interp_malloc(rt_context *ctx, tk_devptr *out, size_t bytes) {
  su_buf why = {0};
  if (!ip_mem_alloc(memory(ctx), bytes, out, &why))
    return report(ctx, TK_ERR_MEMORY, "tk_malloc: ", &why);
  return TK_OK;
}

static tk_status interp_free(rt_context *ctx, tk_devptr p) {
  su_buf why = {0};
  if (!ip_mem_free(memory(ctx), p, &why)) return report(ctx, TK_ERR_INVALID, "tk_free: ", &why);
  return TK_OK;
}

static tk_status interp_htod(rt_context *ctx, tk_devptr dst, const void *src, size_t bytes) {
  su_buf why = {0};
  void *host = ip_mem_host(memory(ctx), dst, bytes, &why);
  if (!host) return report(ctx, TK_ERR_INVALID, "tk_memcpy_htod: ", &why);
  memcpy(host, src, bytes);
  return TK_OK;
}

static tk_status interp_dtoh(rt_context *ctx, void *dst, tk_devptr src, size_t bytes) {
  su_buf why = {0};
  const void *host = ip_mem_host(memory(ctx), src, bytes, &why);
  if (!host) return report(ctx, TK_ERR_INVALID, "tk_memcpy_dtoh: ", &why);
  memcpy(dst, host, bytes);
  return TK_OK;
}

static tk_status interp_sync(rt_context *ctx) {
  (void)ctx;
  return TK_OK;
}

/* The interpreter runs the module's IR as it is: nothing to load. */
static tk_status interp_load_ir(rt_context *ctx, rt_module *m, const tk_compile_options *opts,
                                const drv_options *o, const char *source, size_t len) {
  (void)ctx, (void)m, (void)opts, (void)o, (void)source, (void)len;
  return TK_OK;
}

static tk_status interp_load_ptx(rt_context *ctx, rt_module *m, const char *ptx, size_t len) {
  (void)m, (void)ptx, (void)len;
  return rt_error(ctx, TK_ERR_UNSUPPORTED,
                  "the interpreter cannot run PTX: compile the .tk source with "
                  "tk_module_compile, or use the CUDA backend");
}

static void interp_unload(rt_context *ctx, rt_module *m) {
  (void)ctx, (void)m;
}

static tk_status interp_launch(rt_context *ctx, rt_kernel *k, tk_grid grid, void *stream,
                               const tk_arg *args, int nargs) {
  (void)stream; /* launches complete before returning */
  if (!k->ir)
    return rt_error(ctx, TK_ERR_UNSUPPORTED, "kernel '%s' has no IR to interpret", k->sig->name);
  su_buf why = {0};
  /* an internal error of the interpreter outside a program's run (grid.c traps those)
   * fails the launch, not the process */
  su_trap trap;
  su_trap_push(&trap);
  if (setjmp(trap.jb)) {
    su_buf_free(&why);
    return rt_error(ctx, trap.oom ? TK_ERR_MEMORY : TK_ERR_RUNTIME,
                    "kernel '%s': internal error in the interpreter%s: %s", k->sig->name,
                    trap.oom ? " (out of memory)" : "", trap.msg);
  }
  ip_status st = ip_launch(memory(ctx), k->module->ir, k->ir, grid, args, nargs, stdout, &why);
  su_trap_clear(&trap);
  if (st == IP_OK) {
    su_buf_free(&why);
    return TK_OK;
  }
  return report(ctx, st == IP_BAD_ARGS ? TK_ERR_ARGS : TK_ERR_RUNTIME, "", &why);
}

static tk_status interp_time_launch(rt_context *ctx, rt_kernel *k, tk_grid grid, void *stream,
                                    const tk_arg *args, int nargs, bool flush, double *ms) {
  (void)flush; /* the host's caches are not the device's: nothing to flush */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  tk_status s = interp_launch(ctx, k, grid, stream, args, nargs);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  return s;
}

const rt_backend rt_interp_backend = {
  .name = "interp",
  .init = interp_init,
  .shutdown = interp_shutdown,
  .malloc_ = interp_malloc,
  .free_ = interp_free,
  .htod = interp_htod,
  .dtoh = interp_dtoh,
  .sync = interp_sync,
  .load_ir = interp_load_ir,
  .load_ptx = interp_load_ptx,
  .unload = interp_unload,
  .launch = interp_launch,
  .time_launch = interp_time_launch,
  .resources = NULL, /* no driver to ask: tk_kernel_resources needs ptxas here */
};
