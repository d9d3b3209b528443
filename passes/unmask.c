/* Masks that hold everywhere on most iterations run only where they may not (docs/passes.md,
 * "unmask").
 *
 * A loop over blocks masks its edges: attention's `where(rn[None, :] < S_k, s, -inf)` (and,
 * causal, `rn[None, :] <= rm[:, None]`) selects on every element of every block, though
 * only the last block (or the diagonal one) has an element the mask turns off. Each
 * compare of an index tile against another is all true exactly when the ranges of the two
 * sides are ordered (max(rn) < min(S_k), max(rn) <= min(rm)), and those ranges are
 * scalars: an arange spans [start, end), a splat its one value, a sum the sums of the
 * ends. So inside a `for`, a select whose condition is such a conjunction, and depends on
 * the loop's induction variable, becomes
 *
 *     %r = if all_true(iv) { yield a } else { yield select(c, a, b) }
 *
 * with the scalar test before it and the condition's own computation moved into the else
 * branch. The branch is uniform (one scalar per program), so the then branch costs the
 * select nothing. The ends are computed in i64, and the test also asks that no i32 sum of
 * the condition wraps, so it is exact: false whenever some element could be false.
 * Signed i32 compares only (what a kernel's index arithmetic is). GPU targets only: the
 * interpreter's select costs no more than its branch would. */
#include "pass_util.h"

enum { MAX_DEPTH = 16 };

typedef struct {
  ir_module *m;
  ir_func *f;
  ir_builder at;    /* before the select being rewritten */
  ir_value *test;   /* the conjunction built so far (scalar i1), NULL: true */
  const ir_op *loop;/* the innermost for around the select */
  bool uses_iv;     /* the test reads the loop's induction variable */
  bool changed;
} un;

typedef struct {
  ir_value *lo, *hi; /* scalar i64: the least and the greatest element */
} span;

static const ir_type *i64(un *u) { return ir_type_scalar(u->m, TK_I64); }

static ir_value *k64(un *u, int64_t v) { return ir_const_int(&u->at, i64(u), v); }

static void require(un *u, ir_value *c) {
  u->test = u->test ? ir_binary(&u->at, IR_AND, u->test, c) : c;
}

/* Whether scalar v is, or is computed from, the induction variable of u->loop. Values the
 * loop does not define cannot be: they are invariant. */
static bool reads_iv(const un *u, const ir_value *v, int depth) {
  if (v->owner && v->owner->parent == u->loop && v->index == 0) return true;
  if (!v->def || depth > MAX_DEPTH || !pass_op_within(v->def, u->loop->regions[0])) return false;
  for (int i = 0; i < v->def->noperands; i++)
    if (reads_iv(u, v->def->operands[i], depth + 1)) return true;
  return false;
}

/* A scalar i32 as i64 (its one value is both ends). */
static bool scalar_span(un *u, ir_value *v, span *s) {
  if (v->type->kind != IR_SCALAR || v->type->dtype != TK_I32) return false;
  if (reads_iv(u, v, 0)) u->uses_iv = true;
  s->lo = s->hi = ir_build1(&u->at, IR_CAST, i64(u), 1, &v);
  return true;
}

/* Requires that an i32 result with ends s did not wrap: both ends within i32. */
static void require_fits(un *u, const span *s) {
  require(u, ir_cmp_build(&u->at, IR_CMP_GE, s->lo, k64(u, INT32_MIN)));
  require(u, ir_cmp_build(&u->at, IR_CMP_LE, s->hi, k64(u, INT32_MAX)));
}

/* The ends of the i32 tile (or scalar) v, built before the select; false when v is not an
 * index expression this pass reads. */
static bool span_of(un *u, ir_value *v, span *s, int depth) {
  if (v->type->kind == IR_SCALAR) return scalar_span(u, v, s);
  if (v->type->kind != IR_TILE || v->type->dtype != TK_I32 || depth > MAX_DEPTH || !v->def) return false;
  ir_op *d = v->def;
  switch (d->opc) {
  case IR_ARANGE:
    s->lo = k64(u, d->attr);
    s->hi = k64(u, d->attr2 - 1);
    return true;
  case IR_CONST:
    s->lo = s->hi = k64(u, pass_const_int(v));
    return true;
  case IR_SPLAT: return scalar_span(u, d->operands[0], s);
  case IR_BROADCAST: case IR_EXPAND_DIMS: case IR_RESHAPE: case IR_CONVERT_LAYOUT:
    return span_of(u, d->operands[0], s, depth + 1);
  case IR_ADD: case IR_SUB: {
    span x, y;
    if (!span_of(u, d->operands[0], &x, depth + 1) || !span_of(u, d->operands[1], &y, depth + 1)) return false;
    bool add = d->opc == IR_ADD;
    s->lo = ir_binary(&u->at, d->opc, x.lo, add ? y.lo : y.hi);
    s->hi = ir_binary(&u->at, d->opc, x.hi, add ? y.hi : y.lo);
    require_fits(u, s);
    return true;
  }
  default: return false;
  }
}

/* Adds to the test what makes every element of the i1 tile c true; false when c is not a
 * conjunction of index compares. */
static bool all_true(un *u, ir_value *c, int depth) {
  ir_op *d = c->def;
  if (!d || depth > MAX_DEPTH) return false;
  switch (d->opc) {
  case IR_CONST: return pass_const_int(c) != 0;
  case IR_BROADCAST: case IR_EXPAND_DIMS: case IR_RESHAPE: case IR_CONVERT_LAYOUT:
    return all_true(u, d->operands[0], depth + 1);
  case IR_AND: return all_true(u, d->operands[0], depth + 1) && all_true(u, d->operands[1], depth + 1);
  case IR_CMP: {
    span x, y;
    if (!span_of(u, d->operands[0], &x, depth + 1) || !span_of(u, d->operands[1], &y, depth + 1)) return false;
    switch ((ir_cmp)d->attr) {
    case IR_CMP_LT: require(u, ir_cmp_build(&u->at, IR_CMP_LT, x.hi, y.lo)); return true;
    case IR_CMP_LE: require(u, ir_cmp_build(&u->at, IR_CMP_LE, x.hi, y.lo)); return true;
    case IR_CMP_GT: require(u, ir_cmp_build(&u->at, IR_CMP_GT, x.lo, y.hi)); return true;
    case IR_CMP_GE: require(u, ir_cmp_build(&u->at, IR_CMP_GE, x.lo, y.hi)); return true;
    default: return false;
    }
  }
  default: return false;
  }
}

/* Erases the ops built before `sel` after `mark` (a failed analysis leaves nothing),
 * users before what they use. */
static void drop_since(ir_op *mark, ir_op *sel) {
  while (sel->prev != mark) ir_op_erase(sel->prev);
}

typedef struct {
  const ir_value *v;
  const ir_block *blk;
  bool outside;
} use_scan;

static void scan_use(ir_op *o, void *ctx) {
  use_scan *s = ctx;
  for (int i = 0; i < o->noperands; i++)
    if (o->operands[i] == s->v && !pass_op_within(o, s->blk)) s->outside = true;
}

/* Whether every use of op's results within `scope` (the loop body: SSA values of a body
 * are not seen outside it) is inside blk. */
static bool used_only_in(ir_block *scope, const ir_op *op, const ir_block *blk) {
  for (int r = 0; r < op->nresults; r++) {
    use_scan s = {op->results[r], blk, false};
    ir_walk(scope, scan_use, &s);
    if (s.outside) return false;
  }
  return true;
}

/* Moves the pure ops before `iff` that only the else branch reads into it. One sweep
 * from the if backwards does a whole chain (cmp, expand_dims, broadcast): an op's users
 * after it have been moved by the time it is looked at. */
static void sink_into(ir_op *iff, ir_block *els) {
  ir_block *scope = iff->parent;
  ir_op *dest = els->first;
  for (ir_op *o = iff->prev, *p; o; o = p) {
    p = o->prev;
    if (!(ir_op_info(o->opc)->traits & IR_PURE) || o->nregions || !o->nresults) continue;
    if (!used_only_in(scope, o, els)) continue;
    ir_op_move_before(o, dest);
    dest = o;
  }
}

static void rewrite(un *u, ir_op *sel) {
  ir_op *mark = sel->prev;
  u->at = (ir_builder){u->m, sel->parent, sel, sel->loc};
  u->test = NULL;
  u->uses_iv = false;
  if (!all_true(u, sel->operands[0], 0) || !u->test || !u->uses_iv) {
    drop_since(mark, sel);
    return;
  }
  const ir_type *t = sel->results[0]->type;
  ir_op *iff = ir_build_if(&u->at, u->test, 1, &t);
  iff->attr = 1; /* likely: every block but the edge ones */
  ir_value *r = iff->results[0];
  ir_replace_all_uses(u->f, sel->results[0], r);
  ir_builder then = {u->m, iff->regions[0], NULL, sel->loc};
  ir_build(&then, IR_YIELD, 1, &sel->operands[1], 0, NULL);
  ir_builder els = {u->m, iff->regions[1], NULL, sel->loc};
  ir_op *y = ir_build(&els, IR_YIELD, 1, sel->results, 0, NULL);
  ir_op_move_before(sel, y);
  sink_into(iff, iff->regions[1]);
  u->changed = true;
}

/* The selects at the top level of each loop body (inner loops first); not those inside
 * an if of the body, whose branch is already a decision of the user's. */
static void visit_block(un *u, ir_block *blk);

static void visit_loop(un *u, ir_op *loop) {
  visit_block(u, loop->regions[0]);
  const ir_op *outer = u->loop;
  u->loop = loop;
  for (ir_op *o = loop->regions[0]->first, *n; o; o = n) {
    n = o->next;
    if (o->opc == IR_SELECT && o->results[0]->type->kind == IR_TILE && ir_type_numel(o->results[0]->type) > 1)
      rewrite(u, o);
  }
  u->loop = outer;
}

static void visit_block(un *u, ir_block *blk) {
  for (ir_op *o = blk->first; o; o = o->next) {
    if (o->opc == IR_FOR) {
      visit_loop(u, o);
      continue;
    }
    for (int k = 0; k < o->nregions; k++) visit_block(u, o->regions[k]);
  }
}

bool pass_unmask(ir_module *m, ir_func *f) {
  un u = {.m = m, .f = f};
  visit_block(&u, f->body);
  return u.changed;
}
