/* exp with its change of base folded into an fma (docs/passes.md, "expfold"; the rule is
 * docs/language.md's, on the GPU's f32 exp).
 *
 * On the GPU an f32 exp(x) is ex2(x * log2 e) (codegen/math.c): a subtraction, a multiply
 * and ex2 per element for the online softmax's exp(s - m). Where the subtrahend is the
 * broadcast of a value with fewer elements (the row max), the multiply moves onto that
 * value and the subtraction into one fma per element:
 *
 *     exp(a - broadcast(r))  ->  exp2(fma(a, log2 e, broadcast(-(r * log2 e))))
 *
 * exact where the original is exact (a = r gives 2^0 up to the rounding of r * log2 e),
 * -inf and NaN as before. GPU targets only: the interpreter keeps exp. */
#include "pass_util.h"

#define LOG2E 1.4426950408889634

typedef struct {
  ir_module *m;
  ir_func *f;
  bool changed;
} fold;

/* The value a broadcast or splat spreads, or NULL. */
static ir_value *spread_source(const ir_value *b) {
  ir_op *d = b->def;
  if (!d || (d->opc != IR_BROADCAST && d->opc != IR_SPLAT)) return NULL;
  return d->operands[0];
}

static void visit(ir_op *op, void *arg) {
  fold *fd = arg;
  if (op->opc != IR_EXP || op->attr || op->results[0]->type->dtype != TK_F32 || op->results[0]->type->kind != IR_TILE)
    return; /* an accurate exp is libdevice's, which needs no change of base */
  ir_op *sub = op->operands[0]->def;
  if (!sub || sub->opc != IR_SUB) return;
  ir_value *a = sub->operands[0], *b = sub->operands[1], *r = spread_source(b);
  if (!r || r->type->dtype != TK_F32) return;
  ir_module *m = fd->m;
  ir_builder at = {m, op->parent, op, op->loc};
  ir_value *rl = ir_unary(&at, IR_NEG, ir_binary(&at, IR_MUL, r, ir_const_float(&at, r->type, LOG2E)));
  ir_value *nb = ir_build1(&at, b->def->opc, b->type, 1, &rl);
  ir_value *f3[3] = {a, ir_const_float(&at, a->type, LOG2E), nb};
  ir_value *x = ir_build1(&at, IR_FMA, a->type, 3, f3);
  ir_value *e = ir_unary(&at, IR_EXP2, x);
  e->def->attr = 1; /* ftz: exp(a - r) below 2^-126 is 0 to within 1.2e-38 */
  ir_replace_all_uses(fd->f, op->results[0], e);
  fd->changed = true;
}

bool pass_expfold(ir_module *m, ir_func *f) {
  fold fd = {m, f, false};
  ir_walk(f->body, visit, &fd);
  return fd.changed;
}
