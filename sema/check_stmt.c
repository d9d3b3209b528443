/* sema/check_stmt.c — statements: bindings, assignments, loops, ifs, returns. Runtime loops
 * and ifs record which outer vars they assign (sema_flow): those become the loop-carried
 * values and the if results of the IR. */
#include <string.h>

#include "sema_int.h"

static const char *tstr(sema_ctx *c, const ir_type *t) { return sema_type_quoted(c->a, t); }

/* Adds s to every enclosing runtime construct it was declared outside of. */
static void record_assign(sema_ctx *c, sema_sym *s) {
  for (sema_flow_frame *f = c->flow; f && s->depth <= f->depth; f = f->outer) {
    sema_flow *fl = f->flow;
    bool seen = false;
    for (int i = 0; i < fl->nsyms; i++) seen |= fl->syms[i] == s;
    if (seen) continue;
    if (fl->nsyms == fl->cap) {
      int cap = fl->cap ? fl->cap * 2 : 4;
      sema_sym **ns = SU_NEW_ARRAY(c->a, sema_sym *, cap);
      for (int i = 0; i < fl->nsyms; i++) ns[i] = fl->syms[i];
      fl->syms = ns;
      fl->cap = cap;
    }
    fl->syms[fl->nsyms++] = s;
  }
}

/* Checks an annotation (the element type; the shape comes from the value). */
static const ir_type *annotate(sema_ctx *c, ast_node *ann, ast_node *val, const ir_type *t,
                               const char *what) {
  const ir_type *want = sema_resolve_type(c, ann);
  if (!want || !sema_check_assignable(c, val, sema_elem(t), want, what)) return NULL;
  return sema_with_shape(c, want, sema_rank(t), t->kind == IR_TILE ? t->shape : NULL);
}

/* Checks e where a tuple may stand (a return, the right side of a destructuring). */
static const ir_type *tuple_or_value(sema_ctx *c, ast_node *e) {
  const ir_type *t = sema_check_expr(c, e);
  if (t == SEMA_VOID) {
    su_error(c->d, e->loc, "'%s' does not return a value", e->name ? e->name : "expression");
    return NULL;
  }
  return t;
}

/* The element types of the tuple e that n names take apart; NULL after reporting. */
static const ir_type **destructure(sema_ctx *c, ast_node *e, int n) {
  const ir_type *t = tuple_or_value(c, e);
  if (!t) return NULL;
  int have = 0;
  const ir_type **ts = t == SEMA_TUPLE ? sema_tuple_elems(c->a, e, &have) : NULL;
  if (!ts) {
    su_error(c->d, e->loc, "cannot take apart %s into %d values: it is not a tuple", tstr(c, t), n);
    return NULL;
  }
  if (have != n) {
    su_error(c->d, e->loc, "%s %d values, but %d names take them apart",
             e->kind == AST_CALL ? su_fmt(c->a, "'%s' returns", e->name) : "the tuple has", have, n);
    return NULL;
  }
  return ts;
}

/* let (a, b) = e; / var (a, b) = e; — each name a local of its element's type ('_'
 * declares nothing). */
static void check_let_tuple(sema_ctx *c, ast_node *s) {
  const ir_type **ts = destructure(c, s->rhs, s->params.len);
  for (int i = 0; i < s->params.len; i++) {
    ast_node *p = s->params.items[i];
    if (!strcmp(p->name, "_")) continue;
    sema_sym *y = sema_declare(c, SYM_LOCAL, p->name, p);
    y->type = ts ? ts[i] : NULL;
    y->is_var = s->ival != 0;
    p->sema_ref = y;
  }
}

static void check_let(sema_ctx *c, ast_node *s) {
  if (!s->name) {
    check_let_tuple(c, s);
    return;
  }
  const ir_type *t = s->rhs ? sema_check_value(c, s->rhs) : NULL;
  if (!s->rhs) su_error(c->d, s->loc, "'%s' needs an initial value", s->name);
  if (t && s->type) t = annotate(c, s->type, s->rhs, t, su_fmt(c->a, "'%s'", s->name));
  bool is_var = s->ival != 0;
  /* an immutable scalar bound to a constant is itself a compile-time constant */
  bool is_const = t && !is_var && t->kind == IR_SCALAR && s->rhs->sema_is_const;
  sema_sym *y = sema_declare(c, is_const ? SYM_CONST : SYM_LOCAL, s->name, s);
  y->type = t;
  y->is_var = is_var;
  if (is_const) {
    y->cval = sema_const_as(s->rhs, t->dtype);
    y->weak = !s->type && sema_is_weak(s->rhs);
  }
  s->sema_ref = y;
}

static int compound_op(int op) {
  switch (op) {
  case TOK_PLUS_ASSIGN: return TOK_PLUS;
  case TOK_MINUS_ASSIGN: return TOK_MINUS;
  case TOK_STAR_ASSIGN: return TOK_STAR;
  case TOK_SLASH_ASSIGN: return TOK_SLASH;
  default: return 0;
  }
}

static void check_assign_one(sema_ctx *c, ast_node *s, ast_node *target, ast_node *val,
                             const ir_type *rt);

/* (a, b) = e; — each target a var taking its element (its exact type: a tuple's elements
 * are values, not untyped constants). */
static void check_assign_tuple(sema_ctx *c, ast_node *s) {
  const ir_type **ts = destructure(c, s->rhs, s->args.len);
  for (int i = 0; i < s->args.len; i++) {
    ast_node *t = s->args.items[i];
    ast_node *val = s->rhs->kind == AST_TUPLE ? s->rhs->args.items[i] : s->rhs;
    check_assign_one(c, s, t, val, ts ? ts[i] : NULL);
  }
}

static void check_assign(sema_ctx *c, ast_node *s) {
  if (!s->name) {
    check_assign_tuple(c, s);
    return;
  }
  const ir_type *rt = sema_check_value(c, s->rhs);
  check_assign_one(c, s, NULL, s->rhs, rt);
}

/* Assigns val (of type rt, NULL after an error) to the var s names — or, in a tuple
 * assignment, target names (its sema_ref is set, not s's). */
static void check_assign_one(sema_ctx *c, ast_node *s, ast_node *target, ast_node *val,
                             const ir_type *rt) {
  const char *name = target ? target->name : s->name;
  su_loc name_loc = target ? target->loc : s->name_loc;
  sema_sym *v = sema_lookup(c, name);
  if (!v) {
    su_error(c->d, name_loc, "use of undeclared name '%s'", name);
    return;
  }
  if (target) target->sema_ref = v;
  else s->sema_ref = v;
  if (!v->is_var) {
    static const char *const what[] = {
        [SYM_PARAM] = "parameter", [SYM_CONST] = "constant", [SYM_LOOPVAR] = "loop variable",
        [SYM_DTYPE] = "dtype parameter", [SYM_FUNC] = "function", [SYM_KERNEL] = "kernel"};
    if (v->kind == SYM_LOCAL || (v->kind == SYM_CONST && v->decl && v->decl->kind == AST_LET))
      su_error(c->d, name_loc, "'%s' is immutable; declare it with 'var' to assign", name);
    else
      su_error(c->d, name_loc, "cannot assign to %s '%s'", what[v->kind], name);
    if (v->decl) su_note(c->d, v->decl->name_loc, "'%s' is declared here", name);
    return;
  }
  if (!v->type || !rt) return;
  const ir_type *t = rt;
  int op = compound_op(s->op);
  if (op) {
    ast_node *x = ast_new(c->a, AST_NAME, s->name_loc);
    x->name = s->name;
    x->sema_ref = v;
    x->sema_type = v->type;
    ast_node *bin = ast_new(c->a, AST_BINARY, s->loc);
    bin->op = op;
    bin->lhs = x;
    bin->rhs = s->rhs;
    const ir_type *opd;
    t = sema_binary_type(c, op, s->loc, x, v->type, s->rhs, rt, &opd);
    if (!t) return;
    bin->sema_type = t;
    s->lhs = val = bin;
  }
  if (sema_check_assignable(c, val, t, v->type, su_fmt(c->a, "'%s'", name))) record_assign(c, v);
}

/* The induction variable's type: the common integer type of the bounds. */
static const ir_type *range_type(sema_ctx *c, ast_node *it, bool *weak) {
  if (it->args.len < 1 || it->args.len > 3) {
    su_error(c->d, it->loc, "expected 1 to 3 arguments to '%s', got %d", it->name, it->args.len);
    return NULL;
  }
  tk_dtype d = TK_I32;
  bool ok = true;
  *weak = true;
  for (int i = 0; i < it->args.len; i++) {
    ast_node *a = it->args.items[i];
    if (a->kind == AST_ARG && a->name) {
      su_error(c->d, a->loc, "'%s' takes no named arguments", it->name);
      ok = false;
      continue;
    }
    ast_node *v = a->kind == AST_ARG ? a->lhs : a;
    const ir_type *t = sema_check_value(c, v);
    if (!t) {
      ok = false;
      continue;
    }
    if (t->kind != IR_SCALAR || !ir_dtype_is_int(t->dtype) || t->dtype == TK_I1) {
      su_error(c->d, v->loc, "%s bound must be an integer, not %s", it->name, tstr(c, t));
      ok = false;
      continue;
    }
    bool w = sema_is_weak(v);
    d = i == 0 ? t->dtype : sema_promote(d, *weak, t->dtype, w);
    *weak = *weak && w;
  }
  return ok ? ir_type_scalar(c->m, d) : NULL;
}

static ast_node *range_arg(ast_node *it, int i) {
  ast_node *a = it->args.items[i];
  return a->kind == AST_ARG ? a->lhs : a;
}

/* ---- break and continue ------------------------------------------------------------------
 * Inside a runtime loop they are two vars: #skip, declared in the body and set by both,
 * and #go, carried by the loop and cleared by break (the IR loop's {while} flag). The
 * checker rewrites the body so that whatever follows a statement that may skip runs under
 * `if !#skip { ... }` (in every block down to the break), then checks it as usual: the vars
 * flow through ifs and loops like any other. Names with '#' cannot be written in source. */

/* True when s may run a break (or with cont also a continue) of the loop being checked:
 * nested loops keep their own. */
static bool skips_in(const ast_node *s, bool cont) {
  if (!s) return false;
  switch (s->kind) {
  case AST_BREAK: return true;
  case AST_CONTINUE: return cont;
  case AST_IF: return skips_in(s->body, cont) || skips_in(s->els, cont);
  case AST_BLOCK:
    for (int i = 0; i < s->stmts.len; i++)
      if (skips_in(s->stmts.items[i], cont)) return true;
    return false;
  default: return false;
  }
}

static bool breaks(const ast_node *s) { return skips_in(s, false); }

static sema_sym *flag(sema_ctx *c, const char *name, ast_node *decl) {
  sema_sym *y = sema_declare(c, SYM_LOCAL, name, decl);
  y->type = ir_type_scalar(c->m, TK_I1);
  y->is_var = true;
  return y;
}

static ast_node *flag_name(sema_ctx *c, const char *name, su_loc loc) {
  ast_node *n = ast_new(c->a, AST_NAME, loc);
  n->name = name;
  return n;
}

static void guard(sema_ctx *c, ast_node *blk);

static void guard_arm(sema_ctx *c, ast_node *b) {
  if (b && b->kind == AST_IF) {
    guard_arm(c, b->body);
    guard_arm(c, b->els);
  } else if (b && b->kind == AST_BLOCK) {
    guard(c, b);
  }
}

/* Puts the statements of blk after the first one that may skip under `if !#skip`. */
static void guard(sema_ctx *c, ast_node *blk) {
  for (int i = 0; i < blk->stmts.len; i++) {
    ast_node *s = blk->stmts.items[i];
    if (s->kind == AST_IF) guard_arm(c, s);
    else if (s->kind == AST_BLOCK) guard(c, s);
    if (i + 1 == blk->stmts.len || !skips_in(s, true)) continue;
    ast_node *rest = ast_new(c->a, AST_BLOCK, blk->stmts.items[i + 1]->loc);
    for (int j = i + 1; j < blk->stmts.len; j++) ast_list_push(c->a, &rest->stmts, blk->stmts.items[j]);
    ast_node *not = ast_new(c->a, AST_UNARY, s->loc);
    not->op = TOK_BANG;
    not->lhs = flag_name(c, "#skip", s->loc);
    ast_node *g = ast_new(c->a, AST_IF, s->loc);
    g->lhs = not;
    g->body = rest;
    blk->stmts.items[i + 1] = g;
    blk->stmts.len = i + 2;
    guard(c, rest);
    return;
  }
}

/* Checks a runtime loop's body in its own scope, with #skip and the guards when the body
 * breaks or continues, and the while loop's re-test after it. */
static void check_loop_body(sema_ctx *c, ast_node *body, sema_flow *fl) {
  if (!body) return;
  sema_loop lp = {c->loop, fl};
  c->loop = &lp;
  sema_scope_push(c);
  if (skips_in(body, true)) {
    fl->skip = flag(c, "#skip", body);
    guard(c, body);
  }
  if (fl->again) ast_list_push(c->a, &body->stmts, fl->again);
  sema_check_body(c, body);
  sema_scope_pop(c);
  c->loop = lp.outer;
}

/* The loop's {while} flag is its first carried value. */
static void go_first(sema_flow *fl) {
  for (int i = 0; fl->go && i < fl->nsyms; i++)
    if (fl->syms[i] == fl->go) {
      for (int j = i; j > 0; j--) fl->syms[j] = fl->syms[j - 1];
      fl->syms[0] = fl->go;
      return;
    }
  fl->go = NULL; /* never cleared (a break in a branch not taken): a plain loop */
}

static void check_static_for(sema_ctx *c, ast_node *s, const ir_type *ivt, bool weak) {
  int n = s->lhs->args.len;
  int64_t b[3] = {0, 0, 1};
  for (int i = 0; i < n; i++) {
    ast_node *a = range_arg(s->lhs, i);
    if (!a->sema_is_const) {
      su_error(c->d, a->loc, "bounds of 'static_range' must be compile-time constants");
      return;
    }
    b[n == 1 ? 1 : i] = sema_const_as(a, ivt->dtype).i;
  }
  if (b[2] <= 0) {
    su_error(c->d, s->lhs->loc, "step of 'static_range' must be positive, got %lld", (long long)b[2]);
    return;
  }
  int64_t count = 0;
  for (int64_t v = b[0]; b[2] > 0 ? v < b[1] : v > b[1]; v += b[2])
    if (++count > SEMA_MAX_STATIC_ITERS) {
      su_error(c->d, s->lhs->loc, "'static_range' unrolls more than %d iterations",
               SEMA_MAX_STATIC_ITERS);
      return;
    }
  s->stmts.items = SU_NEW_ARRAY(c->a, ast_node *, count ? count : 1);
  s->stmts.len = (int)count;
  for (int64_t k = 0; k < count; k++) {
    if (!sema_spend(c, s->lhs->loc, NULL)) {
      s->stmts.len = (int)k;
      return;
    }
    ast_node *copy = sema_clone(c->a, s->body);
    sema_scope_push(c);
    sema_sym *iv = sema_declare(c, SYM_CONST, s->name, s);
    iv->type = ivt;
    iv->weak = weak;
    iv->cval.i = sema_wrap_int(ivt->dtype, b[0] + k * b[2]);
    sema_loop unrolled = {c->loop, NULL}; /* no break out of an unrolled loop */
    c->loop = &unrolled;
    sema_check_block(c, copy);
    c->loop = unrolled.outer;
    sema_scope_pop(c);
    s->stmts.items[k] = copy;
  }
}

static void check_for(sema_ctx *c, ast_node *s) {
  ast_node *it = s->lhs;
  const ir_type *ivt = NULL;
  bool is_static = false, weak = false;
  if (it && it->kind == AST_ERROR) return; /* reported by the parser */
  if (it && it->kind == AST_CALL && it->qual && !sema_hint_call(c, it)) return; /* tl.range */
  if (!it || it->kind != AST_CALL ||
      (strcmp(it->name, "range") != 0 && strcmp(it->name, "static_range") != 0)) {
    su_error(c->d, it ? it->loc : s->loc, "expected 'range(...)' or 'static_range(...)' after 'in'");
  } else {
    is_static = strcmp(it->name, "static_range") == 0;
    ivt = range_type(c, it, &weak);
    it->sema_type = ivt;
  }
  if (is_static) {
    if (ivt) check_static_for(c, s, ivt, weak);
    return;
  }
  ast_node *step = ivt && it->args.len == 3 ? range_arg(it, 2) : NULL;
  if (step && step->sema_is_const && step->sema_const.i <= 0 && ir_dtype_is_signed(ivt->dtype))
    su_error(c->d, step->loc, "step of 'range' must be positive, got %lld", (long long)step->sema_const.i);
  else if (step && step->sema_is_const && step->sema_const.i == 0)
    su_error(c->d, step->loc, "step of 'range' must be positive, got 0");
  sema_flow *fl = SU_NEW(c->a, sema_flow);
  s->sema_ref = fl;
  sema_scope_push(c); /* where #go lives: outside the loop, so it is carried */
  if (breaks(s->body)) fl->go = flag(c, "#go", s);
  sema_flow_frame fr = {c->flow, fl, c->scope->depth};
  c->flow = &fr;
  sema_scope_push(c);
  fl->iv = sema_declare(c, SYM_LOOPVAR, s->name, s);
  fl->iv->type = ivt;
  check_loop_body(c, s->body, fl);
  sema_scope_pop(c);
  c->flow = fr.outer;
  sema_scope_pop(c);
  go_first(fl);
}

/* while c { body }: a loop whose carried #go starts as c and is c again after each
 * iteration that did not break (the checker appends `if #go { #go = c; }` to the body,
 * a fresh copy of c); the lowering makes it a for over i64 with the {while} flag. */
static void check_while(sema_ctx *c, ast_node *s) {
  const ir_type *t = sema_check_value(c, s->lhs);
  if (t && (t->kind != IR_SCALAR || t->dtype != TK_I1)) {
    su_error(c->d, s->lhs->loc, "condition of 'while' must be a scalar 'i1', got %s", tstr(c, t));
    const char *cond = su_loc_text(c->a, s->lhs->loc, 40);
    if (t->kind == IR_TILE && t->dtype == TK_I1)
      su_note(c->d, s->lhs->loc, "every thread of a program takes the same path: reduce the tile "
                                 "first, 'while max(%s)' (any element) or 'while min(%s)' (all)",
              cond, cond);
    else if (t->kind == IR_TILE)
      su_note(c->d, s->lhs->loc, "every thread of a program takes the same path: reduce the tile "
                                 "first, as in 'while max(err) > tol'");
    t = NULL;
  }
  sema_flow *fl = SU_NEW(c->a, sema_flow);
  s->sema_ref = fl;
  sema_scope_push(c);
  fl->go = flag(c, "#go", s);
  sema_flow_frame fr = {c->flow, fl, c->scope->depth};
  c->flow = &fr;
  if (s->body && t) { /* a bad condition is reported once: no re-test checks its copy */
    ast_node *again = ast_new(c->a, AST_ASSIGN, s->lhs->loc);
    again->name = "#go";
    again->name_loc = s->lhs->loc;
    again->op = TOK_ASSIGN;
    again->rhs = sema_clone(c->a, s->lhs);
    ast_node *blk = ast_new(c->a, AST_BLOCK, s->lhs->loc);
    ast_list_push(c->a, &blk->stmts, again);
    ast_node *test = ast_new(c->a, AST_IF, s->lhs->loc);
    test->lhs = flag_name(c, "#go", s->lhs->loc);
    test->body = blk;
    fl->again = test;
  }
  check_loop_body(c, s->body, fl);
  c->flow = fr.outer;
  sema_scope_pop(c);
  go_first(fl);
}

static void check_break(sema_ctx *c, ast_node *s) {
  const char *kw = s->kind == AST_BREAK ? "break" : "continue";
  if (!c->loop) {
    su_error(c->d, s->loc, "'%s' outside a loop", kw);
    if (c->in_helper)
      su_note(c->d, s->loc, "a helper is inlined, but its body is not part of the caller's loop");
    else
      su_note(c->d, s->loc, "'%s' belongs in a 'for ... in range' or 'while' loop; to end a "
                            "program early, write 'if cond { return; }' in the kernel body", kw);
    return;
  }
  if (!c->loop->flow) {
    su_error(c->d, s->loc, "'%s' in a 'static_range' loop, which is unrolled", kw);
    su_note(c->d, s->loc, "use 'range' for a loop that may stop early, or a compile-time 'if'");
    return;
  }
  sema_flow *fl = c->loop->flow;
  s->sema_ref = fl;
  if (s->kind == AST_BREAK) record_assign(c, fl->go);
  record_assign(c, fl->skip);
}

static void check_branch(sema_ctx *c, ast_node *b) {
  if (!b) return;
  if (b->kind == AST_IF) sema_check_stmt(c, b);
  else sema_check_block(c, b);
}

static void check_if(sema_ctx *c, ast_node *s) {
  const ir_type *t = sema_check_value(c, s->lhs);
  if (t && (t->kind != IR_SCALAR || t->dtype != TK_I1)) {
    su_error(c->d, s->lhs->loc, "condition of 'if' must be a scalar 'i1', got %s", tstr(c, t));
    t = NULL;
  }
  if (t && s->lhs->sema_is_const) {
    /* compile-time if: the branch not taken is not checked (it may be invalid for this
     * instance, as in Triton's constexpr if) */
    check_branch(c, s->lhs->sema_const.i ? s->body : s->els);
    return;
  }
  sema_flow *fl = SU_NEW(c->a, sema_flow);
  s->sema_ref = fl;
  sema_flow_frame fr = {c->flow, fl, c->scope->depth};
  c->flow = &fr;
  check_branch(c, s->body);
  check_branch(c, s->els);
  c->flow = fr.outer;
}

static void check_return(sema_ctx *c, ast_node *s) {
  const ir_type *t = !s->lhs ? SEMA_VOID : tuple_or_value(c, s->lhs);
  if (t == SEMA_TUPLE && c->in_helper && s == c->ret_stmt) {
    c->ret_elems = sema_tuple_elems(c->a, s->lhs, &c->nret);
    c->ret_type = SEMA_TUPLE;
    return;
  }
  if (!c->in_helper) {
    if (s->ival && !s->lhs) return; /* an early exit (check_decl.c marks them) */
    if (s->lhs)
      su_error(c->d, s->loc, "a kernel returns no value");
    else
      su_error(c->d, s->loc, "'return' in a kernel must be the last statement of a branch "
                             "of an 'if' at the kernel's top level");
    su_note(c->d, s->loc, "an early exit is written 'if pid >= n { return; }' in the kernel "
                          "body; in a loop, 'break' ends the loop");
    return;
  }
  if (s != c->ret_stmt) {
    su_error(c->d, s->loc, "'return' must be the last statement of a helper");
    c->ret_type = NULL;
    return;
  }
  if (t && t != SEMA_VOID && c->func->type)
    t = annotate(c, c->func->type, s->lhs, t, "the result");
  c->ret_type = t;
}

void sema_check_stmt(sema_ctx *c, ast_node *s) {
  switch (s->kind) {
  case AST_LET: check_let(c, s); break;
  case AST_ASSIGN: check_assign(c, s); break;
  case AST_EXPR_STMT:
    /* a tuple written as a statement has nothing to take it apart: it is refused as the
     * value it is not (a call that returns several values may drop them) */
    if (s->lhs && s->lhs->kind == AST_TUPLE)
      sema_check_value(c, s->lhs);
    else if (s->lhs)
      sema_check_expr(c, s->lhs);
    break;
  case AST_FOR: check_for(c, s); break;
  case AST_WHILE: check_while(c, s); break;
  case AST_BREAK: case AST_CONTINUE: check_break(c, s); break;
  case AST_IF: check_if(c, s); break;
  case AST_RETURN: check_return(c, s); break;
  case AST_BLOCK: sema_check_block(c, s); break;
  default: su_error(c->d, s->loc, "expected a statement"); break;
  }
}

void sema_check_body(sema_ctx *c, ast_node *blk) {
  for (int i = 0; blk && i < blk->stmts.len; i++) sema_check_stmt(c, blk->stmts.items[i]);
}

void sema_check_block(sema_ctx *c, ast_node *blk) {
  if (!blk) return;
  sema_scope_push(c);
  sema_check_body(c, blk);
  sema_scope_pop(c);
}
