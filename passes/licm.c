/* Loop-invariant code motion: a pure op at the top level of a `for` body whose operands
 * are all defined outside the loop is moved to just before the loop. Inner loops are
 * treated first, so an op invariant in several nested loops climbs out of each in turn.
 *
 * Hoisting runs an op even when the loop runs zero times, so only ops that cannot fault
 * move: no loads (not pure, and may fault), no effects, and no integer division or
 * remainder unless the divisor is a constant other than 0 and -1. Ops inside an `if` in
 * the body stay, to keep the rule simple: hoisting out of a branch is the same
 * speculation, and rarely pays for a tile compiler whose branches are cold paths. */
#include "pass_util.h"

/* True if v is defined outside `loop` (not in any block nested inside it). */
static bool defined_outside(const ir_value *v, const ir_op *loop) {
  const ir_block *b = v->def ? v->def->parent : v->owner;
  for (; b; b = b->parent ? b->parent->parent : NULL)
    if (b->parent == loop) return false;
  return true;
}

static bool may_fault(const ir_op *op) {
  if (op->opc != IR_DIV && op->opc != IR_REM) return false;
  ir_value *y = op->operands[1];
  if (!ir_dtype_is_int(ir_type_elem(y->type)->dtype)) return false;
  return !pass_is_const(y) || pass_const_int(y) == 0 || pass_const_all_ones(y);
}

static bool hoistable(const ir_op *op, const ir_op *loop) {
  if (!(ir_op_info(op->opc)->traits & IR_PURE) || op->nregions || may_fault(op)) return false;
  for (int i = 0; i < op->noperands; i++)
    if (!defined_outside(op->operands[i], loop)) return false;
  return true;
}

static bool hoist_block(ir_block *blk);

/* Moves the invariant ops of loop's body before it, in order, so an op whose operands
 * were hoisted just before it is hoisted too. */
static bool hoist_loop(ir_op *loop) {
  bool changed = false;
  ir_op *next;
  for (ir_op *op = loop->regions[0]->first; op; op = next) {
    next = op->next;
    if (hoistable(op, loop)) {
      ir_op_move_before(op, loop);
      changed = true;
    }
  }
  return changed;
}

static bool hoist_block(ir_block *blk) {
  bool changed = false;
  ir_op *next;
  for (ir_op *op = blk->first; op; op = next) {
    next = op->next;
    for (int r = 0; r < op->nregions; r++) changed |= hoist_block(op->regions[r]);
    if (op->opc == IR_FOR) changed |= hoist_loop(op);
  }
  return changed;
}

bool pass_licm(ir_module *m, ir_func *f) {
  (void)m;
  return hoist_block(f->body);
}
