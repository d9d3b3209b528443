/*
 * backend_cuda.c — rt_cuda_backend: libtk on an NVIDIA GPU through the CUDA driver API
 * (loaded at run time, see cuda.h).
 *
 * Design notes:
 *  - The context is the device's primary context (shared with the CUDA runtime, PyTorch,
 *    …, as a user of both expects). It is made current at creation and before every call
 *    except launch; a launch from a thread where it is not current fails with
 *    CUDA_ERROR_INVALID_CONTEXT, and only then is it made current and the launch retried,
 *    so the common path pays nothing for it.
 *  - Every buffer tk_malloc makes is recorded (sorted by address), so that
 *    tk_context_destroy frees them all even though the primary context outlives it when
 *    another user (the CUDA runtime, PyTorch, a second tk context) holds it too; tk_free
 *    and copies refuse an address that is another tk context's, and so does a launch.
 *    Addresses tk did not allocate (PyTorch's tensors) are the caller's business.
 *  - libcuda is never dlclosed once cuInit ran: the driver has started threads and
 *    registered handlers by then, and unloading its code under them crashes the process.
 *  - A kernel fault (illegal address, trap, ...) is sticky in CUDA: the context can do
 *    nothing afterwards. It is reported as such, and every later call on the tk context
 *    says that the context is dead, and why, instead of a confusing driver error.
 *  - What is compiled when, and how launch arguments are packed and matched to a variant,
 *    is the JIT's (jit.h); this file makes the driver calls: loading PTX, resolving and
 *    configuring functions, launching.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "jit.h"
#include "ptx_sig.h"

typedef struct {
  CUdeviceptr base;
  size_t size;
} allocation;

typedef struct cuda_state {
  rt_cuda_api cu;
  CUdevice dev;
  CUcontext pctx;
  int sms;          /* multiprocessors: a persistent kernel's grid */
  rt_cache cache;
  su_arena *arena;  /* for the state's own strings */
  allocation *allocs; /* what tk_malloc made here, sorted by base */
  size_t nallocs, capallocs;
  su_buf dead;      /* non-empty once a sticky fault killed the context: its message */
  struct cuda_state *next_live; /* the process's CUDA contexts (live_lock) */
  /* the autotuner's (time_launch), made at its first use */
  CUdeviceptr flush;  /* a buffer twice the L2 cache, written to evict it */
  size_t flush_bytes;
  /* -fno-fuse kernels' global scratch (cg_abi.scratch), grown to the largest launch; one
   * per context, so such launches must not overlap (docs/api.md) */
  CUdeviceptr scratch;
  size_t scratch_bytes;
  /* workspace ops' buffer (cg_abi.workspace), zero when allocated and grown (zeroed anew)
   * to the largest launch; one per context, kept between launches of one variant (a
   * kernel resets its own counters) and zeroed when the variant changes
   * (workspace_layout), so such launches must not overlap either */
  CUdeviceptr workspace;
  size_t workspace_bytes;
  uint64_t workspace_layout; /* rt_hidden.layout of the variant that used it last */
  CUevent ev[2];
} cuda_state;

/* Every live CUDA tk context, so that an address of another one is recognised. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static cuda_state *live;
/* How many there are (changed under live_lock): with one, a launch's pointers cannot be
 * another's, and it takes no lock to know that. */
static _Atomic int nlive;

/* A module's driver state: its CUmodules (the one loaded with it, then one per variant
 * compiled at launch) and what compiling another variant needs. */
typedef struct {
  CUmodule *mods;
  int nmods, capmods;
  rt_jit_module jit;
} cuda_module;

static cuda_state *state(rt_context *ctx) { return ctx->state; }

/* True for the driver errors that leave the context unusable (a kernel faulted). */
static bool sticky(CUresult r) {
  switch (r) {
  case 700: /* ILLEGAL_ADDRESS */ case 710: /* ASSERT */ case 714: /* HARDWARE_STACK_ERROR */
  case 715: /* ILLEGAL_INSTRUCTION */ case 716: /* MISALIGNED_ADDRESS */
  case 717: /* INVALID_ADDRESS_SPACE */ case 718: /* INVALID_PC */ case 719: /* LAUNCH_FAILED */
  case 720: /* COOPERATIVE_LAUNCH_TOO_LARGE */
    return true;
  default:
    return false;
  }
}

/* Maps a driver failure to a tk status and message ("what: CUDA_ERROR_X: text"); a
 * sticky fault also marks the context dead. */
static tk_status fail(rt_context *ctx, CUresult r, const char *what) {
  cuda_state *st = state(ctx);
  su_buf b = {0};
  rt_cuda_describe(&st->cu, r, &b);
  tk_status s = TK_ERR_DRIVER;
  if (r == CUDA_ERROR_OUT_OF_MEMORY) s = TK_ERR_MEMORY;
  if (sticky(r)) {
    s = TK_ERR_RUNTIME;
    if (!st->dead.len)
      su_buf_printf(&st->dead, "a kernel faulted (%s, reported by %s)", su_buf_str(&b), what);
    rt_error(ctx, s, "%s: a kernel faulted: %s; the CUDA context is now unusable (the fault "
             "is sticky): destroy this tk context", what, su_buf_str(&b));
  } else {
    rt_error(ctx, s, "%s: %s", what, su_buf_str(&b));
  }
  su_buf_free(&b);
  return s;
}

/* Refuses every call on a context a sticky fault killed, saying so. */
#define ALIVE(ctx)                                                                        \
  do {                                                                                    \
    if (state(ctx)->dead.len)                                                             \
      return rt_error((ctx), TK_ERR_RUNTIME, "the CUDA context is dead: %s; destroy this " \
                      "tk context", state(ctx)->dead.data);                               \
  } while (0)

/* ---- allocations ------------------------------------------------------------------- */

/* The index of the allocation of st holding address p (base <= p < base + size, or
 * p == base + size: one past the end is a valid kernel argument), or -1. */
static ptrdiff_t find_alloc(const cuda_state *st, CUdeviceptr p, bool past_end) {
  size_t lo = 0, hi = st->nallocs;
  while (lo < hi) { /* the first allocation with base > p */
    size_t mid = lo + (hi - lo) / 2;
    if (st->allocs[mid].base <= p) lo = mid + 1; else hi = mid;
  }
  if (lo == 0) return -1;
  const allocation *a = &st->allocs[lo - 1];
  return p - a->base < a->size || (past_end && p - a->base == a->size) ? (ptrdiff_t)lo - 1 : -1;
}

static bool add_alloc(cuda_state *st, CUdeviceptr p, size_t bytes) {
  if (st->nallocs == st->capallocs) {
    size_t cap = st->capallocs ? 2 * st->capallocs : 16;
    allocation *v = realloc(st->allocs, cap * sizeof *v);
    if (!v) return false;
    st->allocs = v;
    st->capallocs = cap;
  }
  size_t i = st->nallocs;
  while (i > 0 && st->allocs[i - 1].base > p) i--;
  memmove(&st->allocs[i + 1], &st->allocs[i], (st->nallocs - i) * sizeof *st->allocs);
  st->allocs[i] = (allocation){p, bytes};
  st->nallocs++;
  return true;
}

/* True if p lies in a buffer of another live CUDA tk context than st. */
static bool of_another_context(const cuda_state *st, CUdeviceptr p) {
  pthread_mutex_lock(&live_lock);
  bool found = false;
  for (const cuda_state *o = live; o && !found; o = o->next_live)
    found = o != st && find_alloc(o, p, true) >= 0;
  pthread_mutex_unlock(&live_lock);
  return found;
}

/* A copy's device range must not reach into another context's buffer. */
static tk_status check_range(rt_context *ctx, const char *what, CUdeviceptr p) {
  cuda_state *st = state(ctx);
  if (find_alloc(st, p, false) < 0 && of_another_context(st, p))
    return rt_error(ctx, TK_ERR_INVALID, "%s: 0x%llx is a buffer of another tk context", what,
                    (unsigned long long)p);
  return TK_OK;
}

#define CHECK(ctx, call, what) \
  do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) return fail((ctx), r_, (what)); } while (0)

static tk_status cuda_init(rt_context *ctx, int device) {
  cuda_state *st = calloc(1, sizeof *st);
  if (!st) return rt_error(ctx, TK_ERR_MEMORY, "out of host memory");
  su_buf why = {0};
  if (!rt_cuda_load(&st->cu, &why)) {
    rt_error(ctx, TK_ERR_NO_DEVICE, "no CUDA device: %s", su_buf_str(&why));
    su_buf_free(&why);
    free(st);
    return TK_ERR_NO_DEVICE;
  }
  ctx->state = st;
  tk_status s = TK_ERR_NO_DEVICE;
  int count = 0;
  /* Only "no device" (cuInit's CUDA_ERROR_NO_DEVICE, or a count of 0) is TK_ERR_NO_DEVICE,
   * which AUTO falls back on: a driver that fails to start, or an ordinal the machine does
   * not have, is an error the caller must see. */
  CUresult r = st->cu.Init(0);
  if (r == CUDA_SUCCESS) r = st->cu.DeviceGetCount(&count);
  if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && count == 0)) {
    rt_error(ctx, TK_ERR_NO_DEVICE, "no CUDA device %d (the machine has none)", device);
  } else if (r == CUDA_SUCCESS && device >= count) {
    s = rt_error(ctx, TK_ERR_INVALID, "no CUDA device %d (the machine has %d, numbered from 0)",
                 device, count);
  } else if (r != CUDA_SUCCESS) {
    rt_cuda_describe(&st->cu, r, &why);
    s = rt_error(ctx, TK_ERR_DRIVER, "the CUDA driver failed to start: %s", su_buf_str(&why));
  } else {
    int major = 0, minor = 0;
    r = st->cu.DeviceGet(&st->dev, device);
    if (r == CUDA_SUCCESS) r = st->cu.DevicePrimaryCtxRetain(&st->pctx, st->dev);
    if (r == CUDA_SUCCESS) r = st->cu.CtxSetCurrent(st->pctx);
    if (r == CUDA_SUCCESS)
      r = st->cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, st->dev);
    if (r == CUDA_SUCCESS)
      r = st->cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, st->dev);
    /* The newest target the device runs (tg_for_cc): sm_90a on 9.0 exactly, since
     * arch-specific PTX does not run on later parts, and sm_90 above it, forward
     * compatible through the driver's JIT. */
    const tg_arch *t = r == CUDA_SUCCESS ? tg_for_cc(major, minor) : NULL;
    /* a persistent kernel's grid: its programs per SM times these */
    if (t && st->cu.DeviceGetAttribute(&st->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, st->dev) != CUDA_SUCCESS)
      st->sms = 1;
    if (t) {
      ctx->arch = t->name;
      st->arena = su_arena_new();
      char name[256];
      if (st->cu.DeviceGetName(name, (int)sizeof name, st->dev) == CUDA_SUCCESS) {
        name[sizeof name - 1] = 0;
        ctx->device_name = su_strdup(st->arena, name);
      }
      rt_cache_open(&st->cache, st->arena, NULL);
      ctx->cache_dir = st->cache.dir;
      su_buf_free(&why);
      pthread_mutex_lock(&live_lock);
      st->next_live = live;
      live = st;
      atomic_fetch_add_explicit(&nlive, 1, memory_order_release);
      pthread_mutex_unlock(&live_lock);
      return TK_OK;
    }
    if (r != CUDA_SUCCESS) {
      s = fail(ctx, r, "creating the CUDA context");
    } else {
      su_buf names = {0};
      tg_names(&names, ", ");
      s = rt_error(ctx, TK_ERR_UNSUPPORTED,
                   "CUDA device %d has compute capability %d.%d, older than every target tk "
                   "compiles for (%s)", device, major, minor, su_buf_str(&names));
      su_buf_free(&names);
    }
    if (st->pctx) st->cu.DevicePrimaryCtxRelease(st->dev);
  }
  su_buf_free(&why);
  /* cuInit ran: the library stays loaded (see the notes at the top) */
  su_buf_free(&st->dead);
  free(st);
  ctx->state = NULL;
  return s;
}

static void cuda_shutdown(rt_context *ctx) {
  cuda_state *st = state(ctx);
  if (!st) return;
  pthread_mutex_lock(&live_lock);
  for (cuda_state **p = &live; *p; p = &(*p)->next_live)
    if (*p == st) {
      *p = st->next_live;
      atomic_fetch_sub_explicit(&nlive, 1, memory_order_release);
      break;
    }
  pthread_mutex_unlock(&live_lock);
  /* The primary context may live on (another user holds it), so the buffers go one by
   * one; on a dead context the driver refuses, and they go with the primary context's
   * reset by whoever recovers the device. */
  if (st->nallocs && st->cu.CtxSetCurrent(st->pctx) == CUDA_SUCCESS)
    for (size_t i = 0; i < st->nallocs; i++) st->cu.MemFree(st->allocs[i].base);
  free(st->allocs);
  if ((st->flush || st->ev[0] || st->scratch || st->workspace) &&
      st->cu.CtxSetCurrent(st->pctx) == CUDA_SUCCESS) {
    if (st->flush) st->cu.MemFree(st->flush);
    if (st->scratch) st->cu.MemFree(st->scratch);
    if (st->workspace) st->cu.MemFree(st->workspace);
    for (int i = 0; i < 2; i++)
      if (st->ev[i]) st->cu.EventDestroy(st->ev[i]);
  }
  st->cu.DevicePrimaryCtxRelease(st->dev);
  su_arena_free(st->arena);
  su_buf_free(&st->dead);
  free(st);
  ctx->state = NULL;
}

static tk_status cuda_malloc(rt_context *ctx, tk_devptr *out, size_t bytes) {
  cuda_state *st = state(ctx);
  ALIVE(ctx);
  CUdeviceptr p = 0;
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CHECK(ctx, st->cu.MemAlloc(&p, bytes), "cuMemAlloc");
  pthread_mutex_lock(&live_lock); /* of_another_context may be reading the table */
  bool ok = add_alloc(st, p, bytes);
  pthread_mutex_unlock(&live_lock);
  if (!ok) {
    st->cu.MemFree(p);
    return rt_error(ctx, TK_ERR_MEMORY, "tk_malloc: out of host memory");
  }
  *out = p;
  return TK_OK;
}

static tk_status cuda_free(rt_context *ctx, tk_devptr p) {
  cuda_state *st = state(ctx);
  ALIVE(ctx);
  ptrdiff_t i = find_alloc(st, p, false);
  if (i < 0 || st->allocs[i].base != p)
    return rt_error(ctx, TK_ERR_INVALID, "tk_free: 0x%llx is not an address returned by "
                    "tk_malloc on this context%s", (unsigned long long)p,
                    of_another_context(st, p) ? " (it is another tk context's)" : "");
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CHECK(ctx, st->cu.MemFree(p), "cuMemFree");
  pthread_mutex_lock(&live_lock);
  memmove(&st->allocs[i], &st->allocs[i + 1], (st->nallocs - (size_t)i - 1) * sizeof *st->allocs);
  st->nallocs--;
  pthread_mutex_unlock(&live_lock);
  return TK_OK;
}

static tk_status cuda_htod(rt_context *ctx, tk_devptr dst, const void *src, size_t bytes) {
  cuda_state *st = state(ctx);
  ALIVE(ctx);
  tk_status s = check_range(ctx, "tk_memcpy_htod", dst);
  if (s != TK_OK) return s;
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CHECK(ctx, st->cu.MemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
  return TK_OK;
}

static tk_status cuda_dtoh(rt_context *ctx, void *dst, tk_devptr src, size_t bytes) {
  cuda_state *st = state(ctx);
  ALIVE(ctx);
  tk_status s = check_range(ctx, "tk_memcpy_dtoh", src);
  if (s != TK_OK) return s;
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CHECK(ctx, st->cu.MemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
  return TK_OK;
}

static tk_status cuda_sync(rt_context *ctx) {
  cuda_state *st = state(ctx);
  ALIVE(ctx);
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CHECK(ctx, st->cu.CtxSynchronize(), "a kernel or copy failed");
  return TK_OK;
}

/* ---- loading ------------------------------------------------------------------------- */

/* Appends mod to m's modules (unloaded with it). */
static void keep_module(rt_module *m, CUmodule mod) {
  cuda_module *cm = m->handle;
  if (cm->nmods == cm->capmods) {
    int cap = cm->capmods ? 2 * cm->capmods : 4;
    CUmodule *v = SU_NEW_ARRAY(m->arena, CUmodule, cap);
    if (cm->nmods) memcpy(v, cm->mods, sizeof *v * (size_t)cm->nmods);
    cm->mods = v;
    cm->capmods = cap;
  }
  cm->mods[cm->nmods++] = mod;
}

/* Loads NUL-terminated PTX into a new CUmodule of m (*out); a JIT failure carries the
 * driver's log. */
static tk_status load_module(rt_context *ctx, rt_module *m, const char *ptx, CUmodule *out) {
  cuda_state *st = state(ctx);
  enum { LOG = 16384 };
  char *errlog = su_alloc(m->arena, LOG), *infolog = su_alloc(m->arena, LOG);
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {errlog, (void *)(uintptr_t)LOG, infolog, (void *)(uintptr_t)LOG};
  CUmodule mod = NULL;
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CUresult r = st->cu.ModuleLoadDataEx(&mod, ptx, 4, opts, vals);
  if (r != CUDA_SUCCESS) {
    su_buf b = {0};
    rt_cuda_describe(&st->cu, r, &b);
    errlog[LOG - 1] = '\0';
    rt_error(ctx, TK_ERR_DRIVER, "the CUDA driver rejected the PTX (%s)%s%s", su_buf_str(&b),
             errlog[0] ? ":\n" : "", errlog);
    su_buf_free(&b);
    return TK_ERR_DRIVER;
  }
  keep_module(m, mod);
  *out = mod;
  return TK_OK;
}

/* Resolves k's CUfunction in mod (loaded from ptx) as the variant for key and makes it
 * the one in use; a kernel whose scratch exceeds the 48 KB of static shared memory is
 * allowed its dynamic size here, once, so a launch stays one driver call. */
static tk_status add_variant(rt_context *ctx, rt_kernel *k, CUmodule mod, const char *ptx,
                             uint64_t key) {
  cuda_state *st = state(ctx);
  CUfunction fn = NULL;
  CUresult r = st->cu.ModuleGetFunction(&fn, mod, k->sig->name);
  if (r != CUDA_SUCCESS) {
    su_buf b = {0};
    rt_cuda_describe(&st->cu, r, &b);
    rt_error(ctx, TK_ERR_DRIVER, "kernel '%s' is missing from the loaded PTX (%s)", k->sig->name,
             su_buf_str(&b));
    su_buf_free(&b);
    return TK_ERR_DRIVER;
  }
  int shmem = 0;
  if (cg_ptx_shared_bytes(ptx, k->sig->name, &shmem) && shmem > 0) {
    r = st->cu.FuncSetAttribute(fn, RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shmem);
    if (r != CUDA_SUCCESS) {
      su_buf b = {0};
      rt_cuda_describe(&st->cu, r, &b);
      rt_error(ctx, TK_ERR_DRIVER, "kernel '%s' needs %d bytes of shared memory, which the device refused (%s)",
               k->sig->name, shmem, su_buf_str(&b));
      su_buf_free(&b);
      return TK_ERR_DRIVER;
    }
  }
  cg_abi abi;
  if (!cg_ptx_abi(ptx, k->sig->name, &abi)) {
    rt_error(ctx, TK_ERR_DRIVER, "kernel '%s': the PTX's launch contract (.tk.abi) is malformed", k->sig->name);
    return TK_ERR_DRIVER;
  }
  if (abi.cluster > 8) { /* above the portable size the function opts in, once */
    r = st->cu.FuncSetAttribute(fn, RT_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (r != CUDA_SUCCESS) {
      su_buf b = {0};
      rt_cuda_describe(&st->cu, r, &b);
      rt_error(ctx, TK_ERR_DRIVER, "kernel '%s' runs as clusters of %d CTAs, which the device refused (%s)",
               k->sig->name, abi.cluster, su_buf_str(&b));
      su_buf_free(&b);
      return TK_ERR_DRIVER;
    }
  }
  rt_jit_add(k->module->arena, k->handle, key, fn, (unsigned)(shmem > 0 ? shmem : 0), &abi);
  return TK_OK;
}

/* Sets up every kernel of m and adds each one's variant from mod, compiled for the
 * signature `all` selects (every bit, or none). */
static tk_status bind_all(rt_context *ctx, rt_module *m, CUmodule mod, const char *ptx, bool all) {
  for (int i = 0; i < m->nkernels; i++) {
    m->kernels[i].handle = rt_jit_kernel_new(m->arena, &m->kernels[i]);
    uint64_t key = all ? rt_jit_full_key(m->kernels[i].handle) : 0;
    tk_status s = add_variant(ctx, &m->kernels[i], mod, ptx, key);
    if (s != TK_OK) return s;
  }
  return TK_OK;
}

/* The PTX of m's variant for key (of `only` alone, or of every kernel), through the JIT
 * (*hit: from the cache). */
static tk_status get_ptx(rt_context *ctx, rt_module *m, const ir_func *only, uint64_t key,
                         su_buf *ptx, bool *hit) {
  cuda_module *cm = m->handle;
  su_buf why = {0};
  tk_status s = TK_OK;
  if (!rt_jit_ptx(&cm->jit, m->ir, only, key, ptx, hit, &why))
    s = rt_error(ctx, TK_ERR_COMPILE, "%s", su_buf_str(&why));
  su_buf_free(&why);
  return s;
}

/* get_ptx, then loads the PTX into a new CUmodule of m (*mod). A cache entry the driver
 * rejects is evicted and rebuilt, once. */
static tk_status load_ptx_of(rt_context *ctx, rt_module *m, const ir_func *only, uint64_t key,
                             su_buf *ptx, CUmodule *mod) {
  bool hit;
  tk_status s = get_ptx(ctx, m, only, key, ptx, &hit);
  if (s == TK_OK) s = load_module(ctx, m, su_buf_str(ptx), mod);
  if (s == TK_ERR_DRIVER && hit) {
    rt_jit_evict(&((cuda_module *)m->handle)->jit, only, key);
    ptx->len = 0;
    s = get_ptx(ctx, m, only, key, ptx, &hit);
    if (s == TK_OK) s = load_module(ctx, m, su_buf_str(ptx), mod);
  }
  return s;
}

/* Compiles and loads the fully specialized variant of every kernel at once: the one the
 * common case (sizes multiple of 16, aligned allocations) launches. */
static tk_status cuda_load_ir(rt_context *ctx, rt_module *m, const tk_compile_options *opts,
                              const drv_options *o, const char *source, size_t len) {
  cuda_state *st = state(ctx);
  ALIVE(ctx);
  cuda_module *cm = SU_NEW(m->arena, cuda_module);
  m->handle = cm;
  rt_jit_module_init(&cm->jit, m->arena, opts, o, &st->cache, source, len,
                     m->ir->source_name);
  su_buf ptx = {0};
  CUmodule mod = NULL;
  tk_status s = load_ptx_of(ctx, m, NULL, RT_SPEC_ALL, &ptx, &mod);
  if (s == TK_OK) s = bind_all(ctx, m, mod, su_buf_str(&ptx), true);
  su_buf_free(&ptx);
  return s;
}

/* Makes k's variant for signature key the one in use, compiling and loading it (k alone)
 * the first time — but not while stream is capturing a CUDA graph: loading a module then
 * is illegal under the global capture mode (PyTorch's default) and would put a compile
 * inside what the user meant to be a replayable launch, so it is an error saying what to
 * do instead. */
static tk_status use_variant(rt_context *ctx, rt_kernel *k, uint64_t key, CUstream stream) {
  if (rt_jit_use(k->handle, key)) return TK_OK;
  int capturing = 0;
  if (state(ctx)->cu.StreamIsCapturing(stream, &capturing) == CUDA_SUCCESS && capturing)
    return rt_error(ctx, TK_ERR_INVALID,
                    "kernel '%s': these arguments need a variant that is not compiled yet "
                    "(specialization signature 0x%llx), and the stream is capturing a CUDA "
                    "graph; launch the kernel once with arguments of the same sizes and "
                    "alignment before capturing", k->sig->name, (unsigned long long)key);
  su_buf ptx = {0};
  CUmodule mod = NULL;
  /* compiling at launch: an internal error of the compiler fails the launch, not the
   * process (as tk_module_compile) */
  su_trap trap;
  su_trap_push(&trap);
  if (setjmp(trap.jb))
    return rt_error(ctx, trap.oom ? TK_ERR_MEMORY : TK_ERR_COMPILE, "kernel '%s': internal "
                    "compiler error compiling a variant: %s", k->sig->name, trap.msg);
  tk_status s = load_ptx_of(ctx, k->module, k->ir, key, &ptx, &mod);
  su_trap_clear(&trap);
  if (s == TK_OK) s = add_variant(ctx, k, mod, su_buf_str(&ptx), key);
  su_buf_free(&ptx);
  return s;
}

/* Builds m->kernels from the PTX's entries when the caller has not (no IR to read). */
static void kernels_from_ptx(rt_module *m, const char *ptx, size_t len) {
  rt_ptx_entry *es;
  int n = rt_ptx_entries(m->arena, ptx, len, &es);
  m->kernels = SU_NEW_ARRAY(m->arena, rt_kernel, n);
  m->nkernels = n;
  for (int i = 0; i < n; i++) {
    rt_kernel *k = &m->kernels[i];
    ir_signature *sig = SU_NEW(m->arena, ir_signature);
    sig->name = es[i].name;
    sig->params = es[i].params;
    sig->nparams = es[i].nparams;
    /* the hidden arguments of tk's own PTX are the launch's business, not the caller's */
    cg_abi abi;
    if (cg_ptx_abi(ptx, es[i].name, &abi)) {
      int hidden = cg_abi_hidden(&abi);
      if (hidden <= sig->nparams) sig->nparams -= hidden;
    }
    sig->num_warps = es[i].num_threads >= 32 ? es[i].num_threads / 32 : TG_DEFAULT_WARPS;
    sig->num_stages = TG_DEFAULT_STAGES;
    k->module = m;
    k->sig = sig;
  }
}

static tk_status cuda_load_ptx(rt_context *ctx, rt_module *m, const char *ptx, size_t len) {
  ALIVE(ctx);
  /* The driver needs a terminating NUL that the caller's buffer may lack. */
  char *text = su_strndup(m->arena, ptx, len);
  m->handle = SU_NEW(m->arena, cuda_module);
  CUmodule mod = NULL;
  tk_status s = load_module(ctx, m, text, &mod);
  if (s != TK_OK) return s;
  if (m->nkernels == 0) kernels_from_ptx(m, text, strlen(text));
  return bind_all(ctx, m, mod, text, false);
}

static void cuda_unload(rt_context *ctx, rt_module *m) {
  cuda_state *st = state(ctx);
  cuda_module *cm = m->handle;
  if (!cm || !cm->nmods) return;
  st->cu.CtxSetCurrent(st->pctx);
  for (int i = 0; i < cm->nmods; i++) st->cu.ModuleUnload(cm->mods[i]);
  m->handle = NULL;
}

/* ---- launching ----------------------------------------------------------------------- */

/* One driver launch; pdl: through cuLaunchKernelEx with programmatic stream serialization,
 * so that the kernel (which waits for its predecessor with griddepcontrol.wait before
 * anything else) may be scheduled while the stream's previous kernel finishes. */
static CUresult launch_raw(cuda_state *st, CUfunction fn, unsigned gx, unsigned gy, unsigned gz,
                           const rt_jit_kernel *jk, void *stream, bool pdl) {
  if (!pdl)
    return st->cu.LaunchKernel(fn, gx, gy, gz, jk->block, 1, 1, jk->shmem, (CUstream)stream,
                               jk->cur_argv, NULL);
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg = {gx, gy, gz, jk->block, 1, 1, jk->shmem, (CUstream)stream, &attr, 1};
  return st->cu.LaunchKernelEx(&cfg, fn, jk->cur_argv, NULL);
}

/* A context buffer a kernel's hidden argument points at (the scratch or the workspace). */
typedef struct {
  CUdeviceptr *base;
  size_t *bytes;
  const char *what; /* for messages */
  bool zeroed;      /* made zero when allocated */
} context_buffer;

/* Makes b hold programs x per bytes for a launch of k on stream: kept when it does, else
 * freed (once the launches in flight that may use it are done) and allocated anew, zeroed
 * on the stream ahead of the launch when b.zeroed (*fresh set, when not NULL). */
static tk_status fit_buffer(rt_context *ctx, const rt_kernel *k, context_buffer b, uint64_t programs,
                            uint64_t per, CUstream stream, bool *fresh) {
  cuda_state *st = state(ctx);
  if (programs > SIZE_MAX / per)
    return rt_error(ctx, TK_ERR_MEMORY, "kernel '%s': %llu programs x %llu bytes of %s do not fit "
                    "the address space", k->sig->name, (unsigned long long)programs,
                    (unsigned long long)per, b.what);
  size_t need = (size_t)(programs * per);
  if (need <= *b.bytes) return TK_OK;
  /* (the launch path leaves the context to the caller's thread: growing is rare) */
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  /* the old buffer may still be used by a launch in flight */
  CHECK(ctx, st->cu.CtxSynchronize(), "a kernel failed");
  if (*b.base) st->cu.MemFree(*b.base);
  *b.base = 0;
  *b.bytes = 0;
  CHECK(ctx, st->cu.MemAlloc(b.base, need), b.zeroed ? "cuMemAlloc (the workspace buffer)"
                                                     : "cuMemAlloc (the -fno-fuse scratch buffer)");
  if (b.zeroed) {
    CUresult r = st->cu.MemsetD8Async(*b.base, 0, need, stream);
    if (r != CUDA_SUCCESS) {
      st->cu.MemFree(*b.base); /* not zero: no use to a later launch */
      *b.base = 0;
      return fail(ctx, r, "cuMemsetD8Async (zeroing the workspace buffer)");
    }
  }
  *b.bytes = need;
  if (fresh) *fresh = true;
  return TK_OK;
}

/* The scratch (per program of the grid asked for, `logical`: a persistent kernel's
 * programs index it by the tile they run) and the workspace (per program launched,
 * `launched`) of h's kernel, grown as this launch needs. */
static tk_status hidden_buffers(rt_context *ctx, const rt_kernel *k, rt_hidden *h, uint64_t logical,
                                uint64_t launched, CUstream stream) {
  cuda_state *st = state(ctx);
  if (h->abi.scratch) {
    context_buffer b = {&st->scratch, &st->scratch_bytes, "scratch", false};
    tk_status s = fit_buffer(ctx, k, b, logical, (uint64_t)h->abi.scratch, stream, NULL);
    if (s != TK_OK) return s;
    h->scratch = (uint64_t)st->scratch;
  }
  if (h->abi.workspace) {
    context_buffer b = {&st->workspace, &st->workspace_bytes, "workspace", true};
    bool fresh = false;
    tk_status s = fit_buffer(ctx, k, b, launched, (uint64_t)h->abi.workspace, stream, &fresh);
    if (s != TK_OK) return s;
    if (!fresh && st->workspace_layout != h->layout) {
      /* A kernel resets its own counters, but another kernel's slots may lie where this
       * one keeps them (D64 stream-K attention at BM = 128 after BM = 256: wrong output): the
       * buffer is zeroed, on the stream ahead of the launch, whenever the variant using
       * it changes. */
      CUresult r = st->cu.MemsetD8Async(st->workspace, 0, st->workspace_bytes, stream);
      if (r != CUDA_SUCCESS) return fail(ctx, r, "cuMemsetD8Async (zeroing the workspace buffer)");
    }
    st->workspace_layout = h->layout;
    h->workspace = (uint64_t)st->workspace;
  }
  return TK_OK;
}

static tk_status cuda_launch(rt_context *ctx, rt_kernel *k, tk_grid grid, void *stream,
                             const tk_arg *args, int nargs) {
  rt_jit_kernel *jk = k->handle;
  ALIVE(ctx);
  /* a buffer of a context made on another thread reaches this thread only through some
   * synchronization with it, which makes that context's count visible here too */
  bool others = atomic_load_explicit(&nlive, memory_order_acquire) > 1;
  for (int i = 0; others && i < nargs; i++) {
    if (args[i].type != TK_PTR || !args[i].v.p) continue;
    if (find_alloc(state(ctx), args[i].v.p, true) < 0 &&
        of_another_context(state(ctx), args[i].v.p))
      return rt_error(ctx, TK_ERR_ARGS, "argument %d of '%s' ('%s') is 0x%llx, a buffer of "
                      "another tk context", i, k->sig->name, k->sig->params[i].name,
                      (unsigned long long)args[i].v.p);
  }
  uint64_t key = rt_jit_pack(jk, args);
  if (key != jk->cur) {
    tk_status s = use_variant(ctx, k, key, (CUstream)stream);
    if (s != TK_OK) return s;
  }
  cuda_state *st = state(ctx);
  unsigned gx = grid.x ? grid.x : 1, gy = grid.y ? grid.y : 1, gz = grid.z ? grid.z : 1;
  rt_hidden *h = jk->hidden;
  if (h) {
    su_buf why = {0};
    bool ok = rt_hidden_build(&st->cu, h, jk->slots, k->sig, &why);
    if (!ok) {
      rt_error(ctx, TK_ERR_DRIVER, "kernel '%s': %s", k->sig->name, su_buf_str(&why));
      su_buf_free(&why);
      return TK_ERR_DRIVER;
    }
    uint64_t total = (uint64_t)gx * gy * gz;
    if (h->abi.persistent) {
      /* abi.persistent programs per SM, looping over the grid asked for */
      h->grid[0] = gx;
      h->grid[1] = gy;
      h->grid[2] = gz;
      uint64_t resident = (uint64_t)(st->sms > 0 ? st->sms : 1) * (uint64_t)h->abi.persistent;
      gx = (unsigned)(total < resident ? total : resident);
      gy = gz = 1;
    }
    tk_status s = hidden_buffers(ctx, k, h, total, (uint64_t)gx * gy * gz, (CUstream)stream);
    if (s != TK_OK) return s;
  }
  if (jk->cluster > 1) {
    /* each program is a cluster of CTAs along x (the PTX requires it) */
    if ((uint64_t)gx * jk->cluster > 0x7fffffffu)
      return rt_error(ctx, TK_ERR_ARGS, "kernel '%s': a grid of %u programs along x, each a cluster "
                      "of %u CTAs, is more than the 2^31 - 1 CTAs a grid holds", k->sig->name, gx,
                      jk->cluster);
    gx *= jk->cluster;
  }
  CUfunction fn = jk->fn;
  bool pdl = jk->pdl && st->cu.LaunchKernelEx;
  CUresult r = launch_raw(st, fn, gx, gy, gz, jk, stream, pdl);
  if (r == CUDA_ERROR_INVALID_CONTEXT) { /* first launch from this thread */
    CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
    r = launch_raw(st, fn, gx, gy, gz, jk, stream, pdl);
  }
  if (r != CUDA_SUCCESS) return fail(ctx, r, pdl ? "cuLaunchKernelEx" : "cuLaunchKernel");
  return TK_OK;
}

/* One launch between two events on stream; with flush, a write of twice the L2 cache
 * first (and a synchronize, so the flush is not timed), as Triton's do_bench does. */
static tk_status cuda_time_launch(rt_context *ctx, rt_kernel *k, tk_grid grid, void *stream,
                                  const tk_arg *args, int nargs, bool flush, double *ms) {
  cuda_state *st = state(ctx);
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  if (!st->ev[0]) {
    CHECK(ctx, st->cu.EventCreate(&st->ev[0], CU_EVENT_DEFAULT), "cuEventCreate");
    CHECK(ctx, st->cu.EventCreate(&st->ev[1], CU_EVENT_DEFAULT), "cuEventCreate");
  }
  if (flush && !st->flush) {
    int l2 = 0;
    if (st->cu.DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, st->dev) != CUDA_SUCCESS || l2 <= 0)
      l2 = 64 << 20;
    st->flush_bytes = 2 * (size_t)l2;
    CHECK(ctx, st->cu.MemAlloc(&st->flush, st->flush_bytes), "cuMemAlloc (the L2 flush buffer)");
  }
  if (flush) {
    CHECK(ctx, st->cu.MemsetD8(st->flush, 0, st->flush_bytes), "cuMemsetD8 (flushing L2)");
    CHECK(ctx, st->cu.CtxSynchronize(), "a kernel or copy failed");
  }
  CHECK(ctx, st->cu.EventRecord(st->ev[0], (CUstream)stream), "cuEventRecord");
  tk_status s = cuda_launch(ctx, k, grid, stream, args, nargs);
  if (s != TK_OK) return s;
  CHECK(ctx, st->cu.EventRecord(st->ev[1], (CUstream)stream), "cuEventRecord");
  CHECK(ctx, st->cu.EventSynchronize(st->ev[1]), "the timed kernel failed");
  float t = 0;
  CHECK(ctx, st->cu.EventElapsedTime(&t, st->ev[0], st->ev[1]), "cuEventElapsedTime");
  *ms = t;
  return TK_OK;
}

/* ---- resources, from the driver ------------------------------------------------------ */

/* tk_kernel_resources without ptxas: the driver's attributes of the CUfunction of k's
 * variant that takes any arguments (key 0: the one ptxas would have measured), compiled
 * and loaded here if no launch needed it yet. The variant in use is left as it was, so a
 * query between launches changes nothing they do. */
static tk_status cuda_resources(rt_context *ctx, rt_kernel *k, tk_resources *out) {
  cuda_state *st = state(ctx);
  ALIVE(ctx);
  rt_jit_kernel *jk = k->handle;
  uint64_t cur = jk->cur;
  tk_status s = use_variant(ctx, k, 0, NULL);
  if (s != TK_OK) return s;
  CUfunction fn = jk->fn;
  int dyn = (int)jk->shmem, threads = (int)jk->block;
  rt_jit_use(jk, cur);
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  int regs = 0, local = 0, smem = 0, blocks = 0;
  CHECK(ctx, st->cu.FuncGetAttribute(&regs, RT_CU_FUNC_ATTRIBUTE_NUM_REGS, fn),
        "cuFuncGetAttribute(NUM_REGS)");
  CHECK(ctx, st->cu.FuncGetAttribute(&local, RT_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn),
        "cuFuncGetAttribute(LOCAL_SIZE_BYTES)");
  CHECK(ctx, st->cu.FuncGetAttribute(&smem, RT_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
        "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
  CHECK(ctx, st->cu.OccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, threads, (size_t)dyn),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  /* the SM's most warps is the target table's, as on the ptxas path, so that the two
   * sources give the same fraction for the same blocks */
  const tg_arch *t = tg_find(ctx->arch);
  int warps = (threads + 31) / 32, sm_warps = t ? t->threads_sm / 32 : 0;
  /* the driver keeps spills and the stack frame in one local size; it cannot split it */
  *out = (tk_resources){.regs = regs, .spill_stores = -1, .spill_loads = -1, .stack = local,
                        .smem_static = smem, .smem_dynamic = dyn, .threads = threads,
                        .blocks_per_sm = blocks,
                        .occupancy = sm_warps ? (double)(blocks * warps) / sm_warps : 0,
                        .source = TK_RES_DRIVER};
  return TK_OK;
}

CUfunction rt_cuda_kernel_function(const tk_kernel *h) {
  const rt_kernel *k = rt_handle_get((uint64_t)(uintptr_t)h, RT_H_KERNEL);
  if (!k || !k->module || !k->module->ctx || k->module->ctx->be != &rt_cuda_backend ||
      !k->handle)
    return NULL;
  return ((const rt_jit_kernel *)k->handle)->fn;
}

const rt_backend rt_cuda_backend = {
  .name = "cuda",
  .init = cuda_init,
  .shutdown = cuda_shutdown,
  .malloc_ = cuda_malloc,
  .free_ = cuda_free,
  .htod = cuda_htod,
  .dtoh = cuda_dtoh,
  .sync = cuda_sync,
  .load_ir = cuda_load_ir,
  .load_ptx = cuda_load_ptx,
  .unload = cuda_unload,
  .launch = cuda_launch,
  .time_launch = cuda_time_launch,
  .resources = cuda_resources,
};
