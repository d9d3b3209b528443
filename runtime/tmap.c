/* The hidden arguments of a lowered kernel: TMA tensor maps from the launch's argument
 * values (cuTensorMapEncodeTiled, resolved from the driver library on first use: drivers
 * before CUDA 12 lack it, and only TMA kernels need it), rebuilt only when one of the
 * values a map reads changes. */
#include "tmap.h"

#include <dlfcn.h>
#include <string.h>

/* CUtensorMapDataType, CUtensorMapSwizzle, ... of cuda.h, the values tk uses. */
enum {
  MAP_UINT8 = 0, MAP_UINT16 = 1, MAP_UINT32 = 2, MAP_INT32 = 3, MAP_UINT64 = 4, MAP_INT64 = 5,
  MAP_FLOAT16 = 6, MAP_FLOAT32 = 7, MAP_FLOAT64 = 8, MAP_BFLOAT16 = 9
};
enum { INTERLEAVE_NONE = 0, L2_PROMOTION_256B = 3, OOB_FILL_ZERO = 0 };

typedef CUresult (*encode_fn)(rt_tensor_map *map, int dtype, uint32_t rank, void *base,
                              const uint64_t *dims, const uint64_t *strides, const uint32_t *box,
                              const uint32_t *elem_strides, int interleave, int swizzle,
                              int l2, int oob);

static int map_dtype(tk_dtype t) {
  switch (t) {
  case TK_F16: return MAP_FLOAT16;
  case TK_BF16: return MAP_BFLOAT16;
  case TK_F32: return MAP_FLOAT32;
  case TK_F64: return MAP_FLOAT64;
  case TK_I8: case TK_U8: case TK_I1: case TK_F8E4M3: case TK_F8E5M2: return MAP_UINT8;
  case TK_I16: case TK_U16: return MAP_UINT16;
  case TK_I32: return MAP_INT32;
  case TK_U32: return MAP_UINT32;
  case TK_I64: return MAP_INT64;
  case TK_U64: return MAP_UINT64;
  default: return -1;
  }
}

/* A parameter's value as the kernel sees it: sign-extended for 32-bit signed types. */
static int64_t value_of(const uint64_t *slot, const ir_signature *sig, cg_abi_arg a) {
  if (a.param < 0) return a.value;
  if (a.param >= sig->nparams) return 0;
  uint64_t v = slot[a.param];
  switch (sig->params[a.param].type) {
  case TK_I32: return (int32_t)(uint32_t)v;
  case TK_U32: return (uint32_t)v;
  case TK_I16: return (int16_t)(uint16_t)v;
  case TK_I8: return (int8_t)(uint8_t)v;
  default: return (int64_t)v;
  }
}

bool rt_hidden_build(const rt_cuda_api *cu, rt_hidden *h, const uint64_t *slot,
                     const ir_signature *sig, su_buf *why) {
  int nparams = sig->nparams;
  static encode_fn encode; /* resolved once; the library stays open while any context lives */
  for (int i = 0; i < h->abi.ntmaps; i++) {
    const cg_tmap *t = &h->abi.tmaps[i];
    int64_t now[1 + 2 * IR_MAX_RANK];
    int n = 0;
    now[n++] = t->base < nparams ? (int64_t)slot[t->base] : 0;
    for (int d = 0; d < t->rank; d++) now[n++] = value_of(slot, sig, t->dims[d]);
    for (int d = 0; d + 1 < t->rank; d++) now[n++] = value_of(slot, sig, t->strides[d]);
    if (h->built && !memcmp(now, h->last[i], sizeof(int64_t) * (size_t)n)) continue;
    if (!encode) encode = (encode_fn)dlsym(cu->lib, "cuTensorMapEncodeTiled");
    if (!encode) {
      su_buf_puts(why, "the CUDA driver has no cuTensorMapEncodeTiled (a driver for CUDA 12 or later is needed)");
      return false;
    }
    int eb = ir_dtype_bytes(t->dtype), dt = map_dtype(t->dtype);
    uint64_t dims[IR_MAX_RANK], strides[IR_MAX_RANK];
    uint32_t box[IR_MAX_RANK], es[IR_MAX_RANK];
    /* the driver's order is innermost first */
    for (int d = 0; d < t->rank; d++) {
      int64_t v = now[1 + t->rank - 1 - d];
      dims[d] = (uint64_t)(v < 1 ? 1 : v);
      box[d] = (uint32_t)t->box[t->rank - 1 - d];
      es[d] = 1;
    }
    for (int d = 0; d + 1 < t->rank; d++) strides[d] = (uint64_t)now[1 + t->rank + (t->rank - 2 - d)] * (uint64_t)eb;
    int swizzle = t->swizzle == 128 ? 3 : t->swizzle == 64 ? 2 : t->swizzle == 32 ? 1 : 0;
    CUresult r = dt < 0 ? CUDA_ERROR_INVALID_VALUE
                        : encode(&h->maps[i], dt, (uint32_t)t->rank, (void *)(uintptr_t)now[0], dims, strides,
                                 box, es, INTERLEAVE_NONE, swizzle, L2_PROMOTION_256B, OOB_FILL_ZERO);
    if (r != CUDA_SUCCESS) {
      su_buf_printf(why, "cuTensorMapEncodeTiled rejected tensor map %d (%s, base 0x%llx, rank %d): ", i,
                    ir_dtype_name(t->dtype), (unsigned long long)now[0], t->rank);
      rt_cuda_describe(cu, r, why);
      h->built = false;
      return false;
    }
    memcpy(h->last[i], now, sizeof(int64_t) * (size_t)n);
  }
  h->built = true;
  return true;
}
