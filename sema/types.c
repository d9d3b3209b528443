/* sema/types.c — shapes, broadcasting, promotion and the spelling of types in messages.
 * Sema's types are ir types (interned in the module), so equality is pointer equality. */
#include <string.h>

#include "sema_int.h"

const ir_type sema_void_type = {.kind = IR_SCALAR, .dtype = TK_NDTYPE};
const ir_type sema_tuple_type = {.kind = IR_SCALAR, .dtype = TK_NDTYPE};

const ir_type **sema_tuple_elems(su_arena *a, const ast_node *e, int *n) {
  if (e->kind == AST_TUPLE) {
    const ir_type **ts = SU_NEW_ARRAY(a, const ir_type *, e->args.len);
    for (int i = 0; i < e->args.len; i++) ts[i] = e->args.items[i]->sema_type;
    *n = e->args.len;
    return ts;
  }
  const sema_call *cl = e->kind == AST_CALL ? e->sema_ref : NULL;
  if (!cl || !cl->nrets) return NULL;
  *n = cl->nrets;
  return cl->rets;
}

int sema_rank(const ir_type *t) { return t->kind == IR_TILE ? t->rank : 0; }

const ir_type *sema_elem(const ir_type *t) { return t->kind == IR_TILE ? t->elem : t; }

const ir_type *sema_with_shape(sema_ctx *c, const ir_type *elem, int rank, const int *shape) {
  elem = sema_elem(elem);
  return rank == 0 ? elem : ir_type_tile(c->m, elem, rank, shape);
}

static void put_type(su_buf *b, const ir_type *t) {
  switch (t->kind) {
  case IR_SCALAR: su_buf_puts(b, ir_dtype_name(t->dtype)); return;
  case IR_PTR: su_buf_puts(b, "*"); put_type(b, t->elem); return;
  case IR_TILE:
    su_buf_puts(b, "tile<");
    for (int i = 0; i < t->rank; i++) su_buf_printf(b, "%dx", t->shape[i]);
    put_type(b, t->elem);
    su_buf_puts(b, ">");
    return;
  case IR_SMEM: case IR_MBAR: case IR_TMAP: /* GPU level only: never in a checked program */
    ir_type_print(b, t);
    return;
  }
  SU_UNREACHABLE();
}

int sema_dtype_named(const char *name) {
  tk_dtype d;
  if (!strcmp(name, "bool")) return TK_I1;
  return ir_dtype_parse(name, strlen(name), &d) && d != TK_PTR ? (int)d : -1;
}

const char *sema_type_quoted(su_arena *a, const ir_type *t) {
  return su_fmt(a, "'%s'", sema_type_str(a, t));
}

const char *sema_type_str(su_arena *a, const ir_type *t) {
  su_buf b = {0};
  put_type(&b, t);
  char *s = su_strdup(a, su_buf_str(&b));
  su_buf_free(&b);
  return s;
}

bool sema_broadcast_shapes(const ir_type *a, const ir_type *b, int *rank, int *shape) {
  int ra = sema_rank(a), rb = sema_rank(b);
  int r = ra > rb ? ra : rb;
  /* numpy: right-align, then each pair must agree or one side be 1 */
  for (int i = 0; i < r; i++) {
    int da = i - (r - ra) >= 0 ? a->shape[i - (r - ra)] : 1;
    int db = i - (r - rb) >= 0 ? b->shape[i - (r - rb)] : 1;
    if (da != db && da != 1 && db != 1) return false;
    shape[i] = da == 1 ? db : da;
  }
  *rank = r;
  return true;
}

/* Points at where an operand's shape comes from: the declaration of a named value, else
 * the operand itself. */
static void shape_note(sema_ctx *c, ast_node *x, const ir_type *t) {
  const char *ts = sema_type_quoted(c->a, t);
  sema_sym *s = x->kind == AST_NAME ? x->sema_ref : NULL;
  if (s && s->decl && s->decl->kind == AST_LET)
    su_note(c->d, s->decl->name_loc, "'%s' is declared here with type %s", s->name, ts);
  else
    su_note(c->d, x->loc, "this operand has type %s", ts);
}

bool sema_broadcast(sema_ctx *c, su_loc loc, ast_node *x, const ir_type *a, ast_node *y,
                    const ir_type *b, int *rank, int *shape) {
  if (sema_broadcast_shapes(a, b, rank, shape)) return true;
  su_error(c->d, loc, "cannot broadcast %s with %s", sema_type_quoted(c->a, a),
           sema_type_quoted(c->a, b));
  shape_note(c, x, a);
  shape_note(c, y, b);
  return false;
}

bool sema_is_weak(const ast_node *e) {
  switch (e->kind) {
  case AST_INT: return e->type == NULL;
  case AST_FLOAT: return true;
  case AST_NAME: {
    const sema_sym *s = e->sema_ref;
    return s && s->weak;
  }
  case AST_UNARY: return (e->op == TOK_MINUS || e->op == TOK_PLUS) && sema_is_weak(e->lhs);
  case AST_BINARY:
    switch (e->op) {
    case TOK_PLUS: case TOK_MINUS: case TOK_STAR: case TOK_SLASH: case TOK_PERCENT:
      return sema_is_weak(e->lhs) && sema_is_weak(e->rhs);
    default: return false;
    }
  default: return false;
  }
}

bool sema_is_numeric(tk_dtype d) { return ir_dtype_is_int(d) || ir_dtype_is_float(d); }

bool sema_fp8_rejected(sema_ctx *c, su_loc loc, const char *what, const ir_type *t) {
  const ir_type *e = sema_elem(t);
  if (e->kind != IR_SCALAR || !ir_dtype_is_fp8(e->dtype)) return false;
  su_error(c->d, loc, "%s does not compute on %s: %s is a storage type", what,
           sema_type_quoted(c->a, t), ir_dtype_name(e->dtype));
  su_note(c->d, loc, "convert first: 'x as f32' (Triton's x.to(tl.float32)); loads, stores, "
                     "casts, 'where', shape ops and 'dot' take fp8 as it is");
  return true;
}

bool sema_is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

static tk_dtype promote_strong(tk_dtype a, tk_dtype b) {
  if (a == b) return a;
  bool fa = ir_dtype_is_float(a), fb = ir_dtype_is_float(b);
  if (fa != fb) return fa ? a : b;
  if (fa) {
    int wa = ir_dtype_bits(a), wb = ir_dtype_bits(b);
    if (wa == wb) return TK_F32; /* f16 with bf16: neither holds the other */
    return wa > wb ? a : b;
  }
  if (a == TK_I1) return b;
  if (b == TK_I1) return a;
  int wa = ir_dtype_bits(a), wb = ir_dtype_bits(b);
  if (wa != wb) return wa > wb ? a : b;
  return ir_dtype_is_signed(a) ? b : a; /* same width, signed + unsigned: unsigned */
}

/* A weak constant meeting a typed operand of dtype s. */
static tk_dtype promote_weak(tk_dtype w, tk_dtype s) {
  if (ir_dtype_is_float(w)) return ir_dtype_is_float(s) ? s : w;
  if (s == TK_I1) return w;
  return s;
}

tk_dtype sema_promote(tk_dtype a, bool weak_a, tk_dtype b, bool weak_b) {
  if (weak_a && !weak_b) return promote_weak(a, b);
  if (weak_b && !weak_a) return promote_weak(b, a);
  return promote_strong(a, b);
}
