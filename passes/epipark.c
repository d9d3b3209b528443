/* epipark: a persistent dot kernel's epilogue runs under the next tile's products (sm_90a;
 * docs/passes.md).
 *
 * After warpspec, a persistent kernel's consumers run
 *
 *   for tile { acc = for k { wait slot; wgmma; commit; wait pending 1; release } ;
 *              acc = wait 0; release; E(acc, tile) }
 *
 * where E is the epilogue: elementwise work on the accumulator (a bias, an activation, a
 * cast) ending in tmastore's staged TMA store. While E runs the tensor cores idle; with a
 * gelu it costs ~12% of a 4096^3 matmul (docs/decisions.md). This pass parks the finished
 * accumulator instead, as C = BN / S column slabs [BM, S] (S = SLAB columns): the first CS
 * in shared memory (f32, what the ring leaves free), the other C - CS in registers (a
 * carried slice of the accumulator, at most KEEP_REGS a thread), and carries the parked
 * tile into the next iteration, whose k loop runs slab j's part of E at step j, after the
 * step's wgmma is issued and the previous one waited for:
 *
 *   for tile (parked?, ptile, kept) {
 *     acc = for k { ...; release;
 *                   if parked? && j < C { E_j(slot(j)); if j == R-1 { kept -> slots 0..R-1 } } }
 *     if parked? { E_j for the slabs the loop did not reach (K shorter than C steps) }
 *     acc = wait 0; release; park slabs 0..CS-1; kept = acc[:, CS*S:]
 *   }
 *   if parked? { E_j for every slab }      the last tile's
 *
 * slot(j) is j for j < CS and j - CS after: once slots 0..R-1 are read, the R kept slabs
 * move into them (R <= CS), so every slab's E reads the park and E is emitted three times
 * (k loop, after it, after the tile loop) rather than once per register slab as well (a
 * register slice needs a constant offset: 24 copies, a 9000-instruction kernel, at 128x256).
 *
 * E_j is E with every tile's N axis cut from BN to S: the accumulator read from the slab,
 * N's arange offset by j * S, scalars that depend on the tile recomputed for the parked
 * one, and the store a [BM, S] box through a two-slot staging ring (the 64 KB staging
 * tile goes). Each thread reads back exactly the elements it parked (the slabs keep the
 * accumulator's layout), so parking needs no barrier; the staging ring's slot is reused
 * two slabs later, after `bulk_wait {pending = 1}` and a barrier, as tmastore does.
 *
 * Exact: every element gets the same operations on the same values; only when it is
 * computed and stored changes. Applied to warp-specialized persistent kernels whose
 * epilogue has the form above and at least MIN_EPILOGUE_OPS elementwise ops on the full
 * tile (a cast-and-store epilogue is not worth the park's traffic), when shared memory and
 * registers have room (and no more slabs stay in registers than are parked in shared
 * memory); -Rpass-missed=epipark says why not otherwise. Not yet in the default pipeline
 * (pipeline.c): it runs with --passes until its time is measured. */
#include "pass_util.h"

#include <string.h>

enum {
  SLAB = 16,            /* columns a slab: 8 f32 a thread at BM 128 x 256 threads */
  KEEP_REGS = 56,       /* registers a consumer thread may hold parked slabs in */
  MIN_EPILOGUE_OPS = 4, /* elementwise ops on the whole tile that make it worth it */
  MAX_E = 256,
};

typedef struct {
  ir_module *m;
  ir_func *f;
  ir_op *tloop, *kloop, *w0op;
  ir_block *tb;        /* the tile loop's body */
  ir_value *tile_iv, *w0;
  const ir_layout *lay; /* the accumulator's */
  int bm, bn, s, c, cs, r;
  ir_op *st_chain[7];   /* tmastore's: bulk_wait, barrier, smem_store, fence, barrier, tma_store, commit */
  ir_value *y;          /* the value stored */
  ir_value *stage, *park, *map; /* the new buffers and map */
  const char *why;
} ep;

/* One copy of E for one slab. */
typedef struct {
  ep *e;
  ir_builder b;
  ir_vmap *map;
  ir_value *src;   /* the slab's accumulator values */
  ir_value *col;   /* the slab's first column within the tile (i32) */
  ir_value *slot;  /* the staging slot (i32) */
  ir_value *ptile; /* the parked tile's loop value */
  bool failed;
} inst;

/* The axis of t that is the tile's N (columns): axis 1 of a 2-D tile in the accumulator's
 * layout, axis 0 of a 1-D one in its slice along dim 0; -1 for any other (no N axis). */
static int n_axis(const ep *e, const ir_type *t) {
  if (t->kind != IR_TILE || !t->layout) return -1;
  if (t->rank == 2 && t->layout == e->lay) return 1;
  if (t->rank == 1 && t->layout->kind == IR_LAYOUT_SLICE && t->layout->slice_dim == 0 &&
      t->layout->parent == e->lay)
    return 0;
  return -1;
}

/* Whether a tile type is one E may hold: with an N axis of BN or 1, or of the
 * accumulator's rows only (a slice along dim 1), or a scalar. */
static bool type_ok(const ep *e, const ir_type *t) {
  if (t->kind != IR_TILE) return true;
  int a = n_axis(e, t);
  if (a >= 0) return t->shape[a] == e->bn || t->shape[a] == 1;
  return t->layout && t->layout->kind == IR_LAYOUT_SLICE && t->layout->slice_dim == 1 &&
         t->layout->parent == e->lay;
}

static const ir_type *slab_type(const ep *e, const ir_type *t) {
  int a = n_axis(e, t);
  if (a < 0 || t->shape[a] != e->bn) return t;
  int shape[IR_MAX_RANK];
  memcpy(shape, t->shape, sizeof(int) * (size_t)t->rank);
  shape[a] = e->s;
  return ir_type_with_layout(e->m, ir_type_tile(e->m, ir_type_elem(t), t->rank, shape), t->layout);
}

static bool op_allowed(const ir_op *op) {
  if (op->nregions || op->nresults != 1) return false;
  if (ir_op_info(op->opc)->traits & IR_ELEM) return true;
  switch (op->opc) {
  case IR_CONST: case IR_SPLAT: case IR_ARANGE: case IR_BROADCAST: case IR_EXPAND_DIMS:
  case IR_LOAD: case IR_GRID_SIZE:
    return true;
  default:
    return false;
  }
}

static ir_value *mapped(inst *in, ir_value *v);

/* The slab's copy of op's result. */
static ir_value *clone_op(inst *in, ir_op *op) {
  ep *e = in->e;
  if (!op_allowed(op)) {
    e->why = "the epilogue has an op it cannot cut by columns";
    in->failed = true;
    return op->results[0];
  }
  const ir_type *t = op->results[0]->type;
  if (!type_ok(e, t)) {
    e->why = "the epilogue has a tile not shaped like the accumulator";
    in->failed = true;
    return op->results[0];
  }
  const ir_type *nt = slab_type(e, t);
  ir_value *opnds[8];
  if (op->noperands > 8) {
    in->failed = true;
    return op->results[0];
  }
  for (int i = 0; i < op->noperands; i++) opnds[i] = mapped(in, op->operands[i]);
  ir_op *c = ir_build(&in->b, op->opc, op->noperands, opnds, 1, &nt);
  ir_op_copy_attrs(c, op);
  ir_value *r = c->results[0];
  if (op->opc == IR_ARANGE && nt != t) { /* N's indices: the slab's, from its first column */
    c->attr2 = c->attr + e->s;
    r = ir_binary(&in->b, IR_ADD, r, ir_build1(&in->b, IR_SPLAT, nt, 1, &in->col));
  }
  return r;
}

/* The value v stands for in the slab. */
static ir_value *mapped(inst *in, ir_value *v) {
  ep *e = in->e;
  ir_value *got = ir_vmap_get(in->map, v);
  if (got != v) return got;
  ir_value *r = v;
  if (v == e->w0) {
    r = in->src;
  } else if (v == e->tile_iv) {
    r = in->ptile;
  } else if (!v->def) {
    const ir_block *ob = v->owner;
    if (ob == e->tb || (ob->parent && pass_op_within(ob->parent, e->tb))) {
      e->why = "the epilogue reads a value the tile loop carries";
      in->failed = true;
    }
  } else if (slab_type(e, v->type) != v->type || pass_op_within(v->def, e->tb)) {
    if (pass_op_within(v->def, e->kloop->regions[0]) || v->def == e->kloop) {
      e->why = "the epilogue reads a value of the k loop other than the accumulator";
      in->failed = true;
    } else {
      r = clone_op(in, v->def);
    }
  }
  ir_vmap_put(in->map, v, r);
  return r;
}

/* Emits the slab's epilogue at in->b: E's values it stores, and the store through the
 * staging ring. */
static void emit_slab(inst *in) {
  ep *e = in->e;
  ir_builder *b = &in->b;
  ir_value *y = mapped(in, e->y);
  ir_op *tma = e->st_chain[5];
  int nc = tma->noperands - 3;
  ir_value *coords[IR_MAX_RANK];
  for (int d = 0; d < nc; d++) coords[d] = mapped(in, tma->operands[3 + d]);
  coords[nc - 1] = ir_binary(b, IR_ADD, coords[nc - 1], in->col);
  ir_build(b, IR_BULK_WAIT, 0, NULL, 0, NULL)->attr = 1;
  ir_build(b, IR_BARRIER, 0, NULL, 0, NULL);
  ir_value *sv[3] = {e->stage, in->slot, y};
  ir_build(b, IR_SMEM_STORE, 3, sv, 0, NULL);
  ir_build(b, IR_FENCE_ASYNC, 0, NULL, 0, NULL);
  ir_build(b, IR_BARRIER, 0, NULL, 0, NULL);
  ir_value *to[3 + IR_MAX_RANK] = {e->map, e->stage, in->slot};
  for (int d = 0; d < nc; d++) to[3 + d] = coords[d];
  ir_build(b, IR_TMA_STORE, 3 + nc, to, 0, NULL);
  ir_build(b, IR_BULK_COMMIT, 0, NULL, 0, NULL);
}

static const ir_type *i32(ep *e) { return ir_type_scalar(e->m, TK_I32); }
static const ir_type *slab_acc(ep *e, int cols) {
  const ir_type *t = e->w0->type;
  int shape[2] = {t->shape[0], cols};
  return ir_type_with_layout(e->m, ir_type_tile(e->m, ir_type_elem(t), 2, shape), e->lay);
}

/* Slab j's epilogue at b, its accumulator read from the park's slot `slot` (i32 values). */
static void slab_at(ep *e, ir_builder *b, ir_value *j, ir_value *slot, ir_value *ptile) {
  inst in = {e, *b, ir_vmap_new(e->m->arena), NULL, NULL, NULL, ptile, false};
  ir_value *lo[2] = {e->park, slot};
  in.src = ir_build1(&in.b, IR_SMEM_LOAD, slab_acc(e, e->s), 2, lo);
  in.col = ir_binary(&in.b, IR_MUL, j, ir_const_int(&in.b, i32(e), e->s));
  in.slot = ir_binary(&in.b, IR_AND, j, ir_const_int(&in.b, i32(e), 1));
  emit_slab(&in);
  if (in.failed && !e->why) e->why = "the epilogue cannot be cut by columns";
}

/* The park's slot of slab j: slabs 0..CS-1 were parked in slots 0..CS-1; the R kept in
 * registers are moved into slots 0..R-1 once those are read, so slab CS + r is in slot r. */
static ir_value *slot_of(ep *e, ir_builder *b, ir_value *j) {
  ir_value *cs = ir_const_int(b, i32(e), e->cs);
  ir_value *sel[3] = {ir_cmp_build(b, IR_CMP_LT, j, cs), j, ir_binary(b, IR_SUB, j, cs)};
  return ir_build1(b, IR_SELECT, i32(e), 3, sel);
}

/* Moves the R kept slabs into park slots 0..R-1 (read already): one unrolled block of
 * stores, so that every slab's epilogue reads the park and E is emitted once a place
 * rather than once per register slab (a register slice needs a constant offset). Each
 * thread stores and later reads back its own elements: no barrier. */
static void move_kept(ep *e, ir_builder *b, ir_value *kept) {
  for (int r = 0; r < e->r; r++) {
    const ir_type *t = slab_acc(e, e->s);
    ir_op *sl = ir_build(b, IR_SLICE, 1, &kept, 1, &t);
    int *start = SU_NEW_ARRAY(e->m->arena, int, 2);
    start[0] = 0;
    start[1] = r * e->s;
    sl->ints = start;
    sl->nints = 2;
    ir_value *sv[3] = {e->park, ir_const_int(b, i32(e), r), sl->results[0]};
    ir_build(b, IR_SMEM_STORE, 3, sv, 0, NULL);
  }
}

static ir_op *end_with_yield(ep *e, ir_block *blk, ir_loc loc) {
  ir_op *y = ir_op_new(e->m, IR_YIELD, loc, 0, NULL, 0, NULL);
  ir_block_insert_before(blk, y, NULL);
  return y;
}

/* if cond { ... } else {} with no results; returns a builder inside its then-block. */
static ir_builder then_of(ep *e, ir_builder *b, ir_value *cond) {
  ir_op *op = ir_build_if(b, cond, 0, NULL);
  ir_op *y = end_with_yield(e, op->regions[0], b->loc);
  end_with_yield(e, op->regions[1], b->loc);
  ir_builder in = {e->m, op->regions[0], y, b->loc};
  return in;
}

/* Slabs lo..C-1 (lo an i32 value) of the parked tile, each once, in one loop. The kept
 * slabs were moved into the park in the k loop when it reached step R-1 (lo >= R); else
 * they move here, when slab CS is next and slots 0..CS-1 have all been read. */
static void slabs_from(ep *e, ir_builder *b, ir_value *lo, ir_value *ptile, ir_value *kept) {
  ir_value *one = ir_const_int(b, i32(e), 1), *c = ir_const_int(b, i32(e), e->c);
  ir_op *loop = ir_build_for(b, lo, c, one, 0, NULL);
  ir_block *body = loop->regions[0];
  ir_builder in = {e->m, body, end_with_yield(e, body, b->loc), b->loc};
  ir_value *j = body->args[0];
  if (e->r) {
    ir_value *at_cs = ir_cmp_build(&in, IR_CMP_EQ, j, ir_const_int(&in, i32(e), e->cs));
    ir_value *unmoved = ir_cmp_build(&in, IR_CMP_LT, lo, ir_const_int(&in, i32(e), e->r));
    ir_builder mv = then_of(e, &in, ir_binary(&in, IR_AND, at_cs, unmoved));
    move_kept(e, &mv, kept);
  }
  slab_at(e, &in, j, slot_of(e, &in, j), ptile);
}

/* E's ops: everything after the release that follows wait 0 in the tile body, but the
 * yield. Fills e->st_chain and e->y; false (e->why) when the shape is not the one above. */
static bool read_epilogue(ep *e, ir_op **ops, int *nops) {
  int n = 0;
  for (ir_op *op = e->w0op->next; op && op->opc != IR_YIELD; op = op->next) {
    if (op->opc == IR_IF || op->opc == IR_MBAR_ARRIVE) continue; /* the release */
    if (n == MAX_E) return e->why = "the epilogue is too long", false;
    ops[n++] = op;
  }
  /* tmastore's chain, once, in this order (pure ops may stand between its ops) */
  static const ir_opcode chain[7] = {IR_BULK_WAIT, IR_BARRIER, IR_SMEM_STORE, IR_FENCE_ASYNC,
                                     IR_BARRIER, IR_TMA_STORE, IR_BULK_COMMIT};
  int k = 0, full = 0;
  for (int i = 0; i < n; i++) {
    const ir_op *op = ops[i];
    if (op_allowed(op)) {
      const ir_type *t = op->results[0]->type;
      if ((ir_op_info(op->opc)->traits & IR_ELEM) && t->kind == IR_TILE && n_axis(e, t) == 1 &&
          t->shape[0] == e->bm && t->shape[1] == e->bn)
        full++;
      continue;
    }
    if (k == 7 || op->opc != chain[k]) return e->why = "the epilogue's store is not tmastore's", false;
    e->st_chain[k++] = ops[i];
  }
  if (k != 7) return e->why = "the epilogue's store is not a TMA store", false;
  const ir_op *tma = e->st_chain[5];
  const ir_value *buf0 = e->st_chain[2]->operands[0], *map0 = tma->operands[0];
  if (tma->noperands != 5 || !buf0->def || buf0->def->opc != IR_SMEM_ALLOC || !map0->def ||
      map0->def->opc != IR_TENSOR_MAP || map0->def->nints != 2 || tma->operands[1] != buf0)
    return e->why = "the epilogue's store is not a 2-D box store of its staging tile", false;
  e->y = e->st_chain[2]->operands[2];
  if (e->y->type->kind != IR_TILE || n_axis(e, e->y->type) != 1 || e->y->type->shape[1] != e->bn)
    return e->why = "the stored tile is not the accumulator's shape", false;
  if (full < MIN_EPILOGUE_OPS) return e->why = "the epilogue is too light to be worth parking", false;
  *nops = n;
  return true;
}

/* The consumer region's tile loop, its k loop carrying the accumulator, and wait 0. */
static bool find_loops(ep *e) {
  ir_op *ws = NULL;
  for (ir_op *op = e->f->body->first; op; op = op->next)
    if (op->opc == IR_WARP_SPEC) ws = op;
  if (!ws) return e->why = "no warp specialization", false;
  for (ir_op *op = ws->regions[0]->first; op; op = op->next)
    if (op->opc == IR_FOR) {
      if (e->tloop) return e->why = "more than one tile loop", false;
      e->tloop = op;
    }
  if (!e->tloop) return e->why = "no tile loop", false;
  e->tb = e->tloop->regions[0];
  e->tile_iv = e->tb->args[0];
  for (ir_op *op = e->tb->first; op; op = op->next) {
    if (op->opc == IR_FOR && op->nresults >= 1 && op->results[0]->type->kind == IR_TILE &&
        op->results[0]->type->layout && op->results[0]->type->layout->kind == IR_LAYOUT_WGMMA) {
      if (e->kloop) return e->why = "more than one k loop", false;
      e->kloop = op;
    }
    if (op->opc == IR_WGMMA_WAIT && op->attr == 0 && e->kloop && op->noperands == 1 &&
        op->operands[0] == e->kloop->results[0])
      e->w0op = op;
  }
  if (!e->kloop || !e->w0op) return e->why = "no k loop ending in a wait for its accumulator", false;
  if (e->kloop->operands[0]->type->dtype != TK_I32 || e->tile_iv->type->dtype != TK_I32)
    return e->why = "a loop counts in another type than i32", false;
  e->w0 = e->w0op->results[0];
  const ir_type *t = e->w0->type;
  if (t->rank != 2 || t->dtype != TK_F32) return e->why = "the accumulator is not a 2-D f32 tile", false;
  e->lay = t->layout;
  e->bm = t->shape[0];
  e->bn = t->shape[1];
  return true;
}

bool pass_epipark(ir_module *m, ir_func *f) {
  if (!f->persistent || !pass_has(m, PASS_WGMMA) || !pass_has(m, PASS_TMA)) return false;
  bool has_ws = false;
  for (ir_op *op = f->body->first; op; op = op->next) has_ws |= op->opc == IR_WARP_SPEC;
  if (!has_ws) return false;
  ep e0;
  memset(&e0, 0, sizeof e0);
  ep *e = &e0;
  e->m = m;
  e->f = f;
  ir_op *ops[MAX_E];
  int nops = 0;
  if (!find_loops(e) || !read_epilogue(e, ops, &nops)) {
    pass_remark_missed(m, "epipark", f->loc, "epilogue not parked: %s", e->why);
    return false;
  }
  /* room: what the kernel's buffers leave once tmastore's staging tile goes (no scratch is
   * kept: E's ops are elementwise, the slabs keep the accumulator's layout) */
  ir_value *buf0 = e->st_chain[2]->operands[0], *map0 = e->st_chain[5]->operands[0];
  int eb = ir_dtype_bytes(e->y->type->dtype);
  e->s = SLAB;
  if (e->bn % e->s) {
    pass_remark_missed(m, "epipark", f->loc, "epilogue not parked: the tile's %d columns are not whole slabs of %d", e->bn, e->s);
    return false;
  }
  e->c = e->bn / e->s;
  const ir_type *acc_el = ir_type_elem(e->w0->type), *y_el = ir_type_elem(e->y->type);
  int64_t slab_bytes = ir_smem_buffer_bytes(pass_slots_type(m, acc_el, 1, e->bm, e->s, 0));
  const ir_type *st = pass_slots_type(m, y_el, 2, e->bm, e->s, pass_swizzle_for(e->s * eb));
  int64_t room = tg_smem_program(m->arch, f->programs_per_sm) - pass_smem_bytes(f) +
                 ir_smem_buffer_bytes(buf0->type) - ir_smem_buffer_bytes(st);
  e->cs = room <= 0 ? 0 : (int)(room / slab_bytes);
  if (e->cs > e->c) e->cs = e->c;
  e->r = e->c - e->cs;
  if (e->r > e->cs) {
    pass_remark_missed(m, "epipark", f->loc, "epilogue not parked: %d of its %d slabs fit in shared memory, fewer than would stay in registers",
                       e->cs, e->c);
    return false;
  }
  int threads = 32 * f->num_warps;
  if ((int64_t)e->r * e->s * e->bm / threads > KEEP_REGS) {
    pass_remark_missed(m, "epipark", f->loc, "epilogue not parked: %d of its %d slabs would stay in registers (%d a thread)",
                       e->r, e->c, e->r * e->s * e->bm / threads);
    return false;
  }
  /* a dry run into a detached block (never linked, left to the arena): can E be cut by
   * columns? Checking with the same code that builds the slabs keeps the two in step. */
  {
    ir_op *probe = ir_op_new(m, IR_IF, f->loc, 0, NULL, 0, NULL);
    ir_block *pb = ir_op_add_region(m, probe, 0, NULL);
    ir_builder b = {m, pb, NULL, f->loc};
    inst in = {e, b, ir_vmap_new(m->arena), e->w0, e->tile_iv, e->tile_iv, e->tile_iv, false};
    (void)mapped(&in, e->y);
    for (int d = 3; d < e->st_chain[5]->noperands; d++) (void)mapped(&in, e->st_chain[5]->operands[d]);
    if (in.failed) {
      pass_remark_missed(m, "epipark", f->loc, "epilogue not parked: %s", e->why);
      return false;
    }
  }
  /* the buffers and the map */
  ir_builder top = {m, f->body, f->body->first, f->loc};
  e->stage = ir_build1(&top, IR_SMEM_ALLOC, st, 0, NULL);
  if (e->cs) {
    const ir_type *pt = pass_slots_type(m, acc_el, e->cs, e->bm, e->s, pass_swizzle_for(e->s * 4));
    e->park = ir_build1(&top, IR_SMEM_ALLOC, pt, 0, NULL);
  }
  ir_op *mc = ir_op_clone(m, map0->def, ir_vmap_new(m->arena));
  ir_block_insert_before(f->body, mc, map0->def);
  int *box = SU_NEW_ARRAY(m->arena, int, mc->nints);
  memcpy(box, mc->ints, sizeof(int) * (size_t)mc->nints);
  box[mc->nints - 2] = e->bm;
  box[mc->nints - 1] = e->s;
  mc->ints = box;
  mc->attr = pass_swizzle_for(e->s * eb);
  e->map = mc->results[0];

  /* the tile loop carries: a parked tile?, which, and the kept slabs */
  ir_builder pre = {m, e->tloop->parent, e->tloop, e->tloop->loc};
  ir_value *hp_arg, *pt_arg, *kept_arg = NULL;
  ir_value *hp_res = ir_for_add_carried(m, e->tloop, ir_const_int(&pre, ir_type_scalar(m, TK_I1), 0), &hp_arg);
  ir_value *pt_res = ir_for_add_carried(m, e->tloop, e->tloop->operands[0], &pt_arg);
  ir_value *kept_res = NULL;
  if (e->r) kept_res = ir_for_add_carried(m, e->tloop, ir_const_float(&pre, slab_acc(e, e->r * e->s), 0.0), &kept_arg);

  /* in the k loop, after the release: slab j = (k - lb) / step */
  ir_op *kl = e->kloop;
  ir_block *kb = kl->regions[0];
  ir_builder kin = {m, kb, kb->last, kl->loc};
  ir_value *j = ir_binary(&kin, IR_DIV, ir_binary(&kin, IR_SUB, kb->args[0], kl->operands[0]), kl->operands[2]);
  {
    ir_value *ok = ir_binary(&kin, IR_AND, hp_arg, ir_cmp_build(&kin, IR_CMP_LT, j, ir_const_int(&kin, i32(e), e->c)));
    ir_builder in = then_of(e, &kin, ok);
    slab_at(e, &in, j, slot_of(e, &in, j), pt_arg);
    if (e->r) { /* slot R-1 read: the kept slabs move into slots 0..R-1 */
      ir_builder mv = then_of(e, &in, ir_cmp_build(&in, IR_CMP_EQ, j, ir_const_int(&in, i32(e), e->r - 1)));
      move_kept(e, &mv, kept_arg);
    }
  }
  /* after it, the slabs it did not reach: from min(steps, C) */
  ir_builder aft = {m, e->tb, e->w0op, kl->loc};
  ir_value *lb = kl->operands[0], *ub = kl->operands[1], *step = kl->operands[2];
  ir_value *zero = ir_const_int(&aft, i32(e), 0), *one = ir_const_int(&aft, i32(e), 1);
  ir_value *span = ir_binary(&aft, IR_MAX, ir_binary(&aft, IR_SUB, ub, lb), zero);
  ir_value *steps = ir_binary(&aft, IR_DIV, ir_binary(&aft, IR_SUB, ir_binary(&aft, IR_ADD, span, step), one), step);
  ir_value *lo = ir_binary(&aft, IR_MIN, steps, ir_const_int(&aft, i32(e), e->c));
  {
    ir_builder in = then_of(e, &aft, hp_arg);
    slabs_from(e, &in, lo, pt_arg, kept_arg);
  }
  /* park this tile, before the yield */
  ir_op *y = e->tb->last;
  ir_builder pk = {m, e->tb, y, e->w0op->loc};
  for (int s = 0; s < e->cs; s++) {
    const ir_type *t = slab_acc(e, e->s);
    ir_op *sl2 = ir_build(&pk, IR_SLICE, 1, &e->w0, 1, &t);
    int *start = SU_NEW_ARRAY(m->arena, int, 2);
    start[0] = 0;
    start[1] = s * e->s;
    sl2->ints = start;
    sl2->nints = 2;
    ir_value *sv[3] = {e->park, ir_const_int(&pk, i32(e), s), sl2->results[0]};
    ir_build(&pk, IR_SMEM_STORE, 3, sv, 0, NULL);
  }
  ir_yield_add(m, y, ir_const_int(&pk, ir_type_scalar(m, TK_I1), 1));
  ir_yield_add(m, y, e->tile_iv);
  if (e->r) {
    const ir_type *t = slab_acc(e, e->r * e->s);
    ir_op *sl3 = ir_build(&pk, IR_SLICE, 1, &e->w0, 1, &t);
    int *start = SU_NEW_ARRAY(m->arena, int, 2);
    start[0] = 0;
    start[1] = e->cs * e->s;
    sl3->ints = start;
    sl3->nints = 2;
    ir_yield_add(m, y, sl3->results[0]);
  }
  /* after the tile loop, the last parked tile whole */
  ir_builder fin = {m, e->tloop->parent, e->tloop->next, e->tloop->loc};
  {
    ir_builder in = then_of(e, &fin, hp_res);
    slabs_from(e, &in, ir_const_int(&in, i32(e), 0), pt_res, kept_res);
  }
  /* E goes (its values are the slabs' now), and the staging tile with it */
  for (int i = nops - 1; i >= 0; i--) {
    for (int k = 0; k < ops[i]->nresults; k++)
      if (pass_count_uses(f->body, ops[i]->results[k])) goto keep;
    ir_op_erase(ops[i]);
  keep:;
  }
  if (!pass_count_uses(f->body, buf0)) ir_op_erase(buf0->def);
  if (!pass_count_uses(f->body, map0)) ir_op_erase(map0->def);
  pass_dce(m, f);
  pass_remark(m, "epipark", f->loc, "epilogue parked: %d slabs of %dx%d, %d in shared memory, %d in registers",
              e->c, e->bm, e->s, e->cs, e->r);
  return true;
}
