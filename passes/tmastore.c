/* TMA stores of wgmma results (sm_90a; docs/passes.md).
 *
 * A store of a tile in the accumulator's #wgmma layout (the epilogue of a dot kernel)
 * writes 4 bytes per instruction, two columns of a row, and the consumers spend that time
 * away from the tensor cores. When the store writes a block of a strided tensor (a block
 * pointer, masked by the bounds) and shared memory has room for one more tile, it becomes
 *
 *   bulk_wait {pending = 0}   the previous tile's copy has read the buffer
 *   barrier                   so has every consumer (both before the epilogue's math)
 *   smem_store                each thread its elements, into the swizzled buffer
 *   fence_async, barrier      the writes visible to the copy engine
 *   tma_store, bulk_commit    one thread: the copy, which runs on while the consumers go on
 *
 * and the kernel waits for its last copy before it ends. The tensor map's bounds are the
 * store's mask: what lies outside is not written. */
#include "pass_util.h"

enum { SCRATCH_MARGIN = 8 * 1024 };

typedef struct {
  ir_module *m;
  ir_func *f;
  ir_op *found[16];
  int n;
} finder;

static void find_stores(ir_op *op, void *arg) {
  finder *fd = arg;
  if (op->opc != IR_STORE || fd->n == 16) return;
  const ir_type *t = op->operands[1]->type;
  if (t->kind == IR_TILE && t->rank == 2 && t->layout && t->layout->kind == IR_LAYOUT_WGMMA)
    fd->found[fd->n++] = op;
}

static bool rewrite(ir_module *m, ir_func *f, ir_op *st, int64_t *room) {
  const ir_type *t = st->operands[1]->type;
  int eb = ir_dtype_bytes(t->dtype);
  pass_block blk;
  if (!pass_block_of(m, st, &blk) || !pass_block_tma_ready(f, &blk, eb)) return false;
  int sw = pass_swizzle_for(t->shape[1] * eb);
  const ir_type *bt = pass_slots_type(m, t->elem, 1, t->shape[0], t->shape[1], sw);
  int64_t bytes = ir_smem_buffer_bytes(bt);
  if (bytes > *room) return false;
  *room -= bytes;
  ir_builder top = {m, f->body, f->body->first, f->loc};
  ir_value *buf = ir_build1(&top, IR_SMEM_ALLOC, bt, 0, NULL);
  ir_value *map = pass_tensor_map(m, f, &blk, sw, eb);
  /* The wait for the buffer goes before the pure ops that compute what is stored (the
   * epilogue's math), not right before the store: with no barrier between them, each
   * value can be written to the buffer as soon as it is computed, where a barrier after
   * the math keeps the whole converted tile and the accumulator live together (the
   * 128x256 bias+gelu epilogue spilled 152 bytes that way). */
  ir_op *first = st;
  while (first->prev && (ir_op_info(first->prev->opc)->traits & IR_PURE) && !first->prev->nregions)
    first = first->prev;
  ir_builder w = {m, st->parent, first, st->loc};
  ir_build(&w, IR_BULK_WAIT, 0, NULL, 0, NULL)->attr = 0;
  ir_build(&w, IR_BARRIER, 0, NULL, 0, NULL);
  ir_builder b = {m, st->parent, st, st->loc};
  ir_value *zero = ir_const_int(&b, ir_type_scalar(m, TK_I32), 0);
  ir_value *sv[3] = {buf, zero, st->operands[1]};
  ir_build(&b, IR_SMEM_STORE, 3, sv, 0, NULL);
  ir_build(&b, IR_FENCE_ASYNC, 0, NULL, 0, NULL);
  ir_build(&b, IR_BARRIER, 0, NULL, 0, NULL);
  ir_value *opnds[3 + IR_MAX_RANK] = {map, buf, zero};
  for (int d = 0; d < blk.rank; d++) opnds[3 + d] = blk.coord[d];
  ir_build(&b, IR_TMA_STORE, 3 + blk.rank, opnds, 0, NULL);
  ir_build(&b, IR_BULK_COMMIT, 0, NULL, 0, NULL);
  ir_op_erase(st);
  return true;
}

bool pass_tmastore(ir_module *m, ir_func *f) {
  if (!pass_has(m, PASS_TMA) || !pass_has(m, PASS_WGMMA)) return false;
  finder fd = {m, f, {0}, 0};
  ir_walk(f->body, find_stores, &fd);
  if (!fd.n) return false;
  int64_t room = tg_smem_program(m->arch, f->programs_per_sm) - pass_smem_bytes(f) - SCRATCH_MARGIN;
  bool changed = false;
  for (int i = 0; i < fd.n; i++) changed |= rewrite(m, f, fd.found[i], &room);
  if (!changed) return false;
  /* the last copies read the buffer before the kernel (its shared memory) ends */
  ir_op *ret = f->body->last;
  ir_builder end = {m, f->body, ret, ret->loc};
  ir_build(&end, IR_BULK_WAIT, 0, NULL, 0, NULL)->attr = 0;
  return true;
}
