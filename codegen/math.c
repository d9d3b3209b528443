/* The math functions, one element at a time: which instruction or library routine computes
 * each, hence its accuracy (the contract is in codegen.h). As in Triton, f32 sin, cos, exp
 * and exp2 use the hardware approximations: libdevice's precise versions cost several
 * times more and bound a kernel like cos(cos(x)) by compute instead of memory. */
#include "cg.h"

#include <stdio.h>

/* log2(e), to compute e^x as 2^(x * log2(e)). */
static const double LOG2E = 1.4426950408889634;

/* The libdevice routine `base` for dtype dt (__nv_cosf for f32, __nv_cos for f64); its
 * body is linked in later, and only if something calls it. */
static LLVMValueRef libdevice(cg_ctx *c, const char *base, tk_dtype dt, LLVMValueRef x) {
  char name[32];
  snprintf(name, sizeof name, "__nv_%s%s", base, dt == TK_F32 ? "f" : "");
  return cg_call(c, name, LLVMTypeOf(x), &x, 1);
}

/* A PTX .approx instruction through its NVVM intrinsic. The non-ftz forms: subnormal
 * inputs and results are kept, as everywhere else in tk's f32 arithmetic. */
static LLVMValueRef approx(cg_ctx *c, const char *intrinsic, LLVMValueRef x) {
  return cg_intrinsic(c, intrinsic, NULL, 0, &x, 1);
}

/* An exact LLVM intrinsic overloaded on x's type (sqrt → sqrt.rn, floor → cvt.rmi). */
static LLVMValueRef exact(cg_ctx *c, const char *intrinsic, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  return cg_intrinsic(c, intrinsic, &t, 1, &x, 1);
}

LLVMValueRef cg_math(cg_ctx *c, ir_opcode opc, tk_dtype dt, LLVMValueRef x) {
  bool fast = dt == TK_F32;
  switch (opc) {
  case IR_SIN: return fast ? approx(c, "llvm.nvvm.sin.approx.f", x) : libdevice(c, "sin", dt, x);
  case IR_COS: return fast ? approx(c, "llvm.nvvm.cos.approx.f", x) : libdevice(c, "cos", dt, x);
  case IR_EXP2: return fast ? approx(c, "llvm.nvvm.ex2.approx.f", x) : libdevice(c, "exp2", dt, x);
  case IR_EXP:
    if (!fast) return libdevice(c, "exp", dt, x);
    x = LLVMBuildFMul(c->b, x, LLVMConstReal(LLVMTypeOf(x), LOG2E), "");
    return approx(c, "llvm.nvvm.ex2.approx.f", x);
  case IR_SQRT: return exact(c, "llvm.sqrt", x);
  case IR_FLOOR: return exact(c, "llvm.floor", x);
  case IR_CEIL: return exact(c, "llvm.ceil", x);
  case IR_LOG: return libdevice(c, "log", dt, x);
  case IR_LOG2: return libdevice(c, "log2", dt, x);
  case IR_RSQRT: return libdevice(c, "rsqrt", dt, x);
  case IR_TANH: return libdevice(c, "tanh", dt, x);
  case IR_ERF: return libdevice(c, "erf", dt, x);
  default: return NULL;
  }
}
