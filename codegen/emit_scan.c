/* scan (cumsum) along an axis, through shared memory: the tile is stored by logical
 * index, then each line along the axis is accumulated in place by one thread, in index
 * order and rounding to the element type at each step, exactly as the interpreter does
 * (so results agree bit for bit), then read back in the result's layout. A line costs its
 * length in sequential steps: simple, and fine for the short scans kernels do. */
#include "cg.h"

/* A counted loop `for (i = from; i < to; i += step)` around the code body emits; returns
 * after positioning the builder past the loop. */
typedef void (*loop_body)(cg_ctx *c, LLVMValueRef i, void *ctx);

static void counted_loop(cg_ctx *c, LLVMValueRef from, int to, int step, loop_body body, void *ctx) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef head = cg_block(c, "scan.head"), loop = cg_block(c, "scan.body");
  LLVMBasicBlockRef exit = cg_block(c, "scan.exit");
  LLVMBuildBr(c->b, head);
  LLVMPositionBuilderAtEnd(c->b, head);
  LLVMValueRef i = LLVMBuildPhi(c->b, LLVMInt32TypeInContext(c->llc), "");
  LLVMAddIncoming(i, &from, &pre, 1);
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntULT, i, cg_i32(c, to), ""), loop, exit);
  LLVMPositionBuilderAtEnd(c->b, loop);
  body(c, i, ctx);
  LLVMValueRef next = LLVMBuildAdd(c->b, i, cg_i32(c, step), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
  LLVMAddIncoming(i, &next, &latch, 1);
  LLVMBuildBr(c->b, head);
  LLVMPositionBuilderAtEnd(c->b, exit);
}

typedef struct {
  LLVMValueRef base;
  LLVMTypeRef mt, reg;
  tk_dtype dt, fold;
  int len, inner;
  LLVMValueRef first, acc; /* of the current line */
} scan_ctx;

static LLVMValueRef load_at(cg_ctx *c, scan_ctx *s, LLVMValueRef i) {
  LLVMValueRef v = LLVMBuildLoad2(c->b, s->mt, cg_smem_at(c, s->base, s->mt, i), "");
  return cg_from_smem(c, v, s->reg);
}

static void step(cg_ctx *c, LLVMValueRef k, void *ctx) {
  scan_ctx *s = ctx;
  LLVMValueRef at = LLVMBuildAdd(c->b, s->first, LLVMBuildMul(c->b, k, cg_i32(c, s->inner), ""), "");
  LLVMValueRef x = cg_convert(c, load_at(c, s, at), s->dt, s->fold);
  LLVMValueRef sum = cg_convert(c, cg_combine(c, IR_RED_SUM, s->fold, s->acc, x), s->fold, s->dt);
  LLVMBuildStore(c->b, cg_to_smem(c, sum), cg_smem_at(c, s->base, s->mt, at));
  s->acc = cg_convert(c, sum, s->dt, s->fold);
}

static void line(cg_ctx *c, LLVMValueRef ln, void *ctx) {
  scan_ctx *s = ctx;
  LLVMValueRef o = LLVMBuildUDiv(c->b, ln, cg_i32(c, s->inner), "");
  LLVMValueRef jj = LLVMBuildURem(c->b, ln, cg_i32(c, s->inner), "");
  s->first = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, o, cg_i32(c, s->len * s->inner), ""), jj, "");
  /* The running sum is a phi of the inner loop: built by hand around `step`. */
  LLVMValueRef acc0 = cg_convert(c, load_at(c, s, s->first), s->dt, s->fold);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef head = cg_block(c, "cumsum.head"), loop = cg_block(c, "cumsum.body");
  LLVMBasicBlockRef exit = cg_block(c, "cumsum.exit");
  LLVMBuildBr(c->b, head);
  LLVMPositionBuilderAtEnd(c->b, head);
  LLVMValueRef k = LLVMBuildPhi(c->b, LLVMInt32TypeInContext(c->llc), "");
  LLVMValueRef acc = LLVMBuildPhi(c->b, LLVMTypeOf(acc0), "");
  LLVMValueRef one = cg_i32(c, 1);
  LLVMAddIncoming(k, &one, &pre, 1);
  LLVMAddIncoming(acc, &acc0, &pre, 1);
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntULT, k, cg_i32(c, s->len), ""), loop, exit);
  LLVMPositionBuilderAtEnd(c->b, loop);
  s->acc = acc;
  step(c, k, s);
  LLVMValueRef next = LLVMBuildAdd(c->b, k, one, "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
  LLVMAddIncoming(k, &next, &latch, 1);
  LLVMAddIncoming(acc, &s->acc, &latch, 1);
  LLVMBuildBr(c->b, head);
  LLVMPositionBuilderAtEnd(c->b, exit);
}

void cg_emit_scan(cg_ctx *c, const ir_op *op) {
  const ir_value *src = op->operands[0], *res = op->results[0];
  const ir_type *t = src->type;
  int axis = (int)op->attr2;
  cg_layout l = cg_layout_of(c, t), rl = cg_layout_of(c, res->type);
  cg_val x = cg_get(c, src);
  scan_ctx s = {0};
  s.dt = ir_type_elem(t)->dtype;
  s.fold = s.dt == TK_F16 || s.dt == TK_BF16 ? TK_F32 : s.dt;
  s.reg = LLVMTypeOf(x.v[0]);
  s.mt = LLVMTypeOf(cg_to_smem(c, x.v[0]));
  s.len = t->shape[axis];
  s.inner = 1;
  for (int i = axis + 1; i < t->rank; i++) s.inner *= t->shape[i];
  int bytes = (int)LLVMABISizeOfType(LLVMGetModuleDataLayout(c->mod), s.mt);
  s.base = cg_smem_take(c, l.numel * bytes);
  for (int j = 0; j < l.per; j++)
    LLVMBuildStore(c->b, cg_to_smem(c, x.v[x.n == 1 ? 0 : j]),
                   cg_smem_at(c, s.base, s.mt, cg_layout_index(c, &l, j)));
  cg_barrier(c);
  counted_loop(c, c->tid, l.numel / s.len, c->threads, line, &s);
  cg_barrier(c);
  LLVMValueRef *out = cg_slots(c, rl.per);
  for (int j = 0; j < rl.per; j++) out[j] = load_at(c, &s, cg_layout_index(c, &rl, j));
  cg_set(c, res, out, rl.per);
}
