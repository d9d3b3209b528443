/* Reduction of a 1-D tile to a scalar: each thread folds its own slots, a warp folds its
 * threads with butterfly shuffles (so every lane ends with the warp's value), and the
 * warps meet in shared memory, where every thread folds the per-warp values in the same
 * order, so all threads agree on the result bit for bit. Replicas contribute the
 * identity. */
#include "cg.h"

#include <math.h>

static LLVMValueRef identity(cg_ctx *c, ir_reduce_kind k, tk_dtype dt) {
  LLVMTypeRef t = cg_dtype_type(c, dt);
  if (k == IR_RED_SUM) return LLVMConstNull(t);
  bool max = k == IR_RED_MAX;
  if (ir_dtype_is_float(dt)) return LLVMConstReal(t, max ? -INFINITY : INFINITY);
  if (dt == TK_I1 || !ir_dtype_is_signed(dt)) return max ? LLVMConstNull(t) : LLVMConstAllOnes(t);
  unsigned long long top = 1ull << (ir_dtype_bits(dt) - 1);
  return LLVMConstInt(t, max ? top : top - 1, false);
}

/* A 32-bit butterfly shuffle across the full warp. */
static LLVMValueRef shfl32(cg_ctx *c, LLVMValueRef x, int lane_xor) {
  bool fl = LLVMGetTypeKind(LLVMTypeOf(x)) == LLVMFloatTypeKind;
  LLVMValueRef args[4] = {cg_i32(c, -1), x, cg_i32(c, lane_xor), cg_i32(c, CG_WARP - 1)};
  return cg_intrinsic(c, fl ? "llvm.nvvm.shfl.sync.bfly.f32" : "llvm.nvvm.shfl.sync.bfly.i32",
                      NULL, 0, args, 4);
}

/* The value of x held by lane (this lane ^ lane_xor), for any dtype. */
static LLVMValueRef shfl(cg_ctx *c, tk_dtype dt, LLVMValueRef x, int lane_xor) {
  if (dt == TK_F32) return shfl32(c, x, lane_xor);
  LLVMBuilderRef b = c->b;
  LLVMTypeRef t = LLVMTypeOf(x), i32 = LLVMInt32TypeInContext(c->llc);
  int bits = ir_dtype_bits(dt);
  LLVMTypeRef it = LLVMIntTypeInContext(c->llc, (unsigned)bits);
  LLVMValueRef bitsv = LLVMBuildBitCast(b, x, it, "");
  LLVMValueRef r;
  if (bits <= 32) {
    r = shfl32(c, LLVMBuildZExt(b, bitsv, i32, ""), lane_xor);
    r = LLVMBuildTrunc(b, r, it, "");
  } else {
    LLVMValueRef k32 = LLVMConstInt(it, 32, false);
    LLVMValueRef lo = shfl32(c, LLVMBuildTrunc(b, bitsv, i32, ""), lane_xor);
    LLVMValueRef hi = shfl32(c, LLVMBuildTrunc(b, LLVMBuildLShr(b, bitsv, k32, ""), i32, ""), lane_xor);
    r = LLVMBuildOr(b, LLVMBuildZExt(b, lo, it, ""),
                    LLVMBuildShl(b, LLVMBuildZExt(b, hi, it, ""), k32, ""), "");
  }
  return LLVMBuildBitCast(b, r, t, "");
}

/* Folds the per-warp values through shared memory; every thread gets the total. */
static LLVMValueRef across_warps(cg_ctx *c, ir_reduce_kind k, tk_dtype dt, LLVMValueRef acc) {
  int warps = c->threads / CG_WARP;
  LLVMTypeRef mt = cg_mem_type(c, dt);
  LLVMValueRef smem = cg_shared_array(c, mt, warps);
  LLVMTypeRef at = LLVMArrayType2(mt, (uint64_t)warps);
  LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, cg_i32(c, CG_WARP - 1), "lane");
  LLVMValueRef warp = LLVMBuildLShr(c->b, c->tid, cg_i32(c, 5), "warp");
  LLVMBasicBlockRef put = cg_block(c, "red.put"), join = cg_block(c, "red.join");
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, lane, cg_i32(c, 0), ""), put, join);
  LLVMPositionBuilderAtEnd(c->b, put);
  LLVMValueRef idx[2] = {cg_i32(c, 0), warp};
  LLVMValueRef slot = LLVMBuildInBoundsGEP2(c->b, at, smem, idx, 2, "");
  LLVMBuildStore(c->b, dt == TK_I1 ? LLVMBuildZExt(c->b, acc, mt, "") : acc, slot);
  LLVMBuildBr(c->b, join);
  LLVMPositionBuilderAtEnd(c->b, join);
  cg_barrier(c);
  LLVMValueRef total = NULL;
  for (int w = 0; w < warps; w++) {
    LLVMValueRef wi[2] = {cg_i32(c, 0), cg_i32(c, w)};
    LLVMValueRef x = LLVMBuildLoad2(c->b, mt, LLVMBuildInBoundsGEP2(c->b, at, smem, wi, 2, ""), "");
    if (dt == TK_I1) x = LLVMBuildTrunc(c->b, x, LLVMInt1TypeInContext(c->llc), "");
    total = total ? cg_combine(c, k, dt, total, x) : x;
  }
  cg_barrier(c); /* a later reduction (next loop iteration) reuses the array */
  return total;
}

void cg_emit_reduce(cg_ctx *c, const ir_op *op) {
  const ir_value *src = op->operands[0], *res = op->results[0];
  if (res->type->kind == IR_TILE) {
    cg_unsupported(c, op, "a reduction to a tile");
    return;
  }
  ir_reduce_kind k = (ir_reduce_kind)op->attr;
  tk_dtype in = ir_type_elem(src->type)->dtype, out = res->type->dtype;
  /* 16-bit floats fold in f32 (max/min exactly so; sums more accurately). */
  tk_dtype dt = out == TK_F16 || out == TK_BF16 ? TK_F32 : out;
  cg_layout l = cg_layout_of(c, src->type);
  LLVMValueRef acc = NULL;
  for (int j = 0; j < l.per; j++) {
    LLVMValueRef x = cg_convert(c, cg_slot(c, src, j), in, dt);
    acc = acc ? cg_combine(c, k, dt, acc, x) : x;
  }
  LLVMValueRef owner = cg_layout_owner(c, &l);
  if (owner) acc = LLVMBuildSelect(c->b, owner, acc, identity(c, k, dt), "");
  for (int lane_xor = CG_WARP / 2; lane_xor >= 1; lane_xor /= 2)
    acc = cg_combine(c, k, dt, acc, shfl(c, dt, acc, lane_xor));
  if (c->threads > CG_WARP) acc = across_warps(c, k, dt, acc);
  LLVMValueRef *s = cg_slots(c, 1);
  s[0] = cg_convert(c, acc, dt, out);
  cg_set(c, res, s, 1);
}
