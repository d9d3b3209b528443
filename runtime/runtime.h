/*
 * runtime/ — libtk: the implementation of include/tk.h over two backends, the reference
 * interpreter (interp/) and the CUDA driver (loaded with dlopen at run time), plus the
 * on-disk compile cache.
 *
 * Contract (internal): api.c validates every public call and turns failures into a status
 * plus a message on the context; a backend implements rt_backend and may assume validated
 * arguments. Nothing outside runtime/ knows about CUDA.
 * Prefix: rt_ (internal), tk_ (public).
 */
#ifndef TK_RUNTIME_H
#define TK_RUNTIME_H

#include "../driver/driver.h"
#include "../include/tk.h"
#include "../ir/ir.h"
#include "../support/support.h"

typedef struct rt_backend rt_backend;

/* A kernel: its signature (from the IR, or read from the PTX of an AOT module), what
 * launches are checked against and packed by. */
struct tk_kernel {
  tk_module *module;
  const ir_signature *sig;
  const ir_func *ir;   /* NULL for kernels loaded from AOT PTX without IR */
  void *handle;        /* backend's */
};

/* What a backend keeps per module: the IR (when compiled here: the interpreter runs it,
 * the JIT specializes it) and, on CUDA, the loaded modules. */

struct tk_module {
  tk_context *ctx;
  su_arena *arena;
  ir_module *ir;       /* may be NULL for AOT PTX */
  tk_kernel *kernels;
  int nkernels;
  void *handle;        /* backend's (CUmodule) */
  tk_module *next;     /* the context's list */
};

struct rt_backend {
  const char *name;
  /* Each returns TK_OK or a status after writing a message with rt_error. */
  tk_status (*init)(tk_context *ctx, int device);
  void (*shutdown)(tk_context *ctx);
  tk_status (*malloc_)(tk_context *ctx, tk_devptr *out, size_t bytes);
  tk_status (*free_)(tk_context *ctx, tk_devptr p);
  tk_status (*htod)(tk_context *ctx, tk_devptr dst, const void *src, size_t bytes);
  tk_status (*dtoh)(tk_context *ctx, void *dst, tk_devptr src, size_t bytes);
  tk_status (*sync)(tk_context *ctx);
  /* Makes the compiled module runnable (CUDA: codegen + load PTX, through the cache).
   * opts are the caller's (NULL allowed), o the driver options they resolved to, with the
   * arch to generate for (the options', else ctx->arch). */
  tk_status (*load_ir)(tk_context *ctx, tk_module *m, const tk_compile_options *opts,
                       const drv_options *o, const char *source, size_t len);
  tk_status (*load_ptx)(tk_context *ctx, tk_module *m, const char *ptx, size_t len);
  void (*unload)(tk_context *ctx, tk_module *m);
  tk_status (*launch)(tk_context *ctx, tk_kernel *k, tk_grid grid, void *stream,
                      const tk_arg *args, int nargs);
  /* Launches as launch does and measures it: *ms of device time (CUDA: events around the
   * launch on stream, the L2 cache flushed first when flush is set; the interpreter: the
   * wall clock). For the autotuner (tune.c). */
  tk_status (*time_launch)(tk_context *ctx, tk_kernel *k, tk_grid grid, void *stream,
                           const tk_arg *args, int nargs, bool flush, double *ms);
};

struct tk_context {
  tk_backend kind;
  const rt_backend *be;
  int device;         /* the ordinal it was created for */
  const char *cache_dir; /* the compile cache's directory (NULL: none, or the backend has
                            no cache; the autotuner then resolves one as the cache does) */
  const char *arch;   /* what modules compile for when the options name none: the
                         device's (CUDA), set by init; NULL on the interpreter */
  void *state;        /* the backend's */
  su_buf err;         /* last error message */
  tk_module *modules;
};

/* Sets ctx's last error (ctx NULL: the global one) and returns status. */
tk_status rt_error(tk_context *ctx, tk_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* tk_launch's checks of args against k's signature (TK_OK, or TK_ERR_ARGS with a message). */
tk_status rt_check_args(tk_context *ctx, const tk_kernel *k, const tk_arg *args, int nargs);

extern const rt_backend rt_interp_backend;
extern const rt_backend rt_cuda_backend;

#endif
