/* Typed loops for the hot elementwise (op, dtype) pairs and for sum / max / min reductions
 * and scans: one loop per pair instead of a dispatch per element. Each computes exactly
 * what numeric.c's scalar rule computes for every element, in the same float or integer
 * operations (tests/unit/test_interp.c compares them with ip_typed_loops off); a pair not
 * covered here returns false and runs through the scalar rules, so a new op needs nothing
 * here. */
#include "internal.h"

#include <math.h>

bool ip_typed_loops = true;

/* ---- integers: canonical form is sign extension (signed) or zero extension ----------- */

typedef struct {
  bool is_signed;
  int width, shift; /* shift = 64 - width */
} int_kind;

static int_kind int_kind_of(tk_dtype dt) {
  int w = ir_dtype_bits(dt);
  return (int_kind){ir_dtype_is_signed(dt), w, 64 - w};
}

/* ip_int(dt, x) without the lookups. */
static inline ip_elem wrap(int_kind k, uint64_t x) {
  ip_elem r = {.u = x};
  if (k.shift == 0) return r;
  if (k.is_signed) r.i = (int64_t)(x << k.shift) >> k.shift;
  else r.u = x & (UINT64_MAX >> k.shift);
  return r;
}

static bool int_binary(ir_opcode opc, tk_dtype dt, ip_elem *r, const ip_elem *a,
                       const ip_elem *b, int64_t n) {
  int_kind k = int_kind_of(dt);
  uint64_t w = (uint64_t)k.width;
#define INT_LOOP(expr)                                                      \
  for (int64_t i = 0; i < n; i++) {                                        \
    uint64_t x = a[i].u, y = b[i].u;                                       \
    (void)x, (void)y;                                                      \
    r[i] = wrap(k, (expr));                                                \
  }                                                                        \
  return true;
  switch (opc) {
  case IR_ADD: INT_LOOP(x + y)
  case IR_SUB: INT_LOOP(x - y)
  case IR_MUL: INT_LOOP(x * y)
  case IR_AND: INT_LOOP(x & y)
  case IR_OR: INT_LOOP(x | y)
  case IR_XOR: INT_LOOP(x ^ y)
  case IR_SHL: INT_LOOP(y >= w ? 0 : x << y)
  case IR_SHR:
    if (k.is_signed) {
      INT_LOOP(y >= w ? (a[i].i < 0 ? UINT64_MAX : 0) : (uint64_t)(a[i].i >> y))
    }
    INT_LOOP(y >= w ? 0 : x >> y)
  case IR_MIN:
    if (k.is_signed) {
      INT_LOOP(a[i].i < b[i].i ? x : y)
    }
    INT_LOOP(x < y ? x : y)
  case IR_MAX:
    if (k.is_signed) {
      INT_LOOP(a[i].i > b[i].i ? x : y)
    }
    INT_LOOP(x > y ? x : y)
  case IR_DIV: case IR_REM:
    /* A zero divisor leaves it to the scalar rule, which words the fault. INT_MIN / -1
     * wraps (the remainder is 0), as there. */
    for (int64_t i = 0; i < n; i++)
      if (b[i].u == 0) return false;
    if (!k.is_signed) {
      if (opc == IR_DIV) {
        INT_LOOP(x / y)
      }
      INT_LOOP(x % y)
    }
    if (opc == IR_DIV) {
      INT_LOOP(b[i].i == -1 ? 0 - x : (uint64_t)(a[i].i / b[i].i))
    }
    INT_LOOP(b[i].i == -1 ? 0 : (uint64_t)(a[i].i % b[i].i))
  default: return false;
  }
#undef INT_LOOP
}

/* ---- floats: f32, f16 and bf16 compute in float and round; f64 in double --------------- */

static bool float_binary(ir_opcode opc, tk_dtype dt, ip_elem *r, const ip_elem *a,
                         const ip_elem *b, int64_t n) {
#define FLOAT_LOOP(T, expr)                                                 \
  for (int64_t i = 0; i < n; i++) {                                        \
    T x = (T)a[i].f, y = (T)b[i].f;                                        \
    r[i] = (ip_elem){.f = sizeof(T) == 8 ? (double)(expr) : ip_round_float(dt, (float)(expr))}; \
  }                                                                        \
  return true;
#define FLOAT_OPS(T)                                                        \
  switch (opc) {                                                           \
  case IR_ADD: FLOAT_LOOP(T, x + y)                                        \
  case IR_SUB: FLOAT_LOOP(T, x - y)                                        \
  case IR_MUL: FLOAT_LOOP(T, x * y)                                        \
  case IR_DIV: FLOAT_LOOP(T, x / y)                                        \
  case IR_MIN: FLOAT_LOOP(T, ip_fminmax(x, y, false))                      \
  case IR_MAX: FLOAT_LOOP(T, ip_fminmax(x, y, true))                       \
  default: return false;                                                   \
  }
  if (dt == TK_F64) FLOAT_OPS(double)
  FLOAT_OPS(float)
#undef FLOAT_OPS
#undef FLOAT_LOOP
}

/* ---- comparisons: C's operators are the language's (ordered, except !=) --------------- */

static bool compare(ir_cmp pred, tk_dtype dt, ip_elem *r, const ip_elem *a, const ip_elem *b,
                    int64_t n) {
#define CMP_LOOP(field)                                                     \
  switch (pred) {                                                          \
  case IR_CMP_EQ: CMP_ONE(field, ==)                                       \
  case IR_CMP_NE: CMP_ONE(field, !=)                                       \
  case IR_CMP_LT: CMP_ONE(field, <)                                        \
  case IR_CMP_LE: CMP_ONE(field, <=)                                       \
  case IR_CMP_GT: CMP_ONE(field, >)                                        \
  case IR_CMP_GE: CMP_ONE(field, >=)                                       \
  }                                                                        \
  return false;
#define CMP_ONE(field, rel)                                                 \
  for (int64_t i = 0; i < n; i++) r[i] = (ip_elem){.u = a[i].field rel b[i].field}; \
  return true;
  if (ir_dtype_is_float(dt)) {
    CMP_LOOP(f)
  }
  if (ir_dtype_is_signed(dt)) {
    CMP_LOOP(i)
  }
  CMP_LOOP(u)
#undef CMP_ONE
#undef CMP_LOOP
}

/* ---- casts between the common types ----------------------------------------------------- */

static bool cast(tk_dtype from, tk_dtype to, ip_elem *r, const ip_elem *a, int64_t n) {
  bool ffrom = ir_dtype_is_float(from), fto = ir_dtype_is_float(to);
  if (from == TK_PTR || to == TK_PTR) return false;
  if (ffrom && fto && from != TK_F64) {
    for (int64_t i = 0; i < n; i++) r[i] = (ip_elem){.f = ip_round_float(to, (float)a[i].f)};
    return true;
  }
  if (!ffrom && !fto) {
    if (to == TK_I1) {
      for (int64_t i = 0; i < n; i++) r[i] = (ip_elem){.u = a[i].u != 0};
      return true;
    }
    int_kind k = int_kind_of(to);
    for (int64_t i = 0; i < n; i++) r[i] = wrap(k, a[i].u);
    return true;
  }
  if (!ffrom && to == TK_F32) {
    if (ir_dtype_is_signed(from))
      for (int64_t i = 0; i < n; i++) r[i] = (ip_elem){.f = (float)a[i].i};
    else
      for (int64_t i = 0; i < n; i++) r[i] = (ip_elem){.f = (float)a[i].u};
    return true;
  }
  return false; /* float to int saturates: the scalar rule */
}

bool ip_typed_elementwise(const ir_op *op, ip_val r, ip_val a, ip_val b, ip_val c) {
  if (!ip_typed_loops) return false;
  tk_dtype dt = ip_elem_dtype(a.type), rdt = ip_elem_dtype(r.type);
  int64_t n = r.n;
  SU_ASSERT(a.n == n && b.n == n && c.n == n);
  switch (op->opc) {
  case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_REM: case IR_MIN: case IR_MAX:
  case IR_AND: case IR_OR: case IR_XOR: case IR_SHL: case IR_SHR:
    if (ir_dtype_is_float(dt)) return float_binary(op->opc, dt, r.e, a.e, b.e, n);
    return int_binary(op->opc, dt, r.e, a.e, b.e, n);
  case IR_CMP:
    return compare((ir_cmp)op->attr, dt, r.e, a.e, b.e, n);
  case IR_SELECT:
    for (int64_t i = 0; i < n; i++) r.e[i] = a.e[i].u ? b.e[i] : c.e[i];
    return true;
  case IR_CAST:
    return cast(dt, rdt, r.e, a.e, n);
  case IR_FMA:
    if (dt == TK_F64) {
      for (int64_t i = 0; i < n; i++) r.e[i] = (ip_elem){.f = fma(a.e[i].f, b.e[i].f, c.e[i].f)};
      return true;
    }
    if (!ir_dtype_is_float(dt)) return false;
    for (int64_t i = 0; i < n; i++)
      r.e[i] = (ip_elem){.f = ip_round_float(dt, fmaf((float)a.e[i].f, (float)b.e[i].f,
                                                       (float)c.e[i].f))};
    return true;
  case IR_ADDPTR: {
    int64_t size = ir_dtype_bytes(ir_type_elem(r.type)->elem->dtype);
    tk_dtype idt = ip_elem_dtype(b.type);
    bool s = ir_dtype_is_signed(idt);
    for (int64_t i = 0; i < n; i++) r.e[i] = ip_addptr(a.e[i], s, b.e[i], size);
    return true;
  }
  default:
    return false;
  }
}

/* ---- reductions and scans ------------------------------------------------------------ */

/* acc = first; acc = combine(acc, next) along the axis in index order, as the scalar rule.
 * A scan stores every acc; a reduction the last. */
#define REDUCE_LOOP(T, get, combine, put)                                        \
  for (int64_t o = 0; o < outer; o++)                                            \
    for (int64_t j = 0; j < inner; j++) {                                        \
      const ip_elem *e = &src.e[o * len * inner + j];                            \
      ip_elem *out = scan ? &r.e[o * len * inner + j] : &r.e[o * inner + j];     \
      T acc = get(e[0]);                                                         \
      if (scan) out[0] = put(acc);                                               \
      for (int64_t k = 1; k < len; k++) {                                        \
        T v = get(e[k * inner]);                                                 \
        acc = combine;                                                           \
        if (scan) out[k * inner] = put(acc);                                     \
      }                                                                          \
      if (!scan) *out = put(acc);                                                \
    }                                                                            \
  return true;

#define GET_FLOAT(e) ((float)(e).f)
#define GET_DOUBLE(e) ((e).f)
#define PUT_FLOAT(acc) ((ip_elem){.f = (acc)})
#define GET_INT(e) (wrap(ik, (e).u).u)
#define PUT_INT(acc) ((ip_elem){.u = (acc)})

bool ip_typed_reduce(ir_reduce_kind kind, bool scan, ip_val src, ip_val r, int64_t outer,
                     int64_t len, int64_t inner) {
  if (!ip_typed_loops) return false;
  tk_dtype idt = ip_elem_dtype(src.type), rdt = ip_elem_dtype(r.type);
  bool fi = ir_dtype_is_float(idt), fr = ir_dtype_is_float(rdt);
  if (rdt == TK_F32 && fi && idt != TK_F64) {
    switch (kind) {
    case IR_RED_SUM: REDUCE_LOOP(float, GET_FLOAT, acc + v, PUT_FLOAT)
    case IR_RED_MAX: REDUCE_LOOP(float, GET_FLOAT, (float)ip_fminmax(acc, v, true), PUT_FLOAT)
    case IR_RED_MIN: REDUCE_LOOP(float, GET_FLOAT, (float)ip_fminmax(acc, v, false), PUT_FLOAT)
    }
  }
  if (rdt == TK_F64 && fi) {
    switch (kind) {
    case IR_RED_SUM: REDUCE_LOOP(double, GET_DOUBLE, acc + v, PUT_FLOAT)
    case IR_RED_MAX: REDUCE_LOOP(double, GET_DOUBLE, ip_fminmax(acc, v, true), PUT_FLOAT)
    case IR_RED_MIN: REDUCE_LOOP(double, GET_DOUBLE, ip_fminmax(acc, v, false), PUT_FLOAT)
    }
  }
  if (!fi && !fr && rdt != TK_I1) {
    int_kind ik = int_kind_of(rdt);
    switch (kind) {
    case IR_RED_SUM: REDUCE_LOOP(uint64_t, GET_INT, wrap(ik, acc + v).u, PUT_INT)
    case IR_RED_MAX:
      if (ik.is_signed) {
        REDUCE_LOOP(uint64_t, GET_INT, (int64_t)acc > (int64_t)v ? acc : v, PUT_INT)
      }
      REDUCE_LOOP(uint64_t, GET_INT, acc > v ? acc : v, PUT_INT)
    case IR_RED_MIN:
      if (ik.is_signed) {
        REDUCE_LOOP(uint64_t, GET_INT, (int64_t)acc < (int64_t)v ? acc : v, PUT_INT)
      }
      REDUCE_LOOP(uint64_t, GET_INT, acc < v ? acc : v, PUT_INT)
    }
  }
  return false;
}
