/* Loads, stores and atomics. Each thread groups its contiguous elements into vector
 * accesses of up to 16 bytes when the pointer tile is provably contiguous and aligned
 * (axis.c, from the kernel's parameter facts: nothing is tested at run time), and, for a
 * masked access, when the mask is provably constant over the group. A masked group is one
 * predicated PTX access (`@p ld.global.v4.b32`, as Triton emits), written as inline asm
 * because LLVM would turn a conditional access into branches; masked-off lanes are never
 * touched and a load yields `other` there. An access with a cache or eviction hint is
 * inline PTX too (`ld.global.cg.v4.b32`, `st.global.L1::evict_first.b32`), masked or not. Replicated elements and scalar stores/atomics
 * are issued by one thread only. Masks, values and results follow the pointer tile's
 * layout (converted when the IR disagrees). */
#include "cg.h"

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

/* The vector width for pointer tile ptr under layout l: a thread's adjacent slots along
 * the last dim (the one row-major addresses follow), contiguous, aligned to the whole
 * vector, <= 16 bytes and, with a mask, inside one run over which the mask is constant. */
int cg_access_width(cg_ctx *c, const ir_value *ptr, const ir_value *mask, const cg_layout *l, int bytes) {
  cg_axis ax = cg_axis_of(c, ptr);
  int mask_runs = mask ? cg_axis_of(c, mask).constancy : 1 << 30;
  int w = cg_layout_group(l, ax.contig < mask_runs ? ax.contig : mask_runs);
  while (w > 1 && (w * bytes > CG_VEC_BYTES || ax.div % (w * bytes))) w /= 2;
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

/* w register values as their in-memory form: one element, or the vector <w x T>. */
static LLVMValueRef pack(cg_ctx *c, const access *a, const LLVMValueRef *vals, int w) {
  if (w == 1) return to_mem(c, a->dt, vals[0]);
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
    LLVMValueRef v = pack(c, a, a->val + j0, w);
    LLVMSetAlignment(LLVMBuildStore(c->b, LLVMBuildBitCast(c->b, v, vt, ""), a->ptr[j0]), align);
    return NULL;
  }
  LLVMValueRef v = LLVMBuildLoad2(c->b, vt, a->ptr[j0], "");
  LLVMSetAlignment(v, align);
  if (w == 1) return v;
  return LLVMBuildBitCast(c->b, v, LLVMVectorType(cg_mem_type(c, a->dt), (unsigned)w), "");
}

/* ---- predicated accesses (inline PTX) ---- */

/* The registers one predicated access of `bytes` (1..16, a power of two) moves: 32-bit
 * lanes from a word up, else one 16-bit register (PTX has no 8-bit ones). */
typedef struct {
  int n;            /* registers */
  LLVMTypeRef t;    /* each one's type */
  const char *type; /* the PTX access type */
} lanes;

static lanes lanes_of(cg_ctx *c, int bytes) {
  if (bytes >= 4) return (lanes){bytes / 4, LLVMInt32TypeInContext(c->llc), "b32"};
  return (lanes){1, LLVMInt16TypeInContext(c->llc), bytes == 2 ? "b16" : "u8"};
}

static const char *lane_constraint(const lanes *L) { return LLVMGetIntTypeWidth(L->t) == 32 ? "r" : "h"; }

/* The packed value v (pack's form) as L's registers. */
static void split_lanes(cg_ctx *c, LLVMValueRef v, const lanes *L, LLVMValueRef *out) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 8) {
    out[0] = LLVMBuildZExt(c->b, v, L->t, "");
    return;
  }
  if (L->n == 1) {
    out[0] = LLVMBuildBitCast(c->b, v, L->t, "");
    return;
  }
  LLVMValueRef vec = LLVMBuildBitCast(c->b, v, LLVMVectorType(L->t, (unsigned)L->n), "");
  for (int i = 0; i < L->n; i++) out[i] = LLVMBuildExtractElement(c->b, vec, cg_i32(c, i), "");
}

/* The inverse of split_lanes: L's registers as a packed value of type to. */
static LLVMValueRef join_lanes(cg_ctx *c, const LLVMValueRef *in, const lanes *L, LLVMTypeRef to) {
  if (LLVMGetTypeKind(to) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(to) == 8)
    return LLVMBuildTrunc(c->b, in[0], to, "");
  if (L->n == 1) return LLVMBuildBitCast(c->b, in[0], to, "");
  LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(L->t, (unsigned)L->n));
  for (int i = 0; i < L->n; i++) vec = LLVMBuildInsertElement(c->b, vec, in[i], cg_i32(c, i), "");
  return LLVMBuildBitCast(c->b, vec, to, "");
}

/* "{$0, $1}" (or "$0" for one register) naming n operands from first. */
static void reg_list(su_buf *b, int first, int n) {
  if (n > 1) su_buf_puts(b, "{");
  for (int i = 0; i < n; i++) su_buf_printf(b, "%s$%d", i ? ", " : "", first + i);
  if (n > 1) su_buf_puts(b, "}");
}

/* Calls the inline asm text/constraints with args; sideeffect, so that LLVM neither
 * merges nor reorders it with other memory accesses (it cannot see that it is one). */
static LLVMValueRef call_asm(cg_ctx *c, LLVMTypeRef ret, LLVMValueRef *args, int nargs,
                             su_buf *text, su_buf *cons) {
  LLVMTypeRef pt[2 + 4];
  for (int i = 0; i < nargs; i++) pt[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef ft = LLVMFunctionType(ret, pt, (unsigned)nargs, false);
  LLVMValueRef fn = LLVMGetInlineAsm(ft, text->data, text->len, cons->data, cons->len, true,
                                     false, LLVMInlineAsmDialectATT, false);
  LLVMValueRef r = LLVMBuildCall2(c->b, ft, fn, args, (unsigned)nargs, "");
  su_buf_free(text);
  su_buf_free(cons);
  return r;
}

/* The PTX qualifier of op's hints (docs/language.md, 6.3): a cache operator or an L1
 * eviction priority (the verifier allows one), "" for none. */
static const char *hint_qualifier(const ir_op *op) {
  switch ((ir_cache)op->attr) {
  case IR_CACHE_NONE: break;
  case IR_CACHE_CA: return ".ca";
  case IR_CACHE_CG: return ".cg";
  case IR_CACHE_CS: return ".cs";
  case IR_CACHE_LU: return ".lu";
  case IR_CACHE_CV: return ".cv";
  case IR_CACHE_WB: return ".wb";
  case IR_CACHE_WT: return ".wt";
  }
  switch ((ir_evict)op->attr2) {
  case IR_EVICT_NORMAL: return "";
  case IR_EVICT_FIRST: return ".L1::evict_first";
  case IR_EVICT_LAST: return ".L1::evict_last";
  }
  return "";
}

/* Slots [j0, j0+w) as one PTX ld.global / st.global with the qualifier q: under the
 * (uniform) predicate a->mask[j0] when there is a mask, without a branch. A predicated
 * load's registers start as `other`, so that masked-off lanes keep it. Returns the packed
 * value a load read. The one place both instructions are written: masked accesses, and
 * every access with a hint (LLVM's loads and stores have no way to say them). */
static LLVMValueRef access_asm(cg_ctx *c, const access *a, int j0, int w, bool store, const char *q) {
  lanes L = lanes_of(c, w * a->bytes);
  const char *vec = L.n == 4 ? ".v4" : L.n == 2 ? ".v2" : "";
  const char *rc = lane_constraint(&L);
  bool pred = a->mask != NULL;
  int na = 0;
  LLVMValueRef args[2 + 4];
  args[na++] = a->ptr[j0];
  if (pred) args[na++] = a->mask[j0];
  su_buf text = {0}, cons = {0};
  if (store) {
    split_lanes(c, pack(c, a, a->val + j0, w), &L, args + na);
    su_buf_printf(&text, "%sst.global%s%s.%s [$0], ", pred ? "@$1 " : "", q, vec, L.type);
    reg_list(&text, na, L.n);
    su_buf_puts(&text, ";");
    su_buf_puts(&cons, pred ? "l,b" : "l");
    for (int i = 0; i < L.n; i++) su_buf_printf(&cons, ",%s", rc);
    call_asm(c, LLVMVoidTypeInContext(c->llc), args, na + L.n, &text, &cons);
    return NULL;
  }
  if (pred) {
    split_lanes(c, pack(c, a, a->val + j0, w), &L, args + na);
    su_buf_printf(&text, "@$%d ", L.n + 1);
  }
  su_buf_printf(&text, "ld.global%s%s.%s ", q, vec, L.type);
  reg_list(&text, 0, L.n);
  su_buf_printf(&text, ", [$%d];", L.n);
  for (int i = 0; i < L.n; i++) su_buf_printf(&cons, "=%s,", rc);
  su_buf_puts(&cons, pred ? "l,b" : "l");
  for (int i = 0; pred && i < L.n; i++) su_buf_printf(&cons, ",%d", i); /* tied to the outputs */
  LLVMTypeRef lt[4] = {L.t, L.t, L.t, L.t};
  LLVMTypeRef ret = L.n == 1 ? L.t : LLVMStructTypeInContext(c->llc, lt, (unsigned)L.n, false);
  LLVMValueRef r = call_asm(c, ret, args, pred ? na + L.n : na, &text, &cons);
  LLVMValueRef got[4] = {r};
  for (int i = 0; L.n > 1 && i < L.n; i++) got[i] = LLVMBuildExtractValue(c->b, r, (unsigned)i, "");
  LLVMTypeRef mem = cg_mem_type(c, a->dt);
  return join_lanes(c, got, &L, w == 1 ? mem : LLVMVectorType(mem, (unsigned)w));
}

static void emit_load_store(cg_ctx *c, const ir_op *op, bool store) {
  const ir_value *ptr = op->operands[0];
  cg_layout l = cg_layout_of(c, ptr->type);
  int mask_at = store ? 2 : 1, val_at = store ? 1 : 2;
  access a = gather(c, op, &l, mask_at, val_at, store);
  const char *hint = hint_qualifier(op);
  int w = cg_access_width(c, op->operands[0], op->noperands > mask_at ? op->operands[mask_at] : NULL, &l, a.bytes);
  LLVMValueRef *out = store ? NULL : cg_slots(c, l.per);
  for (int j0 = 0; j0 < l.per; j0 += w) {
    LLVMValueRef v = a.mask || *hint ? access_asm(c, &a, j0, w, store, hint) : access_plain(c, &a, j0, w, store);
    if (!store) unpack(c, &a, v, w, out + j0);
  }
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
  /* The memory order is the program's (docs/ir.md): a release orders every thread's
   * earlier accesses before the atomics (the barrier brings them to the threads that issue
   * them, the fence makes those gpu-wide before each relaxed atom), an acquire the atomics
   * before every thread's later ones (fence, then barrier). LLVM 19's NVPTX back end emits
   * a plain atom for any ordering and cannot select a fence, hence the inline fences. */
  ir_sem sem = (ir_sem)op->attr2;
  bool release = sem == IR_SEM_RELEASE || sem == IR_SEM_ACQ_REL, acquire = sem == IR_SEM_ACQUIRE || sem == IR_SEM_ACQ_REL;
  if (release) {
    cg_barrier(c);
    cg_ptx_fence_gpu(c);
  }
  LLVMValueRef *out = cg_slots(c, l.per);
  for (int j = 0; j < l.per; j++) {
    LLVMValueRef owner = l.tile ? cg_layout_owner(c, &l, j, -1)
                                : LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_i32(c, 0), "");
    LLVMValueRef m = mask.n ? mask.v[mask.n == 1 ? 0 : j] : NULL;
    LLVMValueRef v = val.v[val.n == 1 ? 0 : j];
    LLVMValueRef k = cas ? cmp.v[cmp.n == 1 ? 0 : j] : NULL;
    out[j] = atomic_if(c, op, dt, and_opt(c, m, owner), p.v[p.n == 1 ? 0 : j], v, k);
  }
  /* Only an element's owner performs its atomic (a replica would apply it twice and see
   * the first one's write): the replicas take the owner's old value (tkdiff seeds 29257,
   * 1014194: replicas' zeros reached a cumsum) */
  if (acquire) {
    cg_ptx_fence_gpu(c);
    if (l.tile) cg_barrier(c); /* broadcast0 has one */
  }
  cg_val o = l.tile ? cg_from_owners(c, (cg_val){out, l.per}, &l) : (cg_val){out, l.per};
  if (!l.tile) o.v[0] = broadcast0(c, out[0]);
  cg_layout rl = cg_layout_of(c, op->results[0]->type);
  cg_val r = cg_relayout(c, o, &l, &rl);
  cg_set(c, op->results[0], r.v, r.n);
}

/* ---- slots ---- */

/* slot_store p, v / slot_load p (docs/ir.md): thread t's element j at p[(j / w * threads +
 * t) * w + j % w], w = 4 where the thread's count allows: each warp's access is one run of
 * 512 bytes whatever the tile's layout, and a load of the same type finds each thread's
 * elements where its store put them. A slot holds each element once, so a layout that
 * repeats elements over threads has none. */
static void emit_slot(cg_ctx *c, const ir_op *op) {
  LLVMBuilderRef b = c->b;
  bool load = op->opc == IR_SLOT_LOAD;
  const ir_type *t = load ? op->results[0]->type : op->operands[1]->type;
  cg_layout l = cg_layout_of(c, t);
  if (!l.tile || (int64_t)l.per * c->threads != ir_type_numel(t)) {
    cg_unsupported(c, op, "a slot of a tile whose layout repeats elements over threads");
    return;
  }
  LLVMValueRef base = cg_get(c, op->operands[0]).v[0];
  LLVMTypeRef et = cg_mem_type(c, t->dtype);
  int w = l.per % 4 == 0 ? 4 : l.per % 2 == 0 ? 2 : 1;
  LLVMTypeRef vt = w == 1 ? et : LLVMVectorType(et, (unsigned)w);
  cg_val x = load ? (cg_val){NULL, 0} : cg_get(c, op->operands[1]);
  LLVMValueRef *out = load ? cg_slots(c, l.per) : NULL;
  for (int j = 0; j < l.per; j += w) {
    LLVMValueRef at = LLVMBuildAdd(b, cg_i32(c, j / w * c->threads), c->tid, "");
    at = LLVMBuildZExt(b, LLVMBuildMul(b, at, cg_i32(c, w), ""), LLVMInt64TypeInContext(c->llc), "");
    LLVMValueRef p = LLVMBuildGEP2(b, et, base, &at, 1, "slot");
    if (load) {
      LLVMValueRef v = LLVMBuildLoad2(b, vt, p, "");
      LLVMSetAlignment(v, (unsigned)(4 * w));
      for (int e = 0; e < w; e++) out[j + e] = w == 1 ? v : LLVMBuildExtractElement(b, v, cg_i32(c, e), "");
    } else {
      LLVMValueRef v = w == 1 ? x.v[x.n == 1 ? 0 : j] : LLVMGetUndef(vt);
      for (int e = 0; w > 1 && e < w; e++) v = LLVMBuildInsertElement(b, v, x.v[x.n == 1 ? 0 : j + e], cg_i32(c, e), "");
      LLVMSetAlignment(LLVMBuildStore(b, v, p), (unsigned)(4 * w));
    }
  }
  if (load) cg_set(c, op->results[0], out, l.per);
}

void cg_emit_memory(cg_ctx *c, const ir_op *op) {
  switch (op->opc) {
  case IR_SLOT_STORE: case IR_SLOT_LOAD: emit_slot(c, op); return;
  case IR_LOAD: emit_load_store(c, op, false); return;
  case IR_STORE: emit_load_store(c, op, true); return;
  case IR_ATOMIC: case IR_ATOMIC_CAS: emit_atomic(c, op); return;
  default: SU_UNREACHABLE();
  }
}
