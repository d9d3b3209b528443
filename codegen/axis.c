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

/* Whether every value of the integer type from is the same number in to (a widening of
 * the same signedness, or no change). */
static bool preserves_value(tk_dtype from, tk_dtype to) {
  return from == to || (ir_dtype_is_signed(from) == ir_dtype_is_signed(to) &&
                        ir_dtype_bits(to) > ir_dtype_bits(from));
}

/* x's facts once reduced modulo 2^w into the integer type t (a narrowing or sign-changing
 * cast): a run of consecutive numbers stays one only while it crosses no point where t
 * wraps, and those points are multiples of 2^(w-1). A run that starts at a multiple of
 * its own length g <= 2^(w-1) crosses none, so runs are cut to the start's divisibility
 * and to 2^(w-1); divisibility (of numbers, mod 2^w) and constancy survive. Without it
 * `arange(0, 512) as i8 < 0` would be taken as uniform over 512 elements. */
static cg_axis wrapped(cg_axis x, tk_dtype t) {
  int w = ir_dtype_bits(t);
  int64_t half = w - 1 >= 30 ? DIV_CAP : (int64_t)1 << (w - 1);
  int g = (int)min64(min64(x.contig, half), x.div);
  if (g < 1) g = 1;
  return (cg_axis){g, x.constancy, div_at(x, g)};
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
  case IR_SCRATCH: case IR_WORKSPACE: res->div = 16; break;
  case IR_SPLAT: *res = (cg_axis){1, numel(op->results[0]), a.div}; break;
  case IR_ADD: case IR_SUB: {
    *res = add_like(a, b, op->opc == IR_SUB, 1);
    /* 8- and 16-bit sums wrap within a tile's range ((offs as i8) + 100); 32- and 64-bit
     * offsets are assumed not to, as Triton does */
    tk_dtype t = ir_type_elem(op->results[0]->type)->dtype;
    if (ir_dtype_is_int(t) && ir_dtype_bits(t) < 32) *res = wrapped(*res, t);
    break;
  }
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
    /* a per-element amount varies the result even where the shifted value is constant
     * (`7 << (x & 31)`: tkdiff seed 1014142) */
    res->constancy = mini(a.constancy, b.constancy);
    if (const_int(op->operands[1], &k) && k >= 0 && k < 31) {
      int64_t d = div_at(a, 1) << k;
      res->div = d > DIV_CAP ? DIV_CAP : d;
    }
    break;
  }
  case IR_CAST: {
    tk_dtype from = ir_type_elem(op->operands[0]->type)->dtype;
    tk_dtype to = ir_type_elem(op->results[0]->type)->dtype;
    if (ir_dtype_is_int(from) && ir_dtype_is_int(to) && from != TK_I1 && to != TK_I1)
      *res = preserves_value(from, to) ? a : wrapped(a, to);
    else if (from != TK_PTR && to != TK_PTR)
      res->constancy = a.constancy; /* elementwise: equal inputs give equal results */
    break;
  }
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
