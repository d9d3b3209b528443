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
 * store's mask: what lies outside is not written.
 *
 * Where the whole tile does not fit beside the ring (128x256 f16 is 64 KB; 4 stages of
 * BK 64 leave 27 KB), the tile goes out in column slabs of one TMA box (a swizzle line of
 * columns: 128 bytes, or 64 or 32 where two such slots do not fit) through a ring of
 * two: slab j is written to slot j mod 2 once
 * the copy of slab j - 2 has read it (bulk_wait {pending = 1}, then a barrier), as
 * CUTLASS's epilogue stages sub-tiles, so that a deeper operand ring and a TMA store can
 * have shared memory together. */
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

/* v's type cut to `cols` columns. */
static const ir_type *slab_type(ir_module *m, const ir_type *t, int cols) {
  int shape[2] = {t->shape[0], cols};
  return ir_type_with_layout(m, ir_type_tile(m, t->elem, 2, shape), t->layout);
}

/* Columns [j * cols, (j + 1) * cols) of v (a 2-D tile of the stored tile's shape and
 * layout): the elementwise ops of the same block that compute it are computed again on the
 * slab's columns (so that a slab's math sits right before its store instead of the whole
 * tile's math before the first: the 128x256 gelu epilogue spilled the other way), what
 * they read from elsewhere (the accumulator, a broadcast bias) is sliced. */
static ir_value *slab_of(ir_module *m, ir_builder *b, ir_vmap *vm, const ir_op *st, ir_value *v, int j,
                         int cols) {
  ir_value *r = ir_vmap_get(vm, v);
  if (r != v) return r;
  const ir_type *t = v->type, *at = st->operands[1]->type;
  ir_op *d = v->def;
  const ir_type *sty = slab_type(m, t, cols);
  if (d && d->parent == st->parent && d->nresults == 1 && !d->nregions &&
      (ir_op_info(d->opc)->traits & (IR_PURE | IR_ELEM)) == (IR_PURE | IR_ELEM)) {
    ir_value *ops[8];
    bool ok = d->noperands <= 8;
    for (int i = 0; ok && i < d->noperands; i++) {
      const ir_type *ot = d->operands[i]->type;
      ok = ot->kind == IR_TILE && ot->rank == 2 && ot->shape[0] == at->shape[0] &&
           ot->shape[1] == at->shape[1] && ot->layout == at->layout;
    }
    if (ok) {
      for (int i = 0; i < d->noperands; i++) ops[i] = slab_of(m, b, vm, st, d->operands[i], j, cols);
      ir_op *c = ir_build(b, d->opc, d->noperands, ops, 1, &sty);
      ir_op_copy_attrs(c, d);
      ir_vmap_put(vm, v, c->results[0]);
      return c->results[0];
    }
  }
  if (d && d->opc == IR_CONST) {
    ir_op *c = ir_build(b, IR_CONST, 0, NULL, 1, &sty);
    ir_op_copy_attrs(c, d);
    ir_vmap_put(vm, v, c->results[0]);
    return c->results[0];
  }
  ir_op *sl = ir_build(b, IR_SLICE, 1, &v, 1, &sty);
  int *start = SU_NEW_ARRAY(m->arena, int, 2);
  start[0] = 0;
  start[1] = j * cols;
  sl->ints = start;
  sl->nints = 2;
  ir_vmap_put(vm, v, sl->results[0]);
  return sl->results[0];
}

/* Slab j (of `cols` columns) of the stored tile, through slot j mod 2 of buf; the wait for
 * that slot first from the third slab on (the first two were freed before the math). */
static void store_slab(ir_module *m, ir_builder *b, ir_op *st, const pass_block *blk, ir_value *buf,
                       ir_value *map, int j, int cols) {
  ir_value *y = slab_of(m, b, ir_vmap_new(m->arena), st, st->operands[1], j, cols);
  if (j >= 2) {
    ir_build(b, IR_BULK_WAIT, 0, NULL, 0, NULL)->attr = 1;
    ir_build(b, IR_BARRIER, 0, NULL, 0, NULL);
  }
  const ir_type *i32 = ir_type_scalar(m, TK_I32);
  ir_value *slot = ir_const_int(b, i32, j % 2);
  ir_value *sv[3] = {buf, slot, y};
  ir_build(b, IR_SMEM_STORE, 3, sv, 0, NULL);
  ir_build(b, IR_FENCE_ASYNC, 0, NULL, 0, NULL);
  ir_build(b, IR_BARRIER, 0, NULL, 0, NULL);
  ir_value *opnds[3 + IR_MAX_RANK] = {map, buf, slot};
  for (int d = 0; d < blk->rank; d++) opnds[3 + d] = blk->coord[d];
  int last = blk->rank - 1;
  if (j) opnds[3 + last] = ir_binary(b, IR_ADD, blk->coord[last], ir_const_int(b, blk->coord[last]->type, j * cols));
  ir_build(b, IR_TMA_STORE, 3 + blk->rank, opnds, 0, NULL);
  ir_build(b, IR_BULK_COMMIT, 0, NULL, 0, NULL);
}

static bool rewrite(ir_module *m, ir_func *f, ir_op *st, int64_t *room) {
  const ir_type *t = st->operands[1]->type;
  int eb = ir_dtype_bytes(t->dtype);
  pass_block blk;
  if (!pass_block_of(m, st, &blk) || !pass_block_tma_ready(f, &blk, eb)) return false;
  int sw = pass_swizzle_for(t->shape[1] * eb);
  const ir_type *bt = pass_slots_type(m, t->elem, 1, t->shape[0], t->shape[1], sw);
  int64_t bytes = ir_smem_buffer_bytes(bt);
  /* slabs: one box of columns each (a swizzle line: 128 bytes, else 64 or 32 where two
   * slots of 128 do not fit), a ring of two, where the whole tile does not fit */
  int cols = 0, nslabs = 1;
  if (bytes > *room) {
    if (blk.tile_dim[blk.rank - 1] != 1) return false;
    for (int line = 128; line >= 32 && !cols; line /= 2) {
      int c = line / eb;
      if (c > t->shape[1] || t->shape[1] % c || t->shape[1] / c < 3) continue;
      const ir_type *rt = pass_slots_type(m, t->elem, 2, t->shape[0], c, line);
      if (ir_smem_buffer_bytes(rt) <= *room) cols = c, sw = line, bt = rt;
    }
    if (!cols) return false;
    nslabs = t->shape[1] / cols;
    bytes = ir_smem_buffer_bytes(bt);
  }
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
  if (nslabs > 1) {
    for (int j = 0; j < nslabs; j++) store_slab(m, &b, st, &blk, buf, map, j, cols);
    ir_op_erase(st);
    return true;
  }
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
