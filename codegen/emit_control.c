/* Structured control flow → LLVM CFG. A loop-carried tile becomes one phi per slot. The
 * loop runs while iv < ub for a positive step and while iv > ub for a negative one (a
 * constant step folds the test away). */
#include "cg.h"

/* Phis in the current block for the slots of v's type, one incoming edge from `from`. */
static LLVMValueRef *phis_for(cg_ctx *c, const ir_value *v, const ir_value *init,
                              LLVMBasicBlockRef from, int *n) {
  cg_layout l = cg_layout_of(c, v->type);
  LLVMValueRef *s = cg_slots(c, l.per);
  for (int j = 0; j < l.per; j++) {
    s[j] = LLVMBuildPhi(c->b, cg_type(c, v->type), "");
    if (init) {
      LLVMValueRef x = cg_slot(c, init, j);
      LLVMAddIncoming(s[j], &x, &from, 1);
    }
  }
  *n = l.per;
  return s;
}

static void add_incoming(cg_ctx *c, cg_val phis, const ir_value *v, LLVMBasicBlockRef from) {
  for (int j = 0; j < phis.n; j++) {
    LLVMValueRef x = cg_slot(c, v, j);
    LLVMAddIncoming(phis.v[j], &x, &from, 1);
  }
}

static void emit_for(cg_ctx *c, const ir_op *op) {
  const ir_block *body = op->regions[0];
  tk_dtype it = op->operands[0]->type->dtype;
  LLVMValueRef ub = cg_slot(c, op->operands[1], 0);
  LLVMValueRef step = cg_slot(c, op->operands[2], 0);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef head = cg_block(c, "for.head"), loop = cg_block(c, "for.body");
  LLVMBasicBlockRef exit = cg_block(c, "for.exit");
  LLVMBuildBr(c->b, head);

  LLVMPositionBuilderAtEnd(c->b, head);
  int ncarried = body->nargs;
  cg_val *phis = SU_NEW_ARRAY(c->arena, cg_val, ncarried);
  for (int i = 0; i < ncarried; i++) {
    const ir_value *init = i == 0 ? op->operands[0] : op->operands[2 + i];
    phis[i].v = phis_for(c, body->args[i], init, pre, &phis[i].n);
    cg_set(c, body->args[i], phis[i].v, phis[i].n);
  }
  LLVMValueRef iv = phis[0].v[0];
  LLVMValueRef go;
  if (ir_dtype_is_signed(it)) {
    LLVMValueRef up = LLVMBuildICmp(c->b, LLVMIntSGT, step, LLVMConstNull(LLVMTypeOf(step)), "");
    go = LLVMBuildSelect(c->b, up, LLVMBuildICmp(c->b, LLVMIntSLT, iv, ub, ""),
                         LLVMBuildICmp(c->b, LLVMIntSGT, iv, ub, ""), "");
  } else {
    go = LLVMBuildICmp(c->b, LLVMIntULT, iv, ub, "");
  }
  LLVMBuildCondBr(c->b, go, loop, exit);

  LLVMPositionBuilderAtEnd(c->b, loop);
  const ir_op *yield = cg_emit_block(c, body);
  if (c->failed) return;
  SU_ASSERT(yield && yield->opc == IR_YIELD && yield->noperands == ncarried - 1);
  LLVMValueRef next = LLVMBuildAdd(c->b, iv, step, "iv.next");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
  LLVMAddIncoming(iv, &next, &latch, 1);
  for (int i = 1; i < ncarried; i++) add_incoming(c, phis[i], yield->operands[i - 1], latch);
  LLVMBuildBr(c->b, head);

  LLVMPositionBuilderAtEnd(c->b, exit);
  for (int i = 0; i < op->nresults; i++) cg_set(c, op->results[i], phis[i + 1].v, phis[i + 1].n);
}

static void emit_if(cg_ctx *c, const ir_op *op) {
  LLVMBasicBlockRef arms[2] = {cg_block(c, "if.then"), cg_block(c, "if.else")};
  LLVMBasicBlockRef join = cg_block(c, "if.join");
  LLVMBuildCondBr(c->b, cg_slot(c, op->operands[0], 0), arms[0], arms[1]);
  const ir_op *yields[2];
  LLVMBasicBlockRef ends[2];
  for (int r = 0; r < 2; r++) {
    LLVMPositionBuilderAtEnd(c->b, arms[r]);
    yields[r] = r < op->nregions ? cg_emit_block(c, op->regions[r]) : NULL;
    if (c->failed) return;
    SU_ASSERT(op->nresults == 0 || (yields[r] && yields[r]->noperands == op->nresults));
    ends[r] = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, join);
  }
  LLVMPositionBuilderAtEnd(c->b, join);
  for (int i = 0; i < op->nresults; i++) {
    int n;
    LLVMValueRef *s = phis_for(c, op->results[i], NULL, NULL, &n);
    for (int r = 0; r < 2; r++) add_incoming(c, (cg_val){s, n}, yields[r]->operands[i], ends[r]);
    cg_set(c, op->results[i], s, n);
  }
}

void cg_emit_control(cg_ctx *c, const ir_op *op) {
  if (op->opc == IR_FOR)
    emit_for(c, op);
  else
    emit_if(c, op);
}
