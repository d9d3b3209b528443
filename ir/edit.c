/* Editing helpers for passes: unlinking and moving ops, rewriting uses, walking regions,
 * numbering values and counting their uses. The IR keeps no use lists (passes are small
 * and whole-function walks are cheap), so use queries walk. */
#include "ir.h"

static void unlink_op(ir_op *op) {
  ir_block *blk = op->parent;
  SU_ASSERT(blk);
  if (op->prev)
    op->prev->next = op->next;
  else
    blk->first = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    blk->last = op->prev;
  op->prev = op->next = NULL;
  op->parent = NULL;
}

void ir_op_erase(ir_op *op) { unlink_op(op); }

void ir_op_move_before(ir_op *op, ir_op *before) {
  SU_ASSERT(op != before && before->parent);
  unlink_op(op);
  ir_block_insert_before(before->parent, op, before);
}

/* Pre-order walk that tolerates fn erasing or moving the op it is given: the successor is
 * read before the call, and the regions of an op fn erased are not entered. */
void ir_walk(ir_block *block, void (*fn)(ir_op *op, void *ctx), void *ctx) {
  ir_op *next;
  for (ir_op *op = block->first; op; op = next) {
    next = op->next;
    ir_block *home = op->parent;
    fn(op, ctx);
    if (op->parent != home) continue;
    for (int r = 0; r < op->nregions; r++) ir_walk(op->regions[r], fn, ctx);
  }
}

typedef struct {
  ir_value *from, *to;
} replace_ctx;

static void replace_in(ir_op *op, void *ctx) {
  replace_ctx *c = ctx;
  for (int i = 0; i < op->noperands; i++)
    if (op->operands[i] == c->from) op->operands[i] = c->to;
}

void ir_replace_all_uses(ir_func *f, ir_value *from, ir_value *to) {
  replace_ctx c = {from, to};
  ir_walk(f->body, replace_in, &c);
}

static void number_op(ir_op *op, void *ctx) {
  int *next = ctx;
  for (int i = 0; i < op->nresults; i++) op->results[i]->id = (*next)++;
  for (int r = 0; r < op->nregions; r++)
    for (int i = 0; i < op->regions[r]->nargs; i++) op->regions[r]->args[i]->id = (*next)++;
}

int ir_number_values(ir_func *f) {
  int next = 0;
  for (int i = 0; i < f->body->nargs; i++) f->body->args[i]->id = next++;
  ir_walk(f->body, number_op, &next);
  return next;
}

typedef struct {
  int *counts;
  int n;
} count_ctx;

static void count_in(ir_op *op, void *ctx) {
  count_ctx *c = ctx;
  for (int i = 0; i < op->noperands; i++) {
    int id = op->operands[i]->id;
    /* An operand from outside f has a stale id: the IR was not verified. */
    SU_ASSERT(id >= 0 && id < c->n);
    c->counts[id]++;
  }
}

int *ir_count_uses(ir_module *m, ir_func *f, int *nvalues) {
  count_ctx c;
  c.n = ir_number_values(f);
  c.counts = SU_NEW_ARRAY(m->arena, int, c.n > 0 ? c.n : 1);
  ir_walk(f->body, count_in, &c);
  *nvalues = c.n;
  return c.counts;
}
