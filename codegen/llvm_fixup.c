/* Workarounds for LLVM 19's NVPTX back end, applied to the optimized module before the
 * PTX is emitted (cg_optimize). Found by tkdiff on the H200.
 *
 * - sitofp from i1 (which instcombine forms, e.g. from `0 - zext(b)` cast to a float)
 *   is selected as `selp.u32 1, 0` and cvt.rn.f32.s32: true becomes +1.0 where it is
 *   -1.0 (seed 5001717: `cols - (b / (rows + 1))` times a float came out negated). It is
 *   rewritten as the select it means, which the back end selects correctly.
 * - A vector load or store aligned below its size (the SLP vectorizer forms them, e.g.
 *   <16 x i8> at byte 7 of an i1 tile's relayout buffer) is selected as ld.v4.u32 at
 *   that address, a misaligned access that faults (seed 5005542: CUDA_ERROR_MISALIGNED_
 *   ADDRESS). It is split into accesses of its elements, which are aligned. */
#include "cg.h"

static LLVMValueRef splat(LLVMTypeRef t, double v) {
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return LLVMConstReal(t, v);
  unsigned n = LLVMGetVectorSize(t);
  LLVMValueRef e = LLVMConstReal(LLVMGetElementType(t), v), lanes[64];
  SU_ASSERT(n <= 64);
  for (unsigned i = 0; i < n; i++) lanes[i] = e;
  return LLVMConstVector(lanes, n);
}

static bool is_i1(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
  return LLVMGetTypeKind(t) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 1;
}

/* The store size of t in bytes. */
static unsigned bytes_of(cg_ctx *c, LLVMTypeRef t) {
  return (unsigned)LLVMStoreSizeOfType(LLVMGetModuleDataLayout(c->mod), t);
}

/* Whether the load or store i moves a vector aligned below its size. */
static bool misaligned_vector(cg_ctx *c, LLVMValueRef i, LLVMTypeRef *vt, LLVMValueRef *ptr) {
  LLVMOpcode op = LLVMGetInstructionOpcode(i);
  if (op != LLVMLoad && op != LLVMStore) return false;
  *vt = op == LLVMLoad ? LLVMTypeOf(i) : LLVMTypeOf(LLVMGetOperand(i, 0));
  *ptr = LLVMGetOperand(i, op == LLVMLoad ? 0 : 1);
  return LLVMGetTypeKind(*vt) == LLVMVectorTypeKind && LLVMGetAlignment(i) < bytes_of(c, *vt) &&
         !LLVMGetVolatile(i);
}

/* i, a load or store of vector type vt at ptr, as one access per element. */
static void split(cg_ctx *c, LLVMBuilderRef b, LLVMValueRef i, LLVMTypeRef vt, LLVMValueRef ptr) {
  LLVMTypeRef et = LLVMGetElementType(vt);
  unsigned n = LLVMGetVectorSize(vt), eb = bytes_of(c, et), align = LLVMGetAlignment(i);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c->llc);
  bool load = LLVMGetInstructionOpcode(i) == LLVMLoad;
  LLVMValueRef v = load ? LLVMGetUndef(vt) : LLVMGetOperand(i, 0);
  for (unsigned e = 0; e < n; e++) {
    LLVMValueRef idx = LLVMConstInt(i32, e, false);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(b, et, ptr, &idx, 1, "");
    unsigned a = align ? align : 1; /* the alignment of base + e * eb */
    while (a > 1 && (e * eb) % a) a /= 2;
    if (a > eb) a = eb;
    if (load) {
      LLVMValueRef x = LLVMBuildLoad2(b, et, p, "");
      LLVMSetAlignment(x, a);
      v = LLVMBuildInsertElement(b, v, x, idx, "");
    } else {
      LLVMSetAlignment(LLVMBuildStore(b, LLVMBuildExtractElement(b, v, idx, ""), p), a);
    }
  }
  if (load) LLVMReplaceAllUsesWith(i, v);
  LLVMInstructionEraseFromParent(i);
}

void cg_llvm_fixup(cg_ctx *c) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c->llc);
  for (LLVMValueRef f = LLVMGetFirstFunction(c->mod); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb), next; i; i = next) {
        next = LLVMGetNextInstruction(i);
        LLVMTypeRef vt;
        LLVMValueRef ptr;
        if (misaligned_vector(c, i, &vt, &ptr)) {
          LLVMPositionBuilderBefore(b, i);
          split(c, b, i, vt, ptr);
          continue;
        }
        if (LLVMGetInstructionOpcode(i) != LLVMSIToFP || !is_i1(LLVMTypeOf(LLVMGetOperand(i, 0)))) continue;
        LLVMPositionBuilderBefore(b, i);
        LLVMTypeRef t = LLVMTypeOf(i);
        LLVMValueRef r = LLVMBuildSelect(b, LLVMGetOperand(i, 0), splat(t, -1.0), splat(t, 0.0), "");
        LLVMReplaceAllUsesWith(i, r);
        LLVMInstructionEraseFromParent(i);
      }
  LLVMDisposeBuilder(b);
}
