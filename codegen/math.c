/* The math functions, one element at a time: which instruction or library routine computes
 * each, hence its accuracy (the contract is in codegen.h). As in Triton, f32 sin, cos, exp
 * and exp2 use the hardware approximations: libdevice's precise versions cost several
 * times more and bound a kernel like cos(cos(x)) by compute instead of memory. An op
 * marked accurate (sin(x, accurate=true), tkc -fmath=accurate) takes libdevice's
 * __nv_sinf etc. instead: a full-range reduction, within 2 ulp of the exact value. */
#include "cg.h"

#include <math.h>
#include <stdio.h>

/* log2(e), to compute e^x as 2^(x * log2(e)). */
static const double LOG2E = 1.4426950408889634;

/* The libdevice routine `base` for dtype dt (__nv_cosf for f32, __nv_cos for f64) on the
 * n operands a; its body is linked in later, and only if something calls it. */
static LLVMValueRef libdevice(cg_ctx *c, const char *base, tk_dtype dt, LLVMValueRef *a, int n) {
  char name[32];
  snprintf(name, sizeof name, "__nv_%s%s", base, dt == TK_F32 ? "f" : "");
  return cg_call(c, name, LLVMTypeOf(a[0]), a, n);
}

/* A PTX .approx instruction through its NVVM intrinsic. The non-ftz forms: subnormal
 * inputs and results are kept, as everywhere else in tk's f32 arithmetic. */
static LLVMValueRef approx(cg_ctx *c, const char *intrinsic, LLVMValueRef x) {
  return cg_intrinsic(c, intrinsic, NULL, 0, &x, 1);
}

/* An exact LLVM intrinsic overloaded on the operands' type (sqrt → sqrt.rn, floor →
 * cvt.rmi, roundeven → cvt.rni, copysign → copysign). */
static LLVMValueRef exact(cg_ctx *c, const char *intrinsic, LLVMValueRef *a, int n) {
  LLVMTypeRef t = LLVMTypeOf(a[0]);
  return cg_intrinsic(c, intrinsic, &t, 1, a, n);
}

/* x / y, fast: f32 is div.full.f32 (at most 2 ulp from the exact quotient over the whole
 * range, where div.approx.f32 gives up past |y| = 2^126); f64 has no approximate
 * division, so it stays div.rn. */
static LLVMValueRef fast_div(cg_ctx *c, tk_dtype dt, LLVMValueRef *a) {
  if (dt != TK_F32) return LLVMBuildFDiv(c->b, a[0], a[1], "");
  return cg_ptx_div_full(c, a[0], a[1]);
}

/* erfc(z) = t * 2^(Q(t) - z^2 log2 e) for z = |x| >= 0, t = 1 / (1 + z/2): the change of
 * variable maps [0, inf) onto (0, 1], where log2(erfc(z) / t) + z^2 log2 e is smooth enough
 * for one polynomial (the form of Numerical Recipes' erfcc; coefficients fitted here, by
 * least squares on Chebyshev nodes, to 1.0e-7 relative in real arithmetic; the constant
 * term then set so that Q(1) rounds to 0 and erfc(0) is exactly 1). Evaluated in f32 the
 * Horner chain's roundings near t = 1 dominate: within (12 + 3 x^2) ulps of erfc(x) with
 * exact division and exp2, the x^2 from rounding z^2 inside the power (the same kind of
 * error as the fast exp's 1.2 |x| ulps); with rcp.approx and ex2.approx, (16 + 3 x^2)
 * (docs/language.md). The power is taken as
 * the square of 2^(half of it): a result below 2^-126 (|x| > 9.2) is then a subnormal
 * rounded by the multiply instead of needing ex2's subnormal fix-up (three more
 * instructions) or being flushed. No division, no branch, no selected coefficients: 2 MUFU
 * and ~15 other instructions, where libdevice's erf is one MUFU and ~24 (its two
 * polynomials share one Horner chain whose coefficients are selected per element). */
static const float ERFC_Q[] = { /* Q / 2; the first makes the sum at t = 1 exactly 0 */
    -0x1.d3644p-1f, 0x1.7156b4p-1f, 0x1.1453a4p-2f, 0x1.1df65ep-4f,  -0x1.1335p-3f,
    0x1.9bfa32p-3f,  -0x1.a343cap-1f, 0x1.12e072p+0f, -0x1.2fa53ap-1f, 0x1.f8de12p-4f};
enum { ERFC_NQ = sizeof ERFC_Q / sizeof *ERFC_Q };
static const float SQRT_HALF_LOG2E = 0x1.b2da4ep-1f; /* sqrt(log2(e) / 2), rounded to f32 */

/* The constants of erfc(in * x) * 2^out folded in (in = 0 meaning 1): with z = |x|, the
 * denominator's slope |in| / 2 and w = |in| SQRT_HALF_LOG2E z, one f32 constant each,
 * rounded once from the exact product (the factors are f32 numbers); 2^out in the power,
 * out / 2 added to Q's constant term (h is the square root of the power). So in = 1,
 * out = 0 gives the unscaled constants bit for bit. */
typedef struct {
  float den_slope, q0, w, neg_base;
  bool flip; /* in < 0: erfc's argument is negative where x is positive */
} erfc_consts;

static erfc_consts erfc_fold(double in, int out) {
  double a = in == 0 ? 1.0 : fabs(in);
  return (erfc_consts){(float)(a * 0.5), (float)((double)ERFC_Q[0] + out / 2.0),
                       (float)(a * (double)SQRT_HALF_LOG2E), (float)ldexp(2.0, out), in < 0};
}

float cg_erfc_model(float x, double in, int out) {
  erfc_consts k = erfc_fold(in, out);
  float z = fabsf(x), t = 1.0f / fmaf(z, k.den_slope, 1.0f), q = ERFC_Q[ERFC_NQ - 1];
  for (int i = ERFC_NQ - 2; i >= 0; i--) q = fmaf(q, t, i ? ERFC_Q[i] : k.q0);
  float w = z * k.w, h = exp2f(fmaf(-w, w, q));
  float r = t * h * h;
  return (k.flip ? x > 0 : x < 0) ? k.neg_base - r : r;
}

/* cg_erfc_model in LLVM IR, the same operations in the same order (rcp.approx and
 * ex2.approx where the model divides and calls exp2f). */
static LLVMValueRef fast_erfc(cg_ctx *c, LLVMValueRef x, double in, int out) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef t32 = LLVMTypeOf(x);
  erfc_consts k = erfc_fold(in, out);
  LLVMValueRef z = cg_intrinsic(c, "llvm.fabs", &t32, 1, &x, 1);
  LLVMValueRef d[3] = {z, LLVMConstReal(t32, k.den_slope), LLVMConstReal(t32, 1.0)};
  LLVMValueRef den = cg_intrinsic(c, "llvm.fma", &t32, 1, d, 3);
  /* the denominator is at least 1 (or +inf, or NaN): flushing subnormals changes nothing */
  LLVMValueRef t = approx(c, "llvm.nvvm.rcp.approx.ftz.f", den);
  LLVMValueRef q = LLVMConstReal(t32, ERFC_Q[ERFC_NQ - 1]);
  for (int i = ERFC_NQ - 2; i >= 0; i--) {
    LLVMValueRef h[3] = {q, t, LLVMConstReal(t32, i ? ERFC_Q[i] : k.q0)};
    q = cg_intrinsic(c, "llvm.fma", &t32, 1, h, 3);
  }
  LLVMValueRef w = LLVMBuildFMul(b, z, LLVMConstReal(t32, k.w), "");
  LLVMValueRef e[3] = {LLVMBuildFNeg(b, w, ""), w, q};
  /* at least 2^-76: never subnormal, so the flushing form is exact to use */
  LLVMValueRef h = approx(c, "llvm.nvvm.ex2.approx.ftz.f", cg_intrinsic(c, "llvm.fma", &t32, 1, e, 3));
  LLVMValueRef r = LLVMBuildFMul(b, LLVMBuildFMul(b, t, h, ""), h, "");
  LLVMValueRef neg = LLVMBuildFCmp(b, k.flip ? LLVMRealOGT : LLVMRealOLT, x, LLVMConstNull(t32), "");
  return LLVMBuildSelect(b, neg, LLVMBuildFSub(b, LLVMConstReal(t32, k.neg_base), r, ""), r, "");
}

LLVMValueRef cg_erfc(cg_ctx *c, const ir_op *op, tk_dtype dt, LLVMValueRef x) {
  if (dt == TK_F32 && op->attr != 1) return fast_erfc(c, x, op->cval.f, (int)op->attr2);
  LLVMTypeRef t = LLVMTypeOf(x);
  if (op->cval.f != 0) x = LLVMBuildFMul(c->b, x, LLVMConstReal(t, op->cval.f), "");
  LLVMValueRef r = libdevice(c, "erfc", dt, &x, 1);
  return op->attr2 ? LLVMBuildFMul(c->b, r, LLVMConstReal(t, ldexp(1.0, (int)op->attr2)), "") : r;
}

LLVMValueRef cg_math(cg_ctx *c, ir_opcode opc, bool accurate, tk_dtype dt, LLVMValueRef *a) {
  bool fast = dt == TK_F32 && !accurate;
  LLVMValueRef x = a[0];
  switch (opc) {
  case IR_SIN: return fast ? approx(c, "llvm.nvvm.sin.approx.f", x) : libdevice(c, "sin", dt, a, 1);
  case IR_COS: return fast ? approx(c, "llvm.nvvm.cos.approx.f", x) : libdevice(c, "cos", dt, a, 1);
  case IR_EXP2: return dt == TK_F32 ? approx(c, "llvm.nvvm.ex2.approx.f", x) : libdevice(c, "exp2", dt, a, 1);
  case IR_EXP:
    if (!fast) return libdevice(c, "exp", dt, a, 1);
    x = LLVMBuildFMul(c->b, x, LLVMConstReal(LLVMTypeOf(x), LOG2E), "");
    return approx(c, "llvm.nvvm.ex2.approx.f", x);
  case IR_SQRT: return exact(c, "llvm.sqrt", a, 1);
  case IR_FLOOR: return exact(c, "llvm.floor", a, 1);
  case IR_CEIL: return exact(c, "llvm.ceil", a, 1);
  case IR_RINT: return exact(c, "llvm.roundeven", a, 1);
  case IR_TRUNC: return exact(c, "llvm.trunc", a, 1);
  case IR_COPYSIGN: return exact(c, "llvm.copysign", a, 2);
  case IR_LOG: return libdevice(c, "log", dt, a, 1);
  case IR_LOG2: return libdevice(c, "log2", dt, a, 1);
  case IR_RSQRT: return libdevice(c, "rsqrt", dt, a, 1);
  case IR_TANH: return libdevice(c, "tanh", dt, a, 1);
  case IR_ERF: return libdevice(c, "erf", dt, a, 1);
  case IR_ERFC: return fast ? fast_erfc(c, x, 0, 0) : libdevice(c, "erfc", dt, a, 1);
  case IR_LOG1P: return libdevice(c, "log1p", dt, a, 1);
  case IR_EXPM1: return libdevice(c, "expm1", dt, a, 1);
  case IR_POW: return libdevice(c, "pow", dt, a, 2);
  case IR_FDIV: return fast_div(c, dt, a);
  default: return NULL;
  }
}

/* ---- what the lowering costs the special-function units ---------------------------------
 * MUFU results per element of each float math op, as the lowerings above (and float_op in
 * emit_elementwise.c: sigmoid, `/`, `%`) compile after ptxas: the roofline's
 * special-function term (driver/roofline.c) reads this table and nothing else, so it
 * must change when a lowering does. Counted on the common path of the SASS of one kernel
 * per op (sm_90a, ptxas 13; docs/roofline.md, "Special functions"): a routine's slow path
 * (a subnormal, an overflow, an out-of-range argument) is not counted; a branch taken by
 * part of the range counts as taken, as the roofline takes an `if`'s larger arm.
 * ptxas's correctly rounded sqrt.rn, div.rn and rcp.rn start from a MUFU seed (RSQ, RCP)
 * refined by FMAs, so exact sqrt and division cost one, like their approximations. f16,
 * bf16 and fp8 compute in f32 (the f32 columns); integer division (one MUFU.RCP for a
 * divisor that is not a constant) is index arithmetic, which the roofline does not count. */
typedef struct {
  ir_opcode opc;
  signed char f32, f32_accurate, f64;
} mufu_row;

static const mufu_row MUFU[] = {
    /* f32: ex2.approx(x * log2 e); accurate: __nv_expf's ex2.approx.ftz; f64: __nv_exp, a
     * polynomial */
    {IR_EXP, 1, 1, 0},
    {IR_EXP2, 1, 1, 0},      /* ex2.approx (also `exp2 ftz`); f64: polynomial */
    {IR_LOG, 0, 0, 1},       /* __nv_logf: a polynomial; __nv_log: one rcp.approx.f64 */
    {IR_LOG2, 0, 0, 1},
    {IR_SQRT, 1, 1, 1},      /* sqrt.rn: MUFU.RSQ (f64: RSQ64H) and Newton steps */
    {IR_RSQRT, 1, 1, 1},     /* rsqrt.approx (f64: RSQ64H refined) */
    {IR_SIN, 1, 0, 0},       /* sin.approx; accurate and f64: polynomials after reduction */
    {IR_COS, 1, 0, 0},
    {IR_TANH, 2, 2, 2},      /* __nv_tanhf: ex2 and rcp (|x| >= 0.6; selected, not branched) */
    {IR_ERF, 1, 1, 1},       /* one ex2, on the |x| >= 1 branch */
    {IR_ERFC, 2, 3, 2},      /* rcp.approx and ex2.approx; __nv_erfcf: two rcp and an ex2;
                              * __nv_erfc: two rcp.approx.f64 */
    {IR_SIGMOID, 2, 2, 1},   /* exp(-x) as above, then 1 / (1 + e): div.rn's rcp */
    {IR_LOG1P, 0, 0, 2},     /* f32 polynomial; f64: div.rn.f64 and __nv_log's rcp */
    {IR_EXPM1, 1, 1, 0},
    {IR_POW, 1, 1, 1},       /* __nv_powf: one rcp.approx; __nv_pow: one rcp.approx.f64 */
    {IR_FDIV, 1, 1, 1},      /* div.full.f32: MUFU.RCP and a multiply; f64: div.rn.f64 */
    {IR_DIV, 1, 1, 1},       /* div.rn: MUFU.RCP and Newton steps (by a power of two LLVM
                              * multiplies instead: counted all the same, an upper bound) */
    {IR_REM, 1, 1, 0},       /* __nv_fmodf: one div.approx or rcp.approx; __nv_fmod: integer */
};

int cg_math_mufu_per_elem(ir_opcode opc, tk_dtype dt, bool accurate) {
  if (!ir_dtype_is_float(dt)) return 0;
  for (size_t i = 0; i < sizeof MUFU / sizeof *MUFU; i++) {
    const mufu_row *r = &MUFU[i];
    if (r->opc == opc) return dt == TK_F64 ? r->f64 : accurate ? r->f32_accurate : r->f32;
  }
  return 0;
}

LLVMValueRef cg_exp2_ftz(cg_ctx *c, LLVMValueRef x) {
  return approx(c, "llvm.nvvm.ex2.approx.ftz.f", x);
}

/* The high half of the unsigned product: widened, multiplied, shifted back, which LLVM
 * turns into one mul.hi.u16/u32/u64. */
static LLVMValueRef umulhi(cg_ctx *c, tk_dtype dt, LLVMValueRef *a) {
  int w = ir_dtype_bits(dt);
  LLVMTypeRef t = LLVMTypeOf(a[0]), wide = LLVMIntTypeInContext(c->llc, (unsigned)(2 * w));
  LLVMValueRef x = LLVMBuildZExt(c->b, a[0], wide, ""), y = LLVMBuildZExt(c->b, a[1], wide, "");
  LLVMValueRef p = LLVMBuildMul(c->b, x, y, "");
  p = LLVMBuildLShr(c->b, p, LLVMConstInt(wide, (unsigned long long)w, false), "");
  return LLVMBuildTrunc(c->b, p, t, "");
}

/* a / b rounded up, as interp/numeric.c does it: the truncated quotient, plus one when a
 * remainder is left and the quotient is positive (signed: the remainder, which has a's
 * sign, and b agree in sign). No intermediate overflows. */
static LLVMValueRef cdiv(cg_ctx *c, tk_dtype dt, LLVMValueRef *a) {
  LLVMBuilderRef b = c->b;
  bool sgn = ir_dtype_is_signed(dt);
  LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(a[0]));
  LLVMValueRef q = sgn ? LLVMBuildSDiv(b, a[0], a[1], "") : LLVMBuildUDiv(b, a[0], a[1], "");
  LLVMValueRef r = sgn ? LLVMBuildSRem(b, a[0], a[1], "") : LLVMBuildURem(b, a[0], a[1], "");
  LLVMValueRef up = LLVMBuildICmp(b, LLVMIntNE, r, zero, "");
  if (sgn) {
    LLVMValueRef same = LLVMBuildICmp(b, LLVMIntSGE, LLVMBuildXor(b, r, a[1], ""), zero, "");
    up = LLVMBuildAnd(b, up, same, "");
  }
  return LLVMBuildAdd(b, q, LLVMBuildZExt(b, up, LLVMTypeOf(q), ""), "");
}

LLVMValueRef cg_int_math(cg_ctx *c, ir_opcode opc, tk_dtype dt, LLVMValueRef *a) {
  switch (opc) {
  case IR_UMULHI: return umulhi(c, dt, a);
  case IR_CDIV: return cdiv(c, dt, a);
  default: return NULL;
  }
}
