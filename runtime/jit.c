/*
 * jit.c — the JIT's policy (jit.h): Triton's specialization on divisibility, per-signature
 * variants and their cache keys, and the packing of launch arguments that computes the
 * signature on the way.
 *
 * Design notes:
 *  - A launch is the hot path (target: host cost within 15% of a bare cuLaunchKernel).
 *    Each kernel keeps one 8-byte slot per parameter and the driver's pointer array into
 *    those slots, both built at load time; a launch stores each argument into its slot (a
 *    conversion only for floats) and the backend calls the driver once. The driver copies
 *    only the parameter's size from each slot, and on a little-endian host the low bytes
 *    of an integer slot are the integer truncated to that size, as the ABI wants.
 *  - The signature is computed while the arguments are stored (an AND and a compare per
 *    argument, no branch) and compared with the variant in use by the backend: one
 *    branch on the common path.
 *  - Each variant is lowered for the target on a deep copy of the IR that carries the
 *    signature's facts (drv_variant): the TMA and cp.async choices read them, and the
 *    module's IR (what the interpreter runs) is never changed. Its PTX states the launch
 *    contract (codegen.h, cg_abi): threads per program, tensor maps built from the
 *    arguments, a persistent grid, -fno-fuse's scratch buffer, the workspace. A variant keeps its own parameter array: the slots,
 *    then the hidden arguments; the backend builds those (tmap.c) before each launch
 *    that needs them, which for the same arguments is a compare.
 */
#include "jit.h"

#include <stdatomic.h>
#include <string.h>

_Static_assert((int)RT_SPEC_DIV == (int)DRV_SPEC_DIV, "the cache keys and the driver disagree on the divisor");

void rt_jit_module_init(rt_jit_module *jm, su_arena *a, const tk_compile_options *opts,
                        const drv_options *o, rt_cache *cache, const char *source,
                        size_t len, const char *name) {
  memset(jm, 0, sizeof *jm);
  jm->opts = *o;
  jm->opts.defines = NULL; /* used up by the front end */
  jm->opts.ndefines = 0;
  jm->opts.arch = su_strdup(a, o->arch);
  jm->cache = opts && opts->no_cache ? NULL : cache;
  jm->base = rt_cache_key_compile(source, len, name, opts, jm->opts.arch);
}

/* The cache key of a variant. */
static rt_cache_key variant_key(const rt_jit_module *jm, const ir_func *only, uint64_t key) {
  return rt_cache_key_variant(&jm->base, only ? only->name : NULL, key);
}

bool rt_jit_ptx(const rt_jit_module *jm, ir_module *m, const ir_func *only, uint64_t key,
                su_buf *ptx, bool *hit, su_buf *why) {
  rt_cache_key ck = variant_key(jm, only, key);
  *hit = jm->cache && rt_cache_get(jm->cache, &ck, ptx);
  if (*hit) return true;
  su_diags d;
  su_diags_init(&d, m->arena, NULL);
  ir_module *v = drv_variant(m, only, key, &jm->opts, &d);
  if (!v || !drv_codegen(v, &jm->opts, CG_PTX, ptx, &d)) {
    su_diags_render(&d, why);
    if (!why->len) su_buf_puts(why, "code generation failed");
    return false;
  }
  /* drv_codegen's terminating NUL is not part of the entry: su_buf_str re-terminates. */
  while (ptx->len > 0 && ptx->data[ptx->len - 1] == '\0') ptx->len--;
  if (jm->cache) rt_cache_put(jm->cache, &ck, ptx->data, ptx->len);
  return true;
}

void rt_jit_evict(const rt_jit_module *jm, const ir_func *only, uint64_t key) {
  rt_cache_key ck = variant_key(jm, only, key);
  if (jm->cache) rt_cache_evict(jm->cache, &ck);
}

/* How an argument is stored into its slot. */
typedef enum { SLOT_BITS, SLOT_BOOL, SLOT_F16, SLOT_BF16, SLOT_F32, SLOT_F64 } slot_kind;

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

rt_jit_kernel *rt_jit_kernel_new(su_arena *a, const rt_kernel *k) {
  const ir_signature *sig = k->sig;
  rt_jit_kernel *jk = SU_NEW(a, rt_jit_kernel);
  jk->block = jk->base_block = 32u * (unsigned)(sig->num_warps > 0 ? sig->num_warps : TG_DEFAULT_WARPS);
  jk->nparams = sig->nparams;
  jk->kinds = SU_NEW_ARRAY(a, uint8_t, sig->nparams + 1);
  jk->bits = SU_NEW_ARRAY(a, uint64_t, sig->nparams + 1);
  jk->slots = SU_NEW_ARRAY(a, uint64_t, sig->nparams + 1);
  jk->argv = SU_NEW_ARRAY(a, void *, sig->nparams + 1);
  for (int i = 0; i < sig->nparams; i++) {
    jk->kinds[i] = (uint8_t)slot_of(sig->params[i].type);
    bool spec = k->ir && i < 64 && sig->params[i].specializable;
    jk->bits[i] = spec ? UINT64_C(1) << i : 0;
    jk->argv[i] = &jk->slots[i];
  }
  jk->cur_argv = jk->argv;
  return jk;
}

uint64_t rt_jit_full_key(const rt_jit_kernel *jk) {
  uint64_t key = 0;
  for (int i = 0; i < jk->nparams; i++) key |= jk->bits[i];
  return key;
}

static void use(rt_jit_kernel *jk, const rt_jit_variant *v) {
  jk->cur = v->key;
  jk->fn = v->fn;
  jk->shmem = v->shmem;
  jk->block = v->block;
  jk->hidden = v->hidden;
  jk->cur_argv = v->argv;
  jk->pdl = v->pdl;
  jk->cluster = v->cluster;
}

bool rt_jit_use(rt_jit_kernel *jk, uint64_t key) {
  for (int i = 0; i < jk->nvariants; i++)
    if (jk->variants[i].key == key) {
      use(jk, &jk->variants[i]);
      return true;
    }
  return false;
}

/* the last rt_hidden.layout given out */
static atomic_uint_fast64_t last_layout;

void rt_jit_add(su_arena *a, rt_jit_kernel *jk, uint64_t key, void *fn, unsigned shmem,
                const cg_abi *abi) {
  if (jk->nvariants == jk->capvariants) {
    int cap = jk->capvariants ? 2 * jk->capvariants : 2;
    rt_jit_variant *nv = SU_NEW_ARRAY(a, rt_jit_variant, cap);
    if (jk->nvariants) memcpy(nv, jk->variants, sizeof *nv * (size_t)jk->nvariants);
    jk->variants = nv;
    jk->capvariants = cap;
  }
  rt_jit_variant v = {key, fn, shmem, jk->base_block, NULL, jk->argv, false, 0};
  if (abi && abi->threads > 0) v.block = (unsigned)abi->threads;
  v.pdl = abi && abi->pdl;
  v.cluster = abi ? (unsigned)abi->cluster : 0;
  if (abi && cg_abi_hidden(abi)) {
    /* the parameter slots, then the maps, then the grid, then the buffers: their own array */
    /* the maps are 64-byte aligned, as a CUtensorMap is; the arena promises less */
    char *raw = SU_NEW_ARRAY(a, char, sizeof(rt_hidden) + 64);
    rt_hidden *h = (rt_hidden *)(raw + (64 - (uintptr_t)raw % 64) % 64);
    memset(h, 0, sizeof *h);
    h->abi = *abi;
    int n = jk->nparams, total = n + cg_abi_hidden(abi), buffers = n + abi->ntmaps + (abi->persistent ? 3 : 0);
    v.argv = SU_NEW_ARRAY(a, void *, total);
    for (int i = 0; i < n; i++) v.argv[i] = &jk->slots[i];
    for (int i = 0; i < abi->ntmaps; i++) v.argv[n + i] = &h->maps[i];
    for (int i = 0; abi->persistent && i < 3; i++) v.argv[n + abi->ntmaps + i] = &h->grid[i];
    if (abi->scratch) v.argv[buffers++] = &h->scratch;
    if (abi->workspace) v.argv[buffers++] = &h->workspace;
    if (abi->workspace) h->layout = (uint64_t)atomic_fetch_add(&last_layout, 1) + 1;
    SU_ASSERT(buffers == total);
    v.hidden = h;
  }
  jk->variants[jk->nvariants++] = v;
  use(jk, &jk->variants[jk->nvariants - 1]);
}

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

uint64_t rt_jit_pack(rt_jit_kernel *jk, const tk_arg *args) {
  uint64_t *slot = jk->slots;
  uint64_t key = 0;
  for (int i = 0; i < jk->nparams; i++) {
    switch ((slot_kind)jk->kinds[i]) {
    case SLOT_BITS:
      slot[i] = args[i].v.u;
      key |= jk->bits[i] & (0 - (uint64_t)((args[i].v.u & (DRV_SPEC_DIV - 1)) == 0));
      break;
    case SLOT_BOOL: slot[i] = args[i].v.i != 0; break;
    case SLOT_F16: slot[i] = to_f16((float)args[i].v.f); break;
    case SLOT_BF16: slot[i] = to_bf16((float)args[i].v.f); break;
    case SLOT_F32: {
      float f = (float)args[i].v.f;
      uint32_t bits;
      memcpy(&bits, &f, 4);
      slot[i] = bits;
      /* positive and finite: sign clear, not zero, exponent not all ones */
      key |= jk->bits[i] & (0 - (uint64_t)(bits - 1u < 0x7f7fffffu));
      break;
    }
    case SLOT_F64:
      memcpy(&slot[i], &args[i].v.f, 8);
      key |= jk->bits[i] & (0 - (uint64_t)(slot[i] - 1u < UINT64_C(0x7fefffffffffffff)));
      break;
    }
  }
  return key;
}
