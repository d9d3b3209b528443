/* Unit tests of the interpreter: scalar numerics, the buffer table, and kernels built
 * with the IR builder, run over interpreter memory. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/internal.h"

/* ---- numerics ------------------------------------------------------------------------- */

static ip_elem I(int64_t v) { return (ip_elem){.i = v}; }
static ip_elem F(double v) { return (ip_elem){.f = v}; }

static void test_float_rounding(void **state) {
  (void)state;
  /* f16: 11 bits of precision; ties go to even. */
  assert_true(ip_round(TK_F16, 1 + ldexp(1, -11)) == 1.0);
  assert_true(ip_round(TK_F16, 1 + 3 * ldexp(1, -11)) == 1 + ldexp(1, -9));
  assert_true(ip_round(TK_F16, 65519) == 65504);
  assert_true(isinf(ip_round(TK_F16, 65520)));
  assert_true(ip_round(TK_F16, ldexp(1, -25)) == 0);                 /* tie with 0: even */
  assert_true(ip_round(TK_F16, 3 * ldexp(1, -26)) == ldexp(1, -24)); /* smallest subnormal */
  assert_true(ip_round(TK_BF16, 1 + ldexp(1, -8)) == 1.0);
  assert_true(ip_round(TK_BF16, 1 + 3 * ldexp(1, -8)) == 1 + ldexp(1, -6));
  assert_true(ip_round(TK_F32, 0.1) == (double)0.1f);
  assert_true(isnan(ip_round(TK_F16, NAN)));
}

static void test_float_encoding(void **state) {
  (void)state;
  struct { tk_dtype dt; double v; uint16_t bits; } cases[] = {
      {TK_F16, 1.0, 0x3c00}, {TK_F16, -2.0, 0xc000}, {TK_F16, 65504, 0x7bff},
      {TK_F16, ldexp(1, -24), 0x0001}, {TK_F16, INFINITY, 0x7c00}, {TK_F16, -0.0, 0x8000},
      {TK_BF16, 1.0, 0x3f80}, {TK_BF16, -3.0, 0xc040},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uint16_t got;
    ip_encode(cases[i].dt, F(cases[i].v), &got);
    assert_int_equal(got, cases[i].bits);
    assert_true(ip_decode(cases[i].dt, &got).f == cases[i].v);
  }
  uint16_t nan_bits;
  ip_encode(TK_F16, F(NAN), &nan_bits);
  assert_true(isnan(ip_decode(TK_F16, &nan_bits).f));
}

/* The bit-level f16 / bf16 paths (interp/float16.h) against ir_dtype_round, the
 * reference: every 16-bit pattern, each one's neighbourhood of midpoints, and random
 * floats. The same value bits, NaN aside (the rounding keeps a NaN as it is). */
static bool same_value(double a, double b) {
  return isnan(a) ? isnan(b) : a == b && signbit(a) == signbit(b);
}

static void check_round(tk_dtype dt, float f) {
  double want = ir_dtype_round(dt, f), got = ip_round_float(dt, f), via = ip_round(dt, f);
  if (!same_value(want, got) || !same_value(want, via))
    fail_msg("%s rounding of %a: got %a (%a from ip_round), want %a", ir_dtype_name(dt),
             (double)f, got, via, want);
}

static void test_float16_bits(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 0x10000; h++) {
    uint16_t bits = (uint16_t)h, back;
    int e = (h >> 10) & 31, m = h & 1023;
    double want = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    if (h & 0x8000) want = -want;
    double v = ip_decode(TK_F16, &bits).f;
    assert_true(same_value(v, want));
    ip_encode(TK_F16, F(v), &back);
    assert_int_equal(back, isnan(v) ? (h & 0x8000) | 0x7e00 : h);
    /* Between this value and the next one up: the midpoint and its float neighbours. */
    float lo = (float)v, hi = nextafterf(lo, copysignf(INFINITY, lo));
    uint16_t next = (uint16_t)(h + 1);
    if (!isnan(v) && !isinf(v) && (next & 0x7fff) <= 0x7c00) {
      double up = ip_decode(TK_F16, &next).f;
      float mid = (float)((v + up) / 2);
      check_round(TK_F16, mid), check_round(TK_F16, nextafterf(mid, 0)),
          check_round(TK_F16, nextafterf(mid, copysignf(INFINITY, mid)));
    }
    check_round(TK_F16, lo), check_round(TK_F16, hi);
    /* bf16: h is the top half of a float; its midpoints are at bit 15. */
    uint32_t u = h << 16;
    float b, bmid, bmid_lo, bmid_hi;
    memcpy(&b, &u, 4);
    u |= 0x8000, memcpy(&bmid, &u, 4);
    u -= 1, memcpy(&bmid_lo, &u, 4);
    u += 2, memcpy(&bmid_hi, &u, 4);
    check_round(TK_BF16, b), check_round(TK_BF16, bmid), check_round(TK_BF16, bmid_lo),
        check_round(TK_BF16, bmid_hi);
  }
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 1000000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    uint32_t u = (uint32_t)x;
    float f;
    memcpy(&f, &u, 4);
    check_round(TK_F16, f), check_round(TK_BF16, f), check_round(TK_F32, f);
    /* A double that is no float goes the slow way, and must round once, from itself. */
    double d;
    memcpy(&d, &x, 8);
    for (int t = 0; t < 3; t++) {
      tk_dtype dt = t == 0 ? TK_F16 : t == 1 ? TK_BF16 : TK_F32;
      assert_true(same_value(ip_round(dt, d), ir_dtype_round(dt, d)));
      double near = (double)f * (1 + 0x1p-40);
      assert_true(same_value(ip_round(dt, near), ir_dtype_round(dt, near)));
    }
  }
}

static void test_integer_wraparound(void **state) {
  (void)state;
  assert_int_equal(ip_arith(IR_ADD, TK_I8, I(127), I(1)).i, -128);
  assert_int_equal(ip_arith(IR_ADD, TK_U8, I(255), I(1)).u, 0);
  assert_int_equal(ip_arith(IR_SUB, TK_U32, I(0), I(1)).u, 4294967295u);
  assert_int_equal(ip_arith(IR_MUL, TK_I16, I(300), I(300)).i, (int16_t)(90000 & 0xffff));
  assert_int_equal(ip_arith(IR_DIV, TK_I32, I(INT32_MIN), I(-1)).i, INT32_MIN);
  assert_int_equal(ip_arith(IR_DIV, TK_I64, I(INT64_MIN), I(-1)).i, INT64_MIN);
  assert_int_equal(ip_arith(IR_REM, TK_I64, I(INT64_MIN), I(-1)).i, 0);
  assert_int_equal(ip_arith(IR_DIV, TK_I32, I(-7), I(2)).i, -3); /* truncates */
  assert_int_equal(ip_arith(IR_REM, TK_I32, I(-7), I(2)).i, -1);
  assert_int_equal(ip_arith(IR_DIV, TK_U32, ip_int(TK_U32, (uint64_t)-7), I(2)).u, 2147483644u);
  assert_int_equal(ip_arith(IR_SHL, TK_I32, I(1), I(32)).i, 0);
  assert_int_equal(ip_arith(IR_SHR, TK_I32, I(-8), I(1)).i, -4);
  assert_int_equal(ip_arith(IR_SHR, TK_I32, I(-8), I(40)).i, -1);
  assert_int_equal(ip_arith(IR_SHR, TK_U8, I(0x80), I(7)).u, 1);
  /* an amount of the width or more, read as unsigned (so a negative one too), gives 0 or
   * the sign on every type; the GPU back end emits the same (emit_elementwise.c) */
  assert_int_equal(ip_arith(IR_SHL, TK_I8, I(3), I(8)).i, 0);
  assert_int_equal(ip_arith(IR_SHL, TK_I8, I(3), I(-1)).i, 0);
  assert_int_equal(ip_arith(IR_SHL, TK_U16, I(3), I(15)).u, 0x8000);
  assert_int_equal(ip_arith(IR_SHR, TK_I16, I(-5), I(100)).i, -1);
  assert_int_equal(ip_arith(IR_SHR, TK_I16, I(5), I(-3)).i, 0);
  assert_int_equal(ip_arith(IR_SHR, TK_U32, ip_int(TK_U32, 0xffffffffu), I(32)).u, 0);
  assert_int_equal(ip_arith(IR_SHL, TK_I64, I(1), I(64)).i, 0);
  assert_int_equal(ip_arith(IR_DIV, TK_I8, I(-128), I(-1)).i, -128);
  assert_int_equal(ip_arith(IR_REM, TK_I16, I(INT16_MIN), I(-1)).i, 0);
  assert_int_equal(ip_arith(IR_MIN, TK_U32, ip_int(TK_U32, (uint64_t)-1), I(3)).u, 3);
  assert_int_equal(ip_arith(IR_MIN, TK_I32, I(-1), I(3)).i, -1);
  assert_int_equal(ip_math(IR_ABS, TK_I8, I(-128)).i, -128);
  assert_int_equal(ip_math(IR_NOT, TK_I1, I(1)).u, 0);
}

static void test_float_arith(void **state) {
  (void)state;
  /* f16: 2048 + 1 is not representable; the sum rounds back to 2048. */
  assert_true(ip_arith(IR_ADD, TK_F16, F(2048), F(1)).f == 2048);
  assert_true(ip_arith(IR_ADD, TK_F32, F(16777216), F(1)).f == 16777216);
  assert_true(ip_arith(IR_ADD, TK_F64, F(16777216), F(1)).f == 16777217);
  assert_true(isnan(ip_arith(IR_MAX, TK_F32, F(NAN), F(1)).f));
  assert_true(signbit(ip_arith(IR_MIN, TK_F32, F(0.0), F(-0.0)).f));
  assert_true(ip_math(IR_EXP, TK_F32, F(1)).f == (double)expf(1));
  assert_true(ip_math(IR_EXP, TK_F64, F(1)).f == exp(1));
  assert_true(fabs(ip_math(IR_SIGMOID, TK_F32, F(0)).f - 0.5) == 0);
  assert_false(ip_compare(IR_CMP_LT, TK_F32, F(NAN), F(1)));
  assert_true(ip_compare(IR_CMP_NE, TK_F32, F(NAN), F(NAN)));
  assert_true(ip_compare(IR_CMP_LT, TK_I32, I(-1), I(0)));
  assert_false(ip_compare(IR_CMP_LT, TK_U32, ip_int(TK_U32, (uint64_t)-1), I(0)));
}

/* round/rint, trunc and copysign are exact; pow, log1p and expm1 are libm's in the type's
 * precision; fdiv is the exact quotient (the GPU's is within 2 ulp). */
static void test_more_float_math(void **state) {
  (void)state;
  static const double rint_in[] = {2.5, 3.5, -2.5, 0.5, -1.5, 1e30, 2.4999998};
  static const double rint_out[] = {2, 4, -2, 0, -2, 1e30, 2};
  for (size_t i = 0; i < sizeof rint_in / sizeof *rint_in; i++) {
    assert_true(ip_math(IR_RINT, TK_F32, F(rint_in[i])).f == (double)(float)rint_out[i]);
    assert_true(ip_math(IR_RINT, TK_F64, F(rint_in[i])).f == rint_out[i]);
  }
  assert_true(signbit(ip_math(IR_RINT, TK_F32, F(-0.5)).f));
  assert_true(ip_math(IR_RINT, TK_F16, F(1024.5)).f == 1024); /* exact in f16, a tie */
  assert_true(ip_math(IR_TRUNC, TK_F32, F(-2.75)).f == -2);
  assert_true(signbit(ip_math(IR_TRUNC, TK_F32, F(-0.25)).f));
  assert_true(ip_math(IR_LOG1P, TK_F32, F(1e-10)).f == (double)log1pf(1e-10f));
  assert_true(ip_math(IR_EXPM1, TK_F64, F(1e-300)).f == 1e-300);
  assert_true(ip_arith(IR_POW, TK_F32, F(2), F(10)).f == 1024);
  assert_true(isnan(ip_arith(IR_POW, TK_F32, F(-8), F(1.0 / 3)).f));
  assert_true(ip_arith(IR_POW, TK_F64, F(1), F(NAN)).f == 1); /* C99's special cases */
  assert_true(ip_arith(IR_POW, TK_F16, F(3), F(2)).f == 9);
  assert_true(ip_arith(IR_COPYSIGN, TK_F32, F(3), F(-0.0)).f == -3);
  assert_true(ip_arith(IR_COPYSIGN, TK_F64, F(-3), F(1)).f == 3);
  assert_true(ip_arith(IR_FDIV, TK_F32, F(1), F(3)).f == (double)(1.0f / 3.0f));
  assert_true(ip_arith(IR_FDIV, TK_F64, F(1), F(3)).f == 1.0 / 3.0);
}

/* umulhi reads both operands as unsigned; cdiv is the exact ceiling for every sign and
 * never overflows. */
static void test_umulhi_and_cdiv(void **state) {
  (void)state;
  assert_int_equal(ip_arith(IR_UMULHI, TK_U32, I(0xffffffff), I(0xffffffff)).u, 0xfffffffeu);
  assert_int_equal(ip_arith(IR_UMULHI, TK_I32, I(-1), I(-1)).i, -2); /* 0xfffffffe */
  assert_int_equal(ip_arith(IR_UMULHI, TK_I32, I(-1), I(2)).i, 1);
  assert_int_equal(ip_arith(IR_UMULHI, TK_U8, I(200), I(200)).u, 156);
  assert_int_equal(ip_arith(IR_UMULHI, TK_I16, I(-2), I(3)).i, 2);
  uint64_t x = 0x9e3779b97f4a7c15u, y = 0xd2e7470ee14c6c93u;
  for (int i = 0; i < 64; i++) {
    uint64_t want = (uint64_t)(((unsigned __int128)x * y) >> 64);
    assert_int_equal(ip_arith(IR_UMULHI, TK_U64, (ip_elem){.u = x}, (ip_elem){.u = y}).u, want);
    x = x * 6364136223846793005u + 1442695040888963407u;
    y ^= x >> 7;
  }
  assert_int_equal(ip_arith(IR_UMULHI, TK_U64, I(-1), I(-1)).u, UINT64_MAX - 1);
  static const int64_t cd[][3] = {{7, 2, 4},   {-7, 2, -3},  {7, -2, -3}, {-7, -2, 4}, {6, 3, 2},
                                  {-6, 3, -2}, {0, 5, 0},    {1, 5, 1},   {-1, 5, 0},
                                  {INT32_MAX, 2, 1073741824}, {INT32_MIN, -1, INT32_MIN}};
  for (size_t i = 0; i < sizeof cd / sizeof *cd; i++)
    assert_int_equal(ip_arith(IR_CDIV, TK_I32, I(cd[i][0]), I(cd[i][1])).i, cd[i][2]);
  assert_int_equal(ip_arith(IR_CDIV, TK_I64, I(INT64_MAX), I(2)).i, INT64_C(1) << 62);
  assert_int_equal(ip_arith(IR_CDIV, TK_I64, I(INT64_MIN), I(-1)).i, INT64_MIN);
  assert_int_equal(ip_arith(IR_CDIV, TK_I64, I(INT64_MIN), I(2)).i, INT64_MIN / 2);
  assert_int_equal(ip_arith(IR_CDIV, TK_U32, I(0xffffffff), I(2)).u, 0x80000000u);
  assert_int_equal(ip_arith(IR_CDIV, TK_U64, I(-1), I(1)).u, UINT64_MAX);
  assert_int_equal(ip_arith(IR_CDIV, TK_U8, I(255), I(16)).u, 16);
}

static void test_casts(void **state) {
  (void)state;
  assert_int_equal(ip_convert(TK_F32, TK_I32, F(3e9)).i, INT32_MAX);
  assert_int_equal(ip_convert(TK_F32, TK_I32, F(-3e9)).i, INT32_MIN);
  assert_int_equal(ip_convert(TK_F32, TK_I32, F(NAN)).i, 0);
  assert_int_equal(ip_convert(TK_F32, TK_I32, F(-1.5)).i, -1);
  assert_int_equal(ip_convert(TK_F64, TK_I64, F(1e300)).i, INT64_MAX);
  assert_int_equal(ip_convert(TK_F32, TK_U8, F(-3)).u, 0);
  assert_int_equal(ip_convert(TK_F32, TK_U8, F(300)).u, 255);
  assert_int_equal(ip_convert(TK_F32, TK_I1, F(0.25)).u, 1);
  assert_int_equal(ip_convert(TK_I32, TK_U32, I(-1)).u, 4294967295u);
  assert_int_equal(ip_convert(TK_U32, TK_I64, ip_int(TK_U32, 4294967295u)).i, 4294967295);
  assert_int_equal(ip_convert(TK_I32, TK_I8, I(300)).i, 44);
  assert_true(ip_convert(TK_I8, TK_F32, I(-1)).f == -1);
  assert_true(isinf(ip_convert(TK_I32, TK_F16, I(65520)).f));
  assert_true(ip_convert(TK_I32, TK_F16, I(65519)).f == 65504);
  assert_true(isinf(ip_convert(TK_I32, TK_F16, I(70000)).f));
  assert_true(ip_convert(TK_I32, TK_F16, I(2049)).f == 2048); /* tie: even */
  assert_true(ip_convert(TK_F64, TK_F16, F(1 + ldexp(1, -11) + ldexp(1, -40))).f ==
              1 + ldexp(1, -10)); /* one rounding from f64, not two */
}

/* ---- memory --------------------------------------------------------------------------- */

static void test_buffers(void **state) {
  (void)state;
  ip_memory *mem = ip_memory_new();
  su_buf err = {0};
  tk_devptr a, b;
  assert_true(ip_mem_alloc(mem, 64, &a, &err));
  assert_true(ip_mem_alloc(mem, 16, &b, &err));
  assert_true(a != 0 && b != 0 && a != b);
  assert_non_null(ip_mem_host(mem, a + 60, 4, &err));
  assert_null(ip_mem_host(mem, a + 60, 8, &err));
  assert_non_null(strstr(su_buf_str(&err), "past the end of the 64-byte buffer"));
  assert_false(ip_mem_alloc(mem, 0, &b, &err));
  assert_true(ip_mem_valid_arg(mem, 0));
  assert_true(ip_mem_valid_arg(mem, a + 64));
  assert_false(ip_mem_valid_arg(mem, a + 65));
  assert_false(ip_mem_free(mem, a + 4, &err));
  assert_true(ip_mem_free(mem, a, &err));
  assert_false(ip_mem_free(mem, a, &err));
  assert_false(ip_mem_valid_arg(mem, a));
  assert_null(ip_mem_host(mem, a, 4, &err));

  void *host = NULL;
  uint32_t id;
  int64_t off;
  ip_mem_split(b, &id, &off);
  err.len = 0;
  assert_string_equal(ip_mem_access(mem, id, 16, 4, &host, &err), "out-of-bounds");
  assert_string_equal(su_buf_str(&err), "element offset 4 is past the end of a 16-byte buffer");
  assert_string_equal(ip_mem_access(mem, id, -8, 4, &host, &err), "out-of-bounds");
  assert_string_equal(ip_mem_access(mem, id, 2, 4, &host, &err), "misaligned");
  assert_string_equal(ip_mem_access(mem, 0, 0, 4, &host, &err), "null-pointer");
  assert_string_equal(ip_mem_access(mem, 99, 0, 4, &host, &err), "wild-pointer");
  ip_mem_split(a, &id, &off);
  assert_string_equal(ip_mem_access(mem, id, 0, 4, &host, &err), "use-after-free");
  ip_mem_split(b, &id, &off);
  assert_null(ip_mem_access(mem, id, 12, 4, &host, &err));
  assert_non_null(host);
  su_buf_free(&err);
  ip_memory_free(mem);
}

/* ---- kernels built with the IR builder ------------------------------------------------ */

/* A kernel under construction plus the memory and output of its launches. */
typedef struct {
  su_arena *a;
  ir_module *m;
  ir_func *f;
  ir_builder b;
  ip_memory *mem;
  su_buf err;
} kit;

static kit *kit_new(const char *name) {
  kit *k = calloc(1, sizeof *k);
  k->a = su_arena_new();
  k->m = ir_module_new(k->a, "t.tk");
  k->f = ir_func_new(k->m, name, (ir_loc){1, 1});
  k->b = (ir_builder){.m = k->m, .block = k->f->body, .loc = {1, 1}};
  k->mem = ip_memory_new();
  return k;
}

static void kit_free(kit *k) {
  ip_memory_free(k->mem);
  su_arena_free(k->a);
  su_buf_free(&k->err);
  free(k);
}

static const ir_type *S(kit *k, tk_dtype dt) { return ir_type_scalar(k->m, dt); }
static const ir_type *P(kit *k, tk_dtype dt) { return ir_type_ptr(k->m, S(k, dt)); }
static const ir_type *T(kit *k, const ir_type *elem, int d0, int d1) {
  int shape[2] = {d0, d1};
  return ir_type_tile(k->m, elem, d1 ? 2 : 1, shape);
}
static ir_value *param(kit *k, const char *name, const ir_type *t) {
  return ir_func_add_param(k->m, k->f, name, t);
}
static ir_value *op1(kit *k, ir_opcode opc, const ir_type *t, ir_value *x) {
  return ir_build1(&k->b, opc, t, 1, &x);
}
static ir_value *op2(kit *k, ir_opcode opc, const ir_type *t, ir_value *x, ir_value *y) {
  ir_value *v[2] = {x, y};
  return ir_build1(&k->b, opc, t, 2, v);
}
static ir_value *arange(kit *k, int n) {
  ir_value *v = ir_build1(&k->b, IR_ARANGE, T(k, S(k, TK_I32), n, 0), 0, NULL);
  v->def->attr = 0;
  v->def->attr2 = n;
  return v;
}
static ir_value *splat(kit *k, ir_value *x, const ir_type *like) {
  return op1(k, IR_SPLAT, ir_type_like(k->m, like, x->type), x);
}
static ir_value *load(kit *k, ir_value *ptrs, ir_value *mask, ir_value *other) {
  ir_value *v[3] = {ptrs, mask, other};
  const ir_type *t = ir_type_like(k->m, ptrs->type, ir_type_elem(ptrs->type)->elem);
  return ir_build1(&k->b, IR_LOAD, t, mask ? (other ? 3 : 2) : 1, v);
}
static void store(kit *k, ir_value *ptrs, ir_value *val, ir_value *mask) {
  ir_value *v[3] = {ptrs, val, mask};
  ir_build(&k->b, IR_STORE, mask ? 3 : 2, v, 0, NULL);
}
static void ret(kit *k) { ir_build(&k->b, IR_RETURN, 0, NULL, 0, NULL); }
static void at_line(kit *k, uint32_t line, uint32_t col) { k->b.loc = (ir_loc){line, col}; }

static void verify(kit *k) {
  su_diags d;
  su_diags_init(&d, k->a, stderr);
  assert_true(ir_verify(k->m, &d));
}

static ip_status launch(kit *k, unsigned gx, const tk_arg *args, int nargs, FILE *out) {
  k->err.len = 0;
  return ip_launch(k->mem, k->m, k->f, (tk_grid){gx, 1, 1}, args, nargs, out, &k->err);
}

static tk_devptr upload(kit *k, const void *host, size_t bytes) {
  tk_devptr p = 0;
  assert_true(ip_mem_alloc(k->mem, bytes, &p, &k->err));
  memcpy(ip_mem_host(k->mem, p, bytes, &k->err), host, bytes);
  return p;
}

static void download(kit *k, void *host, tk_devptr p, size_t bytes) {
  memcpy(host, ip_mem_host(k->mem, p, bytes, &k->err), bytes);
}

/* out[i] = x[i] + y[i] for i < n, BLOCK elements per program; with masked = false the
 * mask is left out, so the last program runs off the end. */
static kit *build_vadd(int block, bool masked) {
  kit *k = kit_new("vadd");
  ir_value *x = param(k, "x", P(k, TK_F32)), *y = param(k, "y", P(k, TK_F32));
  ir_value *out = param(k, "out", P(k, TK_F32)), *n = param(k, "n", S(k, TK_I32));
  const ir_type *ti = T(k, S(k, TK_I32), block, 0);
  const ir_type *tp = T(k, P(k, TK_F32), block, 0);
  ir_value *pid = ir_build1(&k->b, IR_PROGRAM_ID, S(k, TK_I32), 0, NULL);
  ir_value *start = op2(k, IR_MUL, S(k, TK_I32), pid, ir_const_int(&k->b, S(k, TK_I32), block));
  ir_value *offs = op2(k, IR_ADD, ti, splat(k, start, ti), arange(k, block));
  ir_value *mask = masked ? ir_cmp_build(&k->b, IR_CMP_LT, offs, splat(k, n, ti)) : NULL;
  at_line(k, 3, 7);
  ir_value *vx = load(k, op2(k, IR_ADDPTR, tp, splat(k, x, tp), offs), mask, NULL);
  ir_value *vy = load(k, op2(k, IR_ADDPTR, tp, splat(k, y, tp), offs), mask, NULL);
  at_line(k, 4, 5);
  store(k, op2(k, IR_ADDPTR, tp, splat(k, out, tp), offs), ir_binary(&k->b, IR_ADD, vx, vy), mask);
  ret(k);
  verify(k);
  return k;
}

static void test_vadd_ragged(void **state) {
  (void)state;
  kit *k = build_vadd(64, true);
  for (int n = 1; n <= 1000; n += 333) {
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *o = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) x[i] = (float)i * 0.5f, y[i] = 1.0f / (float)(i + 1);
    tk_devptr dx = upload(k, x, sizeof(float) * n), dy = upload(k, y, sizeof(float) * n);
    tk_devptr dout = upload(k, x, sizeof(float) * n);
    tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_ptr(dout), tk_arg_i32(n)};
    assert_int_equal(launch(k, (unsigned)(n + 63) / 64, args, 4, NULL), IP_OK);
    download(k, o, dout, sizeof(float) * n);
    for (int i = 0; i < n; i++) assert_true(o[i] == x[i] + y[i]);
    free(x), free(y), free(o);
  }
  kit_free(k);
}

static void test_out_of_bounds_load(void **state) {
  (void)state;
  kit *k = build_vadd(64, false);
  float data[100] = {0};
  tk_devptr d = upload(k, data, sizeof data);
  tk_arg args[] = {tk_arg_ptr(d), tk_arg_ptr(d), tk_arg_ptr(d), tk_arg_i32(100)};
  assert_int_equal(launch(k, 2, args, 4, NULL), IP_FAULT);
  assert_string_equal(su_buf_str(&k->err),
                      "t.tk:3:7: out-of-bounds load in kernel 'vadd' at program (1, 0, 0): "
                      "element offset 100 is past the end of a 400-byte buffer");
  kit_free(k);
}

static void test_bad_arguments(void **state) {
  (void)state;
  kit *k = build_vadd(64, true);
  float data[4] = {0};
  tk_devptr d = upload(k, data, sizeof data);
  tk_arg args[] = {tk_arg_ptr(d), tk_arg_ptr(d), tk_arg_ptr(d), tk_arg_f32(4)};
  assert_int_equal(launch(k, 1, args, 3, NULL), IP_BAD_ARGS);
  assert_string_equal(su_buf_str(&k->err), "kernel 'vadd' expects 4 arguments, got 3");
  assert_int_equal(launch(k, 1, args, 4, NULL), IP_BAD_ARGS);
  assert_string_equal(su_buf_str(&k->err),
                      "argument 3 of 'vadd' ('n') has type i32, but an f32 was passed");
  args[3] = tk_arg_i32(4);
  args[1] = tk_arg_ptr(d + 4096);
  assert_int_equal(launch(k, 1, args, 4, NULL), IP_BAD_ARGS);
  assert_non_null(strstr(su_buf_str(&k->err), "argument 1 of 'vadd' ('y')"));
  kit_free(k);
}

/* out[pid] = a op b for scalars (op div or cdiv): -9 op 2 is -4 both ways, and the
 * division by zero is a located runtime error. */
static void division_by_zero(ir_opcode opc, const char *name) {
  kit *k = kit_new(name);
  ir_value *out = param(k, "out", P(k, TK_I32));
  ir_value *a = param(k, "a", S(k, TK_I32)), *b = param(k, "b", S(k, TK_I32));
  at_line(k, 2, 11);
  ir_value *q = ir_binary(&k->b, opc, a, b);
  store(k, out, q, NULL);
  ret(k);
  verify(k);
  int32_t r = 0;
  tk_devptr d = upload(k, &r, 4);
  tk_arg args[] = {tk_arg_ptr(d), tk_arg_i32(-9), tk_arg_i32(2)};
  assert_int_equal(launch(k, 1, args, 3, NULL), IP_OK);
  download(k, &r, d, 4);
  assert_int_equal(r, -4);
  args[2] = tk_arg_i32(0);
  assert_int_equal(launch(k, 3, args, 3, NULL), IP_FAULT);
  char want[128];
  snprintf(want, sizeof want,
           "t.tk:2:11: integer division by zero in kernel '%s' at program (0, 0, 0): "
           "the divisor is 0", name);
  assert_string_equal(su_buf_str(&k->err), want);
  kit_free(k);

  /* A tile: the typed loop finds the 0 and the scalar rule names its element. */
  k = kit_new("rem");
  ir_value *o = param(k, "o", P(k, TK_I32)), *z = param(k, "z", S(k, TK_I32));
  const ir_type *ti = T(k, S(k, TK_I32), 16, 0), *tp = T(k, P(k, TK_I32), 16, 0);
  ir_value *lanes = arange(k, 16);
  ir_value *divisor = ir_binary(&k->b, IR_SUB, lanes, splat(k, z, ti));
  at_line(k, 5, 3);
  ir_value *hundred = splat(k, ir_const_int(&k->b, S(k, TK_I32), 100), ti);
  ir_value *rem = ir_binary(&k->b, IR_REM, hundred, divisor);
  store(k, op2(k, IR_ADDPTR, tp, splat(k, o, tp), lanes), rem, NULL);
  ret(k);
  verify(k);
  int32_t rs[16] = {0};
  d = upload(k, rs, sizeof rs);
  tk_arg rargs[] = {tk_arg_ptr(d), tk_arg_i32(-1)};
  assert_int_equal(launch(k, 1, rargs, 2, NULL), IP_OK);
  download(k, rs, d, sizeof rs);
  for (int i = 0; i < 16; i++) assert_int_equal(rs[i], 100 % (i + 1));
  rargs[1] = tk_arg_i32(9);
  assert_int_equal(launch(k, 1, rargs, 2, NULL), IP_FAULT);
  assert_string_equal(su_buf_str(&k->err),
                      "t.tk:5:3: integer remainder by zero in kernel 'rem' at program (0, 0, 0): "
                      "element 9 of the divisor is 0");
  kit_free(k);
}

static void test_division_by_zero(void **state) {
  (void)state;
  division_by_zero(IR_DIV, "div");
  division_by_zero(IR_CDIV, "cdiv");
}

/* out[0] = sum over i in range(lb, ub, step) of i, with the sum loop-carried, and
 * out[1] = the same through an if that picks i or 0 (odd i only). */
static void test_for_and_if(void **state) {
  (void)state;
  kit *k = kit_new("loops");
  ir_value *out = param(k, "out", P(k, TK_I32));
  ir_value *lb = param(k, "lb", S(k, TK_I32)), *ub = param(k, "ub", S(k, TK_I32));
  ir_value *step = param(k, "step", S(k, TK_I32));
  const ir_type *i32 = S(k, TK_I32);
  ir_value *zero = ir_const_int(&k->b, i32, 0), *one = ir_const_int(&k->b, i32, 1);
  ir_value *inits[2] = {zero, zero};
  ir_op *loop = ir_build_for(&k->b, lb, ub, step, 2, inits);
  ir_block *body = loop->regions[0];
  ir_builder outer = k->b;
  k->b.block = body;
  ir_value *iv = body->args[0];
  ir_value *all = ir_binary(&k->b, IR_ADD, body->args[1], iv);
  ir_value *odd = ir_cmp_build(&k->b, IR_CMP_NE, ir_binary(&k->b, IR_AND, iv, one), zero);
  ir_op *branch = ir_build_if(&k->b, odd, 1, &i32);
  ir_builder inner = k->b;
  k->b.block = branch->regions[0];
  ir_build(&k->b, IR_YIELD, 1, &iv, 0, NULL);
  k->b.block = branch->regions[1];
  ir_build(&k->b, IR_YIELD, 1, &zero, 0, NULL);
  k->b = inner;
  ir_value *odds = ir_binary(&k->b, IR_ADD, body->args[2], branch->results[0]);
  ir_value *ys[2] = {all, odds};
  ir_build(&k->b, IR_YIELD, 2, ys, 0, NULL);
  k->b = outer;
  store(k, out, loop->results[0], NULL);
  store(k, op2(k, IR_ADDPTR, P(k, TK_I32), out, one), loop->results[1], NULL);
  ret(k);
  verify(k);

  struct { int lb, ub, step, sum, odds; } cases[] = {
      {0, 10, 1, 45, 25}, {0, 10, 3, 18, 12}, {10, 0, -2, 30, 0}, {5, 5, 1, 0, 0}, {-3, 4, 1, 0, 0},
  };
  int32_t r[2] = {0};
  tk_devptr d = upload(k, r, sizeof r);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    tk_arg args[] = {tk_arg_ptr(d), tk_arg_i32(cases[c].lb), tk_arg_i32(cases[c].ub),
                     tk_arg_i32(cases[c].step)};
    assert_int_equal(launch(k, 1, args, 4, NULL), IP_OK);
    download(k, r, d, sizeof r);
    assert_int_equal(r[0], cases[c].sum);
    assert_int_equal(r[1], cases[c].odds);
  }
  tk_arg args[] = {tk_arg_ptr(d), tk_arg_i32(0), tk_arg_i32(1), tk_arg_i32(0)};
  assert_int_equal(launch(k, 1, args, 4, NULL), IP_FAULT);
  assert_non_null(strstr(su_buf_str(&k->err), "zero loop step in kernel 'loops'"));
  kit_free(k);
}

/* Loads a 4x8 tile x (row-major) and stores: sum over axis 1 (4), max over axis 0 (8),
 * argmin over axis 1 (4), cumsum over axis 1 (32) and the transpose (32). */
static void test_reductions_and_shapes(void **state) {
  (void)state;
  kit *k = kit_new("red");
  ir_value *x = param(k, "x", P(k, TK_F32)), *o = param(k, "o", P(k, TK_F32));
  ir_value *oi = param(k, "oi", P(k, TK_I32));
  const ir_type *f32 = S(k, TK_F32), *i32 = S(k, TK_I32);
  const ir_type *t48 = T(k, i32, 4, 8), *t41 = T(k, i32, 4, 1), *t18 = T(k, i32, 1, 8);
  /* offs[r][c] = r * 8 + c, built by expand_dims + broadcast. */
  ir_value *rows = op2(k, IR_MUL, T(k, i32, 4, 0), arange(k, 4), splat(k, ir_const_int(&k->b, i32, 8), T(k, i32, 4, 0)));
  ir_value *re = op1(k, IR_EXPAND_DIMS, t41, rows);
  re->def->attr2 = 1;
  ir_value *ce = op1(k, IR_EXPAND_DIMS, t18, arange(k, 8));
  ce->def->attr2 = 0;
  ir_value *offs = ir_binary(&k->b, IR_ADD, op1(k, IR_BROADCAST, t48, re), op1(k, IR_BROADCAST, t48, ce));
  const ir_type *tp = T(k, P(k, TK_F32), 4, 8);
  ir_value *v = load(k, op2(k, IR_ADDPTR, tp, splat(k, x, tp), offs), NULL, NULL);

  ir_value *s = op1(k, IR_REDUCE, T(k, f32, 4, 0), v);
  s->def->attr = IR_RED_SUM, s->def->attr2 = 1;
  ir_value *mx = op1(k, IR_REDUCE, T(k, f32, 8, 0), v);
  mx->def->attr = IR_RED_MAX, mx->def->attr2 = 0;
  ir_value *am = op1(k, IR_ARGREDUCE, T(k, i32, 4, 0), v);
  am->def->attr = IR_RED_MIN, am->def->attr2 = 1;
  ir_value *cs = op1(k, IR_SCAN, T(k, f32, 4, 8), v);
  cs->def->attr = IR_RED_SUM, cs->def->attr2 = 1;
  ir_value *tr = op1(k, IR_TRANS, T(k, f32, 8, 4), v);
  static const int swap[2] = {1, 0};
  tr->def->ints = swap, tr->def->nints = 2;
  ir_value *flat_cs = op1(k, IR_RESHAPE, T(k, f32, 32, 0), cs);
  ir_value *flat_tr = op1(k, IR_RESHAPE, T(k, f32, 32, 0), tr);
  ir_value *all = op1(k, IR_REDUCE, f32, op1(k, IR_RESHAPE, T(k, f32, 32, 0), v));
  all->def->attr = IR_RED_SUM, all->def->attr2 = 0;

  /* o = [sum(4) | max(8) | cumsum(32) | trans(32) | total(1)], oi = argmin(4) */
  int at = 0;
  ir_value *parts[] = {s, mx, flat_cs, flat_tr};
  for (int p = 0; p < 4; p++) {
    const ir_type *pt = T(k, P(k, TK_F32), parts[p]->type->shape[0], 0);
    ir_value *base = op2(k, IR_ADDPTR, P(k, TK_F32), o, ir_const_int(&k->b, i32, at));
    store(k, op2(k, IR_ADDPTR, pt, splat(k, base, pt), arange(k, parts[p]->type->shape[0])), parts[p], NULL);
    at += parts[p]->type->shape[0];
  }
  store(k, op2(k, IR_ADDPTR, P(k, TK_F32), o, ir_const_int(&k->b, i32, at)), all, NULL);
  const ir_type *pi = T(k, P(k, TK_I32), 4, 0);
  store(k, op2(k, IR_ADDPTR, pi, splat(k, oi, pi), arange(k, 4)), am, NULL);
  ret(k);
  verify(k);

  float xs[32], res[77];
  int32_t idx[4] = {0};
  for (int i = 0; i < 32; i++) xs[i] = (float)((i * 7) % 11) - 5.0f;
  tk_devptr dx = upload(k, xs, sizeof xs), dout = upload(k, res, sizeof res), di = upload(k, idx, sizeof idx);
  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dout), tk_arg_ptr(di)};
  assert_int_equal(launch(k, 1, args, 3, NULL), IP_OK);
  download(k, res, dout, sizeof res);
  download(k, idx, di, sizeof idx);
  float total = 0;
  for (int r = 0; r < 4; r++) {
    float sum = 0, run = 0;
    int best = 0;
    for (int c = 0; c < 8; c++) {
      sum += xs[r * 8 + c];
      run += xs[r * 8 + c];
      if (xs[r * 8 + c] < xs[r * 8 + best]) best = c;
      assert_true(res[12 + r * 8 + c] == run);
      assert_true(res[44 + c * 4 + r] == xs[r * 8 + c]);
    }
    total += sum;
    assert_true(res[r] == sum);
    assert_int_equal(idx[r], best);
  }
  for (int c = 0; c < 8; c++) {
    float m = xs[c];
    for (int r = 1; r < 4; r++) m = fmaxf(m, xs[r * 8 + c]);
    assert_true(res[4 + c] == m);
  }
  assert_true(res[76] == total);
  kit_free(k);
}

/* c = a @ b + acc for 16x16 f16 inputs with an f32 accumulator, stored as f32. */
static void test_dot(void **state) {
  (void)state;
  kit *k = kit_new("mm");
  ir_value *pa = param(k, "a", P(k, TK_F16)), *pb = param(k, "b", P(k, TK_F16));
  ir_value *pc = param(k, "c", P(k, TK_F32));
  const ir_type *i32 = S(k, TK_I32), *t = T(k, i32, 16, 16);
  ir_value *r = op1(k, IR_EXPAND_DIMS, T(k, i32, 16, 1),
                    op2(k, IR_MUL, T(k, i32, 16, 0), arange(k, 16), splat(k, ir_const_int(&k->b, i32, 16), T(k, i32, 16, 0))));
  r->def->attr2 = 1;
  ir_value *c = op1(k, IR_EXPAND_DIMS, T(k, i32, 1, 16), arange(k, 16));
  c->def->attr2 = 0;
  ir_value *offs = ir_binary(&k->b, IR_ADD, op1(k, IR_BROADCAST, t, r), op1(k, IR_BROADCAST, t, c));
  const ir_type *th = T(k, P(k, TK_F16), 16, 16), *tf = T(k, P(k, TK_F32), 16, 16);
  ir_value *a = load(k, op2(k, IR_ADDPTR, th, splat(k, pa, th), offs), NULL, NULL);
  ir_value *b = load(k, op2(k, IR_ADDPTR, th, splat(k, pb, th), offs), NULL, NULL);
  ir_value *acc = ir_const_float(&k->b, T(k, S(k, TK_F32), 16, 16), 0.5);
  ir_value *ops[3] = {a, b, acc};
  ir_value *d = ir_build1(&k->b, IR_DOT, acc->type, 3, ops);
  store(k, op2(k, IR_ADDPTR, tf, splat(k, pc, tf), offs), d, NULL);
  ret(k);
  verify(k);

  uint16_t ha[256], hb[256];
  float fa[256], fb[256], out[256];
  for (int i = 0; i < 256; i++) {
    fa[i] = (float)((i * 37) % 17 - 8) / 4.0f; /* exact in f16 */
    fb[i] = (float)((i * 11) % 13 - 6) / 8.0f;
    ip_encode(TK_F16, F(fa[i]), &ha[i]);
    ip_encode(TK_F16, F(fb[i]), &hb[i]);
  }
  tk_devptr da = upload(k, ha, sizeof ha), db = upload(k, hb, sizeof hb), dc = upload(k, out, sizeof out);
  tk_arg args[] = {tk_arg_ptr(da), tk_arg_ptr(db), tk_arg_ptr(dc)};
  assert_int_equal(launch(k, 1, args, 3, NULL), IP_OK);
  download(k, out, dc, sizeof out);
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      float s = 0.5f;
      for (int kk = 0; kk < 16; kk++) s += fa[m * 16 + kk] * fb[kk * 16 + n];
      assert_true(out[m * 16 + n] == s);
    }
  kit_free(k);
}

/* Every program adds its id to counter[0] and CASes counter[1] from 0 to 7; the masked
 * off lanes of a tile atomic must not count. */
static void test_atomics(void **state) {
  (void)state;
  kit *k = kit_new("atom");
  ir_value *ctr = param(k, "ctr", P(k, TK_I32));
  const ir_type *i32 = S(k, TK_I32), *t4 = T(k, i32, 4, 0), *p4 = T(k, P(k, TK_I32), 4, 0);
  ir_value *pid = ir_build1(&k->b, IR_PROGRAM_ID, i32, 0, NULL);
  ir_value *av[2] = {ctr, pid};
  ir_value *old = ir_build1(&k->b, IR_ATOMIC, i32, 2, av);
  old->def->attr = IR_ATOM_ADD;
  ir_value *one = ir_const_int(&k->b, i32, 1);
  ir_value *c1 = op2(k, IR_ADDPTR, P(k, TK_I32), ctr, one);
  ir_value *cv[3] = {c1, ir_const_int(&k->b, i32, 0), ir_const_int(&k->b, i32, 7)};
  ir_build1(&k->b, IR_ATOMIC_CAS, i32, 3, cv);
  /* counter[2 + j] += 1 for j < 2 of a 4-lane tile: lanes 2, 3 masked off (they would be
   * out of bounds). */
  ir_value *lanes = arange(k, 4);
  ir_value *base = op2(k, IR_ADDPTR, P(k, TK_I32), ctr, ir_const_int(&k->b, i32, 2));
  ir_value *ptrs = op2(k, IR_ADDPTR, p4, splat(k, base, p4), lanes);
  ir_value *mask = ir_cmp_build(&k->b, IR_CMP_LT, lanes, splat(k, ir_const_int(&k->b, i32, 2), t4));
  ir_value *tv[3] = {ptrs, ir_const_int(&k->b, t4, 1), mask};
  ir_value *told = ir_build1(&k->b, IR_ATOMIC, t4, 3, tv);
  told->def->attr = IR_ATOM_ADD;
  (void)old;
  ret(k);
  verify(k);
  int32_t c[4] = {0, 0, 0, 0};
  tk_devptr d = upload(k, c, sizeof c);
  tk_arg args[] = {tk_arg_ptr(d)};
  assert_int_equal(launch(k, 100, args, 1, NULL), IP_OK);
  download(k, c, d, sizeof c);
  assert_int_equal(c[0], 4950);
  assert_int_equal(c[1], 7);
  assert_int_equal(c[2], 100);
  assert_int_equal(c[3], 100);
  kit_free(k);
}

/* Each program takes a ticket from workspace[0] (stored to tickets[pid]); the last one
 * (ticket programs - 1) writes the count to out[0] and resets the counter, as a kernel
 * must leave its workspace. The same body persistent, for its launched programs. */
#define WS_BODY                                                                          \
  "  %1 = workspace {per_program = 64} : ptr<i32>\n"                                  \
  "  %2 = const 1 : i32\n"                                                              \
  "  %3 = atomic add %1, %2 : i32\n"                                                    \
  "  %4 = program_id {axis = 0} : i32\n"                                                \
  "  %5 = addptr %t, %4 : ptr<i32>\n"                                                   \
  "  store %5, %3\n"                                                                    \
  "  %6 = num_programs {axis = 0} : i32\n"                                              \
  "  %7 = sub %6, %2 : i32\n"                                                           \
  "  %8 = cmp eq %3, %7 : i1\n"                                                         \
  "  if %8 {\n"                                                                         \
  "    %9 = add %3, %2 : i32\n"                                                         \
  "    store %o, %9\n"                                                                  \
  "    %10 = const 0 : i32\n"                                                           \
  "    store %1, %10\n"                                                                 \
  "    yield\n"                                                                         \
  "  } else {\n"                                                                        \
  "    yield\n"                                                                         \
  "  }\n"                                                                               \
  "  return\n"                                                                          \
  "}\n"
static const char WORKSPACE_IR[] =
    "module \"ws.tk\"\n"
    "kernel @count(%o: ptr<i32>, %t: ptr<i32>) warps(4) stages(1) {\n" WS_BODY
    "kernel @pcount(%o: ptr<i32>, %t: ptr<i32>) warps(4) stages(1) persistent {\n" WS_BODY;
#undef WS_BODY

/* A kit whose module is parsed from IR text; f: its kernel `name`. */
static kit *kit_parse(const char *text, const char *name) {
  kit *k = calloc(1, sizeof *k);
  k->a = su_arena_new();
  su_diags d;
  su_diags_init(&d, k->a, stderr);
  k->m = ir_parse(k->a, su_source_new(k->a, "ws.tkir", text, strlen(text)), &d);
  assert_non_null(k->m);
  assert_true(ir_verify(k->m, &d));
  for (int i = 0; i < k->m->nfuncs; i++)
    if (!strcmp(k->m->funcs[i]->name, name)) k->f = k->m->funcs[i];
  assert_non_null(k->f);
  k->mem = ip_memory_new();
  return k;
}

/* Launches k on gx programs, tickets[] and out[0] set to -1 first; returns out[0]. */
static int32_t count_launch(kit *k, unsigned gx, tk_devptr out, tk_devptr tickets, int32_t *t) {
  int32_t none[16];
  for (int i = 0; i < 16; i++) none[i] = -1;
  memcpy(ip_mem_host(k->mem, out, 4, &k->err), none, 4);
  memcpy(ip_mem_host(k->mem, tickets, sizeof none, &k->err), none, sizeof none);
  tk_arg args[] = {tk_arg_ptr(out), tk_arg_ptr(tickets)};
  if (launch(k, gx, args, 2, NULL) != IP_OK) fail_msg("%s", su_buf_str(&k->err));
  download(k, t, tickets, sizeof none);
  int32_t n;
  download(k, &n, out, 4);
  return n;
}

/* The workspace buffer of k's memory: its id, bytes and counter (workspace[0]). */
static int32_t *workspace_of(kit *k, uint32_t *id, uint64_t *bytes) {
  uint8_t *data;
  assert_true(ip_mem_workspace(k->mem, 1, k->f->uid, id, &k->err)); /* there is one: no new one */
  assert_true(ip_mem_buffer(k->mem, *id, &data, bytes));
  return (int32_t *)data;
}

/* The workspace is zero when first made, kept from launch to launch of one kernel on the
 * same memory (what a launch leaves there the next one sees), zeroed when another kernel
 * used it last, sized by the programs launched, and replaced by a zeroed larger one when
 * a launch needs more. */
static void test_workspace(void **state) {
  (void)state;
  kit *k = kit_parse(WORKSPACE_IR, "count");
  int32_t zeros[16] = {0}, t[16];
  tk_devptr out = upload(k, zeros, 4), tickets = upload(k, zeros, sizeof zeros);
  assert_int_equal(count_launch(k, 4, out, tickets, t), 4); /* zero at first */
  for (int i = 0; i < 4; i++) assert_int_equal(t[i], i);
  uint32_t id, again;
  uint64_t bytes;
  int32_t *ws = workspace_of(k, &id, &bytes);
  assert_int_equal(bytes, 4 * 64);
  assert_int_equal(ws[0], 0); /* reset by the last program */
  assert_int_equal(count_launch(k, 4, out, tickets, t), 4);
  /* a counter left behind is what the next launch starts from: the same buffer, kept */
  ws = workspace_of(k, &again, &bytes);
  assert_int_equal(again, id);
  ws[0] = 7;
  assert_int_equal(count_launch(k, 3, out, tickets, t), -1); /* no ticket 2: no count */
  for (int i = 0; i < 3; i++) assert_int_equal(t[i], 7 + i);
  assert_int_equal(workspace_of(k, &again, &bytes)[0], 10);
  assert_int_equal(again, id);
  /* another kernel finds it zeroed (what count left may be where it keeps its counters),
   * in the same buffer, and so does count after it */
  ir_func *count = k->f;
  for (int i = 0; i < k->m->nfuncs; i++)
    if (!strcmp(k->m->funcs[i]->name, "pcount")) k->f = k->m->funcs[i];
  assert_ptr_not_equal(k->f, count);
  assert_int_equal(count_launch(k, 3, out, tickets, t), 3);
  for (int i = 0; i < 3; i++) assert_int_equal(t[i], i);
  workspace_of(k, &again, &bytes)[0] = 5;
  assert_int_equal(again, id);
  k->f = count;
  assert_int_equal(count_launch(k, 4, out, tickets, t), 4);
  for (int i = 0; i < 4; i++) assert_int_equal(t[i], i);
  workspace_of(k, &again, &bytes)[0] = 10;
  assert_int_equal(again, id);
  /* 8 programs need 512 bytes: a new buffer, zero whatever the old one held */
  assert_int_equal(count_launch(k, 8, out, tickets, t), 8);
  for (int i = 0; i < 8; i++) assert_int_equal(t[i], i);
  workspace_of(k, &again, &bytes);
  assert_true(again != id);
  assert_int_equal(bytes, 8 * 64);
  kit_free(k);

  /* persistent: per program launched (min(programs, TK_INTERPRET_SMS)), not per program
   * of the grid asked for */
  k = kit_parse(WORKSPACE_IR, "pcount");
  out = upload(k, zeros, 4), tickets = upload(k, zeros, sizeof zeros);
  setenv("TK_INTERPRET_SMS", "3", 1);
  assert_int_equal(count_launch(k, 100, out, tickets, t), 3);
  unsetenv("TK_INTERPRET_SMS");
  for (int i = 0; i < 3; i++) assert_int_equal(t[i], i);
  workspace_of(k, &id, &bytes);
  assert_int_equal(bytes, 3 * 64);
  kit_free(k);
}

/* A launch whose scratch or workspace cannot be had (2^20 programs of 2^36 bytes each:
 * past any address space) fails with the kernel, the size and which memory, runs no
 * program and leaves nothing allocated behind. */
static void test_buffers_too_large(void **state) {
  (void)state;
  static const char *const kinds[] = {"scratch {offset = 0, per_program = 68719476736}", "workspace {per_program = 68719476736}"};
  static const char *const names[] = {"scratch", "workspace"};
  for (int i = 0; i < 2; i++) {
    char text[512];
    snprintf(text, sizeof text,
             "module \"big.tk\"\n"
             "kernel @big(%%o: ptr<i32>) warps(4) stages(1) {\n"
             "  %%1 = %s : ptr<i32>\n"
             "  %%2 = const 1 : i32\n"
             "  store %%1, %%2\n"
             "  store %%o, %%2\n"
             "  return\n"
             "}\n",
             kinds[i]);
    kit *k = kit_parse(text, "big");
    int32_t zero = 0;
    tk_devptr out = upload(k, &zero, 4);
    tk_arg args[] = {tk_arg_ptr(out)};
    assert_int_equal(launch(k, 1u << 20, args, 1, NULL), IP_FAULT);
    char want[160];
    snprintf(want, sizeof want, "kernel 'big': cannot allocate 1048576 x 68719476736 bytes of %s memory", names[i]);
    if (strncmp(su_buf_str(&k->err), want, strlen(want))) fail_msg("error: %s", su_buf_str(&k->err));
    download(k, &zero, out, 4);
    assert_int_equal(zero, 0); /* no program ran */
    kit_free(k);
  }
}

/* device_print writes one line per program; device_assert stops at the first failure. */
static void test_print_and_assert(void **state) {
  (void)state;
  kit *k = kit_new("dbg");
  ir_value *lim = param(k, "lim", S(k, TK_I32));
  const ir_type *i32 = S(k, TK_I32);
  ir_value *pid = ir_build1(&k->b, IR_PROGRAM_ID, i32, 0, NULL);
  ir_value *pv[2] = {pid, arange(k, 2)};
  ir_op *pr = ir_build(&k->b, IR_PRINT, 2, pv, 0, NULL);
  pr->str = "x:";
  at_line(k, 9, 3);
  ir_value *ok = ir_cmp_build(&k->b, IR_CMP_LT, pid, lim);
  ir_op *as = ir_build(&k->b, IR_ASSERT, 1, &ok, 0, NULL);
  as->str = "pid below the limit";
  ret(k);
  verify(k);
  FILE *out = tmpfile();
  assert_non_null(out);
  tk_arg args[] = {tk_arg_i32(2)};
  assert_int_equal(launch(k, 3, args, 1, out), IP_FAULT);
  assert_string_equal(su_buf_str(&k->err),
                      "t.tk:9:3: device_assert failed in kernel 'dbg' at program (2, 0, 0): "
                      "pid below the limit");
  char text[256] = {0};
  rewind(out);
  size_t got = fread(text, 1, sizeof text - 1, out);
  fclose(out);
  assert_true(got > 0);
  assert_string_equal(text, "pid (0, 0, 0) x: 0 [0, 1]\npid (1, 0, 0) x: 1 [0, 1]\n"
                            "pid (2, 0, 0) x: 2 [0, 1]\n");
  kit_free(k);
}

/* f16 arithmetic rounds every op: storing x + 1 for x = 2048 writes 2048 back. */
static void test_f16_kernel(void **state) {
  (void)state;
  kit *k = kit_new("h");
  ir_value *p = param(k, "p", P(k, TK_F16));
  ir_value *v = load(k, p, NULL, NULL);
  ir_value *w = ir_binary(&k->b, IR_ADD, v, ir_const_float(&k->b, S(k, TK_F16), 1.0));
  store(k, p, w, NULL);
  ret(k);
  verify(k);
  uint16_t h;
  ip_encode(TK_F16, F(2048), &h);
  tk_devptr d = upload(k, &h, 2);
  tk_arg args[] = {tk_arg_ptr(d)};
  /* Five programs adding to one element race unless they run in order, on one thread. */
  setenv("TK_INTERPRET_THREADS", "1", 1);
  assert_int_equal(launch(k, 5, args, 1, NULL), IP_OK);
  download(k, &h, d, 2);
  assert_true(ip_decode(TK_F16, &h).f == 2048);
  ip_encode(TK_F16, F(1), &h);
  memcpy(ip_mem_host(k->mem, d, 2, &k->err), &h, 2);
  assert_int_equal(launch(k, 5, args, 1, NULL), IP_OK);
  unsetenv("TK_INTERPRET_THREADS");
  download(k, &h, d, 2);
  assert_true(ip_decode(TK_F16, &h).f == 6);
  kit_free(k);
}

/* ---- typed loops against the scalar rules -------------------------------------------- */

enum { NE = 64 };

static const tk_dtype all_dtypes[] = {TK_I1, TK_I8, TK_I16, TK_I32, TK_I64, TK_U8, TK_U16,
                                      TK_U32, TK_U64, TK_F16, TK_BF16, TK_F32, TK_F64};
enum { NDTYPES = sizeof all_dtypes / sizeof *all_dtypes };

static uint64_t next_random(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  return *s = x;
}

/* n values of dt in memory format: a third random bits, a third the edges (signed zeros,
 * infinities, NaNs, subnormals, rounding ties, integer limits, shift counts at the
 * width), a third small integers. */
static void edge_values(tk_dtype dt, uint8_t *out, int n, uint64_t *rng) {
  static const double fl[] = {0.0,   -0.0,     1,        -1,        0.5,     -1.5,  2.5,
                              3,     1e-8,     -1e30,    65504,     65520,   0x1p-24, 0x1p-25,
                              0x1p-149, 0x1p-133, 16777217, INFINITY, -INFINITY, NAN, 1e300,
                              0.1,   2049,     -2.5e-5};
  static const int64_t in[] = {0, 1, -1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, -64, INT64_MAX,
                               INT64_MIN, 0x7fffffff, -0x80000000ll, 255, 0x8000, 0xffffffffll};
  int size = ir_dtype_bytes(dt);
  bool fl_type = ir_dtype_is_float(dt);
  for (int i = 0; i < n; i++) {
    uint64_t x = next_random(rng), pick = (x >> 8) % 64;
    ip_elem v = {.u = 0};
    switch (x % 3) {
    case 0:
      if (dt == TK_I1) x &= 1;
      memcpy(out + i * size, &x, (size_t)size);
      continue;
    case 1:
      if (fl_type) v.f = ip_round(dt, fl[pick % (sizeof fl / sizeof *fl)] * (x & 128 ? -1 : 1));
      else v = ip_int(dt, (uint64_t)in[pick % (sizeof in / sizeof *in)]);
      break;
    default:
      if (fl_type) v.f = (double)((int)(pick % 9) - 4);
      else v = ip_int(dt, (uint64_t)((int64_t)(pick % 9) - 4));
    }
    ip_encode(dt, v, out + i * size);
  }
}

/* Runs op directly (one inst over slots 0..noperands-1, result in the next) on tiles of
 * edge values, with the typed loops on and off, and checks that every result element has
 * the same bits: the values themselves, before any store could round them. */
static void check_op_typed(kit *k, const ir_op *op, uint64_t seed, const char *what) {
  ip_exec x = {.m = k->m, .f = k->f, .scratch = ip_scratch_new(), .err = &k->err};
  ip_val slots[4];
  int in[3] = {0, 1, 2}, out[1] = {op->noperands};
  ip_inst inst = {.op = op, .in = in, .out = out};
  x.slots = slots;
  for (int i = 0; i < op->noperands; i++) {
    const ir_type *t = op->operands[i]->type;
    tk_dtype dt = ip_elem_dtype(t);
    slots[i] = ip_val_new(&x, t);
    for (int64_t j = 0; j < slots[i].n; j++) {
      if (dt == TK_PTR) { /* in bounds or not: addptr does not check */
        slots[i].e[j].buf = 1 + (uint32_t)(next_random(&seed) % 3);
        slots[i].e[j].i = (int64_t)(next_random(&seed) % 4096) - 64;
        continue;
      }
      uint8_t bytes[8];
      edge_values(dt, bytes, 1, &seed);
      slots[i].e[j] = ip_decode(dt, bytes);
      /* Integer divisors are not 0 here (test_division_by_zero has those). */
      if (i == 1 && (op->opc == IR_DIV || op->opc == IR_REM) && !ir_dtype_is_float(dt) &&
          slots[i].e[j].u == 0)
        slots[i].e[j] = ip_int(dt, 1);
    }
  }
  ip_val got[2];
  for (int typed = 0; typed < 2; typed++) {
    ip_typed_loops = typed;
    bool ok = ir_op_info(op->opc)->traits & IR_ELEM ? ip_run_elementwise(&x, &inst)
                                                    : ip_run_reduce(&x, &inst);
    ip_typed_loops = true;
    if (!ok) fail_msg("%s: %s", what, su_buf_str(&k->err));
    got[typed] = slots[op->noperands];
  }
  /* A NaN's sign and payload are whatever the machine's operand order gives (C does not
   * say which NaN a + b returns when both are NaN): any NaN is the same NaN. */
  tk_dtype rdt = ip_elem_dtype(got[0].type);
  bool ptr = rdt == TK_PTR, fl = rdt != TK_PTR && ir_dtype_is_float(rdt);
  for (int64_t j = 0; j < got[0].n; j++)
    if (fl && isnan(got[0].e[j].f) && isnan(got[1].e[j].f)) continue;
    else if (got[0].e[j].u != got[1].e[j].u || (ptr && got[0].e[j].buf != got[1].e[j].buf))
      fail_msg("%s: element %lld is 0x%llx by the scalar rule, 0x%llx by the typed loop", what,
               (long long)j, (unsigned long long)got[0].e[j].u, (unsigned long long)got[1].e[j].u);
  ip_scratch_free(x.scratch);
}

/* opc on NE-element tiles: a of type ta, b and c of type tb, the result of type rt. */
static void check_elementwise(ir_opcode opc, int64_t attr, tk_dtype ta, tk_dtype tb, tk_dtype rt,
                              int nops) {
  char what[96];
  snprintf(what, sizeof what, "%s %s %s -> %s", ir_op_info(opc)->name, ir_dtype_name(ta),
           ir_dtype_name(tb), ir_dtype_name(rt));
  kit *k = kit_new("ew");
  ir_value *vals[3];
  const ir_type *res = rt == TK_PTR ? T(k, P(k, TK_F32), NE, 0) : T(k, S(k, rt), NE, 0);
  for (int i = 0; i < nops; i++)
    vals[i] = param(k, "x", i == 0 && ta == TK_PTR ? res : T(k, S(k, i ? tb : ta), NE, 0));
  ir_value *r = ir_build1(&k->b, opc, res, nops, vals);
  r->def->attr = attr;
  for (uint64_t seed = 1; seed <= 8; seed++)
    check_op_typed(k, r->def, seed * 0x9e3779b97f4a7c15ull, what);
  kit_free(k);
}

static void test_typed_elementwise(void **state) {
  (void)state;
  static const ir_opcode int_ops[] = {IR_ADD, IR_SUB, IR_MUL, IR_DIV, IR_REM, IR_AND,
                                      IR_OR,  IR_XOR, IR_SHL, IR_SHR, IR_MIN, IR_MAX};
  static const ir_opcode float_ops[] = {IR_ADD, IR_SUB, IR_MUL, IR_DIV, IR_REM, IR_MIN, IR_MAX};
  for (int d = 0; d < NDTYPES; d++) {
    tk_dtype dt = all_dtypes[d];
    if (ir_dtype_is_float(dt)) {
      for (size_t o = 0; o < sizeof float_ops / sizeof *float_ops; o++)
        check_elementwise(float_ops[o], 0, dt, dt, dt, 2);
      check_elementwise(IR_FMA, 0, dt, dt, dt, 3);
    } else {
      for (size_t o = 0; o < sizeof int_ops / sizeof *int_ops; o++)
        if (dt != TK_I1 || int_ops[o] == IR_AND || int_ops[o] == IR_OR || int_ops[o] == IR_XOR)
          check_elementwise(int_ops[o], 0, dt, dt, dt, 2);
    }
    for (int pred = IR_CMP_EQ; pred <= IR_CMP_GE; pred++)
      check_elementwise(IR_CMP, pred, dt, dt, TK_I1, 2);
    check_elementwise(IR_SELECT, 0, TK_I1, dt, dt, 3);
    for (int to = 0; to < NDTYPES; to++) check_elementwise(IR_CAST, 0, dt, dt, all_dtypes[to], 1);
    if (!ir_dtype_is_float(dt) && dt != TK_I1)
      check_elementwise(IR_ADDPTR, 0, TK_PTR, dt, TK_PTR, 2);
  }
}

/* dot against the scalar rule: shapes with and without the blocked loop's remainders, a
 * batch, every accumulator type with a blocked loop and one without (f16). */
static void test_typed_dot(void **state) {
  (void)state;
  static const int shapes[][4] = {{1, 16, 16, 16}, {1, 5, 11, 7}, {1, 8, 24, 3}, {2, 4, 9, 8},
                                  {1, 64, 32, 64}};
  static const tk_dtype kinds[][2] = {{TK_F16, TK_F32}, {TK_BF16, TK_F32}, {TK_F32, TK_F32},
                                      {TK_I8, TK_I32},  {TK_F64, TK_F64},  {TK_U8, TK_U32},
                                      {TK_I32, TK_I64}, {TK_F16, TK_F16}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
    for (size_t kd = 0; kd < sizeof kinds / sizeof *kinds; kd++) {
      const int *d = shapes[sh];
      int batched = d[0] > 1, rank = 2 + batched;
      int sa[3] = {d[0], d[1], d[3]}, sb[3] = {d[0], d[3], d[2]}, sc[3] = {d[0], d[1], d[2]};
      kit *k = kit_new("dot");
      const ir_type *in = S(k, kinds[kd][0]), *out = S(k, kinds[kd][1]);
      ir_value *ops[3] = {param(k, "a", ir_type_tile(k->m, in, rank, sa + !batched)),
                          param(k, "b", ir_type_tile(k->m, in, rank, sb + !batched)),
                          param(k, "acc", ir_type_tile(k->m, out, rank, sc + !batched))};
      ir_value *r = ir_build1(&k->b, IR_DOT, ops[2]->type, 3, ops);
      char what[96];
      snprintf(what, sizeof what, "dot %dx%dx%dx%d %s -> %s", d[0], d[1], d[2], d[3],
               ir_dtype_name(kinds[kd][0]), ir_dtype_name(kinds[kd][1]));
      for (uint64_t seed = 1; seed <= 3; seed++)
        check_op_typed(k, r->def, seed * 0x2545f4914f6cdd1dull, what);
      kit_free(k);
    }
}

/* trans and broadcast of 3-D tiles, run directly, against index arithmetic: element
 * (i0, i1, i2) of the result is source element sum(i_d * stride_d). */
static void check_gather(ir_opcode opc, const int *sshape, int srank, const int *rshape,
                         const int *perm) {
  kit *k = kit_new("g");
  const ir_type *f32 = S(k, TK_F32);
  ir_value *x = param(k, "x", ir_type_tile(k->m, f32, srank, sshape));
  ir_value *r = op1(k, opc, ir_type_tile(k->m, f32, 3, rshape), x);
  if (perm) r->def->ints = perm, r->def->nints = 3;
  ip_exec ex = {.m = k->m, .f = k->f, .scratch = ip_scratch_new(), .err = &k->err};
  ip_val slots[2];
  int in[1] = {0}, out[1] = {1};
  ip_inst inst = {.op = r->def, .in = in, .out = out};
  ex.slots = slots;
  slots[0] = ip_val_new(&ex, x->type);
  for (int64_t i = 0; i < slots[0].n; i++) slots[0].e[i].f = (double)i;
  assert_true(ip_run_shape(&ex, &inst));
  int64_t sst[3] = {0}, st[3] = {0}, acc = 1;
  for (int d = srank - 1; d >= 0; d--) sst[d] = acc, acc *= sshape[d];
  for (int d = 0; d < 3; d++) {
    if (perm) st[d] = sst[perm[d]];
    else if (d - (3 - srank) >= 0 && sshape[d - (3 - srank)] != 1) st[d] = sst[d - (3 - srank)];
  }
  int64_t i = 0;
  for (int a = 0; a < rshape[0]; a++)
    for (int b = 0; b < rshape[1]; b++)
      for (int c = 0; c < rshape[2]; c++, i++)
        assert_true(slots[1].e[i].f == (double)(a * st[0] + b * st[1] + c * st[2]));
  ip_scratch_free(ex.scratch);
  kit_free(k);
}

static void test_gather(void **state) {
  (void)state;
  static const int s234[3] = {2, 3, 4}, s423[3] = {4, 2, 3}, s342[3] = {3, 4, 2};
  static const int p201[3] = {2, 0, 1}, p120[3] = {1, 2, 0}, p021[3] = {0, 2, 1};
  static const int s14[2] = {1, 4}, s31[2] = {3, 1}, s4[1] = {4};
  static const int s131[3] = {1, 3, 1}, s243[3] = {2, 4, 3};
  check_gather(IR_TRANS, s234, 3, s423, p201);
  check_gather(IR_TRANS, s234, 3, s342, p120);
  check_gather(IR_TRANS, s234, 3, s243, p021);
  check_gather(IR_BROADCAST, s14, 2, s234, NULL);
  check_gather(IR_BROADCAST, s31, 2, s234, NULL);
  check_gather(IR_BROADCAST, s4, 1, s234, NULL);
  check_gather(IR_BROADCAST, s131, 3, s234, NULL);
}

/* Reductions and scans of every kind along every axis of a 3-D tile, and of a 1-D tile
 * to a scalar, for each input type and its usual result types, against the scalar rule. */
static void test_typed_reduce(void **state) {
  (void)state;
  static const int shape[3] = {4, 8, 16};
  for (int d = 0; d < NDTYPES; d++) {
    tk_dtype in = all_dtypes[d];
    tk_dtype outs[2] = {in, ir_dtype_is_float(in) ? TK_F32 : TK_I32};
    for (int o = 0; o < 2; o++)
      for (int opc = 0; opc < 2; opc++)
        for (int kind = IR_RED_SUM; kind <= IR_RED_MIN; kind++)
          for (int axis = -1; axis < 3; axis++) {
            if (opc == 1 && (axis < 0 || outs[o] != in)) continue; /* scans keep the type */
            kit *k = kit_new("red");
            const ir_type *ti =
                axis < 0 ? T(k, S(k, in), NE, 0) : ir_type_tile(k->m, S(k, in), 3, shape);
            int rshape[2], rr = 0;
            for (int a = 0; a < 3 && axis >= 0; a++)
              if (a != axis) rshape[rr++] = shape[a];
            const ir_type *tr = opc == 1 ? ti
                                : axis < 0 ? S(k, outs[o])
                                           : ir_type_tile(k->m, S(k, outs[o]), 2, rshape);
            ir_value *x = param(k, "x", ti);
            ir_value *r = op1(k, opc ? IR_SCAN : IR_REDUCE, tr, x);
            r->def->attr = kind, r->def->attr2 = axis < 0 ? 0 : axis;
            char what[96];
            snprintf(what, sizeof what, "%s %d axis %d %s -> %s", opc ? "scan" : "reduce", kind,
                     axis, ir_dtype_name(in), ir_dtype_name(outs[o]));
            for (uint64_t seed = 1; seed <= 2; seed++)
              check_op_typed(k, r->def, seed * 1234567, what);
            kit_free(k);
          }
  }
}

/* Loads and stores of every dtype, masked, with `other`, through pointers that alternate
 * between two buffers, with the typed loops on and off: the same bytes in memory. Then
 * the faults the typed loops must still word exactly: a lane past the end in the middle
 * of a tile, and a misaligned one. */
static kit *build_copy(tk_dtype dt, bool misalign) {
  kit *k = kit_new("copy");
  ir_value *s0 = param(k, "s0", P(k, dt)), *s1 = param(k, "s1", P(k, dt));
  ir_value *d = param(k, "d", P(k, dt));
  const ir_type *i32 = S(k, TK_I32), *ti = T(k, i32, NE, 0), *tp = T(k, P(k, dt), NE, 0);
  ir_value *offs = arange(k, NE);
  ir_value *low = ir_binary(&k->b, IR_AND, offs, splat(k, ir_const_int(&k->b, i32, 3), ti));
  ir_value *zero = splat(k, ir_const_int(&k->b, i32, 0), ti);
  ir_value *m1 = ir_cmp_build(&k->b, IR_CMP_NE, low, zero);
  ir_value *m2 = ir_cmp_build(&k->b, IR_CMP_LT, offs, splat(k, ir_const_int(&k->b, i32, 50), ti));
  ir_value *bit0 = ir_binary(&k->b, IR_AND, offs, splat(k, ir_const_int(&k->b, i32, 1), ti));
  ir_value *odd = ir_cmp_build(&k->b, IR_CMP_EQ, bit0, zero);
  ir_value *ops[3] = {odd, op2(k, IR_ADDPTR, tp, splat(k, s0, tp), offs),
                      op2(k, IR_ADDPTR, tp, splat(k, s1, tp), offs)};
  ir_value *src = ir_build1(&k->b, IR_SELECT, tp, 3, ops);
  if (misalign) {
    const ir_type *tb = T(k, P(k, TK_U8), NE, 0);
    ir_value *one = splat(k, ir_const_int(&k->b, i32, 1), ti);
    ir_value *bytes = op2(k, IR_ADDPTR, tb, op1(k, IR_CAST, tb, src), one);
    src = op1(k, IR_CAST, tp, bytes);
  }
  const ir_type *tv = T(k, S(k, dt), NE, 0);
  ir_value *other =
      ir_dtype_is_float(dt) ? ir_const_float(&k->b, tv, -2.5) : ir_const_int(&k->b, tv, 1);
  at_line(k, 7, 9);
  ir_value *v = load(k, src, m1, other);
  store(k, op2(k, IR_ADDPTR, tp, splat(k, d, tp), offs), v, m2);
  ret(k);
  verify(k);
  return k;
}

static void test_typed_memory(void **state) {
  (void)state;
  for (int di = 0; di < NDTYPES; di++) {
    tk_dtype dt = all_dtypes[di];
    size_t bytes = NE * (size_t)ir_dtype_bytes(dt);
    kit *k = build_copy(dt, false);
    uint64_t seed = 77 + (uint64_t)di;
    uint8_t a[NE * 8], b[NE * 8], d0[NE * 8], got[2][NE * 8];
    edge_values(dt, a, NE, &seed), edge_values(dt, b, NE, &seed), edge_values(dt, d0, NE, &seed);
    tk_devptr pa = upload(k, a, bytes), pb = upload(k, b, bytes), pd = upload(k, d0, bytes);
    tk_arg args[] = {tk_arg_ptr(pa), tk_arg_ptr(pb), tk_arg_ptr(pd)};
    for (int typed = 0; typed < 2; typed++) {
      memcpy(ip_mem_host(k->mem, pd, bytes, &k->err), d0, bytes);
      ip_typed_loops = typed;
      ip_status st = launch(k, 1, args, 3, NULL);
      ip_typed_loops = true;
      assert_int_equal(st, IP_OK);
      download(k, got[typed], pd, bytes);
    }
    assert_memory_equal(got[0], got[1], bytes);
    /* Lanes 50.. keep d's bytes; lanes with i % 4 == 0 got `other`. */
    size_t kept = 50 * (bytes / NE);
    assert_memory_equal(got[1] + kept, d0 + kept, bytes - kept);

    /* s0 of 37 elements: lane 38, the first active even lane (even lanes read s0) past
     * its end, faults. */
    tk_devptr shorter = upload(k, a, 37 * (bytes / NE));
    tk_arg bad[] = {tk_arg_ptr(shorter), tk_arg_ptr(pb), tk_arg_ptr(pd)};
    char msg[2][256];
    for (int typed = 0; typed < 2; typed++) {
      ip_typed_loops = typed;
      assert_int_equal(launch(k, 1, bad, 3, NULL), IP_FAULT);
      ip_typed_loops = true;
      snprintf(msg[typed], sizeof msg[typed], "%s", su_buf_str(&k->err));
    }
    assert_string_equal(msg[0], msg[1]);
    if (dt == TK_F32)
      assert_string_equal(msg[1], "t.tk:7:9: out-of-bounds load in kernel 'copy' at program "
                                  "(0, 0, 0): element offset 38 is past the end of a 148-byte buffer");
    kit_free(k);
  }
  kit *k = build_copy(TK_F32, true);
  float data[NE] = {0};
  tk_devptr p = upload(k, data, sizeof data);
  tk_arg args[] = {tk_arg_ptr(p), tk_arg_ptr(p), tk_arg_ptr(p)};
  assert_int_equal(launch(k, 1, args, 3, NULL), IP_FAULT);
  assert_string_equal(su_buf_str(&k->err), "t.tk:7:9: misaligned load in kernel 'copy' at program "
                                           "(0, 0, 0): byte offset 5 is not a multiple of the "
                                           "element size, 4 bytes");
  kit_free(k);
}

/* ---- several threads ------------------------------------------------------------------ */

/* Every program prints its linear id l (x fastest), asserts l != bad, then stores 3 * l
 * to out[l]. */
static kit *build_grid_kernel(void) {
  kit *k = kit_new("grid");
  ir_value *out = param(k, "out", P(k, TK_I32)), *bad = param(k, "bad", S(k, TK_I32));
  const ir_type *i32 = S(k, TK_I32);
  ir_value *pid[3], *num[3];
  for (int a = 0; a < 3; a++) {
    pid[a] = ir_build1(&k->b, IR_PROGRAM_ID, i32, 0, NULL);
    num[a] = ir_build1(&k->b, IR_NUM_PROGRAMS, i32, 0, NULL);
    pid[a]->def->attr = num[a]->def->attr = a;
  }
  ir_value *yz = ir_binary(&k->b, IR_ADD, pid[1], ir_binary(&k->b, IR_MUL, num[1], pid[2]));
  ir_value *l = ir_binary(&k->b, IR_ADD, pid[0], ir_binary(&k->b, IR_MUL, num[0], yz));
  ir_op *pr = ir_build(&k->b, IR_PRINT, 1, &l, 0, NULL);
  pr->str = "id:";
  at_line(k, 4, 2);
  ir_value *ok = ir_cmp_build(&k->b, IR_CMP_NE, l, bad);
  ir_op *as = ir_build(&k->b, IR_ASSERT, 1, &ok, 0, NULL);
  as->str = "not the bad one";
  ir_value *three_l = ir_binary(&k->b, IR_MUL, l, ir_const_int(&k->b, i32, 3));
  store(k, op2(k, IR_ADDPTR, P(k, TK_I32), out, l), three_l, NULL);
  ret(k);
  verify(k);
  return k;
}

typedef struct {
  ip_status st;
  char err[256];
  char *text; /* device_print's output, malloc'd */
  int32_t out[512];
} grid_run;

static grid_run run_grid(kit *k, const char *threads, tk_grid g, int bad) {
  grid_run r = {0};
  int n = (int)(g.x * g.y * g.z);
  assert_true(n <= 512);
  tk_devptr d = upload(k, r.out, sizeof r.out);
  tk_arg args[] = {tk_arg_ptr(d), tk_arg_i32(bad)};
  FILE *f = tmpfile();
  assert_non_null(f);
  setenv("TK_INTERPRET_THREADS", threads, 1);
  r.st = ip_launch(k->mem, k->m, k->f, g, args, 2, f, &k->err);
  unsetenv("TK_INTERPRET_THREADS");
  snprintf(r.err, sizeof r.err, "%s", su_buf_str(&k->err));
  long len = ftell(f);
  r.text = calloc(1, (size_t)len + 1);
  rewind(f);
  assert_int_equal(fread(r.text, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  download(k, r.out, d, sizeof r.out);
  return r;
}

/* The same prints, the same fault and the same stores (those before the fault) whatever
 * the thread count, over a grid far wider than grid.c's window of kept lines. */
static void test_threads_same_results(void **state) {
  (void)state;
  kit *k = build_grid_kernel();
  tk_grid g = {10, 9, 2};
  int n = 180;
  for (int bad = -1; bad < n; bad += 151) {
    grid_run one = run_grid(k, "1", g, bad);
    assert_int_equal(one.st, bad < 0 ? IP_OK : IP_FAULT);
    int ran = bad < 0 ? n : bad;
    for (int l = 0; l < ran; l++) assert_int_equal(one.out[l], 3 * l);
    if (bad >= 0)
      assert_string_equal(one.err, "t.tk:4:2: device_assert failed in kernel 'grid' at program "
                                   "(0, 6, 1): not the bad one");
    const char *counts[] = {"2", "3", "8", "abc", "0"};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
      grid_run many = run_grid(k, counts[c], g, bad);
      assert_int_equal(many.st, one.st);
      assert_string_equal(many.err, one.err);
      assert_string_equal(many.text, one.text);
      assert_memory_equal(many.out, one.out, sizeof(int32_t) * (size_t)ran);
      free(many.text);
    }
    free(one.text);
  }
  kit_free(k);
}

/* Atomics keep their sequential meaning with any thread count: each program exchanges
 * its id into a counter and stores what it got, its predecessor's id. */
static void test_threads_atomics_in_order(void **state) {
  (void)state;
  kit *k = kit_new("xchg");
  ir_value *ctr = param(k, "ctr", P(k, TK_I32)), *out = param(k, "out", P(k, TK_I32));
  const ir_type *i32 = S(k, TK_I32);
  ir_value *pid = ir_build1(&k->b, IR_PROGRAM_ID, i32, 0, NULL);
  ir_value *av[2] = {ctr, pid};
  ir_value *old = ir_build1(&k->b, IR_ATOMIC, i32, 2, av);
  old->def->attr = IR_ATOM_XCHG;
  store(k, op2(k, IR_ADDPTR, P(k, TK_I32), out, pid), old, NULL);
  ret(k);
  verify(k);
  int32_t c = -1, o[300] = {0};
  tk_devptr dc = upload(k, &c, sizeof c), dout = upload(k, o, sizeof o);
  tk_arg args[] = {tk_arg_ptr(dc), tk_arg_ptr(dout)};
  setenv("TK_INTERPRET_THREADS", "4", 1);
  assert_int_equal(launch(k, 300, args, 2, NULL), IP_OK);
  unsetenv("TK_INTERPRET_THREADS");
  download(k, o, dout, sizeof o);
  for (int i = 0; i < 300; i++) assert_int_equal(o[i], i - 1);
  kit_free(k);
}

static void test_thread_count(void **state) {
  (void)state;
  setenv("TK_INTERPRET_THREADS", "3", 1);
  assert_int_equal(ip_thread_count(100), 3);
  assert_int_equal(ip_thread_count(2), 2); /* at most one per program */
  setenv("TK_INTERPRET_THREADS", "100000", 1);
  assert_int_equal(ip_thread_count(1000000), 256);
  setenv("TK_INTERPRET_THREADS", "junk", 1);
  int cores = ip_thread_count(1000000);
  unsetenv("TK_INTERPRET_THREADS");
  assert_int_equal(ip_thread_count(1000000), cores); /* the cores online */
  assert_true(cores >= 1);
  /* A kernel with no values at all runs on several threads too. */
  kit *k = kit_new("empty");
  ret(k);
  verify(k);
  setenv("TK_INTERPRET_THREADS", "3", 1);
  assert_int_equal(launch(k, 10, NULL, 0, NULL), IP_OK);
  unsetenv("TK_INTERPRET_THREADS");
  kit_free(k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_float_rounding),
      cmocka_unit_test(test_float_encoding),
      cmocka_unit_test(test_float16_bits),
      cmocka_unit_test(test_integer_wraparound),
      cmocka_unit_test(test_float_arith),
      cmocka_unit_test(test_more_float_math),
      cmocka_unit_test(test_umulhi_and_cdiv),
      cmocka_unit_test(test_casts),
      cmocka_unit_test(test_buffers),
      cmocka_unit_test(test_vadd_ragged),
      cmocka_unit_test(test_out_of_bounds_load),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_division_by_zero),
      cmocka_unit_test(test_for_and_if),
      cmocka_unit_test(test_reductions_and_shapes),
      cmocka_unit_test(test_dot),
      cmocka_unit_test(test_atomics),
      cmocka_unit_test(test_workspace),
      cmocka_unit_test(test_buffers_too_large),
      cmocka_unit_test(test_print_and_assert),
      cmocka_unit_test(test_f16_kernel),
      cmocka_unit_test(test_typed_elementwise),
      cmocka_unit_test(test_typed_dot),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_typed_reduce),
      cmocka_unit_test(test_typed_memory),
      cmocka_unit_test(test_threads_same_results),
      cmocka_unit_test(test_threads_atomics_in_order),
      cmocka_unit_test(test_thread_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
