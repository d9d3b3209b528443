/* Scalar numerics per dtype: the exact meaning of every arithmetic op, cast and memory
 * encoding. Everything else in the interpreter moves elements around; this file decides
 * their values. */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

ip_elem ip_int(tk_dtype dt, uint64_t bits) {
  ip_elem r = {.u = bits};
  int w = ir_dtype_bits(dt);
  if (w >= 64) return r;
  if (ir_dtype_is_signed(dt))
    r.i = (int64_t)(bits << (64 - w)) >> (64 - w);
  else
    r.u = bits & ((UINT64_C(1) << w) - 1);
  return r;
}

/* Most values rounded here are floats already (f32, f16 and bf16 ops compute in float):
 * those take the bit-level path; any other double takes ir_dtype_round's. */
double ip_round(tk_dtype dt, double x) {
  if (dt != TK_F64 && fabs(x) <= FLT_MAX && (double)(float)x == x)
    return ip_round_float(dt, (float)x);
  return ir_dtype_round(dt, x);
}

ip_elem ip_decode(tk_dtype dt, const void *p) { return ip_decode_inline(dt, p); }

void ip_encode(tk_dtype dt, ip_elem v, void *p) { ip_encode_inline(dt, v, p); }

/* ---- casts ----------------------------------------------------------------------------- */

/* Truncates toward zero and saturates at the type's range; NaN gives 0. */
static ip_elem float_to_int(tk_dtype to, double f) {
  int w = ir_dtype_bits(to);
  ip_elem r = {.u = 0};
  if (isnan(f)) return r;
  f = trunc(f);
  if (ir_dtype_is_signed(to)) {
    int64_t max = (int64_t)((UINT64_C(1) << (w - 1)) - 1);
    if (f >= ldexp(1, w - 1))
      r.i = max;
    else if (f < -ldexp(1, w - 1))
      r.i = -max - 1;
    else
      r.i = (int64_t)f;
    return r;
  }
  if (f <= 0) return r;
  r.u = f >= ldexp(1, w) ? (w == 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1) : (uint64_t)f;
  return r;
}

/* f32 from a 64-bit integer goes through C's own conversion, which rounds once; the
 * other float types are exact through double up to 2^53, far past f16's range. */
static double int_to_float(tk_dtype to, ip_elem v, bool is_signed) {
  if (to == TK_F32) return is_signed ? (float)v.i : (float)v.u;
  return ip_round(to, is_signed ? (double)v.i : (double)v.u);
}

ip_elem ip_convert(tk_dtype from, tk_dtype to, ip_elem v) {
  if (from == to || from == TK_PTR || to == TK_PTR) return v;
  ip_elem r = {.u = 0};
  if (ir_dtype_is_float(from)) {
    if (ir_dtype_is_float(to)) {
      r.f = ip_round(to, v.f);
      return r;
    }
    if (to == TK_I1) {
      r.u = v.f != 0;
      return r;
    }
    return float_to_int(to, v.f);
  }
  if (ir_dtype_is_float(to)) {
    r.f = int_to_float(to, v, ir_dtype_is_signed(from));
    return r;
  }
  if (to == TK_I1) {
    r.u = v.u != 0;
    return r;
  }
  return ip_int(to, v.u); /* canonical form already holds the sign or zero extension */
}

/* ---- arithmetic ------------------------------------------------------------------------ */

static ip_elem float_arith(ir_opcode op, tk_dtype dt, double x, double y) {
  ip_elem r = {.u = 0};
  if (dt != TK_F64) {
    /* f32, f16 and bf16 compute in float, then round to the type. */
    float a = (float)x, b = (float)y, c;
    switch (op) {
    case IR_ADD: c = a + b; break;
    case IR_SUB: c = a - b; break;
    case IR_MUL: c = a * b; break;
    case IR_DIV: c = a / b; break;
    case IR_REM: c = fmodf(a, b); break;
    case IR_MIN: c = (float)ip_fminmax(a, b, false); break;
    case IR_MAX: c = (float)ip_fminmax(a, b, true); break;
    case IR_POW: c = powf(a, b); break;
    case IR_COPYSIGN: c = copysignf(a, b); break;
    case IR_FDIV: c = a / b; break; /* the exact quotient: the GPU's is within 2 ulp of it */
    default: SU_UNREACHABLE();
    }
    r.f = ip_round(dt, c);
    return r;
  }
  switch (op) {
  case IR_ADD: r.f = x + y; break;
  case IR_SUB: r.f = x - y; break;
  case IR_MUL: r.f = x * y; break;
  case IR_DIV: case IR_FDIV: r.f = x / y; break;
  case IR_REM: r.f = fmod(x, y); break;
  case IR_MIN: r.f = ip_fminmax(x, y, false); break;
  case IR_MAX: r.f = ip_fminmax(x, y, true); break;
  case IR_POW: r.f = pow(x, y); break;
  case IR_COPYSIGN: r.f = copysign(x, y); break;
  default: SU_UNREACHABLE();
  }
  return r;
}

/* The high w bits of the 2w-bit product of x and y, read as w-bit unsigned numbers. */
static uint64_t umulhi(uint64_t x, uint64_t y, int w) {
  if (w < 64) {
    uint64_t mask = (UINT64_C(1) << w) - 1;
    if (w <= 32) return ((x & mask) * (y & mask)) >> w;
  }
  /* 64 bits: four 32 x 32 partial products; w in (32, 64) does not occur (no such types) */
  uint64_t xl = x & 0xffffffff, xh = x >> 32, yl = y & 0xffffffff, yh = y >> 32;
  uint64_t ll = xl * yl, lh = xl * yh, hl = xh * yl, hh = xh * yh;
  uint64_t mid = (ll >> 32) + (lh & 0xffffffff) + (hl & 0xffffffff);
  return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/* a / b rounded toward +infinity, with no intermediate that can overflow: the truncated
 * quotient, plus one when a remainder is left and the exact quotient is positive (the
 * remainder has a's sign). */
static uint64_t cdiv(bool is_signed, ip_elem a, ip_elem b) {
  if (!is_signed) return a.u / b.u + (a.u % b.u != 0);
  if (b.i == -1) return 0 - a.u; /* exact; INT64_MIN / -1 wraps like '/' */
  int64_t q = a.i / b.i, r = a.i % b.i;
  return (uint64_t)q + (r != 0 && (r < 0) == (b.i < 0));
}

ip_elem ip_arith(ir_opcode op, tk_dtype dt, ip_elem a, ip_elem b) {
  if (ir_dtype_is_float(dt)) return float_arith(op, dt, a.f, b.f);
  bool s = ir_dtype_is_signed(dt);
  uint64_t x = a.u, y = b.u, w = (uint64_t)ir_dtype_bits(dt), r;
  switch (op) {
  case IR_ADD: r = x + y; break;
  case IR_SUB: r = x - y; break;
  case IR_MUL: r = x * y; break;
  /* INT64_MIN / -1 overflows in C; the language wraps it (narrower types cannot hit it,
   * their canonical values are in range of int64). */
  case IR_DIV: r = !s ? x / y : b.i == -1 ? 0 - x : (uint64_t)(a.i / b.i); break;
  case IR_REM: r = !s ? x % y : b.i == -1 ? 0 : (uint64_t)(a.i % b.i); break;
  case IR_AND: r = x & y; break;
  case IR_OR: r = x | y; break;
  case IR_XOR: r = x ^ y; break;
  case IR_SHL: r = y >= w ? 0 : x << y; break;
  case IR_SHR:
    if (s)
      r = y >= w ? (a.i < 0 ? UINT64_MAX : 0) : (uint64_t)(a.i >> y);
    else
      r = y >= w ? 0 : x >> y;
    break;
  case IR_MIN: r = (s ? a.i < b.i : x < y) ? x : y; break;
  case IR_MAX: r = (s ? a.i > b.i : x > y) ? x : y; break;
  case IR_UMULHI: r = umulhi(x, y, (int)w); break;
  case IR_CDIV: r = cdiv(s, a, b); break;
  default: SU_UNREACHABLE();
  }
  return ip_int(dt, r);
}

/* f(x) for the float math ops, with libm in double or float precision. */
#define MATH_CASES(T, SUF)                                    \
  case IR_EXP: return exp##SUF(x);                           \
  case IR_EXP2: return exp2##SUF(x);                         \
  case IR_LOG: return log##SUF(x);                           \
  case IR_LOG2: return log2##SUF(x);                         \
  case IR_SQRT: return sqrt##SUF(x);                         \
  case IR_RSQRT: return (T)1 / sqrt##SUF(x);                 \
  case IR_SIN: return sin##SUF(x);                           \
  case IR_COS: return cos##SUF(x);                           \
  case IR_TANH: return tanh##SUF(x);                         \
  case IR_ERF: return erf##SUF(x);                           \
  case IR_ERFC: return erfc##SUF(x);                         \
  case IR_ABS: return fabs##SUF(x);                          \
  case IR_FLOOR: return floor##SUF(x);                       \
  case IR_CEIL: return ceil##SUF(x);                         \
  case IR_RINT: return nearbyint##SUF(x);                    \
  case IR_TRUNC: return trunc##SUF(x);                       \
  case IR_LOG1P: return log1p##SUF(x);                       \
  case IR_EXPM1: return expm1##SUF(x);                       \
  case IR_SIGMOID: return (T)1 / ((T)1 + exp##SUF(-x));      \
  case IR_NEG: return -x;                                    \
  default: SU_UNREACHABLE();

static double math_f64(ir_opcode op, double x) {
  switch (op) { MATH_CASES(double, ) }
}

static float math_f32(ir_opcode op, float x) {
  switch (op) { MATH_CASES(float, f) }
}

ip_elem ip_math(ir_opcode op, tk_dtype dt, ip_elem x) {
  ip_elem r = {.u = 0};
  if (dt == TK_F64) {
    r.f = math_f64(op, x.f);
    return r;
  }
  if (ir_dtype_is_float(dt)) {
    r.f = ip_round(dt, math_f32(op, (float)x.f));
    return r;
  }
  switch (op) {
  case IR_NEG: return ip_int(dt, 0 - x.u);
  case IR_NOT: return ip_int(dt, ~x.u);
  case IR_ABS: return ip_int(dt, ir_dtype_is_signed(dt) && x.i < 0 ? 0 - x.u : x.u);
  case IR_FLOOR: case IR_CEIL: return x;
  default: SU_UNREACHABLE();
  }
}

ip_elem ip_fma(tk_dtype dt, ip_elem a, ip_elem b, ip_elem c) {
  ip_elem r = {.u = 0};
  if (dt == TK_F64)
    r.f = fma(a.f, b.f, c.f);
  else if (ir_dtype_is_float(dt))
    r.f = ip_round(dt, fmaf((float)a.f, (float)b.f, (float)c.f));
  else
    r = ip_int(dt, a.u * b.u + c.u);
  return r;
}

bool ip_compare(ir_cmp pred, tk_dtype dt, ip_elem a, ip_elem b) {
  int c; /* -1, 0, 1; 2 when unordered (a NaN): only NE holds */
  if (ir_dtype_is_float(dt))
    c = isnan(a.f) || isnan(b.f) ? 2 : (a.f > b.f) - (a.f < b.f);
  else if (ir_dtype_is_signed(dt))
    c = (a.i > b.i) - (a.i < b.i);
  else
    c = (a.u > b.u) - (a.u < b.u);
  switch (pred) {
  case IR_CMP_EQ: return c == 0;
  case IR_CMP_NE: return c != 0;
  case IR_CMP_LT: return c == -1;
  case IR_CMP_LE: return c == -1 || c == 0;
  case IR_CMP_GT: return c == 1;
  case IR_CMP_GE: return c == 1 || c == 0;
  }
  SU_UNREACHABLE();
}

bool ip_is_zero(tk_dtype dt, ip_elem v) {
  return ir_dtype_is_float(dt) ? v.f == 0 : v.u == 0;
}

void ip_format(su_buf *b, tk_dtype dt, ip_elem v) {
  switch (dt) {
  case TK_PTR: su_buf_printf(b, "0x%llx", (unsigned long long)ip_mem_join(v.buf, v.i)); return;
  case TK_F64: su_buf_printf(b, "%.17g", v.f); return;
  case TK_F32: su_buf_printf(b, "%.9g", v.f); return;
  case TK_F16: case TK_BF16: su_buf_printf(b, "%g", v.f); return;
  default:
    if (ir_dtype_is_signed(dt))
      su_buf_printf(b, "%lld", (long long)v.i);
    else
      su_buf_printf(b, "%llu", (unsigned long long)v.u);
  }
}
