/* Constant folding: an op whose operands are all constants becomes a constant.
 *
 * What folds, and why the rest does not:
 *  - integer arithmetic wraps at the type's width; signed or unsigned by the dtype;
 *  - integer division or remainder by zero, and of the type's minimum by -1, stay: they
 *    are run-time errors (or traps), not values;
 *  - shifts by a negative amount or by the width or more stay (no defined value);
 *  - float ops that IEEE rounds exactly once (add sub mul div rem sqrt fma min max abs neg
 *    floor ceil, comparisons, casts) fold in the type's precision; f16 and bf16 are
 *    computed in double and rounded once, which is exact for these ops (53 >= 2p + 2),
 *    except fma, which is left alone for them;
 *  - transcendental functions (exp, log, sin, tanh, erf, sigmoid, rsqrt, ...) stay: their
 *    value is whatever the target's math library gives, and folding on the host would
 *    make the GPU and the interpreter disagree with the compiled program;
 *  - shape ops of a constant give a constant of the new shape (every element is equal);
 *    a reduction of a constant tile folds for max/min and integer sum.
 * Effects (stores, atomics, prints, asserts) are never folded; loads are not pure. */
#include "pass_util.h"

#include <math.h>

/* One scalar of a constant operand or result. */
typedef struct {
  int64_t i;
  double f;
} scalar;

static scalar read_const(const ir_value *v) {
  scalar s = {0, 0};
  if (ir_dtype_is_float(ir_type_elem(v->type)->dtype))
    s.f = pass_const_float(v);
  else
    s.i = pass_const_int(v);
  return s;
}

/* The smallest and largest values of signed type d. */
static int64_t signed_max(tk_dtype d) { return (int64_t)((UINT64_C(1) << (ir_dtype_bits(d) - 1)) - 1); }
static int64_t signed_min(tk_dtype d) { return -signed_max(d) - 1; }

static bool is_min_signed(tk_dtype d, int64_t v) {
  return ir_dtype_is_signed(d) && v == signed_min(d);
}

static bool less_int(tk_dtype d, int64_t a, int64_t b) {
  return ir_dtype_is_signed(d) ? a < b : (uint64_t)a < (uint64_t)b;
}

static bool compare_int(tk_dtype d, ir_cmp p, int64_t a, int64_t b) {
  switch (p) {
  case IR_CMP_EQ: return a == b;
  case IR_CMP_NE: return a != b;
  case IR_CMP_LT: return less_int(d, a, b);
  case IR_CMP_LE: return !less_int(d, b, a);
  case IR_CMP_GT: return less_int(d, b, a);
  case IR_CMP_GE: return !less_int(d, a, b);
  }
  SU_UNREACHABLE();
}

/* C's semantics: every ordered comparison with a NaN is false, != is true. */
static bool compare_float(ir_cmp p, double a, double b) {
  switch (p) {
  case IR_CMP_EQ: return a == b;
  case IR_CMP_NE: return a != b;
  case IR_CMP_LT: return a < b;
  case IR_CMP_LE: return a <= b;
  case IR_CMP_GT: return a > b;
  case IR_CMP_GE: return a >= b;
  }
  SU_UNREACHABLE();
}

/* Folds an integer op of dtype d; false when it must not fold. Arithmetic is done on
 * uint64_t, where overflow is defined, and wrapped by the caller. */
static bool fold_int(ir_opcode opc, tk_dtype d, const scalar *x, int n, int64_t *out) {
  uint64_t a = (uint64_t)x[0].i, b = n > 1 ? (uint64_t)x[1].i : 0;
  int bits = ir_dtype_bits(d);
  bool sgn = ir_dtype_is_signed(d);
  switch (opc) {
  case IR_NEG: *out = (int64_t)(0 - a); return true;
  case IR_NOT: *out = (int64_t)~a; return true;
  case IR_ABS: *out = sgn && x[0].i < 0 ? (int64_t)(0 - a) : x[0].i; return true;
  case IR_ADD: *out = (int64_t)(a + b); return true;
  case IR_SUB: *out = (int64_t)(a - b); return true;
  case IR_MUL: *out = (int64_t)(a * b); return true;
  case IR_FMA: *out = (int64_t)(a * b + (uint64_t)x[2].i); return true;
  case IR_AND: *out = (int64_t)(a & b); return true;
  case IR_OR: *out = (int64_t)(a | b); return true;
  case IR_XOR: *out = (int64_t)(a ^ b); return true;
  case IR_MIN: *out = less_int(d, x[1].i, x[0].i) ? x[1].i : x[0].i; return true;
  case IR_MAX: *out = less_int(d, x[0].i, x[1].i) ? x[1].i : x[0].i; return true;
  case IR_DIV:
  case IR_REM:
    if (b == 0 || (is_min_signed(d, x[0].i) && x[1].i == -1)) return false;
    if (sgn)
      *out = opc == IR_DIV ? x[0].i / x[1].i : x[0].i % x[1].i;
    else
      *out = (int64_t)(opc == IR_DIV ? a / b : a % b);
    return true;
  case IR_SHL:
  case IR_SHR:
    if (sgn ? x[1].i < 0 || x[1].i >= bits : b >= (uint64_t)bits) return false;
    if (opc == IR_SHL)
      *out = (int64_t)(a << b);
    else if (sgn && x[0].i < 0)
      *out = (int64_t) ~(~a >> b); /* arithmetic shift without relying on >> of a negative */
    else
      *out = (int64_t)(a >> b);
    return true;
  default: return false;
  }
}

static double min_float(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? a : b; /* -0 is the smaller zero */
  return a < b ? a : b;
}

static double max_float(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}

/* Folds a float op of dtype d (result rounded by the caller); false when it must not. */
static bool fold_float(ir_opcode opc, tk_dtype d, const scalar *x, double *out) {
  double a = x[0].f, b = x[1].f;
  switch (opc) {
  case IR_NEG: *out = -a; return true;
  case IR_ABS: *out = fabs(a); return true;
  case IR_FLOOR: *out = floor(a); return true;
  case IR_CEIL: *out = ceil(a); return true;
  case IR_SQRT: *out = sqrt(a); return true;
  case IR_ADD: *out = a + b; return true;
  case IR_SUB: *out = a - b; return true;
  case IR_MUL: *out = a * b; return true;
  case IR_DIV: *out = a / b; return true;
  case IR_REM: *out = fmod(a, b); return true;
  case IR_MIN: *out = min_float(a, b); return true;
  case IR_MAX: *out = max_float(a, b); return true;
  case IR_FMA:
    if (d == TK_F64) *out = fma(a, b, x[2].f);
    else if (d == TK_F32) *out = fmaf((float)a, (float)b, (float)x[2].f);
    else return false;
    return true;
  default: return false;
  }
}

/* Float to integer: truncate toward zero, saturate at the type's range, NaN gives 0. */
static int64_t float_to_int(tk_dtype d, double x) {
  if (isnan(x)) return 0;
  double t = trunc(x);
  int bits = ir_dtype_bits(d);
  if (ir_dtype_is_signed(d)) {
    double lim = ldexp(1.0, bits - 1);
    if (t >= lim) return signed_max(d);
    if (t < -lim) return signed_min(d);
    return (int64_t)t;
  }
  if (t <= 0) return 0;
  if (t >= ldexp(1.0, bits)) return pass_int_wrap(d, -1);
  return (int64_t)(uint64_t)t;
}

/* Folds a cast from dtype from to the result's dtype to; false when it must not. */
static bool fold_cast(tk_dtype from, tk_dtype to, scalar x, scalar *out) {
  bool ffrom = ir_dtype_is_float(from), fto = ir_dtype_is_float(to);
  if (!(ffrom || ir_dtype_is_int(from)) || !(fto || ir_dtype_is_int(to))) return false;
  if (to == TK_I1) {
    if (ffrom && isnan(x.f)) return false; /* the language leaves it open: do not decide */
    out->i = ffrom ? x.f != 0 : x.i != 0;
    return true;
  }
  if (!ffrom && !fto) {
    out->i = x.i; /* canonical source form already holds the sign or zero extension */
    return true;
  }
  if (ffrom && !fto) {
    out->i = float_to_int(to, x.f);
    return true;
  }
  if (ffrom) {
    out->f = x.f;
    return true;
  }
  /* Integer to float: one rounding. A double holds |v| <= 2^53 exactly; beyond, only the
   * C conversions straight to double or float round once. */
  bool uns = !ir_dtype_is_signed(from);
  uint64_t mag = uns || x.i >= 0 ? (uint64_t)x.i : 0 - (uint64_t)x.i;
  if (mag <= (UINT64_C(1) << 53))
    out->f = uns ? (double)(uint64_t)x.i : (double)x.i;
  else if (to == TK_F64)
    out->f = uns ? (double)(uint64_t)x.i : (double)x.i;
  else if (to == TK_F32)
    out->f = uns ? (double)(float)(uint64_t)x.i : (double)(float)x.i;
  else
    return false;
  return true;
}

/* Computes the folded value of op (whose operands are constants) into *out; false if it
 * does not fold. */
static bool fold_value(const ir_op *op, scalar *out) {
  tk_dtype rd = ir_type_elem(op->results[0]->type)->dtype;
  tk_dtype od = ir_type_elem(op->operands[0]->type)->dtype;
  scalar x[3] = {{0, 0}, {0, 0}, {0, 0}};
  for (int i = 0; i < op->noperands && i < 3; i++) x[i] = read_const(op->operands[i]);
  switch (op->opc) {
  case IR_SPLAT:
  case IR_BROADCAST:
  case IR_EXPAND_DIMS:
  case IR_RESHAPE:
  case IR_TRANS:
  case IR_CONVERT_LAYOUT:
    *out = x[0];
    return od == rd;
  case IR_REDUCE:
    if (op->attr != IR_RED_SUM) {
      *out = x[0];
      return od == rd;
    }
    if (!ir_dtype_is_int(rd) || !ir_dtype_is_int(od)) return false;
    if (op->attr2 < 0 || op->attr2 >= op->operands[0]->type->rank) return false;
    out->i = (int64_t)((uint64_t)x[0].i * (uint64_t)op->operands[0]->type->shape[op->attr2]);
    return true;
  case IR_CMP:
    out->i = ir_dtype_is_float(od) ? compare_float((ir_cmp)op->attr, x[0].f, x[1].f)
                                   : compare_int(od, (ir_cmp)op->attr, x[0].i, x[1].i);
    return true;
  case IR_CAST: return fold_cast(od, rd, x[0], out);
  default: break;
  }
  if (!(ir_op_info(op->opc)->traits & IR_ELEM) || od != rd) return false;
  if (ir_dtype_is_float(rd)) return fold_float(op->opc, rd, x, &out->f);
  if (ir_dtype_is_int(rd)) return fold_int(op->opc, rd, x, op->noperands, &out->i);
  return false;
}

static bool foldable(const ir_op *op) {
  if (op->opc == IR_CONST || op->nregions || op->nresults != 1 || op->noperands == 0) return false;
  if (!(ir_op_info(op->opc)->traits & IR_PURE)) return false;
  for (int i = 0; i < op->noperands; i++)
    if (!pass_is_const(op->operands[i])) return false;
  tk_dtype rd = ir_type_elem(op->results[0]->type)->dtype;
  return ir_dtype_is_int(rd) || ir_dtype_is_float(rd);
}

typedef struct {
  ir_module *m;
  ir_func *f;
  bool changed;
} fold_ctx;

static void fold_op(ir_op *op, void *arg) {
  fold_ctx *c = arg;
  scalar v;
  if (!foldable(op) || !fold_value(op, &v)) return;
  const ir_type *t = op->results[0]->type;
  ir_value *k = ir_dtype_is_float(ir_type_elem(t)->dtype) ? pass_const_float_before(c->m, op, t, v.f)
                                                          : pass_const_int_before(c->m, op, t, v.i);
  pass_replace_op(c->f, op, k);
  c->changed = true;
}

bool pass_constfold(ir_module *m, ir_func *f) {
  fold_ctx c = {m, f, false};
  ir_walk(f->body, fold_op, &c);
  return c.changed;
}
