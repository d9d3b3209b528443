/* A row sum of a product's A operand on the tensor cores (docs/passes.md, "rowsum").
 *
 * The online softmax keeps l, the running sum of each row of P, beside acc = P V:
 *
 *     p = exp(s - m_new)                      [M, K] f32
 *     l = l * alpha + sum((p as T) as f32, 1) the sum of the weights the product uses
 *     acc = dot(p as T, v, acc * alpha[:, None])
 *
 * On the CUDA cores the sum is an FADD an element and a shuffle tree a row each block: a
 * fifth of the softmax's instructions at BN = 128 (64 of ~330 a thread), and the loop is
 * bound by those instructions, not by the tensor cores (removing the sum measured 3% at
 * D = 128 and 7.5% at D = 64 on the H100, 2026-12-07). The sum is itself a product:
 * sum(x, 1) = x · ones[K], and x already sits in registers as the A operand of the next
 * wgmma. So, in a loop, a carried l updated exactly as `l * alpha + sum(cast(x, f32), 1)`
 * (either order), where x (f16 or bf16, [M, K]) is the A operand of a dot that runs on
 * wgmma, becomes a carried [M, 8] accumulator
 *
 *     lacc = dot(x, trans(ones[8, K]), lacc * alpha[:, None])   each column: the row sum
 *     l    = max(lacc, 1)                                 after the loop: any column, exactly
 *
 * which rotate, skipscale and the turns then treat as they treat acc (one more m64n8k16
 * per k step beside P V's m64nDk16: 8 / D more tensor work, 4 more registers a thread).
 * Only the sum of values already rounded to T is taken: each product x · 1 is exact and
 * the tensor cores add in f32, so the result is the written sum up to its order, which
 * the language leaves open (docs/language.md, "Reductions"). A sum of the f32 p itself is
 * a different number and is left alone. sm_90a's wgmma only; before tiling, whose layouts
 * the new values take; the interpreter never sees it (target part). */
#include "pass_util.h"

enum { ROWSUM_N = 8 };

/* The dot in body whose A operand is x and which runs on wgmma, or NULL. */
static ir_op *product_of(const ir_module *m, const ir_func *f, const ir_block *body, const ir_value *x) {
  for (ir_op *op = body->first; op; op = op->next)
    if (op->opc == IR_DOT && op->operands[0] == x && op->results[0]->type->dtype == TK_F32 &&
        pass_dot_uses_wgmma(m, f, op))
      return op;
  return NULL;
}

/* The x of `reduce sum(cast(x, f32), axis 1)` with x an f16 or bf16 [M, K] tile, or NULL. */
static ir_value *summed_operand(const ir_value *s) {
  const ir_op *r = s->def;
  if (!r || r->opc != IR_REDUCE || r->attr != IR_RED_SUM || r->attr2 != 1) return NULL;
  const ir_value *c = r->operands[0];
  if (!c->def || c->def->opc != IR_CAST || c->type->dtype != TK_F32 || c->type->rank != 2) return NULL;
  ir_value *x = c->def->operands[0];
  return x->type->dtype == TK_F16 || x->type->dtype == TK_BF16 ? x : NULL;
}

typedef struct {
  ir_op *add, *mul, *sum, *cast;
  ir_value *alpha, *x;
  ir_op *dot;
} update;

/* Whether the yield's k-th value is `l * alpha + sum(cast(x, f32), 1)` of the carried l,
 * each step used once, and x the A operand of a wgmma product in the body. */
static bool match(const ir_module *m, const ir_func *f, ir_block *body, int k, update *u) {
  ir_value *l = body->args[k + 1], *nv = body->last->operands[k];
  if (l->type->kind != IR_TILE || l->type->rank != 1 || l->type->dtype != TK_F32) return false;
  if (!nv->def || nv->def->opc != IR_ADD || nv->def->parent != body) return false;
  u->add = nv->def;
  for (int side = 0; side < 2; side++) {
    ir_value *p = u->add->operands[side], *q = u->add->operands[1 - side];
    if (!p->def || p->def->opc != IR_MUL || !(u->x = summed_operand(q))) continue;
    ir_op *mul = p->def;
    int li = mul->operands[0] == l ? 0 : mul->operands[1] == l ? 1 : -1;
    if (li < 0) continue;
    u->mul = mul;
    u->alpha = mul->operands[1 - li];
    u->sum = q->def;
    u->cast = u->sum->operands[0]->def;
    break;
  }
  if (!u->mul || u->mul->parent != body || u->sum->parent != body) return false;
  /* each step of the update is used by the next alone; l by the multiply alone */
  if (pass_count_uses(body, l) != 1 || pass_count_uses(body, u->mul->results[0]) != 1 ||
      pass_count_uses(body, u->sum->results[0]) != 1 || pass_count_uses(body, nv) != 1 ||
      pass_count_uses(f->body, u->cast->results[0]) != 1)
    return false;
  const ir_type *at = u->alpha->type, *xt = u->x->type;
  if (at->kind != IR_TILE || at->rank != 1 || at->shape[0] != l->type->shape[0] || xt->shape[0] != at->shape[0])
    return false;
  return (u->dot = product_of(m, f, body, u->x)) != NULL;
}

/* [M] -> [M, 8]: each row's value in every column. */
static ir_value *widen(ir_module *m, ir_builder *b, ir_value *v) {
  int shape[2] = {v->type->shape[0], ROWSUM_N};
  return pass_spread(m, b, v, ir_type_tile(m, v->type->elem, 2, shape));
}

static void rewrite(ir_module *m, ir_func *f, ir_op *L, int k, const update *u) {
  ir_block *body = L->regions[0];
  ir_op *y = body->last;
  int mm = u->x->type->shape[0], kk = u->x->type->shape[1];
  ir_builder pre = {m, L->parent, L, u->add->loc};
  /* ones [8, K] read transposed: K-major rows of K elements, which shared memory's
   * swizzled lines hold (an [K, 8] tile's 16-byte rows would need the unswizzled form) */
  int ones_shape[2] = {ROWSUM_N, kk}, b_shape[2] = {kk, ROWSUM_N};
  ir_value *ones_nk = ir_const_float(&pre, ir_type_tile(m, u->x->type->elem, 2, ones_shape), 1.0);
  ir_value *ones = ir_build1(&pre, IR_TRANS, ir_type_tile(m, u->x->type->elem, 2, b_shape), 1, &ones_nk);
  int *perm = SU_NEW_ARRAY(m->arena, int, 2);
  perm[0] = 1, perm[1] = 0;
  ones->def->ints = perm;
  ones->def->nints = 2;
  ir_value *arg;
  ir_value *res = ir_for_add_carried(m, L, widen(m, &pre, L->operands[3 + k]), &arg);
  ir_builder in = {m, body, u->add, u->add->loc};
  ir_value *scaled = ir_binary(&in, IR_MUL, arg, widen(m, &in, u->alpha));
  ir_value *ops[3] = {u->x, ones, scaled};
  int acc_shape[2] = {mm, ROWSUM_N};
  ir_op *dot = ir_build(&in, IR_DOT, 3, ops, 1, (const ir_type *[]){ir_type_tile(m, ir_type_scalar(m, TK_F32), 2, acc_shape)});
  ir_op_copy_attrs(dot, u->dot);
  ir_yield_add(m, y, dot->results[0]);
  /* l passes through (dce drops it); the update goes */
  y->operands[k] = body->args[k + 1];
  ir_op_erase(u->add);
  ir_op_erase(u->mul);
  ir_op_erase(u->sum);
  ir_op_erase(u->cast);
  ir_builder post = {m, L->parent, L->next, u->add->loc};
  ir_value *l = ir_build1(&post, IR_REDUCE, L->results[k]->type, 1, &res);
  l->def->attr = IR_RED_MAX;
  l->def->attr2 = 1;
  ir_replace_all_uses(f, L->results[k], l);
}

bool pass_rowsum(ir_module *m, ir_func *f) {
  if (!pass_has(m, PASS_WGMMA)) return false;
  ir_op *loops[64];
  int nl = pass_collect(f->body, IR_FOR, loops, 64);
  bool changed = false;
  for (int i = 0; i < nl; i++) {
    ir_op *L = loops[i];
    ir_block *body = L->regions[0];
    int n = L->noperands - 3;
    for (int k = 0; k < n; k++) {
      update u = {0};
      if (!match(m, f, body, k, &u)) continue;
      rewrite(m, f, L, k, &u);
      changed = true;
    }
  }
  return changed;
}
