/* Stream-K for the last rounds of a persistent dot kernel (docs/passes.md, "streamk").
 *
 * persist runs T tiles on P programs, program p the tiles p, p + P, ...: when T is not a
 * multiple of P, the last round leaves P - T mod P programs idle while the others run a
 * whole tile (512 tiles of 128x256 on 132 SMs at 4096^3: 116 of 132 busy). Here the last
 * sk = T mod P + P tiles are instead cut along K into P equal ranges of k steps ("units":
 * tile j's step s is unit j * iters + s), program p taking units [lo_p, hi_p), lo_p =
 * p * U / P for U = sk * iters: every program ends at the same step.
 *
 *   for i in [0, ndp + pieces):
 *     data-parallel (i < ndp): tile pid + i * P, k steps [0, iters)
 *     else the tile j its range meets next, steps [max(lo - j*iters, 0),
 *       min(hi - j*iters, iters))
 *     acc = the K loop over those steps
 *     whole tile: the epilogue
 *     else: store acc to this program's slot for the piece and take a ticket on tile j's
 *       counter (an acq_rel atomic: the slot is visible before the ticket); the piece that
 *       takes the second ticket resets the counter, adds the other piece's partial to its
 *       own and runs the epilogue
 *
 * A range spans at least a whole tile's steps (sk >= P), so a tile has at most two pieces
 * and a range meets at most three tiles, the middle one whole. No program waits for
 * another, and the merge does not depend on which piece finished last (a + b is b + a;
 * the softmax's merge below is symmetric too): the result is deterministic
 * (docs/language.md: a dot's K sum, or an online softmax, may be cut in two pieces). The
 * last piece holds its own values and reads the other's, never three tiles at once.
 * sk is 0 — plain persist — when T mod P = 0, when no full round exists, when a tile has
 * fewer than 2 steps, or when U * P does not fit the unit arithmetic's i32.
 *
 * What the K loop carries is merged by its role (sk_carry, below): a dot's sum by adding,
 * attention's online softmax — the running row max m, and O and l rescaled by
 * e^(m - m') at each step — by M = max(m1, m2) and x1 e^(m1 - M) + x2 e^(m2 - M), exact
 * in real arithmetic since each piece's x is e^(-m) times a sum that does not depend on
 * the m it ran with (checked by a degree analysis of the loop body, not assumed).
 *
 * The workspace (docs/ir.md) holds, per launched program, two i32 counters (tiles 2p and
 * 2p + 1's) and two partial slots (a range meets at most two tiles partially: its first
 * and its last), each the carried values' elements (a row vector spread to the narrowest
 * tile its layout holds once); zero at allocation, and each counter is reset by the piece
 * that takes its second ticket.
 *
 * Applied after persist, to a tile loop whose body has one K loop at its top level: a
 * `for` with a dot that writes no memory and carries only values of those roles (f32, or
 * an i32 sum), with start and end computed from parameters and constants alone and a
 * positive constant step (persist required the same trip count in every program).
 * Opt-in, `@launch(streamk = true)`: correct on the GPU (gpu_dot) but slower where it was
 * measured (H200, 4096^3 f16: 181.8 -> 201.3 us plain, 193.5 -> 214.1 fused; docs/
 * decisions.md), so no kernel gets it unasked. */
#include "pass_util.h"

#include <stdint.h>

#define LOG2E 1.4426950408889634 /* expfold's factor, as it rounds it to f32 */

typedef struct {
  ir_module *m;
  ir_func *f;
  ir_builder b;
  const ir_type *i1, *i32, *i64;
} sk_ctx;

static ir_value *c32(sk_ctx *s, int64_t v) { return ir_const_int(&s->b, s->i32, v); }
static ir_value *c64(sk_ctx *s, int64_t v) { return ir_const_int(&s->b, s->i64, v); }
static ir_value *bin(sk_ctx *s, ir_opcode op, ir_value *x, ir_value *y) { return ir_binary(&s->b, op, x, y); }
static ir_value *cmp(sk_ctx *s, ir_cmp p, ir_value *x, ir_value *y) { return ir_cmp_build(&s->b, p, x, y); }
static ir_value *sel(sk_ctx *s, ir_value *c, ir_value *x, ir_value *y) {
  ir_value *o[3] = {c, x, y};
  return ir_build1(&s->b, IR_SELECT, x->type, 3, o);
}
static ir_value *cast(sk_ctx *s, ir_value *x, const ir_type *t) { return ir_build1(&s->b, IR_CAST, t, 1, &x); }
/* rows v ([M]) stretched to t ([M, N]) along the last axis, in t's layout when it has one */
static ir_value *spread(sk_ctx *s, ir_value *v, const ir_type *t) {
  int col[2] = {t->shape[0], 1};
  const ir_type *ct = ir_type_tile(s->m, ir_type_elem(t), 2, col);
  if (t->layout) ct = ir_type_with_layout(s->m, ct, t->layout);
  ir_op *e = ir_build(&s->b, IR_EXPAND_DIMS, 1, &v, 1, &ct);
  e->attr2 = 1;
  return ir_build1(&s->b, IR_BROADCAST, t, 1, &e->results[0]);
}

/* The persistent tile loop persist built: a top-level `for` from program_id(0) by
 * num_programs(0). */
static ir_op *tile_loop(const ir_func *f) {
  for (ir_op *op = f->body->first; op; op = op->next) {
    if (op->opc != IR_FOR || op->noperands != 3) continue;
    const ir_op *lb = op->operands[0]->def, *st = op->operands[2]->def;
    if (lb && lb->opc == IR_PROGRAM_ID && st && st->opc == IR_NUM_PROGRAMS) return op;
  }
  return NULL;
}

static bool has_dot(const ir_block *blk) {
  for (const ir_op *op = blk->first; op; op = op->next)
    if (op->opc == IR_DOT) return true;
  return false;
}

/* v where the tile loop starts: a parameter or a top-level value as it is, a pure
 * computation of those (kloop's min(K, KP)) copied there; NULL when it reads the tile. */
static ir_value *hoisted(sk_ctx *s, ir_value *v, const ir_block *body) {
  if (!v->def) return v->owner == s->f->body ? v : NULL;
  if (!pass_op_within(v->def, body)) return v;
  if (v->type != s->i32) return NULL;
  return pass_clone_slice(s->m, &s->b, body, v, ir_vmap_new(s->m->arena));
}

/* ---- what the K loop carries, and how two pieces' values of it merge ----
 *
 * A piece runs some of the K steps from the loop's initial values; the tile's result is
 * the two pieces' carried values merged, which needs each carried value to be one of:
 *   SAME    yielded unchanged (both pieces hold the initial value);
 *   SUM     a dot's accumulator, `x = dot(a, b, x)` from zeros, a and b independent of
 *           what the loop carries: the merge is x1 + x2 (matmul);
 *   SCALED  the online softmax's rescaled sums: from zeros, read only as x * alpha with
 *           alpha = exp(m - m'), m the carried running max and m' its next value, and
 *           yielded as that product plus terms that are e^(-m') times values independent
 *           of the carried ones (exp(s - m') and what is linear in it: P, its row sum,
 *           P V). Then x = e^(-m) G with G the same sum whatever m the piece ran with,
 *           and two pieces merge exactly as x1 e^(m1 - M) + x2 e^(m2 - M), M = max(m1, m2);
 *   MAX     that m: merged as M (any m the loop chose is consistent with its x).
 * The degree analysis below checks the SCALED yields: 0 for a value independent of the
 * carried ones, 1 for e^(-m') times such a value (a bit set of both where a zero is
 * either). */
enum { SK_SAME, SK_SUM, SK_SCALED, SK_MAX };
enum { SK_STATES = 16, SK_MEMO = 512, D0 = 1, D1 = 2 };

typedef struct {
  ir_op *K;
  int n;                           /* carried values */
  int role[SK_STATES];
  int mi;                          /* the MAX value's index, -1 without SCALED ones */
  const ir_type *slot_t[SK_STATES]; /* what a slot holds of each (NULL: SAME) */
  int64_t off[SK_STATES];          /* where in a slot, in elements */
  int64_t words;                   /* a slot's elements */
  int nmemo;
  const ir_value *memo_v[SK_MEMO];
  int memo_d[SK_MEMO];
} sk_carry;

/* v seen through the ops that only spread or move it (broadcast, expand_dims, layout). */
static ir_value *peel(ir_value *v) {
  while (v->def && (v->def->opc == IR_BROADCAST || v->def->opc == IR_EXPAND_DIMS || v->def->opc == IR_CONVERT_LAYOUT))
    v = v->def->operands[0];
  return v;
}

/* Whether op (an expand_dims or broadcast) keeps its operand's rows as its own: a row
 * vector [M] made a column [M, 1], a column [M, 1] made [M, N]. The factor e^(-m') is one
 * per row: only such spreads carry it. */
static bool keeps_rows(const ir_op *op) {
  const ir_type *x = op->operands[0]->type, *r = op->results[0]->type;
  if (x->kind != IR_TILE || r->kind != IR_TILE || x->rank < 1 || x->shape[0] != r->shape[0]) return false;
  return op->opc == IR_BROADCAST || (op->opc == IR_EXPAND_DIMS && op->attr2 >= 1);
}

/* v seen through the row-keeping spreads and layout moves. */
static ir_value *peel_rows(ir_value *v) {
  while (v->def && (v->def->opc == IR_CONVERT_LAYOUT ||
                    ((v->def->opc == IR_BROADCAST || v->def->opc == IR_EXPAND_DIMS) && keeps_rows(v->def))))
    v = v->def->operands[0];
  return v;
}

static ir_value *carried_arg(const sk_carry *c, int i) { return c->K->regions[0]->args[1 + i]; }
static ir_value *carried_next(const sk_carry *c, int i) {
  const ir_block *kb = c->K->regions[0];
  return kb->last->operands[i];
}

/* Whether v is exp(m - m'), m the carried MAX value and m' its next one. */
static bool is_alpha(const sk_carry *c, ir_value *v) {
  const ir_op *e = v->def;
  if (c->mi < 0 || !e || e->opc != IR_EXP) return false;
  const ir_op *d = e->operands[0]->def;
  return d && d->opc == IR_SUB && d->operands[0] == carried_arg(c, c->mi) && d->operands[1] == carried_next(c, c->mi);
}

static int deg(sk_carry *c, ir_value *v, int depth);

/* exp(a - m'), or expfold's exp2(fma(a, k, -(m' * log2 e))), a and k independent of the
 * carried values: e^(-m') times a value that is. */
static bool is_weight(sk_carry *c, const ir_op *e, int depth) {
  if (c->mi < 0) return false;
  ir_value *mn = carried_next(c, c->mi);
  const ir_op *d = e->operands[0]->def;
  if (e->opc == IR_EXP)
    return d && d->opc == IR_SUB && peel_rows(d->operands[1]) == mn && (deg(c, d->operands[0], depth + 1) & D0);
  if (e->opc != IR_EXP2 || !d || d->opc != IR_FMA) return false;
  if (!(deg(c, d->operands[0], depth + 1) & D0) || !(deg(c, d->operands[1], depth + 1) & D0)) return false;
  const ir_op *ng = peel_rows(d->operands[2])->def;
  const ir_op *ml = ng && ng->opc == IR_NEG ? peel_rows(ng->operands[0])->def : NULL;
  if (!ml || ml->opc != IR_MUL) return false;
  for (int k = 0; k < 2; k++) {
    ir_value *x = peel_rows(ml->operands[k]), *y = ml->operands[1 - k];
    if (x == mn && pass_is_const(y) && pass_const_float(y) == (double)(float)LOG2E) return true;
  }
  return false;
}

static int deg_of(sk_carry *c, ir_value *v, int depth) {
  ir_op *op = v->def;
  const ir_block *kb = c->K->regions[0];
  if (!op) {
    for (int i = 0; i < c->n; i++)
      if (v == carried_arg(c, i)) return c->role[i] == SK_SAME ? D0 : 0; /* SAME: its initial value */
    /* the K loop's variable, or a value of an enclosing block: the same for every step */
    return v->owner == kb || pass_op_within(c->K, v->owner) ? D0 : 0;
  }
  if (!pass_op_within(op, kb)) return D0;
  if (depth > 64) return 0;
  if (pass_is_const(v)) return pass_const_eq(v, 0) ? D0 | D1 : D0;
  int a = op->noperands > 0 ? deg(c, op->operands[0], depth + 1) : D0;
  int b = op->noperands > 1 ? deg(c, op->operands[1], depth + 1) : D0;
  switch (op->opc) {
  case IR_MUL: {
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < c->n; i++)
        if (c->role[i] == SK_SCALED && op->operands[k] == carried_arg(c, i) && is_alpha(c, peel_rows(op->operands[1 - k])))
          return D1;
    int r = 0;
    if ((a & D0) && (b & D0)) r |= D0;
    if (((a & D1) && (b & D0)) || ((a & D0) && (b & D1))) r |= D1;
    return r;
  }
  case IR_DIV: return b & D0 ? a : 0;
  case IR_ADD: case IR_SUB: return a & b;
  case IR_NEG: case IR_CONVERT_LAYOUT: return a;
  /* the factor is one per row (axis 0): what moves rows elsewhere, or mixes them, loses it */
  case IR_EXPAND_DIMS: case IR_BROADCAST: return keeps_rows(op) ? a : a & D0;
  case IR_CAST: return ir_type_elem(v->type)->dtype == TK_F32 || ir_type_elem(v->type)->dtype == TK_F16 ||
                       ir_type_elem(v->type)->dtype == TK_BF16 ? a : a & D0;
  /* a row's sum, max or min of e^(-m') x is e^(-m') times that of x (not a column's) */
  case IR_REDUCE: return op->attr2 >= 1 ? a : a & D0;
  case IR_SELECT: return a & D0 ? b & deg(c, op->operands[2], depth + 1) : 0;
  case IR_DOT: { /* rows of a are rows of the product; b's rows are summed over */
    int r = 0;
    if ((a & D0) && (b & D0)) r |= D0;
    if ((a & D1) && (b & D0)) r |= D1;
    return op->noperands > 2 ? r & deg(c, op->operands[2], depth + 1) : r;
  }
  case IR_EXP: case IR_EXP2:
    if (is_weight(c, op, depth)) return D1;
    return a & D0;
  case IR_IF: {
    if (!(a & D0)) return 0;
    int k = 0;
    while (op->results[k] != v) k++;
    int r = D0 | D1;
    for (int g = 0; g < op->nregions; g++) r &= deg(c, op->regions[g]->last->operands[k], depth + 1);
    return r;
  }
  default: break;
  }
  /* a load reads what no step writes (k_loop: no stores in the K loop) */
  if (op->nregions || (!(ir_op_info(op->opc)->traits & IR_PURE) && op->opc != IR_LOAD)) return 0;
  for (int k = 0; k < op->noperands; k++)
    if (!(deg(c, op->operands[k], depth + 1) & D0)) return 0;
  return D0;
}

static int deg(sk_carry *c, ir_value *v, int depth) {
  for (int i = 0; i < c->nmemo; i++)
    if (c->memo_v[i] == v) return c->memo_d[i];
  int d = deg_of(c, v, depth);
  if (c->nmemo < SK_MEMO) {
    c->memo_v[c->nmemo] = v;
    c->memo_d[c->nmemo++] = d;
  }
  return d;
}

/* The op in blk (at any depth) that reads v, when exactly one does, once. */
static ir_op *sole_use(ir_block *blk, const ir_value *v) {
  if (pass_count_uses(blk, v) != 1) return NULL;
  ir_op *found = NULL;
  for (ir_op *op = blk->first; op && !found; op = op->next) {
    for (int k = 0; k < op->noperands; k++)
      if (op->operands[k] == v) found = op;
    for (int r = 0; r < op->nregions && !found; r++) found = sole_use(op->regions[r], v);
  }
  return found;
}

/* A slot holds each element once: an accumulator layout (or none yet: the interpreter's
 * IR), never one that repeats elements over threads (a tile smaller than the warps' grid,
 * 16x16 on 4 warps, is held by several of them). */
static bool holds_once(const ir_type *t) {
  if (t->kind != IR_TILE || (t->layout && t->layout->kind != IR_LAYOUT_WGMMA && t->layout->kind != IR_LAYOUT_MMA))
    return false;
  for (int d = 0; t->layout && d < t->rank; d++) {
    const ir_layout *l = t->layout;
    int reps = l->reps_per_warp[d] ? l->reps_per_warp[d] : 1;
    if ((int64_t)l->size_per_thread[d] * reps * l->threads_per_warp[d] * l->warps_per_cta[d] > t->shape[d]) return false;
  }
  return true;
}

/* What a slot holds of a carried t: t itself without a layout or in one of a product's;
 * a row vector (the max m, a row sum l) spread over the narrowest [rows, w] tile of its
 * parent layout that holds each element once (a row's slice layout repeats it over the
 * threads of a row), its columns all equal, so their max reads it back. */
static const ir_type *slot_type(ir_module *m, const ir_type *t) {
  const ir_layout *l = t->layout;
  if (!l || t->rank != 1) return t;
  if (l->kind != IR_LAYOUT_SLICE || l->slice_dim != 1 || !l->parent || l->parent->rank != 2) return NULL;
  const ir_layout *p = l->parent;
  int reps = p->reps_per_warp[1] ? p->reps_per_warp[1] : 1;
  int shape[2] = {t->shape[0], p->size_per_thread[1] * reps * p->threads_per_warp[1] * p->warps_per_cta[1]};
  return ir_type_with_layout(m, ir_type_tile(m, ir_type_elem(t), 2, shape), p);
}

/* The K loop: the one top-level `for` of body with a dot in its own body, whose carried
 * values are each SAME, SUM, SCALED or MAX (above); NULL, with *why, otherwise. */
static ir_op *k_loop(ir_module *m, ir_block *body, sk_carry *c, const char **why) {
  ir_op *found = NULL;
  *why = "the tile loop has no single K loop";
  for (ir_op *op = body->first; op; op = op->next) {
    if (op->opc != IR_FOR || !has_dot(op->regions[0])) continue;
    if (found) return NULL;
    found = op;
  }
  if (!found || found->nresults < 1 || found->nresults > SK_STATES) return NULL;
  *c = (sk_carry){.K = found, .n = found->nresults, .mi = -1};
  ir_block *kb = found->regions[0];
  /* the pieces run a tile's steps in two orders at once: nothing a step writes may matter */
  static const ir_opcode writes[] = {IR_STORE, IR_ATOMIC, IR_ATOMIC_CAS, IR_SLOT_STORE, IR_TMA_STORE};
  ir_op *w;
  for (size_t k = 0; k < sizeof writes / sizeof *writes; k++)
    if (pass_collect(kb, writes[k], &w, 1)) {
      *why = "the K loop writes memory";
      return NULL;
    }
  *why = "the K loop carries a value that is no dot's sum, no online-softmax rescaled sum and not its running max";
  /* the SCALED values, and the MAX value their alpha names */
  for (int i = 0; i < c->n; i++) {
    ir_value *arg = carried_arg(c, i), *next = carried_next(c, i);
    c->role[i] = -1;
    if (next == arg) {
      c->role[i] = SK_SAME;
      continue;
    }
    ir_value *init = peel(found->operands[3 + i]); /* rowsum's l spread to [M, 8] */
    if (!pass_is_const(init) || !pass_const_eq(init, 0)) continue;
    ir_op *use = sole_use(kb, arg);
    if (use && use->opc == IR_DOT && use->noperands == 3 && use->operands[2] == arg && use->results[0] == next) {
      c->role[i] = SK_SUM;
      continue;
    }
    if (!use || use->opc != IR_MUL) continue;
    ir_value *other = peel_rows(use->operands[use->operands[0] == arg ? 1 : 0]);
    const ir_op *e = other->def, *d = e && e->opc == IR_EXP ? e->operands[0]->def : NULL;
    if (!d || d->opc != IR_SUB) continue;
    for (int j = 0; j < c->n; j++)
      if (j != i && d->operands[0] == carried_arg(c, j) && d->operands[1] == carried_next(c, j)) {
        if (c->mi >= 0 && c->mi != j) return NULL;
        c->mi = j;
        c->role[i] = SK_SCALED;
      }
  }
  if (c->mi >= 0) {
    if (c->role[c->mi] != -1) return NULL;
    c->role[c->mi] = SK_MAX;
  }
  tk_dtype dt = TK_NDTYPE;
  for (int i = 0; i < c->n; i++) {
    if (c->role[i] < 0) return NULL;
    if (c->role[i] == SK_SAME) continue;
    const ir_type *t = carried_arg(c, i)->type;
    c->slot_t[i] = slot_type(m, t);
    if (!c->slot_t[i] || !holds_once(c->slot_t[i])) {
      *why = "a value the K loop carries lies in a layout that holds an element more than once";
      return NULL;
    }
    /* one workspace type: f32 (or the i32 of an integer product), the max in f32 */
    tk_dtype d = c->slot_t[i]->dtype;
    if ((d != TK_F32 && d != TK_I32) || (dt != TK_NDTYPE && d != dt) || (c->role[i] != SK_SUM && d != TK_F32)) {
      *why = "the K loop carries values of more than one type, or a rescaled sum not in f32";
      return NULL;
    }
    dt = d;
    c->off[i] = c->words;
    c->words += ir_type_numel(c->slot_t[i]);
  }
  if (!c->words) return NULL;
  /* each SCALED value's next is e^(-m') times what the carried values do not change; a
   * SUM's products read nothing the loop carries */
  for (int i = 0; i < c->n; i++) {
    if (c->role[i] == SK_SCALED && !(deg(c, carried_next(c, i), 0) & D1)) {
      *why = "the K loop's rescaled sum adds a term that is not e^(-m') times values the loop does not carry";
      return NULL;
    }
    const ir_op *d = carried_next(c, i)->def;
    if (c->role[i] == SK_SUM && (!(deg(c, d->operands[0], 0) & D0) || !(deg(c, d->operands[1], 0) & D0))) {
      *why = "the K loop's product reads a value the loop carries";
      return NULL;
    }
  }
  return found;
}

static void read_sum(ir_op *op, void *arg) {
  ir_value **swap = arg;
  for (int k = 0; k < op->noperands; k++)
    if (op->operands[k] == swap[0]) op->operands[k] = swap[1];
}

bool pass_streamk(ir_module *m, ir_func *f) {
  /* opt-in: slower where measured (docs/decisions.md, twenty-sixth session) */
  if (!f->persistent || f->streamk <= 0) return false;
  ir_op *L = tile_loop(f);
  if (!L) return false;
  ir_block *body = L->regions[0];
  sk_carry c;
  const char *why;
  ir_op *K = k_loop(m, body, &c, &why);
  if (!K) {
    pass_remark_missed(m, "streamk", f->loc, "no stream-K: %s", why);
    return false;
  }
  sk_ctx s = {m, f, {m, f->body, L, f->loc}, ir_type_scalar(m, TK_I1), ir_type_scalar(m, TK_I32),
              ir_type_scalar(m, TK_I64)};
  ir_value *kstart = hoisted(&s, K->operands[0], body), *kend = hoisted(&s, K->operands[1], body);
  ir_value *kstep = hoisted(&s, K->operands[2], body);
  if (!kstart || !kend || !kstep || !pass_is_const(K->operands[2]) || pass_const_int(K->operands[2]) <= 0) {
    pass_remark_missed(m, "streamk", f->loc, "no stream-K: the K loop's bounds are not parameters or constants");
    return false;
  }
  /* per program: 2 counters padded to 16 bytes, 2 partial slots of what the loop carries */
  int64_t numel = c.words;
  int64_t per = 16 + 2 * numel * 4;
  const ir_type *ws_t = NULL;
  for (int i = 0; i < c.n; i++)
    if (c.slot_t[i]) ws_t = ir_type_elem(c.slot_t[i]);

  /* ---- before the loop: the split, once ---- */
  ir_value *total = L->operands[1], *np = L->operands[2], *pid = L->operands[0];
  ir_value *span = bin(&s, IR_SUB, kend, kstart);
  ir_value *iters = bin(&s, IR_MAX, bin(&s, IR_CDIV, span, kstep), c32(&s, 0));
  ir_value *rounds = bin(&s, IR_DIV, total, np);
  ir_value *tail = bin(&s, IR_SUB, total, bin(&s, IR_MUL, rounds, np));
  ir_value *cand = bin(&s, IR_ADD, tail, np);
  ir_value *ok = bin(&s, IR_AND, cmp(&s, IR_CMP_GE, rounds, c32(&s, 1)), cmp(&s, IR_CMP_GT, tail, c32(&s, 0)));
  ok = bin(&s, IR_AND, ok, cmp(&s, IR_CMP_GE, iters, c32(&s, 2)));
  /* The unit arithmetic is i32, so that few registers stay live across the K loop (the
   * four-warpgroup attention loop spilled with it in i64): every product below is at most
   * U * P, U = sk * iters, which must fit; a launch past that (10^5-step K loops) stays
   * plain persist. */
  ir_value *up = bin(&s, IR_MUL, bin(&s, IR_MUL, cast(&s, cand, s.i64), cast(&s, iters, s.i64)), cast(&s, np, s.i64));
  ok = bin(&s, IR_AND, ok, cmp(&s, IR_CMP_LE, up, c64(&s, INT32_MAX)));
  ir_value *sk = sel(&s, ok, cand, c32(&s, 0));
  ir_value *dp = bin(&s, IR_SUB, total, sk);
  ir_value *units = bin(&s, IR_MUL, sk, iters);
  ir_value *lo = bin(&s, IR_DIV, bin(&s, IR_MUL, pid, units), np);
  ir_value *hi = bin(&s, IR_DIV, bin(&s, IR_MUL, bin(&s, IR_ADD, pid, c32(&s, 1)), units), np);
  ir_value *safe_iters = bin(&s, IR_MAX, iters, c32(&s, 1)); /* no division by 0 where sk is 0 */
  ir_value *jlo = bin(&s, IR_DIV, lo, safe_iters);
  ir_value *jhi = sel(&s, cmp(&s, IR_CMP_GT, hi, lo),
                      bin(&s, IR_ADD, bin(&s, IR_DIV, bin(&s, IR_SUB, hi, c32(&s, 1)), safe_iters), c32(&s, 1)), jlo);
  ir_value *ndp = sel(&s, cmp(&s, IR_CMP_GT, dp, pid),
                      bin(&s, IR_DIV, bin(&s, IR_ADD, bin(&s, IR_SUB, dp, pid), bin(&s, IR_SUB, np, c32(&s, 1))), np),
                      c32(&s, 0));
  ir_value *nunits = bin(&s, IR_ADD, ndp, bin(&s, IR_SUB, jhi, jlo));
  /* what a unit needs (the producer of a warp-specialized kernel recomputes it on few
   * registers): the first and last tile the range meets and where in them it starts and
   * ends */
  ir_value *jfirst = jlo, *jlast = bin(&s, IR_SUB, jhi, c32(&s, 1));
  ir_value *lo_off = bin(&s, IR_SUB, lo, bin(&s, IR_MUL, jlo, iters));
  ir_value *hi_off = bin(&s, IR_SUB, hi, bin(&s, IR_MUL, jlast, iters));
  const ir_type *pf = ir_type_ptr(m, ws_t), *pi = ir_type_ptr(m, s.i32);
  ir_op *wsf = ir_build(&s.b, IR_WORKSPACE, 0, NULL, 1, &pf), *wsi = ir_build(&s.b, IR_WORKSPACE, 0, NULL, 1, &pi);
  wsf->attr2 = wsi->attr2 = per;

  /* ---- the loop over this program's units ---- */
  ir_op *U = ir_build_for(&s.b, c32(&s, 0), nunits, c32(&s, 1), 0, NULL);
  ir_block *ub = U->regions[0];
  ir_value *i = ub->args[0];
  i->name = "unit";
  s.b = (ir_builder){m, ub, NULL, f->loc};
  ir_value *isdp = cmp(&s, IR_CMP_LT, i, ndp);
  ir_value *j = bin(&s, IR_ADD, jfirst, bin(&s, IR_SUB, i, ndp));
  ir_value *t = sel(&s, isdp, bin(&s, IR_ADD, pid, bin(&s, IR_MUL, i, np)), bin(&s, IR_ADD, dp, j));
  ir_value *klo = sel(&s, bin(&s, IR_AND, cmp(&s, IR_CMP_EQ, j, jfirst), bin(&s, IR_XOR, isdp, ir_const_int(&s.b, s.i1, 1))),
                      lo_off, c32(&s, 0));
  ir_value *khi = sel(&s, bin(&s, IR_AND, cmp(&s, IR_CMP_EQ, j, jlast), bin(&s, IR_XOR, isdp, ir_const_int(&s.b, s.i1, 1))),
                      hi_off, iters);
  t->name = "tile";
  /* the old body moves in, its tile variable replaced by t */
  ir_replace_all_uses(f, body->args[0], t);
  for (ir_op *op = body->first, *next; op; op = next) {
    next = op->next;
    if (op->opc == IR_YIELD) break;
    ir_op_erase(op);
    ir_block_insert_before(ub, op, NULL);
  }
  /* the K loop's steps [klo, khi) */
  s.b = (ir_builder){m, ub, K, K->loc};
  ir_value *k0 = K->operands[0], *kst = K->operands[2];
  ir_value *from = bin(&s, IR_ADD, k0, bin(&s, IR_MUL, klo, kst));
  ir_value *to = bin(&s, IR_MIN, K->operands[1], bin(&s, IR_ADD, k0, bin(&s, IR_MUL, khi, kst)));
  K->operands[0] = from;
  K->operands[1] = to;

  /* ---- after it: whole tile, or a piece and maybe the last one ---- */
  ir_op *epi = K->next; /* the epilogue starts here; the ops after K move under `go` */
  s.b = (ir_builder){m, ub, epi, K->loc};
  int n = c.n;
  ir_value **res = K->results;
  const ir_type *rt[SK_STATES + 1];
  for (int i = 0; i < n; i++) rt[i] = res[i]->type;
  rt[n] = s.i1;
  ir_value *whole = bin(&s, IR_AND, cmp(&s, IR_CMP_EQ, klo, c32(&s, 0)), cmp(&s, IR_CMP_EQ, khi, iters));
  ir_op *W = ir_build_if(&s.b, whole, n + 1, rt);
  ir_value *go = W->results[n];
  {
    ir_builder yes = {m, W->regions[0], NULL, K->loc};
    ir_value *y[SK_STATES + 1];
    for (int i = 0; i < n; i++) y[i] = res[i];
    y[n] = ir_const_int(&yes, s.i1, 1);
    ir_build(&yes, IR_YIELD, n + 1, y, 0, NULL);
  }
  s.b = (ir_builder){m, W->regions[1], NULL, K->loc};
  ir_value *ju = bin(&s, IR_MUL, j, iters);
  /* program p's region of the workspace, in 4-byte words: [2 counters, pad, slot 0, slot 1] */
  ir_value *words = c64(&s, per / 4);
  ir_value *slot0 = bin(&s, IR_ADD, bin(&s, IR_MUL, cast(&s, pid, s.i64), words), c64(&s, 4));
  ir_value *mine = bin(&s, IR_ADD, slot0, sel(&s, cmp(&s, IR_CMP_EQ, j, jfirst), c64(&s, 0), c64(&s, numel)));
  for (int i = 0; i < n; i++) {
    if (!c.slot_t[i]) continue;
    ir_value *v = c.slot_t[i] == res[i]->type ? res[i] : spread(&s, res[i], c.slot_t[i]);
    ir_value *st[2] = {bin(&s, IR_ADDPTR, wsf->results[0], bin(&s, IR_ADD, mine, c64(&s, c.off[i]))), v};
    ir_build(&s.b, IR_SLOT_STORE, 2, st, 0, NULL);
  }
  ir_value *cw = bin(&s, IR_ADD, bin(&s, IR_MUL, cast(&s, bin(&s, IR_DIV, j, c32(&s, 2)), s.i64), words),
                     cast(&s, bin(&s, IR_REM, j, c32(&s, 2)), s.i64));
  ir_value *counter = bin(&s, IR_ADDPTR, wsi->results[0], cw);
  ir_value *av[2] = {counter, c32(&s, 1)};
  ir_op *ticket = ir_build(&s.b, IR_ATOMIC, 2, av, 1, &s.i32);
  ticket->attr = IR_ATOM_ADD;
  ticket->attr2 = IR_SEM_ACQ_REL;
  /* the programs whose ranges meet tile j: p_of(u) = ((u + 1) P - 1) / U owns unit u */
  ir_value *last_u = bin(&s, IR_SUB, bin(&s, IR_ADD, ju, iters), c32(&s, 1));
  ir_value *p0 = bin(&s, IR_DIV, bin(&s, IR_SUB, bin(&s, IR_MUL, bin(&s, IR_ADD, ju, c32(&s, 1)), np), c32(&s, 1)), units);
  ir_value *p1 = bin(&s, IR_DIV, bin(&s, IR_SUB, bin(&s, IR_MUL, bin(&s, IR_ADD, last_u, c32(&s, 1)), np), c32(&s, 1)), units);
  ir_value *last = cmp(&s, IR_CMP_EQ, ticket->results[0], c32(&s, 1)); /* the second of two */
  ir_op *LAST = ir_build_if(&s.b, last, n, rt);
  {
    ir_builder no = {m, LAST->regions[1], NULL, K->loc};
    ir_build(&no, IR_YIELD, n, res, 0, NULL);
    ir_value *y[SK_STATES + 1];
    for (int i = 0; i < n; i++) y[i] = LAST->results[i];
    y[n] = last;
    ir_build(&s.b, IR_YIELD, n + 1, y, 0, NULL);
  }
  s.b = (ir_builder){m, LAST->regions[0], NULL, K->loc};
  ir_value *rv[2] = {counter, c32(&s, 0)};
  ir_op *reset = ir_build(&s.b, IR_ATOMIC, 2, rv, 1, &s.i32);
  reset->attr = IR_ATOM_XCHG;
  /* the other piece's partial, from the slot its program stored it in: slot 0 when j is
   * the first tile that program's range meets */
  ir_value *other = sel(&s, cmp(&s, IR_CMP_EQ, pid, p0), p1, p0);
  ir_value *olo = bin(&s, IR_DIV, bin(&s, IR_MUL, other, units), np);
  ir_value *ofirst = cmp(&s, IR_CMP_EQ, bin(&s, IR_DIV, olo, safe_iters), j);
  ir_value *at = bin(&s, IR_ADD, bin(&s, IR_ADD, bin(&s, IR_MUL, cast(&s, other, s.i64), words), c64(&s, 4)),
                     sel(&s, ofirst, c64(&s, 0), c64(&s, numel)));
  ir_value *got[SK_STATES], *merged[SK_STATES];
  for (int i = 0; i < n; i++) {
    got[i] = NULL;
    if (!c.slot_t[i]) continue;
    ir_value *src = bin(&s, IR_ADDPTR, wsf->results[0], bin(&s, IR_ADD, at, c64(&s, c.off[i])));
    got[i] = ir_build1(&s.b, IR_SLOT_LOAD, c.slot_t[i], 1, &src);
    if (c.slot_t[i] != res[i]->type) { /* a row vector, spread: every column holds it */
      ir_op *r = ir_build(&s.b, IR_REDUCE, 1, &got[i], 1, &rt[i]);
      r->attr = IR_RED_MAX;
      r->attr2 = 1;
      got[i] = r->results[0];
    }
  }
  /* The merge is symmetric in the two pieces (a sum; products rounded, then one sum: tk
   * never contracts them into an fma), so the same bits whichever piece finished last. */
  ir_value *mx = c.mi >= 0 ? bin(&s, IR_MAX, res[c.mi], got[c.mi]) : NULL;
  ir_value *fa = NULL, *fb = NULL;
  if (mx) {
    /* e^(m - M), 1 where m is M (also where both are -inf: no rows seen) */
    ir_value *one = ir_const_float(&s.b, mx->type, 1.0);
    fa = ir_build1(&s.b, IR_EXP, mx->type, 1, (ir_value *[]){bin(&s, IR_SUB, res[c.mi], mx)});
    fa = sel(&s, cmp(&s, IR_CMP_EQ, res[c.mi], mx), one, fa);
    fb = ir_build1(&s.b, IR_EXP, mx->type, 1, (ir_value *[]){bin(&s, IR_SUB, got[c.mi], mx)});
    fb = sel(&s, cmp(&s, IR_CMP_EQ, got[c.mi], mx), one, fb);
  }
  for (int i = 0; i < n; i++) {
    switch (c.role[i]) {
    case SK_SAME: merged[i] = res[i]; break;
    case SK_SUM: merged[i] = bin(&s, IR_ADD, res[i], got[i]); break;
    case SK_MAX: merged[i] = mx; break;
    default: {
      ir_value *sa = fa, *sb = fb;
      if (res[i]->type->rank == 2) {
        sa = spread(&s, fa, res[i]->type);
        sb = spread(&s, fb, res[i]->type);
      }
      merged[i] = bin(&s, IR_ADD, bin(&s, IR_MUL, res[i], sa), bin(&s, IR_MUL, got[i], sb));
    }
    }
  }
  ir_build(&s.b, IR_YIELD, n, merged, 0, NULL);

  /* ---- the epilogue, once a tile, on the sum ---- */
  s.b = (ir_builder){m, ub, epi, K->loc};
  ir_op *G = ir_build_if(&s.b, go, 0, NULL);
  ir_block *gb = G->regions[0];
  for (ir_op *op = G->next, *next; op; op = next) {
    next = op->next;
    ir_op_erase(op);
    ir_block_insert_before(gb, op, NULL);
  }
  ir_builder gy = {m, gb, NULL, K->loc};
  ir_build(&gy, IR_YIELD, 0, NULL, 0, NULL);
  ir_builder gn = {m, G->regions[1], NULL, K->loc};
  ir_build(&gn, IR_YIELD, 0, NULL, 0, NULL);
  /* the epilogue reads the merged values (the K loop's results are read by the pieces'
   * code only) */
  for (int i = 0; i < n; i++) {
    ir_value *swap[2] = {res[i], W->results[i]};
    ir_walk(gb, read_sum, swap);
  }
  ir_builder uy = {m, ub, NULL, f->loc};
  ir_build(&uy, IR_YIELD, 0, NULL, 0, NULL);
  ir_op_erase(L);
  pass_remark(m, "streamk", f->loc, "stream-K: the last rounds' tiles split along K over every program (%lld bytes of workspace a program)",
              (long long)per);
  return true;
}
