/* Elementwise ops: each result element is a function of the same element of every
 * operand (numeric.c says which function). Only integer division can fault. */
#include "internal.h"

#include <float.h>
#include <math.h>

/* The element i of v; a scalar operand stands for every element. */
static ip_elem at(ip_val v, int64_t i) {
  return v.e[v.n == 1 ? 0 : i];
}

static ip_elem addptr(const ir_type *ptr_type, ip_elem p, tk_dtype idt, ip_elem idx) {
  return ip_addptr(p, ir_dtype_is_signed(idt), idx, ir_dtype_bytes(ptr_type->elem->dtype));
}

static bool div_by_zero(ip_exec *x, const ir_op *op, ip_val divisor, int64_t i) {
  const char *what = op->opc == IR_REM ? "integer remainder by zero" : "integer division by zero";
  if (divisor.n == 1) return ip_fail(x, op, what, "the divisor is 0");
  return ip_fail(x, op, what, "element %lld of the divisor is 0", (long long)i);
}

bool ip_run_elementwise(ip_exec *x, const ip_inst *in) {
  const ir_op *op = in->op;
  const ir_type *t = op->results[0]->type;
  tk_dtype rdt = ip_elem_dtype(t), dt = ip_elem_dtype(op->operands[0]->type);
  ip_val a = IP_IN(x, in, 0);
  ip_val b = op->noperands > 1 ? IP_IN(x, in, 1) : a;
  ip_val c = op->noperands > 2 ? IP_IN(x, in, 2) : a;
  ip_val r = ip_val_out(x, t);
  *IP_OUT(x, in, 0) = r;
  if (ip_typed_elementwise(op, r, a, b, c)) return true;
  /* The scalar rules, one loop per op. */
  int64_t n = r.n;
  switch (op->opc) {
  case IR_CAST:
    for (int64_t i = 0; i < n; i++) r.e[i] = ip_convert(dt, rdt, at(a, i));
    return true;
  case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_REM: case IR_AND:
  case IR_OR: case IR_XOR: case IR_SHL: case IR_SHR: case IR_MIN: case IR_MAX:
  case IR_POW: case IR_COPYSIGN: case IR_FDIV: case IR_UMULHI: case IR_CDIV: {
    bool int_div = (op->opc == IR_DIV || op->opc == IR_REM || op->opc == IR_CDIV) &&
                   !ir_dtype_is_float(dt);
    for (int64_t i = 0; i < n; i++) {
      if (int_div && ip_is_zero(dt, at(b, i))) return div_by_zero(x, op, b, i);
      r.e[i] = ip_arith(op->opc, dt, at(a, i), at(b, i));
    }
    return true;
  }
  case IR_CMP:
    for (int64_t i = 0; i < n; i++)
      r.e[i] = (ip_elem){.u = ip_compare((ir_cmp)op->attr, dt, at(a, i), at(b, i))};
    return true;
  case IR_SELECT:
    for (int64_t i = 0; i < n; i++) r.e[i] = at(a, i).u ? at(b, i) : at(c, i);
    return true;
  case IR_FMA:
    for (int64_t i = 0; i < n; i++) r.e[i] = ip_fma(dt, at(a, i), at(b, i), at(c, i));
    return true;
  case IR_ADDPTR:
    for (int64_t i = 0; i < n; i++)
      r.e[i] = addptr(ir_type_elem(t), at(a, i), ip_elem_dtype(op->operands[1]->type), at(b, i));
    return true;
  case IR_ERFC:
    /* erfc(in * x) * 2^out (f32; docs/ir.md): the product rounded to f32 first, as the
     * mul that complement folded into `in` rounded it */
    for (int64_t i = 0; i < n; i++) {
      ip_elem x = at(a, i);
      if (op->cval.f != 0) x.f = ip_round(dt, op->cval.f * x.f);
      r.e[i] = ip_math(IR_ERFC, dt, x);
      if (op->attr2) r.e[i].f = ip_round(dt, ldexp(r.e[i].f, (int)op->attr2));
    }
    return true;
  default:
    for (int64_t i = 0; i < n; i++) r.e[i] = ip_math(op->opc, dt, at(a, i));
    if (op->opc == IR_EXP2 && op->attr) /* ftz: the subnormal results flush to +0 */
      for (int64_t i = 0; i < n; i++)
        if (fabs(r.e[i].f) < FLT_MIN) r.e[i].f = 0.0;
    return true;
  }
}
