/* Creating modules, kernels, ops and blocks; the builder; for/if builders. Editing helpers
 * for passes live in edit.c. */
#include "ir.h"

#include <stdatomic.h>
#include <string.h>

/* Appends p to the n-element list old of owner (a block's args, a kernel's parameter
 * names, an op's regions), growing it geometrically: a kernel of 10 000 parameters is
 * built in linear time and memory. Every such list is made here, behind a header naming
 * its owner and capacity; a list whose owner is another object (a copied ir_func shares
 * its original's) is copied before it grows, so two owners never append into one array. */
typedef struct {
  const void *owner;
  int cap, pad_;
} list_header;
_Static_assert(sizeof(list_header) % _Alignof(max_align_t) == 0, "lists stay aligned");

static void **append_ptr(su_arena *a, const void *owner, void **old, int n, void *p) {
  list_header *h = old ? (list_header *)old - 1 : NULL;
  if (!h || h->owner != owner || n >= h->cap) {
    int cap = n < 4 ? 4 : 2 * n;
    h = su_alloc(a, sizeof *h + sizeof(void *) * (size_t)cap);
    h->owner = owner;
    h->cap = cap;
    void **v = (void **)(h + 1);
    if (n) memcpy(v, old, sizeof *v * (size_t)n);
    old = v;
  }
  old[n] = p;
  return old;
}

ir_module *ir_module_new(su_arena *a, const char *source_name) {
  ir_module *m = SU_NEW(a, ir_module);
  m->arena = a;
  m->source_name = su_strdup(a, source_name ? source_name : "<input>");
  return m;
}

static ir_block *block_new(ir_module *m, ir_op *parent) {
  ir_block *b = SU_NEW(m->arena, ir_block);
  b->parent = parent;
  return b;
}

static atomic_uint_fast64_t last_uid;

uint64_t ir_func_new_uid(void) { return (uint64_t)atomic_fetch_add(&last_uid, 1) + 1; }

ir_func *ir_func_new(ir_module *m, const char *name, ir_loc loc) {
  ir_func *f = SU_NEW(m->arena, ir_func);
  f->uid = ir_func_new_uid();
  f->name = su_strdup(m->arena, name);
  f->loc = loc;
  f->body = block_new(m, NULL);
  f->num_warps = TG_DEFAULT_WARPS;
  f->num_stages = TG_DEFAULT_STAGES;
  if (m->nfuncs == m->capfuncs) {
    int cap = m->capfuncs ? m->capfuncs * 2 : 4;
    ir_func **v = SU_NEW_ARRAY(m->arena, ir_func *, cap);
    if (m->nfuncs) memcpy(v, m->funcs, sizeof *v * (size_t)m->nfuncs);
    m->funcs = v;
    m->capfuncs = cap;
  }
  m->funcs[m->nfuncs++] = f;
  return f;
}

ir_value *ir_block_add_arg(ir_module *m, ir_block *b, const ir_type *t) {
  SU_ASSERT(t);
  ir_value *v = SU_NEW(m->arena, ir_value);
  v->type = t;
  v->owner = b;
  v->index = b->nargs;
  b->args = (ir_value **)append_ptr(m->arena, b, (void **)b->args, b->nargs, v);
  b->nargs++;
  return v;
}

ir_value *ir_func_add_param(ir_module *m, ir_func *f, const char *name, const ir_type *t) {
  const char *n = name ? su_strdup(m->arena, name) : NULL;
  f->param_names = (const char **)append_ptr(m->arena, f, (void **)f->param_names, f->body->nargs,
                                             (void *)n);
  if (f->param_div) { /* keep it parallel to the parameters */
    int *div = SU_NEW_ARRAY(m->arena, int, f->body->nargs + 1);
    memcpy(div, f->param_div, sizeof *div * (size_t)f->body->nargs);
    div[f->body->nargs] = 1;
    f->param_div = div;
  }
  if (f->param_pos) {
    bool *pos = SU_NEW_ARRAY(m->arena, bool, f->body->nargs + 1);
    memcpy(pos, f->param_pos, sizeof *pos * (size_t)f->body->nargs);
    pos[f->body->nargs] = false;
    f->param_pos = pos;
  }
  ir_value *v = ir_block_add_arg(m, f->body, t);
  v->name = n;
  return v;
}

int ir_param_div(const ir_func *f, int i) {
  return f->param_div && i >= 0 && i < f->body->nargs ? f->param_div[i] : 1;
}

void ir_func_set_param_div(ir_module *m, ir_func *f, int i, int d) {
  SU_ASSERT(i >= 0 && i < f->body->nargs && d >= 1 && (d & (d - 1)) == 0);
  if (!f->param_div) {
    if (d == 1) return;
    f->param_div = SU_NEW_ARRAY(m->arena, int, f->body->nargs);
    for (int k = 0; k < f->body->nargs; k++) f->param_div[k] = 1;
  }
  f->param_div[i] = d;
}

bool ir_param_pos(const ir_func *f, int i) {
  return f->param_pos && i >= 0 && i < f->body->nargs && f->param_pos[i];
}

void ir_func_set_param_pos(ir_module *m, ir_func *f, int i, bool pos) {
  SU_ASSERT(i >= 0 && i < f->body->nargs);
  if (!f->param_pos) {
    if (!pos) return;
    f->param_pos = SU_NEW_ARRAY(m->arena, bool, f->body->nargs);
    for (int k = 0; k < f->body->nargs; k++) f->param_pos[k] = false;
  }
  f->param_pos[i] = pos;
}

ir_func *ir_module_find(const ir_module *m, const char *name) {
  for (int i = 0; i < m->nfuncs; i++)
    if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
  return NULL;
}

/* ---- ops ---------------------------------------------------------------------------- */

void ir_block_insert_before(ir_block *blk, ir_op *op, ir_op *before) {
  SU_ASSERT(!op->parent);
  SU_ASSERT(!before || before->parent == blk);
  op->parent = blk;
  op->next = before;
  op->prev = before ? before->prev : blk->last;
  if (op->prev)
    op->prev->next = op;
  else
    blk->first = op;
  if (before)
    before->prev = op;
  else
    blk->last = op;
}

ir_op *ir_op_new(ir_module *m, ir_opcode opc, ir_loc loc, int nopnds, ir_value *const *opnds,
                 int nres, const ir_type *const *restypes) {
  SU_ASSERT(nopnds >= 0 && nres >= 0);
  ir_op *op = SU_NEW(m->arena, ir_op);
  op->opc = opc;
  op->loc = loc;
  op->noperands = nopnds;
  if (nopnds) op->operands = su_memdup(m->arena, opnds, sizeof *opnds * (size_t)nopnds);
  op->nresults = nres;
  if (nres) op->results = SU_NEW_ARRAY(m->arena, ir_value *, nres);
  for (int i = 0; i < nres; i++) {
    SU_ASSERT(restypes[i]);
    ir_value *v = SU_NEW(m->arena, ir_value);
    v->type = restypes[i];
    v->def = op;
    v->index = i;
    op->results[i] = v;
  }
  return op;
}

ir_op *ir_build(ir_builder *b, ir_opcode opc, int nopnds, ir_value *const *opnds, int nres,
                const ir_type *const *restypes) {
  ir_op *op = ir_op_new(b->m, opc, b->loc, nopnds, opnds, nres, restypes);
  ir_block_insert_before(b->before ? b->before->parent : b->block, op, b->before);
  return op;
}

ir_value *ir_build1(ir_builder *b, ir_opcode opc, const ir_type *t, int nopnds,
                    ir_value *const *opnds) {
  return ir_build(b, opc, nopnds, opnds, 1, &t)->results[0];
}

ir_value *ir_const_int(ir_builder *b, const ir_type *t, int64_t v) {
  SU_ASSERT(!ir_dtype_is_float(t->dtype));
  ir_op *op = ir_build(b, IR_CONST, 0, NULL, 1, &t);
  op->cval.i = v;
  return op->results[0];
}

ir_value *ir_const_float(ir_builder *b, const ir_type *t, double v) {
  SU_ASSERT(ir_dtype_is_float(t->dtype));
  ir_op *op = ir_build(b, IR_CONST, 0, NULL, 1, &t);
  op->cval.f = v;
  return op->results[0];
}

ir_value *ir_unary(ir_builder *b, ir_opcode opc, ir_value *x) {
  return ir_build1(b, opc, x->type, 1, &x);
}

ir_value *ir_binary(ir_builder *b, ir_opcode opc, ir_value *x, ir_value *y) {
  ir_value *v[2] = {x, y};
  return ir_build1(b, opc, x->type, 2, v);
}

ir_value *ir_cmp_build(ir_builder *b, ir_cmp pred, ir_value *x, ir_value *y) {
  ir_value *v[2] = {x, y};
  const ir_type *t = ir_type_like(b->m, x->type, ir_type_scalar(b->m, TK_I1));
  /* after tiling, the result lies as its operands do */
  if (x->type->kind == IR_TILE && x->type->layout) t = ir_type_with_layout(b->m, t, x->type->layout);
  ir_op *op = ir_build(b, IR_CMP, 2, v, 1, &t);
  op->attr = pred;
  return op->results[0];
}

ir_block *ir_op_add_region(ir_module *m, ir_op *op, int nargs, const ir_type *const *argtypes) {
  ir_block *blk = block_new(m, op);
  for (int i = 0; i < nargs; i++) ir_block_add_arg(m, blk, argtypes[i]);
  op->regions = (ir_block **)append_ptr(m->arena, op, (void **)op->regions, op->nregions, blk);
  op->nregions++;
  return blk;
}

ir_op *ir_build_for(ir_builder *b, ir_value *lb, ir_value *ub, ir_value *step, int ninit,
                    ir_value *const *inits) {
  su_arena *a = b->m->arena;
  ir_value **opnds = SU_NEW_ARRAY(a, ir_value *, 3 + ninit);
  const ir_type **types = SU_NEW_ARRAY(a, const ir_type *, 1 + ninit);
  opnds[0] = lb;
  opnds[1] = ub;
  opnds[2] = step;
  types[0] = lb->type;
  for (int i = 0; i < ninit; i++) {
    opnds[3 + i] = inits[i];
    types[1 + i] = inits[i]->type;
  }
  ir_op *op = ir_build(b, IR_FOR, 3 + ninit, opnds, ninit, types + 1);
  ir_op_add_region(b->m, op, 1 + ninit, types);
  return op;
}

ir_op *ir_build_if(ir_builder *b, ir_value *cond, int nres, const ir_type *const *restypes) {
  ir_op *op = ir_build(b, IR_IF, 1, &cond, nres, restypes);
  ir_op_add_region(b->m, op, 0, NULL);
  ir_op_add_region(b->m, op, 0, NULL);
  return op;
}
