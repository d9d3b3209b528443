/* Software pipelining of the loads that feed dot in a for loop (docs/passes.md).
 *
 * For a loop whose body holds dots with operands that are loads of that body, or their
 * transposes (each load used by that dot alone, `other` absent or 0, addresses and masks
 * recomputable at a later iteration), with `stages` S >= 2: each such load becomes a
 * ring of S shared slots filled S - 1 iterations ahead, so global loads overlap the
 * products. Attention's K (read as trans(K) by Q K^T) and V are two loads of one stage;
 * its Q (loop-invariant) and P (computed) are left to lower_dot. On TMA, the loads one dot
 * reads are a group with barriers of its own: the consumer waits for a group where its
 * first load stood and releases its slots right after that dot, so attention's Q K^T
 * starts before V has landed and K's slot is refilled while P V still reads V's.
 *
 *  - TMA (sm_90a, both loads block pointers with aligned strides, the dot on wgmma): a
 *    tensor map per operand, per group barriers `full` (one arrival: the expect) and `empty`
 *    (one per consumer warpgroup). Producing iteration g (global count, see below) at k: wait
 *    empty[g % S] for parity (g / S & 1) ^ 1 (a fresh barrier passes parity 1), expect the
 *    bytes on full[g % S], copy each box. Consuming g: wait full[g % S] for parity
 *    g / S & 1, read the slots (smem_load), and after the dot arrive on empty[g % S].
 *  - cp.async (sm_80 and later, otherwise): every thread copies its part of the tile;
 *    consuming g: cp_async_wait for all but the S - 2 newest groups, then a barrier (and
 *    the async-proxy fence when wgmma reads the slot). Producing g + S - 1 comes after the
 *    barrier of iteration g, by which every thread has finished reading its slot (read in
 *    iteration g - 1). One commit per iteration, issued or not, keeps the group count.
 *
 * Before the loop the first S - 1 iterations are produced, each under `k < ub`; in the
 * body, after the consumer, iteration g + S - 1 at k + (S-1)*step, under the same test.
 * The slot and the phase come from a counter g of the loop's iterations over the whole
 * kernel, carried through the loop and every loop around it (a persistent kernel runs the
 * loop once per tile, and the ring goes on), starting at 0 at the top level.
 *
 * The loads' pointer and mask computations in the body become dead (DCE removes them);
 * the copies for later iterations are recomputed from the induction variable. */
#include "pass_util.h"

#include <string.h>

enum { MAX_LOADS = 8 };

typedef struct {
  ir_module *m;
  ir_func *f;
  ir_op *loop;
  ir_op *loads[MAX_LOADS];
  int grp[MAX_LOADS];     /* the group of each load: the loads one dot reads */
  ir_op *dots[MAX_LOADS]; /* each group's dot */
  int ngroups;
  int nloads, stages;
  bool tma, wgmma; /* TMA; every product reading a slot is wgmma */
  bool fence;      /* some product reading a slot is wgmma (the async proxy reads it) */
  pass_block blk[MAX_LOADS];
  ir_value *bufs[MAX_LOADS], *maps[MAX_LOADS];
  ir_value *full[MAX_LOADS], *empty[MAX_LOADS]; /* TMA: per group */
  int bytes[MAX_LOADS];                         /* TMA: per group and stage */
  const ir_type *i32;
  ir_value *g_in;   /* the counter inside the loop (region argument) */
  ir_value *g_at;   /* the counter where the loop stands (its initial value) */
} pipe;

/* ---- finding candidates ---- */

/* v can be recomputed at another iteration from the induction variable: its computation
 * inside the body is pure and reads no other carried value. */
static bool recomputable(const ir_block *body, const ir_value *v, int depth) {
  if (depth > 64) return false;
  if (v->def) {
    if (!pass_op_within(v->def, body)) return true;
    const ir_op *op = v->def;
    if (!(ir_op_info(op->opc)->traits & IR_PURE) || op->nregions) return false;
    for (int i = 0; i < op->noperands; i++)
      if (!recomputable(body, op->operands[i], depth + 1)) return false;
    return true;
  }
  if (v->owner == body) return v->index == 0; /* the induction variable */
  for (const ir_block *b = v->owner; b; b = b->parent ? b->parent->parent : NULL)
    if (b == body) return false; /* an argument of a region inside the body */
  return true;
}

static bool pipelinable_load(const pipe *p, const ir_op *ld) {
  const ir_block *body = p->loop->regions[0];
  if (!ld || ld->opc != IR_LOAD || ld->parent != body) return false;
  if (ld->results[0]->type->kind != IR_TILE || ld->results[0]->type->rank != 2) return false;
  if (ld->noperands == 3 && !pass_const_eq(ld->operands[2], 0)) return false;
  if (pass_count_uses(p->f->body, ld->results[0]) != 1) return false;
  for (int i = 0; i < ld->noperands && i < 2; i++)
    if (!recomputable(body, ld->operands[i], 0)) return false;
  return true;
}

/* ---- TMA applicability ---- */

/* TMA needs the base and every stride 16-byte aligned, the boxes <= 256 and an inner
 * extent of at least one 32-byte swizzle line (pass_block_tma_ready). */
static bool tma_ready(pipe *p, int i) {
  int eb = ir_dtype_bytes(p->loads[i]->results[0]->type->dtype);
  return pass_block_tma_ready(p->f, &p->blk[i], eb);
}

/* ---- building ---- */

static ir_builder at_op(pipe *p, ir_op *before) {
  return (ir_builder){p->m, before->parent, before, before->loc};
}

static ir_value *k32(pipe *p, ir_builder *b, int64_t v) { return ir_const_int(b, p->i32, v); }

static ir_value *bin(ir_builder *b, ir_opcode opc, ir_value *x, ir_value *y) { return ir_binary(b, opc, x, y); }

/* g % S and (g / S) & 1 (g >= 0). */
static void slot_phase(pipe *p, ir_builder *b, ir_value *g, ir_value **slot, ir_value **phase) {
  ir_value *s = k32(p, b, p->stages);
  *slot = bin(b, IR_REM, g, s);
  if (phase) *phase = bin(b, IR_AND, bin(b, IR_DIV, g, s), k32(p, b, 1));
}

/* Builds `if (cond) { ...body... }` at b; returns a builder inside the then-branch. */
static ir_builder guarded(pipe *p, ir_builder *b, ir_value *cond) {
  ir_op *op = ir_build_if(b, cond, 0, NULL);
  ir_builder in = {p->m, op->regions[0], NULL, b->loc};
  ir_block_insert_before(op->regions[0], ir_op_new(p->m, IR_YIELD, b->loc, 0, NULL, 0, NULL), NULL);
  ir_block_insert_before(op->regions[1], ir_op_new(p->m, IR_YIELD, b->loc, 0, NULL, 0, NULL), NULL);
  in.before = op->regions[0]->last;
  return in;
}

/* The copies of iteration g at induction value k, at b. */
static void produce(pipe *p, ir_builder *b, ir_value *g, ir_value *k) {
  ir_block *body = p->loop->regions[0];
  ir_vmap *map = ir_vmap_new(p->m->arena);
  ir_vmap_put(map, body->args[0], k);
  ir_value *slot, *phase;
  slot_phase(p, b, g, &slot, &phase);
  if (p->tma) {
    for (int gi = 0; gi < p->ngroups; gi++) {
      ir_value *args[3] = {p->empty[gi], slot, bin(b, IR_XOR, phase, k32(p, b, 1))};
      ir_build(b, IR_MBAR_WAIT, 3, args, 0, NULL);
      ir_value *ex[2] = {p->full[gi], slot};
      ir_build(b, IR_MBAR_EXPECT, 2, ex, 0, NULL)->attr = p->bytes[gi];
      for (int i = 0; i < p->nloads; i++) {
        if (p->grp[i] != gi) continue;
        ir_value *opnds[5 + IR_MAX_RANK] = {p->maps[i], p->bufs[i], slot, p->full[gi], slot};
        for (int d = 0; d < p->blk[i].rank; d++) {
          opnds[5 + d] = pass_clone_slice(p->m, b, body, p->blk[i].coord[d], map);
          SU_ASSERT(opnds[5 + d]);
        }
        ir_build(b, IR_TMA_LOAD, 5 + p->blk[i].rank, opnds, 0, NULL);
      }
    }
    return;
  }
  for (int i = 0; i < p->nloads; i++) {
    ir_op *ld = p->loads[i];
    ir_value *opnds[4] = {p->bufs[i], slot, pass_clone_slice(p->m, b, body, ld->operands[0], map), NULL};
    int n = 3;
    if (ld->noperands >= 2) opnds[n++] = pass_clone_slice(p->m, b, body, ld->operands[1], map);
    for (int j = 0; j < n; j++) SU_ASSERT(opnds[j]);
    ir_build(b, IR_CP_ASYNC, n, opnds, 0, NULL);
  }
}

/* produce(g + s, lb-or-iv + s * step) under `k < ub`, at b; cp.async commits either way. */
static void produce_ahead(pipe *p, ir_builder *b, ir_value *g, ir_value *k0, int s) {
  ir_op *L = p->loop;
  ir_value *step = L->operands[2], *ub = L->operands[1];
  ir_value *k = s ? bin(b, IR_ADD, k0, bin(b, IR_MUL, step, ir_const_int(b, step->type, s))) : k0;
  ir_value *gs = s ? bin(b, IR_ADD, g, k32(p, b, s)) : g;
  ir_builder in = guarded(p, b, ir_cmp_build(b, IR_CMP_LT, k, ub));
  produce(p, &in, gs, k);
  if (!p->tma) ir_build(b, IR_CP_ASYNC_COMMIT, 0, NULL, 0, NULL);
}

/* Threads the ring counter from the top level to the loop: a carried value (or an if
 * result) through every op around it; sets g_at and g_in. */
static void thread_counter(pipe *p) {
  ir_op *chain[64];
  int n = 0;
  for (ir_op *op = p->loop; op; op = op->parent->parent) {
    if (n == 64) su_fatal("swpipe: loops nested more than 64 deep");
    chain[n++] = op;
  }
  /* chain[n-1] is at the top level; chain[0] is the loop */
  ir_builder top = at_op(p, chain[n - 1]);
  ir_value *cur = ir_const_int(&top, p->i32, 0);
  ir_value *outer[64] = {0}, *res[64] = {0}, *inner[64] = {0};
  for (int i = n - 1; i >= 0; i--) {
    ir_op *op = chain[i];
    outer[i] = cur;
    if (op->opc == IR_FOR) {
      ir_value *arg;
      res[i] = ir_for_add_carried(p->m, op, cur, &arg);
      cur = arg;
    } else {
      SU_ASSERT(op->opc == IR_IF);
      res[i] = ir_if_add_result(p->m, op, p->i32);
    }
    inner[i] = cur;
  }
  p->g_at = outer[0];
  p->g_in = inner[0];
  /* yields, inside out: the loop's own (g + 1) is the caller's; around it, each region
   * holding the next op yields that op's result, the others what came in */
  for (int i = 1; i < n; i++) {
    ir_op *op = chain[i];
    for (int r = 0; r < op->nregions; r++) {
      bool holds = chain[i - 1]->parent == op->regions[r];
      ir_yield_add(p->m, op->regions[r]->last, holds ? res[i - 1] : outer[i]);
    }
  }
}

static ir_value *alloc(pipe *p, ir_opcode opc, const ir_type *t) {
  ir_builder b = {p->m, p->f->body, p->f->body->first, p->f->loc};
  return ir_build1(&b, opc, t, 0, NULL);
}

static void allocate(pipe *p) {
  ir_module *m = p->m;
  for (int i = 0; i < p->nloads; i++) {
    const ir_type *t = p->loads[i]->results[0]->type;
    int eb = ir_dtype_bytes(t->dtype);
    int sw = pass_swizzle_for(t->shape[1] * eb);
    if (sw && (t->shape[1] * eb) % sw) sw = 0;
    p->bufs[i] = alloc(p, IR_SMEM_ALLOC, pass_slots_type(m, t->elem, p->stages, t->shape[0], t->shape[1], sw));
    if (!p->tma) continue;
    p->maps[i] = pass_tensor_map(m, p->f, &p->blk[i], sw, eb);
    p->bytes[p->grp[i]] += (int)(ir_type_numel(t) * eb);
  }
  for (int gi = 0; p->tma && gi < p->ngroups; gi++) {
    int wgs = (p->f->num_warps + 3) / 4;
    p->full[gi] = alloc(p, IR_MBAR_ALLOC, ir_type_mbar(m, p->stages));
    p->full[gi]->def->attr = 1;
    p->empty[gi] = alloc(p, IR_MBAR_ALLOC, ir_type_mbar(m, p->stages));
    p->empty[gi]->def->attr = wgs;
  }
}

static void rewrite(pipe *p) {
  ir_op *L = p->loop;
  ir_block *body = L->regions[0];
  allocate(p);
  thread_counter(p);
  ir_value *lb = L->operands[0];
  /* prologue */
  ir_builder pre = at_op(p, L);
  for (int s = 0; s < p->stages - 1; s++) produce_ahead(p, &pre, p->g_at, lb, s);
  /* consumer: each group waits where its first load stood (all of them at the first, on
   * the cp.async ring), reads its slots there and releases them after its dot */
  ir_op *first[MAX_LOADS] = {0};
  for (ir_op *o = body->first; o; o = o->next)
    for (int i = 0; i < p->nloads; i++)
      if (o == p->loads[i] && !first[p->tma ? p->grp[i] : 0]) first[p->tma ? p->grp[i] : 0] = o;
  ir_value *slot = NULL, *phase = NULL;
  for (int gi = 0; gi < (p->tma ? p->ngroups : 1); gi++) {
    ir_builder cons = at_op(p, first[gi]);
    if (!slot) slot_phase(p, &cons, p->g_in, &slot, &phase);
    if (p->tma) {
      ir_value *args[3] = {p->full[gi], slot, phase};
      ir_build(&cons, IR_MBAR_WAIT, 3, args, 0, NULL);
    } else {
      ir_build(&cons, IR_CP_ASYNC_WAIT, 0, NULL, 0, NULL)->attr = p->stages - 2;
      if (p->fence) ir_build(&cons, IR_FENCE_ASYNC, 0, NULL, 0, NULL);
      ir_build(&cons, IR_BARRIER, 0, NULL, 0, NULL);
    }
  }
  for (int i = 0; i < p->nloads; i++) {
    ir_op *ld = p->loads[i];
    ir_builder b = at_op(p, ld);
    ir_value *opnds[2] = {p->bufs[i], slot};
    ir_value *v = ir_build1(&b, IR_SMEM_LOAD, ld->results[0]->type, 2, opnds);
    ir_replace_all_uses(p->f, ld->results[0], v);
    ir_op_erase(ld);
  }
  for (int gi = 0; p->tma && gi < p->ngroups; gi++) {
    ir_builder after = {p->m, body, p->dots[gi]->next, p->dots[gi]->loc};
    ir_value *args[2] = {p->empty[gi], slot};
    ir_build(&after, IR_MBAR_ARRIVE, 2, args, 0, NULL);
  }
  /* produce ahead, at the end of the body; the counter moves on */
  ir_op *y = body->last;
  ir_builder end = at_op(p, y);
  produce_ahead(p, &end, p->g_in, body->args[0], p->stages - 1);
  ir_yield_add(p->m, y, bin(&end, IR_ADD, p->g_in, k32(p, &end, 1)));
  if (!p->tma) {
    ir_builder post = {p->m, L->parent, L->next, L->loc};
    ir_build(&post, IR_CP_ASYNC_WAIT, 0, NULL, 0, NULL)->attr = 0;
  }
}

/* ---- the pass ---- */

typedef struct {
  ir_module *m;
  ir_func *f;
  ir_op *found[64];
  int n;
} finder;

static void find_loops(ir_op *op, void *arg) {
  finder *fd = arg;
  /* a while loop (attr 1) has no trip count to run ahead of */
  if (op->opc == IR_FOR && !op->attr && fd->n < 64) fd->found[fd->n++] = op;
}

/* The load behind a dot operand: the operand itself, or what a transpose used by the dot
 * alone reads. */
static ir_op *operand_load(const pipe *p, ir_value *v) {
  ir_op *d = v->def;
  if (d && d->opc == IR_TRANS && d->nints == 2 && d->ints[0] == 1 && pass_count_uses(p->f->body, v) == 1)
    d = d->operands[0]->def;
  return d;
}

static bool try_loop(ir_module *m, ir_func *f, ir_op *L) {
  pipe p;
  memset(&p, 0, sizeof p);
  p.m = m;
  p.f = f;
  p.loop = L;
  p.stages = f->num_stages;
  p.i32 = ir_type_scalar(m, TK_I32);
  p.wgmma = true;
  for (ir_op *op = L->regions[0]->first; op; op = op->next) {
    if (op->opc != IR_DOT) continue;
    bool reads = false;
    for (int i = 0; i < 2; i++) {
      ir_op *ld = operand_load(&p, op->operands[i]);
      if (!pipelinable_load(&p, ld)) continue;
      bool seen = false;
      for (int j = 0; j < p.nloads; j++) seen |= p.loads[j] == ld;
      if (seen || p.nloads == MAX_LOADS) continue;
      p.grp[p.nloads] = p.ngroups;
      p.loads[p.nloads++] = ld;
      reads = true;
    }
    if (!reads) continue;
    p.dots[p.ngroups++] = op;
    bool wg = pass_dot_uses_wgmma(m, f, op);
    p.wgmma &= wg;
    p.fence |= wg;
  }
  if (!p.nloads) return false;
  p.tma = p.wgmma && pass_has(m, PASS_TMA);
  for (int i = 0; p.tma && i < p.nloads; i++)
    p.tma = pass_block_of(m, p.loads[i], &p.blk[i]) && tma_ready(&p, i);
  if (!p.tma && !pass_has(m, PASS_CP_ASYNC)) return false;
  rewrite(&p);
  return true;
}

bool pass_swpipe(ir_module *m, ir_func *f) {
  if (f->num_stages < 2 || !pass_has(m, PASS_CP_ASYNC)) return false;
  finder fd = {m, f, {0}, 0};
  ir_walk(f->body, find_loops, &fd);
  bool changed = false;
  for (int i = 0; i < fd.n; i++) changed |= try_loop(m, f, fd.found[i]);
  return changed;
}
