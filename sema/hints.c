/* sema/hints.c — Triton's spellings that need the builtins' names to be answered, each
 * reported with a note that gives tk's: calls through a module (tl.load(p),
 * tl.math.exp(x)), methods (x.sum(0)), module names used as values (tl.float16), and
 * max(a, 0.0) meant as the elementwise maximum, and Triton functions tk lacks (randint4x).
 * What the grammar alone can tell (x.to(f16), x.T, `while c:`) is parser/'s. */
#include <string.h>

#include "sema_int.h"

enum { MAX_QUOTED = 40 }; /* characters of a construct quoted in a hint */

/* Triton's names of tk builtins that tk spells otherwise. */
static const char *tk_name(const char *name) {
  static const char *const renamed[][2] = {{"isfinited", "isfinite"}, {"finitef", "isfinite"}};
  for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++)
    if (strcmp(renamed[i][0], name) == 0) return renamed[i][1];
  return name;
}

/* The arguments of a method call as tk writes them: the receiver first. */
static const char *method_args(sema_ctx *c, const ast_node *e) {
  const char *recv = su_loc_text(c->a, e->args.items[0]->loc, MAX_QUOTED);
  if (e->args.len == 1) return recv;
  su_loc rest = su_loc_join(e->args.items[1]->loc, e->args.items[e->args.len - 1]->loc);
  return su_fmt(c->a, "%s, %s", recv, su_loc_text(c->a, rest, MAX_QUOTED));
}

bool sema_hint_call(sema_ctx *c, ast_node *e) {
  bool method = strcmp(e->qual, ".") == 0;
  const char *name = method ? e->name : tk_name(e->name);
  bool known = sema_builtin_find(name) || sema_find_function(c, name);
  if (method) {
    su_error(c->d, e->name_loc, "tk values have no method '%s'", e->name);
    if (known)
      su_note(c->d, e->name_loc, "call the builtin with the value first: '%s(%s)'", name,
              method_args(c, e));
    else
      su_note(c->d, e->name_loc, "nor is there a builtin '%s' (docs/language.md §6 lists them)", name);
  } else {
    su_error(c->d, e->loc, "unknown name '%s%s'", e->qual, e->name);
    if (known)
      su_note(c->d, e->loc, "tk's builtins have no module prefix: write '%s'", name);
    else
      su_note(c->d, e->loc, "tk's builtins have no module prefix, and none is called '%s'", name);
    if (!known) sema_hint_missing(c, e);
  }
  e->name = name;
  return known;
}

void sema_hint_name(sema_ctx *c, ast_node *e) {
  int dt = ast_triton_dtype(e->name);
  su_error(c->d, e->loc, "unknown name '%s%s'", e->qual, e->name);
  if (dt >= 0)
    su_note(c->d, e->loc, "that is the type '%s' in tk; a value converts to it with 'x as %s'",
            ir_dtype_name((tk_dtype)dt), ir_dtype_name((tk_dtype)dt));
  else if (strcmp(e->name, "constexpr") == 0)
    su_note(c->d, e->loc, "a compile-time parameter is written after the kernel's name: "
                          "'kernel k<BLOCK: i32 = 1024>(...)'");
  else
    su_note(c->d, e->loc, "tk's names have no module prefix");
}

void sema_hint_elementwise(sema_ctx *c, ast_node *e, const sema_call *cl) {
  const sema_builtin *b = cl->builtin;
  if (b->kind != B_REDUCE || b->sub == IR_RED_SUM || cl->argc < 2 || !cl->argv[1] || e->qual) return;
  const char *fn = b->sub == IR_RED_MAX ? "maximum" : "minimum";
  su_loc args = su_loc_join(cl->argv[0]->loc, cl->argv[1]->loc);
  su_note(c->d, e->loc, "'%s' reduces a tile along an axis; the elementwise %s of two values is "
                        "'%s(%s)'", e->name, fn, fn, su_loc_text(c->a, args, MAX_QUOTED));
}

void sema_hint_missing(sema_ctx *c, ast_node *e) {
  /* Triton's four words of one Philox block: tk gives one word per call (the first), so
   * four values are four calls on offsets of their own (docs/language.md §6.9). */
  static const char *const four[][2] = {{"randint4x", "randint"}, {"rand4x", "rand"}, {"randn4x", "randn"}};
  for (size_t i = 0; i < sizeof four / sizeof four[0]; i++)
    if (strcmp(e->name, four[i][0]) == 0)
      su_note(c->d, e->loc, "tk has no '%s': call '%s' once per value, each on offsets of its own, "
                            "e.g. '%s(seed, 4 * offs + k)' for k = 0, 1, 2, 3 (other numbers than "
                            "Triton's)", four[i][0], four[i][1], four[i][1]);
}
