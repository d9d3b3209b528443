/* wgmma (sm_90a): the asynchronous warpgroup product, its commit and its wait.
 *
 * The accumulator is in a #wgmma layout (docs/ir.md): warpgroup g (warps 4g..4g+3) owns
 * rows r*16W + 64g .. +63 of each 16W-row block r (W warps along M), so it issues, per
 * block and per K step, one m64nNk instruction whose registers are its slots in the
 * order the instruction fixes: register i is row 8*(i/2 % 2) + g4, column 8*(i/4) +
 * 2*t4 + i%2 of its 64xN part (lane 4*g4 + t4), i.e. slot (2r + i/2 % 2) * N/4 +
 * (2*(i/4) + i%2). a and b are read from their slots through matrix descriptors: a slot
 * whose contiguous dim is K is "K-major" (rows of W-byte swizzled lines, 8-row groups SBO =
 * 8W apart, a K step moves the start address along the line); one whose contiguous dim is
 * M or N is "MN-major" (the transposed form: W-byte chunks along M/N, LBO = one chunk of
 * all K rows apart, SBO = 8 K-rows, a K step moves the start by k rows). The descriptor's
 * start is the unswizzled address of the block's first element: the hardware swizzles by
 * address bits, as the TMA engine did when it wrote the slot. `trans` names which slot
 * dim is K; a register a (4 operands) is read as the instruction's A fragments. */
#include "cg.h"

#include <math.h>

typedef struct {
  tk_dtype a, b, acc;
  cg_wgmma_form form; /* n filled per instruction */
} wg_kind;

/* The 8-bit forms (s8; fp8, passes/fp8dot.c) read K-major operands only: no
 * transposition immediates (the tiling pass gives them wgmma only when both lie so,
 * passes/tiling.c); s8 has no scale immediates either. tf32 would truncate what mma.sync
 * rounds (cvt.rna.tf32), so it stays on mma.sync. */
static const wg_kind KINDS[] = {
    {TK_F16, TK_F16, TK_F32, {0, 16, "f32.f16.f16", true, true}},
    {TK_BF16, TK_BF16, TK_F32, {0, 16, "f32.bf16.bf16", true, true}},
    {TK_I8, TK_I8, TK_I32, {0, 32, "s32.s8.s8", false, false}},
    {TK_F8E4M3, TK_F8E4M3, TK_F32, {0, 32, "f32.e4m3.e4m3", true, false}},
    {TK_F8E4M3, TK_F8E5M2, TK_F32, {0, 32, "f32.e4m3.e5m2", true, false}},
    {TK_F8E5M2, TK_F8E4M3, TK_F32, {0, 32, "f32.e5m2.e4m3", true, false}},
    {TK_F8E5M2, TK_F8E5M2, TK_F32, {0, 32, "f32.e5m2.e5m2", true, false}},
};

static const wg_kind *kind_for(tk_dtype a, tk_dtype b, tk_dtype acc) {
  for (size_t i = 0; i < sizeof KINDS / sizeof *KINDS; i++)
    if (KINDS[i].a == a && KINDS[i].b == b && KINDS[i].acc == acc) return &KINDS[i];
  return NULL;
}

/* One operand as the instructions read it. */
typedef struct {
  const ir_type *buf;
  LLVMValueRef base;  /* the slot */
  int mn_dim, k_dim;  /* which slot dim is M (or N), which is K */
  bool k_major;
  int w, e, eb;       /* swizzle bytes, elements per swizzle line, element bytes */
  int64_t bits;       /* the descriptor's constant fields */
} operand;

static void operand_init(operand *o, cg_ctx *c, const ir_value *buf, LLVMValueRef slot, int mn_dim) {
  o->buf = buf->type;
  o->base = cg_slot_base(c, buf, slot);
  o->mn_dim = mn_dim;
  o->k_dim = 1 - mn_dim;
  o->k_major = buf->type->layout->order[0] == o->k_dim;
  o->w = buf->type->layout->swizzle;
  o->eb = ir_dtype_bytes(buf->type->dtype);
  o->e = o->w / o->eb;
  int mode = o->w == 128 ? 1 : o->w == 64 ? 2 : 3;
  int64_t lbo = o->k_major ? 16 : (int64_t)buf->type->shape[1 + o->k_dim] * o->w;
  int64_t sbo = 8 * (int64_t)o->w;
  /* built unsigned: mode 2 or 3 in bits 62-63 overflows an int64_t shift */
  o->bits = (int64_t)(((uint64_t)lbo >> 4) << 16 | ((uint64_t)sbo >> 4) << 32 | (uint64_t)mode << 62);
}

/* Where the block starting at (mn0, k0) lies in the slot, in bytes: a part that depends
 * on mn0 (a runtime i32) plus one that depends on k0 only. K-major: k0 runs along the
 * swizzled lines (chunks of e elements, then within one) and mn0 counts lines; MN-major:
 * the other way round. */
static int64_t k_offset(const operand *o, int k0) {
  int64_t line = (int64_t)o->buf->shape[1 + (o->k_major ? o->mn_dim : o->k_dim)] * o->w;
  return o->k_major ? (int64_t)(k0 / o->e) * line + (int64_t)(k0 % o->e) * o->eb : (int64_t)k0 * o->w;
}

static LLVMValueRef mn_offset(cg_ctx *c, const operand *o, LLVMValueRef mn0) {
  if (o->k_major) return LLVMBuildMul(c->b, mn0, cg_i32(c, o->w), "");
  int64_t line = (int64_t)o->buf->shape[1 + o->k_dim] * o->w;
  LLVMValueRef chunk = LLVMBuildUDiv(c->b, mn0, cg_i32(c, o->e), "");
  LLVMValueRef in = LLVMBuildURem(c->b, mn0, cg_i32(c, o->e), "");
  return LLVMBuildAdd(c->b, LLVMBuildMul(c->b, chunk, cg_i32(c, line), ""),
                      LLVMBuildMul(c->b, in, cg_i32(c, o->eb), ""), "");
}

/* The low word of the descriptors of the blocks at mn0: the start address field (bits
 * 0-13, the byte address / 16) of the block at k0 = 0 and the leading byte offset (bits
 * 16-29). Shared addresses stay below 256 KB, so the field never wraps, and the block at
 * k0 has this word plus its k offset / 16 (a multiple of 16 bytes): one add per
 * instruction instead of the address arithmetic, which had sat between the instructions
 * on the uniform datapath (ncu source counters on the H100, 2026-12-06: about half of the
 * time attention's consumer warps spent issuing their products). */
static LLVMValueRef descriptor_lo(cg_ctx *c, const operand *o, LLVMValueRef mn0) {
  LLVMValueRef addr = LLVMBuildAdd(c->b, cg_shared_addr(c, o->base), mn_offset(c, o, mn0), "");
  LLVMValueRef start = LLVMBuildAnd(c->b, LLVMBuildLShr(c->b, addr, cg_i32(c, 4), ""), cg_i32(c, 0x3FFF), "");
  return LLVMBuildOr(c->b, start, cg_i32(c, (int64_t)((uint64_t)o->bits & 0xFFFFFFFFu)), "");
}

/* The descriptor of the block at (mn0, k0), from descriptor_lo's word for mn0. */
static LLVMValueRef descriptor(cg_ctx *c, const operand *o, LLVMValueRef lo, int k0) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c->llc);
  int64_t k_bytes = k_offset(o, k0);
  LLVMValueRef l = k_bytes ? LLVMBuildAdd(c->b, lo, cg_i32(c, k_bytes >> 4), "") : lo;
  uint64_t hi = (uint64_t)o->bits & ~(uint64_t)0xFFFFFFFFu;
  return LLVMBuildOr(c->b, LLVMBuildZExt(c->b, l, i64, ""), LLVMConstInt(i64, hi, 0), "");
}

static bool wgmma_ready(const cg_layout *l) {
  return l->tile && l->rank == 2 && l->brank == 2 && l->spt[0] == 1 && l->spt[1] == 2 && l->rpw[0] == 2 &&
         l->rpw[1] == 1 && l->tpw[0] == 8 && l->tpw[1] == 4 && l->wpc[1] == 1 && l->wpc[0] % 4 == 0 &&
         l->order[0] == 1 && l->shape[0] % l->cta[0] == 0 && l->shape[1] % 8 == 0;
}

/* The A fragment of k step `s` from a register tile in the accumulator's layout: the
 * m64nNk16 accumulator registers 8s..8s+7 of a [64, K] part are the fragment's
 * a0..a7 (rows g and g+8, columns 16s + 2t + {0, 1} and 16s + 8 + 2t + {0, 1}), so the
 * tile's own slots are packed in pairs, low half first. */
static void a_fragment(cg_ctx *c, const cg_layout *la, const cg_val *x, int r, int s, LLVMValueRef out[4]) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c->llc);
  LLVMTypeRef v2 = LLVMVectorType(LLVMTypeOf(x->v[0]), 2);
  for (int q = 0; q < 4; q++) {
    LLVMValueRef pair = LLVMGetUndef(v2);
    for (int e = 0; e < 2; e++) {
      int i = 8 * s + 2 * q + e, h = (i / 2) % 2, jb = i / 4;
      int slot = (2 * r + h) * la->stride[0] + (2 * jb + i % 2) * la->stride[1];
      pair = LLVMBuildInsertElement(c->b, pair, x->v[x->n == 1 ? 0 : slot], cg_i32(c, e), "");
    }
    out[q] = LLVMBuildBitCast(c->b, pair, i32, "");
  }
}

static void emit_product(cg_ctx *c, const ir_op *op) {
  bool regs_a = op->noperands == 4;
  int bi = regs_a ? 1 : 2;
  bool ta = op->ints && op->ints[0], tb = op->ints && op->ints[1];
  const ir_value *acc = op->operands[op->noperands - 1], *res = op->results[0];
  const ir_type *at = op->operands[0]->type, *bt = op->operands[bi]->type;
  const wg_kind *kind = kind_for(at->dtype, bt->dtype, res->type->dtype);
  cg_layout l = cg_layout_of(c, res->type);
  if (!kind || !wgmma_ready(&l) || (!regs_a && !at->layout->swizzle) || !bt->layout->swizzle ||
      (regs_a && (at->layout != res->type->layout || at->shape[0] != res->type->shape[0]))) {
    cg_unsupported(c, op, "this 'wgmma' (operand types, layouts or swizzles)");
    return;
  }
  operand a, b;
  if (!regs_a) operand_init(&a, c, op->operands[0], cg_slot(c, op->operands[1], 0), ta ? 1 : 0);
  operand_init(&b, c, op->operands[bi], cg_slot(c, op->operands[bi + 1], 0), tb ? 0 : 1);
  if (!kind->form.imm_trans && (!b.k_major || (!regs_a && !a.k_major))) {
    cg_unsupported(c, op, "an 8-bit 'wgmma' whose operand is not K-major in shared memory");
    return;
  }
  int m = res->type->shape[0], n = res->type->shape[1];
  int k = regs_a ? at->shape[1] : at->shape[1 + a.k_dim];
  int parts = (n + 255) / 256, ni = n / parts, reps = m / l.cta[0];
  if (n % parts || ni % 8 || k % kind->form.k) {
    cg_unsupported(c, op, "a 'wgmma' of this shape");
    return;
  }
  cg_wgmma_form form = kind->form;
  form.n = ni;
  cg_val x = cg_get(c, acc);
  LLVMValueRef *slots = cg_slots(c, l.per);
  /* a zero accumulator (attention's Q K^T) is no input: the first k step does not add it
   * (scale-d false), so no register is zeroed for it */
  bool zero = acc->def && acc->def->opc == IR_CONST && acc->def->cval.f == 0.0 && !signbit(acc->def->cval.f);
  for (int j = 0; j < l.per; j++) slots[j] = zero ? LLVMGetUndef(LLVMTypeOf(x.v[0])) : x.v[x.n == 1 ? 0 : j];
  /* the A fragments, all built before the fence: what defines a register the
   * instructions read must come before it */
  int steps = k / form.k, nfrag = regs_a ? reps * steps * 4 : 0;
  LLVMValueRef *fenced = cg_slots(c, l.per + nfrag);
  if (regs_a) {
    cg_layout la = cg_layout_of(c, at);
    cg_val xa = cg_get(c, op->operands[0]);
    for (int r = 0; r < reps; r++)
      for (int s = 0; s < steps; s++) a_fragment(c, &la, &xa, r, s, fenced + l.per + (r * steps + s) * 4);
  }
  for (int j = 0; j < l.per; j++) fenced[j] = slots[j];
  cg_ptx_wgmma_fence(c, fenced, l.per + nfrag);
  for (int j = 0; j < l.per; j++) slots[j] = fenced[j];
  LLVMValueRef wg = LLVMBuildUDiv(c->b, c->tid, cg_i32(c, CG_WARPGROUP), "");
  LLVMValueRef wg_rows = LLVMBuildMul(c->b, wg, cg_i32(c, 64), "");
  int nregs = ni / 2, s0 = l.stride[0], s1 = l.stride[1];
  LLVMValueRef *regs = cg_slots(c, nregs);
  int *map = SU_NEW_ARRAY(c->arena, int, nregs);
  for (int r = 0; r < reps; r++) {
    LLVMValueRef m0 = LLVMBuildAdd(c->b, wg_rows, cg_i32(c, (int64_t)r * l.cta[0]), "");
    for (int q = 0; q < parts; q++) {
      int n0 = q * ni;
      for (int i = 0; i < nregs; i++) {
        int h = (i / 2) % 2, jb = i / 4, e = i % 2;
        map[i] = (2 * r + h) * s0 + (2 * (n0 / 8 + jb) + e) * s1;
        regs[i] = slots[map[i]];
      }
      LLVMValueRef blo = descriptor_lo(c, &b, cg_i32(c, n0)), alo = regs_a ? NULL : descriptor_lo(c, &a, m0);
      for (int k0 = 0, s = 0; k0 < k; k0 += form.k, s++) {
        LLVMValueRef db = descriptor(c, &b, blo, k0);
        bool add = !(zero && k0 == 0);
        if (regs_a)
          cg_ptx_wgmma(c, &form, 0, !b.k_major, add, regs, nregs, NULL, fenced + l.per + (r * steps + s) * 4, db);
        else
          cg_ptx_wgmma(c, &form, !a.k_major, !b.k_major, add, regs, nregs, descriptor(c, &a, alo, k0), NULL, db);
      }
      for (int i = 0; i < nregs; i++) slots[map[i]] = regs[i];
    }
  }
  cg_set(c, res, slots, l.per);
}

/* The registers of the wait's operands pass through it, so that nothing reads them
 * before it; types the instruction's registers cannot name are passed on untouched. */
static void emit_wait(cg_ctx *c, const ir_op *op) {
  int total = 0;
  for (int i = 0; i < op->noperands; i++) total += cg_get(c, op->operands[i]).n;
  LLVMValueRef *regs = cg_slots(c, total ? total : 1);
  int *from = SU_NEW_ARRAY(c->arena, int, total ? total : 1), n = 0, at = 0;
  LLVMValueRef *all = cg_slots(c, total ? total : 1);
  for (int i = 0; i < op->noperands; i++) {
    cg_val x = cg_get(c, op->operands[i]);
    for (int j = 0; j < x.n; j++, at++) {
      all[at] = x.v[j];
      LLVMTypeKind tk = LLVMGetTypeKind(LLVMTypeOf(x.v[j]));
      bool named = tk == LLVMFloatTypeKind ||
                   (tk == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(LLVMTypeOf(x.v[j])) == 32);
      if (named) {
        from[n] = at;
        regs[n++] = x.v[j];
      }
    }
  }
  cg_ptx_wgmma_wait(c, (int)op->attr, regs, n);
  for (int i = 0; i < n; i++) all[from[i]] = regs[i];
  at = 0;
  for (int i = 0; i < op->noperands; i++) {
    int cnt = cg_get(c, op->operands[i]).n;
    cg_set(c, op->results[i], all + at, cnt);
    at += cnt;
  }
}

void cg_emit_wgmma(cg_ctx *c, const ir_op *op) {
  switch (op->opc) {
  case IR_WGMMA: emit_product(c, op); return;
  case IR_WGMMA_COMMIT: cg_ptx_wgmma_commit(c); return;
  case IR_WGMMA_WAIT: emit_wait(c, op); return;
  default: SU_UNREACHABLE();
  }
}
