/* Axis analysis (Triton's AxisInfo, along the row-major order of a tile's elements, so
 * that for N-D tiles runs follow the last dim): contiguity, constancy and power-of-two
 * divisibility of integer and pointer values, which decide where memory accesses may be
 * vectorized and where a mask is uniform over a vector. Parameters are known only through
 * the kernel's facts (ir_func.param_div, from specialization); without one a pointer is
 * assumed aligned to its element only, an integer nothing. Values carried around a loop
 * are assumed nothing either, except the induction variable. */
#include "cg.h"

enum { DIV_CAP = 1 << 30 };

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int mini(int a, int b) { return a < b ? a : b; }
static int maxi(int a, int b) { return a > b ? a : b; }

static int64_t pow2_divisor(int64_t v) {
  if (v == 0) return DIV_CAP;
  uint64_t u = (uint64_t)v;
  u &= ~u + 1;
  return u > DIV_CAP ? DIV_CAP : (int64_t)u;
}

static int numel(const ir_value *v) { return (int)ir_type_numel(v->type); }

/* What nothing is known about: every element its own run, natural alignment. */
static cg_axis unknown(const ir_value *v) {
  const ir_type *e = ir_type_elem(v->type);
  int64_t div = e->kind == IR_PTR ? ir_dtype_bytes(e->elem->dtype) : 1;
  return (cg_axis){1, 1, div};
}

/* The divisibility of x's elements at the starts of aligned runs of g: inside one of x's
 * own runs only g's alignment survives. */
static int64_t div_at(cg_axis x, int g) { return x.contig > g ? min64(x.div, g) : x.div; }

static cg_axis add_like(cg_axis a, cg_axis b, bool sub, int64_t bscale) {
  cg_axis r;
  r.contig = mini(a.contig, b.constancy);
  if (!sub) r.contig = maxi(r.contig, mini(b.contig, a.constancy));
  r.constancy = mini(a.constancy, b.constancy);
  int64_t db = div_at(b, r.contig) * bscale;
  r.div = min64(div_at(a, r.contig), db > DIV_CAP ? DIV_CAP : db);
  return r;
}

/* x < n (and n > x) is uniform over aligned groups that lie in one run of x and whose
 * size divides both x's run starts and n. */
static int cmp_constancy(cg_axis x, cg_axis n) {
  int64_t g = min64(min64(x.contig, n.constancy), min64(x.div, div_at(n, 1)));
  return (int)g;
}

/* Runs along the last dim survive a broadcast of the leading dims, up to a row; a last
 * dim stretched from 1 repeats each element along the row. */
static cg_axis broadcast(const ir_op *op, cg_axis a) {
  const ir_type *s = op->operands[0]->type, *d = op->results[0]->type;
  int row = d->shape[d->rank - 1];
  if (s->shape[s->rank - 1] == row) return (cg_axis){mini(a.contig, row), mini(a.constancy, row), div_at(a, mini(a.contig, row))};
  return (cg_axis){1, row, div_at(a, 1)};
}

/* The integer constant v is (directly or splatted), if it is one. */
static bool const_int(const ir_value *v, int64_t *out) {
  if (v->def && v->def->opc == IR_SPLAT) v = v->def->operands[0];
  if (!v->def || v->def->opc != IR_CONST || !ir_dtype_is_int(ir_type_elem(v->type)->dtype))
    return false;
  *out = v->def->cval.i;
  return true;
}

static void analyze(ir_op *op, void *ctx) {
  cg_ctx *c = ctx;
  cg_axis *ax = c->axis;
  for (int i = 0; i < op->nresults; i++) ax[op->results[i]->id] = unknown(op->results[i]);
  for (int r = 0; r < op->nregions; r++)
    for (int i = 0; i < op->regions[r]->nargs; i++)
      ax[op->regions[r]->args[i]->id] = unknown(op->regions[r]->args[i]);
  if (op->nresults != 1 && op->opc != IR_FOR) return;
  cg_axis *res = op->nresults ? &ax[op->results[0]->id] : NULL;
  cg_axis a = op->noperands > 0 ? ax[op->operands[0]->id] : (cg_axis){1, 1, 1};
  cg_axis b = op->noperands > 1 ? ax[op->operands[1]->id] : (cg_axis){1, 1, 1};
  switch (op->opc) {
  case IR_CONST:
    if (ir_dtype_is_int(ir_type_elem(op->results[0]->type)->dtype))
      *res = (cg_axis){1, numel(op->results[0]), pow2_divisor(op->cval.i)};
    else
      res->constancy = numel(op->results[0]);
    break;
  case IR_ARANGE: *res = (cg_axis){numel(op->results[0]), 1, pow2_divisor(op->attr)}; break;
  /* the buffer is 256-byte aligned (cuMemAlloc), every part of it 16 (the verifier's rule) */
  case IR_SCRATCH: res->div = 16; break;
  case IR_SPLAT: *res = (cg_axis){1, numel(op->results[0]), a.div}; break;
  case IR_ADD: *res = add_like(a, b, false, 1); break;
  case IR_SUB: *res = add_like(a, b, true, 1); break;
  case IR_ADDPTR: {
    int64_t e = ir_dtype_bytes(ir_type_elem(op->operands[0]->type)->elem->dtype);
    *res = add_like(a, b, false, e);
    break;
  }
  case IR_MUL: {
    int64_t d = div_at(a, 1) * div_at(b, 1);
    *res = (cg_axis){1, mini(a.constancy, b.constancy), d > DIV_CAP ? DIV_CAP : d};
    break;
  }
  case IR_SHL: { /* the canonical form of a multiplication by a power of two */
    int64_t k;
    res->constancy = a.constancy;
    if (const_int(op->operands[1], &k) && k >= 0 && k < 31) {
      int64_t d = div_at(a, 1) << k;
      res->div = d > DIV_CAP ? DIV_CAP : d;
    }
    break;
  }
  case IR_CAST:
    if (ir_dtype_is_int(ir_type_elem(op->operands[0]->type)->dtype) &&
        ir_dtype_is_int(ir_type_elem(op->results[0]->type)->dtype))
      *res = a;
    break;
  case IR_CONVERT_LAYOUT: case IR_RESHAPE: case IR_EXPAND_DIMS:
    *res = a; /* the row-major order of the elements is unchanged */
    break;
  case IR_BROADCAST: *res = broadcast(op, a); break;
  case IR_CMP: {
    int k = mini(a.constancy, b.constancy);
    if (op->attr == IR_CMP_LT || op->attr == IR_CMP_GE) k = maxi(k, cmp_constancy(a, b));
    if (op->attr == IR_CMP_GT || op->attr == IR_CMP_LE) k = maxi(k, cmp_constancy(b, a));
    res->constancy = k;
    break;
  }
  case IR_AND: case IR_OR: case IR_XOR: case IR_MIN: case IR_MAX:
    res->constancy = mini(a.constancy, b.constancy);
    break;
  case IR_NOT: case IR_NEG: res->constancy = a.constancy; break;
  case IR_SELECT:
    res->constancy = mini(mini(a.constancy, b.constancy), ax[op->operands[2]->id].constancy);
    break;
  case IR_FOR: {
    cg_axis step = ax[op->operands[2]->id];
    ax[op->regions[0]->args[0]->id].div = min64(a.div, step.div);
    break;
  }
  default: break;
  }
}

void cg_axis_analyze(cg_ctx *c, const ir_func *f) {
  for (int i = 0; i < f->body->nargs; i++) {
    const ir_value *p = f->body->args[i];
    cg_axis a = unknown(p);
    a.div = a.div > ir_param_div(f, i) ? a.div : ir_param_div(f, i);
    c->axis[p->id] = a;
  }
  ir_walk(f->body, analyze, c);
}

cg_axis cg_axis_of(const cg_ctx *c, const ir_value *v) { return c->axis[v->id]; }
