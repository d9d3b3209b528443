/* Thread layouts, as codegen reads them: an IR layout (blocked or MMA, or a chain of
 * slices of one) resolved against a tile's shape into the numbers every emitter needs,
 * and the index of each slot, both on the host (static checks) and as LLVM values. A
 * value the IR left without a layout gets the tiling pass's default, so untiled IR still
 * compiles: all same-shaped values then agree, and shape changes go through relayout.c. */
#include "cg.h"

#include "../passes/passes.h"

#include <string.h>

void cg_layout_choose(cg_ctx *c, const ir_func *f) { c->vec = pass_tiling_vec(f); }

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* Fills the base fields from the blocked layout b; false if b is not a CTA's layout. */
static bool resolve_base(const ir_layout *b, int threads, cg_layout *l) {
  l->brank = b->rank;
  int lanes = 1, warps = 1;
  unsigned seen = 0;
  for (int d = 0; d < b->rank; d++) {
    if (b->size_per_thread[d] < 1 || b->threads_per_warp[d] < 1 || b->warps_per_cta[d] < 1)
      return false;
    l->spt[d] = b->size_per_thread[d];
    l->tpw[d] = b->threads_per_warp[d];
    l->wpc[d] = b->warps_per_cta[d];
    l->rpw[d] = ir_layout_rpw(b, d);
    l->cta[d] = l->spt[d] * l->rpw[d] * l->tpw[d] * l->wpc[d];
    lanes *= l->tpw[d];
    warps *= l->wpc[d];
    int o = b->order[d];
    if (o < 0 || o >= b->rank || (seen & (1u << o))) return false;
    seen |= 1u << o;
    l->order[d] = o;
  }
  if (lanes != CG_WARP || warps * CG_WARP != threads) return false;
  /* Lanes and warps are numbered fastest dim first, as in Triton. */
  int ls = 1, ws = 1;
  for (int k = 0; k < b->rank; k++) {
    int d = l->order[k];
    l->lstride[d] = ls;
    l->wstride[d] = ws;
    ls *= l->tpw[d];
    ws *= l->wpc[d];
  }
  return true;
}

/* Slot counts and strides of the kept dims, fastest (in the base order) first. */
static bool finish(cg_layout *l) {
  int bi[IR_MAX_RANK]; /* base dim → tile dim */
  for (int i = 0; i < l->rank; i++) bi[l->base[i]] = i;
  l->per = 1;
  l->fast = -1;
  for (int k = 0; k < l->brank; k++) {
    int d = l->order[k];
    if (!l->kept[d]) continue;
    int i = bi[d];
    /* A thread holding more than the dim along it holds each element once. */
    int run = l->spt[d] < l->shape[i] ? l->spt[d] : l->shape[i];
    /* repeats keep their place (copies of a warp's lane pattern), unless one pattern
     * already covers the dim: the copies would hold replicas only */
    if (l->rpw[d] > 1 && l->shape[i] > l->spt[d] * l->tpw[d]) run = l->spt[d] * l->rpw[d];
    l->ext[i] = run * ceil_div(l->shape[i], l->cta[d]);
    l->stride[i] = l->per;
    l->per *= l->ext[i];
    if (l->fast < 0) l->fast = i;
  }
  return true;
}

bool cg_layout_resolve(const ir_layout *il, const ir_type *t, int threads, int vec, cg_layout *out) {
  cg_layout l;
  memset(&l, 0, sizeof l);
  l.threads = threads;
  if (t->kind != IR_TILE) {
    l.numel = l.per = 1;
    *out = l;
    return true;
  }
  l.tile = true;
  l.rank = t->rank;
  l.numel = (int)ir_type_numel(t);
  for (int i = 0; i < t->rank; i++) l.shape[i] = t->shape[i];
  ir_layout dflt;
  if (!il) {
    pass_tiling_blocked(t->rank, t->shape, vec, threads / CG_WARP, &dflt);
    il = &dflt;
  }
  if (il->rank != t->rank) return false;
  /* Walk down the slice chain, remembering which base dims survive. */
  int map[IR_MAX_RANK]; /* tile dim → dim of the current layout */
  for (int i = 0; i < t->rank; i++) map[i] = i;
  const ir_layout *b = il;
  while (b->kind == IR_LAYOUT_SLICE) {
    for (int i = 0; i < t->rank; i++)
      if (map[i] >= b->slice_dim) map[i]++;
    b = b->parent;
  }
  /* An MMA or wgmma layout is the blocked layout of its fields (see pass_tiling_mma). */
  if (b->kind == IR_LAYOUT_SLICE || b->kind == IR_LAYOUT_SHARED || !resolve_base(b, threads, &l))
    return false;
  for (int i = 0; i < t->rank; i++) {
    l.base[i] = map[i];
    l.kept[map[i]] = true;
  }
  if (!finish(&l)) return false;
  *out = l;
  return true;
}

cg_layout cg_layout_of(cg_ctx *c, const ir_type *t) {
  cg_layout l;
  bool ok = cg_layout_resolve(t->kind == IR_TILE ? t->layout : NULL, t, c->threads, c->vec, &l);
  SU_ASSERT(ok); /* layouts are checked when the kernel starts (emit_kernel.c) */
  return l;
}

int cg_layout_group(const cg_layout *l, int run) {
  if (!l->tile || l->fast != l->rank - 1) return 1;
  int spt = l->spt[l->base[l->fast]], w = 1;
  /* A power of two dividing the run a thread owns, the dim, and its slot count, so that
   * a group never straddles two runs or the dim's wrap-around. */
  for (int w2 = 2; w2 <= spt && w2 <= run; w2 *= 2) {
    if (spt % w2 || l->shape[l->fast] % w2 || l->ext[l->fast] % w2) break;
    w = w2;
  }
  return w;
}

cg_layout cg_layout_slice(const cg_layout *l, int axis) {
  cg_layout s = *l;
  s.rank = l->rank - 1;
  s.kept[l->base[axis]] = false;
  s.numel = 1;
  for (int i = axis; i < s.rank; i++) {
    s.shape[i] = l->shape[i + 1];
    s.base[i] = l->base[i + 1];
  }
  for (int i = 0; i < s.rank; i++) s.numel *= s.shape[i];
  if (s.rank == 0) {
    memset(&s, 0, sizeof s);
    s.numel = s.per = 1;
    s.threads = l->threads;
    s.fast = -1;
    return s;
  }
  bool ok = finish(&s);
  SU_ASSERT(ok); /* a slice keeps dims its parent covered exactly */
  return s;
}

bool cg_layout_same(const cg_layout *a, const cg_layout *b) {
  if (a->tile != b->tile || a->numel != b->numel || a->per != b->per || a->rank != b->rank)
    return false;
  if (!a->tile || memcmp(a, b, sizeof *a) == 0) return true; /* built from zeroed structs */
  for (int j = 0; j < a->per; j++)
    for (int t = 0; t < a->threads; t += CG_WARP / 2) /* cheap necessary check first */
      if (cg_layout_elem_at(a, t, j, NULL) != cg_layout_elem_at(b, t, j, NULL)) return false;
  for (int t = 0; t < a->threads; t++)
    for (int j = 0; j < a->per; j++)
      if (cg_layout_elem_at(a, t, j, NULL) != cg_layout_elem_at(b, t, j, NULL)) return false;
  return true;
}

int cg_layout_slice_slot(const cg_layout *l, const cg_layout *s, int axis, int js, int ka) {
  int j = ka * l->stride[axis];
  for (int i = 0; i < s->rank; i++) j += ((js / s->stride[i]) % s->ext[i]) * l->stride[i < axis ? i : i + 1];
  return j;
}

/* ---- on the host ---- */

static int thread_coord_at(const cg_layout *l, int t, int d) {
  int lane = t % CG_WARP, warp = t / CG_WARP;
  return ((warp / l->wstride[d]) % l->wpc[d]) * l->tpw[d] + (lane / l->lstride[d]) % l->tpw[d];
}

/* The part of slot k's index along base dim d that does not depend on the thread. */
static int64_t slot_offset(const cg_layout *l, int d, int k) {
  int spt = l->spt[d], rpw = l->rpw[d];
  int e = k % spt, h = (k / spt) % rpw, r = k / (spt * rpw);
  return (int64_t)r * l->cta[d] + (int64_t)h * spt * l->tpw[d] + e;
}

/* The unwrapped index along tile dim i (>= shape[i] for a replica). */
static int raw_at(const cg_layout *l, int t, int j, int i) {
  int d = l->base[i], spt = l->spt[d];
  int k = (j / l->stride[i]) % l->ext[i];
  int lane = t % CG_WARP, warp = t / CG_WARP;
  int wd = (warp / l->wstride[d]) % l->wpc[d], ld = (lane / l->lstride[d]) % l->tpw[d];
  return (int)slot_offset(l, d, k) + wd * spt * l->rpw[d] * l->tpw[d] + ld * spt;
}

int cg_layout_coord_at(const cg_layout *l, int t, int j, int i, bool *owner) {
  int raw = raw_at(l, t, j, i);
  if (owner) *owner = raw < l->shape[i];
  return raw % l->shape[i];
}

int64_t cg_layout_elem_at(const cg_layout *l, int t, int j, bool *owner) {
  if (owner) *owner = true;
  if (!l->tile) return 0;
  int64_t idx = 0;
  for (int i = 0; i < l->rank; i++) {
    bool own;
    idx = idx * l->shape[i] + cg_layout_coord_at(l, t, j, i, &own);
    if (owner) *owner &= own;
  }
  if (owner)
    for (int d = 0; d < l->brank; d++)
      if (!l->kept[d] && thread_coord_at(l, t, d) != 0) *owner = false;
  return idx;
}

/* ---- as LLVM values ---- */

LLVMValueRef cg_lane_coord(cg_ctx *c, const cg_layout *l, int d) {
  LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, cg_i32(c, CG_WARP - 1), "");
  lane = LLVMBuildUDiv(c->b, lane, cg_i32(c, l->lstride[d]), "");
  return LLVMBuildURem(c->b, lane, cg_i32(c, l->tpw[d]), "");
}

LLVMValueRef cg_warp_coord(cg_ctx *c, const cg_layout *l, int d) {
  LLVMValueRef warp = LLVMBuildUDiv(c->b, c->tid, cg_i32(c, CG_WARP), "");
  warp = LLVMBuildUDiv(c->b, warp, cg_i32(c, l->wstride[d]), "");
  return LLVMBuildURem(c->b, warp, cg_i32(c, l->wpc[d]), "");
}

LLVMValueRef cg_thread_coord(cg_ctx *c, const cg_layout *l, int d) {
  LLVMValueRef w = LLVMBuildMul(c->b, cg_warp_coord(c, l, d), cg_i32(c, l->tpw[d]), "");
  return LLVMBuildAdd(c->b, w, cg_lane_coord(c, l, d), "");
}

/* The unwrapped index along tile dim i; its constant part is added last so that the
 * slots of one thread share the thread-dependent part. */
static LLVMValueRef raw_index(cg_ctx *c, const cg_layout *l, int j, int i) {
  int d = l->base[i], spt = l->spt[d];
  int k = (j / l->stride[i]) % l->ext[i];
  LLVMValueRef tc;
  if (l->rpw[d] == 1) {
    tc = LLVMBuildMul(c->b, cg_thread_coord(c, l, d), cg_i32(c, spt), "");
  } else {
    LLVMValueRef w = LLVMBuildMul(c->b, cg_warp_coord(c, l, d), cg_i32(c, spt * l->rpw[d] * l->tpw[d]), "");
    tc = LLVMBuildAdd(c->b, w, LLVMBuildMul(c->b, cg_lane_coord(c, l, d), cg_i32(c, spt), ""), "");
  }
  return LLVMBuildAdd(c->b, tc, cg_i32(c, slot_offset(l, d, k)), "");
}

LLVMValueRef cg_layout_coord(cg_ctx *c, const cg_layout *l, int j, int i) {
  if (!l->tile) return cg_i32(c, 0);
  return LLVMBuildURem(c->b, raw_index(c, l, j, i), cg_i32(c, l->shape[i]), "");
}

LLVMValueRef cg_layout_index(cg_ctx *c, const cg_layout *l, int j) {
  LLVMValueRef idx = cg_i32(c, 0);
  for (int i = 0; l->tile && i < l->rank; i++) {
    idx = LLVMBuildMul(c->b, idx, cg_i32(c, l->shape[i]), "");
    idx = LLVMBuildAdd(c->b, idx, cg_layout_coord(c, l, j, i), "");
  }
  return idx;
}

static LLVMValueRef and_opt(cg_ctx *c, LLVMValueRef a, LLVMValueRef b) {
  return a ? LLVMBuildAnd(c->b, a, b, "") : b;
}

LLVMValueRef cg_layout_in_range(cg_ctx *c, const cg_layout *l, int j, int i) {
  int d = l->base[i];
  /* Exact covering: every unwrapped index is in range. */
  if (l->ext[i] * l->tpw[d] * l->wpc[d] == l->shape[i]) return NULL;
  return LLVMBuildICmp(c->b, LLVMIntULT, raw_index(c, l, j, i), cg_i32(c, l->shape[i]), "");
}

LLVMValueRef cg_layout_owner(cg_ctx *c, const cg_layout *l, int j, int skip) {
  if (!l->tile) return NULL;
  LLVMValueRef own = NULL;
  for (int i = 0; i < l->rank; i++) {
    LLVMValueRef in = i == skip ? NULL : cg_layout_in_range(c, l, j, i);
    if (in) own = and_opt(c, own, in);
  }
  for (int d = 0; d < l->brank; d++)
    if (!l->kept[d] && l->tpw[d] * l->wpc[d] > 1)
      own = and_opt(c, own, LLVMBuildICmp(c->b, LLVMIntEQ, cg_thread_coord(c, l, d),
                                          cg_i32(c, 0), ""));
  return own;
}
