/* Contraction of a * b + c into fma(a, b, c) (docs/language.md, "Precision": tkc
 * -ffp-contract=fast, tk_compile_options.fp_contract). Only in the pipeline when asked for:
 * tk's default keeps every product and sum rounded on its own, as written.
 *
 * The rewrite happens in the target-independent part, which the interpreter runs too, so
 * both backends compute the same fma and agree bit for bit either way (an fma is exactly
 * rounded on both). A product with other uses (CSE shares x * w between x * w + z and
 * x * w - z) is contracted into each sum all the same, as LLVM's contract does, and stays
 * for the other uses. f32 and f64 only: an f16 or bf16 fma
 * would round differently from the product and sum it replaces in more ways than the
 * option promises.
 *
 *     add(mul(a, b), c), add(c, mul(a, b))  ->  fma(a, b, c)
 *     sub(mul(a, b), c)                      ->  fma(a, b, neg(c))
 *     sub(c, mul(a, b))                      ->  fma(neg(a), b, c) */
#include "pass_util.h"

typedef struct {
  ir_module *m;
  ir_func *f;
  ir_op **muls; /* the products contracted, erased at the end when nothing else uses them */
  int nmuls, cap;
  bool changed;
} contract;

/* The float multiply defining v in op's block, or NULL. */
static ir_op *product(const ir_op *op, ir_value *v) {
  ir_op *d = v->def;
  return d && d->opc == IR_MUL && d->parent == op->parent ? d : NULL;
}

static void visit(ir_op *op, void *arg) {
  contract *k = arg;
  if (op->opc != IR_ADD && op->opc != IR_SUB) return;
  tk_dtype dt = op->results[0]->type->dtype;
  if (dt != TK_F32 && dt != TK_F64) return;
  int at = 0;
  ir_op *p = product(op, op->operands[0]);
  if (!p && (p = product(op, op->operands[1]))) at = 1;
  if (!p) return;
  ir_builder b = {k->m, op->parent, op, op->loc};
  ir_value *x = p->operands[0], *y = p->operands[1], *c = op->operands[1 - at];
  if (op->opc == IR_SUB && at == 0) c = ir_unary(&b, IR_NEG, c);
  if (op->opc == IR_SUB && at == 1) x = ir_unary(&b, IR_NEG, x);
  ir_value *f3[3] = {x, y, c};
  ir_value *r = ir_build1(&b, IR_FMA, op->results[0]->type, 3, f3);
  ir_replace_all_uses(k->f, op->results[0], r);
  ir_op_erase(op);
  if (k->nmuls == k->cap) {
    k->cap = k->cap ? 2 * k->cap : 16;
    ir_op **grown = SU_NEW_ARRAY(k->m->arena, ir_op *, k->cap);
    for (int i = 0; i < k->nmuls; i++) grown[i] = k->muls[i];
    k->muls = grown;
  }
  k->muls[k->nmuls++] = p;
  k->changed = true;
}

bool pass_contract(ir_module *m, ir_func *f) {
  contract k = {m, f, NULL, 0, 0, false};
  ir_walk(f->body, visit, &k);
  for (int i = 0; i < k.nmuls; i++)
    if (k.muls[i]->parent && !pass_count_uses(f->body, k.muls[i]->results[0])) ir_op_erase(k.muls[i]);
  return k.changed;
}
