/* Ops that make values or rearrange them without computing: constants, program ids,
 * arange, splat, broadcast, expand_dims, reshape, trans, convert_layout. */
#include "internal.h"

#include <string.h>

static int rank_of(const ir_type *t) {
  return t->kind == IR_TILE ? t->rank : 0;
}

/* Row-major strides (in elements) of t's shape. */
static void strides_of(const ir_type *t, int64_t *st) {
  int64_t s = 1;
  for (int d = rank_of(t) - 1; d >= 0; d--) {
    st[d] = s;
    s *= t->shape[d];
  }
}

/* dst[i] = src[sum(idx[d] * stride[d])] over dst's row-major index idx: broadcast (stride
 * 0) and transpose (permuted strides) are both this walk. It goes a row of the last dim
 * at a time: a copy, a fill, or a strided run. */
static void gather(ip_val dst, ip_val src, const int64_t *stride) {
  int rank = rank_of(dst.type);
  if (rank == 0) {
    dst.e[0] = src.e[0];
    return;
  }
  int64_t len = dst.type->shape[rank - 1], step = stride[rank - 1];
  int idx[IR_MAX_RANK] = {0};
  int64_t at = 0;
  for (int64_t i = 0; i < dst.n; i += len) {
    ip_elem *out = &dst.e[i];
    const ip_elem *in = &src.e[at];
    if (step == 1)
      memcpy(out, in, sizeof *out * (size_t)len);
    else
      for (int64_t j = 0; j < len; j++) out[j] = in[j * step];
    for (int d = rank - 2; d >= 0; d--) {
      at += stride[d];
      if (++idx[d] < dst.type->shape[d]) break;
      at -= stride[d] * idx[d];
      idx[d] = 0;
    }
  }
}

static ip_elem const_value(const ir_op *op, tk_dtype dt) {
  ip_elem v = {.u = 0};
  if (ir_dtype_is_float(dt))
    v.f = ip_round(dt, op->cval.f);
  else if (dt == TK_PTR)
    v.i = op->cval.i; /* a constant pointer has no buffer: only null is meaningful */
  else
    v = ip_int(dt, (uint64_t)op->cval.i);
  return v;
}

bool ip_run_shape(ip_exec *x, const ip_inst *in) {
  const ir_op *op = in->op;
  const ir_type *t = op->results[0]->type;
  ip_val *r = IP_OUT(x, in, 0);
  switch (op->opc) {
  case IR_CONST: {
    *r = ip_val_out(x, t);
    ip_elem v = const_value(op, ip_elem_dtype(t));
    for (int64_t i = 0; i < r->n; i++) r->e[i] = v;
    return true;
  }
  case IR_PROGRAM_ID:
  case IR_NUM_PROGRAMS:
    SU_ASSERT(op->attr >= 0 && op->attr < 3);
    *r = ip_val_out(x, t);
    r->e[0] = ip_int(TK_I32, op->opc == IR_PROGRAM_ID ? x->pid[op->attr] : x->nprog[op->attr]);
    return true;
  case IR_GRID_SIZE:
    SU_ASSERT(op->attr >= 0 && op->attr < 3);
    *r = ip_val_out(x, t);
    r->e[0] = ip_int(TK_I32, x->grid[op->attr]);
    return true;
  case IR_SCRATCH:
    SU_ASSERT(x->gscratch); /* ip_launch allocates it for a kernel with scratch ops */
    *r = ip_val_out(x, t);
    r->e[0].buf = x->gscratch;
    r->e[0].i = op->attr;
    return true;
  case IR_WORKSPACE:
    SU_ASSERT(x->gworkspace); /* ip_launch finds it for a kernel with workspace ops */
    *r = ip_val_out(x, t);
    r->e[0].buf = x->gworkspace;
    r->e[0].i = 0;
    return true;
  case IR_ARANGE:
    *r = ip_val_out(x, t);
    for (int64_t i = 0; i < r->n; i++) r->e[i] = (ip_elem){.i = (int32_t)(uint32_t)(op->attr + i)};
    return true;
  case IR_SPLAT: {
    ip_elem v = IP_IN(x, in, 0).e[0];
    *r = ip_val_out(x, t);
    for (int64_t i = 0; i < r->n; i++) r->e[i] = v;
    return true;
  }
  case IR_BROADCAST: {
    /* Shapes align at the right, as in numpy; missing and size-1 dims repeat. */
    ip_val src = IP_IN(x, in, 0);
    int rank = rank_of(t), srank = rank_of(src.type);
    int64_t sst[IR_MAX_RANK] = {0}, st[IR_MAX_RANK] = {0};
    strides_of(src.type, sst);
    for (int d = 0; d < srank; d++) {
      int dd = rank - srank + d;
      st[dd] = src.type->shape[d] == 1 ? 0 : sst[d];
    }
    *r = ip_val_out(x, t);
    gather(*r, src, st);
    return true;
  }
  case IR_TRANS: {
    ip_val src = IP_IN(x, in, 0);
    int rank = rank_of(t);
    int64_t sst[IR_MAX_RANK] = {0}, st[IR_MAX_RANK] = {0};
    strides_of(src.type, sst);
    SU_ASSERT(op->nints == rank);
    for (int d = 0; d < rank; d++) st[d] = sst[op->ints[d]]; /* result dim d is source dim ints[d] */
    *r = ip_val_out(x, t);
    gather(*r, src, st);
    return true;
  }
  case IR_GATHER: {
    ip_val src = IP_IN(x, in, 0), ix = IP_IN(x, in, 1);
    int rank = rank_of(t), ax = (int)op->attr2;
    int64_t st[IR_MAX_RANK] = {0};
    strides_of(src.type, st);
    tk_dtype it = ip_elem_dtype(ix.type);
    int size = src.type->shape[ax];
    *r = ip_val_out(x, t);
    int idx[IR_MAX_RANK] = {0};
    for (int64_t i = 0; i < r->n; i++) {
      ip_elem e = ix.e[ix.n == 1 ? 0 : i];
      int64_t k = ir_dtype_is_signed(it) ? e.i : (int64_t)e.u;
      if (k < 0 || k >= size)
        return ip_fail(x, op, "gather index out of range",
                       "index %lld of element %lld is outside axis %d of size %d", (long long)k,
                       (long long)i, ax, size);
      int64_t at = 0;
      for (int d = 0; d < rank; d++) at += st[d] * (d == ax ? k : idx[d]);
      r->e[i] = src.e[src.n == 1 ? 0 : at];
      for (int d = rank - 1; d >= 0 && ++idx[d] == t->shape[d]; d--) idx[d] = 0;
    }
    return true;
  }
  case IR_JOIN: {
    /* the two operands' elements alternate: result element 2i + k is operand k's i */
    ip_val a = IP_IN(x, in, 0), b = IP_IN(x, in, 1);
    *r = ip_val_out(x, t);
    for (int64_t i = 0; i < r->n / 2; i++) {
      r->e[2 * i] = a.e[a.n == 1 ? 0 : i];
      r->e[2 * i + 1] = b.e[b.n == 1 ? 0 : i];
    }
    return true;
  }
  case IR_SLICE: {
    /* result element i is source element i + start: the source's strides, from an offset */
    ip_val src = IP_IN(x, in, 0);
    int rank = rank_of(t);
    int64_t st[IR_MAX_RANK] = {0}, off = 0;
    strides_of(src.type, st);
    SU_ASSERT(op->nints == rank);
    for (int d = 0; d < rank; d++) off += st[d] * op->ints[d];
    ip_val from = src;
    from.e += off;
    *r = ip_val_out(x, t);
    gather(*r, from, st);
    return true;
  }
  case IR_EXPAND_DIMS:
  case IR_RESHAPE:
  case IR_CONVERT_LAYOUT:
    /* Row-major order is unchanged, so the elements are shared. */
    *r = IP_IN(x, in, 0);
    r->type = t;
    return true;
  default:
    SU_UNREACHABLE();
  }
}
