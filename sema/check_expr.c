/* sema/check_expr.c — types, shapes and constant values of expressions (calls are in
 * check_call.c). An erroneous expression gets the type NULL; operators and calls that
 * meet a NULL operand give NULL without a message, so one mistake makes one error. */
#include <string.h>

#include "sema_int.h"

static const char *tstr(sema_ctx *c, const ir_type *t) { return sema_type_quoted(c->a, t); }

static const char *op_name(int op) { return lex_kind_name((lex_kind)op); }

static bool is_int(const ir_type *t) { return ir_dtype_is_int(sema_elem(t)->dtype); }
static bool is_ptr(const ir_type *t) { return sema_elem(t)->kind == IR_PTR; }
static bool is_numeric(const ir_type *t) {
  return sema_elem(t)->kind == IR_SCALAR && sema_is_numeric(sema_elem(t)->dtype);
}

static const ir_type *check_literal(sema_ctx *c, ast_node *e) {
  sema_cval v = {0};
  const ir_type *t;
  if (e->kind == AST_FLOAT) {
    /* a weak float keeps f64 precision until it meets the operand it adapts to */
    t = ir_type_scalar(c->m, TK_F32);
    v.f = e->fval;
  } else if (e->kind == AST_BOOL) {
    t = ir_type_scalar(c->m, TK_I1);
    v.i = e->ival != 0;
  } else {
    if (e->type) {
      t = sema_resolve_type(c, e->type);
      if (!t) return NULL;
    } else {
      t = ir_type_scalar(c->m, e->ival <= INT32_MAX ? TK_I32 : e->ival <= INT64_MAX ? TK_I64 : TK_U64);
    }
    v.i = sema_wrap_int(t->dtype, (int64_t)e->ival);
  }
  sema_set_const(e, t, v);
  return t;
}

/* Where a dtype parameter may be written, after a use where a value goes. */
static void dtype_note(sema_ctx *c, const ast_node *e, const sema_sym *s) {
  if (s && s->type)
    su_note(c->d, e->loc, "'%s' is %s here; write it where a type goes: '*%s', 'x as %s', "
                          "'zeros<%s>(...)', 'let v: %s = ...'",
            e->name, sema_type_quoted(c->a, s->type), e->name, e->name, e->name, e->name);
}

/* True when e, written where a value goes, is a type: a dtype parameter's name or a type
 * keyword; *what is then its spelling. */
static bool names_dtype(sema_ctx *c, const ast_node *e, const char **what) {
  if (e->kind == AST_TYPE) {
    *what = lex_dtype_name(e->dtype);
    return true;
  }
  if (e->kind != AST_NAME || e->qual) return false;
  sema_sym *s = sema_lookup(c, e->name);
  if (!s || s->kind != SYM_DTYPE) return false;
  *what = e->name;
  return true;
}

static const ir_type *check_name(sema_ctx *c, ast_node *e) {
  if (e->qual) {
    sema_hint_name(c, e);
    return NULL;
  }
  sema_sym *s = sema_lookup(c, e->name);
  if (!s) {
    su_error(c->d, e->loc, "use of undeclared name '%s'", e->name);
    if (strcmp(e->name, "True") == 0 || strcmp(e->name, "False") == 0)
      su_note(c->d, e->loc, "tk's booleans are 'true' and 'false'");
    return NULL;
  }
  e->sema_ref = s;
  if (s->kind == SYM_FUNC || s->kind == SYM_KERNEL) {
    su_error(c->d, e->loc, "'%s' is a %s, not a value", e->name,
             s->kind == SYM_FUNC ? "function" : "kernel");
    return NULL;
  }
  if (s->kind == SYM_DTYPE) {
    su_error(c->d, e->loc, "'%s' is a dtype, not a value", e->name);
    dtype_note(c, e, s);
    return NULL;
  }
  if (s->kind == SYM_CONST && s->state != 2 && s->decl && s->decl->kind == AST_CONST)
    sema_check_global_const(c, s);
  if (!s->type) return NULL;
  if (s->kind == SYM_CONST) sema_set_const(e, s->type, s->cval);
  return s->type;
}

static const ir_type *check_unary(sema_ctx *c, ast_node *e) {
  const ir_type *t = sema_check_value(c, e->lhs);
  if (!t) return NULL;
  if (sema_fp8_rejected(c, e->loc, su_fmt(c->a, "unary '%s'", op_name(e->op)), t)) return NULL;
  tk_dtype d = sema_elem(t)->dtype;
  bool ok;
  switch (e->op) {
  case TOK_MINUS: case TOK_PLUS: ok = is_numeric(t) && d != TK_I1; break;
  case TOK_BANG: ok = d == TK_I1 && !is_ptr(t); break;
  case TOK_TILDE: ok = is_int(t) && !is_ptr(t); break;
  default: SU_UNREACHABLE();
  }
  if (!ok) {
    su_error(c->d, e->loc, "invalid operand to unary '%s': %s", op_name(e->op), tstr(c, t));
    return NULL;
  }
  if (e->lhs->sema_is_const)
    sema_set_const(e, t, sema_fold_unary(e->op, d, sema_const_as(e->lhs, d)));
  return t;
}

/* Where a binary operator is written: the parser may record it in name_loc. */
static su_loc op_loc(const ast_node *e) { return e->name_loc.src ? e->name_loc : e->loc; }

static bool is_cmp(int op) {
  return op == TOK_EQ || op == TOK_NE || op == TOK_LT || op == TOK_LE || op == TOK_GT ||
         op == TOK_GE;
}

const ir_type *sema_binary_type(sema_ctx *c, int op, su_loc loc, ast_node *x, const ir_type *tx,
                                ast_node *y, const ir_type *ty, const ir_type **opd) {
  int rank, shape[IR_MAX_RANK];
  bool px = is_ptr(tx), py = is_ptr(ty);
  const ir_type *ex = sema_elem(tx), *ey = sema_elem(ty), *elem = NULL, *res;
  const char *what = su_fmt(c->a, "'%s'", op_name(op));
  if (sema_fp8_rejected(c, loc, what, tx) || sema_fp8_rejected(c, loc, what, ty)) return NULL;
  if (px || py) {
    /* pointer arithmetic: p + i, i + p, p - i; pointer comparisons of one pointee */
    if ((op == TOK_PLUS && px != py && is_int(px ? ty : tx)) ||
        (op == TOK_MINUS && px && !py && is_int(ty)))
      elem = px ? ex : ey;
    else if (is_cmp(op) && ex == ey)
      elem = ex;
    else
      goto invalid;
  } else if (!is_numeric(tx) || !is_numeric(ty)) {
    goto invalid;
  } else {
    tk_dtype d = sema_promote(ex->dtype, sema_is_weak(x), ey->dtype, sema_is_weak(y));
    if (!sema_weak_fits(c, x, d) || !sema_weak_fits(c, y, d)) return NULL;
    switch (op) {
    case TOK_PLUS: case TOK_MINUS: case TOK_STAR: case TOK_SLASH: case TOK_PERCENT:
      if (d == TK_I1) goto invalid;
      break;
    case TOK_SHL: case TOK_SHR:
      if (!ir_dtype_is_int(d) || d == TK_I1) goto invalid;
      break;
    case TOK_STARSTAR:
      if (!ir_dtype_is_float(d)) {
        su_error(c->d, loc, "invalid operands to '**': %s and %s", tstr(c, tx), tstr(c, ty));
        su_note(c->d, loc, "'**' is pow(), a float function: convert an operand ('x as f32'), "
                           "or multiply out a small integer power ('x * x')");
        return NULL;
      }
      break;
    case TOK_AMP: case TOK_PIPE: case TOK_CARET:
      if (!ir_dtype_is_int(d)) goto invalid;
      break;
    case TOK_ANDAND: case TOK_OROR:
      if (ex->dtype != TK_I1 || ey->dtype != TK_I1) goto invalid;
      break;
    default: break; /* comparisons: any numeric pair */
    }
    elem = ir_type_scalar(c->m, d);
  }
  if (!sema_broadcast(c, loc, x, tx, y, ty, &rank, shape)) return NULL;
  *opd = elem;
  res = is_cmp(op) ? ir_type_scalar(c->m, TK_I1) : elem;
  return sema_with_shape(c, res, rank, shape);
invalid:
  su_error(c->d, loc, "invalid operands to '%s': %s and %s", op_name(op), tstr(c, tx), tstr(c, ty));
  return NULL;
}

/* Folds a binary operator over two constant scalars; reports what cannot fold. */
bool sema_fold_binary_node(sema_ctx *c, int op, su_loc loc, ast_node *x, ast_node *y,
                           const ir_type *opd, const ir_type *res, sema_cval *out) {
  const char *why = NULL;
  if (!sema_fold_binary(op, opd->dtype, sema_const_as(x, opd->dtype), sema_const_as(y, opd->dtype),
                        res->dtype, out, &why)) {
    su_error(c->d, loc, "%s in constant expression", why);
    return false;
  }
  return true;
}

static const ir_type *check_binary(sema_ctx *c, ast_node *e) {
  /* A dtype is a type, not a value: T == f16 or T + 1 is one error at the operator. A
   * specialized kernel has one T, so there is nothing to compare. */
  const char *dx = NULL, *dy = NULL;
  if (names_dtype(c, e->lhs, &dx) | names_dtype(c, e->rhs, &dy)) {
    const char *d = dx ? dx : dy;
    if (is_cmp(e->op))
      su_error(c->d, op_loc(e), "dtypes cannot be compared: '%s' is a type, not a value", d);
    else
      su_error(c->d, op_loc(e), "'%s' is a type and cannot be an operand of '%s'", d, op_name(e->op));
    su_note(c->d, op_loc(e), "a kernel is specialized for one value of a dtype parameter "
                             "(-D T=bf16); code for another dtype belongs in another kernel "
                             "or behind a compile-time bool parameter");
    return NULL;
  }
  const ir_type *tx = sema_check_value(c, e->lhs), *ty = sema_check_value(c, e->rhs), *opd;
  if (!tx || !ty) return NULL;
  const ir_type *t = sema_binary_type(c, e->op, op_loc(e), e->lhs, tx, e->rhs, ty, &opd);
  if (!t) return NULL;
  sema_cval v;
  /* '**' is pow(), whose value is the math library's: it does not fold, like exp(1.0) */
  if (t->kind == IR_SCALAR && e->lhs->sema_is_const && e->rhs->sema_is_const &&
      e->op != TOK_STARSTAR) {
    if (!sema_fold_binary_node(c, e->op, op_loc(e), e->lhs, e->rhs, opd, t, &v)) return NULL;
    sema_set_const(e, t, v);
  }
  return t;
}

const ir_type *sema_resolve_type(sema_ctx *c, ast_node *t) {
  if (t->kind == AST_TYPE) {
    if ((int)t->dtype < 0 || t->dtype == TK_PTR || t->dtype >= TK_NDTYPE) {
      su_error(c->d, t->loc, "invalid type");
      return NULL;
    }
    return ir_type_scalar(c->m, t->dtype);
  }
  if (t->kind == AST_PTR_TYPE) {
    const ir_type *p = t->lhs ? sema_resolve_type(c, t->lhs) : NULL;
    if (!p) return NULL;
    if (p->kind != IR_SCALAR) {
      su_error(c->d, t->loc, "pointers to pointers are not supported");
      return NULL;
    }
    return ir_type_ptr(c->m, p);
  }
  if (t->kind == AST_TYPE_NAME) {
    sema_sym *s = sema_lookup(c, t->name);
    if (s && s->kind == SYM_DTYPE) return s->type; /* NULL after its own error */
    if (s) {
      su_error(c->d, t->loc, "'%s' is not a type", t->name);
      su_note(c->d, s->decl ? s->decl->name_loc : t->loc, "'%s' is declared here", t->name);
    } else {
      su_error(c->d, t->loc, "unknown type '%s'", t->name);
      if (c->in_helper)
        su_note(c->d, t->loc, "a helper sees file-level names only, not the calling kernel's "
                              "dtype parameters; leave the parameter untyped to take the "
                              "argument's type");
    }
    return NULL;
  }
  su_error(c->d, t->loc, "expected a type");
  return NULL;
}

static const ir_type *check_cast(sema_ctx *c, ast_node *e) {
  const ir_type *t = sema_check_value(c, e->lhs);
  const ir_type *to = e->type ? sema_resolve_type(c, e->type) : NULL;
  if (!t || !to) return NULL;
  const ir_type *from = sema_elem(t);
  if ((from->kind == IR_PTR) != (to->kind == IR_PTR)) {
    su_error(c->d, e->loc, "cannot cast %s to %s", tstr(c, t), tstr(c, to));
    return NULL;
  }
  const ir_type *r = sema_with_shape(c, to, sema_rank(t), t->kind == IR_TILE ? t->shape : NULL);
  if (e->lhs->sema_is_const && to->kind == IR_SCALAR)
    sema_set_const(e, r, sema_const_as(e->lhs, to->dtype));
  return r;
}

static const ir_type *check_index(sema_ctx *c, ast_node *e) {
  const ir_type *t = sema_check_value(c, e->lhs);
  if (!t) return NULL;
  int nslice = 0, rank = 0, shape[IR_MAX_RANK], in = 0;
  for (int i = 0; i < e->args.len; i++) {
    ast_node *it = e->args.items[i];
    if (it->kind == AST_SLICE) nslice++;
    else if (it->kind != AST_NONE) {
      su_error(c->d, it->loc, "a tile is not indexed by a number: only ':', 'a:b' and 'None' "
                              "may appear in an index");
      su_note(c->d, it->loc, "'x[i:i + 1]' keeps one element of an axis (i a compile-time "
                             "integer), and 'reshape' drops the axis");
      return NULL;
    }
  }
  if (nslice != sema_rank(t)) {
    su_error(c->d, e->loc, "index of %s needs one ':' per axis (%d), got %d", tstr(c, t),
             sema_rank(t), nslice);
    return NULL;
  }
  if (e->args.len > IR_MAX_RANK) {
    su_error(c->d, e->loc, "a tile has at most %d dimensions", IR_MAX_RANK);
    return NULL;
  }
  bool ok = true;
  for (int i = 0; i < e->args.len; i++) {
    ast_node *it = e->args.items[i];
    if (it->kind != AST_SLICE) {
      shape[rank++] = 1;
      continue;
    }
    int dim = t->shape[in++];
    int64_t b[2] = {0, dim};
    ast_node *ends[2] = {it->lhs, it->rhs};
    for (int k = 0; k < 2; k++)
      if (ends[k] && !sema_const_int(c, ends[k], "a slice bound", &b[k])) ok = false;
    if (!ok) continue;
    if (b[0] < 0 || b[1] > dim || b[0] >= b[1]) {
      su_error(c->d, it->loc, "slice %lld:%lld is out of range for axis %d of %s (size %d)",
               (long long)b[0], (long long)b[1], in - 1, tstr(c, t), dim);
      ok = false;
      continue;
    }
    if (!sema_is_pow2(b[1] - b[0])) {
      su_error(c->d, it->loc, "slice %lld:%lld has %lld elements; a tile's dimensions are powers of two",
               (long long)b[0], (long long)b[1], (long long)(b[1] - b[0]));
      ok = false;
      continue;
    }
    shape[rank++] = (int)(b[1] - b[0]);
  }
  return ok ? sema_with_shape(c, t, rank, shape) : NULL;
}

const ir_type *sema_check_expr(sema_ctx *c, ast_node *e) {
  const ir_type *t;
  if (!e) return NULL; /* a piece the parser could not build: it has reported it */
  switch (e->kind) {
  case AST_INT: case AST_FLOAT: case AST_BOOL: t = check_literal(c, e); break;
  case AST_STRING:
    su_error(c->d, e->loc, "a string literal is only allowed as a message or print prefix");
    t = NULL;
    break;
  case AST_NAME: t = check_name(c, e); break;
  case AST_UNARY: t = check_unary(c, e); break;
  case AST_BINARY: t = check_binary(c, e); break;
  case AST_CAST: t = check_cast(c, e); break;
  case AST_INDEX: t = check_index(c, e); break;
  case AST_CALL: t = sema_check_call(c, e); break;
  case AST_ERROR: t = NULL; break; /* the parser has reported it */
  case AST_TUPLE: {
    bool ok = true;
    for (int i = 0; i < e->args.len; i++) ok &= sema_check_value(c, e->args.items[i]) != NULL;
    t = ok ? SEMA_TUPLE : NULL;
    break;
  }
  case AST_TYPE:
    su_error(c->d, e->loc, "'%s' is a type, not a value", lex_dtype_name(e->dtype));
    su_note(c->d, e->loc, "convert with 'x as %s'; builtins take a type argument: 'zeros<%s>(...)'",
            lex_dtype_name(e->dtype), lex_dtype_name(e->dtype));
    t = NULL;
    break;
  default:
    su_error(c->d, e->loc, "expected an expression");
    t = NULL;
    break;
  }
  e->sema_type = t == SEMA_VOID || t == SEMA_TUPLE ? NULL : t;
  if (!t) e->sema_is_const = false;
  if (e->sema_type) sema_overflow_track(c, e);
  return t;
}

const ir_type *sema_check_value(sema_ctx *c, ast_node *e) {
  const ir_type *t = sema_check_expr(c, e);
  if (t && t == SEMA_VOID) {
    su_error(c->d, e->loc, "'%s' does not return a value", e->name ? e->name : "expression");
    return NULL;
  }
  if (t == SEMA_TUPLE) {
    int n = 0;
    sema_tuple_elems(c->a, e, &n);
    if (e->kind == AST_CALL)
      su_error(c->d, e->loc, "'%s' returns %d values, not one", e->name, n);
    else
      su_error(c->d, e->loc, "a tuple of %d values is not a value", n);
    su_note(c->d, e->loc, "take the values apart where they are made: 'let (a, b) = ...;' or "
                          "'(a, b) = ...;'");
    return NULL;
  }
  return t;
}

bool sema_const_int(sema_ctx *c, ast_node *e, const char *what, int64_t *out) {
  const ir_type *t = sema_check_value(c, e);
  if (!t) return false;
  if (t->kind != IR_SCALAR || !ir_dtype_is_int(t->dtype) || t->dtype == TK_I1 || !e->sema_is_const) {
    su_error(c->d, e->loc, "%s must be a compile-time integer", what);
    return false;
  }
  *out = e->sema_const.i;
  return true;
}

bool sema_weak_fits(sema_ctx *c, const ast_node *e, tk_dtype d) {
  if (!sema_is_weak(e) || !e->sema_is_const || !ir_dtype_is_int(d) || !e->sema_type ||
      !ir_dtype_is_int(sema_elem(e->sema_type)->dtype))
    return true;
  int64_t v = e->sema_const.i;
  int bits = ir_dtype_bits(d);
  bool fits;
  if (d == TK_I1)
    fits = v == 0 || v == 1;
  else if (ir_dtype_is_signed(d))
    fits = bits == 64 || (v >= -(INT64_C(1) << (bits - 1)) && v < (INT64_C(1) << (bits - 1)));
  else
    fits = v >= 0 && (bits == 64 || v < (INT64_C(1) << bits));
  if (!fits)
    su_error(c->d, e->loc, "integer literal %lld does not fit in '%s'", (long long)v,
             ir_dtype_name(d));
  return fits;
}

bool sema_check_assignable(sema_ctx *c, ast_node *e, const ir_type *t, const ir_type *want,
                           const char *what) {
  if (t == want) return true;
  bool weak_ok = sema_is_weak(e) && t->kind == IR_SCALAR && want->kind == IR_SCALAR &&
                 sema_is_numeric(want->dtype) && want->dtype != TK_I1 &&
                 (ir_dtype_is_int(t->dtype) || ir_dtype_is_float(want->dtype));
  if (weak_ok) return sema_weak_fits(c, e, want->dtype);
  su_error(c->d, e->loc, "cannot assign %s to %s of type %s", tstr(c, t), what, tstr(c, want));
  return false;
}
