/* 1 ± erf(z) computed as erfc(∓z) on the GPU (docs/passes.md, "complement"; the rule is
 * docs/language.md's, with the GPU's f32 math).
 *
 *     1 + erf(z)  ->  erfc(-z)        erf(z) + 1  ->  erfc(-z)        1 - erf(z)  ->  erfc(z)
 *
 * Equal in real arithmetic, and better in floating point where the sum cancels: for
 * z = -4, 1 + erf(z) rounds erf to within half an ulp of 1 (6e-8) and leaves 1.5e-8 with
 * no correct digit, where erfc(4) is within a few ulps of itself. It is also cheaper: the
 * exact gelu, 0.5 x (1 + erf(x / sqrt 2)), spends most of a fused matmul epilogue's issue
 * slots in libdevice's erf (~24 instructions an element, one MUFU), and the GPU's fast
 * erfc (codegen/math.c) is ~17 with two MUFU. The erfc takes the erf's `accurate` flag: with
 * it (or -fmath=accurate), libdevice's __nv_erfcf. Only where the sum is the erf's one use
 * (else both would be computed). GPU targets only: the interpreter keeps the expression as
 * written, which the GPU then matches to within the documented bound.
 *
 * Then, for the fast f32 erfc (not `accurate`), the constant factors around it go into
 * its constants (erfc's `in` and `out`, docs/ir.md), one multiply an element each:
 *
 *     erfc(-(x * c)), erfc(x * c)  ->  erfc x {in = -c}, {in = c}
 *     (v * 2^j) * erfc(z)          ->  v * erfc z {out = j}
 *
 * where the mul has no other use: the exact gelu's epilogue, 0.5 x erfc(-x / sqrt 2),
 * becomes x * erfc x {in = -0.7071, out = -1} (measured: 2 of its ~21 instructions an
 * element). The second is exact (but where a result is subnormal); the first skips the rounding of x * c (erfc's bound
 * then holds against the exact product, docs/language.md). */
#include "pass_util.h"

#include <math.h>
#include <stdint.h>

typedef struct {
  ir_module *m;
  ir_func *f;
  bool changed;
} compl_ctx;

/* Whether v is 1 in every element: a constant, or a splat or broadcast of one. */
static bool is_one(const ir_value *v) {
  while (v->def && (v->def->opc == IR_BROADCAST || v->def->opc == IR_SPLAT)) v = v->def->operands[0];
  return pass_const_eq(v, 1.0);
}

/* The erf op that v is, when nothing else reads it; else NULL. */
static ir_op *sole_erf(const compl_ctx *c, const ir_value *v) {
  ir_op *d = v->def;
  if (!d || d->opc != IR_ERF || pass_count_uses(c->f->body, v) != 1) return NULL;
  return d;
}

static void visit(ir_op *op, void *arg) {
  compl_ctx *c = arg;
  if (op->opc != IR_ADD && op->opc != IR_SUB) return;
  if (!ir_dtype_is_float(ir_type_elem(op->results[0]->type)->dtype)) return;
  ir_value *a = op->operands[0], *b = op->operands[1];
  ir_op *e = NULL;
  bool negate = false;
  if (op->opc == IR_ADD && is_one(b) && (e = sole_erf(c, a))) negate = true;
  else if (op->opc == IR_ADD && is_one(a) && (e = sole_erf(c, b))) negate = true;
  else if (op->opc == IR_SUB && is_one(a) && (e = sole_erf(c, b))) negate = false;
  else return;
  /* the erf has the sum's type: sema promotes and broadcasts the operands alike */
  if (e->results[0]->type != op->results[0]->type) return;
  ir_builder at = {c->m, op->parent, op, op->loc};
  ir_value *z = e->operands[0];
  if (negate) z = ir_unary(&at, IR_NEG, z);
  ir_value *r = ir_unary(&at, IR_ERFC, z);
  r->def->attr = e->attr; /* accurate */
  pass_replace_op(c->f, op, r);
  ir_op_erase(e);
  c->changed = true;
}

/* The float constant that v is (a scalar, or a splat or broadcast of one), in *k. */
static bool const_factor(const ir_value *v, double *k) {
  while (v->def && (v->def->opc == IR_BROADCAST || v->def->opc == IR_SPLAT)) v = v->def->operands[0];
  if (!pass_is_const(v)) return false;
  *k = pass_const_float(v);
  return isfinite(*k) && *k != 0;
}

/* A mul by a constant, in either operand order, that nothing else reads: its other
 * operand and the constant. */
static ir_value *scaled(const compl_ctx *c, const ir_value *v, double *k) {
  ir_op *d = v->def;
  if (!d || d->opc != IR_MUL || pass_count_uses(c->f->body, v) != 1) return NULL;
  if (const_factor(d->operands[1], k)) return d->operands[0];
  if (const_factor(d->operands[0], k)) return d->operands[1];
  return NULL;
}

/* The exponent j when k is 2^j (within erfc's `out` range), else INT32_MIN. */
static int power_of_two(double k) {
  int e;
  double m = frexp(k, &e);
  return m == 0.5 && e - 1 >= -100 && e - 1 <= 100 ? e - 1 : INT32_MIN;
}

static void fold_factors(ir_op *op, void *arg) {
  compl_ctx *c = arg;
  if (op->opc != IR_ERFC || op->attr == 1 || ir_type_elem(op->results[0]->type)->dtype != TK_F32) return;
  ir_value *z = op->operands[0], *x;
  double k, sign = 1;
  if (op->cval.f == 0) {
    if (z->def && z->def->opc == IR_NEG && pass_count_uses(c->f->body, z) == 1) {
      sign = -1;
      z = z->def->operands[0];
    }
    if ((x = scaled(c, z, &k)) && x->type == z->type) {
      ir_value *old = op->operands[0];
      op->operands[0] = x;
      op->cval.f = sign * k;
      ir_op *dead = old->def; /* the neg, then the mul, now unread */
      if (dead->opc == IR_NEG) {
        ir_op *mul = dead->operands[0]->def;
        ir_op_erase(dead);
        ir_op_erase(mul);
      } else {
        ir_op_erase(dead);
      }
      c->changed = true;
    }
  }
  /* (v * 2^j) * erfc: the erfc's one use is a mul whose other operand is v * 2^j */
  ir_value *r = op->results[0];
  if (op->attr2 || pass_count_uses(c->f->body, r) != 1) return;
  ir_op *use = NULL;
  for (ir_op *o = op->next; o && !use; o = o->next)
    if (o->opc == IR_MUL && (o->operands[0] == r || o->operands[1] == r)) use = o;
  if (!use) return;
  ir_value *h = use->operands[0] == r ? use->operands[1] : use->operands[0];
  int j;
  if (!(x = scaled(c, h, &k)) || x->type != h->type || (j = power_of_two(k)) == INT32_MIN) return;
  ir_op *hmul = h->def;
  /* v must be defined before the erfc's use, which it is (it fed h, which the use reads) */
  use->operands[use->operands[0] == r ? 1 : 0] = x;
  ir_op_erase(hmul);
  op->attr2 = j;
  c->changed = true;
}

bool pass_complement(ir_module *m, ir_func *f) {
  compl_ctx c = {.m = m, .f = f};
  ir_walk(f->body, visit, &c);
  ir_walk(f->body, fold_factors, &c);
  return c.changed;
}
