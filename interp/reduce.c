/* Ops that combine elements along an axis: reduce, argreduce, scan, histogram, and the
 * matrix product (dot.c). All accumulate sequentially, in index order, in the result's type. */
#include "internal.h"

#include <math.h>

/* A tile seen as [outer, len, inner] around the reduced axis; element (o, k, j) is at
 * (o * len + k) * inner + j. A scalar result means every element is reduced. */
typedef struct {
  int64_t outer, len, inner;
} geometry;

static geometry geometry_of(const ir_type *in, const ir_type *res, int axis) {
  geometry g = {1, ir_type_numel(in), 1};
  if (in->kind != IR_TILE || res->kind != IR_TILE) return g;
  SU_ASSERT(axis >= 0 && axis < in->rank);
  g.len = in->shape[axis];
  for (int d = 0; d < axis; d++) g.outer *= in->shape[d];
  for (int d = axis + 1; d < in->rank; d++) g.inner *= in->shape[d];
  return g;
}

static ir_opcode combiner(int64_t kind) {
  switch ((ir_reduce_kind)kind) {
  case IR_RED_SUM: return IR_ADD;
  case IR_RED_MAX: return IR_MAX;
  case IR_RED_MIN: return IR_MIN;
  }
  SU_UNREACHABLE();
}

/* True if candidate c beats the best b so far: strictly greater (max) or less (min), or
 * the first NaN, which then stays (as the NaN-propagating max/min would). */
static bool better(tk_dtype dt, bool max, ip_elem c, ip_elem b) {
  if (ir_dtype_is_float(dt) && (isnan(c.f) || isnan(b.f))) return isnan(c.f) && !isnan(b.f);
  return ip_compare(max ? IR_CMP_GT : IR_CMP_LT, dt, c, b);
}

static void run_reduce(const ir_op *op, ip_val src, ip_val r, geometry g) {
  tk_dtype idt = ip_elem_dtype(src.type), rdt = ip_elem_dtype(r.type);
  for (int64_t o = 0; o < g.outer; o++)
    for (int64_t j = 0; j < g.inner; j++) {
      const ip_elem *e = &src.e[o * g.len * g.inner + j];
      ip_elem *out = &r.e[o * g.inner + j];
      if (op->opc == IR_ARGREDUCE) {
        int64_t best = 0;
        for (int64_t k = 1; k < g.len; k++)
          if (better(idt, op->attr == IR_RED_MAX, e[k * g.inner], e[best * g.inner])) best = k;
        *out = ip_int(rdt, (uint64_t)best);
        continue;
      }
      ip_elem acc = ip_convert(idt, rdt, e[0]);
      for (int64_t k = 1; k < g.len; k++)
        acc = ip_arith(combiner(op->attr), rdt, acc, ip_convert(idt, rdt, e[k * g.inner]));
      *out = acc;
    }
}

static void run_scan(const ir_op *op, ip_val src, ip_val r, geometry g) {
  tk_dtype idt = ip_elem_dtype(src.type), rdt = ip_elem_dtype(r.type);
  for (int64_t o = 0; o < g.outer; o++)
    for (int64_t j = 0; j < g.inner; j++) {
      int64_t base = o * g.len * g.inner + j;
      ip_elem acc = ip_convert(idt, rdt, src.e[base]);
      r.e[base] = acc;
      for (int64_t k = 1; k < g.len; k++) {
        acc = ip_arith(combiner(op->attr), rdt, acc, ip_convert(idt, rdt, src.e[base + k * g.inner]));
        r.e[base + k * g.inner] = acc;
      }
    }
}

/* histogram: the count of each value in [0, bins) among the elements the mask keeps, in
 * element order; other values are not counted (docs/language.md, 6.5). */
static void run_histogram(ip_exec *x, const ip_inst *in, ip_val src, ip_val r) {
  bool signed_ = ir_dtype_is_signed(ip_elem_dtype(src.type));
  bool masked = in->op->noperands > 1;
  ip_val mask = masked ? IP_IN(x, in, 1) : src;
  int64_t n = ir_type_numel(src.type), bins = r.n;
  for (int64_t b = 0; b < bins; b++) r.e[b] = ip_int(TK_I32, 0);
  for (int64_t i = 0; i < n; i++) {
    if (masked && !mask.e[mask.n == 1 ? 0 : i].u) continue;
    ip_elem e = src.e[src.n == 1 ? 0 : i];
    if (signed_ ? e.i < 0 || e.i >= bins : e.u >= (uint64_t)bins) continue;
    int64_t b = signed_ ? e.i : (int64_t)e.u;
    r.e[b] = ip_int(TK_I32, r.e[b].u + 1);
  }
}

bool ip_run_reduce(ip_exec *x, const ip_inst *in) {
  const ir_op *op = in->op;
  ip_val r = ip_val_out(x, op->results[0]->type);
  ip_val src = IP_IN(x, in, 0);
  switch (op->opc) {
  case IR_REDUCE:
  case IR_ARGREDUCE: {
    geometry g = geometry_of(src.type, r.type, (int)op->attr2);
    if (op->opc == IR_ARGREDUCE ||
        !ip_typed_reduce((ir_reduce_kind)op->attr, false, src, r, g.outer, g.len, g.inner))
      run_reduce(op, src, r, g);
    break;
  }
  case IR_SCAN: {
    geometry g = geometry_of(src.type, src.type, (int)op->attr2);
    if (!ip_typed_reduce((ir_reduce_kind)op->attr, true, src, r, g.outer, g.len, g.inner))
      run_scan(op, src, r, g);
    break;
  }
  case IR_HISTOGRAM:
    run_histogram(x, in, src, r);
    break;
  case IR_DOT:
    SU_ASSERT(r.type->kind == IR_TILE && r.type->rank >= 2);
    ip_dot(x->scratch, src, IP_IN(x, in, 1), IP_IN(x, in, 2), r, (ir_dot_precision)op->attr);
    break;
  default:
    SU_UNREACHABLE();
  }
  *IP_OUT(x, in, 0) = r;
  return true;
}
