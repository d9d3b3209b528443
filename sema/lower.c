/* sema/lower.c — a checked file to Tile IR: one ir_func per kernel, and the statements.
 * Variables are not memory: each symbol holds its current SSA value (sema_sym.val), an
 * assignment just replaces it, and runtime loops/ifs thread the vars sema recorded as
 * assigned inside them through block arguments, yields and results. */
#include <string.h>

#include "sema_int.h"

static void name_value(ir_value *v, const char *name) {
  if (v && !v->name) v->name = name;
}

static void yield(sema_lowerer *l, sema_flow *fl) {
  ir_value **vals = SU_NEW_ARRAY(l->m->arena, ir_value *, fl->nsyms + 1);
  for (int i = 0; i < fl->nsyms; i++) vals[i] = fl->syms[i]->val;
  ir_build(&l->b, IR_YIELD, fl->nsyms, vals, 0, NULL);
}

/* Lowers stmts into region blk, then yields fl's vars there. */
static void lower_region(sema_lowerer *l, ir_block *blk, ast_node *stmt, sema_flow *fl);

static void lower_stmt(sema_lowerer *l, ast_node *s);

static void lower_for(sema_lowerer *l, ast_node *s) {
  ast_node *it = s->lhs;
  if (strcmp(it->name, "static_range") == 0) {
    for (int i = 0; i < s->stmts.len; i++) sema_lower_block(l, s->stmts.items[i]);
    return;
  }
  const ir_type *ivt = it->sema_type;
  ir_value *b[3] = {NULL, NULL, NULL};
  int n = it->args.len;
  for (int i = 0; i < n; i++) {
    ast_node *a = it->args.items[i];
    b[n == 1 ? 1 : i] = sema_lower_as(l, a->kind == AST_ARG ? a->lhs : a, ivt);
  }
  sema_lower_at(l, s);
  if (!b[0]) b[0] = ir_const_int(&l->b, ivt, 0);
  if (!b[2]) b[2] = ir_const_int(&l->b, ivt, 1);
  sema_flow *fl = s->sema_ref;
  ir_value **inits = SU_NEW_ARRAY(l->m->arena, ir_value *, fl->nsyms + 1);
  for (int i = 0; i < fl->nsyms; i++) inits[i] = fl->syms[i]->val;
  ir_op *op = ir_build_for(&l->b, b[0], b[1], b[2], fl->nsyms, inits);
  ir_block *body = op->regions[0];
  fl->iv->val = body->args[0];
  name_value(body->args[0], s->name);
  for (int i = 0; i < fl->nsyms; i++) {
    fl->syms[i]->val = body->args[1 + i];
    name_value(body->args[1 + i], fl->syms[i]->name);
  }
  lower_region(l, body, s->body, fl);
  for (int i = 0; i < fl->nsyms; i++) {
    fl->syms[i]->val = op->results[i];
    name_value(op->results[i], fl->syms[i]->name);
  }
}

static void lower_if(sema_lowerer *l, ast_node *s) {
  if (s->lhs->sema_is_const) {
    ast_node *taken = s->lhs->sema_const.i ? s->body : s->els;
    if (taken) lower_stmt(l, taken);
    return;
  }
  sema_flow *fl = s->sema_ref;
  ir_value *cond = sema_lower_expr(l, s->lhs);
  sema_lower_at(l, s);
  const ir_type **types = SU_NEW_ARRAY(l->m->arena, const ir_type *, fl->nsyms + 1);
  ir_value **before = SU_NEW_ARRAY(l->m->arena, ir_value *, fl->nsyms + 1);
  for (int i = 0; i < fl->nsyms; i++) {
    types[i] = fl->syms[i]->type;
    before[i] = fl->syms[i]->val;
  }
  ir_op *op = ir_build_if(&l->b, cond, fl->nsyms, types);
  lower_region(l, op->regions[0], s->body, fl);
  for (int i = 0; i < fl->nsyms; i++) fl->syms[i]->val = before[i];
  lower_region(l, op->regions[1], s->els, fl);
  for (int i = 0; i < fl->nsyms; i++) {
    fl->syms[i]->val = op->results[i];
    name_value(op->results[i], fl->syms[i]->name);
  }
}

static void lower_region(sema_lowerer *l, ir_block *blk, ast_node *stmt, sema_flow *fl) {
  ir_builder save = l->b;
  l->b.block = blk;
  l->b.before = NULL;
  if (stmt) lower_stmt(l, stmt);
  yield(l, fl);
  ir_loc loc = l->b.loc;
  l->b = save;
  l->b.loc = loc;
}

static void lower_stmt(sema_lowerer *l, ast_node *s) {
  switch (s->kind) {
  case AST_LET: {
    sema_sym *y = s->sema_ref;
    if (y->kind == SYM_CONST) return; /* its uses are constants */
    y->val = sema_lower_as(l, s->rhs, y->type);
    name_value(y->val, y->name);
    return;
  }
  case AST_ASSIGN: {
    sema_sym *y = s->sema_ref;
    y->val = sema_lower_as(l, s->lhs ? s->lhs : s->rhs, y->type);
    name_value(y->val, y->name);
    return;
  }
  case AST_EXPR_STMT:
    if (s->lhs && !s->lhs->sema_is_const) sema_lower_expr(l, s->lhs);
    return;
  case AST_FOR: lower_for(l, s); return;
  case AST_IF: lower_if(l, s); return;
  case AST_RETURN:
    if (s->lhs) l->ret = sema_lower_as(l, s->lhs, l->ret_type);
    return;
  case AST_BLOCK: sema_lower_block(l, s); return;
  default: SU_UNREACHABLE();
  }
}

void sema_lower_block(sema_lowerer *l, ast_node *blk) {
  if (!blk) return;
  for (int i = 0; i < blk->stmts.len; i++) lower_stmt(l, blk->stmts.items[i]);
}

static void lower_kernel(ir_module *m, ast_node *k) {
  ir_loc loc = {k->loc.line, k->loc.col};
  ir_func *fn = ir_func_new(m, k->name, loc);
  const sema_kernel *info = k->sema_ref;
  fn->num_warps = info->warps;
  fn->num_stages = info->stages;
  fn->warp_specialize = info->warp_specialize;
  fn->persist = info->persistent;
  fn->nbindings = k->cparams.len;
  fn->bindings = SU_NEW_ARRAY(m->arena, ir_binding, k->cparams.len + 1);
  for (int i = 0; i < k->cparams.len; i++) {
    const sema_sym *s = k->cparams.items[i]->sema_ref;
    ir_binding *b = &fn->bindings[i];
    b->name = s->name;
    if (s->kind == SYM_DTYPE) {
      b->is_dtype = true;
      b->ival = s->type->dtype;
      continue;
    }
    b->is_float = ir_dtype_is_float(s->type->dtype);
    if (b->is_float) b->fval = s->cval.f;
    else b->ival = s->cval.i;
  }
  for (int i = 0; i < k->params.len; i++) {
    sema_sym *s = k->params.items[i]->sema_ref;
    s->val = ir_func_add_param(m, fn, s->name, s->type);
  }
  sema_lowerer l = {.m = m, .b = {.m = m, .block = fn->body, .loc = loc}};
  sema_lower_block(&l, k->body);
  if (k->body) l.b.loc = (ir_loc){k->body->loc.line, k->body->loc.col}; /* the return is the body's */
  ir_build(&l.b, IR_RETURN, 0, NULL, 0, NULL);
}

void sema_lower(ast_file *f, ir_module *m) {
  for (int i = 0; i < f->decls.len; i++)
    if (f->decls.items[i]->kind == AST_KERNEL) lower_kernel(m, f->decls.items[i]);
}
