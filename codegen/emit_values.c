/* Values that come from nowhere but the thread's position: constants, program ids,
 * arange, splat; the shape ops are relayout.c's. */
#include "cg.h"

static LLVMValueRef constant(cg_ctx *c, const ir_op *op) {
  const ir_type *e = ir_type_elem(op->results[0]->type);
  LLVMTypeRef t = cg_type(c, op->results[0]->type);
  if (e->kind == IR_PTR) return LLVMConstNull(t);
  if (ir_dtype_is_fp8(e->dtype)) /* rounded as the interpreter's constants: a NaN is 0x7f */
    return LLVMConstInt(t, ir_fp8_bits(e->dtype, ir_dtype_round(e->dtype, op->cval.f)), false);
  if (ir_dtype_is_float(e->dtype)) return LLVMConstReal(t, op->cval.f);
  return LLVMConstInt(t, (unsigned long long)op->cval.i, false);
}

static LLVMValueRef sreg(cg_ctx *c, const char *reg, int64_t axis) {
  char name[48];
  snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", reg, "xyz"[axis]);
  return cg_intrinsic(c, name, NULL, 0, NULL, 0);
}

static void fill(cg_ctx *c, const ir_value *res, LLVMValueRef x) {
  cg_layout l = cg_layout_of(c, res->type);
  LLVMValueRef *s = cg_slots(c, l.per);
  for (int j = 0; j < l.per; j++) s[j] = x;
  cg_set(c, res, s, l.per);
}

void cg_emit_value_op(cg_ctx *c, const ir_op *op) {
  const ir_value *res = op->results[0];
  switch (op->opc) {
  case IR_CONST: fill(c, res, constant(c, op)); return;
  /* a program run as a cluster (along x) is the cluster, not its CTA */
  case IR_PROGRAM_ID: fill(c, res, sreg(c, c->f->cluster && !op->attr ? "clusterid" : "ctaid", op->attr)); return;
  case IR_NUM_PROGRAMS: fill(c, res, sreg(c, c->f->cluster && !op->attr ? "nclusterid" : "nctaid", op->attr)); return;
  case IR_SPLAT: fill(c, res, cg_slot(c, op->operands[0], 0)); return;
  case IR_ARANGE: {
    cg_layout l = cg_layout_of(c, res->type);
    LLVMValueRef *s = cg_slots(c, l.per);
    for (int j = 0; j < l.per; j++)
      s[j] = LLVMBuildAdd(c->b, cg_layout_coord(c, &l, j, 0), cg_i32(c, op->attr), "");
    cg_set(c, res, s, l.per);
    return;
  }
  case IR_BROADCAST: case IR_RESHAPE: case IR_CONVERT_LAYOUT: case IR_EXPAND_DIMS:
  case IR_TRANS: case IR_SLICE:
    cg_emit_shape_op(c, op);
    return;
  case IR_JOIN:
    cg_emit_join(c, op);
    return;
  case IR_GATHER:
    cg_emit_gather(c, op);
    return;
  default: SU_UNREACHABLE();
  }
}
