/* sema/lower_expr.c — expressions to SSA values. Every implicit conversion of the language
 * (weak constants, promotion, broadcasting) becomes an explicit CONST, CAST, SPLAT,
 * EXPAND_DIMS or BROADCAST here, so elementwise ops get operands of identical type. */
#include "sema_int.h"

void sema_lower_at(sema_lowerer *l, const ast_node *e) {
  l->b.loc = (ir_loc){e->loc.line, e->loc.col};
}

/* A compile-time scalar materialized directly in type want (a scalar or a filled tile). */
static ir_value *lower_const(sema_lowerer *l, const ast_node *e, const ir_type *want) {
  tk_dtype d = sema_elem(want)->dtype;
  sema_cval v = sema_const_as(e, d);
  return ir_dtype_is_float(d) ? ir_const_float(&l->b, want, v.f) : ir_const_int(&l->b, want, v.i);
}

static ir_value *expand_dims(sema_lowerer *l, ir_value *v, int axis) {
  const ir_type *t = v->type;
  int shape[IR_MAX_RANK];
  for (int i = 0, k = 0; i <= t->rank; i++) shape[i] = i == axis ? 1 : t->shape[k++];
  ir_value *r = ir_build1(&l->b, IR_EXPAND_DIMS, ir_type_tile(l->m, t->elem, t->rank + 1, shape), 1, &v);
  r->def->attr2 = axis;
  return r;
}

ir_value *sema_lower_convert(sema_lowerer *l, ir_value *v, const ir_type *want) {
  const ir_type *we = sema_elem(want);
  if (sema_elem(v->type) != we) v = ir_build1(&l->b, IR_CAST, ir_type_like(l->m, v->type, we), 1, &v);
  if (v->type == want) return v;
  if (v->type->kind != IR_TILE) return ir_build1(&l->b, IR_SPLAT, want, 1, &v);
  /* numpy alignment: missing leading dims become 1, then size-1 dims stretch */
  while (v->type->rank < want->rank) v = expand_dims(l, v, 0);
  if (v->type != want) v = ir_build1(&l->b, IR_BROADCAST, want, 1, &v);
  return v;
}

ir_value *sema_lower_as(sema_lowerer *l, ast_node *e, const ir_type *want) {
  if (e->sema_is_const && e->sema_type->kind == IR_SCALAR && sema_elem(want)->kind == IR_SCALAR) {
    sema_lower_at(l, e);
    return lower_const(l, e, want);
  }
  ir_value *v = sema_lower_expr(l, e);
  sema_lower_at(l, e);
  return sema_lower_convert(l, v, want);
}

static ir_opcode arith_opcode(int op) {
  switch (op) {
  case TOK_PLUS: return IR_ADD;
  case TOK_MINUS: return IR_SUB;
  case TOK_STAR: return IR_MUL;
  case TOK_SLASH: return IR_DIV;
  case TOK_STARSTAR: return IR_POW;
  case TOK_PERCENT: return IR_REM;
  case TOK_AMP: case TOK_ANDAND: return IR_AND;
  case TOK_PIPE: case TOK_OROR: return IR_OR;
  case TOK_CARET: return IR_XOR;
  case TOK_SHL: return IR_SHL;
  case TOK_SHR: return IR_SHR;
  default: return IR_NOPCODES;
  }
}

static int cmp_pred(int op) {
  switch (op) {
  case TOK_EQ: return IR_CMP_EQ;
  case TOK_NE: return IR_CMP_NE;
  case TOK_LT: return IR_CMP_LT;
  case TOK_LE: return IR_CMP_LE;
  case TOK_GT: return IR_CMP_GT;
  case TOK_GE: return IR_CMP_GE;
  default: return -1;
  }
}

static ir_value *lower_binary(sema_lowerer *l, ast_node *e) {
  ast_node *x = e->lhs, *y = e->rhs;
  const ir_type *res = e->sema_type, *ex = sema_elem(x->sema_type), *ey = sema_elem(y->sema_type);
  int rank = sema_rank(res);
  const int *shape = res->kind == IR_TILE ? res->shape : NULL;
  if (sema_elem(res)->kind == IR_PTR) {
    /* p + i, i + p, p - i: the offset keeps its integer type, shaped like the result */
    ast_node *p = ex->kind == IR_PTR ? x : y, *i = p == x ? y : x;
    ir_value *pv = sema_lower_as(l, p, res);
    ir_value *iv = sema_lower_as(l, i, ir_type_like(l->m, res, sema_elem(i->sema_type)));
    sema_lower_at(l, e);
    if (e->op == TOK_MINUS) iv = ir_unary(&l->b, IR_NEG, iv);
    ir_value *ops[2] = {pv, iv};
    return ir_build1(&l->b, IR_ADDPTR, res, 2, ops);
  }
  const ir_type *opd = ex->kind == IR_PTR
                           ? ex
                           : ir_type_scalar(l->m, sema_promote(ex->dtype, sema_is_weak(x), ey->dtype,
                                                               sema_is_weak(y)));
  const ir_type *ot = rank ? ir_type_tile(l->m, opd, rank, shape) : opd;
  ir_value *a = sema_lower_as(l, x, ot), *b = sema_lower_as(l, y, ot);
  sema_lower_at(l, e);
  int pred = cmp_pred(e->op);
  if (pred >= 0) return ir_cmp_build(&l->b, (ir_cmp)pred, a, b);
  return ir_binary(&l->b, arith_opcode(e->op), a, b);
}

static ir_value *lower_index(sema_lowerer *l, ast_node *e) {
  ir_value *v = sema_lower_expr(l, e->lhs);
  sema_lower_at(l, e);
  if (v->type->kind != IR_TILE) return ir_build1(&l->b, IR_SPLAT, e->sema_type, 1, &v);
  /* the bounded slices first, one slice op over every axis */
  int starts[IR_MAX_RANK], shape[IR_MAX_RANK], in = 0;
  bool part = false;
  for (int i = 0; i < e->args.len; i++) {
    ast_node *it = e->args.items[i];
    if (it->kind != AST_SLICE) continue;
    int dim = v->type->shape[in];
    int b0 = it->lhs ? (int)it->lhs->sema_const.i : 0, b1 = it->rhs ? (int)it->rhs->sema_const.i : dim;
    starts[in] = b0;
    shape[in++] = b1 - b0;
    part |= b1 - b0 != dim;
  }
  if (part) {
    const ir_type *st = ir_type_tile(l->m, v->type->elem, v->type->rank, shape);
    ir_value *s = ir_build1(&l->b, IR_SLICE, st, 1, &v);
    s->def->ints = su_memdup(l->m->arena, starts, sizeof(int) * (size_t)v->type->rank);
    s->def->nints = v->type->rank;
    v = s;
  }
  for (int i = 0; i < e->args.len; i++)
    if (e->args.items[i]->kind == AST_NONE) v = expand_dims(l, v, i);
  return v;
}

ir_value *sema_lower_expr(sema_lowerer *l, ast_node *e) {
  SU_ASSERT(e->kind == AST_CALL || e->sema_type);
  if (e->sema_is_const && e->sema_type->kind == IR_SCALAR) {
    sema_lower_at(l, e);
    return lower_const(l, e, e->sema_type);
  }
  switch (e->kind) {
  case AST_NAME: {
    sema_sym *s = e->sema_ref;
    SU_ASSERT(s && s->val);
    return s->val;
  }
  case AST_UNARY: {
    ir_value *x = sema_lower_as(l, e->lhs, e->sema_type);
    sema_lower_at(l, e);
    if (e->op == TOK_PLUS) return x;
    return ir_unary(&l->b, e->op == TOK_MINUS ? IR_NEG : IR_NOT, x);
  }
  case AST_BINARY: return lower_binary(l, e);
  case AST_CAST: {
    ir_value *x = sema_lower_expr(l, e->lhs);
    sema_lower_at(l, e);
    return sema_lower_convert(l, x, e->sema_type);
  }
  case AST_INDEX: return lower_index(l, e);
  case AST_CALL: return sema_lower_call(l, e);
  default: SU_UNREACHABLE();
  }
}
