/* sema/overflow.c — the 32-bit offset hazard (Triton's best-known bug): a pointer offset
 * computed in 32 bits from a product of two run-time values, one of them derived from a
 * program id or a kernel argument — `x + row * stride` with row = program_id(0) — wraps
 * once the tensor passes 2^31 elements, silently addressing the wrong memory. Such a
 * product gets a warning at the product, with the fix-it: widen a factor to i64 before
 * multiplying. A product with a compile-time factor (`program_id(0) * BLOCK`) is the
 * linear index of an element, bounded by the i32 sizes the kernel is given, and is not
 * warned about; nor is a product under an explicit cast to a 32-bit type, the spelling
 * that says "I know it fits". (A cast of the product to i64 does not help, and still
 * warns: the product has wrapped before the cast.) A product that is itself a factor of
 * another product is an index being scaled, not an offset: the outer product is judged
 * instead, by its own width (`(heads as i64) * stride`, heads = g * group, is fine).
 *
 * Each checked expression records what it derives from (sema_taint: program id, kernel
 * argument) and the first hazardous product inside it (sema_hazard), from its operands;
 * a name takes its let's initializer's. */
#include <string.h>

#include "sema_int.h"

enum { T_PID = 1, T_ARG = 2 };

static bool narrow_int(const ir_type *t) {
  const ir_type *e = t ? sema_elem(t) : NULL;
  return e && e->kind == IR_SCALAR && ir_dtype_is_int(e->dtype) && e->dtype != TK_I1 &&
         ir_dtype_bits(e->dtype) <= 32;
}

static void take(ast_node *e, const ast_node *from) {
  if (!from) return;
  e->sema_taint |= from->sema_taint;
  if (!e->sema_hazard) e->sema_hazard = from->sema_hazard;
}

/* The source text of e, for the fix-it. */
static const char *text(sema_ctx *c, const ast_node *e) {
  const su_source *s = e->loc.src;
  if (!s || e->loc.off == UINT32_MAX || (size_t)e->loc.off + e->loc.len > s->len) return "...";
  return su_fmt(c->a, "%.*s", (int)e->loc.len, s->text + e->loc.off);
}

static void report(sema_ctx *c, ast_node *mul) {
  if (!c->warned) c->warned = su_map_new(c->a);
  /* one warning per product in the source, however many instances a helper has */
  const char *key = su_fmt(c->a, "%u", mul->loc.off);
  if (su_map_get(c->warned, key, strlen(key))) return;
  su_map_put(c->warned, key, strlen(key), mul);
  ast_node *wide = mul->lhs->sema_taint ? mul->lhs : mul->rhs;
  tk_dtype d = sema_elem(mul->sema_type)->dtype;
  su_warning(c->d, mul->loc, "this product is computed in %s and offsets a pointer: it wraps "
             "past 2^31 and then addresses the wrong memory", ir_dtype_name(d));
  su_note(c->d, wide->loc, "widen a factor to i64 before multiplying: '(%s as i64)'", text(c, wide));
  su_note(c->d, mul->loc, "or cast the product to %s if it is known to fit", ir_dtype_name(d));
}

void sema_overflow_track(sema_ctx *c, ast_node *e) {
  e->sema_taint = 0;
  e->sema_hazard = NULL;
  if (e->sema_is_const) return;
  switch (e->kind) {
  case AST_NAME: {
    const sema_sym *s = e->sema_ref;
    if (!s) return;
    if (s->kind == SYM_PARAM) e->sema_taint = T_ARG;
    if (s->kind == SYM_LOCAL && s->decl && s->decl->kind == AST_LET) take(e, s->decl->rhs);
    return;
  }
  case AST_CALL: {
    const sema_call *cl = e->sema_ref;
    if (cl && cl->builtin &&
        (cl->builtin->kind == B_PROGRAM_ID || cl->builtin->kind == B_NUM_PROGRAMS)) {
      e->sema_taint = T_PID;
      return;
    }
    for (int i = 0; cl && i < cl->argc; i++) take(e, cl->argv[i]);
    return;
  }
  case AST_CAST:
    take(e, e->lhs);
    if (narrow_int(e->sema_type)) e->sema_hazard = NULL; /* the explicit spelling */
    return;
  case AST_UNARY:
  case AST_INDEX:
    take(e, e->lhs);
    return;
  case AST_BINARY:
    take(e, e->lhs);
    take(e, e->rhs);
    /* A product's factors' own products are indices it scales (`(heads as i64) * stride`
     * with heads = g * group): the product is what is judged, by its own width. */
    if (e->op == TOK_STAR)
      e->sema_hazard = narrow_int(e->sema_type) && e->lhs->sema_type && e->rhs->sema_type &&
                               !e->lhs->sema_is_const && !e->rhs->sema_is_const && e->sema_taint
                           ? e
                           : NULL;
    if ((e->op == TOK_PLUS || e->op == TOK_MINUS) && e->sema_type && sema_elem(e->sema_type)->kind == IR_PTR) {
      ast_node *off = sema_elem(e->lhs->sema_type)->kind == IR_PTR ? e->rhs : e->lhs;
      if (off->sema_hazard) report(c, off->sema_hazard);
      e->sema_hazard = NULL; /* reported once, at the offset */
    }
    return;
  default:
    return;
  }
}
