/* Node building for the grammar actions: nesting limits and chained comparisons. */
#include "build.h"

ast_node *ps_node(ps_state *ps, ast_kind k, su_loc loc) { return ast_new(ps->a, k, loc); }

static int max_depth(int d, const ast_node *child, bool stmts_only) {
  if (!child || (stmts_only && !ast_is_stmt(child->kind))) return d;
  return child->depth > d ? child->depth : d;
}

static int max_list(int d, ast_list l, bool stmts_only) {
  for (int i = 0; i < l.len; i++) d = max_depth(d, l.items[i], stmts_only);
  return d;
}

/* The leaf that stands in for a node nested too deeply: harmless to every later stage
 * (the file has an error, so nothing is compiled). */
static ast_node *too_deep(ps_state *ps, ast_node *n) {
  bool stmt = ast_is_stmt(n->kind);
  if (!ps->depth_reported) {
    su_error(ps->d, n->loc, "%s nested too deeply (the limit is %d levels)",
             stmt ? "block" : "expression", AST_MAX_DEPTH);
    ps->depth_reported = true;
  }
  if (stmt) return ps_node(ps, AST_BLOCK, n->loc);
  bool type = n->kind == AST_TYPE || n->kind == AST_PTR_TYPE || n->kind == AST_TYPE_NAME;
  ast_node *leaf = ps_node(ps, type ? AST_TYPE : AST_INT, n->loc);
  leaf->dtype = TK_I32;
  return leaf;
}

ast_node *ps_done(ps_state *ps, ast_node *n) {
  /* Statements count only the statements they nest: an expression has its own limit. */
  bool stmt = ast_is_stmt(n->kind);
  int d = 0;
  d = max_depth(d, n->lhs, stmt);
  d = max_depth(d, n->rhs, stmt);
  d = max_depth(d, n->type, stmt);
  d = max_depth(d, n->body, stmt);
  d = max_depth(d, n->els, stmt);
  d = max_list(d, n->args, stmt);
  d = max_list(d, n->targs, stmt);
  d = max_list(d, n->stmts, stmt);
  /* An argument is a wrapper, not a level: its value was bounded already, and replacing
   * it would leave a call with a non-argument in its list. */
  n->depth = n->kind == AST_ARG ? d : d + 1;
  return n->depth > AST_MAX_DEPTH ? too_deep(ps, n) : n;
}

ast_node *ps_paren(ps_state *ps, ast_node *e) {
  if (++e->depth > AST_MAX_DEPTH) return too_deep(ps, e);
  return e;
}

static int comparison_level(int op) {
  switch (op) {
  case TOK_LT: case TOK_LE: case TOK_GT: case TOK_GE: return 1;
  case TOK_EQ: case TOK_NE: return 2;
  default: return 0;
  }
}

ast_node *ps_binary(ps_state *ps, int op, ast_node *l, ast_node *r, su_loc loc, su_loc lwritten,
                    su_loc op_loc) {
  /* Parentheses make no node, but they widen where l is written: that tells (a < b) < c,
   * which is allowed, from a < b < c, which reads like math and means something else. */
  int level = comparison_level(op);
  if (level && l->kind == AST_BINARY && comparison_level(l->op) == level &&
      lwritten.len == l->loc.len)
    su_error(ps->d, op_loc, "comparison operators cannot be chained; use '&&' or parentheses");
  ast_node *n = ps_node(ps, AST_BINARY, loc);
  n->op = op;
  n->name_loc = op_loc; /* type errors point at the operator, as C compilers do */
  n->lhs = l;
  n->rhs = r;
  return ps_done(ps, n);
}
