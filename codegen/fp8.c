/* fp8 conversions (docs/language.md §5.6): f32 to f8e4m3 / f8e5m2 rounds to nearest even
 * and saturates at the largest finite value (infinities too), a NaN becoming 0x7f; fp8 to
 * f16 is exact. On sm_90 and later these are PTX's cvt.rn.satfinite / cvt.rn.f16x2; sm_80
 * has no fp8 instruction (sm_89 has, from PTX ISA 8.1, newer than what its target row
 * emits), so there the same bits come from integer ops here. The interpreter's
 * rule is ir_dtype_round / ir_fp8_bits (ir/types.c); tests/gpu/gpu_lang.c checks every
 * byte and the rounding boundaries against it on each target. */
#include "cg.h"

typedef struct {
  int m, bias;         /* mantissa bits, exponent bias */
  uint32_t max_bits;   /* the largest finite value as f32 bits */
  unsigned max_code;   /* ... as fp8 bits */
  double sub_magic;    /* 2^k whose f32 ulp is the format's subnormal unit */
} fp8_fmt;

static fp8_fmt fmt_of(tk_dtype dt) {
  if (dt == TK_F8E4M3) return (fp8_fmt){3, 7, 0x43e00000u /* 448 */, 0x7e, 0x1p14};
  return (fp8_fmt){2, 15, 0x47600000u /* 57344 */, 0x7b, 0x1p7};
}

static LLVMValueRef u32(cg_ctx *c, uint32_t v) {
  return LLVMConstInt(LLVMInt32TypeInContext(c->llc), v, false);
}

/* The integer form of PTX's rounding: the sign apart, |x| past the largest finite value
 * (infinity included) saturates; a normal result rounds the f32 significand at the
 * format's last bit by adding half an ulp less one plus the kept last bit (ties to even;
 * a carry into the exponent is right); a subnormal one is rounded by an f32 addition of a
 * power of two whose ulp is the subnormal unit (the count of units is then the low bits,
 * up to 2^m, which is the smallest normal's code). */
static LLVMValueRef soft_from_f32(cg_ctx *c, tk_dtype dt, LLVMValueRef x) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c->llc), f32 = LLVMFloatTypeInContext(c->llc);
  fp8_fmt f = fmt_of(dt);
  int shift = 23 - f.m;
  LLVMValueRef u = LLVMBuildBitCast(b, x, i32, "");
  LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, u32(c, 24), ""), u32(c, 0x80), "");
  LLVMValueRef a = LLVMBuildAnd(b, u, u32(c, 0x7fffffffu), "");
  LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, a, u32(c, (uint32_t)shift), ""), u32(c, 1), "");
  uint32_t rebias = (uint32_t)(f.bias - 127) << 23; /* wraps: the sum below does not */
  LLVMValueRef norm = LLVMBuildAdd(b, a, u32(c, rebias + (1u << (shift - 1)) - 1), "");
  norm = LLVMBuildLShr(b, LLVMBuildAdd(b, norm, odd, ""), u32(c, (uint32_t)shift), "");
  LLVMValueRef magic = LLVMConstReal(f32, f.sub_magic);
  LLVMValueRef sum = LLVMBuildFAdd(b, LLVMBuildBitCast(b, a, f32, ""), magic, "");
  LLVMValueRef sub = LLVMBuildSub(b, LLVMBuildBitCast(b, sum, i32, ""), LLVMBuildBitCast(b, magic, i32, ""), "");
  uint32_t min_normal = (uint32_t)(127 + 1 - f.bias) << 23;
  LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, a, u32(c, min_normal), ""), sub, norm, "");
  r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, a, u32(c, f.max_bits), ""), u32(c, f.max_code), r, "");
  r = LLVMBuildOr(b, r, sign, "");
  r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, a, u32(c, 0x7f800000u), ""), u32(c, 0x7f), r, "");
  return LLVMBuildTrunc(b, r, LLVMInt8TypeInContext(c->llc), "");
}

/* f8e5m2 is the top byte of an f16; f8e4m3's magnitude bits shifted into an f16 are its
 * value times 2^-8 (normal or not: f16 has 1 more exponent bit and 7 more mantissa bits),
 * scaled back exactly. A NaN becomes 0x7fff, what cvt.rn.f16x2 writes. */
static LLVMValueRef soft_to_f16(cg_ctx *c, tk_dtype dt, LLVMValueRef x) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef i16 = LLVMInt16TypeInContext(c->llc), f16 = LLVMHalfTypeInContext(c->llc);
  LLVMValueRef w = LLVMBuildZExt(b, x, i16, "");
  LLVMValueRef h, nan;
  if (dt == TK_F8E5M2) {
    h = LLVMBuildShl(b, w, LLVMConstInt(i16, 8, false), "");
    LLVMValueRef mag = LLVMBuildAnd(b, w, LLVMConstInt(i16, 0x7f, false), "");
    nan = LLVMBuildICmp(b, LLVMIntUGT, mag, LLVMConstInt(i16, 0x7c, false), "");
  } else {
    LLVMValueRef mag = LLVMBuildAnd(b, w, LLVMConstInt(i16, 0x7f, false), "");
    LLVMValueRef v = LLVMBuildBitCast(b, LLVMBuildShl(b, mag, LLVMConstInt(i16, 7, false), ""), f16, "");
    v = LLVMBuildFMul(b, v, LLVMConstReal(f16, 256.0), "");
    LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, w, LLVMConstInt(i16, 0x80, false), ""),
                                     LLVMConstInt(i16, 8, false), "");
    h = LLVMBuildOr(b, LLVMBuildBitCast(b, v, i16, ""), sign, "");
    nan = LLVMBuildICmp(b, LLVMIntEQ, mag, LLVMConstInt(i16, 0x7f, false), "");
  }
  h = LLVMBuildSelect(b, nan, LLVMConstInt(i16, 0x7fff, false), h, "");
  return LLVMBuildBitCast(b, h, f16, "");
}

LLVMValueRef cg_fp8_from_f32(cg_ctx *c, tk_dtype dt, LLVMValueRef x) {
  return tg_has(c->arch, TG_FP8_CVT) ? cg_ptx_cvt_f8_f32(c, dt, x) : soft_from_f32(c, dt, x);
}

LLVMValueRef cg_fp8_to_f16(cg_ctx *c, tk_dtype dt, LLVMValueRef b) {
  return tg_has(c->arch, TG_FP8_CVT) ? cg_ptx_cvt_f16_f8(c, dt, b) : soft_to_f16(c, dt, b);
}
