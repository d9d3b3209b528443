/*
 * tk.h — the public C API of libtk: compile tile kernels written in .tk and run them, on
 * an NVIDIA GPU through the CUDA driver or on the CPU through the reference interpreter.
 *
 * Contract:
 *  - Every function that can fail returns a tk_status; TK_OK is 0. After a failure,
 *    tk_last_error(ctx) (or tk_last_error(NULL) for failures with no context) returns a
 *    readable message that stays valid until the next call on that context.
 *  - Bad arguments (NULL where an object is needed, a wrong argument count or type at
 *    launch, an unknown kernel name) are errors with a message, never crashes.
 *  - Objects belong to their context; tk_context_destroy releases everything it owns.
 *    Handles are checked: a destroyed context, module or kernel passed again is
 *    TK_ERR_INVALID (ignored by the destroy functions), never a use of freed memory.
 *  - A context is used by one thread at a time.
 * Prefix: tk_ / TK_.
 */
#ifndef TK_H
#define TK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the API: libtk is built with hidden visibility by default, so these are the only
 * symbols libtk.so exports (tests/cli/install.sh checks it with nm -D). */
#if defined(__GNUC__) || defined(__clang__)
#define TK_API __attribute__((visibility("default")))
#else
#define TK_API
#endif

/* Element types of the language, as the API sees them (launch arguments, buffers). */
typedef enum {
  TK_I1, TK_I8, TK_I16, TK_I32, TK_I64,
  TK_U8, TK_U16, TK_U32, TK_U64,
  TK_F16, TK_BF16, TK_F32, TK_F64,
  TK_PTR,   /* a pointer argument (a tk_devptr) */
  TK_F8E4M3, TK_F8E5M2, /* 8-bit floats (OCP E4M3 "fn", E5M2): storage types, one byte each */
  TK_NDTYPE
} tk_dtype;

typedef enum {
  TK_OK = 0,
  TK_ERR_INVALID,     /* bad argument to an API call */
  TK_ERR_IO,          /* a file could not be read or written */
  TK_ERR_COMPILE,     /* the .tk source has errors (the message holds the diagnostics) */
  TK_ERR_NOT_FOUND,   /* no kernel of that name */
  TK_ERR_ARGS,        /* launch arguments do not match the kernel's signature */
  TK_ERR_RUNTIME,     /* a kernel faulted: out-of-bounds access, failed device_assert, ... */
  TK_ERR_NO_DEVICE,   /* no CUDA driver or device */
  TK_ERR_DRIVER,      /* the CUDA driver reported an error */
  TK_ERR_MEMORY,      /* an allocation failed */
  TK_ERR_UNSUPPORTED  /* the backend cannot do this (yet) */
} tk_status;

typedef enum {
  TK_BACKEND_AUTO = 0, /* CUDA when a device is there and TK_INTERPRET is unset, else interpreter */
  TK_BACKEND_CUDA,
  TK_BACKEND_INTERP
} tk_backend;

typedef struct tk_context tk_context;
typedef struct tk_module tk_module;
typedef struct tk_kernel tk_kernel;

/* A device address: a CUdeviceptr on CUDA, an interpreter buffer address otherwise. */
typedef uint64_t tk_devptr;

typedef struct {
  tk_backend backend;
  int device;          /* CUDA device ordinal */
} tk_context_options;

/* Creates a context. opts may be NULL (TK_BACKEND_AUTO, device 0). With TK_INTERPRET=1 in
 * the environment, AUTO selects the interpreter. */
TK_API tk_status tk_context_create(tk_context **out, const tk_context_options *opts);
/* Destroys the context and all modules and buffers it owns. NULL is ignored. */
TK_API void tk_context_destroy(tk_context *ctx);
/* The backend the context runs on. */
TK_API tk_backend tk_context_backend(const tk_context *ctx);
/* The message of the last failure on ctx (NULL: the last failure with no context, e.g. of
 * tk_context_create). Never NULL; "" when nothing failed. */
TK_API const char *tk_last_error(const tk_context *ctx);
/* A static name for a status ("TK_ERR_ARGS", ...). */
TK_API const char *tk_status_name(tk_status s);

/* ---- memory --------------------------------------------------------------------------- */

/* Allocates bytes of device memory (interpreter: host memory, bounds-checked). */
TK_API tk_status tk_malloc(tk_context *ctx, tk_devptr *out, size_t bytes);
/* Frees a buffer from tk_malloc. 0 is ignored. */
TK_API tk_status tk_free(tk_context *ctx, tk_devptr p);
/* Copies bytes host -> device. */
TK_API tk_status tk_memcpy_htod(tk_context *ctx, tk_devptr dst, const void *src, size_t bytes);
/* Copies bytes device -> host (waits for prior work). */
TK_API tk_status tk_memcpy_dtoh(tk_context *ctx, void *dst, tk_devptr src, size_t bytes);
/* Waits for all work on the context. */
TK_API tk_status tk_synchronize(tk_context *ctx);

/* ---- compiling ------------------------------------------------------------------------ */

/* A compile-time parameter binding: NAME=VALUE, as with tkc -D. The value is parsed as a
 * .tk literal (integer, float or true/false), or for a dtype parameter (T: dtype = f16)
 * as a scalar type name ("bf16", "f32", "bool", ...). */
typedef struct {
  const char *name;
  const char *value;
} tk_define;

/* The input precision of an f32 dot (Triton's input_precision): TK_DOT_DEFAULT is tf32. */
typedef enum { TK_DOT_DEFAULT = 0, TK_DOT_TF32, TK_DOT_IEEE, TK_DOT_TF32X3 } tk_dot_precision;

/* How fusion keeps a wide value two of its chunk loops need (tkc -ffuse-keep=): its cost
 * model's choice (TK_FUSE_KEEP_AUTO), or forced: recomputed (reloaded), the online rewrite
 * for max/sum pairs (one loop, the documented reassociation), staged in shared memory, or
 * split over a thread-block cluster (sm_90: each CTA keeps its share of the row in shared
 * memory, the reductions are combined across the cluster). */
typedef enum {
  TK_FUSE_KEEP_AUTO = 0,
  TK_FUSE_KEEP_RECOMPUTE,
  TK_FUSE_KEEP_ONLINE,
  TK_FUSE_KEEP_SMEM,
  TK_FUSE_KEEP_CLUSTER
} tk_fuse_keep;

typedef struct {
  const tk_define *defines;
  int ndefines;
  int opt_level;       /* 0..3; default (when the struct is zeroed) is treated as 3 */
  const char *arch;    /* NULL: the device's (CUDA; see docs/api.md) */
  int no_cache;        /* 1: neither read nor write the on-disk cache */
  /* Numerics (docs/language.md, "Precision"); zero is the default of each. */
  tk_dot_precision dot_precision; /* f32 dot's input precision where a call names none */
  int accurate_math;   /* 1: f32 sin, cos, exp, exp2, sigmoid by libdevice's full-range
                          routines on the GPU (tkc -fmath=accurate); 0: approximations */
  int fp_contract;     /* 1: a * b + c may be contracted into fma on both backends alike
                          (tkc -ffp-contract=fast); 0: never */
  int no_fuse;         /* 1: as tkc -fno-fuse, every op's result goes through global scratch
                          memory (the unfused baseline; launches allocate the scratch) */
  tk_fuse_keep fuse_keep; /* as tkc -ffuse-keep=: how fusion keeps a value two of its loops
                          need (docs/passes.md, "Keep or recompute"); 0: its cost model */
} tk_compile_options;

/* Compiles .tk source text. name is used in diagnostics (e.g. "softmax.tk"). opts may be
 * NULL. On TK_ERR_COMPILE, tk_last_error holds every diagnostic, rendered. */
TK_API tk_status tk_module_compile(tk_context *ctx, tk_module **out, const char *source, size_t len,
                            const char *name, const tk_compile_options *opts);
/* Reads and compiles a .tk file. */
TK_API tk_status tk_module_compile_file(tk_context *ctx, tk_module **out, const char *path,
                                 const tk_compile_options *opts);
/* Loads an ahead-of-time compiled PTX module (CUDA backend only). */
TK_API tk_status tk_module_load_ptx(tk_context *ctx, tk_module **out, const char *ptx, size_t len);
/* Releases a module (its kernels become invalid). NULL is ignored. */
TK_API void tk_module_destroy(tk_module *m);
/* Looks a kernel up by name. */
TK_API tk_status tk_module_get_kernel(tk_module *m, const char *name, tk_kernel **out);

/* The module's kernels, in source order: how many, and the i-th (NULL when i is out of
 * range), for callers that list them (the Python binding). */
TK_API int tk_module_num_kernels(const tk_module *m);
TK_API tk_kernel *tk_module_kernel(tk_module *m, int i);
/* The kernel's name. */
TK_API const char *tk_kernel_name(const tk_kernel *k);

/* The kernel's parameters, in order: how many, and each one's type. */
TK_API int tk_kernel_num_params(const tk_kernel *k);
TK_API tk_dtype tk_kernel_param_type(const tk_kernel *k, int i);
/* The pointee type of a pointer parameter (TK_NDTYPE for a scalar parameter). */
TK_API tk_dtype tk_kernel_param_pointee(const tk_kernel *k, int i);
TK_API const char *tk_kernel_param_name(const tk_kernel *k, int i);
/* Threads per program (32 x warps). */
TK_API int tk_kernel_num_threads(const tk_kernel *k);

/* Where tk_kernel_resources' numbers came from. */
typedef enum {
  TK_RES_PTXAS = 1,  /* ptxas -v on the kernel's PTX for the arch asked for */
  TK_RES_DRIVER = 2, /* the CUDA driver, about the function it loaded (cuFuncGetAttribute) */
} tk_resources_source;

/* What a kernel costs the GPU (docs/language.md, "Resources"). */
typedef struct {
  int regs;                      /* 32-bit registers per thread */
  int spill_stores, spill_loads; /* bytes spilled to local memory per thread */
  int stack;                     /* bytes of stack frame per thread */
  int smem_static, smem_dynamic; /* bytes of shared memory per program */
  int threads;                   /* per program (32 x warps, plus any producer warps) */
  int blocks_per_sm;             /* programs resident on one SM at once */
  double occupancy;              /* their warps over the SM's most, 0..1 */
  tk_resources_source source;    /* where the numbers came from */
} tk_resources;

/* Fills *out for k's variant that takes any arguments (a launch with aligned, divisible
 * arguments may run a specialized variant, whose numbers differ), compiled for arch (NULL:
 * the context's device, or the default target on the interpreter), with the occupancy the
 * target's SM allows (tkc --resources prints the same), and says in out->source where the
 * numbers came from:
 *  - TK_RES_PTXAS: ptxas -v, when ptxas is found ($TK_PTXAS, $CUDA_HOME/bin,
 *    /usr/local/cuda/bin) and k was compiled here (has IR); any arch, any backend.
 *  - TK_RES_DRIVER: otherwise, on a CUDA context and for its own arch only, the driver's
 *    attributes of the loaded function (compiling and loading the variant first if no
 *    launch has yet) and its cuOccupancyMaxActiveBlocksPerMultiprocessor; this works for
 *    kernels loaded from PTX too. The driver does not tell spills from the stack frame:
 *    stack is all the local memory per thread, and spill_stores and spill_loads are -1
 *    (unknown). Not thread-safe against a launch of k on another thread.
 * TK_ERR_UNSUPPORTED when neither applies (the interpreter without ptxas, another arch
 * than the CUDA context's without ptxas), saying which; TK_ERR_INVALID for an unknown arch;
 * TK_ERR_COMPILE when the kernel does not compile for arch (its shared memory exceeds the
 * target's); TK_ERR_DRIVER when the driver refuses a query. */
TK_API tk_status tk_kernel_resources(const tk_kernel *k, const char *arch, tk_resources *out);

/* ---- launching ------------------------------------------------------------------------ */

/* A typed launch argument. Build them with the tk_arg_* helpers. */
typedef struct {
  tk_dtype type;
  union {
    int64_t i;
    uint64_t u;
    double f;
    tk_devptr p;
  } v;
} tk_arg;

static inline tk_arg tk_arg_ptr(tk_devptr p) { tk_arg a; a.type = TK_PTR; a.v.p = p; return a; }
static inline tk_arg tk_arg_i32(int32_t x) { tk_arg a; a.type = TK_I32; a.v.i = x; return a; }
static inline tk_arg tk_arg_i64(int64_t x) { tk_arg a; a.type = TK_I64; a.v.i = x; return a; }
static inline tk_arg tk_arg_u32(uint32_t x) { tk_arg a; a.type = TK_U32; a.v.u = x; return a; }
static inline tk_arg tk_arg_u64(uint64_t x) { tk_arg a; a.type = TK_U64; a.v.u = x; return a; }
static inline tk_arg tk_arg_f32(float x) { tk_arg a; a.type = TK_F32; a.v.f = x; return a; }
static inline tk_arg tk_arg_f64(double x) { tk_arg a; a.type = TK_F64; a.v.f = x; return a; }
static inline tk_arg tk_arg_bool(int x) { tk_arg a; a.type = TK_I1; a.v.i = x != 0; return a; }

/* The compile-time parameters as the kernel was compiled with them (defaults included;
 * none for AOT PTX): how many, and the i-th one's name and value (value->type TK_I64 for
 * an integer or bool, TK_F64 for a float, TK_NDTYPE for a dtype parameter, whose v.i is
 * the tk_dtype it is bound to). TK_ERR_INVALID when i is out of range. */
TK_API int tk_kernel_num_cparams(const tk_kernel *k);
TK_API tk_status tk_kernel_cparam(const tk_kernel *k, int i, const char **name, tk_arg *value);

typedef struct {
  unsigned x, y, z;
} tk_grid;

/* Launches k on grid (programs along x, y, z; 0 counts as 1) on stream (a CUstream; NULL
 * for the default stream; ignored by the interpreter, which runs to completion). The
 * arguments must match the kernel's parameters in number and type exactly. A launch whose
 * arguments need a variant not compiled yet (docs/api.md, specialization) while stream is
 * capturing a CUDA graph fails with TK_ERR_INVALID instead of compiling: launch once with
 * such arguments before capturing. A grid beyond the CUDA limits (x at most 2^31 - 1, y
 * and z at most 65535) is TK_ERR_INVALID naming the axis and its limit, on every backend,
 * before anything runs. */
TK_API tk_status tk_launch(tk_kernel *k, tk_grid grid, void *stream, const tk_arg *args, int nargs);

/* ---- the roofline (docs/roofline.md) -------------------------------------------------- */

/* What bounds a launch: a memory bandwidth, a FLOP rate, the special-function units, or
 * the launch's own overhead. The values are ABI: a new bound is appended. */
typedef enum {
  TK_BOUND_HBM,     /* HBM bandwidth */
  TK_BOUND_L2,      /* L2 bandwidth (data several programs, or one program again, read) */
  TK_BOUND_F32,     /* f32 arithmetic on the CUDA cores */
  TK_BOUND_TENSOR,  /* dot on the tensor cores */
  TK_BOUND_LAUNCH,  /* the fixed cost of a launch */
  TK_BOUND_SFU      /* the special-function units (MUFU: exp, sin, rcp, ...) */
} tk_bound;

typedef struct {
  double hbm_bytes, l2_bytes;  /* moved to and from HBM, and served by L2, by the launch */
  double flops, tensor_flops;  /* f32-core FLOPs, tensor-core FLOPs */
  double predicted_us;         /* the time the bound implies */
  tk_bound bound;
  const char *bound_name;      /* "memory (HBM bandwidth)", ... (static storage) */
  /* the fraction of each ceiling the launch uses if it takes predicted_us (1: the bound) */
  double fraction_hbm, fraction_l2, fraction_f32, fraction_tensor;
  int trips_unknown;           /* 1: a loop's trip count did not follow from the arguments
                                  and the grid, and was counted once */
  /* appended (the fields above keep their offsets; a program built against the older,
     smaller struct is to be rebuilt): the special-function results (MUFU: an exp is
     one, a tanh two, a log none; docs/roofline.md) and that ceiling's fraction */
  double sfu_ops;
  double fraction_sfu;
} tk_roofline_report;

/* The roofline of launching k on grid with args (as tk_launch takes them: checked the
 * same way; pointer values are not read) on arch, or when arch is NULL the context's
 * (the device's on CUDA, sm_90a on the interpreter): the bytes and FLOPs the launch must
 * move and do, what bounds it on the ceilings of the target table, the predicted time.
 * For the context's own arch on a card the table has measured (by the driver's name of
 * it), that card's ceilings; else the arch's. Loops are counted by their trip counts
 * computed from the integer arguments. Fails
 * with TK_ERR_INVALID for a kernel without IR (loaded from PTX) or an arch without
 * measured ceilings. */
TK_API tk_status tk_roofline(tk_kernel *k, const char *arch, tk_grid grid, const tk_arg *args,
                             int nargs, tk_roofline_report *out);

/* ---- autotuning ------------------------------------------------------------------------ */

/* One configuration to try: compile-time parameters, and the launch attributes (0: the
 * kernel's own; else as -D warps=N / -D stages=N). */
typedef struct {
  const tk_define *defines;
  int ndefines;
  int warps, stages;
} tk_tune_config;

/* The grid a configuration's kernel is launched on (it reads its compile-time parameters
 * with tk_kernel_cparam). */
typedef tk_grid (*tk_tune_grid_fn)(void *user, const tk_kernel *k);
/* A replacement clock, for tests: the milliseconds that timed launch rep of config take. */
typedef double (*tk_tune_timer_fn)(void *user, int config, int rep);

typedef struct {
  const char *key;      /* what the winner is kept for beside the source, the signature and
                           the arch, e.g. the sizes ("M=4096,N=4096"); NULL is "" */
  int warmup, reps;     /* launches before timing, and timed launches (median); 0: 2, 10 */
  int jobs;             /* configurations compiled at once; 0: the machine's cores */
  int progress;         /* 1: a progress line on stderr (in place on a terminal) */
  int no_cache;         /* 1: neither read nor write the winner on disk */
  int no_flush;         /* 1: do not flush the L2 cache before each timed launch */
  tk_tune_timer_fn timer; /* NULL: the device's (CUDA events; the interpreter: wall clock) */
  void *timer_user;
  const char *record;   /* a file to append "KEY: CONFIG" to when a winner is found (what
                           tkc --tune=FILE --emit=c embeds), or NULL */
} tk_tune_options;

/* Compiles `kernel` of source under every configuration (over base's options; in
 * parallel, through the disk cache, on CUDA), times each on the context's device with
 * args (warm-up, then the median of reps launches on stream, L2 flushed before each, CUDA
 * events), and returns the index of the fastest in *best and its module, compiled on ctx,
 * in *out. The winner is kept on disk per (source, kernel, base options, configurations,
 * arguments' signature, arch, key), corruption-safe like the compile cache, so a later
 * call returns it without timing anything. times, when not NULL, receives each
 * configuration's median in milliseconds (a negative value: not timed, because it failed
 * to compile or launch or the winner came from the cache). A configuration that fails is
 * skipped; all failing is the last failure's status. */
TK_API tk_status tk_tune(tk_context *ctx, const char *source, size_t len, const char *name,
                         const char *kernel, const tk_compile_options *base,
                         const tk_tune_config *configs, int nconfigs, tk_tune_grid_fn grid,
                         void *grid_user, void *stream, const tk_arg *args, int nargs,
                         const tk_tune_options *topts, int *best, double *times,
                         tk_module **out);

#ifdef __cplusplus
}
#endif
#endif
