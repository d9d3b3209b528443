/* Loads, stores and atomics: every active lane goes through the bounds check of the
 * buffer its pointer was derived from; masked-off lanes touch nothing. */
#include "internal.h"

#include <string.h>

static ip_elem at(ip_val v, int64_t i) {
  return v.e[v.n == 1 ? 0 : i];
}

/* The host address of p, lane `lane` of an access of kind ("load", "store", ...), or NULL
 * after reporting the fault (with how its offset wrapped, if it did: wrap.c). */
static void *lane_address(ip_exec *x, const ir_op *op, ip_elem p, tk_dtype dt, const char *kind,
                          int64_t lane) {
  void *host = NULL;
  su_buf why = {0}, what = {0};
  const char *fault = ip_mem_access(x->mem, p.buf, p.i, ir_dtype_bytes(dt), &host, &why);
  if (fault) {
    ip_explain_wrap(x, op->operands[0], lane, &why);
    su_buf_printf(&what, "%s %s", fault, kind);
    ip_fail(x, op, su_buf_str(&what), "%s", su_buf_str(&why));
  }
  su_buf_free(&why);
  su_buf_free(&what);
  return host;
}

static ip_elem atomic_update(ir_atomic_kind kind, tk_dtype dt, ip_elem old, ip_elem v) {
  switch (kind) {
  case IR_ATOM_ADD: return ip_arith(IR_ADD, dt, old, v);
  case IR_ATOM_MAX: return ip_arith(IR_MAX, dt, old, v);
  case IR_ATOM_MIN: return ip_arith(IR_MIN, dt, old, v);
  case IR_ATOM_AND: return ip_arith(IR_AND, dt, old, v);
  case IR_ATOM_OR: return ip_arith(IR_OR, dt, old, v);
  case IR_ATOM_XOR: return ip_arith(IR_XOR, dt, old, v);
  case IR_ATOM_XCHG: return v;
  }
  SU_UNREACHABLE();
}

/* The buffer the last lane went to: the lanes of a tile of pointers nearly always share
 * one, so checking a lane is comparing it with this one's bounds; a lane that fails (or
 * goes elsewhere) takes the full check of ip_mem_access, which words the fault. */
typedef struct {
  uint32_t id; /* 0: none yet (0 is never a live buffer) */
  uint8_t *data;
  uint64_t size;
} lane_cache;

static inline void *lane_host(ip_exec *x, const ir_op *op, lane_cache *c, ip_elem p, int size,
                              tk_dtype dt, const char *kind, int64_t lane) {
  if (p.buf == c->id && p.i >= 0 && (uint64_t)p.i + (uint64_t)size <= c->size &&
      (p.i & (size - 1)) == 0)
    return c->data + p.i;
  void *h = lane_address(x, op, p, dt, kind, lane);
  if (h && ip_mem_buffer(x->mem, p.buf, &c->data, &c->size)) c->id = p.buf;
  return h;
}

/* A load or store of dt, one loop per dtype (dt a constant once inlined into its case).
 * Operands of one element stand for every lane, as at() has it. */
static inline __attribute__((always_inline)) bool access_lanes(ip_exec *x, const ip_inst *in,
                                                               ip_val r, tk_dtype dt) {
  const ir_op *op = in->op;
  bool load = op->opc == IR_LOAD;
  int mask_at = load ? 1 : 2, size = ir_dtype_bytes(dt);
  ip_val ptr = IP_IN(x, in, 0);
  ip_val mask = op->noperands > mask_at ? IP_IN(x, in, mask_at) : (ip_val){0};
  ip_val data = load ? (op->noperands > 2 ? IP_IN(x, in, 2) : (ip_val){0}) : IP_IN(x, in, 1);
  int64_t ms = mask.n > 1, ds = data.n > 1, ps = ptr.n > 1;
  lane_cache c = {0};
  for (int64_t i = 0; i < ptr.n; i++) {
    if (mask.e && !mask.e[i * ms].u) {
      if (load) r.e[i] = data.e ? data.e[i * ds] : (ip_elem){.u = 0};
      continue;
    }
    void *h = lane_host(x, op, &c, ptr.e[i * ps], size, dt, load ? "load" : "store", i);
    if (!h) return false;
    if (load) r.e[i] = ip_decode_inline(dt, h);
    else ip_encode_inline(dt, data.e[i * ds], h);
  }
  return true;
}

static bool typed_access(ip_exec *x, const ip_inst *in, ip_val r, tk_dtype dt) {
  switch (dt) {
#define CASE(D) case D: return access_lanes(x, in, r, D);
  CASE(TK_I1) CASE(TK_I8) CASE(TK_I16) CASE(TK_I32) CASE(TK_I64) CASE(TK_U8) CASE(TK_U16)
  CASE(TK_U32) CASE(TK_U64) CASE(TK_F16) CASE(TK_BF16) CASE(TK_F32) CASE(TK_F64)
  CASE(TK_F8E4M3) CASE(TK_F8E5M2)
#undef CASE
  default: SU_UNREACHABLE();
  }
}

/* slot_store / slot_load: the tile's elements in row-major order from the scalar pointer
 * on. Layouts do not exist here, so any order a store and a load of one tile type agree
 * on is the op's meaning (the GPU's is each thread's own elements, docs/ir.md). */
static bool slot_access(ip_exec *x, const ip_inst *in, ip_val r, tk_dtype dt) {
  const ir_op *op = in->op;
  bool load = op->opc == IR_SLOT_LOAD;
  ip_elem base = at(IP_IN(x, in, 0), 0);
  ip_val data = load ? r : IP_IN(x, in, 1);
  int64_t n = ir_type_numel(load ? op->results[0]->type : op->operands[1]->type);
  int size = ir_dtype_bytes(dt);
  lane_cache c = {0};
  for (int64_t i = 0; i < n; i++) {
    void *h = lane_host(x, op, &c, ip_addptr(base, true, (ip_elem){.i = i}, size), size, dt,
                        load ? "slot_load" : "slot_store", i);
    if (!h) return false;
    if (load) r.e[i] = ip_decode(dt, h);
    else ip_encode(dt, at(data, i), h);
  }
  return true;
}

bool ip_run_memory(ip_exec *x, const ip_inst *in) {
  const ir_op *op = in->op;
  ip_val ptr = IP_IN(x, in, 0);
  tk_dtype dt = ir_type_elem(ptr.type)->elem->dtype;
  int mask_at = op->opc == IR_LOAD ? 1 : op->opc == IR_ATOMIC_CAS ? -1 : 2;
  bool has_mask = mask_at > 0 && op->noperands > mask_at;
  ip_val mask = has_mask ? IP_IN(x, in, mask_at) : ptr;
  bool typed = ip_typed_loops && (op->opc == IR_LOAD || op->opc == IR_STORE);
  ip_val r = {0};
  if (op->nresults)
    *IP_OUT(x, in, 0) = r = (typed ? ip_val_out : ip_val_new)(x, op->results[0]->type);
  if (typed) return typed_access(x, in, r, dt);
  if (op->opc == IR_SLOT_STORE || op->opc == IR_SLOT_LOAD) return slot_access(x, in, r, dt);
  for (int64_t i = 0; i < ptr.n; i++) {
    if (has_mask && !at(mask, i).u) {
      if (op->opc == IR_LOAD && op->noperands > 2) r.e[i] = at(IP_IN(x, in, 2), i);
      continue;
    }
    ip_elem p = at(ptr, i);
    switch (op->opc) {
    case IR_LOAD: {
      void *h = lane_address(x, op, p, dt, "load", i);
      if (!h) return false;
      r.e[i] = ip_decode(dt, h);
      break;
    }
    case IR_STORE: {
      void *h = lane_address(x, op, p, dt, "store", i);
      if (!h) return false;
      ip_encode(dt, at(IP_IN(x, in, 1), i), h);
      break;
    }
    case IR_ATOMIC: {
      void *h = lane_address(x, op, p, dt, "atomic", i);
      if (!h) return false;
      r.e[i] = ip_decode(dt, h);
      ip_encode(dt, atomic_update((ir_atomic_kind)op->attr, dt, r.e[i], at(IP_IN(x, in, 1), i)), h);
      break;
    }
    case IR_ATOMIC_CAS: {
      /* Compares the stored bits, as the hardware does (so -0.0 is not 0.0 here). */
      void *h = lane_address(x, op, p, dt, "atomic_cas", i);
      if (!h) return false;
      unsigned char want[8];
      ip_encode(dt, at(IP_IN(x, in, 1), i), want);
      r.e[i] = ip_decode(dt, h);
      if (memcmp(want, h, (size_t)ir_dtype_bytes(dt)) == 0) ip_encode(dt, at(IP_IN(x, in, 2), i), h);
      break;
    }
    default:
      SU_UNREACHABLE();
    }
  }
  return true;
}
