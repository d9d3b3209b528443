/* A rescale of a product's accumulator by one is skipped (docs/passes.md, "skipscale").
 *
 * The online softmax rescales its running sum of P V by alpha = exp(m_old - m_new) every
 * block, `dot(p, v, acc * alpha[:, None])`: one multiply per accumulator element, on the
 * path between one product's wait and the next one's issue. Once a row's maximum stops
 * growing, its alpha is exactly 1 (exp(0)) and the multiply changes nothing. For random
 * scores the maximum of a row grows at block j with probability 1 / (j + 1), so a warp's
 * 16 rows all keep theirs on about half of the blocks of a 64-block row and four in five
 * of a 256-block one; the peaked rows of a trained model settle sooner. So, in a loop, a
 * wgmma accumulator that is a `mul` of a tile by a broadcast factor held as the product's
 * rows are,
 *
 *     %f = ...                                 factor, [M, 1], the accumulator's layout
 *     %r = if warp_any(cmp ne %f, 1.0) { yield mul(%acc, broadcast(%f)) } else { yield %acc }
 *
 * decided per warp (warp_any, a vote): a warp whose rows all keep their maximum skips its
 * multiplies. Exact: x * 1 is x for every x (NaN stays NaN, -0 stays -0), and a NaN factor
 * compares unequal to 1. Each thread holds the factor of every row it holds (the
 * broadcast is the same layout, no data crosses threads), so the vote covers exactly the
 * warp's own rows. After rotate, whose pattern the branch would break; sm_90a's wgmma
 * only, where it was measured; the interpreter never sees it (target part). */
#include "pass_util.h"

/* Whether every use of v in blk (and below) is as the accumulator of a wgmma. */
typedef struct {
  const ir_value *v;
  bool other;
  int uses;
} acc_use;

static void scan_acc(ir_op *op, void *arg) {
  acc_use *u = arg;
  for (int i = 0; i < op->noperands; i++) {
    if (op->operands[i] != u->v) continue;
    u->uses++;
    if (op->opc != IR_WGMMA || i != op->noperands - 1) u->other = true;
  }
}

/* The factor of a `mul` operand that broadcasts it along the rows in the result's own
 * layout, or NULL. */
static ir_value *row_factor(const ir_value *b, const ir_type *t) {
  if (!b->def || b->def->opc != IR_BROADCAST) return NULL;
  ir_value *f = b->def->operands[0];
  const ir_type *ft = f->type;
  if (ft->kind != IR_TILE || ft->rank != 2 || ft->shape[0] != t->shape[0] || ft->shape[1] != 1) return NULL;
  return ft->layout == t->layout && ft->dtype == t->dtype ? f : NULL;
}

static bool rewrite(ir_module *m, ir_func *f, ir_block *body, ir_op *mul) {
  const ir_type *t = mul->results[0]->type;
  if (t->kind != IR_TILE || t->rank != 2 || !ir_dtype_is_float(t->dtype) || !t->layout ||
      t->layout->kind != IR_LAYOUT_WGMMA)
    return false;
  int k = 1;
  ir_value *factor = row_factor(mul->operands[1], t);
  if (!factor) factor = row_factor(mul->operands[k = 0], t);
  if (!factor) return false;
  acc_use u = {mul->results[0], false, 0};
  ir_walk(body, scan_acc, &u);
  if (u.other || !u.uses) return false;
  ir_value *acc = mul->operands[1 - k];
  ir_builder at = {m, body, mul, mul->loc};
  ir_value *one = ir_const_float(&at, factor->type, 1.0);
  ir_value *ne = ir_cmp_build(&at, IR_CMP_NE, factor, one);
  ir_value *any = ir_build1(&at, IR_WARP_ANY, ir_type_scalar(m, TK_I1), 1, &ne);
  ir_op *iff = ir_build_if(&at, any, 1, &t);
  ir_replace_all_uses(f, mul->results[0], iff->results[0]);
  ir_builder then = {m, iff->regions[0], NULL, mul->loc};
  ir_op *y = ir_build(&then, IR_YIELD, 1, mul->results, 0, NULL);
  ir_op_move_before(mul, y);
  ir_builder els = {m, iff->regions[1], NULL, mul->loc};
  ir_build(&els, IR_YIELD, 1, &acc, 0, NULL);
  /* the broadcast only the multiply reads goes in with it */
  ir_op *bc = mul->operands[k]->def;
  if (bc->parent == body && pass_count_uses(body, bc->results[0]) == 1) ir_op_move_before(bc, mul);
  return true;
}

static bool visit(ir_module *m, ir_func *f, ir_block *blk, bool in_loop) {
  bool changed = false;
  for (ir_op *o = blk->first, *n; o; o = n) {
    n = o->next;
    for (int r = 0; r < o->nregions; r++) changed |= visit(m, f, o->regions[r], o->opc == IR_FOR);
    if (in_loop && o->opc == IR_MUL) changed |= rewrite(m, f, blk, o);
  }
  return changed;
}

bool pass_skipscale(ir_module *m, ir_func *f) {
  if (!pass_has(m, PASS_WGMMA)) return false;
  return visit(m, f, f->body, false);
}
