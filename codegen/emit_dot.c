/* dot on the tensor cores: mma.sync.aligned m16n8k16 (f16, bf16 → f32; s8 → s32) and
 * m16n8k8 (tf32 → f32), sm_80 and later.
 *
 * The accumulator and the result are computed in the MMA layout (pass_tiling_mma), read
 * as the blocked layout of its fields: lane 4g+t of warp (wm, wn) holds rows
 * km * 8WM + 8wm + g and columns (kn / 2) * 8WN + 8wn + 2t + kn % 2. Its 8-row blocks
 * km = 2i, 2i+1 are the rows g and g+8 of the i-th 16-row tile of an instruction, its
 * column pairs kn = 2j, 2j+1 the j-th 8-column tile: the m16n8 accumulator fragment,
 * without moving a value. The rows of one instruction need not be adjacent in the tile,
 * since the A fragment is read from the same rows.
 *
 * a and b arrive in whatever layout their producers gave them: each thread stores its
 * elements to shared memory, row-major with every row padded by 16 bytes (the 8 rows one
 * ldmatrix phase reads then fall in distinct banks), in 16-byte vectors where the layout
 * allows; a barrier; then for each K step a warp loads its fragments (16-bit types:
 * ldmatrix.x4, .trans for b; tf32 and s8: scalar loads packed into registers) and issues
 * one mma per 16x8 tile. K is unrolled: a dot's tile is small and lives in registers.
 *
 * Accuracy: f16 and bf16 products are exact in f32 and summed in f32 (in another order
 * than the interpreter's). f32 inputs follow the dot's input precision (docs/language.md,
 * "Precision"): tf32, Triton's default, rounds them to tf32 (cvt.rna: 10 bits of
 * mantissa, a relative error up to 2^-11 per input); tf32x3 runs three tf32 products of
 * their big and small parts (the small one the rounding error of the big), about f32's
 * accuracy; ieee leaves the tensor cores for the FMA units (fma_dot). s8 → s32 wraps on
 * overflow, as the interpreter does. */
#include "cg.h"

#include "../passes/passes.h"

#include <string.h>

enum { PAD_BYTES = 16, MAX_FRAG = 4 };

typedef struct {
  const char *intrinsic;
  int k;         /* K of one instruction */
  int na, nb;    /* 32-bit registers of the A and B fragments */
  bool ldmatrix; /* 16-bit elements: fragments by ldmatrix */
} mma_shape;

static const mma_shape MMA_F16 = {"llvm.nvvm.mma.m16n8k16.row.col.f32.f32", 16, 4, 2, true};
static const mma_shape MMA_BF16 = {"llvm.nvvm.mma.m16n8k16.row.col.bf16", 16, 4, 2, true};
static const mma_shape MMA_TF32 = {"llvm.nvvm.mma.m16n8k8.row.col.tf32", 8, 4, 2, false};
static const mma_shape MMA_S8 = {"llvm.nvvm.mma.m16n8k16.row.col.s8", 16, 2, 1, false};

/* The instruction for inputs `in` accumulated in `acc`; NULL when there is none. */
static const mma_shape *shape_for(tk_dtype in, tk_dtype acc) {
  if (acc == TK_F32 && in == TK_F16) return &MMA_F16;
  if (acc == TK_F32 && in == TK_BF16) return &MMA_BF16;
  if (acc == TK_F32 && in == TK_F32) return &MMA_TF32;
  if (acc == TK_I32 && in == TK_I8) return &MMA_S8;
  return NULL;
}

typedef struct {
  cg_ctx *c;
  const mma_shape *s;
  LLVMTypeRef et;          /* the input element type */
  int bytes;               /* its size */
  int m, n, k;
  int sa, sb;              /* row strides of a and b in shared memory, in elements */
  const ir_type *abuf, *bbuf; /* mma: the slots' buffer types (their #shared layouts), else NULL */
  LLVMValueRef a, b;       /* where they are (shared) */
  bool tb;                 /* mma {trans = [0, 1]}: b's slot holds b^T */
  cg_layout ml;            /* the MMA layout the product is computed in */
  LLVMValueRef lane, g, t; /* the lane, lane / 4, lane % 4 */
  LLVMValueRef wm8, wn8;   /* 8 * this warp's coordinates in the warp grid */
  bool x3;                 /* tf32x3: three products of the operands' parts */
  bool small_a, small_b;   /* tf32x3: this product reads the small part of a (of b) */
} dot_ctx;

/* True when l places a [m, n] tile as the m16n8 accumulator (see the top of the file). */
static bool mma_ready(const cg_layout *l) {
  return l->tile && l->rank == 2 && l->brank == 2 && l->base[0] == 0 && l->spt[0] == 1 &&
         l->spt[1] == 2 && l->tpw[0] == 8 && l->tpw[1] == 4 && l->order[0] == 1 &&
         l->shape[0] % (2 * l->cta[0]) == 0 && l->shape[1] % 8 == 0;
}

static LLVMValueRef add(dot_ctx *d, LLVMValueRef x, int64_t k) {
  return k ? LLVMBuildAdd(d->c->b, x, cg_i32(d->c, k), "") : x;
}

static LLVMValueRef mul(dot_ctx *d, LLVMValueRef x, int64_t k) {
  return LLVMBuildMul(d->c->b, x, cg_i32(d->c, k), "");
}

static LLVMTypeRef i32_type(dot_ctx *d) { return LLVMInt32TypeInContext(d->c->llc); }

/* ---- staging a and b in shared memory ---- */

/* Stores the [rows, cols] tile v at base, row-major, rows `stride` elements apart. Along
 * the columns a thread's adjacent slots go as one vector of up to 16 bytes; the offset
 * of each is a multiple of its length (powers of two), hence so aligned. Replicas store
 * the value their owner stores. */
static void stage(dot_ctx *d, const ir_value *v, LLVMValueRef base, int stride) {
  cg_ctx *c = d->c;
  cg_layout l = cg_layout_of(c, v->type);
  cg_val x = cg_get(c, v);
  int run = 1;
  if (l.fast == 1) {
    run = l.spt[l.base[1]];
    if (run > l.shape[1]) run = l.shape[1];
    if (run > CG_VEC_BYTES / d->bytes) run = CG_VEC_BYTES / d->bytes;
  }
  LLVMTypeRef vt = LLVMVectorType(d->et, (unsigned)run);
  for (int j = 0; j < l.per; j += run) {
    LLVMValueRef row = cg_layout_coord(c, &l, j, 0), col = cg_layout_coord(c, &l, j, 1);
    LLVMValueRef at = LLVMBuildAdd(c->b, mul(d, row, stride), col, "");
    LLVMValueRef p = cg_smem_at(c, base, d->et, at), val;
    if (run == 1) {
      val = x.v[x.n == 1 ? 0 : j];
    } else {
      val = LLVMGetUndef(vt);
      for (int e = 0; e < run; e++)
        val = LLVMBuildInsertElement(c->b, val, x.v[x.n == 1 ? 0 : j + e], cg_i32(c, e), "");
    }
    LLVMSetAlignment(LLVMBuildStore(c->b, val, p), (unsigned)(run * d->bytes));
  }
}

/* ---- fragments ---- */

/* The address of element (row, col) of the shared tile at base: rows stride apart, or as
 * buf's #shared layout places it (a slot of an mma). */
static LLVMValueRef at(dot_ctx *d, LLVMValueRef base, LLVMValueRef row, int stride, LLVMValueRef col) {
  const ir_type *buf = base == d->a ? d->abuf : d->bbuf;
  if (buf) {
    LLVMValueRef idx[2] = {row, col};
    LLVMValueRef off = cg_slot_offset(d->c, buf, idx);
    return LLVMBuildInBoundsGEP2(d->c->b, LLVMInt8TypeInContext(d->c->llc), base, &off, 1, "");
  }
  LLVMValueRef i = LLVMBuildAdd(d->c->b, mul(d, row, stride), col, "");
  return cg_smem_at(d->c, base, d->et, i);
}

/* ldmatrix of `count` 8x8 b16 matrices, lane l giving the address of row l % 8 of matrix
 * l / 8; out[q] is this lane's register of matrix q. */
static void ldmatrix(dot_ctx *d, LLVMValueRef addr, int count, bool trans, LLVMValueRef *out) {
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d%s.b16", count,
           trans ? ".trans" : "");
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef pt = LLVMTypeOf(addr); /* overloaded on the pointer in some LLVM versions */
  LLVMValueRef r = cg_intrinsic(d->c, name, &pt, LLVMIntrinsicIsOverloaded(id) ? 1 : 0, &addr, 1);
  for (int q = 0; q < count; q++)
    out[q] = count == 1 ? r : LLVMBuildExtractValue(d->c->b, r, (unsigned)q, "");
}

/* An A row of this lane: 8-row block `block` of the warp's rows, row g (or r8) in it. */
static LLVMValueRef a_row(dot_ctx *d, int block, LLVMValueRef in_block) {
  LLVMValueRef r = LLVMBuildAdd(d->c->b, d->wm8, in_block, "");
  return add(d, r, (int64_t)block * d->ml.cta[0]);
}

/* A B column of this lane: column `in_tile` (0..7) of the warp's 8-column tile j,
 * wrapped when the warp grid is wider than the tile (then j is 0). */
static LLVMValueRef b_col(dot_ctx *d, int j, LLVMValueRef in_tile) {
  LLVMValueRef col = LLVMBuildAdd(d->c->b, d->wn8, in_tile, "");
  col = LLVMBuildURem(d->c->b, col, cg_i32(d->c, d->n), "");
  return add(d, col, (int64_t)j * d->ml.cta[1]);
}

/* Reads one element of type et and returns it as the 32-bit pattern mma takes (tf32):
 * its big part, tf32(x), or with small its small part, tf32(x - tf32(x)) (tf32x3). */
static LLVMValueRef tf32_at(dot_ctx *d, LLVMValueRef p, bool small) {
  LLVMValueRef x = LLVMBuildLoad2(d->c->b, d->et, p, "");
  LLVMSetAlignment(x, 4);
  LLVMValueRef big = cg_intrinsic(d->c, "llvm.nvvm.f2tf32.rna", NULL, 0, &x, 1);
  if (!small) return big;
  LLVMValueRef rest = LLVMBuildFSub(d->c->b, x, LLVMBuildBitCast(d->c->b, big, d->et, ""), "");
  return cg_intrinsic(d->c, "llvm.nvvm.f2tf32.rna", NULL, 0, &rest, 1);
}

/* The A fragment of 16-row tile i at K step ks (s->na registers). */
static void load_a(dot_ctx *d, int i, int ks, LLVMValueRef *out) {
  cg_ctx *c = d->c;
  int k0 = ks * d->s->k;
  if (d->s->ldmatrix) {
    /* matrix q: rows 8 (q % 2) .. of the tile, columns 8 (q / 2) .. of the step */
    LLVMValueRef q = LLVMBuildLShr(c->b, d->lane, cg_i32(c, 3), "");
    LLVMValueRef r8 = LLVMBuildAnd(c->b, d->lane, cg_i32(c, 7), "");
    LLVMValueRef half = LLVMBuildAnd(c->b, q, cg_i32(c, 1), "");
    LLVMValueRef row = a_row(d, 2 * i, LLVMBuildAdd(c->b, mul(d, half, d->ml.cta[0]), r8, ""));
    LLVMValueRef col = add(d, mul(d, LLVMBuildLShr(c->b, q, cg_i32(c, 1), ""), 8), k0);
    ldmatrix(d, at(d, d->a, row, d->sa, col), 4, false, out);
    return;
  }
  for (int r = 0; r < d->s->na; r++) {
    if (d->s == &MMA_TF32) { /* a_r: row g + 8 (r % 2), column t + 4 (r / 2) */
      LLVMValueRef row = a_row(d, 2 * i + r % 2, d->g);
      out[r] = tf32_at(d, at(d, d->a, row, d->sa, add(d, d->t, k0 + 4 * (r / 2))), d->small_a);
    } else { /* s8, a_r: row g + 8 r, the 4 bytes at column 4t */
      LLVMValueRef row = a_row(d, 2 * i + r, d->g);
      LLVMValueRef p = at(d, d->a, row, d->sa, add(d, mul(d, d->t, 4), k0));
      out[r] = LLVMBuildLoad2(c->b, i32_type(d), p, "");
      LLVMSetAlignment(out[r], 4);
    }
  }
}

/* The B fragments of 8-column tiles j and, when two, j + 1 at K step ks. */
static void load_b(dot_ctx *d, int j, int two, int ks, LLVMValueRef *out) {
  cg_ctx *c = d->c;
  int k0 = ks * d->s->k;
  if (d->s->ldmatrix && d->tb) {
    /* the slot holds b^T ([N, K] rows): its rows are the fragment's columns as they are,
     * so no .trans; matrix q: columns 8 (q % 2) .. of the step, of column tile j + q / 2 */
    LLVMValueRef q = LLVMBuildLShr(c->b, d->lane, cg_i32(c, 3), "");
    LLVMValueRef r8 = LLVMBuildAnd(c->b, d->lane, cg_i32(c, 7), "");
    LLVMValueRef n = b_col(d, j, r8);
    if (two) n = LLVMBuildAdd(c->b, n, mul(d, LLVMBuildLShr(c->b, q, cg_i32(c, 1), ""), d->ml.cta[1]), "");
    LLVMValueRef k = add(d, mul(d, LLVMBuildAnd(c->b, q, cg_i32(c, 1), ""), 8), k0);
    ldmatrix(d, at(d, d->b, n, d->sb, k), two ? 4 : 2, false, out);
    return;
  }
  if (d->s->ldmatrix) {
    /* matrix q: K rows 8 (q % 2) .. of the step, of column tile j + q / 2 */
    LLVMValueRef q = LLVMBuildLShr(c->b, d->lane, cg_i32(c, 3), "");
    LLVMValueRef r8 = LLVMBuildAnd(c->b, d->lane, cg_i32(c, 7), "");
    LLVMValueRef row = LLVMBuildAdd(c->b, mul(d, LLVMBuildAnd(c->b, q, cg_i32(c, 1), ""), 8), r8, "");
    LLVMValueRef col = b_col(d, j, cg_i32(c, 0));
    if (two) col = LLVMBuildAdd(c->b, col, mul(d, LLVMBuildLShr(c->b, q, cg_i32(c, 1), ""), d->ml.cta[1]), "");
    ldmatrix(d, at(d, d->b, add(d, row, k0), d->sb, col), two ? 4 : 2, true, out);
    return;
  }
  for (int jj = 0; jj < (two ? 2 : 1); jj++) {
    LLVMValueRef col = b_col(d, j + jj, d->g);
    for (int r = 0; r < d->s->nb; r++) {
      LLVMValueRef *o = &out[jj * d->s->nb + r];
      if (d->s == &MMA_TF32) { /* b_r: K row t + 4 r, column g */
        *o = tf32_at(d, at(d, d->b, add(d, d->t, k0 + 4 * r), d->sb, col), d->small_b);
        continue;
      }
      /* s8, b_0: K rows 4t .. 4t + 3 of column g, byte e from row 4t + e */
      *o = cg_i32(c, 0);
      for (int e = 0; e < 4; e++) {
        LLVMValueRef row = add(d, mul(d, d->t, 4), k0 + e);
        LLVMValueRef x = LLVMBuildLoad2(c->b, d->et, at(d, d->b, row, d->sb, col), "");
        x = LLVMBuildZExt(c->b, x, i32_type(d), "");
        *o = LLVMBuildOr(c->b, *o, LLVMBuildShl(c->b, x, cg_i32(c, 8 * e), ""), "");
      }
    }
  }
}

/* acc4 (c0..c3 of one 16x8 tile) += A fragment x B fragment. */
static void mma(dot_ctx *d, LLVMValueRef *afr, LLVMValueRef *bfr, LLVMValueRef *acc4) {
  cg_ctx *c = d->c;
  const char *name = d->s->intrinsic;
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (!id) su_fatal("unknown LLVM intrinsic %s", name);
  LLVMTypeRef fty = LLVMIntrinsicGetType(c->llc, id, NULL, 0);
  LLVMTypeRef pt[2 * MAX_FRAG + 4];
  unsigned np = LLVMCountParamTypes(fty);
  SU_ASSERT(np == (unsigned)(d->s->na + d->s->nb + 4));
  LLVMGetParamTypes(fty, pt);
  LLVMValueRef args[2 * MAX_FRAG + 4];
  int n = 0;
  for (int r = 0; r < d->s->na; r++) args[n++] = afr[r];
  for (int r = 0; r < d->s->nb; r++) args[n++] = bfr[r];
  for (int r = 0; r < 4; r++) args[n++] = acc4[r];
  for (int i = 0; i < n; i++)
    if (LLVMTypeOf(args[i]) != pt[i]) args[i] = LLVMBuildBitCast(c->b, args[i], pt[i], "");
  LLVMValueRef r = cg_intrinsic(c, name, NULL, 0, args, n);
  for (int i = 0; i < 4; i++) acc4[i] = LLVMBuildExtractValue(c->b, r, (unsigned)i, "");
}

/* ---- the op ---- */

/* Fills d's shapes and the layout to compute in (rt's, or the MMA layout when rt's is
 * another one). */
static void setup_layout(dot_ctx *d, const ir_type *rt, tk_dtype in, int k) {
  cg_ctx *c = d->c;
  d->et = cg_dtype_type(c, in);
  d->bytes = ir_dtype_bytes(in);
  d->m = rt->shape[0];
  d->n = rt->shape[1];
  d->k = k;
  d->ml = cg_layout_of(c, rt);
  if (!mma_ready(&d->ml)) { /* IR laid out by hand: compute in the MMA layout, then move */
    ir_layout il;
    pass_tiling_mma(d->m, d->n, c->threads / CG_WARP, &il);
    bool ok = cg_layout_resolve(&il, rt, c->threads, c->vec, &d->ml);
    SU_ASSERT(ok && mma_ready(&d->ml));
  }
}

/* This thread's lane and warp coordinates, once the operands are readable. */
static void setup_lanes(dot_ctx *d) {
  cg_ctx *c = d->c;
  d->lane = LLVMBuildAnd(c->b, c->tid, cg_i32(c, CG_WARP - 1), "");
  d->g = LLVMBuildLShr(c->b, d->lane, cg_i32(c, 2), "");
  d->t = LLVMBuildAnd(c->b, d->lane, cg_i32(c, 3), "");
  d->wm8 = mul(d, cg_warp_coord(c, &d->ml, 0), 8);
  d->wn8 = mul(d, cg_warp_coord(c, &d->ml, 1), 8);
}

/* Fills d and stages a and b in shared memory, ending with the barrier after which the
 * fragments may be read. */
static void setup(dot_ctx *d, const ir_op *op) {
  cg_ctx *c = d->c;
  setup_layout(d, op->results[0]->type, op->operands[0]->type->dtype, op->operands[0]->type->shape[1]);
  d->sa = d->k + PAD_BYTES / d->bytes;
  d->sb = d->n + PAD_BYTES / d->bytes;
  int abytes = (d->m * d->sa * d->bytes + CG_VEC_BYTES - 1) / CG_VEC_BYTES * CG_VEC_BYTES;
  d->a = cg_smem_take(c, abytes + d->k * d->sb * d->bytes);
  LLVMValueRef off = cg_i32(c, abytes);
  d->b = LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->llc), d->a, &off, 1, "dot.b");
  stage(d, op->operands[0], d->a, d->sa);
  stage(d, op->operands[1], d->b, d->sb);
  cg_barrier(c);
  setup_lanes(d);
}

/* The product itself: acc (operand acc_at) plus the fragments of d's a and b. tf32x3
 * (as interp/dot.c, in the same order): small a x big b from zero, + big a x small b,
 * NaNs made 0, + big a x big b, then + acc. */
static void product(dot_ctx *d, const ir_op *op, int acc_at) {
  cg_ctx *c = d->c;
  const ir_value *res = op->results[0];
  cg_val x = cg_get_in(c, op->operands[acc_at], &d->ml);
  LLVMValueRef *acc = cg_slots(c, d->ml.per);
  for (int j = 0; j < d->ml.per; j++) acc[j] = d->x3 ? LLVMConstReal(d->et, 0.0) : x.v[x.n == 1 ? 0 : j];

  int mt = d->ml.ext[0] / 2, nt = d->ml.ext[1] / 2, s0 = d->ml.stride[0], s1 = d->ml.stride[1];
  LLVMValueRef *afr = cg_slots(c, mt * d->s->na), *bfr = cg_slots(c, (nt + 1) * d->s->nb);
  for (int part = 0; part < (d->x3 ? 3 : 1); part++) {
    d->small_a = d->x3 && part == 0;
    d->small_b = d->x3 && part == 1;
    if (d->x3 && part == 2)
      for (int j = 0; j < d->ml.per; j++) {
        LLVMValueRef nan = LLVMBuildFCmp(c->b, LLVMRealUNO, acc[j], acc[j], "");
        acc[j] = LLVMBuildSelect(c->b, nan, LLVMConstReal(d->et, 0.0), acc[j], "");
      }
    for (int ks = 0; ks < d->k / d->s->k; ks++) {
      for (int i = 0; i < mt; i++) load_a(d, i, ks, afr + i * d->s->na);
      for (int j = 0; j < nt; j += 2) load_b(d, j, j + 1 < nt, ks, bfr + j * d->s->nb);
      for (int i = 0; i < mt; i++)
        for (int j = 0; j < nt; j++) {
          /* c0, c1: row g, columns 2t, 2t+1; c2, c3: row g + 8 */
          int slot[4] = {2 * i * s0 + 2 * j * s1, 2 * i * s0 + (2 * j + 1) * s1,
                         (2 * i + 1) * s0 + 2 * j * s1, (2 * i + 1) * s0 + (2 * j + 1) * s1};
          LLVMValueRef acc4[4];
          for (int r = 0; r < 4; r++) acc4[r] = acc[slot[r]];
          mma(d, afr + i * d->s->na, bfr + j * d->s->nb, acc4);
          for (int r = 0; r < 4; r++) acc[slot[r]] = acc4[r];
        }
    }
  }
  if (d->x3)
    for (int j = 0; j < d->ml.per; j++) acc[j] = LLVMBuildFAdd(c->b, acc[j], x.v[x.n == 1 ? 0 : j], "");
  cg_layout rl = cg_layout_of(c, res->type);
  cg_val r = cg_relayout(c, (cg_val){acc, d->ml.per}, &d->ml, &rl);
  cg_set(c, res, r.v, r.n);
}

/* ---- ieee: f32 on the FMA units ---- */

/* acc + a @ b with each product and each sum rounded to f32, k in order from 0: the
 * interpreter's rule, so its result bit for bit (a multiply and an add, which LLVM does
 * not fuse without a contract flag: PTX mul.rn and add.rn). a and b are staged as for the
 * tensor cores; each thread then runs the K loop for its slots of the result's layout,
 * reading a's row and b's column of each from shared memory. */
static void fma_dot(cg_ctx *c, const ir_op *op) {
  const ir_value *res = op->results[0];
  dot_ctx d = {.c = c};
  d.et = cg_dtype_type(c, TK_F32);
  d.bytes = 4;
  d.m = res->type->shape[0];
  d.n = res->type->shape[1];
  d.k = op->operands[0]->type->shape[1];
  d.sa = d.k + PAD_BYTES / d.bytes;
  d.sb = d.n + PAD_BYTES / d.bytes;
  int abytes = (d.m * d.sa * d.bytes + CG_VEC_BYTES - 1) / CG_VEC_BYTES * CG_VEC_BYTES;
  d.a = cg_smem_take(c, abytes + d.k * d.sb * d.bytes);
  LLVMValueRef off = cg_i32(c, abytes);
  d.b = LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->llc), d.a, &off, 1, "dot.b");
  stage(&d, op->operands[0], d.a, d.sa);
  stage(&d, op->operands[1], d.b, d.sb);
  cg_barrier(c);

  cg_layout rl = cg_layout_of(c, res->type);
  cg_val x = cg_get_in(c, op->operands[2], &rl);
  LLVMValueRef *rows = cg_slots(c, rl.per), *cols = cg_slots(c, rl.per), *acc = cg_slots(c, rl.per);
  for (int j = 0; j < rl.per; j++) {
    rows[j] = cg_layout_coord(c, &rl, j, 0);
    cols[j] = cg_layout_coord(c, &rl, j, 1);
  }
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b), body = cg_block(c, "dot.k"), done = cg_block(c, "dot.done");
  LLVMBuildBr(c->b, body);
  LLVMPositionBuilderAtEnd(c->b, body);
  LLVMValueRef kk = LLVMBuildPhi(c->b, i32_type(&d), "k");
  LLVMValueRef zero = cg_i32(c, 0);
  LLVMAddIncoming(kk, &zero, &pre, 1);
  for (int j = 0; j < rl.per; j++) {
    acc[j] = LLVMBuildPhi(c->b, d.et, "");
    LLVMValueRef init = x.v[x.n == 1 ? 0 : j];
    LLVMAddIncoming(acc[j], &init, &pre, 1);
  }
  LLVMValueRef *next = cg_slots(c, rl.per);
  for (int j = 0; j < rl.per; j++) {
    LLVMValueRef va = LLVMBuildLoad2(c->b, d.et, at(&d, d.a, rows[j], d.sa, kk), "");
    LLVMValueRef vb = LLVMBuildLoad2(c->b, d.et, at(&d, d.b, kk, d.sb, cols[j]), "");
    LLVMSetAlignment(va, 4);
    LLVMSetAlignment(vb, 4);
    next[j] = LLVMBuildFAdd(c->b, acc[j], LLVMBuildFMul(c->b, va, vb, ""), "");
  }
  LLVMValueRef kn = LLVMBuildAdd(c->b, kk, cg_i32(c, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
  LLVMAddIncoming(kk, &kn, &latch, 1);
  for (int j = 0; j < rl.per; j++) LLVMAddIncoming(acc[j], &next[j], &latch, 1);
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, kn, cg_i32(c, d.k), ""), body, done);
  LLVMPositionBuilderAtEnd(c->b, done);
  cg_set(c, res, next, rl.per);
}

void cg_emit_dot(cg_ctx *c, const ir_op *op) {
  const ir_value *res = op->results[0];
  tk_dtype in = op->operands[0]->type->dtype;
  if (in == TK_F32 && op->attr == IR_DOT_IEEE) {
    fma_dot(c, op);
    return;
  }
  dot_ctx d = {.c = c, .s = shape_for(in, res->type->dtype)};
  if (!d.s) {
    cg_unsupported(c, op, "'dot' of these element types");
    return;
  }
  d.x3 = in == TK_F32 && op->attr == IR_DOT_TF32X3;
  setup(&d, op);
  product(&d, op, 2);
}

/* mma: a and b are slots already filled (and made visible) by the pipeline. */
void cg_emit_mma(cg_ctx *c, const ir_op *op) {
  const ir_value *res = op->results[0], *abuf = op->operands[0], *bbuf = op->operands[2];
  dot_ctx d = {.c = c, .s = shape_for(abuf->type->dtype, res->type->dtype)};
  if (!d.s) {
    cg_unsupported(c, op, "'mma' of these element types");
    return;
  }
  setup_layout(&d, res->type, abuf->type->dtype, abuf->type->shape[2]);
  d.tb = op->ints && op->ints[1];
  d.abuf = abuf->type;
  d.bbuf = bbuf->type;
  d.a = cg_slot_base(c, abuf, cg_slot(c, op->operands[1], 0));
  d.b = cg_slot_base(c, bbuf, cg_slot(c, op->operands[3], 0));
  setup_lanes(&d);
  product(&d, op, 4);
}
