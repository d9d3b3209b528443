/* Block-pointer recognition: whether a tile load reads (a store writes) a rectangular
 * block of a strided tensor, as a TMA box copy would, and if so that tensor's
 * description. Used by swpipe and tmastore.
 *
 * The pointer tile is decomposed, through addptr, broadcast, expand_dims, splat, add,
 * mul by a uniform scalar (or shl by a constant), integer casts and arange, into
 *
 *     base + sum_d (u_d + arange_d) * s_d + sum_j q_j * t_j + w
 *
 * (d over the tile's dims; u_d, q_j, w uniform scalars; s_d, t_j strides). The tensor has
 * one dim per tile dim, outermost first, the last of stride 1, and one outer dim of box 1
 * per uniform term q_j * t_j; w (stride 1) joins the last dim's coordinate. Each tile dim
 * remembers its index expression (the value of the form (u_d + arange_d) at the tile's
 * rank, before any broadcast): a mask is accepted when it is a conjunction of
 * `index_d < bound` tests, which become the dims' extents (out-of-bounds boxes read as
 * the zeros `other` must then be); a dim without a test is unbounded. Strides and bounds
 * must be kernel parameters or constants (the launch builds the map from them), the
 * base a pointer parameter.
 *
 * Coordinates are scalar values valid where the load stands; the few scalar ops the
 * decomposition needs (sums of uniform parts) are built just before the load, pure, so
 * that cloning the load's slice at another iteration clones them too. */
#include "pass_util.h"

#include <string.h>

/* The form of an integer tile expression. */
typedef struct {
  bool ok;
  int rank;
  ir_value *u[IR_MAX_RANK];    /* origin per dim (NULL: 0); only where has */
  ir_value *s[IR_MAX_RANK];    /* stride per dim (NULL: 1) */
  bool has[IR_MAX_RANK];
  ir_value *index[IR_MAX_RANK]; /* the index expression of dim d (see the top) */
  ir_value *w;                  /* uniform offset (NULL: 0) */
  int nq;
  ir_value *q[IR_MAX_RANK], *t[IR_MAX_RANK]; /* uniform terms q * t */
} form;

typedef struct {
  ir_module *m;
  ir_builder b; /* before the load */
} ctx;

static const form FAIL = {0};

static bool is_param_or_const(const ir_value *v) {
  return v && ((!v->def && v->owner && !v->owner->parent) || (v->def && v->def->opc == IR_CONST));
}

static bool is_one(const ir_value *v) { return !v || pass_const_eq(v, 1); }

/* v without the integer widenings around it: a stride written `(i as i64) * K` multiplies
 * by K cast to i64, and the launch reads K itself (strides are positive, so sign and zero
 * extension agree). */
static ir_value *unwiden(ir_value *v) {
  while (v && v->def && v->def->opc == IR_CAST && v->type->kind == IR_SCALAR) {
    ir_value *x = v->def->operands[0];
    if (!ir_dtype_is_int(x->type->dtype) || !ir_dtype_is_int(v->type->dtype) ||
        ir_dtype_bits(v->type->dtype) < ir_dtype_bits(x->type->dtype))
      break;
    v = x;
  }
  return v;
}

/* x + y on uniform scalars (NULL: 0), built before the load; both i32 or cast to it. */
static ir_value *as_i32(ctx *c, ir_value *x) {
  if (!x || x->type->dtype == TK_I32) return x;
  return ir_build1(&c->b, IR_CAST, ir_type_scalar(c->m, TK_I32), 1, &x);
}

static ir_value *add_u(ctx *c, ir_value *x, ir_value *y) {
  x = as_i32(c, x);
  y = as_i32(c, y);
  if (!x) return y;
  if (!y) return x;
  return ir_binary(&c->b, IR_ADD, x, y);
}

static form decompose(ctx *c, ir_value *v);

/* A uniform scalar v (a splat's source) as a form of rank r: a term q * t when v is a
 * product by a parameter or constant, else an offset. */
static form uniform(ctx *c, ir_value *v, int rank) {
  (void)c;
  form f = {.ok = true, .rank = rank};
  if (v->type->kind != IR_SCALAR || !ir_dtype_is_int(v->type->dtype)) return FAIL;
  if (v->def && v->def->opc == IR_MUL) {
    ir_value *x = unwiden(v->def->operands[0]), *y = unwiden(v->def->operands[1]);
    if (is_param_or_const(x) && !pass_is_const(y)) {
      ir_value *t = x;
      x = y;
      y = t;
    }
    if (is_param_or_const(y) && !pass_const_eq(y, 1)) {
      f.nq = 1;
      f.q[0] = x;
      f.t[0] = y;
      return f;
    }
  }
  f.w = v;
  return f;
}

static form add_forms(ctx *c, form a, form b) {
  if (!a.ok || !b.ok || a.rank != b.rank) return FAIL;
  form r = a;
  for (int d = 0; d < a.rank; d++) {
    if (!b.has[d]) continue;
    if (a.has[d]) return FAIL; /* (u + arange) s twice along d is no block of this form */
    r.has[d] = true;
    r.u[d] = b.u[d];
    r.s[d] = b.s[d];
    r.index[d] = b.index[d];
  }
  for (int j = 0; j < b.nq; j++) {
    if (r.nq == IR_MAX_RANK) return FAIL;
    r.q[r.nq] = b.q[j];
    r.t[r.nq++] = b.t[j];
  }
  /* A uniform term of a dim's stride moves that dim's origin (the dim's index
   * expression is then a new one); a uniform offset is such a term of stride 1. */
  r.w = NULL;
  ir_value *w = add_u(c, a.w, b.w);
  int k = 0;
  for (int j = 0; j < r.nq; j++) {
    int d = -1;
    for (int e = 0; e < r.rank; e++)
      if (r.has[e] && r.s[e] == r.t[j]) d = e;
    if (d < 0) {
      r.q[k] = r.q[j];
      r.t[k++] = r.t[j];
      continue;
    }
    r.u[d] = add_u(c, r.u[d], r.q[j]);
    r.index[d] = NULL;
  }
  r.nq = k;
  if (w) {
    int unit = -1;
    for (int d = 0; d < r.rank; d++)
      if (r.has[d] && is_one(r.s[d])) unit = d;
    if (unit >= 0) {
      r.u[unit] = add_u(c, r.u[unit], w);
      r.index[unit] = NULL;
    } else {
      r.w = w;
    }
  }
  return r;
}

/* x * k with k a uniform scalar (a parameter or a constant): strides scale; a uniform
 * offset becomes a term of stride k. */
static form scale(ctx *c, form a, ir_value *k) {
  (void)c;
  k = unwiden(k);
  if (!a.ok || !is_param_or_const(k)) return FAIL;
  if (pass_const_eq(k, 1)) return a;
  if (a.nq) return FAIL; /* a product of strides is no parameter */
  for (int d = 0; d < a.rank; d++)
    if (a.has[d]) {
      if (!is_one(a.s[d])) return FAIL;
      a.s[d] = k;
    }
  if (a.w) {
    a.q[0] = a.w;
    a.t[0] = k;
    a.nq = 1;
    a.w = NULL;
  }
  return a;
}

/* Marks dims of pure form (u + arange) * 1 with v as their index expression. */
static form note_index(form f, ir_value *v) {
  if (!f.ok || f.w || f.nq) return f;
  int n = 0, d0 = -1;
  for (int d = 0; d < f.rank; d++)
    if (f.has[d]) n++, d0 = d;
  if (n == 1 && is_one(f.s[d0]) && !f.index[d0]) f.index[d0] = v;
  return f;
}

static form decompose(ctx *c, ir_value *v) {
  const ir_type *t = v->type;
  if (t->kind != IR_TILE) return FAIL;
  ir_op *op = v->def;
  if (!op) return FAIL;
  int rank = t->rank;
  form f = FAIL;
  switch (op->opc) {
  case IR_ARANGE:
    if (op->attr != 0 || rank != 1) return FAIL;
    f = (form){.ok = true, .rank = 1};
    f.has[0] = true;
    break;
  case IR_SPLAT:
    f = uniform(c, op->operands[0], rank);
    break;
  case IR_CAST: {
    const ir_type *from = op->operands[0]->type;
    if (!ir_dtype_is_int(from->dtype) || !ir_dtype_is_int(t->dtype) || ir_dtype_bits(t->dtype) < 32) return FAIL;
    f = decompose(c, op->operands[0]);
    break;
  }
  case IR_EXPAND_DIMS: {
    form a = decompose(c, op->operands[0]);
    if (!a.ok) return FAIL;
    int ax = (int)op->attr2;
    f = (form){.ok = true, .rank = rank, .w = a.w, .nq = a.nq};
    memcpy(f.q, a.q, sizeof f.q);
    memcpy(f.t, a.t, sizeof f.t);
    for (int d = 0, s = 0; d < rank; d++) {
      if (d == ax) continue;
      f.has[d] = a.has[s];
      f.u[d] = a.u[s];
      f.s[d] = a.s[s];
      s++;
    }
    break;
  }
  case IR_BROADCAST:
  case IR_CONVERT_LAYOUT:
    /* not note_index: a dim's index stays the expression before the broadcast (a layout
     * changes no value) */
    return decompose(c, op->operands[0]);
  case IR_ADD:
    f = add_forms(c, decompose(c, op->operands[0]), decompose(c, op->operands[1]));
    break;
  case IR_MUL: {
    ir_value *x = op->operands[0], *y = op->operands[1];
    if (y->def && y->def->opc == IR_SPLAT)
      f = scale(c, decompose(c, x), y->def->operands[0]);
    else if (x->def && x->def->opc == IR_SPLAT)
      f = scale(c, decompose(c, y), x->def->operands[0]);
    else
      return FAIL;
    break;
  }
  case IR_SHL: {
    /* x << c is x * 2^c: what constant folding and simplify make of a product by a power
     * of two (a row stride written as a compile-time D) */
    ir_value *y = op->operands[1];
    if (y->def && y->def->opc == IR_SPLAT) y = y->def->operands[0];
    if (!pass_is_const(y)) return FAIL;
    int64_t sh = pass_const_int(y);
    if (sh < 0 || sh > 30) return FAIL;
    ir_value *k = ir_const_int(&c->b, ir_type_scalar(c->m, y->type->dtype), (int64_t)1 << sh);
    f = scale(c, decompose(c, op->operands[0]), k);
    break;
  }
  default:
    return FAIL;
  }
  return note_index(f, v);
}

/* The pointer side: base + offsets. */
static form decompose_ptr(ctx *c, ir_value *p, ir_value **base) {
  ir_op *op = p->def;
  if (!op) return FAIL;
  const ir_type *t = p->type;
  if (op->opc == IR_SPLAT) {
    ir_value *s = op->operands[0];
    form f = {.ok = true, .rank = t->rank};
    while (s->def && s->def->opc == IR_ADDPTR) { /* scalar pointer arithmetic: uniform terms */
      f = add_forms(c, f, uniform(c, s->def->operands[1], t->rank));
      s = s->def->operands[0];
    }
    if (s->def || !s->owner || s->owner->parent) return FAIL; /* a pointer parameter */
    *base = s;
    return f;
  }
  if (op->opc == IR_BROADCAST || op->opc == IR_CONVERT_LAYOUT) return decompose_ptr(c, op->operands[0], base);
  if (op->opc == IR_ADDPTR) {
    form a = decompose_ptr(c, op->operands[0], base);
    if (!a.ok) return FAIL;
    return add_forms(c, a, decompose(c, op->operands[1]));
  }
  return FAIL;
}

static ir_value *strip_broadcast(ir_value *v) {
  while (v->def && (v->def->opc == IR_BROADCAST || v->def->opc == IR_CONVERT_LAYOUT)) v = v->def->operands[0];
  return v;
}

/* Adds the bounds the mask tests to out->bound; false when the mask is anything else. */
static bool read_mask(const form *f, ir_value *mask, ir_value **bound) {
  mask = strip_broadcast(mask);
  ir_op *op = mask->def;
  if (!op) return false;
  if (op->opc == IR_AND) return read_mask(f, op->operands[0], bound) && read_mask(f, op->operands[1], bound);
  if (op->opc != IR_CMP || op->attr != IR_CMP_LT) return false;
  ir_value *x = strip_broadcast(op->operands[0]), *y = strip_broadcast(op->operands[1]);
  if (!y->def || y->def->opc != IR_SPLAT || !is_param_or_const(y->def->operands[0])) return false;
  for (int d = 0; d < f->rank; d++)
    if (f->has[d] && f->index[d] == x) {
      if (bound[d] && bound[d] != y->def->operands[0]) return false;
      bound[d] = y->def->operands[0];
      return true;
    }
  return false;
}

bool pass_block_of(ir_module *m, ir_op *load, pass_block *out) {
  memset(out, 0, sizeof *out);
  bool store = load->opc == IR_STORE;
  SU_ASSERT(store || load->opc == IR_LOAD);
  int mask_at = store ? 2 : 1;
  ir_value *p = load->operands[0];
  const ir_type *t = p->type;
  if (t->kind != IR_TILE || t->rank > 2) return false;
  if (!store && load->noperands == 3 && !pass_const_eq(load->operands[2], 0)) return false;
  ctx c = {m, {m, load->parent, load, load->loc}};
  ir_value *base = NULL;
  form f = decompose_ptr(&c, p, &base);
  if (!f.ok || !base) return false;
  int r = t->rank;
  for (int d = 0; d < r; d++)
    if (!f.has[d] && t->shape[d] > 1) return false;
  if (!is_one(f.s[r - 1])) return false;
  for (int d = 0; d < r - 1; d++)
    if (f.has[d] && !is_param_or_const(f.s[d])) return false;
  ir_value *bound[IR_MAX_RANK] = {0};
  if (load->noperands > mask_at && !read_mask(&f, load->operands[mask_at], bound)) return false;
  if (f.nq + r > IR_MAX_RANK) return false;
  /* tensor dims: the uniform terms (box 1), then the tile's dims */
  int n = 0;
  const ir_type *i32 = ir_type_scalar(m, TK_I32);
  for (int j = 0; j < f.nq; j++) {
    out->coord[n] = as_i32(&c, f.q[j]);
    out->stride[n] = f.t[j];
    out->bound[n] = NULL;
    out->box[n] = 1;
    out->tile_dim[n++] = -1;
  }
  for (int d = 0; d < r; d++) {
    ir_value *u = f.has[d] ? f.u[d] : NULL;
    if (d == r - 1) u = add_u(&c, u, f.w);
    out->coord[n] = u ? as_i32(&c, u) : ir_const_int(&c.b, i32, 0);
    out->stride[n] = d == r - 1 ? NULL : f.s[d];
    out->bound[n] = bound[d];
    out->box[n] = t->shape[d];
    out->tile_dim[n++] = d;
  }
  out->rank = n;
  out->base = base;
  return true;
}

int pass_swizzle_for(int inner_bytes) {
  return inner_bytes >= 128 ? 128 : inner_bytes >= 64 ? 64 : inner_bytes >= 32 ? 32 : 0;
}

/* An alignment the launch guarantees: a constant's own, a parameter's facts. */
static int64_t known_div(const ir_func *f, const ir_value *v) {
  if (v->def && v->def->opc == IR_CONST) {
    int64_t x = v->def->cval.i;
    return x ? (x & -x) : 1 << 30;
  }
  int i = pass_param_index(f, v);
  return i >= 0 ? ir_param_div(f, i) : 1;
}

bool pass_block_tma_ready(const ir_func *f, const pass_block *b, int elem_bytes) {
  if (known_div(f, b->base) < 16) return false;
  for (int d = 0; d + 1 < b->rank; d++)
    if (known_div(f, b->stride[d]) * elem_bytes % 16) return false;
  for (int d = 0; d < b->rank; d++)
    if (b->box[d] > 256) return false;
  int inner = b->box[b->rank - 1] * elem_bytes, sw = pass_swizzle_for(inner);
  return sw && inner % sw == 0;
}

ir_value *pass_tensor_map(ir_module *m, ir_func *f, const pass_block *b, int swizzle, int elem_bytes) {
  /* base, extents (unbounded: the largest), strides; the box's inner extent is one
   * swizzle line, a slot a whole number of boxes */
  ir_builder at = {m, f->body, f->body->first, f->loc};
  ir_value *opnds[2 * IR_MAX_RANK];
  int n = 0;
  opnds[n++] = b->base;
  for (int d = 0; d < b->rank; d++)
    opnds[n++] = b->bound[d] ? b->bound[d] : ir_const_int(&at, ir_type_scalar(m, TK_I32), INT32_MAX);
  for (int d = 0; d + 1 < b->rank; d++) opnds[n++] = b->stride[d];
  /* a constant may stand anywhere (one made by the decomposition, before the load): the
   * map, built at the top, gets its own copy */
  for (int i = 1; i < n; i++)
    if (opnds[i]->def && opnds[i]->def->opc == IR_CONST)
      opnds[i] = ir_const_int(&at, opnds[i]->type, pass_const_int(opnds[i]));
  int *box = SU_NEW_ARRAY(m->arena, int, b->rank);
  for (int d = 0; d < b->rank; d++) box[d] = b->box[d];
  box[b->rank - 1] = swizzle / elem_bytes;
  const ir_type *tm = ir_type_tmap(m);
  ir_op *op = ir_build(&at, IR_TENSOR_MAP, n, opnds, 1, &tm);
  op->ints = box;
  op->nints = b->rank;
  op->attr = swizzle;
  return op->results[0];
}
