/* Editing helpers for passes: unlinking and moving ops, rewriting uses, walking regions,
 * numbering values and counting their uses. The IR keeps no use lists (passes are small
 * and whole-function walks are cheap), so use queries walk. */
#include "ir.h"

#include <string.h>

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

/* ---- cloning ---- */

ir_vmap *ir_vmap_new(su_arena *a) {
  ir_vmap *m = SU_NEW(a, ir_vmap);
  m->map = su_map_new(a);
  return m;
}

void ir_vmap_put(ir_vmap *m, const ir_value *from, ir_value *to) {
  su_map_put(m->map, (const char *)&from, sizeof from, to);
}

ir_value *ir_vmap_get(const ir_vmap *m, const ir_value *v) {
  ir_value *to = su_map_get(m->map, (const char *)&v, sizeof v);
  return to ? to : (ir_value *)v;
}

static void clone_block_into(ir_module *m, const ir_block *from, ir_block *to, ir_vmap *vm);

void ir_op_copy_attrs(ir_op *dst, const ir_op *src) {
  dst->attr = src->attr;
  dst->attr2 = src->attr2;
  dst->cval = src->cval;
  dst->ints = src->ints;
  dst->nints = src->nints;
  dst->str = src->str;
}

ir_op *ir_op_clone(ir_module *m, const ir_op *op, ir_vmap *vm) {
  ir_value **opnds = SU_NEW_ARRAY(m->arena, ir_value *, op->noperands ? op->noperands : 1);
  const ir_type **types = SU_NEW_ARRAY(m->arena, const ir_type *, op->nresults ? op->nresults : 1);
  for (int i = 0; i < op->noperands; i++) opnds[i] = ir_vmap_get(vm, op->operands[i]);
  for (int i = 0; i < op->nresults; i++) types[i] = op->results[i]->type;
  ir_op *c = ir_op_new(m, op->opc, op->loc, op->noperands, opnds, op->nresults, types);
  ir_op_copy_attrs(c, op);
  for (int i = 0; i < op->nresults; i++) {
    c->results[i]->name = op->results[i]->name;
    ir_vmap_put(vm, op->results[i], c->results[i]);
  }
  for (int r = 0; r < op->nregions; r++) {
    const ir_block *b = op->regions[r];
    const ir_type **at = SU_NEW_ARRAY(m->arena, const ir_type *, b->nargs ? b->nargs : 1);
    for (int i = 0; i < b->nargs; i++) at[i] = b->args[i]->type;
    ir_block *nb = ir_op_add_region(m, c, b->nargs, at);
    for (int i = 0; i < b->nargs; i++) {
      nb->args[i]->name = b->args[i]->name;
      ir_vmap_put(vm, b->args[i], nb->args[i]);
    }
    clone_block_into(m, b, nb, vm);
  }
  return c;
}

static void clone_block_into(ir_module *m, const ir_block *from, ir_block *to, ir_vmap *vm) {
  for (const ir_op *op = from->first; op; op = op->next)
    ir_block_insert_before(to, ir_op_clone(m, op, vm), NULL);
}

ir_func *ir_func_clone(ir_module *m, const ir_func *f) {
  ir_func *g = SU_NEW(m->arena, ir_func);
  *g = *f;
  g->uid = ir_func_new_uid();
  g->body = SU_NEW(m->arena, ir_block);
  ir_vmap *vm = ir_vmap_new(m->arena);
  for (int i = 0; i < f->body->nargs; i++) {
    ir_value *p = ir_block_add_arg(m, g->body, f->body->args[i]->type);
    p->name = f->body->args[i]->name;
    ir_vmap_put(vm, f->body->args[i], p);
  }
  int n = f->body->nargs;
  if (f->param_div) g->param_div = su_memdup(m->arena, f->param_div, sizeof(int) * (size_t)(n ? n : 1));
  if (f->param_pos) g->param_pos = su_memdup(m->arena, f->param_pos, sizeof(bool) * (size_t)(n ? n : 1));
  clone_block_into(m, f->body, g->body, vm);
  return g;
}

ir_value *ir_for_add_carried(ir_module *m, ir_op *loop, ir_value *init, ir_value **arg) {
  SU_ASSERT(loop->opc == IR_FOR && loop->parent);
  su_arena *a = m->arena;
  ir_value **opnds = SU_NEW_ARRAY(a, ir_value *, loop->noperands + 1);
  memcpy(opnds, loop->operands, sizeof *opnds * (size_t)loop->noperands);
  opnds[loop->noperands] = init;
  loop->operands = opnds;
  loop->noperands++;
  ir_value **res = SU_NEW_ARRAY(a, ir_value *, loop->nresults + 1);
  if (loop->nresults) memcpy(res, loop->results, sizeof *res * (size_t)loop->nresults);
  ir_value *r = SU_NEW(a, ir_value);
  r->type = init->type;
  r->def = loop;
  r->index = loop->nresults;
  res[loop->nresults] = r;
  loop->results = res;
  loop->nresults++;
  *arg = ir_block_add_arg(m, loop->regions[0], init->type);
  return r;
}

ir_value *ir_if_add_result(ir_module *m, ir_op *op, const ir_type *t) {
  SU_ASSERT(op->opc == IR_IF);
  ir_value **res = SU_NEW_ARRAY(m->arena, ir_value *, op->nresults + 1);
  if (op->nresults) memcpy(res, op->results, sizeof *res * (size_t)op->nresults);
  ir_value *r = SU_NEW(m->arena, ir_value);
  r->type = t;
  r->def = op;
  r->index = op->nresults;
  res[op->nresults] = r;
  op->results = res;
  op->nresults++;
  return r;
}

void ir_yield_add(ir_module *m, ir_op *yield, ir_value *v) {
  SU_ASSERT(yield->opc == IR_YIELD);
  ir_value **opnds = SU_NEW_ARRAY(m->arena, ir_value *, yield->noperands + 1);
  if (yield->noperands) memcpy(opnds, yield->operands, sizeof *opnds * (size_t)yield->noperands);
  opnds[yield->noperands] = v;
  yield->operands = opnds;
  yield->noperands++;
}
