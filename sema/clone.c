/* sema/clone.c — deep copies of AST subtrees. Helper calls and static_range iterations are
 * checked on their own copies so each instance carries its own types and constants. */
#include "sema_int.h"

static ast_list clone_list(su_arena *a, ast_list l) {
  ast_list r = {0};
  if (l.len == 0) return r;
  r.items = SU_NEW_ARRAY(a, ast_node *, l.len);
  r.len = l.len;
  for (int i = 0; i < l.len; i++) r.items[i] = sema_clone(a, l.items[i]);
  return r;
}

ast_node *sema_clone(su_arena *a, const ast_node *n) {
  if (!n) return NULL;
  ast_node *c = su_memdup(a, n, sizeof *n);
  c->sema_type = NULL;
  c->sema_is_const = false;
  c->sema_const.i = 0;
  c->sema_ref = NULL;
  c->lhs = sema_clone(a, n->lhs);
  c->rhs = sema_clone(a, n->rhs);
  c->type = sema_clone(a, n->type);
  c->els = sema_clone(a, n->els);
  c->args = clone_list(a, n->args);
  c->targs = clone_list(a, n->targs);
  c->params = clone_list(a, n->params);
  c->cparams = clone_list(a, n->cparams);
  c->attrs = clone_list(a, n->attrs);
  /* a call's body and a for's stmts are sema's own results: a fresh copy has none */
  c->body = n->kind == AST_CALL ? NULL : sema_clone(a, n->body);
  c->stmts = n->kind == AST_FOR ? (ast_list){0} : clone_list(a, n->stmts);
  return c;
}
