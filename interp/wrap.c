/* Explaining a faulting access whose offset wrapped: when a load or store faults, the
 * integer expression behind its pointer's offset is evaluated again for the faulting lane,
 * exactly (in 128 bits), from the operands' values still in their slots. If an add,
 * subtract, multiply or shift of 32 bits or fewer on the way did not fit its type, the
 * fault says so: the offset wrapped in i32 (the shape of Triton's best-known bug), which
 * is why it points where it does. Only a fault pays for this; a wrapped offset that
 * happens to land in bounds is not caught (the compiler's warning is for that). */
#include "internal.h"

enum { MAX_DEPTH = 32 };

typedef struct {
  const ip_exec *x;
  const ir_op *wrapped; /* the first op found whose exact result does not fit its type */
  __int128 exact, got;  /* its exact result and what it gave */
} wrap_search;

static const ip_val *value_of(const ip_exec *x, const ir_value *v) {
  if (!x->slot_of) return NULL;
  intptr_t s = (intptr_t)su_map_get(x->slot_of, (const char *)&v, sizeof v);
  return s > 0 && s - 1 < x->nslots ? &x->slots[s - 1] : NULL;
}

/* The row-major index, in a tile of shape from, of the element a broadcast to shape to
 * reads for element i of it (dims of 1 in from repeat). */
static int64_t broadcast_index(const ir_type *from, const ir_type *to, int64_t i) {
  int64_t idx = 0, stride = 1;
  for (int d = to->rank - 1; d >= 0; d--) {
    int64_t k = i % to->shape[d];
    i /= to->shape[d];
    if (from->shape[d] != 1) idx += k * stride;
    stride *= from->shape[d];
  }
  return idx;
}

static bool int_type(const ir_type *t) {
  const ir_type *e = ir_type_elem(t);
  return e->kind == IR_SCALAR && ir_dtype_is_int(e->dtype) && e->dtype != TK_I1;
}

/* Lane i of v as the slot holds it (false if the slot is unknown). */
static bool slot_lane(const ip_exec *x, const ir_value *v, int64_t i, __int128 *out) {
  const ip_val *s = value_of(x, v);
  if (!s || !s->e || (s->n != 1 && (i < 0 || i >= s->n))) return false;
  ip_elem e = s->e[s->n == 1 ? 0 : i];
  *out = ir_dtype_is_signed(ir_type_elem(v->type)->dtype) ? (__int128)e.i : (__int128)e.u;
  return true;
}

static bool fits(tk_dtype d, __int128 v) {
  int bits = ir_dtype_bits(d);
  if (ir_dtype_is_signed(d))
    return v >= -((__int128)1 << (bits - 1)) && v < ((__int128)1 << (bits - 1));
  return v >= 0 && v < ((__int128)1 << bits);
}

/* The exact value of lane i of integer v (operands' lanes mapped through broadcasts). */
static bool exact(wrap_search *w, const ir_value *v, int64_t i, int depth, __int128 *out) {
  const ir_op *op = v->def;
  if (!op || depth > MAX_DEPTH || !int_type(v->type)) return slot_lane(w->x, v, i, out);
  const ir_value *a = op->noperands > 0 ? op->operands[0] : NULL;
  int64_t ia = a && a->type->kind == IR_TILE ? i : 0;
  switch (op->opc) {
  case IR_SPLAT:
    return exact(w, a, 0, depth + 1, out);
  case IR_BROADCAST:
    if (a->type->kind != IR_TILE) return exact(w, a, 0, depth + 1, out);
    return exact(w, a, broadcast_index(a->type, v->type, i), depth + 1, out);
  case IR_EXPAND_DIMS: case IR_RESHAPE:
    return exact(w, a, i, depth + 1, out);
  case IR_CAST: {
    /* a widening cast keeps the exact value; a narrowing one is the user's own */
    if (!int_type(a->type) || ir_dtype_bits(ir_type_elem(a->type)->dtype) >
                                  ir_dtype_bits(ir_type_elem(v->type)->dtype))
      return slot_lane(w->x, v, i, out);
    return exact(w, a, ia, depth + 1, out);
  }
  case IR_ADD: case IR_SUB: case IR_MUL: case IR_SHL: {
    const ir_value *b = op->operands[1];
    int64_t ib = b->type->kind == IR_TILE ? i : 0;
    __int128 x, y, r;
    if (!exact(w, a, ia, depth + 1, &x) || !exact(w, b, ib, depth + 1, &y)) return false;
    tk_dtype d = ir_type_elem(v->type)->dtype;
    if (op->opc == IR_SHL && (y < 0 || y >= ir_dtype_bits(d))) return slot_lane(w->x, v, i, out);
    /* beyond 64 bits the operands are themselves already off: keep the slot's value */
    if (x > INT64_MAX || x < INT64_MIN || y > INT64_MAX || y < INT64_MIN) return slot_lane(w->x, v, i, out);
    r = op->opc == IR_ADD ? x + y : op->opc == IR_SUB ? x - y : op->opc == IR_MUL ? x * y : x << (int)y;
    if (ir_dtype_bits(d) <= 32 && !fits(d, r) && !w->wrapped) {
      w->wrapped = op;
      w->exact = r;
      __int128 g;
      w->got = slot_lane(w->x, v, i, &g) ? g : 0;
    }
    *out = r;
    return true;
  }
  default:
    return slot_lane(w->x, v, i, out);
  }
}

static void put128(su_buf *b, __int128 v) {
  if (v >= INT64_MIN && v <= INT64_MAX) {
    su_buf_printf(b, "%lld", (long long)v);
    return;
  }
  su_buf_printf(b, "%s%llu * 2^32 + %llu", v < 0 ? "-" : "",
                (unsigned long long)((v < 0 ? -v : v) >> 32),
                (unsigned long long)((v < 0 ? -v : v) & 0xffffffffu));
}

void ip_explain_wrap(const ip_exec *x, const ir_value *ptr, int64_t lane, su_buf *why) {
  wrap_search w = {.x = x};
  /* walk the pointer back through its offsets and the shape ops that spread it */
  const ir_value *p = ptr;
  int64_t i = lane;
  for (int depth = 0; p && p->def && depth < MAX_DEPTH && !w.wrapped; depth++) {
    const ir_op *op = p->def;
    if (op->opc == IR_ADDPTR) {
      const ir_value *off = op->operands[1];
      __int128 v;
      exact(&w, off, off->type->kind == IR_TILE ? i : 0, 0, &v);
      const ir_value *base = op->operands[0];
      i = base->type->kind == IR_TILE ? i : 0;
      p = base;
    } else if (op->opc == IR_BROADCAST && op->operands[0]->type->kind == IR_TILE) {
      i = broadcast_index(op->operands[0]->type, p->type, i);
      p = op->operands[0];
    } else if (op->opc == IR_SPLAT || op->opc == IR_BROADCAST || op->opc == IR_EXPAND_DIMS ||
               op->opc == IR_RESHAPE) {
      p = op->operands[0];
      if (p->type->kind != IR_TILE) i = 0;
    } else {
      break;
    }
  }
  if (!w.wrapped) return;
  tk_dtype d = ir_type_elem(w.wrapped->results[0]->type)->dtype;
  su_buf_printf(why, "; the offset wrapped around: the %s at %s:%u:%u computed ",
                ir_op_info(w.wrapped->opc)->name, x->m && x->m->source_name ? x->m->source_name : "?",
                w.wrapped->loc.line, w.wrapped->loc.col);
  put128(why, w.exact);
  su_buf_printf(why, ", which does not fit %s (it gave ", ir_dtype_name(d));
  put128(why, w.got);
  su_buf_printf(why, "): compute the offset in i64");
}
