/* The math functions, one element at a time: which instruction or library routine computes
 * each, hence its accuracy (the contract is in codegen.h). As in Triton, f32 sin, cos, exp
 * and exp2 use the hardware approximations: libdevice's precise versions cost several
 * times more and bound a kernel like cos(cos(x)) by compute instead of memory. An op
 * marked accurate (sin(x, accurate=true), tkc -fmath=accurate) takes libdevice's
 * __nv_sinf etc. instead: a full-range reduction, within 2 ulp of the exact value. */
#include "cg.h"

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
  case IR_LOG1P: return libdevice(c, "log1p", dt, a, 1);
  case IR_EXPM1: return libdevice(c, "expm1", dt, a, 1);
  case IR_POW: return libdevice(c, "pow", dt, a, 2);
  case IR_FDIV: return fast_div(c, dt, a);
  default: return NULL;
  }
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
