/* Sinking: a pure op computed before a loop (or an if) that does not use it moves down to
 * just before its first user, so that its value does not stay live across the loop. What
 * the lowering leaves behind needs it: the epilogue's masks and column offsets of a dot
 * kernel, converted into the accumulator's layout before the K loop, would hold 100+
 * registers through it beside the accumulators (ptxas then spills). LLVM does not move
 * code out of a block across a loop, nor does ptxas.
 *
 * Within each block, from the last op up: a pure op without regions whose first user in
 * the block (an op that uses it, or holds a user in its regions) lies past a region op
 * is moved right before that user. Operands stay defined before their uses: an op moves
 * only down, and its users come after its new place. */
#include "pass_util.h"

/* Whether op (or an op nested in it) uses v. */
static bool uses(const ir_op *op, const ir_value *v) {
  for (int i = 0; i < op->noperands; i++)
    if (op->operands[i] == v) return true;
  for (int r = 0; r < op->nregions; r++)
    for (const ir_op *o = op->regions[r]->first; o; o = o->next)
      if (uses(o, v)) return true;
  return false;
}

static bool sink_block(ir_module *m, ir_block *blk) {
  bool changed = false;
  for (ir_op *op = blk->last; op; op = op->prev)
    for (int r = 0; r < op->nregions; r++) changed |= sink_block(m, op->regions[r]);
  ir_op *prev;
  for (ir_op *op = blk->last; op; op = prev) {
    prev = op->prev;
    if (!(ir_op_info(op->opc)->traits & IR_PURE) || op->nregions || op->nresults != 1) continue;
    bool crossed = false;
    ir_op *user = NULL;
    for (ir_op *o = op->next; o && !user; o = o->next) {
      if (uses(o, op->results[0])) user = o;
      else if (o->nregions) crossed = true;
    }
    if (!user || !crossed) continue;
    ir_op_move_before(op, user);
    changed = true;
  }
  (void)m;
  return changed;
}

bool pass_sink(ir_module *m, ir_func *f) { return sink_block(m, f->body); }
