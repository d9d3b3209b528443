/* Loads, stores and atomics. Each thread groups its contiguous elements into vector
 * accesses of up to 16 bytes when the pointer tile is provably contiguous and aligned
 * (axis.c); masks are handled as codegen.h says: a uniform mask predicates the vector, a
 * mask of unknown shape falls back to per-element predication when a vector is partly
 * active. A contiguous run whose alignment is unknown (a row base `x + row * stride`)
 * takes the vector path when its address turns out aligned at run time. Replicated
 * elements and scalar stores/atomics are issued by one thread only. Masks, values and
 * results follow the pointer tile's layout (converted when the IR disagrees). */
#include "cg.h"

typedef enum { UNMASKED, UNIFORM, SPLIT } mask_mode;

/* The slots of one memory op, as this thread sees them. */
typedef struct {
  tk_dtype dt;       /* the pointee */
  int bytes;         /* its storage size */
  LLVMValueRef *ptr; /* per slot */
  LLVMValueRef *mask;/* per slot, NULL when unmasked */
  LLVMValueRef *val; /* per slot: the stored value, or a load's `other` */
} access;

static LLVMValueRef and_opt(cg_ctx *c, LLVMValueRef a, LLVMValueRef b) {
  if (!a) return b;
  if (!b) return a;
  return LLVMBuildAnd(c->b, a, b, "");
}

/* The vector width for op's pointer tile under layout l: a thread's adjacent slots along
 * the last dim (the one row-major addresses follow), contiguous and <= 16 bytes;
 * *aligned tells whether the alignment is proven (else it is tested at run time). */
static int access_width(cg_ctx *c, const ir_value *ptr, const cg_layout *l, int bytes,
                        bool *aligned) {
  *aligned = true;
  if (!l->tile || l->fast != l->rank - 1) return 1;
  cg_axis ax = cg_axis_of(c, ptr);
  int spt = l->spt[l->base[l->fast]], w = 1;
  /* A power of two dividing the run a thread owns, the dim, and its slot count, so that
   * a group never straddles two runs or the dim's wrap-around. */
  while (2 * w <= spt && 2 * w <= ax.contig && 2 * w * bytes <= CG_VEC_BYTES && spt % (2 * w) == 0 &&
         l->shape[l->fast] % (2 * w) == 0 && l->ext[l->fast] % (2 * w) == 0)
    w *= 2;
  *aligned = w == 1 || ax.div % (w * bytes) == 0;
  return w;
}

/* Collects ptr/mask/value slots in the pointer's layout l; the mask also folds in
 * ownership when `owners` (replicas stay quiet). */
static access gather(cg_ctx *c, const ir_op *op, const cg_layout *l, int mask_at, int val_at,
                     bool owners) {
  access a;
  a.dt = ir_type_elem(op->operands[0]->type)->elem->dtype;
  a.bytes = ir_dtype_bytes(a.dt);
  a.ptr = cg_slots(c, l->per);
  a.val = cg_slots(c, l->per);
  a.mask = NULL;
  bool has_mask = op->noperands > mask_at;
  cg_val ptr = cg_get(c, op->operands[0]);
  cg_val mask = has_mask ? cg_get_in(c, op->operands[mask_at], l) : (cg_val){NULL, 0};
  cg_val val = op->noperands > val_at ? cg_get_in(c, op->operands[val_at], l) : (cg_val){NULL, 0};
  LLVMValueRef *own = cg_slots(c, l->per);
  bool any_owner = false;
  for (int j = 0; j < l->per; j++) {
    own[j] = !owners ? NULL
             : l->tile ? cg_layout_owner(c, l, j, -1)
                       : LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_i32(c, 0), "");
    any_owner |= own[j] != NULL;
  }
  if (has_mask || any_owner) a.mask = cg_slots(c, l->per);
  LLVMValueRef zero = LLVMConstNull(cg_dtype_type(c, a.dt));
  for (int j = 0; j < l->per; j++) {
    a.ptr[j] = ptr.v[ptr.n == 1 ? 0 : j];
    a.val[j] = val.n ? val.v[val.n == 1 ? 0 : j] : zero;
    if (a.mask) a.mask[j] = and_opt(c, has_mask ? mask.v[mask.n == 1 ? 0 : j] : NULL, own[j]);
  }
  return a;
}

static mask_mode mode_of(cg_ctx *c, const ir_op *op, int mask_at, const access *a, int w) {
  if (!a->mask) return UNMASKED;
  if (w == 1) return UNIFORM;
  bool explicit_mask = op->noperands > mask_at;
  if (!explicit_mask || cg_axis_of(c, op->operands[mask_at]).constancy >= w) return UNIFORM;
  return SPLIT;
}

/* The in-memory vector type for w elements: 32-bit lanes for narrow types, so that a
 * 16-byte f16 access is one ld.global.v4.b32. */
static LLVMTypeRef vec_type(cg_ctx *c, const access *a, int w) {
  LLVMTypeRef e = cg_mem_type(c, a->dt);
  if (a->bytes < 4 && w * a->bytes >= 4)
    return LLVMVectorType(LLVMInt32TypeInContext(c->llc), (unsigned)(w * a->bytes / 4));
  return LLVMVectorType(e, (unsigned)w);
}

static LLVMValueRef to_reg(cg_ctx *c, tk_dtype dt, LLVMValueRef x) {
  return dt == TK_I1 ? LLVMBuildICmp(c->b, LLVMIntNE, x, LLVMConstNull(LLVMTypeOf(x)), "") : x;
}

static LLVMValueRef to_mem(cg_ctx *c, tk_dtype dt, LLVMValueRef x) {
  return dt == TK_I1 ? LLVMBuildZExt(c->b, x, LLVMInt8TypeInContext(c->llc), "") : x;
}

/* w register values as the in-memory vector <w x T>. */
static LLVMValueRef pack(cg_ctx *c, const access *a, const LLVMValueRef *vals, int w) {
  LLVMValueRef v = LLVMGetUndef(LLVMVectorType(cg_mem_type(c, a->dt), (unsigned)w));
  for (int i = 0; i < w; i++)
    v = LLVMBuildInsertElement(c->b, v, to_mem(c, a->dt, vals[i]), cg_i32(c, i), "");
  return v;
}

/* The register values of a packed vector (w > 1) or of one in-memory element. */
static void unpack(cg_ctx *c, const access *a, LLVMValueRef v, int w, LLVMValueRef *out) {
  if (w == 1) {
    out[0] = to_reg(c, a->dt, v);
    return;
  }
  for (int i = 0; i < w; i++)
    out[i] = to_reg(c, a->dt, LLVMBuildExtractElement(c->b, v, cg_i32(c, i), ""));
}

/* Unpredicated access of slots [j0, j0+w). A load returns what it read, packed; a store
 * writes a->val and returns NULL. */
static LLVMValueRef access_plain(cg_ctx *c, const access *a, int j0, int w, bool store) {
  LLVMTypeRef vt = w == 1 ? cg_mem_type(c, a->dt) : vec_type(c, a, w);
  unsigned align = (unsigned)(w * a->bytes);
  if (store) {
    LLVMValueRef v = w == 1 ? to_mem(c, a->dt, a->val[j0]) : pack(c, a, a->val + j0, w);
    LLVMSetAlignment(LLVMBuildStore(c->b, LLVMBuildBitCast(c->b, v, vt, ""), a->ptr[j0]), align);
    return NULL;
  }
  LLVMValueRef v = LLVMBuildLoad2(c->b, vt, a->ptr[j0], "");
  LLVMSetAlignment(v, align);
  if (w == 1) return v;
  return LLVMBuildBitCast(c->b, v, LLVMVectorType(cg_mem_type(c, a->dt), (unsigned)w), "");
}

static void access_group(cg_ctx *c, const access *a, int j0, int w, mask_mode mode,
                         bool check_align, bool store, LLVMValueRef *out);

/* Runs the plain access of [j0, j0+w) under cond; otherwise the elements one by one under
 * their masks (alt_of) or, for a load, yields `other`. A load's paths meet in one phi of
 * the packed vector: the optimizer then can neither split the vector load into scalars
 * nor sink them into a shared block, which would undo the vectorization. */
static void access_if(cg_ctx *c, const access *a, int j0, int w, LLVMValueRef cond,
                      const access *alt_of, bool store, LLVMValueRef *out) {
  LLVMValueRef other = NULL;
  if (!store && !alt_of) other = w == 1 ? to_mem(c, a->dt, a->val[j0]) : pack(c, a, a->val + j0, w);
  LLVMBasicBlockRef from = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef yes = cg_block(c, store ? "st" : "ld");
  LLVMBasicBlockRef no = alt_of ? cg_block(c, store ? "st.each" : "ld.each") : NULL;
  LLVMBasicBlockRef join = cg_block(c, store ? "st.join" : "ld.join");
  LLVMBuildCondBr(c->b, cond, yes, no ? no : join);
  LLVMPositionBuilderAtEnd(c->b, yes);
  LLVMValueRef got = access_plain(c, a, j0, w, store);
  LLVMBasicBlockRef yes_end = LLVMGetInsertBlock(c->b);
  LLVMBuildBr(c->b, join);
  LLVMBasicBlockRef no_end = from;
  if (no) {
    LLVMPositionBuilderAtEnd(c->b, no);
    LLVMValueRef each[CG_VEC_BYTES];
    mask_mode each_mode = alt_of->mask ? UNIFORM : UNMASKED;
    for (int i = 0; i < w; i++) access_group(c, alt_of, j0 + i, 1, each_mode, false, store, each + i);
    if (!store) other = w == 1 ? to_mem(c, a->dt, each[0]) : pack(c, a, each, w);
    no_end = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, join);
  }
  LLVMPositionBuilderAtEnd(c->b, join);
  if (store) return;
  LLVMValueRef phi = LLVMBuildPhi(c->b, LLVMTypeOf(got), "");
  LLVMValueRef vals[2] = {got, other};
  LLVMBasicBlockRef bbs[2] = {yes_end, no_end};
  LLVMAddIncoming(phi, vals, bbs, 2);
  unpack(c, a, phi, w, out);
}

/* An i1: p is aligned to `bytes` (a power of two). */
static LLVMValueRef is_aligned(cg_ctx *c, LLVMValueRef p, int bytes) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c->llc);
  LLVMValueRef low = LLVMBuildAnd(c->b, LLVMBuildPtrToInt(c->b, p, i64, ""),
                                  LLVMConstInt(i64, (unsigned long long)bytes - 1, false), "");
  return LLVMBuildICmp(c->b, LLVMIntEQ, low, LLVMConstNull(i64), "aligned");
}

/* Slots [j0, j0+w). A vector access runs when it is known to be safe; when that depends on
 * the lanes' masks (SPLIT) or on the address's alignment (check_align), it runs under
 * that test, and each element on its own (predicated by its mask) otherwise. */
static void access_group(cg_ctx *c, const access *a, int j0, int w, mask_mode mode,
                         bool check_align, bool store, LLVMValueRef *out) {
  if (w > 1 && (mode == SPLIT || check_align)) {
    LLVMValueRef cond = NULL;
    if (mode == UNIFORM) cond = a->mask[j0];
    for (int i = 0; mode == SPLIT && i < w; i++) cond = and_opt(c, cond, a->mask[j0 + i]);
    if (check_align) cond = and_opt(c, cond, is_aligned(c, a->ptr[j0], w * a->bytes));
    access_if(c, a, j0, w, cond, a, store, out);
  } else if (mode == UNMASKED) {
    LLVMValueRef v = access_plain(c, a, j0, w, store);
    if (!store) unpack(c, a, v, w, out);
  } else {
    access_if(c, a, j0, w, a->mask[j0], NULL, store, out);
  }
}

static void emit_load_store(cg_ctx *c, const ir_op *op, bool store) {
  const ir_value *ptr = op->operands[0];
  cg_layout l = cg_layout_of(c, ptr->type);
  int mask_at = store ? 2 : 1, val_at = store ? 1 : 2;
  access a = gather(c, op, &l, mask_at, val_at, store);
  bool aligned;
  int w = access_width(c, ptr, &l, a.bytes, &aligned);
  mask_mode mode = mode_of(c, op, mask_at, &a, w);
  LLVMValueRef *out = store ? NULL : cg_slots(c, l.per);
  for (int j0 = 0; j0 < l.per; j0 += w)
    access_group(c, &a, j0, w, mode, !aligned, store, out ? out + j0 : NULL);
  if (store) return;
  cg_layout rl = cg_layout_of(c, op->results[0]->type);
  cg_val r = cg_relayout(c, (cg_val){out, l.per}, &l, &rl);
  cg_set(c, op->results[0], r.v, r.n);
}

/* ---- atomics ---- */

static LLVMAtomicRMWBinOp rmw_op(ir_atomic_kind k, tk_dtype dt) {
  bool fl = ir_dtype_is_float(dt), sg = ir_dtype_is_signed(dt);
  switch (k) {
  case IR_ATOM_ADD: return fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
  case IR_ATOM_MAX: return fl ? LLVMAtomicRMWBinOpFMax : sg ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax;
  case IR_ATOM_MIN: return fl ? LLVMAtomicRMWBinOpFMin : sg ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
  case IR_ATOM_AND: return LLVMAtomicRMWBinOpAnd;
  case IR_ATOM_OR: return LLVMAtomicRMWBinOpOr;
  case IR_ATOM_XOR: return LLVMAtomicRMWBinOpXor;
  case IR_ATOM_XCHG: return LLVMAtomicRMWBinOpXchg;
  }
  SU_UNREACHABLE();
}

/* One element's atomic: the old value. CAS compares bit patterns (floats as integers). */
static LLVMValueRef atomic1(cg_ctx *c, const ir_op *op, tk_dtype dt, LLVMValueRef p,
                            LLVMValueRef v, LLVMValueRef cmp) {
  LLVMAtomicOrdering mo = LLVMAtomicOrderingMonotonic;
  v = to_mem(c, dt, v);
  if (op->opc == IR_ATOMIC)
    return to_reg(c, dt, LLVMBuildAtomicRMW(c->b, rmw_op((ir_atomic_kind)op->attr, dt), p, v, mo, false));
  LLVMTypeRef it = LLVMIntTypeInContext(c->llc, (unsigned)ir_dtype_bytes(dt) * 8);
  cmp = LLVMBuildBitCast(c->b, to_mem(c, dt, cmp), it, "");
  v = LLVMBuildBitCast(c->b, v, it, "");
  LLVMValueRef pair = LLVMBuildAtomicCmpXchg(c->b, p, cmp, v, mo, mo, false);
  LLVMValueRef old = LLVMBuildExtractValue(c->b, pair, 0, "");
  return to_reg(c, dt, LLVMBuildBitCast(c->b, old, cg_mem_type(c, dt), ""));
}

/* Runs atomic1 under cond (when set); the old value is 0 where it did not run. */
static LLVMValueRef atomic_if(cg_ctx *c, const ir_op *op, tk_dtype dt, LLVMValueRef cond,
                              LLVMValueRef p, LLVMValueRef v, LLVMValueRef cmp) {
  if (!cond) return atomic1(c, op, dt, p, v, cmp);
  LLVMBasicBlockRef from = LLVMGetInsertBlock(c->b);
  LLVMBasicBlockRef yes = cg_block(c, "atom"), join = cg_block(c, "atom.join");
  LLVMBuildCondBr(c->b, cond, yes, join);
  LLVMPositionBuilderAtEnd(c->b, yes);
  LLVMValueRef old = atomic1(c, op, dt, p, v, cmp);
  LLVMBasicBlockRef yes_end = LLVMGetInsertBlock(c->b);
  LLVMBuildBr(c->b, join);
  LLVMPositionBuilderAtEnd(c->b, join);
  LLVMValueRef phi = LLVMBuildPhi(c->b, LLVMTypeOf(old), "");
  LLVMValueRef vals[2] = {old, LLVMConstNull(LLVMTypeOf(old))};
  LLVMBasicBlockRef bbs[2] = {yes_end, from};
  LLVMAddIncoming(phi, vals, bbs, 2);
  return phi;
}

/* Thread 0's value, seen by every thread (through shared memory). */
static LLVMValueRef broadcast0(cg_ctx *c, LLVMValueRef x) {
  LLVMValueRef m = cg_to_smem(c, x);
  LLVMValueRef smem = cg_smem_take(c, (int)LLVMABISizeOfType(LLVMGetModuleDataLayout(c->mod), LLVMTypeOf(m)));
  LLVMValueRef is0 = LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_i32(c, 0), "");
  LLVMBasicBlockRef yes = cg_block(c, "bcast"), join = cg_block(c, "bcast.join");
  LLVMBuildCondBr(c->b, is0, yes, join);
  LLVMPositionBuilderAtEnd(c->b, yes);
  LLVMBuildStore(c->b, m, smem);
  LLVMBuildBr(c->b, join);
  LLVMPositionBuilderAtEnd(c->b, join);
  cg_barrier(c);
  return cg_from_smem(c, LLVMBuildLoad2(c->b, LLVMTypeOf(m), smem, ""), LLVMTypeOf(x));
}

static void emit_atomic(cg_ctx *c, const ir_op *op) {
  const ir_value *ptr = op->operands[0];
  tk_dtype dt = ir_type_elem(ptr->type)->elem->dtype;
  cg_layout l = cg_layout_of(c, ptr->type);
  bool cas = op->opc == IR_ATOMIC_CAS;
  cg_val p = cg_get(c, ptr);
  cg_val mask = !cas && op->noperands > 2 ? cg_get_in(c, op->operands[2], &l) : (cg_val){NULL, 0};
  cg_val val = cg_get_in(c, op->operands[cas ? 2 : 1], &l);
  cg_val cmp = cas ? cg_get_in(c, op->operands[1], &l) : (cg_val){NULL, 0};
  LLVMValueRef *out = cg_slots(c, l.per);
  for (int j = 0; j < l.per; j++) {
    LLVMValueRef owner = l.tile ? cg_layout_owner(c, &l, j, -1)
                                : LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_i32(c, 0), "");
    LLVMValueRef m = mask.n ? mask.v[mask.n == 1 ? 0 : j] : NULL;
    LLVMValueRef v = val.v[val.n == 1 ? 0 : j];
    LLVMValueRef k = cas ? cmp.v[cmp.n == 1 ? 0 : j] : NULL;
    out[j] = atomic_if(c, op, dt, and_opt(c, m, owner), p.v[p.n == 1 ? 0 : j], v, k);
  }
  if (!l.tile) out[0] = broadcast0(c, out[0]);
  cg_layout rl = cg_layout_of(c, op->results[0]->type);
  cg_val r = cg_relayout(c, (cg_val){out, l.per}, &l, &rl);
  cg_set(c, op->results[0], r.v, r.n);
}

void cg_emit_memory(cg_ctx *c, const ir_op *op) {
  switch (op->opc) {
  case IR_LOAD: emit_load_store(c, op, false); return;
  case IR_STORE: emit_load_store(c, op, true); return;
  case IR_ATOMIC: case IR_ATOMIC_CAS: emit_atomic(c, op); return;
  default: SU_UNREACHABLE();
  }
}
