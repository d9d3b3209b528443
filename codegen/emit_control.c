/* Structured control flow → LLVM CFG. A loop-carried tile becomes one phi per slot. The
 * loop runs while iv < ub for a positive step and while iv > ub for a negative one (a
 * constant step folds the test away). */
#include "cg.h"

/* The slots of v in the layout of `like` (a region argument or result of v's shape). */
static cg_val carried_in(cg_ctx *c, const ir_value *v, const ir_value *like) {
  cg_layout l = cg_layout_of(c, like->type);
  return cg_get_in(c, v, &l);
}

static void add_incoming(cg_val phis, cg_val x, LLVMBasicBlockRef from) {
  for (int j = 0; j < phis.n; j++) {
    LLVMValueRef v = x.v[x.n == 1 ? 0 : j];
    LLVMAddIncoming(phis.v[j], &v, &from, 1);
  }
}

/* Phis in the current block for the slots of v's type, with an incoming edge from `from`
 * when init is set. */
static cg_val phis_for(cg_ctx *c, const ir_value *v, const cg_val *init, LLVMBasicBlockRef from) {
  cg_layout l = cg_layout_of(c, v->type);
  cg_val s = {cg_slots(c, l.per), l.per};
  for (int j = 0; j < l.per; j++) s.v[j] = LLVMBuildPhi(c->b, cg_type(c, v->type), "");
  if (init) add_incoming(s, *init, from);
  return s;
}

static void emit_for(cg_ctx *c, const ir_op *op) {
  const ir_block *body = op->regions[0];
  tk_dtype it = op->operands[0]->type->dtype;
  LLVMValueRef ub = cg_slot(c, op->operands[1], 0);
  LLVMValueRef step = cg_slot(c, op->operands[2], 0);
  int ncarried = body->nargs;
  cg_val *inits = SU_NEW_ARRAY(c->arena, cg_val, ncarried);
  for (int i = 0; i < ncarried; i++)
    inits[i] = carried_in(c, i == 0 ? op->operands[0] : op->operands[2 + i], body->args[i]);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef head = cg_block(c, "for.head"), loop = cg_block(c, "for.body");
  LLVMBasicBlockRef exit = cg_block(c, "for.exit");
  LLVMBuildBr(c->b, head);

  LLVMPositionBuilderAtEnd(c->b, head);
  cg_val *phis = SU_NEW_ARRAY(c->arena, cg_val, ncarried);
  for (int i = 0; i < ncarried; i++) {
    phis[i] = phis_for(c, body->args[i], &inits[i], pre);
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
  if (op->attr == 1) go = LLVMBuildAnd(c->b, go, phis[1].v[0], ""); /* {while = 1} */
  LLVMBuildCondBr(c->b, go, loop, exit);

  LLVMPositionBuilderAtEnd(c->b, loop);
  int smem_before = c->smem_uses;
  const ir_op *yield = cg_emit_block(c, body);
  if (c->failed) return;
  SU_ASSERT(yield && yield->opc == IR_YIELD && yield->noperands == ncarried - 1);
  cg_val *next = SU_NEW_ARRAY(c->arena, cg_val, ncarried);
  for (int i = 1; i < ncarried; i++) next[i] = carried_in(c, yield->operands[i - 1], body->args[i]);
  cg_smem_region_end(c, smem_before);
  LLVMValueRef iv_next = LLVMBuildAdd(c->b, iv, step, "iv.next");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
  LLVMAddIncoming(iv, &iv_next, &latch, 1);
  for (int i = 1; i < ncarried; i++) add_incoming(phis[i], next[i], latch);
  LLVMBuildBr(c->b, head);

  LLVMPositionBuilderAtEnd(c->b, exit);
  /* A loop that ran no iteration skipped the latch's barrier. */
  cg_smem_region_end(c, smem_before);
  for (int i = 0; i < op->nresults; i++) cg_set(c, op->results[i], phis[i + 1].v, phis[i + 1].n);
}

/* `if likely` (docs/ir.md): branch weights that say the then arm is taken, so that
 * LLVM keeps the branch instead of computing the cold arm on every pass and selecting
 * (which is what the arm exists to avoid: unmask's else holds a select per element). */
static void cg_mark_likely(cg_ctx *c, LLVMValueRef br) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c->llc);
  LLVMMetadataRef md[3] = {LLVMMDStringInContext2(c->llc, "branch_weights", 14),
                           LLVMValueAsMetadata(LLVMConstInt(i32, 2000, false)),
                           LLVMValueAsMetadata(LLVMConstInt(i32, 1, false))};
  unsigned kind = LLVMGetMDKindIDInContext(c->llc, "prof", 4);
  LLVMSetMetadata(br, kind, LLVMMetadataAsValue(c->llc, LLVMMDNodeInContext2(c->llc, md, 3)));
}

static void emit_if(cg_ctx *c, const ir_op *op) {
  LLVMBasicBlockRef arms[2] = {cg_block(c, "if.then"), cg_block(c, "if.else")};
  LLVMBasicBlockRef join = cg_block(c, "if.join");
  LLVMValueRef br = LLVMBuildCondBr(c->b, cg_slot(c, op->operands[0], 0), arms[0], arms[1]);
  if (op->attr) cg_mark_likely(c, br);
  const ir_op *yields[2];
  LLVMBasicBlockRef ends[2];
  cg_val *vals[2];
  /* Each arm starts from the scratch half that follows the last one used before the if:
   * counting on from the then arm, the else arm's first relayout could take the half the
   * op before the if still reads from (tkdiff seed 5122301: a fast warp's relayout in the
   * else arm overwrote the scratch a slow warp was reading). */
  int smem_before = c->smem_uses, smem_after = smem_before;
  for (int r = 0; r < 2; r++) {
    LLVMPositionBuilderAtEnd(c->b, arms[r]);
    c->smem_uses = smem_before;
    yields[r] = r < op->nregions ? cg_emit_block(c, op->regions[r]) : NULL;
    if (c->smem_uses > smem_after) smem_after = c->smem_uses;
    if (c->failed) return;
    SU_ASSERT(op->nresults == 0 || (yields[r] && yields[r]->noperands == op->nresults));
    vals[r] = SU_NEW_ARRAY(c->arena, cg_val, op->nresults + 1);
    for (int i = 0; i < op->nresults; i++)
      vals[r][i] = carried_in(c, yields[r]->operands[i], op->results[i]);
    ends[r] = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, join);
  }
  LLVMPositionBuilderAtEnd(c->b, join);
  for (int i = 0; i < op->nresults; i++) {
    cg_val s = phis_for(c, op->results[i], NULL, NULL);
    for (int r = 0; r < 2; r++) add_incoming(s, vals[r][i], ends[r]);
    cg_set(c, op->results[i], s.v, s.n);
  }
  c->smem_uses = smem_after;
  cg_smem_region_end(c, smem_before);
}

void cg_emit_control(cg_ctx *c, const ir_op *op) {
  if (op->opc == IR_FOR)
    emit_for(c, op);
  else
    emit_if(c, op);
}
