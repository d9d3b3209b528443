/* The GPU level's memory ops: shared buffers (smem_alloc) and their swizzled addressing,
 * mbarriers (mbar_alloc, mbar_wait, mbar_arrive, mbar_expect), copies into buffers
 * (tma_load, cp_async and its commit/wait, smem_store, smem_atomic) and out of them (smem_load,
 * tma_store and its bulk commit/wait), and the barrier and async-proxy fence that order
 * them. docs/ir.md, "GPU level", is the contract
 * each follows. Ops that one thread issues for the CTA run on thread 0, or on the one
 * thread of a warp_spec producer. */
#include "cg.h"

enum { UNIT = 16 };

static LLVMValueRef byte_at(cg_ctx *c, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->llc), base, &off, 1, "");
}

/* ---- control helpers ---- */

LLVMBasicBlockRef cg_if_begin(cg_ctx *c, LLVMValueRef cond) {
  LLVMBasicBlockRef yes = cg_block(c, "if.then"), join = cg_block(c, "if.join");
  LLVMBuildCondBr(c->b, cond, yes, join);
  LLVMPositionBuilderAtEnd(c->b, yes);
  return join;
}

void cg_if_end(cg_ctx *c, LLVMBasicBlockRef join) {
  LLVMBuildBr(c->b, join);
  LLVMPositionBuilderAtEnd(c->b, join);
}

/* The thread that issues an op for the whole CTA: thread 0, or anyone in a region that runs
 * on one thread (NULL: no test needed). */
static LLVMValueRef elected(cg_ctx *c) {
  if (c->single_thread) return NULL;
  return LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_i32(c, 0), "");
}

/* The same for an op of the wg form (op->attr2): the first thread of each warpgroup. */
static LLVMValueRef elected_for(cg_ctx *c, const ir_op *op) {
  if (!op->attr2 || c->single_thread) return elected(c);
  return LLVMBuildICmp(c->b, LLVMIntEQ, LLVMBuildAnd(c->b, c->tid, cg_i32(c, 127), ""), cg_i32(c, 0), "");
}

static LLVMValueRef warpgroup(cg_ctx *c) { return LLVMBuildLShr(c->b, c->tid, cg_i32(c, 7), "wg"); }

/* barrier: the CTA's (or its warp_spec region's); the wg form, the 128 threads of this
 * warpgroup on named barrier 2 + n + w (2 .. 1 + n are the turns'). */
static void emit_barrier(cg_ctx *c, const ir_op *op) {
  if (!op->attr2) {
    cg_barrier(c);
    return;
  }
  int n = c->threads / 128;
  LLVMValueRef args[2] = {LLVMBuildAdd(c->b, warpgroup(c), cg_i32(c, 2 + n), ""), cg_i32(c, 128)};
  cg_intrinsic(c, "llvm.nvvm.barrier.sync.cnt", NULL, 0, args, 2);
}

/* ---- shared buffers ---- */

LLVMValueRef cg_slot_base(cg_ctx *c, const ir_value *buf, LLVMValueRef slot) {
  LLVMValueRef off = LLVMBuildMul(c->b, slot, cg_i32(c, ir_smem_slot_bytes(buf->type)), "");
  return byte_at(c, cg_slot(c, buf, 0), off);
}

LLVMValueRef cg_slot_offset(cg_ctx *c, const ir_type *buf, const LLVMValueRef *idx) {
  const ir_layout *sl = buf->layout;
  int rank = buf->rank - 1, eb = ir_dtype_bytes(buf->dtype);
  const int *shape = buf->shape + 1;
  if (sl->swizzle == 0) {
    LLVMValueRef off = cg_i32(c, 0);
    int64_t stride = eb;
    for (int k = 0; k < rank; k++) {
      int d = sl->order[k];
      off = LLVMBuildAdd(c->b, off, LLVMBuildMul(c->b, idx[d], cg_i32(c, stride), ""), "");
      stride *= shape[d];
    }
    return off;
  }
  SU_ASSERT(rank == 2);
  int f = sl->order[0], s = sl->order[1], w = sl->swizzle, e = w / eb;
  LLVMValueRef chunk = LLVMBuildUDiv(c->b, idx[f], cg_i32(c, e), "");
  LLVMValueRef in = LLVMBuildURem(c->b, idx[f], cg_i32(c, e), "");
  LLVMValueRef l = LLVMBuildMul(c->b, chunk, cg_i32(c, (int64_t)shape[s] * w), "");
  l = LLVMBuildAdd(c->b, l, LLVMBuildMul(c->b, idx[s], cg_i32(c, w), ""), "");
  l = LLVMBuildAdd(c->b, l, LLVMBuildMul(c->b, in, cg_i32(c, eb), ""), "");
  /* the 16-byte unit XOR the row within the swizzle's period (docs/ir.md) */
  LLVMValueRef row = LLVMBuildAnd(c->b, LLVMBuildLShr(c->b, l, cg_i32(c, 7), ""), cg_i32(c, w / UNIT - 1), "");
  return LLVMBuildXor(c->b, l, LLVMBuildShl(c->b, row, cg_i32(c, 4), ""), "");
}

/* The address of the element at slot j of tile layout l in slot `base` of buffer type buf. */
static LLVMValueRef elem_addr(cg_ctx *c, const ir_type *buf, LLVMValueRef base, const cg_layout *l, int j) {
  LLVMValueRef idx[IR_MAX_RANK];
  for (int i = 0; i < l->rank; i++) idx[i] = cg_layout_coord(c, l, j, i);
  return byte_at(c, base, cg_slot_offset(c, buf, idx));
}

/* How many adjacent slots of l (along the tile's last dim) one access may move: they must
 * lie in one 16-byte unit of the slot, which holds when the last dim is the slot's
 * contiguous one, rows are whole units and the group is aligned (cg_layout_group). */
static int slot_vector(const ir_type *buf, const cg_layout *l, int limit) {
  int rank = buf->rank - 1, eb = ir_dtype_bytes(buf->dtype);
  if (!l->tile || buf->layout->order[0] != rank - 1 || (buf->shape[rank] * eb) % UNIT) return 1;
  int w = cg_layout_group(l, UNIT / eb);
  while (w > limit) w /= 2;
  return w;
}

static void emit_smem_alloc(cg_ctx *c, const ir_op *op) {
  const ir_type *t = op->results[0]->type;
  LLVMValueRef *s = cg_slots(c, 1);
  s[0] = cg_smem_buffer(c, ir_smem_buffer_bytes(t));
  cg_set(c, op->results[0], s, 1);
}

/* x, opaque to LLVM: what is computed from it is computed where it is used. A store of a
 * whole tile computes an address per slot from the thread's index alone; in a loop (the
 * epilogue of a persistent kernel) LLVM would hoist all of them out and keep them live
 * across the main loop, beside the accumulators (ptxas then spills them). */
static LLVMValueRef opaque(cg_ctx *c, LLVMValueRef x) {
  return cg_asm(c, LLVMTypeOf(x), "mov.b32 $0, $1;", "=r,r", &x, 1);
}

static void emit_smem_store(cg_ctx *c, const ir_op *op) {
  const ir_value *buf = op->operands[0], *v = op->operands[2];
  LLVMValueRef tid = c->tid;
  c->tid = opaque(c, tid);
  LLVMValueRef base = cg_slot_base(c, buf, cg_slot(c, op->operands[1], 0));
  cg_layout l = cg_layout_of(c, v->type);
  cg_val x = cg_get(c, v);
  LLVMTypeRef et = cg_mem_type(c, buf->type->dtype);
  int eb = ir_dtype_bytes(buf->type->dtype), w = slot_vector(buf->type, &l, UNIT / eb);
  for (int j = 0; j < l.per; j += w) {
    LLVMValueRef val;
    if (w == 1) {
      val = cg_to_smem(c, x.v[x.n == 1 ? 0 : j]);
    } else {
      val = LLVMGetUndef(LLVMVectorType(et, (unsigned)w));
      for (int e = 0; e < w; e++)
        val = LLVMBuildInsertElement(c->b, val, cg_to_smem(c, x.v[x.n == 1 ? 0 : j + e]), cg_i32(c, e), "");
    }
    LLVMSetAlignment(LLVMBuildStore(c->b, val, elem_addr(c, buf->type, base, &l, j)), (unsigned)(w * eb));
  }
  c->tid = tid;
}

static void emit_smem_load(cg_ctx *c, const ir_op *op) {
  const ir_value *buf = op->operands[0], *r = op->results[0];
  LLVMValueRef base = cg_slot_base(c, buf, cg_slot(c, op->operands[1], 0));
  cg_layout l = cg_layout_of(c, r->type);
  LLVMTypeRef et = cg_mem_type(c, buf->type->dtype), reg = cg_type(c, r->type);
  int eb = ir_dtype_bytes(buf->type->dtype), w = slot_vector(buf->type, &l, UNIT / eb);
  LLVMValueRef *out = cg_slots(c, l.per);
  for (int j = 0; j < l.per; j += w) {
    LLVMTypeRef vt = w == 1 ? et : LLVMVectorType(et, (unsigned)w);
    LLVMValueRef v = LLVMBuildLoad2(c->b, vt, elem_addr(c, buf->type, base, &l, j), "");
    LLVMSetAlignment(v, (unsigned)(w * eb));
    for (int e = 0; e < w; e++)
      out[j + e] = cg_from_smem(c, w == 1 ? v : LLVMBuildExtractElement(c->b, v, cg_i32(c, e), ""), reg);
  }
  cg_set(c, r, out, l.per);
}

/* smem_atomic: each element's atomic on slot[index], issued by its owner (a replica would
 * apply it twice) where the mask holds; a branch around each, which ptxas predicates. */
static void emit_smem_atomic(cg_ctx *c, const ir_op *op) {
  const ir_value *buf = op->operands[0], *ix = op->operands[2];
  LLVMValueRef base = cg_slot_base(c, buf, cg_slot(c, op->operands[1], 0));
  cg_layout l = cg_layout_of(c, ix->type);
  cg_val idx = cg_get(c, ix), val = cg_get_in(c, op->operands[3], &l);
  cg_val mask = op->noperands > 4 ? cg_get_in(c, op->operands[4], &l) : (cg_val){NULL, 0};
  tk_dtype dt = buf->type->dtype;
  bool fl = ir_dtype_is_float(dt), sg = ir_dtype_is_signed(dt);
  LLVMAtomicRMWBinOp rmw = LLVMAtomicRMWBinOpAdd;
  switch ((ir_atomic_kind)op->attr) {
  case IR_ATOM_ADD: rmw = fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
  case IR_ATOM_MAX: rmw = sg ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax; break;
  case IR_ATOM_MIN: rmw = sg ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin; break;
  case IR_ATOM_AND: rmw = LLVMAtomicRMWBinOpAnd; break;
  case IR_ATOM_OR: rmw = LLVMAtomicRMWBinOpOr; break;
  case IR_ATOM_XOR: rmw = LLVMAtomicRMWBinOpXor; break;
  case IR_ATOM_XCHG: rmw = LLVMAtomicRMWBinOpXchg; break;
  }
  for (int j = 0; j < l.per; j++) {
    LLVMValueRef own = l.tile ? cg_layout_owner(c, &l, j, -1) : NULL;
    LLVMValueRef m = mask.n ? mask.v[mask.n == 1 ? 0 : j] : NULL;
    LLVMValueRef cond = m && own ? LLVMBuildAnd(c->b, m, own, "") : m ? m : own;
    LLVMValueRef k = idx.v[idx.n == 1 ? 0 : j];
    LLVMValueRef at = byte_at(c, base, cg_slot_offset(c, buf->type, &k));
    LLVMBasicBlockRef join = cond ? cg_if_begin(c, cond) : NULL;
    LLVMBuildAtomicRMW(c->b, rmw, at, val.v[val.n == 1 ? 0 : j], LLVMAtomicOrderingMonotonic, false);
    if (join) cg_if_end(c, join);
  }
}

/* ---- cp.async ---- */

static void emit_cp_async(cg_ctx *c, const ir_op *op) {
  const ir_value *buf = op->operands[0], *ptrs = op->operands[2];
  LLVMValueRef base = cg_slot_base(c, buf, cg_slot(c, op->operands[1], 0));
  cg_layout l = cg_layout_of(c, ptrs->type);
  cg_val p = cg_get(c, ptrs);
  cg_val mask = op->noperands > 3 ? cg_get_in(c, op->operands[3], &l) : (cg_val){NULL, 0};
  int eb = ir_dtype_bytes(buf->type->dtype);
  int w = cg_access_width(c, ptrs, op->noperands > 3 ? op->operands[3] : NULL, &l, eb);
  int sw = slot_vector(buf->type, &l, UNIT / eb);
  if (w > sw) w = sw;
  LLVMTypeRef et = cg_mem_type(c, buf->type->dtype);
  for (int j = 0; j < l.per; j += w) {
    LLVMValueRef dst = elem_addr(c, buf->type, base, &l, j);
    LLVMValueRef src = p.v[p.n == 1 ? 0 : j];
    LLVMValueRef m = mask.n ? mask.v[mask.n == 1 ? 0 : j] : NULL;
    int bytes = w * eb;
    if (bytes >= 4) {
      /* src-size 0 reads nothing and fills the destination with zeros */
      LLVMValueRef size = m ? LLVMBuildSelect(c->b, m, cg_i32(c, bytes), cg_i32(c, 0), "") : cg_i32(c, bytes);
      char name[64];
      snprintf(name, sizeof name, "llvm.nvvm.cp.async.%s.shared.global.%d.s", bytes == 16 ? "cg" : "ca", bytes);
      LLVMValueRef args[3] = {dst, src, size};
      cg_intrinsic(c, name, NULL, 0, args, 3);
      continue;
    }
    /* Narrower than cp.async can copy: a synchronous (masked) load and store of the w
     * elements (one access: cg_access_width made them contiguous, aligned and alike in
     * mask), done before the wait that makes the slot visible anyway. */
    LLVMTypeRef vt = w == 1 ? et : LLVMVectorType(et, (unsigned)w);
    LLVMValueRef v;
    if (m) {
      LLVMBasicBlockRef from = LLVMGetInsertBlock(c->b);
      LLVMBasicBlockRef join = cg_if_begin(c, m);
      LLVMValueRef got = LLVMBuildLoad2(c->b, vt, src, "");
      LLVMSetAlignment(got, (unsigned)bytes);
      LLVMBasicBlockRef got_bb = LLVMGetInsertBlock(c->b);
      cg_if_end(c, join);
      v = LLVMBuildPhi(c->b, vt, "");
      LLVMValueRef vals[2] = {got, LLVMConstNull(vt)};
      LLVMBasicBlockRef bbs[2] = {got_bb, from};
      LLVMAddIncoming(v, vals, bbs, 2);
    } else {
      v = LLVMBuildLoad2(c->b, vt, src, "");
      LLVMSetAlignment(v, (unsigned)bytes);
    }
    LLVMSetAlignment(LLVMBuildStore(c->b, v, dst), (unsigned)bytes);
  }
}

/* ---- mbarriers ---- */

/* The 32-bit shared address of barrier idx of bars. */
static LLVMValueRef bar_addr(cg_ctx *c, const ir_value *bars, const ir_value *idx) {
  LLVMValueRef off = LLVMBuildMul(c->b, cg_slot(c, idx, 0), cg_i32(c, IR_MBAR_BYTES), "");
  return cg_shared_addr(c, byte_at(c, cg_slot(c, bars, 0), off));
}

static LLVMValueRef bar_at(cg_ctx *c, const ir_op *op) { return bar_addr(c, op->operands[0], op->operands[1]); }

static void emit_mbar_alloc(cg_ctx *c, const ir_op *op) {
  int n = op->results[0]->type->shape[0];
  LLVMValueRef *s = cg_slots(c, 1);
  s[0] = cg_smem_buffer(c, ir_smem_buffer_bytes(op->results[0]->type));
  cg_set(c, op->results[0], s, 1);
  LLVMValueRef one = elected(c);
  LLVMBasicBlockRef join = one ? cg_if_begin(c, one) : NULL;
  for (int i = 0; i < n; i++) {
    LLVMValueRef args[2] = {byte_at(c, s[0], cg_i32(c, (int64_t)i * IR_MBAR_BYTES)), cg_i32(c, op->attr)};
    cg_intrinsic(c, "llvm.nvvm.mbarrier.init.shared", NULL, 0, args, 2);
  }
  cg_ptx_mbar_init_fence(c);
  if (join) cg_if_end(c, join);
  cg_barrier(c);
}

static void emit_mbar_wait(cg_ctx *c, const ir_op *op) {
  LLVMValueRef bar = bar_at(c, op), parity = cg_slot(c, op->operands[2], 0);
  LLVMBasicBlockRef loop = cg_block(c, "mbar.wait"), done = cg_block(c, "mbar.done");
  LLVMBuildBr(c->b, loop);
  LLVMPositionBuilderAtEnd(c->b, loop);
  LLVMValueRef ok = cg_ptx_mbar_try_wait(c, bar, parity);
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntNE, ok, cg_i32(c, 0), ""), done, loop);
  LLVMPositionBuilderAtEnd(c->b, done);
}

static void emit_mbar_arrive(cg_ctx *c, const ir_op *op) {
  LLVMValueRef bar = bar_at(c, op);
  LLVMBasicBlockRef join = NULL;
  if (!c->single_thread) {
    LLVMValueRef first = LLVMBuildICmp(c->b, LLVMIntEQ,
                                       LLVMBuildAnd(c->b, c->tid, cg_i32(c, 4 * CG_WARP - 1), ""),
                                       cg_i32(c, 0), "");
    join = cg_if_begin(c, first);
  }
  LLVMValueRef p = LLVMBuildIntToPtr(c->b, bar, LLVMPointerTypeInContext(c->llc, CG_SHARED_AS), "");
  cg_intrinsic(c, "llvm.nvvm.mbarrier.arrive.shared", NULL, 0, &p, 1);
  if (join) cg_if_end(c, join);
}

static void emit_mbar_expect(cg_ctx *c, const ir_op *op) {
  LLVMValueRef bar = bar_at(c, op);
  LLVMValueRef one = elected(c);
  LLVMBasicBlockRef join = one ? cg_if_begin(c, one) : NULL;
  cg_ptx_mbar_expect(c, bar, (int)op->attr);
  if (join) cg_if_end(c, join);
}

/* ---- TMA ---- */

/* One box copy per box of the slot: box (i, j, ...) lands where the slot's layout puts its
 * first element; with a swizzle, that is the start of a chunk row (the box's inner extent
 * is one chunk), and the TMA engine's address-based swizzle matches docs/ir.md's formula
 * because slots start at 1024-byte boundaries. */
static void emit_tma(cg_ctx *c, const ir_op *op) {
  bool load = op->opc == IR_TMA_LOAD;
  int first = load ? 5 : 3;
  const ir_value *map = op->operands[0], *buf = op->operands[1];
  const ir_op *def = map->def;
  int rank = buf->type->rank - 1, ncoords = op->noperands - first, outer = ncoords - rank;
  LLVMValueRef base = cg_slot_base(c, buf, cg_slot(c, op->operands[2], 0));
  LLVMValueRef bar = load ? bar_addr(c, op->operands[3], op->operands[4]) : NULL;
  LLVMValueRef one = elected_for(c, op);
  /* the wg form: warpgroup w of n copies the boxes of rows w, w + n, ... (64 rows each,
   * the rows it holds of each #wgmma block: the verifier checked the box) */
  int groups = op->attr2 ? c->threads / 128 : 1;
  LLVMValueRef wg = op->attr2 ? warpgroup(c) : NULL;
  LLVMBasicBlockRef join = one ? cg_if_begin(c, one) : NULL;
  int nbox[IR_MAX_RANK], total = 1;
  for (int i = 0; i < rank; i++) {
    nbox[i] = buf->type->shape[1 + i] / def->ints[outer + i];
    if (i == 0) nbox[i] /= groups;
    total *= nbox[i];
  }
  for (int b = 0; b < total; b++) {
    int rem = b;
    LLVMValueRef at[IR_MAX_RANK], inner_first[IR_MAX_RANK];
    for (int i = rank - 1; i >= 0; i--) {
      int k = rem % nbox[i];
      rem /= nbox[i];
      at[i] = cg_i32(c, (int64_t)k * (i == 0 ? groups : 1) * def->ints[outer + i]);
      if (i == 0 && wg) at[i] = LLVMBuildAdd(c->b, at[i], LLVMBuildMul(c->b, wg, cg_i32(c, def->ints[outer]), ""), "");
    }
    /* the map's dims innermost first: the slot's (moved to this box), then the others */
    for (int i = 0; i < ncoords; i++) {
      int d = ncoords - 1 - i;
      LLVMValueRef coord = cg_slot(c, op->operands[first + d], 0);
      inner_first[i] = d >= outer ? LLVMBuildAdd(c->b, coord, at[d - outer], "") : coord;
    }
    LLVMValueRef box = cg_shared_addr(c, byte_at(c, base, cg_slot_offset(c, buf->type, at)));
    if (load)
      cg_ptx_tma_load(c, ncoords, box, cg_slot(c, map, 0), bar, inner_first);
    else
      cg_ptx_tma_store(c, ncoords, box, cg_slot(c, map, 0), inner_first);
  }
  if (join) cg_if_end(c, join);
}

/* commit and wait of the issuing thread's bulk groups: the thread that issued them */
static void emit_bulk(cg_ctx *c, const ir_op *op) {
  LLVMValueRef one = elected_for(c, op);
  LLVMBasicBlockRef join = one ? cg_if_begin(c, one) : NULL;
  if (op->opc == IR_BULK_COMMIT)
    cg_ptx_bulk_commit(c);
  else
    cg_ptx_bulk_wait(c, (int)op->attr);
  if (join) cg_if_end(c, join);
}

/* The consumer warpgroups (threads 128w .. 128w + 127, w < n) taking turns, FA3's
 * ping-pong generalized to a cycle: warpgroup w waits on named barrier 2 + w, which
 * completes when its predecessor (w - 1 mod n) has arrived on it (256 threads: 128 waiting,
 * 128 arriving), and passes the turn by arriving on its successor's. The last warpgroup
 * starts by arriving on 0's. Other threads (a producer) do nothing: the ops stand in the
 * consumers' code, but the start may stand before the split. */
static void emit_turn(cg_ctx *c, const ir_op *op) {
  int n = c->threads / 128;
  LLVMValueRef wg = warpgroup(c);
  if (op->attr == 2) {
    LLVMBasicBlockRef join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, wg, cg_i32(c, n - 1), ""));
    cg_ptx_bar_arrive(c, cg_i32(c, 2), 256);
    cg_if_end(c, join);
    return;
  }
  if (op->attr == 0) {
    LLVMValueRef args[2] = {LLVMBuildAdd(c->b, wg, cg_i32(c, 2), ""), cg_i32(c, 256)};
    cg_intrinsic(c, "llvm.nvvm.barrier.sync.cnt", NULL, 0, args, 2);
    c->in_turn = true;
    return;
  }
  c->in_turn = false;
  LLVMValueRef next = LLVMBuildAdd(c->b, wg, cg_i32(c, 1), "");
  next = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, next, cg_i32(c, n), ""), cg_i32(c, 0), next, "");
  cg_ptx_bar_arrive(c, LLVMBuildAdd(c->b, next, cg_i32(c, 2), ""), 256);
}

void cg_emit_async(cg_ctx *c, const ir_op *op) {
  switch (op->opc) {
  case IR_SMEM_ALLOC: emit_smem_alloc(c, op); return;
  case IR_SMEM_STORE: emit_smem_store(c, op); return;
  case IR_SMEM_LOAD: emit_smem_load(c, op); return;
  case IR_SMEM_ATOMIC: emit_smem_atomic(c, op); return;
  case IR_MBAR_ALLOC: emit_mbar_alloc(c, op); return;
  case IR_MBAR_WAIT: emit_mbar_wait(c, op); return;
  case IR_MBAR_ARRIVE: emit_mbar_arrive(c, op); return;
  case IR_MBAR_EXPECT: emit_mbar_expect(c, op); return;
  case IR_TMA_LOAD: case IR_TMA_STORE: emit_tma(c, op); return;
  case IR_BULK_COMMIT: case IR_BULK_WAIT: emit_bulk(c, op); return;
  case IR_CP_ASYNC: emit_cp_async(c, op); return;
  case IR_CP_ASYNC_COMMIT: cg_intrinsic(c, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0); return;
  case IR_CP_ASYNC_WAIT: {
    LLVMValueRef n = cg_i32(c, op->attr);
    cg_intrinsic(c, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
    return;
  }
  case IR_BARRIER: emit_barrier(c, op); return;
  case IR_FENCE_ASYNC: cg_ptx_fence_async(c); return;
  case IR_WG_TURN: emit_turn(c, op); return;
  default: SU_UNREACHABLE();
  }
}
