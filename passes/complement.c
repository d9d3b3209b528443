/* 1 ± erf(z) computed as erfc(∓z) on the GPU (docs/passes.md, "complement"; the rule is
 * docs/language.md's, with the GPU's f32 math).
 *
 *     1 + erf(z)  ->  erfc(-z)        erf(z) + 1  ->  erfc(-z)        1 - erf(z)  ->  erfc(z)
 *
 * Equal in real arithmetic, and better in floating point where the sum cancels: for
 * z = -4, 1 + erf(z) rounds erf to within half an ulp of 1 (6e-8) and leaves 1.5e-8 with
 * no correct digit, where erfc(4) is within a few ulps of itself. It is also cheaper: the
 * exact gelu, 0.5 x (1 + erf(x / sqrt 2)), spends most of a fused matmul epilogue's issue
 * slots in libdevice's erf (~24 instructions an element, one MUFU), and the GPU's fast
 * erfc (codegen/math.c) is ~17 with two MUFU. The erfc takes the erf's `accurate` flag: with
 * it (or -fmath=accurate), libdevice's __nv_erfcf. Only where the sum is the erf's one use
 * (else both would be computed). GPU targets only: the interpreter keeps the expression as
 * written, which the GPU then matches to within the documented bound. */
#include "pass_util.h"

typedef struct {
  ir_module *m;
  ir_func *f;
  bool changed;
} compl_ctx;

/* Whether v is 1 in every element: a constant, or a splat or broadcast of one. */
static bool is_one(const ir_value *v) {
  while (v->def && (v->def->opc == IR_BROADCAST || v->def->opc == IR_SPLAT)) v = v->def->operands[0];
  return pass_const_eq(v, 1.0);
}

/* The erf op that v is, when nothing else reads it; else NULL. */
static ir_op *sole_erf(const compl_ctx *c, const ir_value *v) {
  ir_op *d = v->def;
  if (!d || d->opc != IR_ERF || pass_count_uses(c->f->body, v) != 1) return NULL;
  return d;
}

static void visit(ir_op *op, void *arg) {
  compl_ctx *c = arg;
  if (op->opc != IR_ADD && op->opc != IR_SUB) return;
  if (!ir_dtype_is_float(ir_type_elem(op->results[0]->type)->dtype)) return;
  ir_value *a = op->operands[0], *b = op->operands[1];
  ir_op *e = NULL;
  bool negate = false;
  if (op->opc == IR_ADD && is_one(b) && (e = sole_erf(c, a))) negate = true;
  else if (op->opc == IR_ADD && is_one(a) && (e = sole_erf(c, b))) negate = true;
  else if (op->opc == IR_SUB && is_one(a) && (e = sole_erf(c, b))) negate = false;
  else return;
  /* the erf has the sum's type: sema promotes and broadcasts the operands alike */
  if (e->results[0]->type != op->results[0]->type) return;
  ir_builder at = {c->m, op->parent, op, op->loc};
  ir_value *z = e->operands[0];
  if (negate) z = ir_unary(&at, IR_NEG, z);
  ir_value *r = ir_unary(&at, IR_ERFC, z);
  r->def->attr = e->attr; /* accurate */
  pass_replace_op(c->f, op, r);
  ir_op_erase(e);
  c->changed = true;
}

bool pass_complement(ir_module *m, ir_func *f) {
  compl_ctx c = {.m = m, .f = f};
  ir_walk(f->body, visit, &c);
  return c.changed;
}
