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
typedef struct rt_context rt_context;
typedef struct rt_module rt_module;
typedef struct rt_kernel rt_kernel;

/* ---- handles ---------------------------------------------------------------------------
 * The tk_context, tk_module and tk_kernel pointers the API hands out are not addresses
 * but generation-counted handles (slot, generation, kind) into one process-wide table, so
 * that a handle whose object was destroyed is recognised as such (TK_ERR_INVALID) instead
 * of being dereferenced: the slot's generation moves on when the object goes, and a slot
 * is reused only with a new generation. Lookups take no lock (slots live in chunks that
 * are never freed or moved); making and releasing handles takes a mutex. */
typedef enum { RT_H_CONTEXT = 1, RT_H_MODULE, RT_H_KERNEL } rt_handle_kind;
/* A new handle for obj (never 0); 0 when the table is full or out of memory. */
uint64_t rt_handle_new(rt_handle_kind kind, void *obj);
/* The object behind h if h is a live handle of that kind, else NULL. */
void *rt_handle_get(uint64_t h, rt_handle_kind kind);
/* Ends h: later rt_handle_get(h) return NULL. 0 and stale handles are ignored. */
void rt_handle_release(uint64_t h);

/* A kernel: its signature (from the IR, or read from the PTX of an AOT module), what
 * launches are checked against and packed by. */
struct rt_kernel {
  rt_module *module;
  uint64_t id;         /* its handle (0 until tk_module_get_kernel first returns it) */
  const ir_signature *sig;
  const ir_func *ir;   /* NULL for kernels loaded from AOT PTX without IR */
  void *handle;        /* backend's */
};

/* What a backend keeps per module: the IR (when compiled here: the interpreter runs it,
 * the JIT specializes it) and, on CUDA, the loaded modules. */

struct rt_module {
  rt_context *ctx;
  uint64_t id;         /* its handle */
  su_arena *arena;
  ir_module *ir;       /* may be NULL for AOT PTX */
  rt_kernel *kernels;
  int nkernels;
  void *handle;        /* backend's (CUmodule) */
  rt_module *next;     /* the context's list */
};

struct rt_backend {
  const char *name;
  /* Each returns TK_OK or a status after writing a message with rt_error. */
  tk_status (*init)(rt_context *ctx, int device);
  void (*shutdown)(rt_context *ctx);
  tk_status (*malloc_)(rt_context *ctx, tk_devptr *out, size_t bytes);
  tk_status (*free_)(rt_context *ctx, tk_devptr p);
  tk_status (*htod)(rt_context *ctx, tk_devptr dst, const void *src, size_t bytes);
  tk_status (*dtoh)(rt_context *ctx, void *dst, tk_devptr src, size_t bytes);
  tk_status (*sync)(rt_context *ctx);
  /* Makes the compiled module runnable (CUDA: codegen + load PTX, through the cache).
   * opts are the caller's (NULL allowed), o the driver options they resolved to, with the
   * arch to generate for (the options', else ctx->arch). */
  tk_status (*load_ir)(rt_context *ctx, rt_module *m, const tk_compile_options *opts,
                       const drv_options *o, const char *source, size_t len);
  tk_status (*load_ptx)(rt_context *ctx, rt_module *m, const char *ptx, size_t len);
  void (*unload)(rt_context *ctx, rt_module *m);
  tk_status (*launch)(rt_context *ctx, rt_kernel *k, tk_grid grid, void *stream,
                      const tk_arg *args, int nargs);
  /* Launches as launch does and measures it: *ms of device time (CUDA: events around the
   * launch on stream, the L2 cache flushed first when flush is set; the interpreter: the
   * wall clock). For the autotuner (tune.c). */
  tk_status (*time_launch)(rt_context *ctx, rt_kernel *k, tk_grid grid, void *stream,
                           const tk_arg *args, int nargs, bool flush, double *ms);
  /* Fills *out (source TK_RES_DRIVER) for k's variant that takes any arguments, loaded
   * for ctx->arch, from what the driver says of it; NULL for a backend without a driver
   * (the interpreter). For tk_kernel_resources without ptxas. */
  tk_status (*resources)(rt_context *ctx, rt_kernel *k, tk_resources *out);
};

struct rt_context {
  uint64_t id;        /* its handle */
  tk_backend kind;
  const rt_backend *be;
  int device;         /* the ordinal it was created for */
  const char *cache_dir; /* the compile cache's directory (NULL: none, or the backend has
                            no cache; the autotuner then resolves one as the cache does) */
  const char *arch;   /* what modules compile for when the options name none: the
                         device's (CUDA), set by init; NULL on the interpreter */
  const char *device_name; /* the driver's name of the card (CUDA), whose measured ceilings
                              the roofline takes when the target table has them; NULL on
                              the interpreter */
  void *state;        /* the backend's */
  su_buf err;         /* last error message */
  rt_module *modules;
};

/* Sets ctx's last error (ctx NULL: the global one) and returns status. */
tk_status rt_error(rt_context *ctx, tk_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* tk_launch's checks of args against k's signature (TK_OK, or TK_ERR_ARGS with a message). */
tk_status rt_check_args(rt_context *ctx, const rt_kernel *k, const tk_arg *args, int nargs);

extern const rt_backend rt_interp_backend;
extern const rt_backend rt_cuda_backend;

#endif
