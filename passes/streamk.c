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
 * What the K loop carries is merged by its role (passes/carry.c, pass_carry_roles): a dot's sum by adding,
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

/* What the K loop carries (pass_carry_roles) and where a slot holds it. */
typedef struct {
  pass_carry roles;
  int n, mi;                                /* carried values; the running max's index or -1 */
  const ir_type *slot_t[PASS_CARRY_VALUES]; /* what a slot holds of each (NULL: SAME) */
  int64_t off[PASS_CARRY_VALUES];           /* where in a slot, in elements */
  int64_t words;                            /* a slot's elements */
} sk_carry;

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
 * values each have a role (pass_carry_roles) and a slot type; NULL, with *why, otherwise. */
static ir_op *k_loop(ir_module *m, ir_block *body, sk_carry *c, const char **why) {
  ir_op *found = NULL;
  *why = "the tile loop has no single K loop";
  for (ir_op *op = body->first; op; op = op->next) {
    if (op->opc != IR_FOR || !has_dot(op->regions[0])) continue;
    if (found) return NULL;
    found = op;
  }
  if (!found || !pass_carry_roles(found, &c->roles, why)) return NULL;
  c->n = c->roles.n;
  c->mi = c->roles.max_index;
  c->words = 0;
  tk_dtype dt = TK_NDTYPE;
  for (int i = 0; i < c->n; i++) {
    c->slot_t[i] = NULL;
    if (c->roles.role[i] == PASS_CARRY_SAME) continue;
    const ir_type *t = found->results[i]->type;
    c->slot_t[i] = slot_type(m, t);
    if (!c->slot_t[i] || !holds_once(c->slot_t[i])) {
      *why = "a value the K loop carries lies in a layout that holds an element more than once";
      return NULL;
    }
    /* one workspace type: f32 (or the i32 of an integer product), the max in f32 */
    tk_dtype d = c->slot_t[i]->dtype;
    if ((d != TK_F32 && d != TK_I32) || (dt != TK_NDTYPE && d != dt) || (c->roles.role[i] != PASS_CARRY_SUM && d != TK_F32)) {
      *why = "the K loop carries values of more than one type, or a rescaled sum not in f32";
      return NULL;
    }
    dt = d;
    c->off[i] = c->words;
    c->words += ir_type_numel(c->slot_t[i]);
  }
  return c->words ? found : NULL;
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
  const ir_type *rt[PASS_CARRY_VALUES + 1];
  for (int i = 0; i < n; i++) rt[i] = res[i]->type;
  rt[n] = s.i1;
  ir_value *whole = bin(&s, IR_AND, cmp(&s, IR_CMP_EQ, klo, c32(&s, 0)), cmp(&s, IR_CMP_EQ, khi, iters));
  ir_op *W = ir_build_if(&s.b, whole, n + 1, rt);
  ir_value *go = W->results[n];
  {
    ir_builder yes = {m, W->regions[0], NULL, K->loc};
    ir_value *y[PASS_CARRY_VALUES + 1];
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
    ir_value *v = c.slot_t[i] == res[i]->type ? res[i] : pass_spread(m, &s.b, res[i], c.slot_t[i]);
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
    ir_value *y[PASS_CARRY_VALUES + 1];
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
  ir_value *got[PASS_CARRY_VALUES], *merged[PASS_CARRY_VALUES];
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
    switch (c.roles.role[i]) {
    case PASS_CARRY_SAME: merged[i] = res[i]; break;
    case PASS_CARRY_SUM: merged[i] = bin(&s, IR_ADD, res[i], got[i]); break;
    case PASS_CARRY_MAX: merged[i] = mx; break;
    default: {
      ir_value *sa = fa, *sb = fb;
      if (res[i]->type->rank == 2) {
        sa = pass_spread(m, &s.b, fa, res[i]->type);
        sb = pass_spread(m, &s.b, fb, res[i]->type);
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
