/* exp with its change of base folded into an fma (docs/passes.md, "expfold"; the rule is
 * docs/language.md's, on the GPU's f32 exp).
 *
 * On the GPU an f32 exp(x) is ex2(x * log2 e) (codegen/math.c): a subtraction, a multiply
 * and ex2 per element for the online softmax's exp(s - m). Where the subtrahend is the
 * broadcast of a value with fewer elements (the row max), the multiply moves onto that
 * value and the subtraction into one fma per element:
 *
 *     exp(a - broadcast(r))  ->  exp2(fma(a, log2 e, broadcast(-(r * log2 e))))
 *
 * exact where the original is exact (a = r gives 2^0 up to the rounding of r * log2 e),
 * -inf and NaN as before. GPU targets only: the interpreter keeps exp.
 *
 * Attention's scores are a product scaled by a run-time scalar, s = where(keep, q·k * c,
 * -inf), and the scale costs a multiply per score before the max. Where c is known
 * positive and finite (a constant, or a parameter the launch specialized on c > 0:
 * ir_func.param_pos), max(s) = max(where(keep, q·k, -inf)) * c exactly (rounding is
 * monotone, -inf * c is -inf), and exp(s - r) takes c into its fma:
 *
 *     exp2(fma(where(keep, q·k, -inf), c * log2 e, broadcast(-(r * log2 e))))
 *
 * so the scaled s is never formed: one fma and one ex2 per score. The product's rounding
 * changes (q·k * c rounded once, inside the fma, not twice), within the documented bound
 * of the GPU's exp. */
#include "pass_util.h"

#include <math.h>

enum { MAX_UNSCALED = 16 };

typedef struct {
  ir_module *m;
  ir_func *f;
  bool changed;
  /* scaled values already taken apart: s -> (x, c) */
  int nun;
  const ir_value *scaled[MAX_UNSCALED];
  ir_value *unscaled[MAX_UNSCALED], *scale[MAX_UNSCALED];
  /* the ops replaced whose results nothing reads now (erased after the walk), in order */
  int ndead;
  ir_op *dead[3 * MAX_UNSCALED];
} fold;

static void retire(fold *fd, ir_op *op) {
  if (fd->ndead < 3 * MAX_UNSCALED) fd->dead[fd->ndead++] = op;
}

/* The value a broadcast or splat spreads, or NULL. */
static ir_value *spread_source(const ir_value *b) {
  ir_op *d = b->def;
  if (!d || (d->opc != IR_BROADCAST && d->opc != IR_SPLAT)) return NULL;
  return d->operands[0];
}

/* Whether v (a tile) holds one scalar known positive and finite everywhere: a constant,
 * or the splat (through broadcasts) of such a constant or of a parameter with that fact. */
static bool positive_scale(const fold *fd, const ir_value *v) {
  while (v->def && (v->def->opc == IR_BROADCAST || v->def->opc == IR_SPLAT)) v = v->def->operands[0];
  if (pass_is_const(v)) {
    double c = pass_const_float(v);
    return c > 0 && c < HUGE_VAL;
  }
  int i = pass_param_index(fd->f, v);
  return i >= 0 && ir_param_pos(fd->f, i);
}

/* A multiply by a positive scale: x * c or c * x; sets *x and *c. */
static bool scaled_product(const fold *fd, const ir_value *s, ir_value **x, ir_value **c) {
  ir_op *d = s->def;
  if (!d || d->opc != IR_MUL || d->results[0]->type->dtype != TK_F32) return false;
  for (int k = 0; k < 2; k++)
    if (positive_scale(fd, d->operands[1 - k])) {
      *x = d->operands[k];
      *c = d->operands[1 - k];
      return true;
    }
  return false;
}

/* Takes s apart as x * c (c positive: *c its scale tile) where it is x * c or
 * where(keep, x * c, -inf); *x is then the unscaled value (a select built beside s's for
 * the masked form, once per s). */
static bool unscale(fold *fd, ir_value *s, ir_value **x, ir_value **c) {
  for (int i = 0; i < fd->nun; i++)
    if (fd->scaled[i] == s) {
      *x = fd->unscaled[i];
      *c = fd->scale[i];
      return true;
    }
  if (fd->nun == MAX_UNSCALED) return false;
  ir_op *d = s->def;
  if (scaled_product(fd, s, x, c)) {
    /* already unscaled */
  } else if (d && d->opc == IR_SELECT && pass_is_const(d->operands[2]) &&
             pass_const_float(d->operands[2]) == -HUGE_VAL && scaled_product(fd, d->operands[1], x, c)) {
    ir_builder at = {fd->m, d->parent, d, d->loc};
    ir_value *opnds[3] = {d->operands[0], *x, d->operands[2]};
    *x = ir_build1(&at, IR_SELECT, s->type, 3, opnds);
  } else {
    return false;
  }
  fd->scaled[fd->nun] = s;
  fd->unscaled[fd->nun] = *x;
  fd->scale[fd->nun++] = *c;
  return true;
}

/* A value of type t (a tile, or the scalar a whole-tile max gives) holding scale c (a
 * tile of one value) times k, built at `at`. */
static ir_value *scale_times(ir_builder *at, ir_value *c, const ir_type *t, double k) {
  while (c->def && (c->def->opc == IR_BROADCAST || c->def->opc == IR_SPLAT)) c = c->def->operands[0];
  if (pass_is_const(c)) return ir_const_float(at, t, pass_const_float(c) * k);
  ir_value *ck = k == 1 ? c : ir_binary(at, IR_MUL, c, ir_const_float(at, c->type, k));
  return t->kind == IR_TILE ? ir_build1(at, IR_SPLAT, t, 1, &ck) : ck;
}

/* max(x * c) -> max(x) * c for a positive c (exact). */
static void fold_max(fold *fd, ir_op *op) {
  ir_value *x, *c;
  if (op->attr != IR_RED_MAX || op->results[0]->type->dtype != TK_F32 || !unscale(fd, op->operands[0], &x, &c))
    return;
  ir_builder at = {fd->m, op->parent, op, op->loc};
  const ir_type *t = op->results[0]->type;
  ir_op *r = ir_build(&at, IR_REDUCE, 1, &x, 1, &t);
  r->attr = op->attr;
  r->attr2 = op->attr2;
  ir_value *scaled = ir_binary(&at, IR_MUL, r->results[0], scale_times(&at, c, t, 1));
  ir_replace_all_uses(fd->f, op->results[0], scaled);
  retire(fd, op);
  fd->changed = true;
}

static void visit(ir_op *op, void *arg) {
  fold *fd = arg;
  if (op->opc == IR_REDUCE) {
    fold_max(fd, op);
    return;
  }
  if (op->opc != IR_EXP || op->attr || op->results[0]->type->dtype != TK_F32 || op->results[0]->type->kind != IR_TILE)
    return; /* an accurate exp is libdevice's, which needs no change of base */
  ir_op *sub = op->operands[0]->def;
  if (!sub || sub->opc != IR_SUB) return;
  ir_value *a = sub->operands[0], *b = sub->operands[1], *r = spread_source(b);
  if (!r || r->type->dtype != TK_F32) return;
  ir_module *m = fd->m;
  ir_builder at = {m, op->parent, op, op->loc};
  ir_value *x, *c, *k;
  bool unscaled = unscale(fd, a, &x, &c);
  if (unscaled) {
    k = scale_times(&at, c, a->type, PASS_LOG2E);
  } else {
    x = a;
    k = ir_const_float(&at, a->type, PASS_LOG2E);
  }
  ir_value *rl = ir_unary(&at, IR_NEG, ir_binary(&at, IR_MUL, r, ir_const_float(&at, r->type, PASS_LOG2E)));
  ir_value *nb = ir_build1(&at, b->def->opc, b->type, 1, &rl);
  ir_value *f3[3] = {x, k, nb};
  ir_value *xe = ir_build1(&at, IR_FMA, a->type, 3, f3);
  ir_value *e = ir_unary(&at, IR_EXP2, xe);
  e->def->attr = 1; /* ftz: exp(a - r) below 2^-126 is 0 to within 1.2e-38 */
  ir_replace_all_uses(fd->f, op->results[0], e);
  if (unscaled) {
    retire(fd, op);
    retire(fd, sub);
  }
  fd->changed = true;
}

/* Erases v's op when nothing reads v any more, then (recursively) the product it selected. */
static void erase_dead(ir_func *f, ir_value *v) {
  ir_op *d = v->def;
  if (!d || pass_count_uses(f->body, v)) return;
  ir_value *inner = d->opc == IR_SELECT ? d->operands[1] : NULL;
  ir_op_erase(d);
  if (inner) erase_dead(f, inner);
}

bool pass_expfold(ir_module *m, ir_func *f) {
  fold fd = {.m = m, .f = f};
  ir_walk(f->body, visit, &fd);
  /* the scaled scores nothing reads now go at once: unmask, next, would otherwise give
   * their edge selects branches of their own and keep the masks they share outside them */
  for (int i = 0; i < fd.ndead; i++)
    if (!pass_count_uses(f->body, fd.dead[i]->results[0])) ir_op_erase(fd.dead[i]);
  for (int i = 0; i < fd.nun; i++) erase_dead(f, (ir_value *)fd.scaled[i]);
  return fd.changed;
}
