/* Lowering of dot to the tensor cores' own ops (docs/passes.md).
 *
 * On wgmma (pass_dot_uses_wgmma; the tiling pass gave the result its #wgmma layout) an
 * operand read from a pipelined slot (an smem_load used by the dot alone, or the
 * transpose of one: the wgmma's `trans` flag says so) is taken from there; an a already
 * in the accumulator's layout (f16/bf16: attention's P, computed from the first product's
 * result) is read from registers; any other is staged through a one-slot buffer of its
 * own (a barrier so that no warpgroup still reads the previous contents, the store, the
 * async-proxy fence, a barrier) — right after its definition when that is outside the
 * dot's loop (attention's Q, staged once per tile, not once per key block). The dot
 * becomes wgmma, commit, wait.
 *
 * Then, for the dot of a pipelined loop whose accumulator is carried (read by the product
 * alone, its result yielded), the wait keeps one group in flight: the product of
 * iteration i runs while iteration i+1 waits for its slots and issues. The slot of
 * iteration i is then released (mbar_arrive) in iteration i+1, after its wait, and the
 * last one after the loop, behind a wait for everything.
 *
 * With the mma layout and both operands read from slots, the dot becomes mma, which
 * feeds mma.sync from the slots with ldmatrix. */
#include "pass_util.h"

typedef struct {
  ir_module *m;
  ir_func *f;
  bool changed;
} lower;

/* The slot an operand is read from: its smem_load when the dot is its only user, seen
 * through a transpose used by the dot alone (*trans set; trans may be NULL to refuse). */
static ir_op *slot_read(lower *l, ir_value *v, bool *trans) {
  ir_op *d = v->def;
  if (trans) *trans = false;
  if (trans && d && d->opc == IR_TRANS && d->nints == 2 && d->ints[0] == 1 && pass_count_uses(l->f->body, v) == 1) {
    *trans = true;
    v = d->operands[0];
    d = v->def;
  }
  if (!d || d->opc != IR_SMEM_LOAD || pass_count_uses(l->f->body, v) != 1) return NULL;
  return d;
}

/* Where a staged operand is stored: when its definition stands outside the loop around
 * the dot (it is staged once, not each iteration), right before the op of the
 * definition's block that holds the dot — after what that block does first, the
 * pipeline's prologue loads among it; else before the dot. Right after the definition,
 * the barrier behind the store would wait for the operand's load before any later load
 * is issued: decode's q, then the sequence length its key loads need, then those loads,
 * three round trips to memory in a row where two do (q's beside the first key blocks'). */
static ir_op *stage_point(ir_op *dot, ir_value *v) {
  ir_op *d = v->def;
  for (ir_op *L = dot->parent->parent; d && L; L = L->parent->parent)
    if (L->opc == IR_FOR) {
      if (pass_op_within(d, L->regions[0])) return dot;
      ir_op *at = dot;
      while (at && at->parent != d->parent) at = at->parent->parent;
      return at ? at : d->next;
    }
  return dot;
}

/* A one-slot buffer holding tile v, stored before `at` between two barriers (with the
 * fence that makes the store visible to the async proxy when wgmma reads it). */
static ir_value *stage(lower *l, ir_op *at, ir_value *v, bool async) {
  ir_module *m = l->m;
  const ir_type *t = v->type;
  int eb = ir_dtype_bytes(t->dtype);
  ir_builder top = {m, l->f->body, l->f->body->first, l->f->loc};
  const ir_type *bt = pass_slots_type(m, t->elem, 1, t->shape[0], t->shape[1], pass_swizzle_for(t->shape[1] * eb));
  ir_value *buf = ir_build1(&top, IR_SMEM_ALLOC, bt, 0, NULL);
  ir_builder b = {m, at->parent, at, at->loc};
  /* two operands staged at one point share the barrier between their stores */
  bool fenced = at->prev && at->prev->opc == IR_BARRIER && at->prev->noperands == 0;
  ir_value *zero = ir_const_int(&b, ir_type_scalar(m, TK_I32), 0);
  if (!fenced) ir_build(&b, IR_BARRIER, 0, NULL, 0, NULL);
  ir_value *opnds[3] = {buf, zero, v};
  ir_build(&b, IR_SMEM_STORE, 3, opnds, 0, NULL);
  if (async) ir_build(&b, IR_FENCE_ASYNC, 0, NULL, 0, NULL);
  ir_build(&b, IR_BARRIER, 0, NULL, 0, NULL);
  return buf;
}

static bool stageable(const ir_value *v) {
  const ir_type *t = v->type;
  return pass_swizzle_for(t->shape[1] * ir_dtype_bytes(t->dtype)) != 0;
}

/* The release swpipe put right after the dot: mbar_arrive %empty, %slot. */
static ir_op *release_after(ir_op *dot) {
  for (ir_op *op = dot->next; op; op = op->next) {
    if (op->opc == IR_MBAR_ARRIVE) return op;
    if (ir_op_info(op->opc)->traits & IR_MEM) return NULL;
  }
  return NULL;
}

static ir_op *build_if(ir_builder *b, ir_value *cond, ir_builder *then) {
  ir_op *op = ir_build_if(b, cond, 0, NULL);
  for (int r = 0; r < 2; r++)
    ir_block_insert_before(op->regions[r], ir_op_new(b->m, IR_YIELD, b->loc, 0, NULL, 0, NULL), NULL);
  *then = (ir_builder){b->m, op->regions[0], op->regions[0]->last, b->loc};
  return op;
}

/* Keeps one group in flight across the loop (see the top). */
static void overlap(lower *l, ir_op *wg, ir_op *wait) {
  ir_block *body = wg->parent;
  ir_op *L = body->parent;
  if (!L || L->opc != IR_FOR || L->attr) return;
  ir_value *acc = wg->operands[wg->noperands - 1];
  if (acc->def || acc->owner != body || acc->index == 0 || pass_count_uses(body, acc) != 1) return;
  int j = acc->index - 1;
  ir_value *r = wait->results[0];
  if (pass_count_uses(l->f->body, r) != 1 || body->last->operands[j] != r) return;
  ir_op *rel = release_after(wait);
  if (!rel) return;
  ir_value *slot = rel->operands[1];
  ir_op *rem = slot->def;
  if (!rem || rem->opc != IR_REM) return;
  ir_value *g = rem->operands[0], *S = rem->operands[1];
  if (g->def || g->owner != body || g->index == 0 || !pass_is_const(S)) return;
  ir_module *m = l->m;
  const ir_type *i32 = ir_type_scalar(m, TK_I32);
  wait->attr = 1;
  /* release the previous iteration's slot, not this one's */
  ir_builder b = {m, body, rel, rel->loc};
  ir_value *iv = body->args[0], *lb = L->operands[0], *ub = L->operands[1];
  ir_builder then;
  build_if(&b, ir_cmp_build(&b, IR_CMP_NE, iv, lb), &then);
  ir_value *prev = ir_binary(&then, IR_REM, ir_binary(&then, IR_SUB, g, ir_const_int(&then, i32, 1)), S);
  ir_value *args[2] = {rel->operands[0], prev};
  ir_build(&then, IR_MBAR_ARRIVE, 2, args, 0, NULL);
  ir_op_erase(rel);
  /* after the loop: wait for everything, release the last slot */
  ir_value *out = L->results[j], *gend = L->results[g->index - 1];
  ir_builder after = {m, L->parent, L->next, L->loc};
  ir_op *fin = ir_build(&after, IR_WGMMA_WAIT, 1, &out, 1, &out->type);
  fin->attr = 0;
  ir_replace_all_uses(l->f, out, fin->results[0]);
  fin->operands[0] = out;
  ir_builder last;
  build_if(&after, ir_cmp_build(&after, IR_CMP_LT, lb, ub), &last);
  ir_value *ls = ir_binary(&last, IR_REM, ir_binary(&last, IR_SUB, gend, ir_const_int(&last, i32, 1)),
                           ir_const_int(&last, i32, pass_const_int(S)));
  ir_value *args2[2] = {rel->operands[0], ls};
  ir_build(&last, IR_MBAR_ARRIVE, 2, args2, 0, NULL);
}

/* The transpose (if any) and the slot read that slot_read saw through, now unused. */
static void erase_read(ir_value *v, ir_op *rd) {
  ir_op *t = v->def;
  if (t && t->opc == IR_TRANS) ir_op_erase(t);
  ir_op_erase(rd);
}

static void lower_wgmma(lower *l, ir_op *dot) {
  ir_value *a = dot->operands[0], *b = dot->operands[1];
  const ir_type *t = dot->results[0]->type;
  bool ta, tb;
  ir_op *ra = slot_read(l, a, &ta), *rb = slot_read(l, b, &tb);
  bool regs = !ra && a->type->layout == t->layout && (a->type->dtype == TK_F16 || a->type->dtype == TK_BF16);
  /* 8-bit products read K-major slots only (pass_dot_uses_wgmma): b = trans(x) stages x,
   * [N, K] with K contiguous, and reads it transposed; so does a 16-bit b too narrow for a
   * swizzled line (rowsum's ones, [K, 8]) that is the transpose of one wide enough */
  ir_op *bt = NULL;
  if (!rb && ir_dtype_bytes(a->type->dtype) == 1) {
    bt = b->def;
    SU_ASSERT(bt && bt->opc == IR_TRANS);
    tb = true;
  } else if (!rb && !stageable(b) && b->def && b->def->opc == IR_TRANS && b->def->nints == 2 &&
             b->def->ints[0] == 1 && pass_count_uses(l->f->body, b) == 1) {
    bt = b->def;
    tb = true;
  }
  ir_value *bs = bt ? bt->operands[0] : b;
  if ((!ra && !regs && !stageable(a)) || (!rb && !stageable(bs))) return;
  ir_module *m = l->m;
  ir_builder at = {m, dot->parent, dot, dot->loc};
  ir_value *opnds[5];
  int n = 0;
  if (regs) {
    opnds[n++] = a;
  } else if (ra) {
    opnds[n++] = ra->operands[0];
    opnds[n++] = ra->operands[1];
  } else {
    opnds[n++] = stage(l, stage_point(dot, a), a, true);
    opnds[n++] = ir_const_int(&at, ir_type_scalar(m, TK_I32), 0);
  }
  if (rb) {
    opnds[n++] = rb->operands[0];
    opnds[n++] = rb->operands[1];
  } else {
    opnds[n++] = stage(l, stage_point(dot, bs), bs, true);
    opnds[n++] = ir_const_int(&at, ir_type_scalar(m, TK_I32), 0);
  }
  opnds[n++] = dot->operands[2];
  ir_op *wg = ir_build(&at, IR_WGMMA, n, opnds, 1, &t);
  if (ta || tb) {
    int *fl = SU_NEW_ARRAY(m->arena, int, 2);
    fl[0] = ta, fl[1] = tb;
    wg->ints = fl;
    wg->nints = 2;
  }
  ir_build(&at, IR_WGMMA_COMMIT, 0, NULL, 0, NULL);
  ir_op *wait = ir_build(&at, IR_WGMMA_WAIT, 1, wg->results, 1, &t);
  wait->attr = 0;
  ir_replace_all_uses(l->f, dot->results[0], wait->results[0]);
  ir_op_erase(dot);
  if (ra) erase_read(a, ra);
  if (rb) erase_read(b, rb);
  if (bt) ir_op_erase(bt);
  overlap(l, wg, wait);
  l->changed = true;
}

/* mma reads both operands from slots with ldmatrix: a slot read is taken as it is (b's
 * transposed too, for 16-bit types: ldmatrix without .trans reads b^T's rows as b's
 * columns), and an operand in registers is staged — once, after its definition, when
 * that is outside the dot's loop (decode's q), else before the dot (its P). */
static void lower_mma(lower *l, ir_op *dot) {
  ir_value *a = dot->operands[0], *b = dot->operands[1];
  const ir_type *t = dot->results[0]->type;
  if (!t->layout || t->layout->kind != IR_LAYOUT_MMA) return;
  bool half = a->type->dtype == TK_F16 || a->type->dtype == TK_BF16, tb = false;
  ir_op *ra = slot_read(l, a, NULL), *rb = slot_read(l, b, half ? &tb : NULL);
  if ((!ra && !stageable(a)) || (!rb && !stageable(b))) return;
  ir_module *m = l->m;
  ir_builder at = {m, dot->parent, dot, dot->loc};
  ir_value *zero = ir_const_int(&at, ir_type_scalar(m, TK_I32), 0);
  ir_value *opnds[5] = {ra ? ra->operands[0] : stage(l, stage_point(dot, a), a, false), ra ? ra->operands[1] : zero,
                        rb ? rb->operands[0] : stage(l, stage_point(dot, b), b, false), rb ? rb->operands[1] : zero,
                        dot->operands[2]};
  ir_op *mm = ir_build(&at, IR_MMA, 5, opnds, 1, &t);
  if (tb) {
    int *fl = SU_NEW_ARRAY(m->arena, int, 2);
    fl[0] = 0, fl[1] = 1;
    mm->ints = fl;
    mm->nints = 2;
  }
  ir_replace_all_uses(l->f, dot->results[0], mm->results[0]);
  ir_op_erase(dot);
  if (ra) erase_read(a, ra);
  if (rb) erase_read(b, rb);
  l->changed = true;
}

static void visit(ir_op *op, void *arg) {
  lower *l = arg;
  if (op->opc != IR_DOT) return;
  const ir_type *t = op->results[0]->type;
  if (t->layout && t->layout->kind == IR_LAYOUT_WGMMA && pass_dot_uses_wgmma(l->m, l->f, op))
    lower_wgmma(l, op);
  else if (pass_has(l->m, PASS_MMA) && (op->operands[0]->type->dtype != TK_F32 || op->attr == IR_DOT_TF32))
    lower_mma(l, op); /* tf32x3 and ieee f32 products stay dots (codegen/emit_dot.c) */
}

bool pass_lower_dot(ir_module *m, ir_func *f) {
  lower l = {m, f, false};
  ir_walk(f->body, visit, &l);
  return l.changed;
}
