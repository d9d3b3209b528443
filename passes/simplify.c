/* Algebraic simplification: rewrites an op into a cheaper equal one, or into a value that
 * already exists. Every rule holds for all inputs of the types it fires on; for floats
 * only the IEEE-exact identities are used (x*1, x-0, x+(-0), x/1, double negation), never
 * x*0 or x-x, which a NaN or an infinity breaks.
 *
 * Rules: constants move to the right of commutative ops (so later rules and CSE see one
 * form); x+0, x-0, x*1, x/1, x<<0, x>>0, x|0, x^0, x&~0 give x; x*0, x&0, x%1 and, for
 * integers, x-x and x^x give 0; x|~0 gives ~0; a pointer plus 0 gives the pointer; x&x, x|x, min(x,x), max(x,x) give x;
 * neg(neg x) and not(not x) give x; a cast, broadcast, reshape or convert_layout to x's own
 * type and an identity trans give x; reshape of a reshape reads the inner operand; select
 * with a constant condition or equal arms picks an arm; comparing an integer with itself
 * gives a constant; an integer product by 2^k becomes a shift; an `if` on a constant
 * condition is replaced by the taken region; a `for` with constant bounds and step that
 * runs zero times is replaced by its initial values. Constants of shape ops are
 * constfold's job. */
#include "pass_util.h"

typedef struct {
  ir_module *m;
  ir_func *f;
  bool changed;
} simp_ctx;

static tk_dtype elem_dtype(const ir_value *v) { return ir_type_elem(v->type)->dtype; }
static bool is_int(const ir_value *v) { return ir_dtype_is_int(elem_dtype(v)); }

/* The value of a uniform constant i1 condition, or -1 when it is not one. */
static int const_cond(const ir_value *c) {
  return pass_is_const(c) ? (int)pass_const_int(c) : -1;
}

/* Constant zero of x's type. */
static ir_value *zero_like(simp_ctx *c, ir_op *op) {
  return pass_const_int_before(c->m, op, op->results[0]->type, 0);
}

/* log2 of v when it is a power of two of at least 2, else -1. */
static int log2_exact(uint64_t v) {
  if (v < 2 || (v & (v - 1))) return -1;
  int k = 0;
  while (v >>= 1) k++;
  return k;
}

/* Rewrites x * 2^k as x << k for integers (same bits under wrap-around, signed or not). */
static ir_value *mul_to_shift(simp_ctx *c, ir_op *op) {
  ir_value *x = op->operands[0], *y = op->operands[1];
  if (!is_int(x) || elem_dtype(x) == TK_I1 || !pass_is_const(y)) return NULL;
  int k = log2_exact((uint64_t)pass_const_int(y));
  if (k < 0 || k >= ir_dtype_bits(elem_dtype(x))) return NULL;
  ir_value *sh = pass_const_int_before(c->m, op, y->type, k);
  ir_builder b = {c->m, op->parent, op, op->loc};
  return ir_binary(&b, IR_SHL, x, sh);
}

static ir_value *simplify_binary(simp_ctx *c, ir_op *op) {
  ir_value *x = op->operands[0], *y = op->operands[1];
  bool in = is_int(x);
  switch (op->opc) {
  case IR_ADD:
    if (pass_const_eq(y, in ? 0 : -0.0)) return x;
    break;
  case IR_SUB:
    if (pass_const_eq(y, 0)) return x;
    if (in && x == y) return zero_like(c, op);
    break;
  case IR_MUL:
    if (pass_const_eq(y, 1)) return x;
    if (in && pass_const_eq(y, 0)) return y;
    if (in) return mul_to_shift(c, op);
    break;
  case IR_DIV:
    if (pass_const_eq(y, 1)) return x;
    break;
  case IR_REM:
    if (in && pass_const_eq(y, 1)) return zero_like(c, op);
    break;
  case IR_SHL:
  case IR_SHR:
    if (pass_const_eq(y, 0)) return x;
    break;
  case IR_AND:
    if (x == y || pass_const_all_ones(y)) return x;
    if (pass_const_eq(y, 0)) return y;
    break;
  case IR_OR:
    if (x == y || pass_const_eq(y, 0)) return x;
    if (pass_const_all_ones(y)) return y;
    break;
  case IR_XOR:
    if (pass_const_eq(y, 0)) return x;
    if (in && x == y) return zero_like(c, op);
    break;
  case IR_ADDPTR:
    if (pass_const_eq(y, 0)) return x;
    break;
  case IR_MIN:
  case IR_MAX:
    if (x == y) return x;
    break;
  case IR_CMP:
    if (in && x == y) {
      ir_cmp p = (ir_cmp)op->attr;
      return pass_const_int_before(c->m, op, op->results[0]->type,
                                   p == IR_CMP_EQ || p == IR_CMP_LE || p == IR_CMP_GE);
    }
    break;
  default: break;
  }
  return NULL;
}

static bool is_identity_perm(const ir_op *op) {
  for (int i = 0; i < op->nints; i++)
    if (op->ints[i] != i) return false;
  return true;
}

/* The value op can be replaced by, or NULL. May edit op in place (setting c->changed). */
static ir_value *simplify_op(simp_ctx *c, ir_op *op) {
  ir_value *x = op->noperands ? op->operands[0] : NULL;
  const ir_type *rt = op->nresults == 1 ? op->results[0]->type : NULL;
  int traits = ir_op_info(op->opc)->traits;
  if ((traits & IR_COMMUT) && pass_is_const(x) && !pass_is_const(op->operands[1])) {
    op->operands[0] = op->operands[1];
    op->operands[1] = x;
    x = op->operands[0];
    c->changed = true;
  }
  switch (op->opc) {
  case IR_NEG:
  case IR_NOT:
    if (x->def && x->def->opc == op->opc) return x->def->operands[0];
    return NULL;
  case IR_CAST:
  case IR_BROADCAST:
  case IR_CONVERT_LAYOUT:
    return x->type == rt ? x : NULL;
  case IR_TRANS:
    return is_identity_perm(op) ? x : NULL;
  case IR_RESHAPE:
    if (x->type == rt) return x;
    if (x->def && x->def->opc == IR_RESHAPE) {
      op->operands[0] = x->def->operands[0];
      c->changed = true;
    }
    return NULL;
  case IR_SELECT: {
    int k = const_cond(x);
    if (k >= 0) return op->operands[k ? 1 : 2];
    return op->operands[1] == op->operands[2] ? op->operands[1] : NULL;
  }
  default:
    if (op->noperands == 2 && op->nresults == 1 && (traits & IR_ELEM)) return simplify_binary(c, op);
    return NULL;
  }
}

/* Replaces `if` on a constant by the ops of the taken region, moved before it. */
static void inline_if(simp_ctx *c, ir_op *op, int taken) {
  ir_block *r = op->regions[taken ? 0 : 1];
  ir_op *yield = r->last;
  SU_ASSERT(yield && yield->opc == IR_YIELD);
  while (r->first != yield) ir_op_move_before(r->first, op);
  for (int i = 0; i < op->nresults; i++) ir_replace_all_uses(c->f, op->results[i], yield->operands[i]);
  ir_op_erase(op);
}

/* True if a for with these constant bounds runs zero times. Only positive constant steps
 * are decided: what a zero or negative step does is the loop's business at run time. */
static bool runs_zero_times(const ir_op *op) {
  ir_value *lb = op->operands[0], *ub = op->operands[1], *step = op->operands[2];
  if (!pass_is_const(lb) || !pass_is_const(ub) || !pass_is_const(step)) return false;
  tk_dtype d = elem_dtype(lb);
  int64_t l = pass_const_int(lb), u = pass_const_int(ub), s = pass_const_int(step);
  if (ir_dtype_is_signed(d)) return s > 0 && l >= u;
  return s != 0 && (uint64_t)l >= (uint64_t)u;
}

static void simplify_visit(ir_op *op, void *arg) {
  simp_ctx *c = arg;
  if (op->opc == IR_IF) {
    int k = const_cond(op->operands[0]);
    if (k >= 0) {
      inline_if(c, op, k);
      c->changed = true;
    }
    return;
  }
  if (op->opc == IR_FOR) {
    if (runs_zero_times(op)) {
      for (int i = 0; i < op->nresults; i++) ir_replace_all_uses(c->f, op->results[i], op->operands[3 + i]);
      ir_op_erase(op);
      c->changed = true;
    }
    return;
  }
  if (!(ir_op_info(op->opc)->traits & IR_PURE) || op->nresults != 1 || op->opc == IR_CONST) return;
  ir_value *v = simplify_op(c, op);
  if (v && v->type == op->results[0]->type) { /* a safety net: every rule keeps the type */
    pass_replace_op(c->f, op, v);
    c->changed = true;
  }
}

bool pass_simplify(ir_module *m, ir_func *f) {
  simp_ctx c = {m, f, false};
  ir_walk(f->body, simplify_visit, &c);
  return c.changed;
}
