/* Dead code elimination by liveness, not by use counts, so that dead cycles through
 * loop-carried values (acc = acc + x, never read after the loop) go too.
 *
 * Live roots are the ops with an effect: load, store, atomics, print, assert (loads stay
 * because they may fault) and the terminators' needs. A live op makes its operands live,
 * and makes the control operands of every op enclosing it live (the loop bounds, the if
 * condition), since it only runs through them. A live result of `for` number i makes
 * carried slot i live: its initial value, its region argument and yield operand i; a
 * live region argument makes its slot live the same way; a live induction variable makes
 * the bounds live. A live `if` result makes the condition and that yield operand of both
 * branches live.
 *
 * Then, bottom-up: dead pure ops are erased; dead slots of a `for` (result, initial value,
 * region argument and yield operand) and dead results of an `if` are dropped; a `for` or
 * `if` left with no results and nothing but its yields is erased (a loop that computes
 * nothing observable is not run, whatever its trip count). */
#include "pass_util.h"

typedef struct {
  su_arena *scratch;
  ir_block *scope;  /* NULL: the whole kernel, pure ops only; else only there, any op */
  bool (*root)(const ir_op *op, void *arg);
  void *root_arg;
  bool *live;       /* by value id */
  ir_value **work;  /* values marked live whose consequences are not yet drawn */
  int nwork;
  int nvalues;
  bool changed;
} dce_ctx;

static void mark(dce_ctx *c, ir_value *v) {
  SU_ASSERT(v->id >= 0 && v->id < c->nvalues); /* a value from outside the kernel */
  if (c->live[v->id]) return;
  c->live[v->id] = true;
  c->work[c->nwork++] = v;
}

static ir_op *yield_of(ir_block *b) {
  SU_ASSERT(b->last && b->last->opc == IR_YIELD);
  return b->last;
}

/* The operands that decide whether and how often op's regions run. */
static void mark_control(dce_ctx *c, ir_op *op) {
  int n = op->opc == IR_FOR ? 3 : op->opc == IR_IF ? 1 : 0;
  for (int i = 0; i < n; i++) mark(c, op->operands[i]);
  if (op->opc == IR_FOR && op->attr == 1) { /* {while = 1}: the flag decides too */
    mark(c, op->results[0]);
    mark(c, op->operands[3]);
    mark(c, op->regions[0]->args[1]);
    mark(c, yield_of(op->regions[0])->operands[0]);
  }
}

static void mark_live_op(dce_ctx *c, ir_op *op) {
  if (op->opc != IR_FOR && op->opc != IR_IF)
    for (int i = 0; i < op->noperands; i++) mark(c, op->operands[i]);
  for (ir_block *b = op->parent; b && b->parent; b = b->parent->parent) mark_control(c, b->parent);
}

static void mark_for_slot(dce_ctx *c, ir_op *op, int i) {
  mark(c, op->results[i]);
  mark(c, op->operands[3 + i]);
  mark(c, op->regions[0]->args[1 + i]);
  mark(c, yield_of(op->regions[0])->operands[i]);
  mark_live_op(c, op);
  mark_control(c, op);
}

/* Draws the consequences of v being live. */
static void propagate(dce_ctx *c, ir_value *v) {
  ir_op *def = v->def;
  if (def && def->opc == IR_FOR) {
    mark_for_slot(c, def, v->index);
  } else if (def && def->opc == IR_IF) {
    mark_control(c, def);
    mark_live_op(c, def);
    for (int r = 0; r < 2; r++) mark(c, yield_of(def->regions[r])->operands[v->index]);
  } else if (def) {
    mark_live_op(c, def);
  } else if (v->owner->parent && v->owner->parent->opc == IR_FOR) {
    ir_op *loop = v->owner->parent;
    if (v->index == 0) {
      mark_control(c, loop);
      mark_live_op(c, loop);
    } else {
      mark_for_slot(c, loop, v->index - 1);
    }
  }
}

static bool is_root(const ir_op *op) {
  int t = ir_op_info(op->opc)->traits;
  return (t & IR_MEM) || op->opc == IR_RETURN;
}

static void find_roots(ir_op *op, void *arg) {
  dce_ctx *c = arg;
  bool root = c->root && pass_op_within(op, c->scope) ? c->root(op, c->root_arg) : is_root(op);
  if (root) mark_live_op(c, op);
}

/* Keeps the entries of v[0..n) whose keep flag is set; returns the new count. */
static int compact(ir_value **v, int n, const bool *keep) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (keep[i]) v[k++] = v[i];
  return k;
}

static void renumber(ir_value **v, int n) {
  for (int i = 0; i < n; i++) v[i]->index = i;
}

/* Drops the dead carried slots of a for (results, inits, region args, yield operands). */
static void drop_for_slots(dce_ctx *c, ir_op *op) {
  int n = op->nresults;
  bool *keep = SU_NEW_ARRAY(c->scratch, bool, n + 3);
  bool any_dead = false;
  for (int i = 0; i < n; i++) {
    keep[i] = c->live[op->results[i]->id];
    any_dead |= !keep[i];
  }
  if (!any_dead) return;
  ir_block *body = op->regions[0];
  ir_op *y = yield_of(body);
  op->nresults = compact(op->results, n, keep);
  renumber(op->results, op->nresults);
  y->noperands = compact(y->operands, n, keep);
  body->nargs = 1 + compact(body->args + 1, n, keep);
  renumber(body->args, body->nargs);
  op->noperands = 3 + compact(op->operands + 3, n, keep);
  c->changed = true;
}

/* Drops the dead results of an if and the matching yield operands of both branches. */
static void drop_if_results(dce_ctx *c, ir_op *op) {
  int n = op->nresults;
  bool *keep = SU_NEW_ARRAY(c->scratch, bool, n + 1);
  bool any_dead = false;
  for (int i = 0; i < n; i++) {
    keep[i] = c->live[op->results[i]->id];
    any_dead |= !keep[i];
  }
  if (!any_dead) return;
  for (int r = 0; r < 2; r++) {
    ir_op *y = yield_of(op->regions[r]);
    y->noperands = compact(y->operands, n, keep);
  }
  op->nresults = compact(op->results, n, keep);
  renumber(op->results, op->nresults);
  c->changed = true;
}

static bool only_yields(const ir_op *op) {
  for (int r = 0; r < op->nregions; r++)
    if (op->regions[r]->first != op->regions[r]->last) return false;
  return true;
}

static bool live_op(const dce_ctx *c, const ir_op *op);

static bool any_live(const dce_ctx *c, const ir_block *blk) {
  for (const ir_op *op = blk->first; op; op = op->next)
    if (op->opc != IR_YIELD && live_op(c, op)) return true;
  return false;
}

/* In a scoped sweep: an op is live when a result is, when it is a root, or when a region
 * of it holds a live op. */
static bool live_op(const dce_ctx *c, const ir_op *op) {
  for (int i = 0; i < op->nresults; i++)
    if (c->live[op->results[i]->id]) return true;
  if (op->opc == IR_YIELD || op->opc == IR_RETURN || c->root(op, c->root_arg)) return true;
  for (int r = 0; r < op->nregions; r++)
    if (any_live(c, op->regions[r])) return true;
  return false;
}

static void sweep_block(dce_ctx *c, ir_block *blk) {
  ir_op *prev;
  bool scoped = false;
  for (const ir_block *b = blk; c->scope && b && !scoped; b = b->parent ? b->parent->parent : NULL)
    scoped = b == c->scope;
  for (ir_op *op = blk->last; op; op = prev) {
    prev = op->prev;
    if (scoped && !live_op(c, op)) {
      ir_op_erase(op);
      c->changed = true;
      continue;
    }
    if (op->opc != IR_FOR && op->opc != IR_IF && op->nregions) { /* warp_spec */
      for (int r = 0; r < op->nregions; r++) sweep_block(c, op->regions[r]);
      continue;
    }
    if (op->opc == IR_FOR || op->opc == IR_IF) {
      /* Slots go first, so no yield still names a value the sweep below erases. */
      if (op->opc == IR_FOR)
        drop_for_slots(c, op);
      else
        drop_if_results(c, op);
      for (int r = 0; r < op->nregions; r++) sweep_block(c, op->regions[r]);
      if (op->nresults == 0 && only_yields(op)) {
        ir_op_erase(op);
        c->changed = true;
      }
      continue;
    }
    if (!(ir_op_info(op->opc)->traits & IR_PURE)) continue;
    bool used = false;
    for (int i = 0; i < op->nresults; i++) used |= c->live[op->results[i]->id];
    if (!used) {
      ir_op_erase(op);
      c->changed = true;
    }
  }
}

static bool run(ir_func *f, ir_block *scope, bool (*root)(const ir_op *, void *), void *arg) {
  dce_ctx c = {0};
  c.scope = scope;
  c.root = root;
  c.root_arg = arg;
  int n = ir_number_values(f);
  c.nvalues = n;
  c.scratch = su_arena_new();
  c.live = SU_NEW_ARRAY(c.scratch, bool, n + 1);
  c.work = SU_NEW_ARRAY(c.scratch, ir_value *, n + 1);
  ir_walk(f->body, find_roots, &c);
  while (c.nwork > 0) propagate(&c, c.work[--c.nwork]);
  sweep_block(&c, f->body);
  su_arena_free(c.scratch);
  return c.changed;
}

bool pass_dce(ir_module *m, ir_func *f) {
  (void)m;
  return run(f, NULL, NULL, NULL);
}

bool pass_dce_scoped(ir_module *m, ir_func *f, ir_block *scope, bool (*root)(const ir_op *op, void *arg),
                     void *arg) {
  (void)m;
  return run(f, scope, root, arg);
}
