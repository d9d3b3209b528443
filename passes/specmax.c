/* A loop's exponentials do not wait for a running maximum that usually stays (docs/passes.md,
 * "specmax").
 *
 * The online softmax with a slack (attention.tk's SLACK, FlashAttention-4's conditional
 * rescale) moves its running row maximum only when a block's maximum passes it by more
 * than the slack:
 *
 *     m_new = select(mx > m + K, mx, m)          K > 0, m carried by the loop
 *     p = exp(s - m_new[:, None]); alpha = exp(m - m_new); l = l * alpha + sum(p, 1); ...
 *
 * After the first block m_new is m on nearly every block, yet every exponential waits for
 * it, i.e. for the block's row maximum: on sm_90a a 32-deep FMNMX chain and two shuffle
 * rounds in front of the 64 MUFU.EX2 a thread issues per block. So what depends on m_new
 * is computed as if it stayed, and again as written only where it did not:
 *
 *     spec = the same ops with m in place of m_new       (nothing in them waits on mx)
 *     r = if warp_any(m_new != m) { the ops as written } else { spec }
 *
 * Exact: where the vote fails, every row of the warp has m_new equal to m (select passed m
 * through), so the copies compute the same values from the same operands; a NaN m_new
 * compares unequal and takes the written path. The vote covers exactly the rows a warp's
 * values depend on because the rewrite takes only row-local work: elementwise ops,
 * broadcasts and expansions, reductions along the rows, in one 2-D layout whose warps split
 * the rows alone and in its row slice. Without a slack (`maximum(m, mx)`) the maximum moves
 * on about half the blocks of a 32-block row (skipscale's count), where the copies would
 * cost their exponentials twice, so only the slack form, where the source says the value
 * usually stays, is rewritten. After rotate (its peeled first block, where m is -inf, is
 * not a loop); a target pass, the interpreter never sees it. */
#include "pass_util.h"


enum { SPEC_MAX_OPS = 128 };

static bool is_carried(const ir_block *body, const ir_value *v) {
  return !v->def && v->owner == body && v->index > 0;
}

/* The carried value m if sel is `select(x > m + K, x, m)` (or `m + K < x`) with a constant
 * K > 0 and sel is what the loop carries on as m; NULL otherwise. */
static ir_value *slack_carried(const ir_block *body, const ir_op *sel) {
  if (sel->opc != IR_SELECT) return NULL;
  ir_value *x = sel->operands[1], *mo = sel->operands[2];
  const ir_op *y = body->last;
  if (!is_carried(body, mo) || !y || y->opc != IR_YIELD || mo->index - 1 >= y->noperands ||
      y->operands[mo->index - 1] != sel->results[0])
    return NULL;
  const ir_op *c = sel->operands[0]->def;
  if (!c || c->opc != IR_CMP) return NULL;
  const ir_value *big, *bound;
  if (c->attr == IR_CMP_GT || c->attr == IR_CMP_GE) big = c->operands[0], bound = c->operands[1];
  else if (c->attr == IR_CMP_LT || c->attr == IR_CMP_LE) big = c->operands[1], bound = c->operands[0];
  else return NULL;
  const ir_op *add = bound->def;
  if (big != x || !add || add->opc != IR_ADD) return NULL;
  const ir_value *k = add->operands[0] == mo ? add->operands[1] : add->operands[1] == mo ? add->operands[0] : NULL;
  return k && pass_is_const(k) && ir_dtype_is_float(k->type->dtype) && pass_const_float(k) > 0 ? mo : NULL;
}

/* Whether a and b describe one layout (a loop's carried values may hold copies). */
static bool same_layout(const ir_layout *a, const ir_layout *b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->rank != b->rank || a->slice_dim != b->slice_dim ||
      a->swizzle != b->swizzle)
    return false;
  for (int d = 0; d < a->rank; d++)
    if (a->size_per_thread[d] != b->size_per_thread[d] || a->threads_per_warp[d] != b->threads_per_warp[d] ||
        a->warps_per_cta[d] != b->warps_per_cta[d] || a->order[d] != b->order[d] ||
        (a->reps_per_warp[d] ? a->reps_per_warp[d] : 1) != (b->reps_per_warp[d] ? b->reps_per_warp[d] : 1))
      return false;
  return same_layout(a->parent, b->parent);
}

/* Whether t is a scalar, the 2-D layout rows or its row slice. */
static bool row_local_type(const ir_type *t, const ir_layout *rows, const ir_layout *slice) {
  if (t->kind != IR_TILE) return t->kind == IR_SCALAR;
  return same_layout(t->layout, rows) || same_layout(t->layout, slice);
}

/* Whether op keeps each row's values with the threads of that row's warp. */
static bool row_local_op(const ir_op *op, const ir_layout *rows, const ir_layout *slice) {
  const ir_opinfo *info = ir_op_info(op->opc);
  if (!(info->traits & IR_PURE) || op->nregions) return false;
  bool shape_op = op->opc == IR_SPLAT || op->opc == IR_BROADCAST ||
                  (op->opc == IR_EXPAND_DIMS && op->attr2 == 1) || (op->opc == IR_REDUCE && op->attr2 == 1);
  if (!(info->traits & IR_ELEM) && !shape_op) return false;
  for (int i = 0; i < op->noperands; i++)
    if (!row_local_type(op->operands[i]->type, rows, slice)) return false;
  for (int i = 0; i < op->nresults; i++)
    if (!row_local_type(op->results[i]->type, rows, slice)) return false;
  return true;
}

typedef struct {
  const ir_value **v;
  int n;
} vset;

static bool vset_has(const vset *s, const ir_value *v) {
  for (int i = 0; i < s->n; i++)
    if (s->v[i] == v) return true;
  return false;
}

/* Whether op, or an op in its regions, reads a value of s. */
static bool reads_any(const ir_op *op, const vset *s) {
  for (int i = 0; i < op->noperands; i++)
    if (vset_has(s, op->operands[i])) return true;
  for (int r = 0; r < op->nregions; r++)
    for (const ir_op *o = op->regions[r]->first; o; o = o->next)
      if (reads_any(o, s)) return true;
  return false;
}

static void rename_uses(ir_op *op, const ir_value *from, ir_value *to) {
  for (int i = 0; i < op->noperands; i++)
    if (op->operands[i] == from) op->operands[i] = to;
  for (int r = 0; r < op->nregions; r++)
    for (ir_op *o = op->regions[r]->first; o; o = o->next) rename_uses(o, from, to);
}

/* The `if` that now ends what sel fed, or NULL when sel is not rewritten. */
static ir_op *rewrite(ir_module *m, ir_block *body, ir_op *sel) {
  ir_value *mo = slack_carried(body, sel);
  if (!mo) return NULL;
  const ir_type *mt = sel->results[0]->type;
  const ir_layout *slice = mt->kind == IR_TILE ? mt->layout : NULL;
  if (!slice || slice->kind != IR_LAYOUT_SLICE || slice->slice_dim != 1 || !slice->parent ||
      slice->parent->rank != 2 || slice->parent->warps_per_cta[1] != 1)
    return NULL;
  const ir_layout *rows = slice->parent;

  /* what depends on m_new, up to the loop's yield */
  ir_op **dep = su_alloc(m->arena, SPEC_MAX_OPS * sizeof *dep);
  vset vals = {su_alloc(m->arena, 2 * SPEC_MAX_OPS * sizeof *vals.v), 0};
  vals.v[vals.n++] = sel->results[0];
  int nd = 0;
  bool has_exp = false;
  for (ir_op *op = sel->next; op && op->opc != IR_YIELD; op = op->next) {
    if (!reads_any(op, &vals)) continue;
    if (!row_local_op(op, rows, slice) || nd == SPEC_MAX_OPS || op->nresults != 1) {
      pass_remark_missed(m, "specmax", sel->loc,
                         "the running maximum feeds an op that is not row-local elementwise work; "
                         "its exponentials keep waiting for it");
      return NULL;
    }
    has_exp |= op->opc == IR_EXP || op->opc == IR_EXP2;
    dep[nd++] = op;
    vals.v[vals.n++] = op->results[0];
  }
  if (!has_exp) return NULL;

  /* the values read after the last of them */
  ir_op *after = dep[nd - 1]->next;
  ir_value **out = su_alloc(m->arena, nd * sizeof *out);
  const ir_type **types = su_alloc(m->arena, nd * sizeof *types);
  int nout = 0;
  for (int i = 0; i < nd; i++) {
    vset one = {(const ir_value *[]){dep[i]->results[0]}, 1};
    for (ir_op *o = after; o; o = o->next)
      if (reads_any(o, &one)) {
        types[nout] = dep[i]->results[0]->type;
        out[nout++] = dep[i]->results[0];
        break;
      }
  }
  if (!nout) return NULL;

  /* the copies, each before its original, with m for m_new */
  ir_vmap *vm = ir_vmap_new(m->arena);
  ir_vmap_put(vm, sel->results[0], mo);
  for (int i = 0; i < nd; i++) ir_block_insert_before(body, ir_op_clone(m, dep[i], vm), dep[i]);

  ir_builder at = {m, body, after, sel->loc};
  ir_value *moved = ir_cmp_build(&at, IR_CMP_NE, sel->results[0], mo);
  ir_value *any = ir_build1(&at, IR_WARP_ANY, ir_type_scalar(m, TK_I1), 1, &moved);
  ir_op *iff = ir_build_if(&at, any, nout, types);
  for (int i = 0; i < nout; i++)
    for (ir_op *o = iff->next; o; o = o->next) rename_uses(o, out[i], iff->results[i]);
  ir_builder then = {m, iff->regions[0], NULL, sel->loc};
  ir_op *y = ir_build(&then, IR_YIELD, nout, out, 0, NULL);
  for (int i = 0; i < nd; i++) ir_op_move_before(dep[i], y);
  ir_value **spec = su_alloc(m->arena, nout * sizeof *spec);
  for (int i = 0; i < nout; i++) spec[i] = ir_vmap_get(vm, out[i]);
  ir_builder els = {m, iff->regions[1], NULL, sel->loc};
  ir_build(&els, IR_YIELD, nout, spec, 0, NULL);
  return iff;
}

static bool visit(ir_module *m, ir_block *blk) {
  bool changed = false;
  for (ir_op *o = blk->first, *n; o; o = n) {
    n = o->next;
    for (int r = 0; r < o->nregions; r++) changed |= visit(m, o->regions[r]);
    ir_op *iff = o->opc == IR_SELECT && blk->parent && blk->parent->opc == IR_FOR ? rewrite(m, blk, o) : NULL;
    if (iff) changed = true, n = iff->next;
  }
  return changed;
}

bool pass_specmax(ir_module *m, ir_func *f) {
  (void)f;
  return visit(m, f->body);
}
