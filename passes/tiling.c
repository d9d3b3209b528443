/* Tiling, part one: the thread layout of every tile value (Triton's layout assignment).
 *
 * 1. Anchors. Every load, store and atomic gives its pointer tile the blocked layout that
 *    makes the access coalesced (pass_tiling_blocked: 16-byte vectors along the last dim,
 *    a warp's lanes along it first). One vector width serves the whole kernel, so that
 *    same-shaped accesses of different widths agree and need no conversion.
 *    Before them, every dot result (and so its accumulator) takes the tensor cores' MMA
 *    layout (pass_tiling_mma), spread first, so that the accesses it reaches (the store
 *    of the result) take it too. The operands a and b may have any layout: the loads of
 *    them anchor at the same time, so they keep 16-byte vectors even when they share a
 *    mask or offset with the epilogue.
 *    Accesses anchor highest rank first, each rank spread before the next, so a row
 *    vector or row statistic of a 2-D tile is loaded or stored in the 2-D layout's slice
 *    (replicated, written by its owners) rather than meeting it in a conversion; an
 *    access takes a blocked-derived layout only if it keeps its anchor's vector width.
 * 2. Propagation, breadth first from the anchors, forward and backward through the ops
 *    that can share a layout for free: elementwise ops, memory ops, broadcast, scan and
 *    loop-carried values share one; a reduction along d yields SLICE(L, d) from L, and
 *    expand_dims along d takes SLICE(L, d) to L, so a row statistic broadcast back over
 *    its rows never moves; trans permutes a blocked layout. The first layout to reach a
 *    value wins. A value nothing reaches gets its shape's anchor layout.
 * 3. Materialization. Each op states the layouts it wants for its operands given its
 *    result's; where a value's layout differs, a convert_layout (one per value and layout,
 *    placed after the value's definition) is inserted, or for an arange, constant or
 *    splat a second copy made in the wanted layout; a broadcast is made again from its
 *    source, so only the row or column moves. Then every tile type is rewritten.
 *
 * Layouts already in the IR are kept and propagate like anchors; a kernel whose tiles all
 * have one is left alone. */
#include "pass_util.h"

#include <string.h>

enum { WARP = TG_WARP, VEC_BYTES = TG_VEC_BYTES, DEFAULT_VEC = 4 };

static int clampi(int x, int lo, int hi) { return x < lo ? lo : x > hi ? hi : x; }

void pass_tiling_blocked(int rank, const int *shape, int vec, int num_warps, ir_layout *out) {
  memset(out, 0, sizeof *out);
  out->kind = IR_LAYOUT_BLOCKED;
  out->rank = rank;
  int64_t numel = 1;
  for (int d = 0; d < rank; d++) {
    numel *= shape[d];
    out->size_per_thread[d] = 1;
    out->order[d] = rank - 1 - d;
  }
  int last = rank - 1;
  int spt = clampi(vec, 1, shape[last]);
  /* A tile smaller than the CTA first spreads one element per thread. */
  while (spt > 1 && numel < (int64_t)spt * WARP * num_warps) spt /= 2;
  out->size_per_thread[last] = spt;
  /* Lanes fastest dim first (coalescing), whatever is left on the slowest dim. */
  int lanes = WARP;
  for (int d = last; d > 0; d--) {
    int t = clampi(lanes, 1, shape[d] / out->size_per_thread[d] > 1 ? shape[d] / out->size_per_thread[d] : 1);
    out->threads_per_warp[d] = t;
    lanes /= t;
  }
  out->threads_per_warp[0] = lanes;
  /* Warps slowest dim first: a reduction along the fast (contiguous) dim then stays within
   * a warp whenever the slow dims are big enough; what is left goes to the last dim. */
  int warps = num_warps;
  for (int d = 0; d < last; d++) {
    int room = shape[d] / (out->size_per_thread[d] * out->threads_per_warp[d]);
    int w = clampi(warps, 1, room > 1 ? room : 1);
    out->warps_per_cta[d] = w;
    warps /= w;
  }
  out->warps_per_cta[last] = warps;
}

void pass_tiling_mma(int m, int n, int num_warps, ir_layout *out) {
  memset(out, 0, sizeof *out);
  out->kind = IR_LAYOUT_MMA;
  out->rank = 2;
  out->size_per_thread[0] = 1;
  out->size_per_thread[1] = 2;
  out->threads_per_warp[0] = 8;
  out->threads_per_warp[1] = 4;
  out->order[0] = 1;
  /* Split the longer per-warp side while a warp keeps whole 16x8 instruction tiles; warps
   * left over replicate along N (only tiles smaller than the CTA's instruction grid). */
  int wm = 1, wn = 1;
  while (wm * wn < num_warps) {
    bool can_m = m >= 32 * wm, can_n = n >= 16 * wn;
    if (can_m && (!can_n || m / wm >= n / wn)) wm *= 2;
    else wn *= 2;
  }
  out->warps_per_cta[0] = wm;
  out->warps_per_cta[1] = wn;
}

void pass_tiling_wgmma(int m, int n, int num_warps, ir_layout *out) {
  (void)m;
  (void)n;
  memset(out, 0, sizeof *out);
  out->kind = IR_LAYOUT_WGMMA;
  out->rank = 2;
  out->size_per_thread[0] = 1;
  out->size_per_thread[1] = 2;
  out->reps_per_warp[0] = 2;
  out->reps_per_warp[1] = 1;
  out->threads_per_warp[0] = 8;
  out->threads_per_warp[1] = 4;
  out->warps_per_cta[0] = num_warps;
  out->warps_per_cta[1] = 1;
  out->order[0] = 1;
  out->order[1] = 0;
}

/* 8-bit wgmma has no transposition immediates: both operands must lie K-major in shared
 * memory. a does unless it is a transpose (its slot or staging buffer keeps the tile's
 * row-major order, [M, K]); b does when it is the transpose of a [N, K] tile used by the
 * dot alone (lower_dot stages or rings that tile, K contiguous). */
static bool k_major_operands(const ir_func *f, const ir_op *dot) {
  const ir_value *a = dot->operands[0], *b = dot->operands[1];
  if (a->def && a->def->opc == IR_TRANS) return false;
  const ir_op *t = b->def;
  return t && t->opc == IR_TRANS && t->nints == 2 && t->ints[0] == 1 && pass_count_uses(f->body, b) == 1;
}

bool pass_dot_uses_wgmma(const ir_module *m, const ir_func *f, const ir_op *dot) {
  if (!pass_has(m, PASS_WGMMA)) return false;
  const ir_type *a = dot->operands[0]->type, *r = dot->results[0]->type;
  tk_dtype in = a->dtype;
  /* 8-bit: s8 into i32, or fp8 (e4m3, e5m2, one of each) into f32 (fp8dot.c) */
  bool s8 = in == TK_I8 && r->dtype == TK_I32;
  bool f8 = ir_dtype_is_fp8(in) && ir_dtype_is_fp8(dot->operands[1]->type->dtype) && r->dtype == TK_F32;
  bool b8 = s8 || f8;
  if (((in != TK_F16 && in != TK_BF16) || r->dtype != TK_F32) && !b8) return false;
  if (r->rank != 2 || (b8 && !k_major_operands(f, dot))) return false;
  int w = f->num_warps, mm = r->shape[0], n = r->shape[1], k = a->shape[1];
  return w % 4 == 0 && mm % (16 * w) == 0 && n % 8 == 0 && (n <= 256 || n % 256 == 0) &&
         k % (b8 ? 32 : 16) == 0;
}

static void note_vec(ir_op *op, void *ctx) {
  int *vec = ctx;
  if (op->opc != IR_LOAD && op->opc != IR_STORE && op->opc != IR_ATOMIC && op->opc != IR_ATOMIC_CAS)
    return;
  const ir_type *t = op->operands[0]->type;
  if (t->kind != IR_TILE || t->elem->kind != IR_PTR) return;
  int v = VEC_BYTES / ir_dtype_bytes(t->elem->elem->dtype);
  if (v > *vec) *vec = v;
}

int pass_tiling_vec(const ir_func *f) {
  int vec = 0;
  ir_walk(f->body, note_vec, &vec);
  return vec ? vec : DEFAULT_VEC;
}

/* ---- the solver ---- */

typedef struct {
  ir_module *m;
  ir_func *f;
  su_arena *a;
  int n;                   /* values */
  const ir_layout **lay;   /* by value id */
  ir_op ***users;          /* by value id: the ops that use it */
  int *nusers;
  const ir_value **work;   /* values whose layout is new, a FIFO: nearest anchor wins */
  int nwork, head;
  int untiled;             /* tile values the IR gave no layout */
  const ir_op **access;    /* by value id: an access whose pointer tile it is, or NULL */
  bool *held;              /* by value id: not to be laid out yet (see pass_tiling) */
  ir_op **ops;             /* every op, in pre-order */
  int nops;
  int vec;
  bool changed;
} tiler;

static bool is_tile(const ir_value *v) { return v && v->type->kind == IR_TILE; }

/* Holds v and the pure tile computation it comes from (see pass_tiling). */
static void hold(tiler *t, const ir_value *v) {
  if (!is_tile(v) || t->held[v->id]) return;
  t->held[v->id] = true;
  const ir_op *d = v->def;
  if (d && (ir_op_info(d->opc)->traits & IR_PURE) && !d->nregions)
    for (int i = 0; i < d->noperands; i++) hold(t, d->operands[i]);
}

static bool is_access(const ir_op *op) {
  return op->opc == IR_LOAD || op->opc == IR_STORE || op->opc == IR_ATOMIC || op->opc == IR_ATOMIC_CAS;
}

static const ir_layout *anchor(tiler *t, const ir_type *ty) {
  ir_layout l;
  pass_tiling_blocked(ty->rank, ty->shape, t->vec, t->f->num_warps, &l);
  return ir_layout_intern(t->m, &l);
}

static bool keeps_vectors(tiler *t, const ir_op *op, const ir_layout *l);

static void set(tiler *t, const ir_value *v, const ir_layout *l) {
  if (!is_tile(v) || !l || t->lay[v->id] || l->rank != v->type->rank || t->held[v->id]) return;
  /* A pointer tile can be reached around its access (an addptr of a shared arange). */
  if (t->access[v->id] && !keeps_vectors(t, t->access[v->id], l)) return;
  t->lay[v->id] = l;
  t->work[t->nwork++] = v;
}

static const ir_layout *lay_of(tiler *t, const ir_value *v) { return is_tile(v) ? t->lay[v->id] : NULL; }

static const ir_layout *slice(tiler *t, const ir_layout *parent, int dim) {
  if (!parent || parent->rank < 2) return NULL;
  ir_layout l;
  memset(&l, 0, sizeof l);
  l.kind = IR_LAYOUT_SLICE;
  l.parent = parent;
  l.slice_dim = dim;
  return ir_layout_intern(t->m, &l);
}

/* perm[i] = the operand dim result dim i comes from; inverse permutes back. */
static const ir_layout *permute(tiler *t, const ir_layout *src, const int *perm, bool inverse) {
  if (!src || src->kind != IR_LAYOUT_BLOCKED) return NULL;
  ir_layout l = *src;
  int where[IR_MAX_RANK]; /* dim of src → dim of the result */
  for (int i = 0; i < src->rank; i++) {
    int from = inverse ? i : perm[i], to = inverse ? perm[i] : i;
    l.size_per_thread[to] = src->size_per_thread[from];
    l.threads_per_warp[to] = src->threads_per_warp[from];
    l.warps_per_cta[to] = src->warps_per_cta[from];
    where[from] = to;
  }
  for (int k = 0; k < src->rank; k++) l.order[k] = where[src->order[k]];
  return ir_layout_intern(t->m, &l);
}

/* The values an op keeps in one layout: the tile operands and results of `group` ops. */
static bool is_group(const ir_op *op) {
  switch (op->opc) {
  case IR_LOAD: case IR_STORE: case IR_ATOMIC: case IR_ATOMIC_CAS: case IR_SCAN:
  case IR_BROADCAST:
    return true;
  default:
    return (ir_op_info(op->opc)->traits & IR_ELEM) != 0;
  }
}

/* The values tied to carried value i of a for or if (its result, region argument,
 * initial value and yielded values). */
static void tie_carried(tiler *t, ir_op *op, int i, const ir_layout *l) {
  set(t, op->results[i], l);
  if (op->opc == IR_FOR) {
    set(t, op->operands[3 + i], l);
    set(t, op->regions[0]->args[1 + i], l);
  }
  for (int r = 0; r < op->nregions; r++)
    if (op->regions[r]->last && op->regions[r]->last->opc == IR_YIELD)
      set(t, op->regions[r]->last->operands[i], l);
}

static const ir_layout *carried_layout(tiler *t, ir_op *op, int i) {
  const ir_layout *l = lay_of(t, op->results[i]);
  if (!l && op->opc == IR_FOR) l = lay_of(t, op->operands[3 + i]);
  if (!l && op->opc == IR_FOR) l = lay_of(t, op->regions[0]->args[1 + i]);
  for (int r = 0; !l && r < op->nregions; r++)
    if (op->regions[r]->last && op->regions[r]->last->opc == IR_YIELD)
      l = lay_of(t, op->regions[r]->last->operands[i]);
  return l;
}

/* How many elements along the tile's last dim (the one row-major addresses follow) a
 * thread holds side by side under l, up to the kernel's vector width: the widest vector
 * an access in l can use. */
static int contiguity(const tiler *t, const ir_layout *l, const ir_type *ty) {
  int d = ty->rank - 1; /* the last tile dim, as a dim of the current layout */
  unsigned gone = 0;    /* dims of the current layout that slices removed */
  while (l->kind == IR_LAYOUT_SLICE) {
    unsigned up = 0;
    for (int i = 0; i < IR_MAX_RANK; i++)
      if (gone & (1u << i)) up |= 1u << (i >= l->slice_dim ? i + 1 : i);
    gone = up | (1u << l->slice_dim);
    if (d >= l->slice_dim) d++;
    l = l->parent;
  }
  /* The per-thread run is contiguous only along the fastest surviving dim. */
  for (int k = 0; k < l->rank; k++) {
    int o = l->order[k];
    if (gone & (1u << o)) continue;
    if (o != d) return 1;
    break;
  }
  int run = l->size_per_thread[d];
  if (run > ty->shape[ty->rank - 1]) run = ty->shape[ty->rank - 1];
  return run < t->vec ? run : t->vec;
}

static const ir_layout *base_of(const ir_layout *l) {
  while (l->kind == IR_LAYOUT_SLICE) l = l->parent;
  return l;
}

/* Whether access op may take layout l from its neighbours. A layout derived from a blocked
 * one only when its vectors stay as wide as under the access's own anchor: a replicated
 * (slice) layout costs duplicate loads that hit the cache (stores and atomics are issued
 * by the owners only), narrower vectors would cost more transactions than a conversion
 * through shared memory. The tensor cores' layout always: its epilogue accesses are
 * half-coalesced by design (see pass_tiling), cheaper than a round trip of the tile. */
static bool keeps_vectors(tiler *t, const ir_op *op, const ir_layout *l) {
  const ir_type *pt = op->operands[0]->type;
  if (!is_access(op) || !is_tile(op->operands[0]) || l->rank != pt->rank) return true;
  if (base_of(l)->kind != IR_LAYOUT_BLOCKED) return true;
  return contiguity(t, l, pt) >= contiguity(t, anchor(t, pt), pt);
}

/* Spreads what is known about op's values to the rest of them. */
static void infer(tiler *t, ir_op *op) {
  if (is_group(op)) {
    const ir_layout *l = NULL;
    for (int i = 0; i < op->nresults && !l; i++) l = lay_of(t, op->results[i]);
    for (int i = 0; i < op->noperands && !l; i++) l = lay_of(t, op->operands[i]);
    if (l && !keeps_vectors(t, op, l)) return; /* the access anchors itself later */
    for (int i = 0; i < op->nresults; i++) set(t, op->results[i], l);
    for (int i = 0; i < op->noperands; i++) set(t, op->operands[i], l);
    return;
  }
  switch (op->opc) {
  case IR_REDUCE: case IR_ARGREDUCE: {
    const ir_layout *src = lay_of(t, op->operands[0]), *res = lay_of(t, op->results[0]);
    if (src) set(t, op->results[0], slice(t, src, (int)op->attr2));
    if (res && res->kind == IR_LAYOUT_SLICE && res->slice_dim == op->attr2)
      set(t, op->operands[0], res->parent);
    return;
  }
  case IR_EXPAND_DIMS: {
    const ir_layout *src = lay_of(t, op->operands[0]), *res = lay_of(t, op->results[0]);
    if (res) set(t, op->operands[0], slice(t, res, (int)op->attr2));
    if (src && src->kind == IR_LAYOUT_SLICE && src->slice_dim == op->attr2)
      set(t, op->results[0], src->parent);
    return;
  }
  case IR_TRANS:
    /* Forward only: a transposed tile is then stored through one conversion, where the
     * other way its producers would compute, and usually load, uncoalesced. */
    set(t, op->results[0], permute(t, lay_of(t, op->operands[0]), op->ints, false));
    return;
  case IR_DOT: /* the accumulator goes in and out of the tensor cores in one layout */
    set(t, op->results[0], lay_of(t, op->operands[2]));
    set(t, op->operands[2], lay_of(t, op->results[0]));
    return;
  case IR_FOR: case IR_IF:
    for (int i = 0; i < op->nresults; i++) tie_carried(t, op, i, carried_layout(t, op, i));
    return;
  case IR_YIELD:
    infer(t, op->parent->parent);
    return;
  default:
    return;
  }
}

enum { OPERAND_DEPTH = 3 };

/* Whether v reaches operand a or b of a dot, directly or through a short chain of pure
 * elementwise ops (a cast): a tile that is staged through shared memory, whatever its
 * layout. */
static bool feeds_operand(const tiler *t, const ir_value *v, int depth) {
  for (int k = 0; k < t->nusers[v->id]; k++) {
    const ir_op *u = t->users[v->id][k];
    if (u->opc == IR_DOT && (u->operands[0] == v || u->operands[1] == v)) return true;
    bool elem = (ir_op_info(u->opc)->traits & (IR_ELEM | IR_PURE)) == (IR_ELEM | IR_PURE);
    if (depth > 0 && elem && u->nresults == 1 && feeds_operand(t, u->results[0], depth - 1))
      return true;
  }
  return false;
}

static void drain(tiler *t) {
  while (t->head < t->nwork) {
    const ir_value *v = t->work[t->head++];
    for (int k = 0; k < t->nusers[v->id]; k++) infer(t, t->users[v->id][k]);
    /* The definition, or for a region argument the op owning the region. */
    ir_op *def = v->def ? v->def : v->owner ? v->owner->parent : NULL;
    if (def) infer(t, def);
  }
}

/* ---- setup ---- */

static void collect(ir_op *op, void *ctx) {
  tiler *t = ctx;
  t->ops[t->nops++] = op;
}

static void count_ops(ir_op *op, void *ctx) {
  (void)op;
  ++*(int *)ctx;
}

static void build_users(tiler *t) {
  for (int i = 0; i < t->nops; i++) {
    for (int k = 0; k < t->ops[i]->noperands; k++) t->nusers[t->ops[i]->operands[k]->id]++;
    if (is_access(t->ops[i]) && is_tile(t->ops[i]->operands[0]))
      t->access[t->ops[i]->operands[0]->id] = t->ops[i];
  }
  for (int v = 0; v < t->n; v++) {
    t->users[v] = SU_NEW_ARRAY(t->a, ir_op *, t->nusers[v] + 1);
    t->nusers[v] = 0;
  }
  for (int i = 0; i < t->nops; i++)
    for (int k = 0; k < t->ops[i]->noperands; k++) {
      int id = t->ops[i]->operands[k]->id;
      t->users[id][t->nusers[id]++] = t->ops[i];
    }
}

/* Every value of the kernel in print order, through `visit`. */
static void each_value(tiler *t, void (*visit)(tiler *t, ir_value *v)) {
  for (int i = 0; i < t->f->body->nargs; i++) visit(t, t->f->body->args[i]);
  for (int i = 0; i < t->nops; i++) {
    ir_op *op = t->ops[i];
    for (int r = 0; r < op->nresults; r++) visit(t, op->results[r]);
    for (int g = 0; g < op->nregions; g++)
      for (int r = 0; r < op->regions[g]->nargs; r++) visit(t, op->regions[g]->args[r]);
  }
}

static void count_untiled(tiler *t, ir_value *v) {
  if (is_tile(v) && !v->type->layout) t->untiled++;
}

static void seed_given(tiler *t, ir_value *v) {
  if (is_tile(v) && v->type->layout) set(t, v, v->type->layout);
}

static void seed_default(tiler *t, ir_value *v) {
  if (is_tile(v) && !t->lay[v->id]) {
    set(t, v, anchor(t, v->type));
    drain(t);
  }
}

/* ---- materialization ---- */

typedef struct {
  const ir_value *v;
  const ir_layout *l;
  ir_value *conv;
} memo;

typedef struct {
  memo *items;
  int n, cap;
} memos;

enum { REMAT_DEPTH = 3 };

/* Whether v is cheaper made again in another layout than moved there: an arange,
 * constant or splat, or a short elementwise chain over them (`pid * BM + arange(0, BM)`). */
static bool remat_ok(const ir_value *v, int depth) {
  const ir_op *op = v->def;
  if (!op || op->nresults != 1) return false;
  if (op->opc == IR_ARANGE || op->opc == IR_CONST || op->opc == IR_SPLAT) return true;
  if (depth == 0 || !(ir_op_info(op->opc)->traits & IR_ELEM) || !(ir_op_info(op->opc)->traits & IR_PURE))
    return false;
  for (int i = 0; i < op->noperands; i++)
    if (is_tile(op->operands[i]) && !remat_ok(op->operands[i], depth - 1)) return false;
  return true;
}

/* v in layout l: v itself, a copy of v's defining op when that is a source or a
 * broadcast, or a convert_layout placed right after v's definition (so it dominates
 * every use), made once per value and layout. */
static ir_value *converted(tiler *t, memos *ms, ir_value *v, const ir_layout *l) {
  if (!is_tile(v) || !l || t->lay[v->id] == l) return v;
  for (int i = 0; i < ms->n; i++)
    if (ms->items[i].v == v && ms->items[i].l == l) return ms->items[i].conv;
  ir_block *blk = v->def ? v->def->parent : v->owner;
  ir_op *before = v->def ? v->def->next : blk->first;
  ir_loc loc = v->def ? v->def->loc : (blk->first ? blk->first->loc : t->f->loc);
  const ir_type *ty = ir_type_with_layout(t->m, v->type, l);
  ir_op *cv;
  /* A broadcast is remade from its source moved instead: a row or column, not the tile. */
  if (remat_ok(v, REMAT_DEPTH) || (v->def && v->def->opc == IR_BROADCAST)) {
    ir_op *def = v->def;
    ir_value *opnds[3];
    for (int i = 0; i < def->noperands && i < 3; i++) opnds[i] = converted(t, ms, def->operands[i], l);
    cv = ir_op_new(t->m, def->opc, loc, def->noperands, opnds, 1, &ty);
    cv->attr = def->attr;
    cv->attr2 = def->attr2;
    cv->cval = def->cval;
  } else {
    cv = ir_op_new(t->m, IR_CONVERT_LAYOUT, loc, 1, &v, 1, &ty);
  }
  ir_block_insert_before(blk, cv, before);
  if (ms->n == ms->cap) {
    ms->cap = ms->cap ? 2 * ms->cap : 16;
    memo *grown = SU_NEW_ARRAY(t->a, memo, ms->cap);
    if (ms->n) memcpy(grown, ms->items, sizeof(memo) * (size_t)ms->n);
    ms->items = grown;
  }
  ms->items[ms->n++] = (memo){v, l, cv->results[0]};
  t->changed = true;
  return cv->results[0];
}

/* The layout op wants for operand k, NULL when any will do. Also pins the results whose
 * layout follows from the operands (memory ops follow the pointer, reductions their
 * operand). */
static const ir_layout *wanted(tiler *t, ir_op *op, int k) {
  const ir_layout *res = op->nresults ? lay_of(t, op->results[0]) : NULL;
  switch (op->opc) {
  case IR_LOAD: case IR_STORE: case IR_ATOMIC: case IR_ATOMIC_CAS:
    return lay_of(t, op->operands[0]);
  case IR_EXPAND_DIMS: return slice(t, res, (int)op->attr2);
  case IR_DOT: return k == 2 ? res : NULL; /* a and b are staged through shared memory */
  case IR_HISTOGRAM: return k == 1 ? lay_of(t, op->operands[0]) : NULL; /* the mask follows x */
  case IR_REDUCE: case IR_ARGREDUCE: case IR_RESHAPE: case IR_CONVERT_LAYOUT: case IR_SLICE: case IR_JOIN: case IR_GATHER: return NULL;
  case IR_FOR: return k >= 3 ? lay_of(t, op->regions[0]->args[k - 2]) : NULL;
  case IR_YIELD: {
    ir_op *owner = op->parent->parent;
    return owner->opc == IR_FOR ? lay_of(t, owner->regions[0]->args[k + 1]) : lay_of(t, owner->results[k]);
  }
  default: return is_group(op) ? res : NULL;
  }
}

static void pin_results(tiler *t, ir_op *op) {
  switch (op->opc) {
  case IR_LOAD: case IR_ATOMIC: case IR_ATOMIC_CAS:
    if (is_tile(op->results[0])) t->lay[op->results[0]->id] = lay_of(t, op->operands[0]);
    return;
  case IR_REDUCE: case IR_ARGREDUCE:
    if (is_tile(op->results[0]))
      t->lay[op->results[0]->id] = slice(t, lay_of(t, op->operands[0]), (int)op->attr2);
    return;
  case IR_TRANS: /* free in the permuted layout; its users convert if they must */
    if (permute(t, lay_of(t, op->operands[0]), op->ints, false))
      t->lay[op->results[0]->id] = permute(t, lay_of(t, op->operands[0]), op->ints, false);
    return;
  case IR_FOR:
    for (int i = 0; i < op->nresults; i++)
      if (is_tile(op->results[i])) t->lay[op->results[i]->id] = lay_of(t, op->regions[0]->args[i + 1]);
    return;
  default:
    return;
  }
}

static void materialize(tiler *t) {
  memos ms = {0};
  for (int i = 0; i < t->nops; i++) {
    ir_op *op = t->ops[i];
    pin_results(t, op);
    for (int k = 0; k < op->noperands; k++) op->operands[k] = converted(t, &ms, op->operands[k], wanted(t, op, k));
  }
}

static void retype(tiler *t, ir_value *v) {
  if (!is_tile(v) || v->type->layout == t->lay[v->id]) return;
  v->type = ir_type_with_layout(t->m, v->type, t->lay[v->id]);
  t->changed = true;
}

bool pass_tiling(ir_module *m, ir_func *f) {
  tiler t = {.m = m, .f = f, .a = su_arena_new()};
  t.n = ir_number_values(f);
  int nops = 0;
  ir_walk(f->body, count_ops, &nops);
  t.ops = SU_NEW_ARRAY(t.a, ir_op *, nops + 1);
  ir_walk(f->body, collect, &t);
  each_value(&t, count_untiled);
  if (t.untiled == 0) {
    su_arena_free(t.a);
    return false;
  }
  t.lay = SU_NEW_ARRAY(t.a, const ir_layout *, t.n + 1);
  t.users = SU_NEW_ARRAY(t.a, ir_op **, t.n + 1);
  t.nusers = SU_NEW_ARRAY(t.a, int, t.n + 1);
  t.work = SU_NEW_ARRAY(t.a, const ir_value *, t.n + 1);
  t.access = SU_NEW_ARRAY(t.a, const ir_op *, t.n + 1);
  t.held = SU_NEW_ARRAY(t.a, bool, t.n + 1);
  t.vec = pass_tiling_vec(f);
  build_users(&t);

  each_value(&t, seed_given);
  /* Dot results first, with the loads of dot operands, spread together before any other
   * access anchors (nearest seed wins). The accumulator then stays in the tensor cores'
   * layout through the loop that carries it, and the epilogue reads and writes memory in
   * it, with no shared-memory round trip (each thread's 2 adjacent columns per row:
   * half-coalesced, which the epilogue of a long K loop can afford). The operands go to
   * shared memory in any layout, so the MMA layout would buy their loads nothing, while
   * its 2-element runs, spread into them through a mask or offset the epilogue shares
   * (`rm[:, None] < M` after CSE), would narrow every load of the K loop and its staging
   * to 4 bytes; seeded as well, they keep their 16-byte vectors, and the epilogue
   * converts the few row or column vectors it shares with them, once. */
  /* What the operand loads compute their addresses and masks from is held back while the
   * dot results spread: an epilogue that computes a while (bias, gelu) before its store
   * would otherwise be reached sooner from a load's anchor, through the row offsets and
   * masks both share, and the store (and its whole value) would meet the accumulator in
   * a conversion through shared memory; the other way round, the accumulator's layout
   * would reach into the loads' masks. Released, the loads anchor; the epilogue converts
   * the row and column vectors it shares with them. */
  for (int i = 0; i < t.nops; i++) {
    ir_op *op = t.ops[i];
    if (op->opc == IR_LOAD && is_tile(op->operands[0]) && feeds_operand(&t, op->results[0], OPERAND_DEPTH))
      for (int j = 0; j < op->noperands; j++) hold(&t, op->operands[j]);
  }
  for (int i = 0; i < t.nops; i++) {
    ir_op *op = t.ops[i];
    const ir_type *r = op->opc == IR_DOT ? op->results[0]->type : NULL;
    if (!r || r->rank != 2) continue;
    ir_layout l;
    if (pass_dot_uses_wgmma(m, f, op))
      pass_tiling_wgmma(r->shape[0], r->shape[1], f->num_warps, &l);
    else
      pass_tiling_mma(r->shape[0], r->shape[1], f->num_warps, &l);
    set(&t, op->results[0], ir_layout_intern(m, &l));
  }
  drain(&t);
  memset(t.held, 0, sizeof(bool) * (size_t)(t.n + 1));
  for (int i = 0; i < t.nops; i++) {
    ir_op *op = t.ops[i];
    if (op->opc == IR_LOAD && is_tile(op->operands[0]) && feeds_operand(&t, op->results[0], OPERAND_DEPTH))
      set(&t, op->operands[0], anchor(&t, op->operands[0]->type));
  }
  drain(&t);
  /* Accesses anchor highest rank first, each rank spread before the next: a row
   * statistic or a row vector broadcast into a 2-D tile then takes the slice of the 2-D
   * layout (its reduction's, or its expand_dims's) and is loaded or stored in it, instead
   * of anchoring its own 1-D layout and meeting the 2-D one in a conversion. */
  for (int rank = IR_MAX_RANK; rank >= 1; rank--) {
    for (int i = 0; i < t.nops; i++) {
      ir_op *op = t.ops[i];
      if (is_access(op) && is_tile(op->operands[0]) && op->operands[0]->type->rank == rank)
        set(&t, op->operands[0], anchor(&t, op->operands[0]->type));
    }
    drain(&t);
  }
  each_value(&t, seed_default);
  materialize(&t);
  each_value(&t, retype);
  su_arena_free(t.a);
  return t.changed;
}
