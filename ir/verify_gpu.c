/* The verifier's rules for the GPU level of the IR (ops.def, "GPU level"): shared buffers,
 * barriers, async copies, tensor-core products and warp specialization. What the back end
 * relies on without checking again is checked here: shapes of slots against tiles and
 * boxes, operand kinds, and where the ops may stand (allocations at the top level, the
 * producer of a warp_spec scalar-only). */
#include "verify_int.h"

static bool is_i32(const ir_value *x) {
  return x->type->kind == IR_SCALAR && x->type->dtype == TK_I32;
}

static bool is_kind(const ir_value *x, ir_type_kind k) { return x->type->kind == k; }

bool ir_verify_gpu_counts(const ir_op *op, int *lo, int *hi) {
  switch (op->opc) {
  case IR_TENSOR_MAP: *lo = 2, *hi = 2 * IR_MAX_RANK; return true;
  case IR_TMA_LOAD: *lo = 6, *hi = 5 + IR_MAX_RANK; return true; /* one coordinate per map dim */
  case IR_TMA_STORE: *lo = 4, *hi = 3 + IR_MAX_RANK; return true;
  case IR_CP_ASYNC: *lo = 3, *hi = 4; return true;
  case IR_WGMMA: *lo = 4, *hi = 5; return true;
  case IR_SMEM_ATOMIC: *lo = 4, *hi = 5; return true;
  case IR_WGMMA_WAIT: *lo = 1, *hi = 1 << 30; return true;
  default: return false;
  }
}

/* Operand i must be an i32 (a slot, an index or a parity). */
static void want_i32(verifier *v, const ir_op *op, int i, const char *what) {
  if (!is_i32(op->operands[i]))
    ir_verr(v, op, "%s (operand %d) must be i32, is %s", what, i, ir_vts(v, op->operands[i]->type));
}

static bool want_kind(verifier *v, const ir_op *op, int i, ir_type_kind k, const char *what) {
  if (is_kind(op->operands[i], k)) return true;
  ir_verr(v, op, "operand %d must be %s, is %s", i, what, ir_vts(v, op->operands[i]->type));
  return false;
}

/* A shared buffer's slot and a tile agree in shape and element. */
static bool slot_matches(const ir_type *buf, const ir_type *t, bool elem_of_ptr) {
  if (t->kind != IR_TILE || t->rank != buf->rank - 1) return false;
  for (int i = 0; i < t->rank; i++)
    if (t->shape[i] != buf->shape[i + 1]) return false;
  const ir_type *e = elem_of_ptr ? (t->elem->kind == IR_PTR ? t->elem->elem : NULL) : t->elem;
  return e == buf->elem;
}

static void check_tensor_map(verifier *v, const ir_op *op, bool top) {
  int r = op->nints;
  if (!top) ir_verr(v, op, "must stand at the kernel's top level");
  if (!op->ints || r < 1 || r > IR_MAX_RANK || op->noperands != 2 * r) {
    ir_verr(v, op, "a box of rank R takes a base, R dims and R-1 strides");
    return;
  }
  if (op->results[0]->type->kind != IR_TMAP) ir_verr(v, op, "result must be tmap");
  if (!is_kind(op->operands[0], IR_PTR)) {
    ir_verr(v, op, "base must be a pointer, is %s", ir_vts(v, op->operands[0]->type));
    return;
  }
  int eb = ir_dtype_bytes(op->operands[0]->type->elem->dtype);
  for (int i = 1; i < op->noperands; i++) {
    const ir_value *x = op->operands[i];
    bool param = !x->def && x->owner && !x->owner->parent;
    if (x->type->kind != IR_SCALAR || !ir_dtype_is_int(x->type->dtype) || x->type->dtype == TK_I1)
      ir_verr(v, op, "dims and strides must be integers, operand %d is %s", i, ir_vts(v, x->type));
    else if (!param && !(x->def && x->def->opc == IR_CONST))
      ir_verr(v, op, "operand %d must be a kernel parameter or a constant (the launch builds the map)", i);
  }
  for (int i = 0; i < r; i++)
    if (op->ints[i] < 1 || op->ints[i] > 256) ir_verr(v, op, "box dim %d is %d, not in [1, 256]", i, op->ints[i]);
  int sw = (int)op->attr;
  if (sw != 0 && sw != 32 && sw != 64 && sw != 128) ir_verr(v, op, "swizzle %d is not 0, 32, 64 or 128", sw);
  else if (sw && op->ints[r - 1] * eb != sw)
    ir_verr(v, op, "inner box of %d bytes is not the %d-byte swizzle's line", op->ints[r - 1] * eb, sw);
  if (op->ints[r - 1] * eb % 16) ir_verr(v, op, "inner box of %d bytes is not a multiple of 16", op->ints[r - 1] * eb);
}

/* tma_load (tmap, buf, slot, bars, index, coords) and tma_store (tmap, buf, slot, coords). */
static void check_tma(verifier *v, const ir_op *op) {
  bool load = op->opc == IR_TMA_LOAD;
  int first = load ? 5 : 3;
  if (!want_kind(v, op, 0, IR_TMAP, "a tensor map") || !want_kind(v, op, 1, IR_SMEM, "a shared buffer") ||
      (load && !want_kind(v, op, 3, IR_MBAR, "barriers")))
    return;
  want_i32(v, op, 2, "the slot");
  if (load) want_i32(v, op, 4, "the barrier index");
  const ir_type *buf = op->operands[1]->type;
  int rank = buf->rank - 1, ncoords = op->noperands - first;
  for (int i = first; i < op->noperands; i++) want_i32(v, op, i, "a coordinate");
  const ir_op *map = op->operands[0]->def;
  if (!map || map->opc != IR_TENSOR_MAP || map->nints != ncoords || ncoords < rank) {
    ir_verr(v, op, "takes one coordinate per dim of its tensor_map, which has at least the slot's rank");
    return;
  }
  if (map->operands[0]->type->elem != buf->elem) ir_verr(v, op, "the map's and the buffer's elements differ");
  /* the slot's dims are the map's last ones; the map's others copy one element */
  for (int i = 0; i < ncoords - rank; i++)
    if (map->ints[i] != 1) ir_verr(v, op, "map dim %d has box %d, not 1, and is no dim of the slot", i, map->ints[i]);
  for (int i = 0; i < rank; i++) {
    int box = map->ints[ncoords - rank + i];
    if (buf->shape[1 + i] % box)
      ir_verr(v, op, "slot dim %d (%d) is not a multiple of the box (%d)", i, buf->shape[1 + i], box);
  }
  const ir_layout *sl = buf->layout;
  if (sl->swizzle != (int)map->attr) ir_verr(v, op, "the buffer's swizzle differs from the map's");
  if (rank >= 2 && sl->order[0] != rank - 1) ir_verr(v, op, "the buffer's fastest dim must be its last, as the map's");
}

/* The `wg` form of barrier, tma_store and the bulk ops (docs/ir.md): each consumer
 * warpgroup on its own, with named barrier 2 + n + w for warpgroup w of n (the turns
 * take 2 .. 1 + n, so n is at most 7). A tma_store copies only its warpgroup's rows:
 * boxes of 64 rows, each the rows one warpgroup holds of a #wgmma tile. */
static void check_wg(verifier *v, const ir_op *op) {
  if (!op->attr2) return;
  if (op->opc == IR_TMA_LOAD) {
    ir_verr(v, op, "a tma_load has no wg form (one thread loads the whole slot for everyone)");
    return;
  }
  if (op->attr2 != 1) {
    ir_verr(v, op, "the wg flag must be 0 or 1, is %lld", (long long)op->attr2);
    return;
  }
  const ir_op *ws = op->parent ? op->parent->parent : NULL;
  const ir_block *in = op->parent;
  while (ws && ws->opc != IR_WARP_SPEC) in = ws->parent, ws = in ? in->parent : NULL;
  if (!ws || in != ws->regions[0]) {
    ir_verr(v, op, "the wg form stands only in a warp_spec's consumer region");
    return;
  }
  if (v->f && (v->f->num_warps % 4 || v->f->num_warps < 8 || v->f->num_warps > 28)) {
    ir_verr(v, op, "the wg form needs 2 to 7 whole consumer warpgroups (warps a multiple of 4 from 8 to 28); the kernel has %d warps",
            v->f->num_warps);
    return;
  }
  if (op->opc != IR_TMA_STORE || !v->f) return;
  const ir_op *map = op->operands[0]->def;
  const ir_type *buf = op->operands[1]->type;
  int rank = buf->rank - 1, n = v->f->num_warps / 4;
  if (map && map->opc == IR_TENSOR_MAP && map->nints >= rank && rank >= 1 &&
      (map->ints[map->nints - rank] != 64 || buf->shape[1] % (64 * n)))
    ir_verr(v, op, "a wg copy takes boxes of 64 rows (a warpgroup's) from a slot of whole %d-row blocks; the box has %d rows, the slot %d",
            64 * n, map->ints[map->nints - rank], buf->shape[1]);
}

/* wgmma's operand slots: a [M, K] (with trans = [1, _]: [K, M]), b [K, N] (with
 * trans = [_, 1]: [N, K]); a register a is [M, K] and cannot be transposed. */
static void check_wgmma(verifier *v, const ir_op *op) {
  bool regs = op->noperands == 4;
  int b = regs ? 1 : 2;
  const ir_type *a = op->operands[0]->type, *bt = op->operands[b]->type,
                *acc = op->operands[b + 2]->type, *r = op->results[0]->type;
  bool ta = false, tb = false;
  if (op->ints) {
    if (op->nints != 2 || (unsigned)op->ints[0] > 1 || (unsigned)op->ints[1] > 1) {
      ir_verr(v, op, "trans must be two flags, [0|1, 0|1]");
      return;
    }
    ta = op->ints[0], tb = op->ints[1];
  }
  if (!regs) want_i32(v, op, 1, "a's slot");
  want_i32(v, op, b + 1, "b's slot");
  if (bt->kind != IR_SMEM || (!regs && a->kind != IR_SMEM) || (regs && a->kind != IR_TILE)) {
    ir_verr(v, op, "a must be a shared buffer (or a tile), b a shared buffer");
    return;
  }
  if (regs && ta) ir_verr(v, op, "a register a cannot be transposed");
  int m, k, k2, n;
  tk_dtype ae = a->dtype;
  if (regs) {
    if (a->rank != 2) { ir_verr(v, op, "a must be rank 2"); return; }
    m = a->shape[0], k = a->shape[1];
  } else {
    if (a->rank != 3) { ir_verr(v, op, "a's slots must be rank 2"); return; }
    m = a->shape[ta ? 2 : 1], k = a->shape[ta ? 1 : 2];
  }
  if (bt->rank != 3) { ir_verr(v, op, "b's slots must be rank 2"); return; }
  k2 = bt->shape[tb ? 2 : 1], n = bt->shape[tb ? 1 : 2];
  if (acc->kind != IR_TILE || acc->rank != 2 || acc->shape[0] != m || acc->shape[1] != n || k != k2)
    ir_verr(v, op, "a [%d, %d] times b [%d, %d] does not give the accumulator %s", m, k, k2, n, ir_vts(v, acc));
  if (ae != bt->dtype && !(ir_dtype_is_fp8(ae) && ir_dtype_is_fp8(bt->dtype))) /* e4m3 x e5m2 */
    ir_verr(v, op, "a and b element types differ");
  if (r != acc) ir_verr(v, op, "result must have the accumulator type %s", ir_vts(v, acc));
}

static void check_mma(verifier *v, const ir_op *op) {
  if (!want_kind(v, op, 0, IR_SMEM, "a shared buffer") || !want_kind(v, op, 2, IR_SMEM, "a shared buffer")) return;
  want_i32(v, op, 1, "a's slot");
  want_i32(v, op, 3, "b's slot");
  const ir_type *a = op->operands[0]->type, *b = op->operands[2]->type, *acc = op->operands[4]->type;
  bool tb = false;
  if (op->ints) {
    if (op->nints != 2 || op->ints[0] != 0 || (op->ints[1] != 0 && op->ints[1] != 1))
      ir_verr(v, op, "trans must be [0, 0] or [0, 1] (a is read as it is)");
    else
      tb = op->ints[1];
  }
  int bk = tb ? 2 : 1, bn = tb ? 1 : 2; /* b's slot is [K, N], or [N, K] transposed */
  if (a->rank != 3 || b->rank != 3 || acc->kind != IR_TILE || acc->rank != 2 || a->shape[1] != acc->shape[0] ||
      a->shape[2] != b->shape[bk] || b->shape[bn] != acc->shape[1])
    ir_verr(v, op, "slots of %s and %s do not multiply into %s", ir_vts(v, a), ir_vts(v, b), ir_vts(v, acc));
  if (a->dtype != b->dtype) ir_verr(v, op, "a and b element types differ");
  if (op->results[0]->type != acc) ir_verr(v, op, "result must have the accumulator type %s", ir_vts(v, acc));
}

/* smem_atomic (buf, slot, index, value[, mask]): a buffer of plain 1-D slots; i32 indices,
 * values of the slot's element (an integer or f32 for add, integers for the others) and
 * a mask, all of one tile shape. */
static void check_smem_atomic(verifier *v, const ir_op *op) {
  if (!ir_atomic_name((ir_atomic_kind)op->attr)) ir_verr(v, op, "bad kind %lld", (long long)op->attr);
  if (!want_kind(v, op, 0, IR_SMEM, "a shared buffer")) return;
  want_i32(v, op, 1, "the slot");
  const ir_type *buf = op->operands[0]->type, *ix = op->operands[2]->type, *val = op->operands[3]->type;
  if (buf->rank != 2 || buf->layout->swizzle != 0) ir_verr(v, op, "buffer %s must have plain 1-D slots", ir_vts(v, buf));
  tk_dtype e = buf->dtype;
  bool elem_ok = (ir_dtype_is_int(e) && e != TK_I1 && ir_dtype_bytes(e) >= 4) ||
                 (e == TK_F32 && op->attr == IR_ATOM_ADD);
  if (!elem_ok) ir_verr(v, op, "no shared-memory atomic '%s' on %s", ir_atomic_name((ir_atomic_kind)op->attr) ? ir_atomic_name((ir_atomic_kind)op->attr) : "?", ir_dtype_name(e));
  if (ix->kind != IR_TILE || ix->dtype != TK_I32 || ix->elem->kind != IR_SCALAR)
    ir_verr(v, op, "index must be a tile of i32, is %s", ir_vts(v, ix));
  if (val->kind != IR_TILE || val->dtype != e || val->elem->kind != IR_SCALAR || val->rank != ix->rank ||
      memcmp(val->shape, ix->shape, sizeof(int) * (size_t)ix->rank))
    ir_verr(v, op, "value must be a tile of %s shaped like %s, is %s", ir_dtype_name(e), ir_vts(v, ix), ir_vts(v, val));
  if (op->noperands == 5) {
    const ir_type *mk = op->operands[4]->type;
    if (mk->kind != IR_TILE || mk->dtype != TK_I1 || mk->rank != ix->rank ||
        memcmp(mk->shape, ix->shape, sizeof(int) * (size_t)ix->rank))
      ir_verr(v, op, "mask must be i1 shaped like %s", ir_vts(v, ix));
  }
}

/* The producer of a warp_spec runs on one thread: scalars, control flow and the ops that
 * one thread issues for all (copies, expects, waits). */
static void check_producer(verifier *v, const ir_block *blk) {
  for (const ir_op *op = blk->first; op; op = op->next) {
    for (int i = 0; i < op->nresults; i++)
      if (op->results[i]->type->kind == IR_TILE)
        ir_verr(v, op, "the producer of a warp_spec runs on one thread and holds no tiles");
    switch (op->opc) {
    case IR_BARRIER: case IR_WGMMA: case IR_MMA: case IR_MBAR_ARRIVE: case IR_CP_ASYNC: case IR_TMA_STORE:
    case IR_SMEM_LOAD: case IR_SMEM_STORE: case IR_SMEM_ATOMIC: case IR_STORE: case IR_ATOMIC: case IR_ATOMIC_CAS:
    case IR_SLOT_STORE:
      ir_verr(v, op, "cannot stand in the producer of a warp_spec (one thread)");
      break;
    default: break;
    }
    for (int r = 0; r < op->nregions; r++) check_producer(v, op->regions[r]);
  }
}

static void check_warp_spec(verifier *v, const ir_op *op, bool top) {
  if (!top) ir_verr(v, op, "must stand at the kernel's top level");
  if (op->attr < 1 || op->attr % 4) ir_verr(v, op, "producer warps must be a positive multiple of 4, are %lld", (long long)op->attr);
  if (!op->ints || op->nints != 2) {
    ir_verr(v, op, "regs must list the consumers' and the producer's register counts");
  } else {
    for (int i = 0; i < 2; i++)
      if (op->ints[i] < 24 || op->ints[i] > 256 || op->ints[i] % 8)
        ir_verr(v, op, "register count %d is not a multiple of 8 in [24, 256]", op->ints[i]);
  }
  for (int r = 0; r < 2; r++) {
    const ir_block *blk = op->regions[r];
    if (blk->nargs) ir_verr(v, op, "regions take no arguments");
    if (!blk->last || blk->last->opc != IR_YIELD || blk->last->noperands)
      ir_verr(v, op, "each region ends with an empty yield");
  }
  check_producer(v, op->regions[1]);
}

bool ir_verify_gpu_op(verifier *v, const ir_op *op, bool top) {
  const ir_type *r = op->nresults == 1 ? op->results[0]->type : NULL;
  switch (op->opc) {
  case IR_TENSOR_MAP:
    check_tensor_map(v, op, top);
    return true;
  case IR_SMEM_ALLOC:
    if (!top) ir_verr(v, op, "must stand at the kernel's top level");
    if (r->kind != IR_SMEM) ir_verr(v, op, "result must be a shared buffer, is %s", ir_vts(v, r));
    return true;
  case IR_MBAR_ALLOC:
    if (!top) ir_verr(v, op, "must stand at the kernel's top level");
    if (r->kind != IR_MBAR) ir_verr(v, op, "result must be mbar<N>, is %s", ir_vts(v, r));
    if (op->attr < 1 || op->attr > 4096) ir_verr(v, op, "arrival count %lld not in [1, 4096]", (long long)op->attr);
    return true;
  case IR_MBAR_WAIT: case IR_MBAR_ARRIVE: case IR_MBAR_EXPECT:
    if (want_kind(v, op, 0, IR_MBAR, "barriers")) want_i32(v, op, 1, "the barrier index");
    if (op->opc == IR_MBAR_WAIT) want_i32(v, op, 2, "the parity");
    if (op->opc == IR_MBAR_EXPECT && (op->attr < 1 || op->attr >= (1 << 20)))
      ir_verr(v, op, "expected bytes %lld not in [1, 2^20)", (long long)op->attr);
    return true;
  case IR_TMA_LOAD: case IR_TMA_STORE:
    check_tma(v, op);
    check_wg(v, op);
    return true;
  case IR_BULK_COMMIT:
    check_wg(v, op);
    return true;
  case IR_BULK_WAIT:
    if (op->attr < 0 || op->attr > 7) ir_verr(v, op, "pending groups %lld not in [0, 7]", (long long)op->attr);
    check_wg(v, op);
    return true;
  case IR_CP_ASYNC: {
    if (!want_kind(v, op, 0, IR_SMEM, "a shared buffer")) return true;
    want_i32(v, op, 1, "the slot");
    const ir_type *buf = op->operands[0]->type, *p = op->operands[2]->type;
    if (!slot_matches(buf, p, true)) ir_verr(v, op, "pointers %s do not fill a slot of %s", ir_vts(v, p), ir_vts(v, buf));
    if (op->noperands == 4) {
      const ir_type *mk = op->operands[3]->type;
      if (mk->kind != IR_TILE || mk->dtype != TK_I1 || mk->rank != p->rank ||
          memcmp(mk->shape, p->shape, sizeof(int) * (size_t)p->rank))
        ir_verr(v, op, "mask must be i1 shaped like %s", ir_vts(v, p));
    }
    return true;
  }
  case IR_CP_ASYNC_WAIT: case IR_WGMMA_WAIT:
    if (op->attr < 0 || op->attr > 7) ir_verr(v, op, "pending groups %lld not in [0, 7]", (long long)op->attr);
    for (int i = 0; op->opc == IR_WGMMA_WAIT && i < op->noperands; i++)
      if (op->results[i]->type != op->operands[i]->type) ir_verr(v, op, "result %d must have its operand's type", i);
    return true;
  case IR_BARRIER:
    check_wg(v, op);
    return true;
  case IR_CP_ASYNC_COMMIT: case IR_FENCE_ASYNC: case IR_WGMMA_COMMIT:
    return true;
  case IR_SMEM_STORE: case IR_SMEM_LOAD: {
    if (!want_kind(v, op, 0, IR_SMEM, "a shared buffer")) return true;
    want_i32(v, op, 1, "the slot");
    const ir_type *buf = op->operands[0]->type, *t = op->opc == IR_SMEM_LOAD ? r : op->operands[2]->type;
    if (!slot_matches(buf, t, false)) ir_verr(v, op, "tile %s is not a slot of %s", ir_vts(v, t), ir_vts(v, buf));
    return true;
  }
  case IR_SMEM_ATOMIC:
    check_smem_atomic(v, op);
    return true;
  case IR_WGMMA:
    check_wgmma(v, op);
    return true;
  case IR_MMA:
    check_mma(v, op);
    return true;
  case IR_WARP_SPEC:
    check_warp_spec(v, op, top);
    return true;
  case IR_WG_TURN:
    if (op->attr < 0 || op->attr > 2) ir_verr(v, op, "step %lld is not 0 (wait), 1 (pass) or 2 (start)", (long long)op->attr);
    /* a cycle of named barriers 2 .. 1 + n over n whole consumer warpgroups: a partial
     * warpgroup would never complete its barrier, one has no one to pass to, and the
     * hardware has 16 ids (0 and 1 are the CTA's and the consumers') */
    else if (v->f && (v->f->num_warps % 4 || v->f->num_warps < 8 || v->f->num_warps > 56))
      ir_verr(v, op, "wg_turn needs 2 to 14 whole consumer warpgroups (warps a multiple of 4 from 8 to 56); the kernel has %d warps",
              v->f->num_warps);
    return true;
  case IR_CLUSTER_RANK:
    if (r->kind != IR_SCALAR || r->dtype != TK_I32) ir_verr(v, op, "result must be i32, is %s", ir_vts(v, r));
    return true;
  case IR_CLUSTER_REDUCE: {
    const ir_type *a = op->operands[0]->type;
    if (!ir_reduce_name((ir_reduce_kind)op->attr)) ir_verr(v, op, "bad kind %lld", (long long)op->attr);
    if (a->kind != IR_SCALAR || a->dtype == TK_I1 || ir_dtype_is_fp8(a->dtype) || a != r)
      ir_verr(v, op, "operand and result must be one scalar type (not i1 or fp8), are %s and %s", ir_vts(v, a),
              ir_vts(v, r));
    /* each exchange runs once (its barrier has one phase: codegen/emit_cluster.c) */
    if (v->f && op->parent != v->f->body) ir_verr(v, op, "must be in the kernel's body, outside loops and branches");
    return true;
  }
  case IR_WARP_ANY: {
    const ir_type *a = op->operands[0]->type;
    if (a->kind != IR_TILE || a->dtype != TK_I1) ir_verr(v, op, "operand must be a tile of i1, is %s", ir_vts(v, a));
    if (r->kind != IR_SCALAR || r->dtype != TK_I1) ir_verr(v, op, "result must be i1, is %s", ir_vts(v, r));
    return true;
  }
  case IR_GRID_SIZE:
    if (op->attr < 0 || op->attr > 2) ir_verr(v, op, "axis %lld is not 0, 1 or 2", (long long)op->attr);
    if (r->kind != IR_SCALAR || r->dtype != TK_I32) ir_verr(v, op, "result must be i32, is %s", ir_vts(v, r));
    return true;
  default:
    return false;
  }
}
