/* sema/check_call.c — calls: argument matching (positional, then named), and the
 * instantiation of helpers. A helper is generic: each call checks a fresh clone of its
 * declaration with the argument types, hung off the call as its body, so every instance
 * keeps its own types and constants and the lowering simply inlines it. */
#include <string.h>

#include "sema_int.h"

enum { MAX_INSTANCE_DEPTH = 64 };

/* Sorts e's arguments into cl->argv by position and name. */
static bool sort_args(sema_ctx *c, ast_node *e, const char *const *names, int nnames, int min,
                      int max, sema_call *cl) {
  int n = e->args.len;
  if (n < min || (max != SEMA_VARIADIC && n > max)) {
    if (min == max)
      su_error(c->d, e->loc, "expected %d argument%s to '%s', got %d", min, min == 1 ? "" : "s",
               e->name, n);
    else if (max == SEMA_VARIADIC)
      su_error(c->d, e->loc, "expected at least %d argument%s to '%s', got %d", min,
               min == 1 ? "" : "s", e->name, n);
    else
      su_error(c->d, e->loc, "expected %d to %d arguments to '%s', got %d", min, max, e->name, n);
    return false;
  }
  cl->argc = n > nnames ? n : nnames;
  cl->argv = SU_NEW_ARRAY(c->a, ast_node *, cl->argc > 0 ? cl->argc : 1);
  bool ok = true, named = false;
  for (int i = 0; i < n; i++) {
    ast_node *a = e->args.items[i];
    ast_node *v = a->kind == AST_ARG ? a->lhs : a;
    const char *an = a->kind == AST_ARG ? a->name : NULL;
    if (!an) {
      if (named) {
        su_error(c->d, a->loc, "positional argument after named argument");
        ok = false;
        continue;
      }
      cl->argv[i] = v;
      continue;
    }
    named = true;
    int k = -1;
    for (int j = 0; j < nnames; j++)
      if (names[j] && strcmp(names[j], an) == 0) k = j;
    if (k < 0) {
      su_error(c->d, a->loc, "'%s' has no parameter named '%s'", e->name, an);
      if (strcmp(an, "dtype") == 0)
        su_note(c->d, a->loc, "tk names an element type with a type argument ('zeros<f16>(...)', "
                              "'full<f16>(...)') or converts with 'as' ('x as f16')");
      ok = false;
    } else if (cl->argv[k]) {
      su_error(c->d, a->loc, "argument '%s' given twice", an);
      ok = false;
    } else {
      cl->argv[k] = v;
    }
  }
  for (int i = 0; ok && i < min; i++)
    if (!cl->argv[i]) {
      su_error(c->d, e->loc, "missing argument '%s' to '%s'", names[i] ? names[i] : "?", e->name);
      ok = false;
    }
  return ok;
}

const ir_type *sema_check_call(sema_ctx *c, ast_node *e) {
  sema_call *cl = SU_NEW(c->a, sema_call);
  e->sema_ref = cl;
  if (e->qual && !sema_hint_call(c, e)) return NULL;
  sema_sym *fn = sema_find_function(c, e->name);
  if (fn && fn->kind == SYM_KERNEL) {
    su_error(c->d, e->loc, "cannot call kernel '%s'", e->name);
    su_note(c->d, fn->decl->name_loc, "'%s' is declared here", e->name);
    return NULL;
  }
  if (fn) {
    ast_list ps = fn->decl->params;
    const char **names = SU_NEW_ARRAY(c->a, const char *, ps.len + 1);
    for (int i = 0; i < ps.len; i++) names[i] = ps.items[i]->name;
    if (e->targs.len) {
      su_error(c->d, e->loc, "helper '%s' does not take type arguments", e->name);
      return NULL;
    }
    if (!sort_args(c, e, names, ps.len, ps.len, ps.len, cl)) return NULL;
    bool ok = true;
    for (int i = 0; i < cl->argc; i++) ok &= sema_check_value(c, cl->argv[i]) != NULL;
    return ok ? sema_instantiate(c, e, fn, cl) : NULL;
  }
  const sema_builtin *b = sema_builtin_find(e->name);
  if (!b) {
    su_error(c->d, e->loc, "call to undeclared function '%s'", e->name);
    sema_hint_missing(c, e);
    return NULL;
  }
  cl->builtin = b;
  if (e->targs.len && !b->type_arg) {
    su_error(c->d, e->loc, "'%s' does not take type arguments", e->name);
    return NULL;
  }
  if (e->targs.len > 1) {
    su_error(c->d, e->loc, "'%s' takes one type argument, got %d", e->name, e->targs.len);
    return NULL;
  }
  if (e->targs.len == 1) {
    cl->targ = sema_resolve_type(c, e->targs.items[0]);
    if (!cl->targ) return NULL;
    if (cl->targ->kind != IR_SCALAR) {
      su_error(c->d, e->targs.items[0]->loc, "type argument of '%s' must be a scalar type",
               e->name);
      return NULL;
    }
  }
  int nnames = 0;
  while (nnames < SEMA_MAX_PARAMS && b->params[nnames]) nnames++;
  if (!sort_args(c, e, b->params, nnames, b->min_args, b->max_args, cl)) return NULL;
  return sema_check_builtin(c, e, cl);
}

/* Binds a helper parameter to its argument: a compile-time argument keeps its value (so a
 * helper can build arange/zeros from it), a runtime one becomes a runtime parameter. */
static bool bind_param(sema_ctx *c, ast_node *p, ast_node *arg) {
  const ir_type *t = arg->sema_type;
  bool weak = sema_is_weak(arg);
  if (p->type) {
    const ir_type *want = sema_resolve_type(c, p->type);
    if (!want) return false;
    const char *what = su_fmt(c->a, "parameter '%s'", p->name);
    /* an annotation names the element type; the shape comes from the argument */
    if (!sema_check_assignable(c, arg, sema_elem(t), want, what)) return false;
    t = sema_with_shape(c, want, sema_rank(t), t->kind == IR_TILE ? t->shape : NULL);
    weak = false;
  }
  sema_sym *s = sema_declare(c, arg->sema_is_const ? SYM_CONST : SYM_PARAM, p->name, p);
  s->type = t;
  s->weak = weak;
  if (arg->sema_is_const) s->cval = sema_const_as(arg, t->dtype);
  p->sema_ref = s;
  return true;
}

static void check_instance(sema_ctx *c, ast_node *inst, ast_node *e, sema_call *cl) {
  sema_scope_push(c);
  bool ok = true;
  for (int i = 0; i < inst->params.len; i++) ok &= bind_param(c, inst->params.items[i], cl->argv[i]);
  if (!ok) {
    su_note(c->d, e->loc, "in this call to '%s'", e->name);
    c->ret_type = NULL; /* unknown result: stays silent at the call */
    sema_scope_pop(c);
    return;
  }
  int nerr = c->d->nerrors;
  sema_check_body(c, inst->body);
  if (c->d->nerrors > nerr) su_note(c->d, e->loc, "in this call to '%s'", e->name);
  sema_scope_pop(c);
}

bool sema_spend(sema_ctx *c, su_loc loc, const char *helper) {
  int64_t budget = c->opt && c->opt->budget > 0 ? c->opt->budget : SEMA_DEFAULT_BUDGET;
  if (c->over_budget) return false;
  if (++c->work <= budget) return true;
  c->over_budget = true;
  su_error(c->d, loc, "compile-time work budget exhausted at %s%s%s: helper calls inlined and "
           "static_range iterations unrolled exceed %lld", helper ? "this call to '" : "",
           helper ? helper : "an iteration of this static_range", helper ? "'" : "",
           (long long)budget);
  for (sema_inst *in = c->inst; in; in = in->outer)
    su_note(c->d, in->call->loc, "inside this call to '%s'", in->func->name);
  su_note(c->d, loc, "raise the budget with --budget=N (tkc) or TK_COMPILE_BUDGET (libtk), "
          "or restructure the kernel: a runtime 'range' loop is not unrolled");
  return false;
}

const ir_type *sema_instantiate(sema_ctx *c, ast_node *e, sema_sym *fn, sema_call *cl) {
  for (sema_inst *in = c->inst; in; in = in->outer)
    if (in->func == fn->decl) {
      su_error(c->d, e->loc, "recursive call to '%s'", e->name);
      su_note(c->d, fn->decl->name_loc, "'%s' is declared here; helpers are inlined and cannot recurse",
              e->name);
      return NULL;
    }
  if (!sema_spend(c, e->loc, e->name)) return NULL;
  if (c->inst_depth >= MAX_INSTANCE_DEPTH) {
    su_error(c->d, e->loc, "helper calls are nested more than %d deep", MAX_INSTANCE_DEPTH);
    return NULL;
  }
  ast_node *inst = sema_clone(c->a, fn->decl);
  e->body = inst;
  cl->helper = inst;

  /* the instance is checked in the file scope, as a fresh function */
  sema_ctx save = *c;
  sema_inst frame = {c->inst, fn->decl, e};
  c->inst = &frame;
  c->inst_depth++;
  c->scope = c->global;
  c->flow = NULL;
  c->loop = NULL; /* a helper's break would leave the caller's loop */
  c->func = inst;
  c->in_helper = true;
  c->ret_type = SEMA_VOID; /* until a `return e;` says otherwise */
  c->ret_elems = NULL;
  c->nret = 0;
  ast_node *body = inst->body;
  c->ret_stmt = body && body->stmts.len ? body->stmts.items[body->stmts.len - 1] : NULL;
  check_instance(c, inst, e, cl);
  const ir_type *rt = c->ret_type;
  const ir_type **elems = c->ret_elems;
  int nret = c->nret;
  c->ret_elems = save.ret_elems;
  c->nret = save.nret;
  c->inst = save.inst;
  c->inst_depth = save.inst_depth;
  c->scope = save.scope;
  c->flow = save.flow;
  c->loop = save.loop;
  c->func = save.func;
  c->in_helper = save.in_helper;
  c->ret_type = save.ret_type;
  c->ret_stmt = save.ret_stmt;

  if (!rt) return NULL;
  if (rt == SEMA_VOID) {
    if (fn->decl->type) {
      su_error(c->d, e->loc, "helper '%s' is declared to return a value but returns none", e->name);
      return NULL;
    }
    return SEMA_VOID;
  }
  if (rt == SEMA_TUPLE) {
    if (fn->decl->type) {
      su_error(c->d, e->loc, "helper '%s' is declared to return one value but returns %d",
               e->name, nret);
      return NULL;
    }
    cl->rets = elems;
    cl->nrets = nret;
    return SEMA_TUPLE;
  }
  inst->sema_type = rt;
  /* a helper that is a single `return <constant>` is itself a constant */
  if (rt->kind == IR_SCALAR && body && body->stmts.len == 1 && body->stmts.items[0]->kind == AST_RETURN) {
    ast_node *r = body->stmts.items[0]->lhs;
    if (r && r->sema_is_const) sema_set_const(e, rt, sema_const_as(r, rt->dtype));
  }
  return rt;
}
