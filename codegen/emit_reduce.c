/* Reductions along an axis (reduce sum/max/min, argreduce max/min): each thread folds its
 * own slots along the axis, the lanes spread along it fold with butterfly shuffles (every
 * lane ends with the warp's value), and the warps spread along it meet in shared memory,
 * where every thread folds the per-warp values in the same order, so all replicas agree
 * bit for bit. The result lands in the slice of the operand's layout without the axis (a
 * scalar for a 1-D operand). Replicas contribute the identity. argreduce carries
 * (value, index) pairs; a pair wins when its value is greater (max) or smaller (min), or
 * is the first NaN, ties going to the smaller index: the interpreter's "first extreme".
 * warp_any is the warp's vote on a tile of i1. */
#include "cg.h"

#include <math.h>

static LLVMValueRef identity(cg_ctx *c, ir_reduce_kind k, tk_dtype dt) {
  LLVMTypeRef t = cg_dtype_type(c, dt);
  /* -0.0, not 0.0: the identity of IEEE addition (-0 + -0 is -0; 0 + -0 would be 0) */
  if (k == IR_RED_SUM) return ir_dtype_is_float(dt) ? LLVMConstReal(t, -0.0) : LLVMConstNull(t);
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

LLVMValueRef cg_shfl_xor(cg_ctx *c, LLVMValueRef x, int lane_xor) {
  LLVMBuilderRef b = c->b;
  LLVMTypeRef t = LLVMTypeOf(x), i32 = LLVMInt32TypeInContext(c->llc);
  if (LLVMGetTypeKind(t) == LLVMFloatTypeKind) return shfl32(c, x, lane_xor);
  bool is_ptr = LLVMGetTypeKind(t) == LLVMPointerTypeKind;
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(c->mod);
  unsigned bits = is_ptr ? 64 : (unsigned)LLVMSizeOfTypeInBits(td, t);
  LLVMTypeRef it = LLVMIntTypeInContext(c->llc, bits);
  LLVMValueRef bitsv = is_ptr ? LLVMBuildPtrToInt(b, x, it, "") : LLVMBuildBitCast(b, x, it, "");
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
  return is_ptr ? LLVMBuildIntToPtr(b, r, t, "") : LLVMBuildBitCast(b, r, t, "");
}

/* A partial result: the value, and for argreduce its index along the axis. */
typedef struct {
  LLVMValueRef v, i;
} part;

typedef struct {
  const ir_op *op;
  ir_reduce_kind k;
  tk_dtype dt; /* what values fold in */
  bool arg;
} reducer;

/* argreduce: does b beat a? */
static LLVMValueRef beats(cg_ctx *c, const reducer *r, part a, part b) {
  LLVMBuilderRef bl = c->b;
  bool max = r->k == IR_RED_MAX;
  LLVMValueRef lower = LLVMBuildICmp(bl, LLVMIntULT, b.i, a.i, "");
  if (!ir_dtype_is_float(r->dt)) {
    bool sg = ir_dtype_is_signed(r->dt);
    LLVMIntPredicate p = max ? (sg ? LLVMIntSGT : LLVMIntUGT) : (sg ? LLVMIntSLT : LLVMIntULT);
    LLVMValueRef gt = LLVMBuildICmp(bl, p, b.v, a.v, "");
    LLVMValueRef eq = LLVMBuildICmp(bl, LLVMIntEQ, b.v, a.v, "");
    return LLVMBuildOr(bl, gt, LLVMBuildAnd(bl, eq, lower, ""), "");
  }
  LLVMValueRef an = LLVMBuildFCmp(bl, LLVMRealUNO, a.v, a.v, "");
  LLVMValueRef bn = LLVMBuildFCmp(bl, LLVMRealUNO, b.v, b.v, "");
  LLVMValueRef gt = LLVMBuildFCmp(bl, max ? LLVMRealOGT : LLVMRealOLT, b.v, a.v, "");
  LLVMValueRef eq = LLVMBuildFCmp(bl, LLVMRealOEQ, b.v, a.v, "");
  LLVMValueRef nan_wins = LLVMBuildAnd(bl, bn, LLVMBuildOr(bl, LLVMBuildNot(bl, an, ""), lower, ""), "");
  LLVMValueRef wins = LLVMBuildOr(bl, gt, LLVMBuildAnd(bl, eq, lower, ""), "");
  return LLVMBuildOr(bl, nan_wins, wins, "");
}

static part combine(cg_ctx *c, const reducer *r, part a, part b) {
  if (!r->arg) return (part){cg_combine(c, r->k, r->dt, a.v, b.v), NULL};
  LLVMValueRef w = beats(c, r, a, b);
  return (part){LLVMBuildSelect(c->b, w, b.v, a.v, ""), LLVMBuildSelect(c->b, w, b.i, a.i, "")};
}

static part identity_part(cg_ctx *c, const reducer *r) {
  return (part){identity(c, r->k, r->dt), r->arg ? cg_i32(c, INT32_MAX) : NULL};
}

/* Folds the values of the warps along base dim d through shared memory: lane 0 of each
 * such row of lanes writes its part at [warp coordinate][result index], then every thread
 * folds the warps' parts in warp order. */
static void across_warps(cg_ctx *c, const reducer *r, const cg_layout *l, int d,
                         const cg_layout *s, part *acc) {
  int warps = l->wpc[d], n = s->numel;
  LLVMTypeRef vt = LLVMTypeOf(cg_to_smem(c, acc[0].v)), i32 = LLVMInt32TypeInContext(c->llc);
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(c->mod);
  int vbytes = (int)LLVMABISizeOfType(td, vt);
  int vsize = (warps * n * vbytes + 3) / 4 * 4; /* the indices follow, 4-byte aligned */
  LLVMValueRef base = cg_smem_take(c, vsize + (r->arg ? warps * n * 4 : 0));
  LLVMValueRef ibase = LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->llc), base,
                                             (LLVMValueRef[]){cg_i32(c, vsize)}, 1, "");
  LLVMValueRef *idx = cg_slots(c, s->per);
  for (int js = 0; js < s->per; js++) idx[js] = cg_layout_index(c, s, js);
  LLVMValueRef row = LLVMBuildMul(c->b, cg_warp_coord(c, l, d), cg_i32(c, n), "");
  LLVMValueRef lane0 = LLVMBuildICmp(c->b, LLVMIntEQ, cg_lane_coord(c, l, d), cg_i32(c, 0), "");
  LLVMBasicBlockRef put = cg_block(c, "red.put"), join = cg_block(c, "red.join");
  LLVMBuildCondBr(c->b, lane0, put, join);
  LLVMPositionBuilderAtEnd(c->b, put);
  for (int js = 0; js < s->per; js++) {
    LLVMValueRef at = LLVMBuildAdd(c->b, row, idx[js], "");
    LLVMBuildStore(c->b, cg_to_smem(c, acc[js].v), cg_smem_at(c, base, vt, at));
    if (r->arg) LLVMBuildStore(c->b, acc[js].i, cg_smem_at(c, ibase, i32, at));
  }
  LLVMBuildBr(c->b, join);
  LLVMPositionBuilderAtEnd(c->b, join);
  cg_barrier(c);
  LLVMTypeRef reg = LLVMTypeOf(acc[0].v);
  for (int js = 0; js < s->per; js++) {
    part total = {NULL, NULL};
    for (int w = 0; w < warps; w++) {
      LLVMValueRef at = LLVMBuildAdd(c->b, idx[js], cg_i32(c, w * n), "");
      part x = {cg_from_smem(c, LLVMBuildLoad2(c->b, vt, cg_smem_at(c, base, vt, at), ""), reg),
                r->arg ? LLVMBuildLoad2(c->b, i32, cg_smem_at(c, ibase, i32, at), "") : NULL};
      total = w ? combine(c, r, total, x) : x;
    }
    acc[js] = total;
  }
}

/* warp_any: this thread's elements or'ed, then the warp's vote. The layout's replicas
 * hold copies of their elements, which change nothing in an or. */
static void emit_warp_any(cg_ctx *c, const ir_op *op) {
  cg_val x = cg_get(c, op->operands[0]);
  LLVMValueRef any = x.v[0];
  for (int j = 1; j < x.n; j++) any = LLVMBuildOr(c->b, any, x.v[j], "");
  LLVMValueRef args[2] = {cg_i32(c, -1), any};
  LLVMValueRef *r = cg_slots(c, 1);
  r[0] = cg_intrinsic(c, "llvm.nvvm.vote.any.sync", NULL, 0, args, 2);
  cg_set(c, op->results[0], r, 1);
}

void cg_emit_reduce(cg_ctx *c, const ir_op *op) {
  if (op->opc == IR_WARP_ANY) {
    emit_warp_any(c, op);
    return;
  }
  const ir_value *src = op->operands[0], *res = op->results[0];
  int axis = (int)op->attr2;
  reducer r = {op, (ir_reduce_kind)op->attr, TK_F32, op->opc == IR_ARGREDUCE};
  tk_dtype in = ir_type_elem(src->type)->dtype, out = ir_type_elem(res->type)->dtype;
  /* 16-bit floats fold in f32 (max/min and comparisons exactly so; sums more accurately). */
  tk_dtype fold = r.arg ? in : out;
  r.dt = fold == TK_F16 || fold == TK_BF16 ? TK_F32 : fold;
  cg_layout l = cg_layout_of(c, src->type);
  cg_layout s = cg_layout_slice(&l, axis);
  cg_val x = cg_get(c, src);
  part *acc = SU_NEW_ARRAY(c->arena, part, s.per);
  for (int js = 0; js < s.per; js++) {
    for (int ka = 0; ka < l.ext[axis]; ka++) {
      int j = cg_layout_slice_slot(&l, &s, axis, js, ka);
      part p = {cg_convert(c, x.v[x.n == 1 ? 0 : j], in, r.dt),
                r.arg ? cg_layout_coord(c, &l, j, axis) : NULL};
      LLVMValueRef own = cg_layout_in_range(c, &l, j, axis);
      if (own) {
        part id = identity_part(c, &r);
        p.v = LLVMBuildSelect(c->b, own, p.v, id.v, "");
        if (r.arg) p.i = LLVMBuildSelect(c->b, own, p.i, id.i, "");
      }
      acc[js] = ka ? combine(c, &r, acc[js], p) : p;
    }
  }
  int d = l.base[axis];
  for (int m = 1; m < l.tpw[d]; m *= 2)
    for (int js = 0; js < s.per; js++) {
      part o = {cg_shfl_xor(c, acc[js].v, m * l.lstride[d]),
                r.arg ? cg_shfl_xor(c, acc[js].i, m * l.lstride[d]) : NULL};
      acc[js] = combine(c, &r, acc[js], o);
    }
  if (l.wpc[d] > 1) across_warps(c, &r, &l, d, &s, acc);
  LLVMValueRef *v = cg_slots(c, s.per);
  for (int js = 0; js < s.per; js++) v[js] = r.arg ? acc[js].i : cg_convert(c, acc[js].v, r.dt, out);
  cg_layout rl = cg_layout_of(c, res->type);
  cg_val y = cg_relayout(c, (cg_val){v, s.per}, &s, &rl);
  cg_set(c, res, y.v, y.n);
}
