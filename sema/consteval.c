/* sema/consteval.c — folding of compile-time scalars.
 *
 * Integers are kept in 64 bits, wrapped to their type after every operation exactly like
 * the generated code wraps (two's complement; unsigned types zero-extended, signed ones
 * sign-extended in the 64 bits), so `2147483647 + 1` folds to -2147483648 as i32.
 * Division by zero and shifts by a count outside [0, width) have no runtime meaning to
 * copy and are reported. Floats fold in f64 and are rounded to f32 after each step;
 * f16/bf16 constants fold in f64 and are rounded when the IR materializes them. */
#include <math.h>

#include "sema_int.h"

int64_t sema_wrap_int(tk_dtype d, int64_t v) {
  int bits = ir_dtype_bits(d);
  if (bits >= 64) return v;
  uint64_t mask = (UINT64_C(1) << bits) - 1;
  uint64_t u = (uint64_t)v & mask;
  if (ir_dtype_is_signed(d) && (u >> (bits - 1)) & 1) u |= ~mask;
  return (int64_t)u;
}

/* Compile-time floats are rounded exactly as the interpreter and the GPU round them. */
double sema_round_float(tk_dtype d, double v) { return ir_dtype_is_float(d) ? ir_dtype_round(d, v) : v; }

static bool is_unsigned(tk_dtype d) { return ir_dtype_is_int(d) && !ir_dtype_is_signed(d); }

sema_cval sema_const_convert(tk_dtype from, tk_dtype to, sema_cval v) {
  sema_cval r = {0};
  if (ir_dtype_is_float(from)) {
    double f = v.f;
    if (ir_dtype_is_float(to)) {
      r.f = sema_round_float(to, f);
    } else if (to == TK_I1) {
      r.i = f != 0.0;
    } else if (isnan(f)) {
      r.i = 0;
    } else {
      /* truncate toward zero and saturate to the target's range */
      int bits = ir_dtype_bits(to);
      double t = trunc(f);
      if (is_unsigned(to)) {
        double hi = ldexp(1.0, bits);
        r.i = t <= 0 ? 0 : t >= hi ? (int64_t)(bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1)
                                    : (int64_t)(uint64_t)t;
      } else {
        double lim = ldexp(1.0, bits - 1);
        if (t >= lim) r.i = bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
        else if (t < -lim) r.i = bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
        else r.i = (int64_t)t;
      }
    }
    return r;
  }
  /* from an integer (or i1), already wrapped to from's width */
  if (ir_dtype_is_float(to)) {
    r.f = sema_round_float(to, is_unsigned(from) ? (double)(uint64_t)v.i : (double)v.i);
  } else if (to == TK_I1) {
    r.i = v.i != 0;
  } else {
    r.i = sema_wrap_int(to, v.i);
  }
  return r;
}

static bool fold_int(int op, tk_dtype d, int64_t x, int64_t y, int64_t *out, const char **why) {
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  bool u = is_unsigned(d);
  int bits = ir_dtype_bits(d);
  switch (op) {
  case TOK_PLUS: *out = (int64_t)(ux + uy); break;
  case TOK_MINUS: *out = (int64_t)(ux - uy); break;
  case TOK_STAR: *out = (int64_t)(ux * uy); break;
  case TOK_SLASH:
  case TOK_PERCENT:
    if (y == 0) {
      *why = op == TOK_SLASH ? "division by zero" : "remainder by zero";
      return false;
    }
    if (u) *out = (int64_t)(op == TOK_SLASH ? ux / uy : ux % uy);
    else if (x == INT64_MIN && y == -1) *out = op == TOK_SLASH ? INT64_MIN : 0;
    else *out = op == TOK_SLASH ? x / y : x % y;
    break;
  case TOK_AMP: *out = x & y; break;
  case TOK_PIPE: *out = x | y; break;
  case TOK_CARET: *out = x ^ y; break;
  case TOK_SHL:
  case TOK_SHR:
    if ((!u && y < 0) || uy >= (uint64_t)bits) {
      *why = "shift count out of range";
      return false;
    }
    if (op == TOK_SHL) *out = (int64_t)(ux << uy);
    else if (u) *out = (int64_t)(ux >> uy);
    else *out = x < 0 ? ~(int64_t)(~ux >> uy) : (int64_t)(ux >> uy);
    break;
  default: SU_UNREACHABLE();
  }
  *out = sema_wrap_int(d, *out);
  return true;
}

bool sema_fold_cdiv(tk_dtype d, sema_cval x, sema_cval y, sema_cval *out, const char **why) {
  int64_t q = 0, r = 0; /* set by fold_int when it succeeds; -O3 cannot see that */
  if (!fold_int(TOK_SLASH, d, x.i, y.i, &q, why) || !fold_int(TOK_PERCENT, d, x.i, y.i, &r, why))
    return false;
  bool up = r != 0 && (is_unsigned(d) || (r < 0) == (y.i < 0));
  out->i = sema_wrap_int(d, (int64_t)((uint64_t)q + up));
  return true;
}

static int64_t compare(int op, tk_dtype d, sema_cval x, sema_cval y) {
  int c;
  if (ir_dtype_is_float(d)) {
    if (isnan(x.f) || isnan(y.f)) return op == TOK_NE;
    c = x.f < y.f ? -1 : x.f > y.f;
  } else if (is_unsigned(d)) {
    c = (uint64_t)x.i < (uint64_t)y.i ? -1 : (uint64_t)x.i > (uint64_t)y.i;
  } else {
    c = x.i < y.i ? -1 : x.i > y.i;
  }
  switch (op) {
  case TOK_EQ: return c == 0;
  case TOK_NE: return c != 0;
  case TOK_LT: return c < 0;
  case TOK_LE: return c <= 0;
  case TOK_GT: return c > 0;
  case TOK_GE: return c >= 0;
  default: SU_UNREACHABLE();
  }
}

bool sema_fold_binary(int op, tk_dtype opd, sema_cval x, sema_cval y, tk_dtype res,
                      sema_cval *out, const char **why) {
  switch (op) {
  case TOK_EQ: case TOK_NE: case TOK_LT: case TOK_LE: case TOK_GT: case TOK_GE:
    out->i = compare(op, opd, x, y);
    return true;
  case TOK_ANDAND: out->i = x.i && y.i; return true;
  case TOK_OROR: out->i = x.i || y.i; return true;
  default: break;
  }
  if (ir_dtype_is_float(opd)) {
    double r;
    switch (op) {
    case TOK_PLUS: r = x.f + y.f; break;
    case TOK_MINUS: r = x.f - y.f; break;
    case TOK_STAR: r = x.f * y.f; break;
    case TOK_SLASH: r = x.f / y.f; break;
    case TOK_PERCENT: r = fmod(x.f, y.f); break;
    default: SU_UNREACHABLE();
    }
    out->f = sema_round_float(res, r);
    return true;
  }
  return fold_int(op, res, x.i, y.i, &out->i, why);
}

sema_cval sema_fold_unary(int op, tk_dtype d, sema_cval x) {
  sema_cval r = x;
  switch (op) {
  case TOK_PLUS: break;
  case TOK_MINUS:
    if (ir_dtype_is_float(d)) r.f = -x.f;
    else r.i = sema_wrap_int(d, (int64_t)(0 - (uint64_t)x.i));
    break;
  case TOK_BANG: r.i = d == TK_I1 ? !x.i : sema_wrap_int(d, ~x.i); break;
  case TOK_TILDE: r.i = d == TK_I1 ? !x.i : sema_wrap_int(d, ~x.i); break;
  default: SU_UNREACHABLE();
  }
  return r;
}

sema_cval sema_const_as(const ast_node *e, tk_dtype d) {
  SU_ASSERT(e->sema_is_const && e->sema_type);
  sema_cval v;
  if (ir_dtype_is_float(e->sema_type->dtype)) v.f = e->sema_const.f;
  else v.i = e->sema_const.i;
  return sema_const_convert(e->sema_type->dtype, d, v);
}

void sema_set_const(ast_node *e, const ir_type *t, sema_cval v) {
  e->sema_is_const = true;
  if (ir_dtype_is_float(t->dtype)) e->sema_const.f = v.f;
  else e->sema_const.i = v.i;
}
