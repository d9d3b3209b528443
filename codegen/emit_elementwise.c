/* Elementwise ops, slot by slot. f16 and bf16 arithmetic is computed in f32 and rounded
 * back: for + - * / sqrt and fma a single f32 operation rounded to 16 bits is exactly the
 * correctly rounded 16-bit result, and PTX lacks most bf16 ops before sm_90. Math
 * functions are chosen in math.c. */
#include "cg.h"

#include <string.h>

static bool is_half(tk_dtype dt) { return dt == TK_F16 || dt == TK_BF16; }
static bool is_unsigned(tk_dtype dt) { return ir_dtype_is_int(dt) && !ir_dtype_is_signed(dt); }

static LLVMTypeRef f32(cg_ctx *c) { return LLVMFloatTypeInContext(c->llc); }

/* Whether x of dtype from reaches bf16 (or fp8) in one rounding only through f32_odd: 32-
 * and 64-bit integers and f64. Two roundings to nearest, the way LLVM goes through f32, are
 * wrong for values such as 2^24 + 2^16 + 1 (tkdiff seed 3005140: i64 into bf16 math).
 * f16 needs none of this: an integer too wide for f32 is far past f16's range, and f64 ->
 * f16 is one cvt. */
static bool bf16_needs_odd(tk_dtype from) {
  return from == TK_F64 || (ir_dtype_is_int(from) && ir_dtype_bits(from) >= 32);
}

/* x rounded to f32 toward zero with "inexact" ORed into its last bit (round to odd):
 * rounding that to bf16 to nearest gives the correctly rounded bf16 of x, since f32 has
 * more than bf16's 8 + 2 bits. */
static LLVMValueRef f32_odd(cg_ctx *c, LLVMValueRef x, tk_dtype from) {
  LLVMBuilderRef b = c->b;
  bool sg = ir_dtype_is_signed(from);
  LLVMValueRef y = cg_ptx_cvt_rz_f32(c, x, from), inexact;
  if (from == TK_F64) { /* a NaN stays one with its last bit set */
    inexact = LLVMBuildFCmp(b, LLVMRealUNE, LLVMBuildFPExt(b, y, LLVMTypeOf(x), ""), x, "");
  } else { /* y is x truncated, so back in x's type exactly */
    LLVMValueRef back = sg ? LLVMBuildFPToSI(b, y, LLVMTypeOf(x), "") : LLVMBuildFPToUI(b, y, LLVMTypeOf(x), "");
    inexact = LLVMBuildICmp(b, LLVMIntNE, back, x, "");
  }
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c->llc);
  LLVMValueRef bits = LLVMBuildOr(b, LLVMBuildBitCast(b, y, i32, ""), LLVMBuildZExt(b, inexact, i32, ""), "");
  return LLVMBuildBitCast(b, bits, f32(c), "");
}

LLVMValueRef cg_convert(cg_ctx *c, LLVMValueRef x, tk_dtype from, tk_dtype to) {
  if (from == to || (from == TK_PTR && to == TK_PTR)) return x;
  /* fp8 from f16 (exact: every fp8 value is an f16 one), to fp8 from f32 (rounded once:
   * f32_odd for what f32 does not hold exactly) */
  if (ir_dtype_is_fp8(from)) {
    x = cg_fp8_to_f16(c, from, x);
    if (to == TK_F16) return x;
    from = TK_F16;
  }
  if (ir_dtype_is_fp8(to))
    return cg_fp8_from_f32(c, to, bf16_needs_odd(from) ? f32_odd(c, x, from) : cg_convert(c, x, from, TK_F32));
  LLVMTypeRef t = cg_dtype_type(c, to);
  LLVMBuilderRef b = c->b;
  if (to == TK_I1) {
    if (ir_dtype_is_float(from))
      return LLVMBuildFCmp(b, LLVMRealUNE, x, LLVMConstNull(LLVMTypeOf(x)), "");
    return LLVMBuildICmp(b, LLVMIntNE, x, LLVMConstNull(LLVMTypeOf(x)), "");
  }
  if (ir_dtype_is_int(from) && ir_dtype_is_int(to)) {
    int fb = ir_dtype_bits(from), tb = ir_dtype_bits(to);
    if (fb == tb) return x;
    if (fb > tb) return LLVMBuildTrunc(b, x, t, "");
    return ir_dtype_is_signed(from) ? LLVMBuildSExt(b, x, t, "") : LLVMBuildZExt(b, x, t, "");
  }
  if (to == TK_BF16 && bf16_needs_odd(from)) return LLVMBuildFPTrunc(b, f32_odd(c, x, from), t, "");
  if (ir_dtype_is_int(from)) { /* → float; 16-bit floats through f32 */
    LLVMTypeRef mid = is_half(to) ? f32(c) : t;
    LLVMValueRef y = ir_dtype_is_signed(from) ? LLVMBuildSIToFP(b, x, mid, "")
                                              : LLVMBuildUIToFP(b, x, mid, "");
    return is_half(to) ? LLVMBuildFPTrunc(b, y, t, "") : y;
  }
  if (is_half(from)) { /* widening to f32 is exact */
    x = LLVMBuildFPExt(b, x, f32(c), "");
    from = TK_F32;
    if (to == TK_F32) return x;
  }
  if (ir_dtype_is_int(to)) { /* saturating, NaN → 0, as the language says */
    LLVMTypeRef over[2] = {t, LLVMTypeOf(x)};
    return cg_intrinsic(c, ir_dtype_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat",
                        over, 2, &x, 1);
  }
  /* f32 -> f64 as its own cvt: LLVM 19 folds an fpext of loaded f32s into a vector
   * load into f64 registers, which ptxas rejects (tools/tkdiff/known.c's first entry) */
  if (from == TK_F32 && to == TK_F64) return cg_ptx_cvt_f64_f32(c, x);
  if (ir_dtype_bits(to) > ir_dtype_bits(from)) return LLVMBuildFPExt(b, x, t, "");
  return LLVMBuildFPTrunc(b, x, t, "");
}

LLVMValueRef cg_combine(cg_ctx *c, ir_reduce_kind k, tk_dtype dt, LLVMValueRef x,
                        LLVMValueRef y) {
  LLVMValueRef args[2] = {x, y};
  LLVMTypeRef t = LLVMTypeOf(x);
  if (ir_dtype_is_float(dt)) {
    if (k == IR_RED_SUM) return LLVMBuildFAdd(c->b, x, y, "");
    return cg_intrinsic(c, k == IR_RED_MAX ? "llvm.maximum" : "llvm.minimum", &t, 1, args, 2);
  }
  if (k == IR_RED_SUM) return LLVMBuildAdd(c->b, x, y, "");
  const char *name = k == IR_RED_MAX ? (is_unsigned(dt) || dt == TK_I1 ? "llvm.umax" : "llvm.smax")
                                     : (is_unsigned(dt) || dt == TK_I1 ? "llvm.umin" : "llvm.smin");
  return cg_intrinsic(c, name, &t, 1, args, 2);
}

static LLVMRealPredicate fcmp_pred(int64_t p) {
  static const LLVMRealPredicate preds[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                            LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
  return preds[p];
}

static LLVMIntPredicate icmp_pred(int64_t p, bool is_signed) {
  static const LLVMIntPredicate s[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT,
                                       LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
  static const LLVMIntPredicate u[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT,
                                       LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
  return is_signed ? s[p] : u[p];
}

/* A float op on one element of dtype dt (f32 or f64). */
static LLVMValueRef float_op(cg_ctx *c, const ir_op *op, tk_dtype dt, LLVMValueRef *a) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef t = LLVMTypeOf(a[0]);
  if (op->opc == IR_EXP2 && op->attr) return cg_exp2_ftz(c, a[0]);
  if (op->opc == IR_ERFC) return cg_erfc(c, op, dt, a[0]);
  LLVMValueRef math = cg_math(c, op->opc, op->attr == 1 && ir_op_has_accurate(op->opc), dt, a);
  if (math) return math;
  switch (op->opc) {
  case IR_NEG: return LLVMBuildFNeg(b, a[0], "");
  case IR_ADD: return LLVMBuildFAdd(b, a[0], a[1], "");
  case IR_SUB: return LLVMBuildFSub(b, a[0], a[1], "");
  case IR_MUL: return LLVMBuildFMul(b, a[0], a[1], "");
  case IR_DIV: return LLVMBuildFDiv(b, a[0], a[1], "");
  case IR_REM: return cg_call(c, dt == TK_F32 ? "__nv_fmodf" : "__nv_fmod", t, a, 2);
  case IR_MIN: return cg_combine(c, IR_RED_MIN, dt, a[0], a[1]);
  case IR_MAX: return cg_combine(c, IR_RED_MAX, dt, a[0], a[1]);
  case IR_FMA: return cg_intrinsic(c, "llvm.fma", &t, 1, a, 3);
  case IR_ABS: return cg_intrinsic(c, "llvm.fabs", &t, 1, a, 1);
  case IR_CMP: return LLVMBuildFCmp(b, fcmp_pred(op->attr), a[0], a[1], "");
  case IR_SIGMOID: { /* 1 / (1 + exp(-x)) */
    LLVMValueRef one = LLVMConstReal(t, 1.0);
    LLVMValueRef neg = LLVMBuildFNeg(b, a[0], "");
    LLVMValueRef e = cg_math(c, IR_EXP, op->attr == 1, dt, &neg);
    return LLVMBuildFDiv(b, one, LLVMBuildFAdd(b, one, e, ""), "");
  }
  default: return NULL;
  }
}

/* A shift as the interpreter defines it (interp/numeric.c, ip_arith): an amount of the
 * width or more, read as unsigned, gives 0, or for >> of a signed value its sign. LLVM
 * makes such a shift poison (seen by tkdiff as garbage in later arithmetic); PTX's own
 * shl/shr clamp the amount the same way, so the select costs little. */
static LLVMValueRef shift(cg_ctx *c, ir_opcode opc, bool sgn, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef t = LLVMTypeOf(x);
  unsigned w = LLVMGetIntTypeWidth(t);
  bool safe = LLVMIsAConstantInt(y) && LLVMConstIntGetZExtValue(y) < w;
  LLVMValueRef big = safe ? NULL : LLVMBuildICmp(b, LLVMIntUGE, y, LLVMConstInt(t, w, false), "");
  if (opc == IR_SHR && sgn) /* by w - 1 instead: every bit a copy of the sign */
    return LLVMBuildAShr(b, x, big ? LLVMBuildSelect(b, big, LLVMConstInt(t, w - 1, false), y, "") : y, "");
  LLVMValueRef r = opc == IR_SHL ? LLVMBuildShl(b, x, y, "") : LLVMBuildLShr(b, x, y, "");
  return big ? LLVMBuildSelect(b, big, LLVMConstNull(t), r, "") : r;
}

/* Signed / and % as the language defines them: INT_MIN / -1 wraps to INT_MIN and
 * INT_MIN % -1 is 0 (LLVM's sdiv/srem make the overflow undefined behaviour); a divisor
 * of -1 is replaced by 1 and the result by -x or 0. */
static LLVMValueRef signed_div(cg_ctx *c, ir_opcode opc, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef t = LLVMTypeOf(x);
  if (LLVMIsAConstantInt(y) && LLVMConstIntGetSExtValue(y) != -1)
    return opc == IR_DIV ? LLVMBuildSDiv(b, x, y, "") : LLVMBuildSRem(b, x, y, "");
  LLVMValueRef m1 = LLVMBuildICmp(b, LLVMIntEQ, y, LLVMConstAllOnes(t), "");
  LLVMValueRef d = LLVMBuildSelect(b, m1, LLVMConstInt(t, 1, false), y, "");
  if (opc == IR_DIV) return LLVMBuildSelect(b, m1, LLVMBuildNeg(b, x, ""), LLVMBuildSDiv(b, x, d, ""), "");
  return LLVMBuildSelect(b, m1, LLVMConstNull(t), LLVMBuildSRem(b, x, d, ""), "");
}

/* An integer (or i1) op on one element of dtype dt. */
static LLVMValueRef int_op(cg_ctx *c, const ir_op *op, tk_dtype dt, LLVMValueRef *a) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef t = LLVMTypeOf(a[0]);
  bool sgn = ir_dtype_is_signed(dt);
  switch (op->opc) {
  case IR_NEG: return LLVMBuildNeg(b, a[0], "");
  case IR_NOT: return LLVMBuildNot(b, a[0], "");
  case IR_ADD: return LLVMBuildAdd(b, a[0], a[1], "");
  case IR_SUB: return LLVMBuildSub(b, a[0], a[1], "");
  case IR_MUL: return LLVMBuildMul(b, a[0], a[1], "");
  case IR_DIV: return sgn ? signed_div(c, IR_DIV, a[0], a[1]) : LLVMBuildUDiv(b, a[0], a[1], "");
  case IR_REM: return sgn ? signed_div(c, IR_REM, a[0], a[1]) : LLVMBuildURem(b, a[0], a[1], "");
  case IR_AND: return LLVMBuildAnd(b, a[0], a[1], "");
  case IR_OR: return LLVMBuildOr(b, a[0], a[1], "");
  case IR_XOR: return LLVMBuildXor(b, a[0], a[1], "");
  case IR_SHL: case IR_SHR: return shift(c, op->opc, sgn, a[0], a[1]);
  case IR_MIN: return cg_combine(c, IR_RED_MIN, dt, a[0], a[1]);
  case IR_MAX: return cg_combine(c, IR_RED_MAX, dt, a[0], a[1]);
  case IR_FMA: return LLVMBuildAdd(b, LLVMBuildMul(b, a[0], a[1], ""), a[2], "");
  case IR_CMP: return LLVMBuildICmp(b, icmp_pred(op->attr, sgn), a[0], a[1], "");
  case IR_ABS: {
    if (!sgn) return a[0];
    LLVMValueRef args[2] = {a[0], LLVMConstInt(LLVMInt1TypeInContext(c->llc), 0, false)};
    return cg_intrinsic(c, "llvm.abs", &t, 1, args, 2);
  }
  default: return cg_int_math(c, op->opc, dt, a);
  }
}

static LLVMValueRef addptr(cg_ctx *c, const ir_op *op, LLVMValueRef p, LLVMValueRef off) {
  tk_dtype odt = ir_type_elem(op->operands[1]->type)->dtype;
  off = cg_convert(c, off, odt, ir_dtype_is_signed(odt) ? TK_I64 : TK_U64);
  LLVMTypeRef et = cg_mem_type(c, ir_type_elem(op->operands[0]->type)->elem->dtype);
  return LLVMBuildGEP2(c->b, et, p, &off, 1, "");
}

/* Whether op's result is a 16-bit float that element() leaves in f32, for
 * cg_emit_elementwise to round two slots at a time: half arithmetic, and casts to a half
 * from f32, a half or an integer (the same single rounding as cg_convert's: wide integers
 * reach bf16 through f32_odd). */
static bool rounds_later(const ir_op *op) {
  tk_dtype in = ir_type_elem(op->operands[0]->type)->dtype;
  tk_dtype out = ir_type_elem(op->results[0]->type)->dtype;
  if (!is_half(out)) return false;
  if (op->opc == IR_CAST) return in != out && (in == TK_F32 || is_half(in) || ir_dtype_is_int(in));
  return op->opc != IR_SELECT && op->opc != IR_CMP;
}

/* One element of op's result from its operands' elements a; in f32 when
 * rounds_later(op). */
static LLVMValueRef element(cg_ctx *c, const ir_op *op, LLVMValueRef *a) {
  tk_dtype in = ir_type_elem(op->operands[0]->type)->dtype;
  tk_dtype out = ir_type_elem(op->results[0]->type)->dtype;
  bool defer = rounds_later(op);
  switch (op->opc) {
  case IR_CAST:
    if (defer && out == TK_BF16 && bf16_needs_odd(in)) return f32_odd(c, a[0], in);
    return cg_convert(c, a[0], in, defer ? TK_F32 : out);
  case IR_SELECT: return LLVMBuildSelect(c->b, a[0], a[1], a[2], "");
  case IR_ADDPTR: return addptr(c, op, a[0], a[1]);
  default: break;
  }
  if (in == TK_PTR && op->opc == IR_CMP) return int_op(c, op, TK_U64, a);
  if (ir_dtype_is_int(in)) return int_op(c, op, in, a);
  if (!is_half(in)) return float_op(c, op, in, a);
  LLVMValueRef w[3];
  for (int i = 0; i < op->noperands; i++) w[i] = LLVMBuildFPExt(c->b, a[i], f32(c), "");
  return float_op(c, op, TK_F32, w);
}

/* The f32 values lo and hi rounded to the half dtype dt by one cvt.rn.{f16,bf16}x2.f32
 * (sm_80+, which every arch tk targets has); it rounds each element exactly as the
 * scalar cvt.rn does, in half the instructions, and leaves the pair packed as a store
 * wants it. LLVM 19 never forms it from two scalar fptruncs. */
static void round_pair(cg_ctx *c, tk_dtype dt, LLVMValueRef *lo, LLVMValueRef *hi) {
  LLVMTypeRef ht = cg_dtype_type(c, dt);
  LLVMValueRef r = cg_ptx_cvt_rn_x2(c, dt, *hi, *lo);
  LLVMValueRef v = LLVMBuildBitCast(c->b, r, LLVMVectorType(ht, 2), "");
  *lo = LLVMBuildExtractElement(c->b, v, cg_i32(c, 0), "");
  *hi = LLVMBuildExtractElement(c->b, v, cg_i32(c, 1), "");
}

/* Rounds the n f32 slots x to the half dtype dt, adjacent slots in pairs (the pairs a
 * vector store packs); constants stay scalar so that they still fold. */
static void round_slots(cg_ctx *c, tk_dtype dt, LLVMValueRef *x, int n) {
  LLVMTypeRef ht = cg_dtype_type(c, dt);
  int j = 0;
  for (; j + 1 < n; j += 2) {
    if (LLVMIsConstant(x[j]) && LLVMIsConstant(x[j + 1])) {
      x[j] = LLVMBuildFPTrunc(c->b, x[j], ht, "");
      x[j + 1] = LLVMBuildFPTrunc(c->b, x[j + 1], ht, "");
    } else {
      round_pair(c, dt, &x[j], &x[j + 1]);
    }
  }
  if (j < n) x[j] = LLVMBuildFPTrunc(c->b, x[j], ht, "");
}

void cg_emit_elementwise(cg_ctx *c, const ir_op *op) {
  const ir_value *res = op->results[0];
  cg_layout l = cg_layout_of(c, res->type);
  LLVMValueRef *s = cg_slots(c, l.per);
  SU_ASSERT(op->noperands <= 3);
  /* Operands arrive in the result's layout (the tiling pass makes them agree; IR that
   * disagrees is still compiled, through a conversion). */
  cg_val in[3];
  for (int i = 0; i < op->noperands; i++) in[i] = cg_get_in(c, op->operands[i], &l);
  /* A value the axis facts prove constant over a group of a thread's slots (a mask
   * `cols < n` over each vector) is computed once per group. */
  int g = cg_layout_group(&l, cg_axis_of(c, res).constancy);
  for (int j = 0; j < l.per; j++) {
    if (j % g) {
      s[j] = s[j - j % g];
      continue;
    }
    LLVMValueRef a[3];
    for (int i = 0; i < op->noperands; i++) a[i] = in[i].v[in[i].n == 1 ? 0 : j];
    s[j] = element(c, op, a);
    if (!s[j]) {
      char what[64];
      snprintf(what, sizeof what, "'%s' on %s", ir_op_info(op->opc)->name,
               ir_dtype_name(ir_type_elem(op->operands[0]->type)->dtype));
      cg_unsupported(c, op, what);
      return;
    }
  }
  if (rounds_later(op)) round_slots(c, ir_type_elem(res->type)->dtype, s, l.per);
  cg_set(c, res, s, l.per);
}
