/* What a loop carries, and how two pieces of its steps merge (pass_util.h, "carry";
 * docs/passes.md, "streamk").
 *
 * A piece runs some of the steps from the loop's initial values; the loop's result is
 * the two pieces' carried values merged, which needs each carried value to be one of:
 *   SAME    yielded unchanged (both pieces hold the initial value);
 *   SUM     a dot's accumulator, `x = dot(a, b, x)` from zeros, a and b independent of
 *           what the loop carries: the merge is x1 + x2 (matmul);
 *   SCALED  the online softmax's rescaled sums: from zeros, read only as x * alpha with
 *           alpha = exp(m - m'), m the carried running max and m' its next value, and
 *           yielded as that product plus terms that are e^(-m') times values independent
 *           of the carried ones (exp(s - m') and what is linear in it: P, its row sum,
 *           P V). Then x = e^(-m) G with G the same sum whatever m the piece ran with,
 *           and two pieces merge exactly as x1 e^(m1 - M) + x2 e^(m2 - M), M = max(m1, m2);
 *   MAX     that m: merged as M (any m the loop chose is consistent with its x).
 * The degree analysis below checks the SCALED yields: 0 for a value independent of the
 * carried ones, 1 for e^(-m') times such a value (a bit set of both where a zero is
 * either). */
#include "pass_util.h"

enum { CR_MEMO = 512, D0 = 1, D1 = 2 };

typedef struct {
  ir_op *K;
  int n;   /* carried values */
  int *role;
  int mi;  /* the MAX value's index, -1 without SCALED ones */
  int nmemo;
  const ir_value *memo_v[CR_MEMO];
  int memo_d[CR_MEMO];
} cr_ctx;

/* v seen through the ops that only spread or move it (broadcast, expand_dims, layout). */
static ir_value *peel(ir_value *v) {
  while (v->def && (v->def->opc == IR_BROADCAST || v->def->opc == IR_EXPAND_DIMS || v->def->opc == IR_CONVERT_LAYOUT))
    v = v->def->operands[0];
  return v;
}

/* Whether op (an expand_dims or broadcast) keeps its operand's rows as its own: a row
 * vector [M] made a column [M, 1], a column [M, 1] made [M, N]. The factor e^(-m') is one
 * per row: only such spreads carry it. */
static bool keeps_rows(const ir_op *op) {
  const ir_type *x = op->operands[0]->type, *r = op->results[0]->type;
  if (x->kind != IR_TILE || r->kind != IR_TILE || x->rank < 1 || x->shape[0] != r->shape[0]) return false;
  return op->opc == IR_BROADCAST || (op->opc == IR_EXPAND_DIMS && op->attr2 >= 1);
}

/* v seen through the row-keeping spreads and layout moves. */
static ir_value *peel_rows(ir_value *v) {
  while (v->def && (v->def->opc == IR_CONVERT_LAYOUT ||
                    ((v->def->opc == IR_BROADCAST || v->def->opc == IR_EXPAND_DIMS) && keeps_rows(v->def))))
    v = v->def->operands[0];
  return v;
}

static ir_value *carried_arg(const cr_ctx *c, int i) { return c->K->regions[0]->args[1 + i]; }
static ir_value *carried_next(const cr_ctx *c, int i) {
  const ir_block *kb = c->K->regions[0];
  return kb->last->operands[i];
}

/* Whether v is exp(m - m'), m the carried MAX value and m' its next one. */
static bool is_alpha(const cr_ctx *c, ir_value *v) {
  const ir_op *e = v->def;
  if (c->mi < 0 || !e || e->opc != IR_EXP) return false;
  const ir_op *d = e->operands[0]->def;
  return d && d->opc == IR_SUB && d->operands[0] == carried_arg(c, c->mi) && d->operands[1] == carried_next(c, c->mi);
}

static int deg(cr_ctx *c, ir_value *v, int depth);

/* exp(a - m'), or expfold's exp2(fma(a, k, -(m' * log2 e))), a and k independent of the
 * carried values: e^(-m') times a value that is. */
static bool is_weight(cr_ctx *c, const ir_op *e, int depth) {
  if (c->mi < 0) return false;
  ir_value *mn = carried_next(c, c->mi);
  const ir_op *d = e->operands[0]->def;
  if (e->opc == IR_EXP)
    return d && d->opc == IR_SUB && peel_rows(d->operands[1]) == mn && (deg(c, d->operands[0], depth + 1) & D0);
  if (e->opc != IR_EXP2 || !d || d->opc != IR_FMA) return false;
  if (!(deg(c, d->operands[0], depth + 1) & D0) || !(deg(c, d->operands[1], depth + 1) & D0)) return false;
  const ir_op *ng = peel_rows(d->operands[2])->def;
  const ir_op *ml = ng && ng->opc == IR_NEG ? peel_rows(ng->operands[0])->def : NULL;
  if (!ml || ml->opc != IR_MUL) return false;
  for (int k = 0; k < 2; k++) {
    ir_value *x = peel_rows(ml->operands[k]), *y = ml->operands[1 - k];
    /* log2 e as expfold rounds it to f32 */
    if (x == mn && pass_is_const(y) && pass_const_float(y) == (double)(float)PASS_LOG2E) return true;
  }
  return false;
}

static int deg_of(cr_ctx *c, ir_value *v, int depth) {
  ir_op *op = v->def;
  const ir_block *kb = c->K->regions[0];
  if (!op) {
    for (int i = 0; i < c->n; i++)
      if (v == carried_arg(c, i)) return c->role[i] == PASS_CARRY_SAME ? D0 : 0; /* SAME: its initial value */
    /* the K loop's variable, or a value of an enclosing block: the same for every step */
    return v->owner == kb || pass_op_within(c->K, v->owner) ? D0 : 0;
  }
  if (!pass_op_within(op, kb)) return D0;
  if (depth > 64) return 0;
  if (pass_is_const(v)) return pass_const_eq(v, 0) ? D0 | D1 : D0;
  int a = op->noperands > 0 ? deg(c, op->operands[0], depth + 1) : D0;
  int b = op->noperands > 1 ? deg(c, op->operands[1], depth + 1) : D0;
  switch (op->opc) {
  case IR_MUL: {
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < c->n; i++)
        if (c->role[i] == PASS_CARRY_SCALED && op->operands[k] == carried_arg(c, i) && is_alpha(c, peel_rows(op->operands[1 - k])))
          return D1;
    int r = 0;
    if ((a & D0) && (b & D0)) r |= D0;
    if (((a & D1) && (b & D0)) || ((a & D0) && (b & D1))) r |= D1;
    return r;
  }
  case IR_DIV: return b & D0 ? a : 0;
  case IR_ADD: case IR_SUB: return a & b;
  case IR_NEG: case IR_CONVERT_LAYOUT: return a;
  /* the factor is one per row (axis 0): what moves rows elsewhere, or mixes them, loses it */
  case IR_EXPAND_DIMS: case IR_BROADCAST: return keeps_rows(op) ? a : a & D0;
  case IR_CAST: return ir_type_elem(v->type)->dtype == TK_F32 || ir_type_elem(v->type)->dtype == TK_F16 ||
                       ir_type_elem(v->type)->dtype == TK_BF16 ? a : a & D0;
  /* a row's sum, max or min of e^(-m') x is e^(-m') times that of x (not a column's) */
  case IR_REDUCE: return op->attr2 >= 1 ? a : a & D0;
  case IR_SELECT: return a & D0 ? b & deg(c, op->operands[2], depth + 1) : 0;
  case IR_DOT: { /* rows of a are rows of the product; b's rows are summed over */
    int r = 0;
    if ((a & D0) && (b & D0)) r |= D0;
    if ((a & D1) && (b & D0)) r |= D1;
    return op->noperands > 2 ? r & deg(c, op->operands[2], depth + 1) : r;
  }
  case IR_EXP: case IR_EXP2:
    if (is_weight(c, op, depth)) return D1;
    return a & D0;
  case IR_IF: {
    if (!(a & D0)) return 0;
    int k = 0;
    while (op->results[k] != v) k++;
    int r = D0 | D1;
    for (int g = 0; g < op->nregions; g++) r &= deg(c, op->regions[g]->last->operands[k], depth + 1);
    return r;
  }
  default: break;
  }
  /* a load reads what no step writes (pass_carry_roles: no stores in the loop) */
  if (op->nregions || (!(ir_op_info(op->opc)->traits & IR_PURE) && op->opc != IR_LOAD)) return 0;
  for (int k = 0; k < op->noperands; k++)
    if (!(deg(c, op->operands[k], depth + 1) & D0)) return 0;
  return D0;
}

static int deg(cr_ctx *c, ir_value *v, int depth) {
  for (int i = 0; i < c->nmemo; i++)
    if (c->memo_v[i] == v) return c->memo_d[i];
  int d = deg_of(c, v, depth);
  if (c->nmemo < CR_MEMO) {
    c->memo_v[c->nmemo] = v;
    c->memo_d[c->nmemo++] = d;
  }
  return d;
}

/* The op in blk (at any depth) that reads v, when exactly one does, once. */
static ir_op *sole_use(ir_block *blk, const ir_value *v) {
  if (pass_count_uses(blk, v) != 1) return NULL;
  ir_op *found = NULL;
  for (ir_op *op = blk->first; op && !found; op = op->next) {
    for (int k = 0; k < op->noperands; k++)
      if (op->operands[k] == v) found = op;
    for (int r = 0; r < op->nregions && !found; r++) found = sole_use(op->regions[r], v);
  }
  return found;
}

/* (pass_util.h) */
bool pass_carry_roles(ir_op *found, pass_carry *out, const char **why) {
  if (found->opc != IR_FOR || found->nresults < 1 || found->nresults > PASS_CARRY_VALUES) {
    *why = "the loop carries no value, or too many";
    return false;
  }
  cr_ctx cc = {.K = found, .n = found->nresults, .role = out->role, .mi = -1}, *c = &cc;
  out->n = c->n;
  ir_block *kb = found->regions[0];
  /* the pieces run a tile's steps in two orders at once: nothing a step writes may matter */
  static const ir_opcode writes[] = {IR_STORE, IR_ATOMIC, IR_ATOMIC_CAS, IR_SLOT_STORE, IR_TMA_STORE};
  ir_op *w;
  for (size_t k = 0; k < sizeof writes / sizeof *writes; k++)
    if (pass_collect(kb, writes[k], &w, 1)) {
      *why = "the K loop writes memory";
      return false;
    }
  *why = "the K loop carries a value that is no dot's sum, no online-softmax rescaled sum and not its running max";
  /* the SCALED values, and the MAX value their alpha names */
  for (int i = 0; i < c->n; i++) {
    ir_value *arg = carried_arg(c, i), *next = carried_next(c, i);
    c->role[i] = -1;
    if (next == arg) {
      c->role[i] = PASS_CARRY_SAME;
      continue;
    }
    ir_value *init = peel(found->operands[3 + i]); /* rowsum's l spread to [M, 8] */
    if (!pass_is_const(init) || !pass_const_eq(init, 0)) continue;
    ir_op *use = sole_use(kb, arg);
    if (use && use->opc == IR_DOT && use->noperands == 3 && use->operands[2] == arg && use->results[0] == next) {
      c->role[i] = PASS_CARRY_SUM;
      continue;
    }
    if (!use || use->opc != IR_MUL) continue;
    ir_value *other = peel_rows(use->operands[use->operands[0] == arg ? 1 : 0]);
    const ir_op *e = other->def, *d = e && e->opc == IR_EXP ? e->operands[0]->def : NULL;
    if (!d || d->opc != IR_SUB) continue;
    for (int j = 0; j < c->n; j++)
      if (j != i && d->operands[0] == carried_arg(c, j) && d->operands[1] == carried_next(c, j)) {
        if (c->mi >= 0 && c->mi != j) return false;
        c->mi = j;
        c->role[i] = PASS_CARRY_SCALED;
      }
  }
  if (c->mi >= 0) {
    if (c->role[c->mi] != -1) return false;
    c->role[c->mi] = PASS_CARRY_MAX;
  }
  for (int i = 0; i < c->n; i++)
    if (c->role[i] < 0) return false;
  /* each SCALED value's next is e^(-m') times what the carried values do not change; a
   * SUM's products read nothing the loop carries */
  for (int i = 0; i < c->n; i++) {
    if (c->role[i] == PASS_CARRY_SCALED && !(deg(c, carried_next(c, i), 0) & D1)) {
      *why = "the K loop's rescaled sum adds a term that is not e^(-m') times values the loop does not carry";
      return false;
    }
    const ir_op *d = carried_next(c, i)->def;
    if (c->role[i] == PASS_CARRY_SUM && (!(deg(c, d->operands[0], 0) & D0) || !(deg(c, d->operands[1], 0) & D0))) {
      *why = "the K loop's product reads a value the loop carries";
      return false;
    }
  }
  out->max_index = c->mi;
  return true;
}
