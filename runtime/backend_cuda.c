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
 *  - A launch is the hot path (target: host cost within 15% of a bare cuLaunchKernel).
 *    Each kernel keeps one 8-byte slot per parameter and the driver's pointer array into
 *    those slots, both built at load time; a launch stores each argument into its slot
 *    (a conversion only for floats) and calls cuLaunchKernel once. The driver copies only
 *    the parameter's size from each slot, and on a little-endian host the low bytes of an
 *    integer slot are the integer truncated to that size, as the ABI wants.
 *  - Specialization (Triton's): a kernel is compiled per "divisibility signature" of its
 *    arguments, one bit per integer or pointer parameter (of the first 64) telling whether
 *    the argument is a multiple of 16 (a pointer: 16-byte aligned); codegen sees those
 *    facts on a shallow copy of the IR (ir_func.param_div) and vectorizes through them.
 *    The variant where every bit is set (sizes multiple of 16, aligned allocations) is
 *    compiled eagerly, for the whole module, at load; any other is compiled, for its
 *    kernel alone, on the first launch that needs it, through the same cache (the
 *    signature is part of the key), and loaded as a module of its own. A launch computes
 *    the signature while it stores the arguments (an AND and a compare per argument, no
 *    branch) and compares it with the variant in use: one branch on the common path.
 *  - AOT PTX kernels take their signatures from the PTX (ptx_sig.h), so their arguments
 *    are still counted and type-checked, with PTX's limits (no signedness, no pointee).
 *    They have no IR, hence a single variant.
 */
#include <stdlib.h>
#include <string.h>

#include "../driver/driver.h"
#include "cache.h"
#include "cuda.h"
#include "ptx_sig.h"
#include "runtime.h"

typedef struct {
  rt_cuda_api cu;
  CUdevice dev;
  CUcontext pctx;
  const char *arch; /* the device's PTX target, the default when options name none */
  rt_cache cache;
  su_arena *arena;  /* for the state's own strings */
} cuda_state;

/* How an argument is stored into its slot. */
typedef enum { SLOT_BITS, SLOT_BOOL, SLOT_F16, SLOT_BF16, SLOT_F32, SLOT_F64 } slot_kind;

/* One compiled specialization of a kernel. */
typedef struct {
  uint64_t key; /* the divisibility signature it was compiled for */
  CUfunction fn;
  unsigned shmem; /* dynamic shared memory bytes (scratch above 48 KB), 0 when static */
} cuda_variant;

typedef struct {
  uint64_t cur;   /* the signature of the variant in use, whose fn and shmem follow */
  CUfunction fn;
  unsigned shmem;
  unsigned block; /* threads per program */
  int nparams;
  uint8_t *kinds;
  uint64_t *bits; /* per parameter: its bit in the signature, 0 when it has none */
  uint64_t *slots;
  void **argv;    /* argv[i] == &slots[i] */
  cuda_variant *variants; /* every variant loaded so far */
  int nvariants, capvariants;
} cuda_kernel;

/* A module's driver state: its CUmodules (the one loaded with it, then one per variant
 * compiled at launch) and what compiling another variant needs. */
typedef struct {
  CUmodule *mods;
  int nmods, capmods;
  rt_cache_key base; /* rt_cache_key_compile of the source */
  const char *arch;
  int opt_level;
  bool use_cache;
} cuda_module;

static cuda_state *state(tk_context *ctx) { return ctx->state; }

/* Maps a driver failure to a tk status and message ("what: CUDA_ERROR_X: text"). */
static tk_status fail(tk_context *ctx, CUresult r, const char *what) {
  cuda_state *st = state(ctx);
  su_buf b = {0};
  rt_cuda_describe(&st->cu, r, &b);
  tk_status s = TK_ERR_DRIVER;
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY: s = TK_ERR_MEMORY; break;
  case 700: case 710: case 714: case 715: case 716: case 719: /* the kernel faulted */
    s = TK_ERR_RUNTIME; break;
  default: break;
  }
  rt_error(ctx, s, "%s: %s", what, su_buf_str(&b));
  su_buf_free(&b);
  return s;
}

#define CHECK(ctx, call, what) \
  do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) return fail((ctx), r_, (what)); } while (0)

/* The PTX target for a compute capability: sm_90a where wgmma exists (9.0 exactly:
 * arch-specific PTX does not run on later parts), sm_90 above it (forward compatible
 * through the driver's JIT), sm_80 for Ampere and Ada. */
static const char *arch_of(int major, int minor) {
  if (major == 9 && minor == 0) return "sm_90a";
  if (major >= 9) return "sm_90";
  return "sm_80";
}

static tk_status cuda_init(tk_context *ctx, int device) {
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
  int count = 0;
  CUresult r = st->cu.Init(0);
  if (r == CUDA_SUCCESS) r = st->cu.DeviceGetCount(&count);
  if (r == CUDA_SUCCESS && device >= count) {
    rt_error(ctx, TK_ERR_NO_DEVICE, "no CUDA device %d (the machine has %d)", device, count);
  } else if (r != CUDA_SUCCESS) {
    rt_cuda_describe(&st->cu, r, &why);
    rt_error(ctx, TK_ERR_NO_DEVICE, "no CUDA device: the driver failed to start (%s)",
             su_buf_str(&why));
  } else {
    int major = 0, minor = 0;
    r = st->cu.DeviceGet(&st->dev, device);
    if (r == CUDA_SUCCESS) r = st->cu.DevicePrimaryCtxRetain(&st->pctx, st->dev);
    if (r == CUDA_SUCCESS) r = st->cu.CtxSetCurrent(st->pctx);
    if (r == CUDA_SUCCESS)
      r = st->cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, st->dev);
    if (r == CUDA_SUCCESS)
      r = st->cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, st->dev);
    if (r == CUDA_SUCCESS) {
      st->arch = arch_of(major, minor);
      st->arena = su_arena_new();
      rt_cache_open(&st->cache, st->arena, NULL);
      su_buf_free(&why);
      return TK_OK;
    }
    fail(ctx, r, "creating the CUDA context");
    if (st->pctx) st->cu.DevicePrimaryCtxRelease(st->dev);
  }
  su_buf_free(&why);
  rt_cuda_unload(&st->cu);
  free(st);
  ctx->state = NULL;
  return TK_ERR_NO_DEVICE;
}

static void cuda_shutdown(tk_context *ctx) {
  cuda_state *st = state(ctx);
  if (!st) return;
  /* Releasing the last reference destroys the primary context and with it every buffer
   * and module the context still owned. */
  st->cu.DevicePrimaryCtxRelease(st->dev);
  rt_cuda_unload(&st->cu);
  su_arena_free(st->arena);
  free(st);
  ctx->state = NULL;
}

static tk_status cuda_malloc(tk_context *ctx, tk_devptr *out, size_t bytes) {
  cuda_state *st = state(ctx);
  CUdeviceptr p = 0;
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CHECK(ctx, st->cu.MemAlloc(&p, bytes), "cuMemAlloc");
  *out = p;
  return TK_OK;
}

static tk_status cuda_free(tk_context *ctx, tk_devptr p) {
  cuda_state *st = state(ctx);
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CHECK(ctx, st->cu.MemFree(p), "cuMemFree");
  return TK_OK;
}

static tk_status cuda_htod(tk_context *ctx, tk_devptr dst, const void *src, size_t bytes) {
  cuda_state *st = state(ctx);
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CHECK(ctx, st->cu.MemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
  return TK_OK;
}

static tk_status cuda_dtoh(tk_context *ctx, void *dst, tk_devptr src, size_t bytes) {
  cuda_state *st = state(ctx);
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CHECK(ctx, st->cu.MemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
  return TK_OK;
}

static tk_status cuda_sync(tk_context *ctx) {
  cuda_state *st = state(ctx);
  CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
  CHECK(ctx, st->cu.CtxSynchronize(), "a kernel or copy failed");
  return TK_OK;
}

/* ---- loading ------------------------------------------------------------------------- */

/* Appends mod to m's modules (unloaded with it). */
static void keep_module(tk_module *m, CUmodule mod) {
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
static tk_status load_module(tk_context *ctx, tk_module *m, const char *ptx, CUmodule *out) {
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

static slot_kind slot_of(tk_dtype t) {
  switch (t) {
  case TK_I1: return SLOT_BOOL;
  case TK_F16: return SLOT_F16;
  case TK_BF16: return SLOT_BF16;
  case TK_F32: return SLOT_F32;
  case TK_F64: return SLOT_F64;
  default: return SLOT_BITS;
  }
}

/* Precomputes k's launch layout: a slot per parameter, the driver's pointer array into
 * the slots, and the signature bit of each integer and pointer parameter (none without
 * IR: AOT PTX has one variant). */
static void setup_kernel(tk_module *m, tk_kernel *k) {
  cuda_kernel *ck = SU_NEW(m->arena, cuda_kernel);
  const ir_signature *sig = k->sig;
  ck->block = 32u * (unsigned)(sig->num_warps > 0 ? sig->num_warps : 4);
  ck->nparams = sig->nparams;
  ck->kinds = SU_NEW_ARRAY(m->arena, uint8_t, sig->nparams + 1);
  ck->bits = SU_NEW_ARRAY(m->arena, uint64_t, sig->nparams + 1);
  ck->slots = SU_NEW_ARRAY(m->arena, uint64_t, sig->nparams + 1);
  ck->argv = SU_NEW_ARRAY(m->arena, void *, sig->nparams + 1);
  for (int i = 0; i < sig->nparams; i++) {
    ck->kinds[i] = (uint8_t)slot_of(sig->params[i].type);
    bool spec = k->ir && i < 64 && sig->params[i].specializable;
    ck->bits[i] = spec ? UINT64_C(1) << i : 0;
    ck->argv[i] = &ck->slots[i];
  }
  k->handle = ck;
}

/* The signature where every parameter that has a bit is specialized. */
static uint64_t full_key(const cuda_kernel *ck) {
  uint64_t key = 0;
  for (int i = 0; i < ck->nparams; i++) key |= ck->bits[i];
  return key;
}

/* Resolves k's CUfunction in mod (loaded from ptx) as the variant for key, makes it the
 * one in use, and records it; a kernel whose scratch exceeds the 48 KB of static shared
 * memory is allowed its dynamic size here, once, so a launch stays one driver call. */
static tk_status add_variant(tk_context *ctx, tk_kernel *k, CUmodule mod, const char *ptx,
                             uint64_t key) {
  cuda_state *st = state(ctx);
  cuda_kernel *ck = k->handle;
  cuda_variant v = {key, NULL, 0};
  CUresult r = st->cu.ModuleGetFunction(&v.fn, mod, k->sig->name);
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
    r = st->cu.FuncSetAttribute(v.fn, RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shmem);
    if (r != CUDA_SUCCESS) {
      su_buf b = {0};
      rt_cuda_describe(&st->cu, r, &b);
      rt_error(ctx, TK_ERR_DRIVER, "kernel '%s' needs %d bytes of shared memory, which the device refused (%s)",
               k->sig->name, shmem, su_buf_str(&b));
      su_buf_free(&b);
      return TK_ERR_DRIVER;
    }
    v.shmem = (unsigned)shmem;
  }
  if (ck->nvariants == ck->capvariants) {
    int cap = ck->capvariants ? 2 * ck->capvariants : 2;
    cuda_variant *nv = SU_NEW_ARRAY(k->module->arena, cuda_variant, cap);
    if (ck->nvariants) memcpy(nv, ck->variants, sizeof *nv * (size_t)ck->nvariants);
    ck->variants = nv;
    ck->capvariants = cap;
  }
  ck->variants[ck->nvariants++] = v;
  ck->cur = key;
  ck->fn = v.fn;
  ck->shmem = v.shmem;
  return TK_OK;
}

/* Sets up every kernel of m and adds each one's variant from mod, compiled for the
 * signature `all` selects (every bit, or none). */
static tk_status bind_all(tk_context *ctx, tk_module *m, CUmodule mod, const char *ptx, bool all) {
  for (int i = 0; i < m->nkernels; i++) {
    setup_kernel(m, &m->kernels[i]);
    uint64_t key = all ? full_key(m->kernels[i].handle) : 0;
    tk_status s = add_variant(ctx, &m->kernels[i], mod, ptx, key);
    if (s != TK_OK) return s;
  }
  return TK_OK;
}

/* The PTX of ir (a specialized copy of m's IR), from the cache under key (*hit) or from
 * codegen (then stored). */
static tk_status get_ptx(tk_context *ctx, tk_module *m, const ir_module *ir,
                         const rt_cache_key *key, su_buf *ptx, bool *hit) {
  cuda_state *st = state(ctx);
  cuda_module *cm = m->handle;
  *hit = cm->use_cache && rt_cache_get(&st->cache, key, ptx);
  if (*hit) return TK_OK;
  drv_options o = {.arch = cm->arch, .opt_level = cm->opt_level};
  su_diags d;
  su_diags_init(&d, m->arena, NULL);
  if (!drv_codegen(ir, &o, CG_PTX, ptx, &d)) {
    su_buf msg = {0};
    su_diags_render(&d, &msg);
    rt_error(ctx, TK_ERR_COMPILE, "%s", msg.len ? su_buf_str(&msg) : "code generation failed");
    su_buf_free(&msg);
    return TK_ERR_COMPILE;
  }
  /* cg_emit's terminating NUL is not part of the entry: a hit is re-terminated below. */
  while (ptx->len > 0 && ptx->data[ptx->len - 1] == '\0') ptx->len--;
  if (cm->use_cache) rt_cache_put(&st->cache, key, ptx->data, ptx->len);
  return TK_OK;
}

/* get_ptx, then loads the PTX into a new CUmodule of m (*mod). A cache entry the driver
 * rejects is evicted and rebuilt, once. */
static tk_status load_ptx_of(tk_context *ctx, tk_module *m, const ir_module *ir,
                             const rt_cache_key *key, su_buf *ptx, CUmodule *mod) {
  bool hit;
  tk_status s = get_ptx(ctx, m, ir, key, ptx, &hit);
  if (s == TK_OK) s = load_module(ctx, m, su_buf_str(ptx), mod);
  if (s == TK_ERR_DRIVER && hit) {
    rt_cache_evict(&state(ctx)->cache, key);
    ptx->len = 0;
    s = get_ptx(ctx, m, ir, key, ptx, &hit);
    if (s == TK_OK) s = load_module(ctx, m, su_buf_str(ptx), mod);
  }
  return s;
}

/* Compiles and loads the fully specialized variant of every kernel at once: the one the
 * common case (sizes multiple of 16, aligned allocations) launches. */
static tk_status cuda_load_ir(tk_context *ctx, tk_module *m, const tk_compile_options *opts,
                              const char *source, size_t len) {
  cuda_state *st = state(ctx);
  cuda_module *cm = SU_NEW(m->arena, cuda_module);
  m->handle = cm;
  cm->arch = su_strdup(m->arena, opts && opts->arch ? opts->arch : st->arch);
  cm->opt_level = opts && opts->opt_level > 0 ? opts->opt_level : 3;
  cm->use_cache = !(opts && opts->no_cache);
  cm->base = rt_cache_key_compile(source, len, m->ir->source_name, opts, cm->arch);
  const ir_module *all = drv_specialize(m->arena, m->ir, NULL, RT_SPEC_ALL);
  rt_cache_key key = rt_cache_key_variant(&cm->base, NULL, RT_SPEC_ALL);
  su_buf ptx = {0};
  CUmodule mod = NULL;
  tk_status s = load_ptx_of(ctx, m, all, &key, &ptx, &mod);
  if (s == TK_OK) s = bind_all(ctx, m, mod, su_buf_str(&ptx), true);
  su_buf_free(&ptx);
  return s;
}

/* Makes k's variant for signature key the one in use, compiling and loading it (k alone)
 * the first time. */
static tk_status use_variant(tk_context *ctx, tk_kernel *k, uint64_t key) {
  cuda_kernel *ck = k->handle;
  for (int i = 0; i < ck->nvariants; i++)
    if (ck->variants[i].key == key) {
      ck->cur = key;
      ck->fn = ck->variants[i].fn;
      ck->shmem = ck->variants[i].shmem;
      return TK_OK;
    }
  tk_module *m = k->module;
  cuda_module *cm = m->handle;
  const ir_module *one = drv_specialize(m->arena, m->ir, k->ir, key);
  rt_cache_key ckey = rt_cache_key_variant(&cm->base, k->sig->name, key);
  su_buf ptx = {0};
  CUmodule mod = NULL;
  tk_status s = load_ptx_of(ctx, m, one, &ckey, &ptx, &mod);
  if (s == TK_OK) s = add_variant(ctx, k, mod, su_buf_str(&ptx), key);
  su_buf_free(&ptx);
  return s;
}

/* Builds m->kernels from the PTX's entries when the caller has not (no IR to read). */
static void kernels_from_ptx(tk_module *m, const char *ptx, size_t len) {
  rt_ptx_entry *es;
  int n = rt_ptx_entries(m->arena, ptx, len, &es);
  m->kernels = SU_NEW_ARRAY(m->arena, tk_kernel, n);
  m->nkernels = n;
  for (int i = 0; i < n; i++) {
    tk_kernel *k = &m->kernels[i];
    ir_signature *sig = SU_NEW(m->arena, ir_signature);
    sig->name = es[i].name;
    sig->params = es[i].params;
    sig->nparams = es[i].nparams;
    sig->num_warps = es[i].num_threads >= 32 ? es[i].num_threads / 32 : 4;
    sig->num_stages = 1;
    k->module = m;
    k->sig = sig;
  }
}

static tk_status cuda_load_ptx(tk_context *ctx, tk_module *m, const char *ptx, size_t len) {
  /* The driver needs a terminating NUL that the caller's buffer may lack. */
  char *text = su_strndup(m->arena, ptx, len);
  m->handle = SU_NEW(m->arena, cuda_module);
  CUmodule mod = NULL;
  tk_status s = load_module(ctx, m, text, &mod);
  if (s != TK_OK) return s;
  if (m->nkernels == 0) kernels_from_ptx(m, text, strlen(text));
  return bind_all(ctx, m, mod, text, false);
}

static void cuda_unload(tk_context *ctx, tk_module *m) {
  cuda_state *st = state(ctx);
  cuda_module *cm = m->handle;
  if (!cm || !cm->nmods) return;
  st->cu.CtxSetCurrent(st->pctx);
  for (int i = 0; i < cm->nmods; i++) st->cu.ModuleUnload(cm->mods[i]);
  m->handle = NULL;
}

/* ---- launching ----------------------------------------------------------------------- */

/* f32 to IEEE half / bfloat16 bits, rounding to nearest even (NaN stays NaN). */
static uint16_t to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
  if (abs < 0x38800000u) {                                    /* subnormal or zero */
    float a;
    memcpy(&a, &abs, 4);
    /* Scaling by 2^24 puts the half subnormal's integer in the float's integer part;
     * adding and subtracting rounds it to nearest even. */
    float q = a * 16777216.0f;
    uint32_t m = (uint32_t)q;
    float rem = q - (float)m;
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
    return (uint16_t)(sign | m);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13);
  uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

static uint16_t to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static tk_status cuda_launch(tk_context *ctx, tk_kernel *k, tk_grid grid, void *stream,
                             const tk_arg *args, int nargs) {
  cuda_kernel *ck = k->handle;
  uint64_t *slot = ck->slots;
  uint64_t key = 0; /* the divisibility signature, without a branch per argument */
  (void)nargs; /* api.c checked it against ck->nparams */
  for (int i = 0; i < ck->nparams; i++) {
    switch ((slot_kind)ck->kinds[i]) {
    case SLOT_BITS:
      slot[i] = args[i].v.u;
      key |= ck->bits[i] & (0 - (uint64_t)((args[i].v.u & (RT_SPEC_DIV - 1)) == 0));
      break;
    case SLOT_BOOL: slot[i] = args[i].v.i != 0; break;
    case SLOT_F16: slot[i] = to_f16((float)args[i].v.f); break;
    case SLOT_BF16: slot[i] = to_bf16((float)args[i].v.f); break;
    case SLOT_F32: {
      float f = (float)args[i].v.f;
      uint32_t bits;
      memcpy(&bits, &f, 4);
      slot[i] = bits;
      break;
    }
    case SLOT_F64: memcpy(&slot[i], &args[i].v.f, 8); break;
    }
  }
  if (key != ck->cur) {
    tk_status s = use_variant(ctx, k, key);
    if (s != TK_OK) return s;
  }
  cuda_state *st = state(ctx);
  unsigned gx = grid.x ? grid.x : 1, gy = grid.y ? grid.y : 1, gz = grid.z ? grid.z : 1;
  CUresult r = st->cu.LaunchKernel(ck->fn, gx, gy, gz, ck->block, 1, 1, ck->shmem, (CUstream)stream,
                                   ck->argv, NULL);
  if (r == CUDA_ERROR_INVALID_CONTEXT) { /* first launch from this thread */
    CHECK(ctx, st->cu.CtxSetCurrent(st->pctx), "cuCtxSetCurrent");
    r = st->cu.LaunchKernel(ck->fn, gx, gy, gz, ck->block, 1, 1, ck->shmem, (CUstream)stream,
                            ck->argv, NULL);
  }
  if (r != CUDA_SUCCESS) return fail(ctx, r, "cuLaunchKernel");
  return TK_OK;
}

CUfunction rt_cuda_kernel_function(const tk_kernel *k) {
  if (!k || !k->module || !k->module->ctx || k->module->ctx->be != &rt_cuda_backend ||
      !k->handle)
    return NULL;
  return ((const cuda_kernel *)k->handle)->fn;
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
};
