/* Warp specialization of a TMA-pipelined kernel (sm_90a; docs/passes.md): the copies move
 * to a producer warpgroup of their own, so that issuing them never waits behind the
 * tensor cores and the consumers never stop to issue them.
 *
 * The kernel's body (all but its allocations) is copied into both regions of a
 * warp_spec. The consumer copy (region 0, the kernel's warps) drops the producer's ops:
 * the box copies, the byte expectations and the waits on the barriers the consumers
 * signal (the `empty` ring). The producer copy (region 1, one thread of one more
 * warpgroup) keeps exactly those and what they need: the control flow around them and
 * the scalars that compute their slots, coordinates and bounds (scoped liveness, dce.c);
 * the products, epilogue and stores go. The two sides meet only at the mbarriers, as in
 * the single stream swpipe built, whose order they keep each on its own side, so the
 * producer simply runs ahead, up to `stages` slots.
 *
 * Registers move to the consumers (setmaxnreg): the producer keeps PRODUCER_REGS (24,
 * setmaxnreg's least: it holds slot indices and coordinates only, and ptxas reports no
 * spill in it; 40, CUTLASS's figure, left causal attention's consumers 232 and ptxas
 * spilled its row statistics there, measured on the H200 2026-12-03) — but 32 in a
 * stream-K kernel (a workspace op: streamk.c), whose producer also walks the units' tile
 * and step ranges (24 spilled 20 bytes there, ptxas -v; 32 spill nothing in the matmul
 * and attention stream-K kernels, and 40 cost four-warpgroup attention's consumers 8
 * registers, 112 -> 104, and a spilling loop), the
 * consumers share the rest of what the CTA has at entry (its share of the 64K register
 * file: all of it, or 1/N at `programs_per_sm = N`), at most CONSUMER_MAX each.
 * Applied when the kernel has TMA copies, its warps are whole warpgroups and warp
 * specialization is not turned off (`@launch(warp_specialize = false)`). */
#include "pass_util.h"

enum { PRODUCER_WARPS = 4, PRODUCER_REGS = 24, PRODUCER_REGS_UNITS = 32, CONSUMER_MAX = 240, REG_FILE = 65536,
       ENTRY_MAX = 248 };


typedef struct {
  const ir_value *consumer_signaled[16];
  int n;
} bars;

static void note_arrive(ir_op *op, void *arg) {
  bars *b = arg;
  if (op->opc != IR_MBAR_ARRIVE || b->n == 16) return;
  for (int i = 0; i < b->n; i++)
    if (b->consumer_signaled[i] == op->operands[0]) return;
  b->consumer_signaled[b->n++] = op->operands[0];
}

static bool is_producer_op(const ir_op *op, const bars *b, const ir_vmap *to) {
  if (op->opc == IR_TMA_LOAD || op->opc == IR_MBAR_EXPECT) return true;
  if (op->opc != IR_MBAR_WAIT) return false;
  for (int i = 0; i < b->n; i++)
    if (ir_vmap_get(to, b->consumer_signaled[i]) == op->operands[0] || b->consumer_signaled[i] == op->operands[0])
      return true;
  return false;
}

typedef struct {
  const bars *b;
  const ir_vmap *to;
} root_arg;

static bool producer_root(const ir_op *op, void *arg) {
  root_arg *r = arg;
  return is_producer_op(op, r->b, r->to);
}

static void drop_producer_ops(ir_block *blk, const bars *b, const ir_vmap *to) {
  ir_op *next;
  for (ir_op *op = blk->first; op; op = next) {
    next = op->next;
    if (is_producer_op(op, b, to)) {
      ir_op_erase(op);
      continue;
    }
    for (int r = 0; r < op->nregions; r++) drop_producer_ops(op->regions[r], b, to);
  }
}

static bool stays_on_top(const ir_op *op, const ir_func *f) {
  switch (op->opc) {
  case IR_TENSOR_MAP: case IR_SMEM_ALLOC: case IR_MBAR_ALLOC: case IR_RETURN: return true;
  case IR_CONST: {
    /* the constant extents of tensor maps */
    for (const ir_op *u = f->body->first; u; u = u->next)
      if (u->opc == IR_TENSOR_MAP)
        for (int i = 0; i < u->noperands; i++)
          if (u->operands[i] == op->results[0]) return true;
    return false;
  }
  default: return false;
  }
}

static void find_tma(ir_op *op, void *arg) {
  if (op->opc == IR_TMA_LOAD) *(bool *)arg = true;
}

bool pass_warpspec(ir_module *m, ir_func *f) {
  if (f->warp_specialize < 0 || !pass_has(m, PASS_WGMMA) || f->num_warps % 4) return false;
  bool tma = false;
  ir_walk(f->body, find_tma, &tma);
  if (!tma) return false;
  for (const ir_op *op = f->body->first; op; op = op->next)
    if (op->opc == IR_WARP_SPEC) return false;
  bars b = {{0}, 0};
  ir_walk(f->body, note_arrive, &b);

  ir_op *ret = f->body->last;
  ir_builder at = {m, f->body, ret, f->loc};
  ir_op *ws = ir_build(&at, IR_WARP_SPEC, 0, NULL, 0, NULL);
  ir_block *cons = ir_op_add_region(m, ws, 0, NULL), *prod = ir_op_add_region(m, ws, 0, NULL);
  ir_vmap *to_cons = ir_vmap_new(m->arena), *to_prod = ir_vmap_new(m->arena);
  for (ir_op *op = f->body->first, *next; op != ws; op = next) {
    next = op->next;
    if (stays_on_top(op, f)) continue;
    ir_block_insert_before(cons, ir_op_clone(m, op, to_cons), NULL);
    ir_block_insert_before(prod, ir_op_clone(m, op, to_prod), NULL);
    ir_op_erase(op);
  }
  ir_block_insert_before(cons, ir_op_new(m, IR_YIELD, f->loc, 0, NULL, 0, NULL), NULL);
  ir_block_insert_before(prod, ir_op_new(m, IR_YIELD, f->loc, 0, NULL, 0, NULL), NULL);
  ws->attr = PRODUCER_WARPS;
  /* ptxas honours setmaxnreg only within the registers the CTA has at entry (its cap from
   * minctasm, a multiple of 8): what the regions take must add up to no more */
  int per_sm = f->programs_per_sm > 1 ? f->programs_per_sm : 1, threads = 32 * (f->num_warps + PRODUCER_WARPS);
  int entry = REG_FILE / (per_sm * threads) / 8 * 8;
  if (entry > ENTRY_MAX) entry = ENTRY_MAX;
  bool units = pass_has_workspace(f);
  int preg = units ? PRODUCER_REGS_UNITS : PRODUCER_REGS;
  int regs = (entry * threads - PRODUCER_WARPS * 32 * preg) / (32 * f->num_warps) / 8 * 8;
  int *ints = SU_NEW_ARRAY(m->arena, int, 2);
  ints[0] = regs > CONSUMER_MAX ? CONSUMER_MAX : regs;
  ints[1] = preg;
  ws->ints = ints;
  ws->nints = 2;

  /* barriers stay on top: the regions' copies name the same values */
  drop_producer_ops(cons, &b, to_cons);
  root_arg r = {&b, to_prod};
  pass_dce_scoped(m, f, prod, producer_root, &r);
  pass_dce(m, f);
  return true;
}
