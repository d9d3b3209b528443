/* sema/lower_builtin.c — calls: helper instances are inlined (their parameters bound to the
 * argument values, their body lowered in place); builtins become their ops. A reduction
 * without an axis reshapes its operand to 1-D and reduces axis 0, one op instead of one
 * per axis. */
#include "sema_int.h"

#include <math.h>

static ir_value *build(sema_lowerer *l, ir_opcode opc, const ir_type *t, int n, ir_value **ops,
                       int64_t attr, int64_t attr2) {
  ir_value *v = ir_build1(&l->b, opc, t, n, ops);
  v->def->attr = attr;
  v->def->attr2 = attr2;
  return v;
}

/* Inlines the helper instance of call e; a helper returning a tuple leaves its values in
 * outs (cl->nrets of them). */
static ir_value *lower_helper(sema_lowerer *l, ast_node *e, sema_call *cl, ir_value **outs) {
  ast_node *inst = cl->helper;
  for (int i = 0; i < inst->params.len; i++) {
    sema_sym *s = inst->params.items[i]->sema_ref;
    if (s->kind != SYM_CONST) s->val = sema_lower_as(l, cl->argv[i], s->type);
  }
  ir_value *save = l->ret, **save_rets = l->rets;
  const ir_type *save_t = l->ret_type;
  l->ret = NULL;
  l->rets = outs;
  l->ret_type = e->sema_type;
  sema_lower_block(l, inst->body);
  ir_value *r = l->ret;
  l->ret = save;
  l->rets = save_rets;
  l->ret_type = save_t;
  return r;
}

/* split(x): the two halves of the last axis, sliced and reshaped without it. */
static void lower_split(sema_lowerer *l, ast_node *e, sema_call *cl, ir_value **out) {
  ir_value *x = sema_lower_expr(l, cl->argv[0]);
  sema_lower_at(l, e);
  int r = x->type->rank, shape[IR_MAX_RANK];
  for (int i = 0; i < r; i++) shape[i] = x->type->shape[i];
  shape[r - 1] = 1;
  const ir_type *st = ir_type_tile(l->m, x->type->elem, r, shape);
  for (int k = 0; k < 2; k++) {
    ir_value *s = ir_build1(&l->b, IR_SLICE, st, 1, &x);
    int *starts = SU_NEW_ARRAY(l->m->arena, int, r);
    starts[r - 1] = k;
    s->def->ints = starts;
    s->def->nints = r;
    out[k] = ir_build1(&l->b, IR_RESHAPE, cl->rets[k], 1, &s);
  }
}

/* x then y along axis 0 (cat's lowering on values): join on a new last axis, that axis
 * brought first, merged into axis 0. */
static ir_value *cat0(sema_lowerer *l, ir_value *x, ir_value *y) {
  int r = x->type->rank, shape[IR_MAX_RANK], pshape[IR_MAX_RANK];
  for (int i = 0; i < r; i++) shape[i] = x->type->shape[i];
  shape[r] = 2;
  ir_value *xy[2] = {x, y};
  ir_value *j = ir_build1(&l->b, IR_JOIN, ir_type_tile(l->m, x->type->elem, r + 1, shape), 2, xy);
  int *perm = SU_NEW_ARRAY(l->m->arena, int, r + 1);
  perm[0] = r;
  pshape[0] = 2;
  for (int i = 0; i < r; i++) perm[i + 1] = i, pshape[i + 1] = shape[i];
  j = ir_build1(&l->b, IR_TRANS, ir_type_tile(l->m, x->type->elem, r + 1, pshape), 1, &j);
  j->def->ints = perm;
  j->def->nints = r + 1;
  shape[0] *= 2;
  return ir_build1(&l->b, IR_RESHAPE, ir_type_tile(l->m, x->type->elem, r, shape), 1, &j);
}

/* join, interleave, cat: one join op (a new last axis of 2), then a reshape; cat is cat0. */
static ir_value *lower_join(sema_lowerer *l, ast_node *e, sema_call *cl) {
  const ir_type *res = e->sema_type;
  int r = res->rank - (cl->builtin->sub == SEMA_JOIN ? 1 : 0), shape[IR_MAX_RANK];
  const ir_type *elem = res->elem;
  for (int i = 0; i < r; i++) shape[i] = res->shape[i];
  if (cl->builtin->sub == SEMA_INTERLEAVE) shape[r - 1] /= 2;
  if (cl->builtin->sub == SEMA_CAT) shape[0] /= 2;
  const ir_type *in = ir_type_tile(l->m, elem, r, shape);
  ir_value *ab[2] = {sema_lower_as(l, cl->argv[0], in), sema_lower_as(l, cl->argv[1], in)};
  sema_lower_at(l, e);
  if (cl->builtin->sub == SEMA_CAT) return cat0(l, ab[0], ab[1]);
  shape[r] = 2;
  ir_value *j = ir_build1(&l->b, IR_JOIN, ir_type_tile(l->m, elem, r + 1, shape), 2, ab);
  if (cl->builtin->sub == SEMA_JOIN) return j;
  return ir_build1(&l->b, IR_RESHAPE, res, 1, &j);
}

static const ir_type *tile_of(sema_lowerer *l, const ir_type *elem, int rank, const int *shape) {
  return ir_type_tile(l->m, elem, rank, shape);
}

static ir_value *lower_batched_dot(sema_lowerer *l, ir_value **ops, const ir_type *t, int precision);

/* acc + a @ b of type t (acc ops[2] converted to t's element type), batched when 3-D. */
static ir_value *lower_dot(sema_lowerer *l, ir_value **ops, const ir_type *t, int precision) {
  if (ops[2]->type->elem != t->elem) ops[2] = ir_build1(&l->b, IR_CAST, t, 1, &ops[2]);
  if (t->rank == 3) return lower_batched_dot(l, ops, t, precision);
  ir_value *r = ir_build1(&l->b, IR_DOT, t, 3, ops);
  r->def->attr = precision; /* the input precision */
  return r;
}

/* x[i] of a 3-D tile: its batch i as a 2-D tile (a slice, then a reshape without the axis). */
static ir_value *batch_of(sema_lowerer *l, ir_value *x, int i) {
  int one[3] = {1, x->type->shape[1], x->type->shape[2]};
  ir_value *s = ir_build1(&l->b, IR_SLICE, tile_of(l, x->type->elem, 3, one), 1, &x);
  int *starts = SU_NEW_ARRAY(l->m->arena, int, 3);
  starts[0] = i;
  s->def->ints = starts;
  s->def->nints = 3;
  return ir_build1(&l->b, IR_RESHAPE, tile_of(l, x->type->elem, 2, one + 1), 1, &s);
}

/* A batched dot ([B, M, K] x [B, K, N] + [B, M, N]) as what it means: B products of the
 * batches (docs/language.md §6.6), each an ordinary dot, their results put back in order
 * by a tree of cats. The interpreter and the GPU run the same ops. */
static ir_value *lower_batched_dot(sema_lowerer *l, ir_value **ops, const ir_type *t, int precision) {
  int nb = t->shape[0];
  int rs[3] = {1, t->shape[1], t->shape[2]};
  ir_value **parts = SU_NEW_ARRAY(l->m->arena, ir_value *, nb);
  for (int i = 0; i < nb; i++) {
    ir_value *bops[3] = {batch_of(l, ops[0], i), batch_of(l, ops[1], i), batch_of(l, ops[2], i)};
    ir_value *r = lower_dot(l, bops, tile_of(l, t->elem, 2, rs + 1), precision);
    parts[i] = ir_build1(&l->b, IR_RESHAPE, tile_of(l, t->elem, 3, rs), 1, &r);
  }
  for (int n = nb; n > 1; n /= 2) /* B is a power of two, as every dimension */
    for (int i = 0; i < n / 2; i++) parts[i] = cat0(l, parts[2 * i], parts[2 * i + 1]);
  return parts[0];
}

static ir_value *reshaped(sema_lowerer *l, ir_value *x, int rank, const int *shape) {
  return ir_build1(&l->b, IR_RESHAPE, tile_of(l, x->type->elem, rank, shape), 1, &x);
}

/* sort along the last axis: a bitonic network over x viewed as [M, n]. Each step pairs
 * element i with i ^ j (x seen as [M, n / 2j, 2, j], the pair along axis 2) and puts the
 * smaller first in blocks of k that ascend ((i & k) == 0), last in the others. A pair is
 * swapped only when its second element compares less than its first, so the result is
 * always a permutation of x (NaNs, which compare false, end up anywhere). */
static ir_value *lower_sort(sema_lowerer *l, ast_node *e, sema_call *cl) {
  ir_value *x = sema_lower_expr(l, cl->argv[0]);
  sema_lower_at(l, e);
  const ir_type *t = x->type, *elem = t->elem, *i32 = ir_type_scalar(l->m, TK_I32);
  int r = t->rank, n = t->shape[r - 1], m = (int)(ir_type_numel(t) / n);
  bool desc = cl->builtin->sub == 1 || (cl->argc > 1 && cl->argv[1] && cl->argv[1]->sema_const.i);
  int flat[2] = {m, n};
  x = reshaped(l, x, 2, flat);
  for (int k = 2; k <= n; k *= 2)
    for (int j = k / 2; j >= 1; j /= 2) {
      int q[4] = {m, n / (2 * j), 2, j}, half[4] = {m, n / (2 * j), 1, j}, pair[3] = {m, n / (2 * j), j};
      ir_value *x4 = reshaped(l, x, 4, q), *side[2];
      for (int b = 0; b < 2; b++) {
        ir_value *s = ir_build1(&l->b, IR_SLICE, tile_of(l, elem, 4, half), 1, &x4);
        int *st = SU_NEW_ARRAY(l->m->arena, int, 4);
        st[2] = b;
        s->def->ints = st;
        s->def->nints = 4;
        side[b] = reshaped(l, s, 3, pair);
      }
      /* up: the block of the pair's first element ascends */
      ir_value *a = ir_build1(&l->b, IR_ARANGE, tile_of(l, i32, 1, &q[1]), 0, NULL);
      a->def->attr = 0;
      a->def->attr2 = q[1];
      ir_value *blk = ir_binary(&l->b, IR_AND, ir_binary(&l->b, IR_MUL, a, ir_const_int(&l->b, a->type, 2 * j)),
                                ir_const_int(&l->b, a->type, k));
      ir_value *up = ir_cmp_build(&l->b, desc ? IR_CMP_NE : IR_CMP_EQ, blk, ir_const_int(&l->b, a->type, 0));
      int one[3] = {1, q[1], 1};
      up = sema_lower_convert(l, reshaped(l, up, 3, one), tile_of(l, up->type->elem, 3, pair));
      ir_value *sel[3] = {up, ir_cmp_build(&l->b, IR_CMP_LT, side[1], side[0]),
                          ir_cmp_build(&l->b, IR_CMP_LT, side[0], side[1])};
      ir_value *swap = ir_build1(&l->b, IR_SELECT, sel[1]->type, 3, sel);
      ir_value *lo_ops[3] = {swap, side[1], side[0]}, *hi_ops[3] = {swap, side[0], side[1]};
      ir_value *jn[2] = {ir_build1(&l->b, IR_SELECT, side[0]->type, 3, lo_ops),
                         ir_build1(&l->b, IR_SELECT, side[0]->type, 3, hi_ops)};
      int js[4] = {m, n / (2 * j), j, 2};
      ir_value *joined = ir_build1(&l->b, IR_JOIN, tile_of(l, elem, 4, js), 2, jn);
      ir_value *back = ir_build1(&l->b, IR_TRANS, tile_of(l, elem, 4, q), 1, &joined);
      int *perm = SU_NEW_ARRAY(l->m->arena, int, 4);
      perm[0] = 0, perm[1] = 1, perm[2] = 3, perm[3] = 2;
      back->def->ints = perm;
      back->def->nints = 4;
      x = reshaped(l, back, 2, flat);
    }
  const ir_type *res = e->sema_type;
  if (cl->builtin->sub == 1 && res->shape[r - 1] != n) { /* topk: the first k */
    int kk = res->shape[r - 1], part[2] = {m, kk};
    ir_value *s = ir_build1(&l->b, IR_SLICE, tile_of(l, elem, 2, part), 1, &x);
    s->def->ints = SU_NEW_ARRAY(l->m->arena, int, 2);
    s->def->nints = 2;
    x = s;
  }
  return ir_build1(&l->b, IR_RESHAPE, res, 1, &x);
}

void sema_lower_tuple(sema_lowerer *l, ast_node *e, ir_value **out) {
  if (e->kind == AST_TUPLE) {
    for (int i = 0; i < e->args.len; i++) out[i] = sema_lower_expr(l, e->args.items[i]);
    return;
  }
  sema_call *cl = e->sema_ref;
  SU_ASSERT(e->kind == AST_CALL && cl->nrets > 0);
  if (cl->builtin) lower_split(l, e, cl, out);
  else lower_helper(l, e, cl, out);
}

static int axis_of(const ast_node *a, int rank) {
  int64_t v = a->sema_const.i;
  return (int)(v < 0 ? v + rank : v);
}

static ir_value *lower_reduce(sema_lowerer *l, ast_node *e, sema_call *cl) {
  const ir_type *res = e->sema_type;
  ir_value *x = sema_lower_expr(l, cl->argv[0]);
  sema_lower_at(l, e);
  int kind = cl->builtin->kind;
  if (kind != B_ARGREDUCE) /* sum of i1/f16/bf16 accumulates in the wider result type */
    x = sema_lower_convert(l, x, ir_type_like(l->m, x->type, sema_elem(res)));
  int axis = 0;
  if (cl->argc > 1 && cl->argv[1]) {
    axis = axis_of(cl->argv[1], x->type->rank);
  } else if (x->type->rank > 1) {
    int n = (int)ir_type_numel(x->type);
    x = ir_build1(&l->b, IR_RESHAPE, ir_type_tile(l->m, x->type->elem, 1, &n), 1, &x);
  }
  ir_opcode opc = kind == B_ARGREDUCE ? IR_ARGREDUCE : kind == B_CUMSUM ? IR_SCAN : IR_REDUCE;
  return build(l, opc, res, 1, &x, cl->builtin->sub, axis);
}

static ir_value *lower_memory(sema_lowerer *l, ast_node *e, sema_call *cl) {
  ir_value *ops[3];
  int n = 0, kind = cl->builtin->kind;
  ops[n++] = sema_lower_expr(l, cl->argv[0]);
  const ir_type *pt = ops[0]->type;
  const ir_type *vt = ir_type_like(l->m, pt, sema_elem(pt)->elem);
  const ir_type *mt = ir_type_like(l->m, pt, ir_type_scalar(l->m, TK_I1));
  ast_node *mask = kind == B_LOAD ? cl->argv[1] : kind == B_ATOMIC_CAS ? NULL : cl->argc > 2 ? cl->argv[2] : NULL;
  if (kind == B_ATOMIC_CAS) ops[n++] = sema_lower_as(l, cl->argv[1], vt);
  if (kind != B_LOAD) ops[n++] = sema_lower_as(l, cl->argv[kind == B_ATOMIC_CAS ? 2 : 1], vt);
  if (mask) ops[n++] = sema_lower_as(l, mask, mt);
  /* `other` only means something under a mask */
  if (kind == B_LOAD && mask && cl->argc > 2 && cl->argv[2]) ops[n++] = sema_lower_as(l, cl->argv[2], vt);
  sema_lower_at(l, e);
  switch (kind) {
  case B_LOAD: return build(l, IR_LOAD, vt, n, ops, cl->numerics & 0xff, cl->numerics >> 8);
  case B_STORE: {
    ir_op *st = ir_build(&l->b, IR_STORE, n, ops, 0, NULL);
    st->attr = cl->numerics & 0xff; /* the hints: ir_cache, ir_evict */
    st->attr2 = cl->numerics >> 8;
    return NULL;
  }
  case B_ATOMIC: return build(l, IR_ATOMIC, vt, n, ops, cl->builtin->sub, cl->numerics);
  default: {
    ir_value *r = ir_build1(&l->b, IR_ATOMIC_CAS, vt, n, ops);
    r->def->attr2 = cl->numerics; /* the memory order */
    return r;
  }
  }
}

static ir_value *lower_shape(sema_lowerer *l, ast_node *e, sema_call *cl) {
  const ir_type *res = e->sema_type;
  ir_value *x = sema_lower_expr(l, cl->argv[0]);
  sema_lower_at(l, e);
  if (x->type->kind != IR_TILE) return sema_lower_convert(l, x, res); /* a scalar: splat */
  switch (cl->builtin->kind) {
  case B_RESHAPE: return ir_build1(&l->b, IR_RESHAPE, res, 1, &x);
  case B_BROADCAST_TO: return sema_lower_convert(l, x, res);
  case B_EXPAND_DIMS: return build(l, IR_EXPAND_DIMS, res, 1, &x, 0, axis_of(cl->argv[1], x->type->rank + 1));
  case B_TRANS: {
    int r = x->type->rank, *perm = SU_NEW_ARRAY(l->m->arena, int, r);
    for (int i = 0; i < r; i++) perm[i] = cl->argc == 1 ? r - 1 - i : (int)cl->argv[i + 1]->sema_const.i;
    ir_value *v = ir_build1(&l->b, IR_TRANS, res, 1, &x);
    v->def->ints = perm;
    v->def->nints = r;
    return v;
  }
  default: SU_UNREACHABLE();
  }
}

static ir_value *lower_builtin(sema_lowerer *l, ast_node *e, sema_call *cl) {
  const ir_type *t = e->sema_type;
  ast_node **v = cl->argv;
  ir_value *ops[4];
  switch (cl->builtin->kind) {
  case B_PROGRAM_ID: case B_NUM_PROGRAMS:
    sema_lower_at(l, e);
    return build(l, cl->builtin->kind == B_PROGRAM_ID ? IR_PROGRAM_ID : IR_NUM_PROGRAMS, t, 0, NULL,
                 v[0]->sema_const.i, 0);
  case B_ARANGE:
    sema_lower_at(l, e);
    return build(l, IR_ARANGE, t, 0, NULL, v[0]->sema_const.i, v[0]->sema_const.i + t->shape[0]);
  case B_ZEROS:
    sema_lower_at(l, e);
    return ir_dtype_is_float(t->dtype) ? ir_const_float(&l->b, t, 0.0) : ir_const_int(&l->b, t, 0);
  case B_FULL: case B_BROADCAST_TO:
    return sema_lower_as(l, v[0], t);
  case B_LOAD: case B_STORE: case B_ATOMIC: case B_ATOMIC_CAS:
    return lower_memory(l, e, cl);
  case B_WHERE:
    ops[0] = sema_lower_as(l, v[0], ir_type_like(l->m, t, ir_type_scalar(l->m, TK_I1)));
    ops[1] = sema_lower_as(l, v[1], t);
    ops[2] = sema_lower_as(l, v[2], t);
    sema_lower_at(l, e);
    return ir_build1(&l->b, IR_SELECT, t, 3, ops);
  case B_MATH1: case B_ABS: case B_FMA: case B_MINIMUM: case B_MAXIMUM: case B_MATH2:
  case B_UMULHI: case B_CDIV: {
    ir_opcode opc = (ir_opcode)cl->builtin->sub;
    if (opc == IR_FDIV && cl->argc > 2 && v[2] && v[2]->sema_const.i) opc = IR_DIV; /* ieee_rounding */
    int n = ir_op_info(opc)->noperands;
    for (int i = 0; i < n; i++) ops[i] = sema_lower_as(l, v[i], t);
    sema_lower_at(l, e);
    ir_value *r = ir_build1(&l->b, opc, t, n, ops);
    if (ir_op_has_accurate(opc)) r->def->attr = cl->numerics; /* accurate */
    return r;
  }
  case B_FCLASS: {
    /* comparisons, exact on every backend: NaN is the value unequal to itself */
    tk_dtype d = sema_elem(v[0]->sema_type)->dtype;
    const ir_type *ft = ir_type_like(l->m, t, ir_type_scalar(l->m, ir_dtype_is_float(d) ? d : TK_F32));
    ir_value *x = sema_lower_as(l, v[0], ft);
    sema_lower_at(l, e);
    if (cl->builtin->sub == SEMA_ISNAN) return ir_cmp_build(&l->b, IR_CMP_NE, x, x);
    ir_value *inf = ir_const_float(&l->b, ft, INFINITY);
    ir_cmp pred = cl->builtin->sub == SEMA_ISINF ? IR_CMP_EQ : IR_CMP_LT;
    return ir_cmp_build(&l->b, pred, ir_unary(&l->b, IR_ABS, x), inf);
  }
  case B_RANDOM: return sema_lower_random(l, e, cl);
  case B_CLAMP:
    for (int i = 0; i < 3; i++) ops[i] = sema_lower_as(l, v[i], t);
    sema_lower_at(l, e);
    return ir_binary(&l->b, IR_MIN, ir_binary(&l->b, IR_MAX, ops[0], ops[1]), ops[2]);
  case B_REDUCE: case B_ARGREDUCE: case B_CUMSUM:
    return lower_reduce(l, e, cl);
  case B_DOT:
    ops[0] = sema_lower_expr(l, v[0]);
    ops[1] = sema_lower_expr(l, v[1]);
    sema_lower_at(l, e);
    /* fp8 operands become f16, exactly (every fp8 value is an f16 one), and the product is
     * then the f16 one on every backend: exact products summed in f32 (§6.6) */
    for (int i = 0; i < 2; i++)
      if (ir_dtype_is_fp8(ops[i]->type->elem->dtype))
        ops[i] = ir_build1(&l->b, IR_CAST, ir_type_like(l->m, ops[i]->type, ir_type_scalar(l->m, TK_F16)), 1, &ops[i]);
    ops[2] = cl->argc > 2 && v[2] ? sema_lower_expr(l, v[2])
             : ir_dtype_is_float(t->dtype) ? ir_const_float(&l->b, t, 0.0) : ir_const_int(&l->b, t, 0);
    sema_lower_at(l, e);
    if (t->dtype == TK_F16) /* an f16 accumulator: summed in f32, rounded once per call */
    {
      ir_value *r = lower_dot(l, ops, ir_type_like(l->m, t, ir_type_scalar(l->m, TK_F32)), cl->numerics);
      return ir_build1(&l->b, IR_CAST, t, 1, &r);
    }
    return lower_dot(l, ops, t, cl->numerics);
  case B_RESHAPE: case B_TRANS: case B_EXPAND_DIMS:
    return lower_shape(l, e, cl);
  case B_JOIN: return lower_join(l, e, cl);
  case B_SORT: return lower_sort(l, e, cl);
  case B_HISTOGRAM: {
    int n = 1;
    ops[0] = sema_lower_expr(l, v[0]);
    if (cl->argc > 2 && v[2]) ops[n++] = sema_lower_as(l, v[2], ir_type_like(l->m, ops[0]->type, ir_type_scalar(l->m, TK_I1)));
    sema_lower_at(l, e);
    return ir_build1(&l->b, IR_HISTOGRAM, t, n, ops);
  }
  case B_GATHER: {
    ops[0] = sema_lower_expr(l, v[0]);
    ops[1] = sema_lower_expr(l, v[1]);
    sema_lower_at(l, e);
    int64_t ax = v[2]->sema_const.i;
    return build(l, IR_GATHER, t, 2, ops, 0, ax < 0 ? ax + t->rank : ax);
  }
  case B_STATIC_ASSERT: return NULL;
  case B_SPLIT: SU_UNREACHABLE(); /* a tuple: sema_lower_tuple */
  case B_DEVICE_PRINT: {
    ir_value **vals = SU_NEW_ARRAY(l->m->arena, ir_value *, cl->argc);
    for (int i = 1; i < cl->argc; i++) vals[i - 1] = sema_lower_expr(l, v[i]);
    sema_lower_at(l, e);
    ir_op *op = ir_build(&l->b, IR_PRINT, cl->argc - 1, vals, 0, NULL);
    op->str = v[0]->str;
    return NULL;
  }
  case B_DEVICE_ASSERT: {
    ir_value *c = sema_lower_expr(l, v[0]);
    sema_lower_at(l, e);
    ir_op *op = ir_build(&l->b, IR_ASSERT, 1, &c, 0, NULL);
    op->str = cl->argc > 1 && v[1] ? v[1]->str : "device_assert failed";
    return NULL;
  }
  case B_RANGE: case B_STATIC_RANGE: break;
  }
  SU_UNREACHABLE();
}

ir_value *sema_lower_call(sema_lowerer *l, ast_node *e) {
  sema_call *cl = e->sema_ref;
  SU_ASSERT(cl);
  if (cl->nrets) {
    /* a tuple-returning call as a statement: its values are dropped */
    ir_value **outs = SU_NEW_ARRAY(l->m->arena, ir_value *, cl->nrets);
    sema_lower_tuple(l, e, outs);
    return NULL;
  }
  return cl->builtin ? lower_builtin(l, e, cl) : lower_helper(l, e, cl, NULL);
}
