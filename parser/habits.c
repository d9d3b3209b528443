/* What Triton users write and tk spells otherwise, as far as the grammar can tell: a
 * conversion `x.to(f16)`, a field `x.T`, a module path `tl.math`. Each is reported with a
 * note that gives the tk spelling, and becomes the tk construct when there is one (counted
 * in nrecovered, so the checker still runs and reports the file's other errors). Calls
 * through a module (tl.load) and methods (x.sum(0)) are left to the checker, which knows
 * the builtins' names. */
#include <string.h>

#include "build.h"

enum { MAX_QUOTED = 40 }; /* characters of a construct quoted in a hint */

/* A name that is a module (tl, triton, libdevice) or a path in one (tl.math). */
static bool is_module(const ast_node *n) {
  if (n->kind != AST_NAME) return false;
  if (n->qual) return true;
  return strcmp(n->name, "tl") == 0 || strcmp(n->name, "triton") == 0 ||
         strcmp(n->name, "libdevice") == 0;
}

/* The qualifier a name under module path m gets: "tl." for tl, "tl.math." for tl.math. */
static const char *qualifier(ps_state *ps, const ast_node *m) {
  return su_fmt(ps->a, "%s%s.", m->qual ? m->qual : "", m->name);
}

/* How recv reads in front of `as T` or inside a call: its text, parenthesized when an
 * operator would otherwise bind differently. */
static const char *operand_text(ps_state *ps, const ast_node *recv) {
  const char *t = su_loc_text(ps->a, recv->loc, MAX_QUOTED);
  bool paren = recv->kind == AST_BINARY || recv->kind == AST_UNARY;
  return paren ? su_fmt(ps->a, "(%s)", t) : t;
}

static ast_node *error_node(ps_state *ps, su_loc loc) { return ps_done(ps, ps_node(ps, AST_ERROR, loc)); }

ast_node *ps_field(ps_state *ps, ast_node *recv, const char *name, su_loc name_loc, su_loc loc) {
  if (is_module(recv)) {
    ast_node *n = ps_node(ps, AST_NAME, loc);
    n->name = name;
    n->name_loc = name_loc;
    n->qual = qualifier(ps, recv);
    return ps_done(ps, n);
  }
  su_error(ps->d, name_loc, "tk values have no field '%s'", name);
  if (strcmp(name, "T") != 0) {
    su_note(ps->d, name_loc, "builtins take the value as an argument (docs/language.md §6)");
    return error_node(ps, loc);
  }
  su_note(ps->d, name_loc, "write 'trans(%s)'", su_loc_text(ps->a, recv->loc, MAX_QUOTED));
  ps->nrecovered++;
  ast_node *arg = ps_node(ps, AST_ARG, recv->loc);
  arg->lhs = recv;
  ast_node *call = ps_node(ps, AST_CALL, loc);
  call->name = su_intern(ps->names, "trans", 5);
  call->name_loc = name_loc;
  ast_list_push(ps->a, &call->args, ps_done(ps, arg));
  return ps_done(ps, call);
}

/* recv as the type t (spelled tname), after reporting `.to()` at name_loc. */
static ast_node *cast_to(ps_state *ps, ast_node *recv, ast_node *t, const char *tname,
                         su_loc name_loc, su_loc loc) {
  su_error(ps->d, name_loc, "tk converts with 'as', not '.to()'");
  su_note(ps->d, name_loc, "write '%s as %s'", operand_text(ps, recv), tname);
  ps->nrecovered++;
  ast_node *n = ps_node(ps, AST_CAST, loc);
  n->lhs = recv;
  n->type = t;
  return ps_done(ps, n);
}

ast_node *ps_method(ps_state *ps, ast_node *recv, const char *name, su_loc name_loc, ast_list args,
                    su_loc loc) {
  ast_node *n = ps_node(ps, AST_CALL, loc);
  n->name = name;
  n->name_loc = name_loc;
  if (is_module(recv)) {
    n->qual = qualifier(ps, recv);
    n->args = args;
    return ps_done(ps, n);
  }
  if (strcmp(name, "to") == 0) {
    /* x.to(tl.float16): the dtype is Triton's name of a tk type */
    ast_node *a = args.len == 1 && !args.items[0]->name ? args.items[0]->lhs : NULL;
    /* x.to(f16): the argument is a type keyword, parsed where values go */
    if (a && a->kind == AST_TYPE)
      return ps_method_type(ps, recv, name, name_loc, a, loc);
    int dt = a && a->kind == AST_NAME && a->qual ? ast_triton_dtype(a->name) : -1;
    if (dt >= 0) {
      ast_node *t = ps_node(ps, AST_TYPE, a->loc);
      t->dtype = (tk_dtype)dt;
      return cast_to(ps, recv, ps_done(ps, t), lex_dtype_name(dt), name_loc, loc);
    }
    su_error(ps->d, name_loc, "tk converts with 'as', not '.to()'");
    su_note(ps->d, name_loc, "write '%s as T' with T a tk type ('f16', 'i32', '*i8', ...)",
            operand_text(ps, recv));
    return error_node(ps, loc);
  }
  /* a method: the checker reports it and checks name(recv, args...) */
  ast_node *self = ps_node(ps, AST_ARG, recv->loc);
  self->lhs = recv;
  n->qual = ".";
  ast_list_push(ps->a, &n->args, ps_done(ps, self));
  for (int i = 0; i < args.len; i++) ast_list_push(ps->a, &n->args, args.items[i]);
  return ps_done(ps, n);
}

ast_node *ps_method_type(ps_state *ps, ast_node *recv, const char *name, su_loc name_loc,
                         ast_node *type, su_loc loc) {
  if (strcmp(name, "to") == 0)
    return cast_to(ps, recv, type, su_loc_text(ps->a, type->loc, MAX_QUOTED), name_loc, loc);
  su_error(ps->d, name_loc, "tk values have no method '%s'", name);
  su_note(ps->d, name_loc, "builtins take the value as an argument (docs/language.md §6)");
  return error_node(ps, loc);
}
