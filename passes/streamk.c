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
 * another, and the sum does not depend on which piece finished last (a + b is b + a): the
 * result is deterministic (docs/language.md: a dot's K sum may be cut in two pieces). The
 * last piece holds its own accumulator and reads the other's, never three tiles at once.
 * sk is 0 — plain persist — when T mod P = 0, when no full round exists, or when a tile has
 * fewer than 2 steps.
 *
 * The workspace (docs/ir.md) holds, per launched program, two i32 counters (tiles 2p and
 * 2p + 1's) and two partial slots (a range meets at most two tiles partially: its first
 * and its last), each the accumulator's elements; zero at allocation, and each counter is
 * reset by the piece that takes its second ticket.
 *
 * Applied after persist, to a tile loop whose body has one K loop at its top level: a
 * `for` with a dot that carries only its accumulator (zeros at entry, f32 or i32, in an
 * accumulator layout that holds each element once, or none), with start and end computed
 * from parameters and constants alone and a positive constant step (persist required the
 * same trip count in every program).
 * Opt-in, `@launch(streamk = true)`: correct on the GPU (gpu_dot) but slower where it was
 * measured (H200, 4096^3 f16: 181.8 -> 201.3 us plain, 193.5 -> 214.1 fused; docs/
 * decisions.md), so no kernel gets it unasked. */
#include "pass_util.h"

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

/* The K loop: the one top-level `for` of body with a dot in its own body, carrying only
 * the dot's accumulator from a zero tile. */
static ir_op *k_loop(const ir_block *body) {
  ir_op *found = NULL;
  for (ir_op *op = body->first; op; op = op->next) {
    if (op->opc != IR_FOR || !has_dot(op->regions[0])) continue;
    if (found) return NULL;
    found = op;
  }
  if (!found || found->noperands != 4 || found->nresults != 1) return NULL;
  const ir_type *t = found->results[0]->type;
  /* a slot holds each element once: an accumulator layout (or none yet: the interpreter's
   * IR), never one that repeats elements over threads */
  if (t->kind != IR_TILE || (t->layout && t->layout->kind != IR_LAYOUT_WGMMA && t->layout->kind != IR_LAYOUT_MMA))
    return NULL;
  /* a tile smaller than the warps' grid (16x16 on 4 warps) is held by several of them */
  for (int d = 0; t->layout && d < t->rank; d++) {
    const ir_layout *l = t->layout;
    int reps = l->reps_per_warp[d] ? l->reps_per_warp[d] : 1;
    if ((int64_t)l->size_per_thread[d] * reps * l->threads_per_warp[d] * l->warps_per_cta[d] > t->shape[d]) return NULL;
  }
  if (t->dtype != TK_F32 && t->dtype != TK_I32) return NULL;
  if (!pass_is_const(found->operands[3]) || !pass_const_eq(found->operands[3], 0)) return NULL;
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
  ir_op *K = k_loop(body);
  if (!K) {
    pass_remark_missed(m, "streamk", f->loc, "no stream-K: the tile loop has no single K loop carrying only a dot's accumulator");
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
  const ir_type *acc_t = K->results[0]->type;
  int64_t numel = ir_type_numel(acc_t);
  /* per program: 2 counters padded to 16 bytes, 2 partial slots of the accumulator */
  int64_t per = 16 + 2 * numel * 4;

  /* ---- before the loop: the split, once ---- */
  ir_value *total = L->operands[1], *np = L->operands[2], *pid = L->operands[0];
  ir_value *span = bin(&s, IR_SUB, kend, kstart);
  ir_value *iters = bin(&s, IR_MAX, bin(&s, IR_CDIV, span, kstep), c32(&s, 0));
  ir_value *rounds = bin(&s, IR_DIV, total, np);
  ir_value *tail = bin(&s, IR_SUB, total, bin(&s, IR_MUL, rounds, np));
  ir_value *cand = bin(&s, IR_ADD, tail, np);
  ir_value *ok = bin(&s, IR_AND, cmp(&s, IR_CMP_GE, rounds, c32(&s, 1)), cmp(&s, IR_CMP_GT, tail, c32(&s, 0)));
  ok = bin(&s, IR_AND, ok, cmp(&s, IR_CMP_GE, iters, c32(&s, 2)));
  ir_value *sk = sel(&s, ok, cand, c32(&s, 0));
  ir_value *dp = bin(&s, IR_SUB, total, sk);
  ir_value *iters64 = cast(&s, iters, s.i64), *np64 = cast(&s, np, s.i64), *pid64 = cast(&s, pid, s.i64);
  ir_value *units = bin(&s, IR_MUL, cast(&s, sk, s.i64), iters64);
  ir_value *lo = bin(&s, IR_DIV, bin(&s, IR_MUL, pid64, units), np64);
  ir_value *hi = bin(&s, IR_DIV, bin(&s, IR_MUL, bin(&s, IR_ADD, pid64, c64(&s, 1)), units), np64);
  ir_value *safe_iters = bin(&s, IR_MAX, iters64, c64(&s, 1)); /* no division by 0 where sk is 0 */
  ir_value *jlo = bin(&s, IR_DIV, lo, safe_iters);
  ir_value *jhi = sel(&s, cmp(&s, IR_CMP_GT, hi, lo),
                      bin(&s, IR_ADD, bin(&s, IR_DIV, bin(&s, IR_SUB, hi, c64(&s, 1)), safe_iters), c64(&s, 1)), jlo);
  ir_value *ndp = sel(&s, cmp(&s, IR_CMP_GT, dp, pid),
                      bin(&s, IR_DIV, bin(&s, IR_ADD, bin(&s, IR_SUB, dp, pid), bin(&s, IR_SUB, np, c32(&s, 1))), np),
                      c32(&s, 0));
  ir_value *nunits = bin(&s, IR_ADD, ndp, cast(&s, bin(&s, IR_SUB, jhi, jlo), s.i32));
  /* what a unit needs, in i32 (the producer of a warp-specialized kernel recomputes it on
   * 24 registers): the first and last tile the range meets and where in them it starts
   * and ends */
  ir_value *jfirst = cast(&s, jlo, s.i32), *jlast = cast(&s, bin(&s, IR_SUB, jhi, c64(&s, 1)), s.i32);
  ir_value *lo_off = cast(&s, bin(&s, IR_SUB, lo, bin(&s, IR_MUL, jlo, iters64)), s.i32);
  ir_value *hi_off = cast(&s, bin(&s, IR_SUB, hi, bin(&s, IR_MUL, bin(&s, IR_SUB, jhi, c64(&s, 1)), iters64)), s.i32);
  const ir_type *pf = ir_type_ptr(m, ir_type_elem(acc_t)), *pi = ir_type_ptr(m, s.i32);
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
  ir_value *acc = K->results[0];
  ir_value *whole = bin(&s, IR_AND, cmp(&s, IR_CMP_EQ, klo, c32(&s, 0)), cmp(&s, IR_CMP_EQ, khi, iters));
  const ir_type *two[2] = {acc_t, s.i1};
  ir_op *W = ir_build_if(&s.b, whole, 2, two);
  ir_value *sum = W->results[0], *go = W->results[1];
  {
    ir_builder yes = {m, W->regions[0], NULL, K->loc};
    ir_value *y[2] = {acc, ir_const_int(&yes, s.i1, 1)};
    ir_build(&yes, IR_YIELD, 2, y, 0, NULL);
  }
  s.b = (ir_builder){m, W->regions[1], NULL, K->loc};
  ir_value *ju = bin(&s, IR_MUL, cast(&s, j, s.i64), iters64);
  /* program p's region of the workspace, in 4-byte words: [2 counters, pad, slot 0, slot 1] */
  ir_value *words = c64(&s, per / 4);
  ir_value *slot0 = bin(&s, IR_ADD, bin(&s, IR_MUL, pid64, words), c64(&s, 4));
  ir_value *mine = bin(&s, IR_ADD, slot0, sel(&s, cmp(&s, IR_CMP_EQ, cast(&s, j, s.i64), jlo), c64(&s, 0), c64(&s, numel)));
  ir_value *st[2] = {bin(&s, IR_ADDPTR, wsf->results[0], mine), acc};
  ir_build(&s.b, IR_SLOT_STORE, 2, st, 0, NULL);
  ir_value *cw = bin(&s, IR_ADD, bin(&s, IR_MUL, cast(&s, bin(&s, IR_DIV, j, c32(&s, 2)), s.i64), words),
                     cast(&s, bin(&s, IR_REM, j, c32(&s, 2)), s.i64));
  ir_value *counter = bin(&s, IR_ADDPTR, wsi->results[0], cw);
  ir_value *av[2] = {counter, c32(&s, 1)};
  ir_op *ticket = ir_build(&s.b, IR_ATOMIC, 2, av, 1, &s.i32);
  ticket->attr = IR_ATOM_ADD;
  ticket->attr2 = IR_SEM_ACQ_REL;
  /* the programs whose ranges meet tile j: p_of(u) = ((u + 1) P - 1) / U owns unit u */
  ir_value *last_u = bin(&s, IR_SUB, bin(&s, IR_ADD, ju, iters64), c64(&s, 1));
  ir_value *p0 = bin(&s, IR_DIV, bin(&s, IR_SUB, bin(&s, IR_MUL, bin(&s, IR_ADD, ju, c64(&s, 1)), np64), c64(&s, 1)), units);
  ir_value *p1 = bin(&s, IR_DIV, bin(&s, IR_SUB, bin(&s, IR_MUL, bin(&s, IR_ADD, last_u, c64(&s, 1)), np64), c64(&s, 1)), units);
  ir_value *last = cmp(&s, IR_CMP_EQ, ticket->results[0], c32(&s, 1)); /* the second of two */
  ir_op *LAST = ir_build_if(&s.b, last, 1, &acc_t);
  {
    ir_builder no = {m, LAST->regions[1], NULL, K->loc};
    ir_build(&no, IR_YIELD, 1, &acc, 0, NULL);
    ir_value *y[2] = {LAST->results[0], last};
    ir_build(&s.b, IR_YIELD, 2, y, 0, NULL);
  }
  s.b = (ir_builder){m, LAST->regions[0], NULL, K->loc};
  ir_value *rv[2] = {counter, c32(&s, 0)};
  ir_op *reset = ir_build(&s.b, IR_ATOMIC, 2, rv, 1, &s.i32);
  reset->attr = IR_ATOM_XCHG;
  /* the other piece's partial, from the slot its program stored it in: slot 0 when j is
   * the first tile that program's range meets */
  ir_value *other = sel(&s, cmp(&s, IR_CMP_EQ, pid64, p0), p1, p0);
  ir_value *olo = bin(&s, IR_DIV, bin(&s, IR_MUL, other, units), np64);
  ir_value *ofirst = cmp(&s, IR_CMP_EQ, bin(&s, IR_DIV, olo, safe_iters), cast(&s, j, s.i64));
  ir_value *at = bin(&s, IR_ADD, bin(&s, IR_ADD, bin(&s, IR_MUL, other, words), c64(&s, 4)),
                     sel(&s, ofirst, c64(&s, 0), c64(&s, numel)));
  ir_value *src = bin(&s, IR_ADDPTR, wsf->results[0], at);
  ir_value *got = ir_build1(&s.b, IR_SLOT_LOAD, acc_t, 1, &src);
  /* a + b is b + a: the same bits whichever piece finished last */
  ir_value *total_acc = bin(&s, IR_ADD, acc, got);
  ir_build(&s.b, IR_YIELD, 1, &total_acc, 0, NULL);

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
  /* the epilogue reads the sum (the K loop's result is read by the pieces' code only) */
  ir_value *swap[2] = {acc, sum};
  ir_walk(gb, read_sum, swap);
  ir_builder uy = {m, ub, NULL, f->loc};
  ir_build(&uy, IR_YIELD, 0, NULL, 0, NULL);
  ir_op_erase(L);
  pass_remark(m, "streamk", f->loc, "stream-K: the last rounds' tiles split along K over every program (%lld bytes of workspace a program)",
              (long long)per);
  return true;
}
