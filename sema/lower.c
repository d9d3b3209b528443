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

static ir_value *flag_value(sema_lowerer *l, bool v) {
  return ir_const_int(&l->b, ir_type_scalar(l->m, TK_I1), v);
}

/* A runtime loop over [b[0], b[1]) by b[2] carrying fl's vars; with fl->go, the first of
 * them is the IR loop's {while} flag. */
static void lower_loop(sema_lowerer *l, ast_node *s, ir_value *const b[3]);

static void lower_while(sema_lowerer *l, ast_node *s) {
  sema_flow *fl = s->sema_ref;
  fl->go->val = sema_lower_as(l, s->lhs, fl->go->type);
  sema_lower_at(l, s);
  const ir_type *i64 = ir_type_scalar(l->m, TK_I64);
  ir_value *b[3] = {ir_const_int(&l->b, i64, 0), ir_const_int(&l->b, i64, INT64_MAX),
                    ir_const_int(&l->b, i64, 1)};
  lower_loop(l, s, b);
}

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
  if (fl->go) fl->go->val = flag_value(l, true);
  lower_loop(l, s, b);
}

static void lower_loop(sema_lowerer *l, ast_node *s, ir_value *const b[3]) {
  sema_flow *fl = s->sema_ref;
  ir_value **inits = SU_NEW_ARRAY(l->m->arena, ir_value *, fl->nsyms + 1);
  for (int i = 0; i < fl->nsyms; i++) inits[i] = fl->syms[i]->val;
  ir_op *op = ir_build_for(&l->b, b[0], b[1], b[2], fl->nsyms, inits);
  if (fl->go) op->attr = 1; /* {while}: go is syms[0] (go_first) */
  ir_block *body = op->regions[0];
  if (fl->iv) fl->iv->val = body->args[0];
  name_value(body->args[0], s->name ? s->name : "#while");
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

/* The `if` of statement s (not constant) with one result per symbol its branches assign;
 * *before gets those symbols' values on entry, for each branch to start from. */
static ir_op *build_if(sema_lowerer *l, ast_node *s, ir_value ***before) {
  sema_flow *fl = s->sema_ref;
  ir_value *cond = sema_lower_expr(l, s->lhs);
  sema_lower_at(l, s);
  const ir_type **types = SU_NEW_ARRAY(l->m->arena, const ir_type *, fl->nsyms + 1);
  *before = SU_NEW_ARRAY(l->m->arena, ir_value *, fl->nsyms + 1);
  for (int i = 0; i < fl->nsyms; i++) {
    types[i] = fl->syms[i]->type;
    (*before)[i] = fl->syms[i]->val;
  }
  return ir_build_if(&l->b, cond, fl->nsyms, types);
}

static void lower_if(sema_lowerer *l, ast_node *s) {
  if (s->lhs->sema_is_const) {
    ast_node *taken = s->lhs->sema_const.i ? s->body : s->els;
    if (taken) lower_stmt(l, taken);
    return;
  }
  sema_flow *fl = s->sema_ref;
  ir_value **before;
  ir_op *op = build_if(l, s, &before);
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
  if (fl->skip) { /* a loop body: nothing skipped yet this iteration */
    ir_loc at = l->b.loc;
    fl->skip->val = flag_value(l, false);
    l->b.loc = at;
  }
  if (stmt) lower_stmt(l, stmt);
  yield(l, fl);
  ir_loc loc = l->b.loc;
  l->b = save;
  l->b.loc = loc;
}

static void lower_stmt(sema_lowerer *l, ast_node *s) {
  switch (s->kind) {
  case AST_LET: {
    if (!s->name) { /* let (a, b) = e */
      ir_value **vals = SU_NEW_ARRAY(l->m->arena, ir_value *, s->params.len);
      sema_lower_tuple(l, s->rhs, vals);
      for (int i = 0; i < s->params.len; i++) {
        sema_sym *y = s->params.items[i]->sema_ref;
        if (!y) continue; /* '_' */
        y->val = vals[i];
        name_value(y->val, y->name);
      }
      return;
    }
    sema_sym *y = s->sema_ref;
    if (y->kind == SYM_CONST) return; /* its uses are constants */
    y->val = sema_lower_as(l, s->rhs, y->type);
    name_value(y->val, y->name);
    return;
  }
  case AST_ASSIGN: {
    if (!s->name) { /* (a, b) = e: every value first, so (a, b) = (b, a) swaps */
      ir_value **vals = SU_NEW_ARRAY(l->m->arena, ir_value *, s->args.len);
      sema_lower_tuple(l, s->rhs, vals);
      for (int i = 0; i < s->args.len; i++) {
        sema_sym *y = s->args.items[i]->sema_ref;
        y->val = sema_lower_convert(l, vals[i], y->type);
        name_value(y->val, y->name);
      }
      return;
    }
    sema_sym *y = s->sema_ref;
    y->val = sema_lower_as(l, s->lhs ? s->lhs : s->rhs, y->type);
    name_value(y->val, y->name);
    return;
  }
  case AST_EXPR_STMT:
    if (s->lhs && !s->lhs->sema_is_const) sema_lower_expr(l, s->lhs);
    return;
  case AST_FOR: lower_for(l, s); return;
  case AST_WHILE: lower_while(l, s); return;
  case AST_BREAK: case AST_CONTINUE: {
    sema_flow *fl = s->sema_ref;
    sema_lower_at(l, s);
    if (s->kind == AST_BREAK) fl->go->val = flag_value(l, false);
    fl->skip->val = flag_value(l, true);
    return;
  }
  case AST_IF: lower_if(l, s); return;
  case AST_RETURN:
    if (s->lhs && l->rets) sema_lower_tuple(l, s->lhs, l->rets);
    else if (s->lhs) l->ret = sema_lower_as(l, s->lhs, l->ret_type);
    return;
  case AST_BLOCK: sema_lower_block(l, s); return;
  default: SU_UNREACHABLE();
  }
}

void sema_lower_block(sema_lowerer *l, ast_node *blk) {
  if (!blk) return;
  for (int i = 0; i < blk->stmts.len; i++) lower_stmt(l, blk->stmts.items[i]);
}

/* True when the branch b of an if ends in an early exit of the kernel. */
static bool exits(const ast_node *b) {
  return b && b->kind == AST_BLOCK && b->stmts.len &&
         b->stmts.items[b->stmts.len - 1]->kind == AST_RETURN && b->stmts.items[b->stmts.len - 1]->ival;
}

static bool has_exit(const ast_node *s) {
  if (!s || s->kind != AST_IF) return false;
  return exits(s->body) || exits(s->els) || (s->els && s->els->kind == AST_IF && has_exit(s->els));
}

static void lower_tail(sema_lowerer *l, ast_node **stmts, int n);

/* One arm of an if with an early exit, followed by the kernel's remaining statements:
 * an else-if chain passes them on to its own arms, a block takes them unless it exits. */
static void lower_arm(sema_lowerer *l, ast_node *b, ast_node **rest, int nrest) {
  if (b && b->kind == AST_IF) {
    ast_node **tail = SU_NEW_ARRAY(l->m->arena, ast_node *, nrest + 1);
    tail[0] = b;
    for (int j = 0; j < nrest; j++) tail[1 + j] = rest[j];
    lower_tail(l, tail, nrest + 1);
    return;
  }
  if (b) lower_stmt(l, b);
  if (!exits(b)) lower_tail(l, rest, nrest);
}

/* The kernel's statements from stmts[0] on. An if with an early exit takes the
 * statements after it into its branches that do not return: `if c { return; } rest`
 * becomes `if c { } else { rest }`. */
static void lower_tail(sema_lowerer *l, ast_node **stmts, int n) {
  for (int i = 0; i < n; i++) {
    ast_node *s = stmts[i];
    if (!has_exit(s)) {
      lower_stmt(l, s);
      continue;
    }
    ast_node **rest = stmts + i + 1;
    int nrest = n - i - 1;
    if (s->lhs->sema_is_const) {
      lower_arm(l, s->lhs->sema_const.i ? s->body : s->els, rest, nrest);
      return;
    }
    sema_flow *fl = s->sema_ref;
    ir_value **before;
    ir_op *op = build_if(l, s, &before);
    ast_node *arms[2] = {s->body, s->els};
    for (int r = 0; r < 2; r++) {
      for (int k = 0; k < fl->nsyms; k++) fl->syms[k]->val = before[k];
      ir_builder save = l->b;
      l->b.block = op->regions[r];
      l->b.before = NULL;
      lower_arm(l, arms[r], rest, nrest);
      yield(l, fl);
      ir_loc loc = l->b.loc;
      l->b = save;
      l->b.loc = loc;
    }
    return; /* the rest went into the branches */
  }
}

static void lower_kernel(ir_module *m, ast_node *k) {
  ir_loc loc = {k->loc.line, k->loc.col};
  ir_func *fn = ir_func_new(m, k->name, loc);
  const sema_kernel *info = k->sema_ref;
  fn->num_warps = info->warps;
  fn->num_stages = info->stages;
  fn->warp_specialize = info->warp_specialize;
  fn->persist = info->persistent;
  fn->streamk = info->streamk;
  fn->programs_per_sm = info->programs_per_sm;
  fn->pdl = info->pdl > 0;
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
  if (k->body) lower_tail(&l, k->body->stmts.items, k->body->stmts.len);
  if (k->body) l.b.loc = (ir_loc){k->body->loc.line, k->body->loc.col}; /* the return is the body's */
  ir_build(&l.b, IR_RETURN, 0, NULL, 0, NULL);
}

void sema_lower(ast_file *f, ir_module *m) {
  for (int i = 0; i < f->decls.len; i++)
    if (f->decls.items[i]->kind == AST_KERNEL) lower_kernel(m, f->decls.items[i]);
}
