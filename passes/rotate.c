/* Rotation of a loop with two products in flight (docs/passes.md, "rotate").
 *
 * Attention's loop body, once lower_dot has run, is
 *
 *     S = wgmma(Q, K_j); wait                 -- A: the first product and what follows
 *     p, alpha, m, l = softmax(S, m, l)       --    from it
 *     acc = wgmma(p, V_j, acc * alpha); wait  -- B: the second product, the only part
 *                                             --    that reads the carried acc
 *
 * and each warpgroup leaves the tensor cores idle while its softmax runs. Since A never
 * reads what B computes, B of iteration j can run in iteration j + 1, issued right after
 * A's product there: the softmax of block j + 1 then overlaps the product of block j
 * (FlashAttention-3's intra-warpgroup overlap). The values B takes from A (p, alpha, the
 * slot) become carried values; the first product's wait keeps the second in flight
 * (pending = 1) and the second's wait comes last. The loop becomes
 *
 *     if lb < ub { A(lb) }                    -- prologue
 *     for j in lb + step .. ub { A(j) issue; B(j - 1) issue; A(j) rest; B(j - 1) wait }
 *     if lb < ub { B(last) }                  -- epilogue
 *
 * With two to four warpgroups (8, 12 or 16 warps), they also take turns issuing (wg_turn:
 * FA3's ping-pong, in a cycle): warpgroup 0 issues A's and B's products, passes the turn
 * to warpgroup 1 and runs its softmax while the next issues its own, so that one's
 * softmax overlaps the others' products instead of all computing at once and leaving the
 * tensor cores idle. The turns stand around the issue in the loop only; every warpgroup
 * runs the same loops with the same trip counts, so each wait meets its predecessor's
 * pass, and the pass of a loop's last iteration is the first turn of the next loop (the
 * last warpgroup's start gives the very first). Four warpgroups (D = 64's BM 256 loop)
 * measured 2-4% faster with turns than without on the H100 (2026-12-07).
 *
 * Turns are taken only where every program runs the loop the same number of times
 * (its bounds depend on neither the program id nor an enclosing loop: non-causal
 * attention), or nearly (stream-K's K loop: long_everywhere). Measured on the H200 (f16 S4096 D128, 2026-12-02, same run): non-causal
 * 2295 -> 2105 us with turns, causal 1197 -> 1253 us, where the trip count grows with the
 * query block and the short loops of the first blocks pay the hand-offs without the
 * overlap to win them back.
 *
 * Applied to a loop whose body holds two or more wgmma, each followed by its commit and
 * a wait for everything, where every product after the first yields a carried
 * accumulator and the forward slice of those accumulators holds these products, their
 * waits, pure ops and nothing else, and ends in the yield. B may so hold several products
 * beside P V (rowsum's P · ones): each keeps its own group, the first product's wait keeps
 * all of them in flight (pending = their count), and their waits end the body. */
#include "pass_util.h"

#include <string.h>

enum { MAX_OPS = 1024, MAX_X = 32, WG_WARPS = 4, MAX_TURN_WGS = 4, MAX_B = 4 };

typedef struct {
  ir_module *m;
  ir_func *f;
  ir_op *L;
  ir_block *body;
  ir_op *w1, *c1, *t1;
  ir_op *w2[MAX_B], *t2[MAX_B]; /* B's products and their waits, in body order */
  int c[MAX_B];          /* each one's accumulator: its carried index */
  int np;                /* B's products (commit groups) */
  ir_op *bops[64];       /* B, in body order */
  int nb;
  ir_value *x[MAX_X];    /* what B reads from A (or from the region's arguments) */
  int nx;
  bool turns;            /* two to four warpgroups: they take turns issuing (wg_turn) */
} rot;

static bool in_b(const rot *r, const ir_op *op) {
  for (int i = 0; i < r->nb; i++)
    if (r->bops[i] == op) return true;
  return false;
}

static bool b_result(const rot *r, const ir_value *v) { return v->def && in_b(r, v->def); }

/* Which of B's products the carried index k accumulates, or -1. */
static int acc_of(const rot *r, int k) {
  for (int i = 0; i < r->np; i++)
    if (r->c[i] == k) return i;
  return -1;
}

static bool is_b_wait(const rot *r, const ir_op *op) {
  for (int i = 0; i < r->np; i++)
    if (r->t2[i] == op) return true;
  return false;
}

/* Whether an op anywhere under blk reads a result of B. */
static bool reads_b(const rot *r, const ir_block *blk) {
  for (const ir_op *op = blk->first; op; op = op->next) {
    if (op->opc == IR_YIELD && blk == r->body) continue;
    if (in_b(r, op)) continue;
    for (int i = 0; i < op->noperands; i++)
      if (b_result(r, op->operands[i])) return true;
    for (int k = 0; k < op->nregions; k++)
      if (reads_b(r, op->regions[k])) return true;
  }
  return false;
}

/* Whether a top-level op of blk is before b in it. */
static bool before(const ir_op *a, const ir_op *b) {
  for (const ir_op *o = a; o; o = o->next)
    if (o == b) return true;
  return false;
}

/* Whether v is read inside a region nested in blk. */
static bool reads_nested(const ir_block *blk, const ir_value *v) {
  for (const ir_op *op = blk->first; op; op = op->next)
    for (int k = 0; k < op->nregions; k++)
      for (const ir_op *u = op->regions[k]->first; u; u = u->next) {
        for (int i = 0; i < u->noperands; i++)
          if (u->operands[i] == v) return true;
        for (int j = 0; j < u->nregions; j++)
          if (reads_nested(u->regions[j], v)) return true;
      }
  return false;
}

static bool product_group(ir_op *w, ir_op **commit, ir_op **wait) {
  ir_op *c = w->next, *t = c ? c->next : NULL;
  if (!c || c->opc != IR_WGMMA_COMMIT || !t || t->opc != IR_WGMMA_WAIT || t->attr != 0 || t->noperands != 1 ||
      t->operands[0] != w->results[0])
    return false;
  *commit = c;
  *wait = t;
  return true;
}

static bool add_x(rot *r, ir_value *v) {
  for (int i = 0; i < r->nx; i++)
    if (r->x[i] == v) return true;
  if (r->nx == MAX_X) return false;
  const ir_type *t = v->type;
  /* carried values need a placeholder for the loop that does not run: a constant */
  if (t->kind != IR_SCALAR && t->kind != IR_TILE) return false;
  r->x[r->nx++] = v;
  return true;
}

/* Whether op only reshapes what it reads (a broadcast of a row statistic, say): cheaper to
 * redo in B than to carry its result. */
static bool reshape(const ir_op *op) {
  switch (op->opc) {
  case IR_BROADCAST: case IR_EXPAND_DIMS: case IR_SPLAT: case IR_CONVERT_LAYOUT: return true;
  default: return false;
  }
}

/* Moves into B the reshapes of A used by B alone, so that what is carried is the row
 * vector, not its broadcast; B stays in body order. */
static void absorb(rot *r) {
  bool grew = true;
  while (grew) {
    grew = false;
    for (ir_op *op = r->body->first; op && r->nb < 62; op = op->next) {
      if (in_b(r, op) || !reshape(op) || op->nresults != 1) continue;
      int uses = 0, in = 0;
      for (ir_op *u = r->body->first; u; u = u->next)
        for (int i = 0; i < u->noperands; i++)
          if (u->operands[i] == op->results[0]) {
            uses++;
            in += in_b(r, u);
          }
      if (!uses || uses != in || reads_nested(r->body, op->results[0])) continue;
      int at = 0;
      while (at < r->nb && before(r->bops[at], op)) at++;
      memmove(r->bops + at + 1, r->bops + at, sizeof *r->bops * (size_t)(r->nb - at));
      r->bops[at] = op;
      r->nb++;
      grew = true;
    }
  }
}

/* Taking turns, moves into B the slot waits between A's wait and B's product: they guard
 * B's operand (V's slot), which A never reads. Left in A, the wait ends the softmax one
 * iteration early, and ptxas hoists its try_wait to the top of the softmax's block, where
 * the scoreboard it shares with the exponentials' operands stalls them until the next V
 * has landed (ncu, D128: 4% of the consumers' time on one FMNMX). In B it comes first,
 * before the turn. Measured on the H100 (same call, f16 S4096): D128 1978/1965 -> 1940/1939
 * us, D64 BM128 1335/1329 -> 1283/1307. Without turns (four warpgroups, causal) it was
 * slower (D64 S16384 BM256 18850 -> 19944 us): there ptxas then hoists the second
 * product's wait to the top of the softmax, which no other warpgroup's products cover. */
static void take_slot_waits(rot *r) {
  for (ir_op *op = r->t1->next; op && op != r->w2[r->np - 1] && r->nb < 62; op = op->next) {
    if (op->opc != IR_MBAR_WAIT || in_b(r, op)) continue;
    int at = 0;
    while (at < r->nb && before(r->bops[at], op)) at++;
    memmove(r->bops + at + 1, r->bops + at, sizeof *r->bops * (size_t)(r->nb - at));
    r->bops[at] = op;
    r->nb++;
  }
}

static bool analyze(rot *r) {
  ir_block *body = r->body;
  ir_op *y = body->last;
  ir_op *c2[MAX_B];
  /* A's product is the first; every later one is B's, each a group of its own whose wait
   * the yield carries (the accumulator of P V, and of a row sum on the tensor cores) */
  r->w1 = NULL;
  r->np = 0;
  for (ir_op *op = body->first; op; op = op->next) {
    if (op->opc != IR_WGMMA) continue;
    if (!r->w1) r->w1 = op;
    else if (r->np == MAX_B) return false;
    else r->w2[r->np++] = op;
  }
  if (!r->w1 || !r->np || !product_group(r->w1, &r->c1, &r->t1)) return false;
  for (int i = 0; i < r->np; i++) {
    if (!product_group(r->w2[i], &c2[i], &r->t2[i])) return false;
    r->c[i] = -1;
    for (int k = 0; k < y->noperands; k++)
      if (y->operands[k] == r->t2[i]->results[0]) r->c[i] = k;
    if (r->c[i] < 0) return false;
  }
  /* B: the forward slice of the accumulators, then the commits and the releases that go
   * with them */
  for (ir_op *op = body->first; op; op = op->next) {
    if (op == y) break;
    bool uses = false;
    for (int i = 0; i < op->noperands; i++) {
      ir_value *v = op->operands[i];
      uses |= b_result(r, v);
      for (int j = 0; j < r->np; j++) uses |= v == body->args[r->c[j] + 1];
    }
    if (!uses) continue;
    bool pure = (ir_op_info(op->opc)->traits & IR_PURE) && !op->nregions, product = false;
    for (int j = 0; j < r->np; j++) product |= op == r->w2[j] || op == r->t2[j];
    if ((!pure && !product) || r->nb >= 62) return false;
    r->bops[r->nb++] = op;
    for (int j = 0; j < r->np; j++)
      if (op == r->w2[j]) r->bops[r->nb++] = c2[j]; /* nb was at most 62: room for both */
  }
  if (in_b(r, r->w1)) return false;
  for (int j = 0; j < r->np; j++) {
    if (!in_b(r, r->w2[j]) || !in_b(r, r->t2[j])) return false;
    if (r->t2[j]->next && r->t2[j]->next->opc == IR_MBAR_ARRIVE) {
      if (r->nb >= 63) return false;
      r->bops[r->nb++] = r->t2[j]->next;
    }
  }
  /* B's results leave only through the yield, at the accumulators' places */
  for (int k = 0; k < y->noperands; k++)
    if (acc_of(r, k) < 0 && b_result(r, y->operands[k])) return false;
  if (reads_b(r, body)) return false;
  absorb(r);
  if (r->turns) take_slot_waits(r);
  /* what B reads from A or from the region's arguments is carried over to the next
   * iteration */
  for (int i = 0; i < r->nb; i++) {
    ir_op *op = r->bops[i];
    for (int j = 0; j < op->noperands; j++) {
      ir_value *v = op->operands[j];
      bool from_a = v->def && v->def->parent == body && !in_b(r, v->def);
      bool arg = !v->def && v->owner == body && acc_of(r, v->index - 1) < 0;
      if ((from_a || arg) && !add_x(r, v)) return false;
    }
  }
  return true;
}

/* A zero of type t: what a carried value holds when the loop does not run. */
static ir_value *zero(ir_builder *b, const ir_type *t) {
  return ir_dtype_is_float(t->dtype) ? ir_const_float(b, t, 0) : ir_const_int(b, t, 0);
}

static void clone_at(rot *r, ir_builder *b, ir_op *op, ir_vmap *vm) {
  ir_op *c = ir_op_clone(r->m, op, vm);
  ir_block_insert_before(b->block, c, b->before);
}

static ir_op *yield(ir_builder *b, int n, ir_value *const *v) {
  return ir_build(b, IR_YIELD, n, v, 0, NULL);
}

/* wg_turn (its step): the two warpgroups issue their products in turn (see the top). */
static void turn(ir_builder *b, int step) {
  ir_build(b, IR_WG_TURN, 0, NULL, 0, NULL)->attr = step;
}

static void rewrite(rot *r) {
  ir_module *m = r->m;
  ir_op *L = r->L, *y = r->body->last;
  ir_block *body = r->body;
  int n = L->noperands - 3, nc = n + r->nx;
  ir_value *lb = L->operands[0], *ub = L->operands[1], *step = L->operands[2];
  ir_value **init = L->operands + 3;
  ir_builder pre = {m, L->parent, L, L->loc};
  ir_value *cond = ir_cmp_build(&pre, IR_CMP_LT, lb, ub);
  const ir_type **types = SU_NEW_ARRAY(m->arena, const ir_type *, nc);
  ir_value **vals = SU_NEW_ARRAY(m->arena, ir_value *, nc);
  for (int k = 0; k < n; k++) types[k] = L->results[k]->type;
  for (int i = 0; i < r->nx; i++) types[n + i] = r->x[i]->type;
  /* prologue: A at lb */
  ir_op *pro = ir_build_if(&pre, cond, nc, types);
  ir_builder in = {m, pro->regions[0], NULL, L->loc};
  ir_vmap *vp = ir_vmap_new(m->arena);
  ir_vmap_put(vp, body->args[0], lb);
  for (int k = 0; k < n; k++) ir_vmap_put(vp, body->args[k + 1], init[k]);
  for (ir_op *op = body->first; op != y; op = op->next)
    if (!in_b(r, op)) clone_at(r, &in, op, vp);
  for (int k = 0; k < n; k++) vals[k] = acc_of(r, k) >= 0 ? init[k] : ir_vmap_get(vp, y->operands[k]);
  for (int i = 0; i < r->nx; i++) vals[n + i] = ir_vmap_get(vp, r->x[i]);
  yield(&in, nc, vals);
  ir_builder out = {m, pro->regions[1], NULL, L->loc};
  for (int k = 0; k < n; k++) vals[k] = init[k];
  for (int i = 0; i < r->nx; i++) vals[n + i] = zero(&out, types[n + i]);
  yield(&out, nc, vals);
  /* the rotated loop */
  ir_value *lb2 = ir_binary(&pre, IR_ADD, lb, step);
  ir_op *L2 = ir_build_for(&pre, lb2, ub, step, nc, pro->results);
  ir_block *b2 = L2->regions[0];
  ir_builder at = {m, b2, NULL, L->loc};
  ir_vmap *va = ir_vmap_new(m->arena), *vb = ir_vmap_new(m->arena);
  ir_vmap_put(va, body->args[0], b2->args[0]);
  for (int k = 0; k < n; k++) ir_vmap_put(va, body->args[k + 1], b2->args[k + 1]);
  for (int i = 0; i < r->nx; i++) ir_vmap_put(vb, r->x[i], b2->args[n + 1 + i]);
  for (int j = 0; j < r->np; j++) ir_vmap_put(vb, body->args[r->c[j] + 1], b2->args[r->c[j] + 1]);
  /* A's ops up to its product's commit; B's issue; the rest of A; B's wait */
  /* taking turns, B's pure ops (the rescale of acc) and its slot wait go first, outside
   * the turn: they read only carried values, and a warpgroup holding the turn while it
   * waits for V would keep the other from issuing */
  bool *early = SU_NEW_ARRAY(m->arena, bool, r->nb);
  for (int i = 0; i < r->nb; i++) {
    const ir_op *bo = r->bops[i];
    early[i] = r->turns && (((ir_op_info(bo->opc)->traits & IR_PURE) && !bo->nregions) || bo->opc == IR_MBAR_WAIT);
    if (early[i]) clone_at(r, &at, r->bops[i], vb);
  }
  ir_op *op = body->first;
  for (; op != r->c1->next; op = op->next) {
    if (in_b(r, op)) continue;
    if (op == r->w1 && r->turns) turn(&at, 0);
    clone_at(r, &at, op, va);
  }
  for (int i = 0; i < r->nb; i++)
    if (!early[i] && !is_b_wait(r, r->bops[i]) && r->bops[i]->opc != IR_MBAR_ARRIVE) clone_at(r, &at, r->bops[i], vb);
  if (r->turns) turn(&at, 1);
  for (; op != y; op = op->next) {
    if (in_b(r, op)) continue;
    clone_at(r, &at, op, va);
    if (op == r->t1) at.block->last->attr = r->np; /* B's products stay in flight */
  }
  for (int i = 0; i < r->nb; i++)
    if (is_b_wait(r, r->bops[i]) || r->bops[i]->opc == IR_MBAR_ARRIVE) clone_at(r, &at, r->bops[i], vb);
  for (int k = 0; k < n; k++) {
    int j = acc_of(r, k);
    vals[k] = j >= 0 ? ir_vmap_get(vb, r->t2[j]->results[0]) : ir_vmap_get(va, y->operands[k]);
  }
  for (int i = 0; i < r->nx; i++) vals[n + i] = ir_vmap_get(va, r->x[i]);
  yield(&at, nc, vals);
  /* epilogue: B of the last iteration */
  ir_builder post = {m, L->parent, L, L->loc};
  const ir_type *acc_t[MAX_B];
  for (int j = 0; j < r->np; j++) acc_t[j] = L->results[r->c[j]]->type;
  ir_op *epi = ir_build_if(&post, cond, r->np, acc_t);
  ir_builder ein = {m, epi->regions[0], NULL, L->loc};
  ir_vmap *ve = ir_vmap_new(m->arena);
  for (int i = 0; i < r->nx; i++) ir_vmap_put(ve, r->x[i], L2->results[n + i]);
  for (int j = 0; j < r->np; j++) ir_vmap_put(ve, body->args[r->c[j] + 1], L2->results[r->c[j]]);
  for (int i = 0; i < r->nb; i++) clone_at(r, &ein, r->bops[i], ve);
  ir_value *fin[MAX_B];
  for (int j = 0; j < r->np; j++) fin[j] = ir_vmap_get(ve, r->t2[j]->results[0]);
  yield(&ein, r->np, fin);
  ir_builder eout = {m, epi->regions[1], NULL, L->loc};
  for (int j = 0; j < r->np; j++) fin[j] = init[r->c[j]];
  yield(&eout, r->np, fin);
  for (int k = 0; k < n; k++) {
    int j = acc_of(r, k);
    ir_replace_all_uses(r->f, L->results[k], j >= 0 ? epi->results[j] : L2->results[k]);
  }
  ir_op_erase(L);
}

/* Whether L is long in every program, so that turns pay (above): its trip count is the
 * same in every program, or it is a stream-K kernel's K loop (a workspace op: streamk.c),
 * which persist found uniform and stream-K cut into the units' ranges — whole tiles'
 * trip counts but for at most two pieces a program. The warpgroups of one program run
 * the same ranges either way, as the turns need. */
static bool long_everywhere(ir_func *f, const ir_op *L) { return pass_loop_uniform(f, L) || pass_has_workspace(f); }

bool pass_rotate(ir_module *m, ir_func *f) {
  if (!pass_has(m, PASS_WGMMA)) return false;
  ir_op *loops[64];
  int nl = pass_collect(f->body, IR_FOR, loops, 64);
  bool changed = false, turns = false;
  for (int i = 0; i < nl; i++) {
    /* not a while loop (attr 1): its first iteration may not run */
    if (loops[i]->attr) continue;
    rot r;
    memset(&r, 0, sizeof r);
    r.m = m;
    r.f = f;
    r.L = loops[i];
    r.body = r.L->regions[0];
    /* the bounds: lower, upper, step */
    int wgs = f->num_warps / WG_WARPS;
    r.turns = f->num_warps % WG_WARPS == 0 && wgs >= 2 && wgs <= MAX_TURN_WGS && long_everywhere(f, r.L);
    if (!analyze(&r)) continue;
    rewrite(&r);
    changed = true;
    turns |= r.turns;
  }
  if (turns) { /* warpgroup 0 has the first turn, once */
    ir_builder top = {m, f->body, f->body->first, f->loc};
    turn(&top, 2);
  }
  return changed;
}
