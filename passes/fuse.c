/* Fusion (design §5: fusion, tiling (b) and recomputation). The ops of a kernel that share
 * one wide iteration space (loads, elementwise ops, broadcasts, reductions, scans and
 * stores over the same N lanes of a last axis) are grouped into loop nests over
 * register-sized chunks, so the intermediates of a group live in registers chunk by chunk
 * and never touch memory, and softmax over a 32768-wide row can be written as one tile. A
 * reduction closes a group; its result feeds the next. -fno-fuse replaces this pass with
 * materialize.c (every op's result through global memory): the baseline that shows what
 * fusion buys.
 *
 * The class handled. "Wide" tiles are the tiles whose last axis has the kernel's one wide
 * length N: 1-D tiles [N] and 2-D blocks [R, N] (rows kept whole, the last axis chunked,
 * as layernorm_rows writes them). Any block of the kernel (its body, a loop body, a
 * branch) computes them with arange, const, splat, elementwise ops, loads, expand_dims
 * [N] -> [1, N], broadcasts to [R, N], cumsum along the last axis and reductions and scans
 * along the first (within a column, so within a chunk), and consumes them with stores,
 * sum/max/min and argmax/argmin along the last axis (to a scalar, or a [R] tile of rows).
 * A wide value may be used in a block nested in the one that makes it when it is pure (no
 * load in its tree: licm hoists the arange and splats out of user loops), since it is
 * rebuilt there. A user loop that carries wide tiles lane by lane and only loads is
 * interchanged: the chunk loop runs a copy of it on chunks of what it carries
 * (interchangeable). Anything else touching a wide tile (another shape op, dot, an atomic,
 * print, another loop or a branch that carries one) leaves the kernel unchanged: correct,
 * possibly spilling, and said with a remark at the op that stops it (-Rpass-missed=fuse,
 * pass_remark_missed).
 *
 * Groups. Per block, reductions and wide stores are the roots. Walking the block in
 * order, roots join one group until an op needs a result of the group's reductions (the
 * splat of softmax's max), or a scalar memory op, a print or assert, a loop or branch, or
 * the block's terminator comes; the group's loop goes just before that op. Each loop runs
 * `for c0 in range(0, N, C)`, rebuilds the roots' operand trees on the chunk
 * (arange(s, s+N) becomes c0 + arange(s, s+C); [R, N] becomes [R, C]), stores chunk by
 * chunk, and carries one accumulator tile of chunk shape per reduction, combined
 * lane-wise (add, max, min; an argmax/argmin carries the lanes' best values and their
 * positions) and reduced once after the loop: one cross-warp reduction per loop rather
 * than per chunk. A cumsum carries its running total (a scalar, or one per row): each
 * chunk adds it to its first lane before the chunk's scan, so every prefix is summed in
 * the unchunked order, and passes on the chunk's last lane. Chunk clones that do not
 * depend on c0 (splats, constants, the arange base) are built once before the first loop
 * of their block that needs them.
 *
 * Keep or recompute. A wide load two loops read (softmax's x: max, sum, normalize) is
 * recomputed (reloaded, its producers re-run), kept in shared memory (mark_kept: the
 * loads say so, smemkeep.c stages them on a GPU target), or, for a max and a sum of
 * exponentials of it, not read twice: the online rewrite (pair_online, online_step)
 * fuses the two loops into one carrying each lane's running max and rescaled sum, or the
 * program is split over a cluster of C CTAs (check_split decides it can be; the loops are
 * marked `cluster[C, n]` and the loads as for shared memory; clusterkeep.c gives each CTA
 * its share and combines the reductions across the cluster). Which
 * one is m->fuse_keep's, or the cost model's (fusecost.c) on the target's bandwidths and
 * shared memory; choose_keep says it in a -Rpass remark and the kernel's note
 * (docs/passes.md, "Keep or recompute").
 *
 * Memory order. Re-running a load is exact only if its memory has not changed since the
 * original load: a wide load is recomputed in a loop only when no store or atomic lies
 * between it and that loop, other than the loop's own stores, and only in its own block;
 * otherwise nothing is rewritten. Within one loop, loads and stores interleave chunk by
 * chunk instead of all loads before all stores, which is exact unless a store writes
 * memory that a load of the same loop reads at another lane (buffers overlapping with an
 * offset) — the assumption every hand-written chunked kernel makes. A wide load no root
 * needs would vanish, so such a kernel is left alone (loads may fault and are never
 * removed).
 *
 * Budget. A tile is wide when it gives each of the kernel's T = 32 * warps threads more
 * than SM_MAX_PER_THREAD values; chunks give each thread SM_CHUNK_PER_THREAD values: the
 * chunk of the last axis is C = 16 T / R for the most rows R of any wide tile (4 vectors
 * of 16 bytes per f32 thread), so that a [R, C] chunk holds 16 T values. */
#include "pass_util.h"

#include <math.h>
#include <string.h>

/* softmax at 8192 f32 with 8 warps holds 32 values per thread in 80 registers without
 * spilling, and one pass over memory beats three; at 64 it needs 128, at 128 all 255.
 * (A macro: the remarks print it.) */
#define SM_MAX_PER_THREAD 32
#define SM_MAX_STR "32"
enum { SM_CHUNK_PER_THREAD = 16 };

/* One loop of the rewrite: its roots are the ops of [first, end) of its block marked with
 * its index; the loop goes before ops[at] (the end of the block when at == nops). end is at
 * but for a loop that took over the online sums of the next group (pair_online): theirs. */
typedef struct {
  int first, end, at;
} sm_group;

/* One block of the kernel (its body, a loop body, a branch), read in order. */
typedef struct {
  ir_block *blk;
  ir_op **ops;
  int nops;
  int *group_of; /* op index -> the group that runs it as a root, or -1 */
  bool *writes;  /* op index -> the op stores or does atomics (nested ones included) */
  int *max_of;   /* op index of an online sum -> that of the max it is rescaled by, or -1 */
  const ir_value **spread_of; /* op index of an online sum -> the max spread to the wide tile */
  sm_group *groups;
  int ngroups;
} sm_block;

typedef struct {
  ir_module *m;
  ir_func *f;
  su_arena *a; /* scratch for this run */
  int n;       /* the wide length */
  int chunk;   /* C */
  int *pos;    /* value id -> index in its block's ops of its defining op */
  sm_block *blocks; /* every block, inner ones before the block holding them */
  int nblocks;
  sm_block *b; /* the block being rewritten */
  /* rewrite state, per value id of the original kernel */
  ir_value **inv;  /* chunk clone built in b before its loops (does not depend on c0) */
  ir_value **var;  /* chunk clone in the body of the loop numbered var_of[id] */
  int *var_of;
  ir_value **base; /* an arange's chunk base arange(s, s + C), built in b */
  int *scan_slot;  /* a scan's value id -> its carried total's index in the current loop */
  int cur;         /* the number of the loop being emitted (from 1, unique in the kernel) */
  ir_value **accs; /* the values the current loop yields */
  ir_builder outer, inner;
  bool smem;       /* keep in shared memory: mark the chunk loops' loads (mark_kept) */
  int rows;        /* the most rows of a wide tile (1: all are 1-D) */
  int cluster;     /* the cluster keep's CTAs (0: none): the chunk loops are marked */
  int64_t online_flops; /* what the online rewrite adds (pair_online) */
  int *loaded;     /* value id of a wide load -> how many chunk loops have loaded it */
  const ir_block *src; /* the body of a user loop being copied into the chunk loop, or NULL */
  ir_builder copy;     /* where its copy goes */
} stripper;

static bool is_wide(const stripper *s, const ir_type *t) {
  return t->kind == IR_TILE && (t->rank == 1 || t->rank == 2) && t->shape[t->rank - 1] == s->n;
}

static bool has_wide_result(const stripper *s, const ir_op *op) {
  for (int i = 0; i < op->nresults; i++)
    if (is_wide(s, op->results[i]->type)) return true;
  return false;
}

static bool has_wide_operand(const stripper *s, const ir_op *op) {
  for (int i = 0; i < op->noperands; i++)
    if (is_wide(s, op->operands[i]->type)) return true;
  return false;
}

/* ---- finding N ------------------------------------------------------------------------ */

typedef struct {
  int64_t budget; /* the most values a tile may have without being wide */
  int n;          /* the wide length found so far, 0 if none */
  int rows;       /* the most rows (values / N) of a tile whose last axis is N (pass 2) */
  bool second;    /* pass 2: n is known; check every tile mentioning it */
  const char *why; /* the first reason the kernel is out of the class, NULL if none */
  const ir_op *bad_op; /* the op making that tile (for the remark) */
  const ir_type *bad_type;
} width_scan;

static void scan_bad(width_scan *w, const ir_op *op, const ir_type *t, const char *why) {
  if (!w->why) w->why = why, w->bad_op = op, w->bad_type = t;
}

/* Pass 1 finds N, the last axis of the tiles over the budget, which must be 1-D or 2-D
 * and agree. Pass 2 checks that N is never another axis (a [N, k] tile, a column [N, 1],
 * a 3-D tile ending in N: the chunked shapes would not line up) and finds R. */
static void scan_type(width_scan *w, const ir_op *op, const ir_type *t) {
  if (t->kind != IR_TILE) return;
  int last = t->shape[t->rank - 1];
  if (w->second) {
    bool mentions = false;
    for (int k = 0; k < t->rank; k++) mentions |= t->shape[k] == w->n;
    if (!mentions) return;
    if (t->layout) scan_bad(w, op, t, "has a layout already");
    else if (t->rank > 2 || last != w->n)
      scan_bad(w, op, t, "has the wide length along an axis other than the last of a 1-D or 2-D tile");
    else if (t->rank == 2 && t->shape[0] == w->n)
      scan_bad(w, op, t, "has as many rows as the wide length");
    else if (ir_type_numel(t) / last > w->rows)
      w->rows = (int)(ir_type_numel(t) / last);
    return;
  }
  if (ir_type_numel(t) <= w->budget) return;
  if (t->layout) scan_bad(w, op, t, "has more than " SM_MAX_STR " values per thread and a layout already");
  else if (t->rank > 2) scan_bad(w, op, t, "has more than " SM_MAX_STR " values per thread and more than two axes");
  else if (w->n && w->n != last)
    scan_bad(w, op, t, "has more than " SM_MAX_STR " values per thread and a last axis other than "
                       "the wide length of the kernel's other wide tiles");
  else w->n = last;
}

static void scan_op(ir_op *op, void *ctx) {
  for (int i = 0; i < op->nresults; i++) scan_type(ctx, op, op->results[i]->type);
  for (int r = 0; r < op->nregions; r++)
    for (int i = 0; i < op->regions[r]->nargs; i++) scan_type(ctx, op, op->regions[r]->args[i]->type);
}

/* ---- the supported class ---------------------------------------------------------------- */

/* Whether op combines along the last axis of its operand: the only axis chunked. */
static bool along_last(const ir_op *op) {
  return op->attr2 == op->operands[0]->type->rank - 1;
}

/* An op producing a wide tile that the loops can rebuild chunk by chunk: a cumsum along
 * the wide axis (with a carried total) included, and any reduction, argreduce or scan
 * along the rows of a block (axis 0 of [R, N]), which combines within each column and so
 * within each chunk. */
static bool rebuildable(const stripper *s, const ir_op *op) {
  switch (op->opc) {
  case IR_ARANGE: case IR_CONST: case IR_SPLAT: case IR_LOAD: case IR_BROADCAST: return true;
  case IR_EXPAND_DIMS: return op->attr2 == 0; /* [N] -> [1, N] */
  case IR_REDUCE: case IR_ARGREDUCE:
    return is_wide(s, op->operands[0]->type) && !along_last(op);
  case IR_SCAN:
    if (!is_wide(s, op->operands[0]->type)) return false;
    if (!along_last(op)) return true;
    return op->results[0]->type->dtype == op->operands[0]->type->dtype &&
           op->operands[0]->type->dtype != TK_I1;
  default: return (ir_op_info(op->opc)->traits & IR_ELEM) != 0;
  }
}

/* A scan along the wide axis: it carries a total from chunk to chunk. */
static bool carried_scan(const ir_op *op) {
  return op->opc == IR_SCAN && along_last(op);
}

/* A reduction along the wide axis: a root, whose loop carries an accumulator (one along
 * the rows of a block is a chunk-local op, rebuilt like an elementwise one). */
static bool is_reduction(const ir_op *op) {
  return (op->opc == IR_REDUCE || op->opc == IR_ARGREDUCE) && along_last(op);
}

/* An op consuming wide tiles into no wide result: a store, a reduction along the last
 * axis (to a scalar, or a tile of rows) whose lane-wise combination exists (not over i1,
 * whose sum is not its own type's), or an argmax/argmin along it (a running value and
 * index per lane). */
static bool is_root_kind(const ir_op *op) {
  if (op->opc == IR_STORE) return true;
  if (!is_reduction(op)) return false;
  const ir_type *x = op->operands[0]->type, *r = op->results[0]->type;
  if (x->dtype == TK_I1) return false;
  return op->opc == IR_ARGREDUCE || r->dtype == x->dtype;
}

/* A user `for` (not a while) that carries only wide tiles, whose body has no branch, loop,
 * store, atomic, print or assert, no load of a scalar, and whose wide tiles are
 * chunk-local (no reduction or scan along the wide axis): each lane of what it carries
 * depends on that lane alone, so the chunk loop can run the whole user loop on one chunk
 * at a time (loop interchange), its carried tiles shrunk to chunks. Where the body is
 * otherwise in the class is check_op's to say. */
static bool interchangeable(const stripper *s, const ir_op *op) {
  if (op->opc != IR_FOR || op->attr != 0 || op->nresults == 0) return false;
  for (int i = 0; i < op->nresults; i++)
    if (!is_wide(s, op->results[i]->type)) return false;
  for (const ir_op *b = op->regions[0]->first; b; b = b->next) {
    if (b->nregions) return false;
    if (ir_op_info(b->opc)->traits & IR_MEM)
      if (b->opc != IR_LOAD || !has_wide_result(s, b)) return false;
    if ((b->opc == IR_REDUCE || b->opc == IR_ARGREDUCE || carried_scan(b)) &&
        is_wide(s, b->operands[0]->type) && along_last(b))
      return false;
    if (b->opc != IR_YIELD && b->nresults != 1) return false;
  }
  return true;
}

/* Whether op lies directly in the body of an interchangeable loop. */
static bool in_interchanged(const stripper *s, const ir_op *op) {
  const ir_op *p = op->parent->parent;
  return p && interchangeable(s, p);
}

typedef struct {
  const stripper *s;
  bool ok;
  const ir_op *bad; /* the first op outside the class, and why (for the remark) */
  const char *why;
  signed char *pure; /* value id -> 1: its wide tree has no load, 2: it has one, 0: unknown */
} class_check;

/* Whether the wide value v can be rebuilt anywhere: no load in its tree. */
static bool pure_tree(class_check *c, const ir_value *v) {
  if (!is_wide(c->s, v->type)) return true;
  if (c->pure[v->id]) return c->pure[v->id] == 1;
  bool ok = v->def && v->def->opc != IR_LOAD && v->def->opc != IR_FOR;
  for (int k = 0; ok && k < v->def->noperands; k++) ok = pure_tree(c, v->def->operands[k]);
  c->pure[v->id] = ok ? 1 : 2;
  return ok;
}

static void check_op(ir_op *op, void *ctx) {
  class_check *c = ctx;
  bool res = has_wide_result(c->s, op), opnd = has_wide_operand(c->s, op);
  for (int r = 0; r < op->nregions; r++)
    for (int i = 0; i < op->regions[r]->nargs; i++) res |= is_wide(c->s, op->regions[r]->args[i]->type);
  if (!res && !opnd) return;
  const char *why = NULL;
  bool swapped = interchangeable(c->s, op) || (op->opc == IR_YIELD && in_interchanged(c->s, op));
  if ((op->nregions || op->opc == IR_YIELD) && !swapped)
    why = "a wide tile carried by a loop or an if (a loop only when it carries wide tiles alone, "
          "lane by lane, and only loads them)";
  else if (swapped)
    ;
  else if (res && !(op->nresults == 1 && rebuildable(c->s, op)))
    why = "this op has no chunked form";
  else if (!res && !is_root_kind(op))
    why = "a wide tile used by an op other than a store, a sum/max/min/argmax/argmin along the "
          "last axis, or a cumsum";
  for (int k = 0; !why && k < op->noperands; k++) {
    const ir_value *v = op->operands[k];
    if (is_wide(c->s, v->type) && v->def && v->def->parent != op->parent && !pure_tree(c, v))
      why = "a wide tile loaded outside the loop or if that uses it (it would be reloaded there)";
  }
  if (why && c->ok) c->bad = op, c->why = why;
  if (why) c->ok = false;
}

static bool is_root(const stripper *s, const ir_op *op) {
  return (op->opc == IR_STORE || is_reduction(op)) && has_wide_operand(s, op);
}

static bool is_write_op(const ir_op *op) {
  return op->opc == IR_STORE || op->opc == IR_ATOMIC || op->opc == IR_ATOMIC_CAS;
}

static void find_write(ir_op *op, void *ctx) {
  if (is_write_op(op)) *(bool *)ctx = true;
}

/* ---- groups ----------------------------------------------------------------------------- */

/* True if the open group g of block b must be closed before ops[i]: the op needs one of its
 * reductions, or is an effect (other than a wide load or store) that the group's loads
 * and stores must not move across, or ends the block. */
static bool closes_group(const stripper *s, const sm_block *b, int g, int i) {
  ir_op *op = b->ops[i];
  if ((ir_op_info(op->opc)->traits & IR_TERM) || op->nregions) return true;
  bool wide_mem = (op->opc == IR_LOAD && has_wide_result(s, op)) || is_root(s, op);
  if ((ir_op_info(op->opc)->traits & IR_MEM) && !wide_mem) return true;
  for (int k = 0; k < op->noperands; k++) {
    ir_op *d = op->operands[k]->def;
    if (d && is_reduction(d) && d->parent == b->blk && b->group_of[s->pos[op->operands[k]->id]] == g)
      return true;
  }
  return false;
}

static void form_groups(stripper *s, sm_block *b) {
  b->groups = SU_NEW_ARRAY(s->a, sm_group, b->nops);
  int open = -1;
  for (int i = 0; i < b->nops; i++) {
    if (open >= 0 && closes_group(s, b, open, i)) {
      b->groups[open].at = b->groups[open].end = i;
      open = -1;
    }
    if (!is_root(s, b->ops[i])) continue;
    if (open < 0) {
      open = b->ngroups++;
      b->groups[open].first = i;
    }
    b->group_of[i] = open;
  }
  if (open >= 0) b->groups[open].at = b->groups[open].end = b->nops;
}

/* Reads block blk's ops into b and forms its groups. */
static void read_block(stripper *s, sm_block *b, ir_block *blk) {
  b->blk = blk;
  for (ir_op *op = blk->first; op; op = op->next) b->nops++;
  b->ops = SU_NEW_ARRAY(s->a, ir_op *, b->nops);
  b->group_of = SU_NEW_ARRAY(s->a, int, b->nops);
  b->writes = SU_NEW_ARRAY(s->a, bool, b->nops);
  b->max_of = SU_NEW_ARRAY(s->a, int, b->nops);
  b->spread_of = SU_NEW_ARRAY(s->a, const ir_value *, b->nops);
  int i = 0;
  for (ir_op *op = blk->first; op; op = op->next, i++) {
    b->ops[i] = op;
    b->group_of[i] = b->max_of[i] = -1;
    for (int k = 0; k < op->nresults; k++) s->pos[op->results[k]->id] = i;
    b->writes[i] = is_write_op(op);
    for (int r = 0; r < op->nregions; r++) ir_walk(op->regions[r], find_write, &b->writes[i]);
  }
  form_groups(s, b);
}

static void count_blocks(ir_op *op, void *ctx) { *(int *)ctx += op->nregions; }

/* Reads blk and the blocks nested in it, inner ones first, into s->blocks. */
static void read_blocks(stripper *s, ir_block *blk) {
  for (ir_op *op = blk->first; op; op = op->next)
    for (int r = 0; r < op->nregions; r++) read_blocks(s, op->regions[r]);
  read_block(s, &s->blocks[s->nblocks++], blk);
}

/* ---- memory order ----------------------------------------------------------------------- */

typedef struct {
  const stripper *s;
  const sm_block *b;
  int g;
  int *seen;       /* value id -> the tag of the last (block, group) that visited it */
  int tag;
  bool *loaded;    /* value id -> a wide load some group runs */
  bool ok;
  const ir_op *bad_load, *bad_write; /* the first reload a write forbids (for the remark) */
} mem_check;

/* Visits the wide operand tree of v for group c->g; each load in it (all in the group's
 * block: check_op keeps loads out of nested uses) must see no store or atomic between
 * its place and the group's loop, other than the group's own. */
static void check_tree(mem_check *c, const ir_value *v) {
  const stripper *s = c->s;
  if (!is_wide(s, v->type) || !v->def || c->seen[v->id] == c->tag) return; /* !def: carried */
  c->seen[v->id] = c->tag;
  ir_op *op = v->def;
  if (op->opc == IR_FOR) {
    /* a user loop re-run in the chunk loop: its loads run there; its body stores nothing */
    const ir_op *y = op->regions[0]->last;
    for (int k = 0; k < y->noperands; k++) check_tree(c, y->operands[k]);
  }
  if (op->opc == IR_LOAD && op->parent != c->b->blk) {
    c->loaded[v->id] = true; /* in an interchanged loop's body: checked at the loop */
  } else if (op->opc == IR_LOAD || op->opc == IR_FOR) {
    c->loaded[v->id] = true;
    for (int q = s->pos[v->id] + 1; q < c->b->groups[c->g].at; q++)
      if (c->b->writes[q] && c->b->group_of[q] != c->g) {
        if (c->ok) c->bad_load = op, c->bad_write = c->b->ops[q];
        c->ok = false;
      }
  }
  for (int k = 0; k < op->noperands; k++) check_tree(c, op->operands[k]);
}

static bool memory_order_ok(const stripper *s, int nvalues) {
  mem_check c = {s, NULL, 0, SU_NEW_ARRAY(s->a, int, nvalues), 0, SU_NEW_ARRAY(s->a, bool, nvalues),
                 true, NULL, NULL};
  for (int bi = 0; bi < s->nblocks; bi++) {
    c.b = &s->blocks[bi];
    for (c.g = 0; c.g < c.b->ngroups; c.g++) {
      c.tag++;
      for (int i = c.b->groups[c.g].first; i < c.b->groups[c.g].at; i++)
        if (c.b->group_of[i] == c.g)
          for (int k = 0; k < c.b->ops[i]->noperands; k++) check_tree(&c, c.b->ops[i]->operands[k]);
    }
  }
  for (int bi = 0; bi < s->nblocks; bi++)
    for (int i = 0; i < s->blocks[bi].nops; i++) {
      ir_op *op = s->blocks[bi].ops[i];
      if (op->opc == IR_LOAD && has_wide_result(s, op) && !c.loaded[op->results[0]->id]) {
        pass_remark_missed(s->m, "fuse", op->loc, "kernel '%s' left unfused: this wide load feeds "
                           "no store or reduction, and a chunked kernel would drop it", s->f->name);
        return false;
      }
    }
  if (!c.ok)
    pass_remark_missed(s->m, "fuse", c.bad_load->loc, "kernel '%s' left unfused: this load would "
                       "be re-run after the store or atomic at line %u, which may have changed "
                       "its memory", s->f->name, c.bad_write->loc.line);
  return c.ok;
}

/* ---- the online rewrite of max/sum pairs ------------------------------------------------- */

/* Whether the wide tile w spreads m along the last axis: splat(m) of a scalar, or
 * broadcast(expand_dims(m, 1)) of a tile of rows. */
static bool spreads(const ir_value *w, const ir_value *m) {
  const ir_op *d = w->def;
  if (!d) return false;
  if (d->opc == IR_SPLAT) return d->operands[0] == m;
  const ir_op *e = d->opc == IR_BROADCAST ? d->operands[0]->def : NULL;
  return e && e->opc == IR_EXPAND_DIMS && e->attr2 == 1 && e->operands[0] == m;
}

/* Whether v is computed before ops[at] of block b by no root of group g: defined in an
 * enclosing block, a block argument, or earlier in b (the roots of g are before `at` but
 * are not final inside g's loop). */
static bool ready_before(const stripper *s, const sm_block *b, int g, const ir_value *v, int at) {
  if (!v->def || v->def->parent != b->blk) return true;
  int i = s->pos[v->id];
  return i < at && b->group_of[i] != g;
}

/* A lane-uniform factor: a constant, or a splat of a scalar ready before ops[at]. */
static bool uniform_factor(const stripper *s, const sm_block *b, int g, const ir_value *u, int at) {
  const ir_op *d = u->def;
  if (!d) return false;
  return d->opc == IR_CONST || (d->opc == IR_SPLAT && ready_before(s, b, g, d->operands[0], at));
}

/* The online form of sum root `sum` against the max roots of group g (whose loop goes
 * before ops[at]): sum(E) with E = exp(D) or exp2(D), D = x - M or (x - M) * u (u on
 * either side, lane-uniform), M the max of x spread along the last axis. Each term is
 * then exp(k (x - m)) for one k, so changing m to m' multiplies it by exp(k (m - m')):
 * D with x := m and M := m', which is what the rewrite computes. Returns the op index of
 * the max (its spread in *mw), or -1. */
static int online_max(const stripper *s, const sm_block *b, int g, const ir_op *sum, int at,
                      const ir_value **mw) {
  if (sum->opc != IR_REDUCE || sum->attr != IR_RED_SUM || !is_reduction(sum)) return -1;
  const ir_op *e = sum->operands[0]->def;
  if (!e || (e->opc != IR_EXP && e->opc != IR_EXP2) || !ir_dtype_is_float(e->results[0]->type->dtype))
    return -1;
  const ir_op *d = e->operands[0]->def, *sub = d;
  if (d && d->opc == IR_MUL) {
    sub = NULL;
    for (int k = 0; k < 2 && !sub; k++)
      if (d->operands[k]->def && d->operands[k]->def->opc == IR_SUB &&
          uniform_factor(s, b, g, d->operands[1 - k], at))
        sub = d->operands[k]->def;
  }
  if (!sub || sub->opc != IR_SUB) return -1;
  const ir_value *x = sub->operands[0], *w = sub->operands[1];
  const ir_op *wd = w->def;
  if (!wd || (wd->opc != IR_SPLAT && wd->opc != IR_BROADCAST)) return -1;
  const ir_op *ed = wd->opc == IR_BROADCAST ? wd->operands[0]->def : NULL;
  if (wd->opc == IR_BROADCAST && (!ed || ed->opc != IR_EXPAND_DIMS)) return -1;
  const ir_value *m = ed ? ed->operands[0] : wd->operands[0];
  if (!spreads(w, m) || !m->def || m->def->parent != b->blk) return -1;
  int j = s->pos[m->id];
  const ir_op *mx = b->ops[j];
  if (b->group_of[j] != g || mx->opc != IR_REDUCE || mx->attr != IR_RED_MAX || mx->operands[0] != x)
    return -1;
  *mw = w;
  return j;
}

/* Fuses, in block b, each group whose roots are all online sums (online_max) into the
 * group before it, the one computing their max: one loop carrying, per lane, the running
 * max and the running sum rescaled to it. The sums' loads move up to that loop; no store
 * or atomic may lie between its place and theirs. Returns how many loops it saved. */
static int pair_online(stripper *s, sm_block *b) {
  int saved = 0;
  for (int g = 0; g + 1 < b->ngroups;) {
    sm_group *a = &b->groups[g], *n = &b->groups[g + 1];
    bool ok = true;
    for (int q = a->at; ok && q < n->at; q++) ok = !b->writes[q];
    const ir_value *mw;
    for (int i = n->first; ok && i < n->end; i++)
      if (b->group_of[i] == g + 1) ok = online_max(s, b, g, b->ops[i], a->at, &mw) >= 0;
    if (!ok) {
      g++;
      continue;
    }
    for (int i = n->first; i < n->end; i++)
      if (b->group_of[i] == g + 1) {
        b->max_of[i] = online_max(s, b, g, b->ops[i], a->at, &mw);
        s->online_flops += 7 * ir_type_numel(mw->type); /* a second exp, the rescale, selects */
        b->spread_of[i] = mw;
        b->group_of[i] = g;
      }
    a->end = n->end;
    for (int k = g + 1; k + 1 < b->ngroups; k++) b->groups[k] = b->groups[k + 1];
    b->ngroups--;
    for (int i = 0; i < b->nops; i++)
      if (b->group_of[i] > g) b->group_of[i]--;
    saved++;
  }
  return saved;
}


/* ---- keep or recompute ------------------------------------------------------------------- */

typedef struct {
  const stripper *s;
  int *seen, tag;
  int *groups; /* value id of a wide load -> how many chunk loops read it */
} read_count;

static void count_tree(read_count *r, const ir_value *v) {
  if (!is_wide(r->s, v->type) || !v->def || r->seen[v->id] == r->tag) return;
  r->seen[v->id] = r->tag;
  if (v->def->opc == IR_LOAD) r->groups[v->id]++;
  if (v->def->opc == IR_FOR) return; /* an interchanged loop: re-run whole, not kept */
  for (int k = 0; k < v->def->noperands; k++) count_tree(r, v->def->operands[k]);
}

/* The wide loads more than one chunk loop reads (what a keep would keep): their bytes and
 * a chunk's per program, and the most loops reading one. */
static int count_kept(const stripper *s, int nvalues, int64_t *bytes, int64_t *values, int64_t *other) {
  read_count r = {s, SU_NEW_ARRAY(s->a, int, nvalues), 0, SU_NEW_ARRAY(s->a, int, nvalues)};
  for (int bi = 0; bi < s->nblocks; bi++) {
    const sm_block *b = &s->blocks[bi];
    for (int g = 0; g < b->ngroups; g++) {
      r.tag++;
      for (int i = b->groups[g].first; i < b->groups[g].end; i++)
        if (b->group_of[i] == g)
          for (int k = 0; k < b->ops[i]->noperands; k++) count_tree(&r, b->ops[i]->operands[k]);
    }
  }
  int most = 0;
  *bytes = *values = 0;
  if (other) *other = 0;
  for (int bi = 0; bi < s->nblocks; bi++)
    for (int i = 0; i < s->blocks[bi].nops; i++) {
      const ir_op *op = s->blocks[bi].ops[i];
      if (op->opc == IR_STORE && other && is_wide(s, op->operands[1]->type))
        *other += ir_type_numel(op->operands[1]->type) * ir_dtype_bytes(op->operands[1]->type->dtype);
      if (op->opc != IR_LOAD || !is_wide(s, op->results[0]->type)) continue;
      int n = r.groups[op->results[0]->id];
      if (n > most) most = n;
      const ir_type *t = op->results[0]->type;
      int64_t eb = ir_dtype_bytes(t->dtype);
      if (n < 2) {
        if (other) *other += ir_type_numel(t) * eb; /* read once whatever is kept */
        continue;
      }
      *bytes += ir_type_numel(t) * eb;
      *values += ir_type_numel(t);
    }
  return most;
}

/* The exchange scratch one use in the chunk loops takes (codegen/smem.c: each use takes
 * the larger of two halves): a reduction along the wide axis folds one partial per warp
 * and row (an argreduce adds its index), and a scan along the wide axis or a combination
 * along the rows of a block goes through shared memory a chunk at a time. Elementwise
 * ops, broadcasts and the kept loads themselves exchange nothing. Sized from the chunked
 * kernel so that the keep's occupancy is what ptxas will report (measured: softmax f32 at
 * 32768 kept in shared memory, 4 / 8 / 16 warps: the row + 1056 / 1088 / 1152 bytes). */
static int64_t scratch_of(const stripper *s, const ir_op *op) {
  if (!op->noperands || !is_wide(s, op->operands[0]->type)) return 0;
  const ir_type *t = op->operands[0]->type;
  int64_t eb = ir_dtype_bytes(t->dtype) < 4 ? 4 : ir_dtype_bytes(t->dtype);
  int64_t chunk = ir_type_numel(t) / s->n * s->chunk;
  switch (op->opc) {
  case IR_REDUCE: case IR_ARGREDUCE:
    if (!along_last(op)) return chunk * (eb + 4);
    return (int64_t)s->f->num_warps * s->rows * (eb + (op->opc == IR_ARGREDUCE ? 4 : 0));
  case IR_SCAN: return chunk * eb;
  default: return 0;
  }
}

typedef struct {
  const stripper *s;
  int64_t most;  /* the largest scratch one use takes */
  int reductions; /* reductions along the wide axis (each a cluster exchange when split) */
} scratch_walk;

static void max_scratch(ir_op *op, void *ctx) {
  scratch_walk *w = ctx;
  int64_t b = scratch_of(w->s, op);
  if (b > w->most) w->most = b;
  w->reductions += is_reduction(op) && is_wide(w->s, op->operands[0]->type);
}

/* The largest exchange scratch the kernel's chunk loops take, in bytes (16-aligned), and
 * how many reductions along the wide axis they hold. */
static int64_t chunk_scratch(const stripper *s, int *reductions) {
  scratch_walk w = {s, 0, 0};
  ir_walk(s->f->body, max_scratch, &w);
  *reductions = w.reductions;
  return (w.most + 15) / 16 * 16;
}

/* The grouping of every block (pair_online changes it), to try the rewrite and undo it. */
typedef struct {
  sm_group *groups;
  int ngroups;
  int *group_of, *max_of;
  const ir_value **spread_of;
} block_state;

static block_state *save_blocks(stripper *s) {
  block_state *st = SU_NEW_ARRAY(s->a, block_state, s->nblocks);
  for (int i = 0; i < s->nblocks; i++) {
    sm_block *b = &s->blocks[i];
    st[i].ngroups = b->ngroups;
    st[i].groups = su_memdup(s->a, b->groups, sizeof *b->groups * (size_t)(b->nops ? b->nops : 1));
    st[i].group_of = su_memdup(s->a, b->group_of, sizeof(int) * (size_t)(b->nops ? b->nops : 1));
    st[i].max_of = su_memdup(s->a, b->max_of, sizeof(int) * (size_t)(b->nops ? b->nops : 1));
    st[i].spread_of = su_memdup(s->a, b->spread_of, sizeof(ir_value *) * (size_t)(b->nops ? b->nops : 1));
  }
  return st;
}

static void restore_blocks(stripper *s, const block_state *st) {
  for (int i = 0; i < s->nblocks; i++) {
    sm_block *b = &s->blocks[i];
    size_t n = (size_t)(b->nops ? b->nops : 1);
    b->ngroups = st[i].ngroups;
    memcpy(b->groups, st[i].groups, sizeof *b->groups * n);
    memcpy(b->group_of, st[i].group_of, sizeof(int) * n);
    memcpy(b->max_of, st[i].max_of, sizeof(int) * n);
    memcpy(b->spread_of, st[i].spread_of, sizeof(ir_value *) * n);
  }
  s->online_flops = 0;
}

static void print_kb(su_buf *b, double bytes) {
  if (bytes >= 1024 * 1024) su_buf_printf(b, "%.1f MB", bytes / (1024 * 1024));
  else su_buf_printf(b, "%.0f KB", bytes / 1024);
}

/* The choice and every option's estimate, as the remark and the IR's note say it. */
static const char *describe(stripper *s, const pass_keep_cost *c, pass_keep chosen, const char *why) {
  su_buf b = {0};
  su_buf_printf(&b, "fuse: keep = %s (%s): ", pass_keep_name(chosen), why);
  print_kb(&b, (double)c->kept_bytes);
  su_buf_printf(&b, " per program read by %d loops; %s estimates per program (its machine time at "
                "full occupancy):", c->reads_recompute, c->arch_used);
  for (int k = 0; k < PASS_NKEEP; k++) {
    su_buf_printf(&b, "%s %s ", k ? ";" : "", pass_keep_name((pass_keep)k));
    if (k == PASS_KEEP_REGISTERS && !c->avail[k]) {
      su_buf_printf(&b, "does not fit (%lld values per thread, budget %lld)", (long long)c->values_per_thread,
                    (long long)c->register_budget);
      continue;
    }
    if (k == PASS_KEEP_ONLINE && !c->avail[k]) {
      su_buf_puts(&b, "no max/sum pair");
      continue;
    }
    if (k == PASS_KEEP_SMEM && !c->avail[k]) {
      print_kb(&b, c->smem_bytes);
      su_buf_puts(&b, " does not fit a block's shared memory");
      continue;
    }
    if (k == PASS_KEEP_CLUSTER && !c->avail[k]) {
      su_buf_puts(&b, c->cluster_sizes ? "a share does not fit a block's shared memory, or no clusters here"
                                       : "the kernel cannot be split over a cluster");
      continue;
    }
    print_kb(&b, c->hbm[k]);
    su_buf_puts(&b, " HBM + ");
    print_kb(&b, c->l2[k]);
    su_buf_printf(&b, " L2, %.3g ns", c->seconds[k] * 1e9);
    if (k == PASS_KEEP_SMEM) su_buf_printf(&b, " (%d programs/SM)", c->resident_smem);
    if (k == PASS_KEEP_CLUSTER) {
      su_buf_printf(&b, " (%d CTAs of ", c->cluster_ctas);
      print_kb(&b, c->cluster_bytes);
      su_buf_printf(&b, ", %d CTAs/SM)", c->resident_cluster);
    }
  }
  const char *r = su_strdup(s->m->arena, su_buf_str(&b));
  su_buf_free(&b);
  return r;
}

typedef struct {
  const stripper *s;
  bool ok;
} split_check;

static void check_split(ir_op *op, void *ctx) {
  split_check *c = ctx;
  if (op->opc == IR_ATOMIC || op->opc == IR_ATOMIC_CAS || op->opc == IR_HISTOGRAM || op->opc == IR_PRINT ||
      op->opc == IR_ASSERT || op->opc == IR_DOT)
    c->ok = false; /* every CTA of the cluster would run it */
  if ((op->opc == IR_ARGREDUCE || carried_scan(op)) && is_wide(c->s, op->operands[0]->type))
    c->ok = false; /* a running index or prefix would need more than a combined scalar */
  if (op->nregions && op->parent == c->s->f->body && !interchangeable(c->s, op)) c->ok = false;
}

/* The cluster sizes n (bit n) over which the kernel can be split, each CTA running its
 * N / n share of every chunk loop (clusterkeep.c): 1-D wide tiles, every group in the
 * kernel's body, reductions sum/max/min only (a scalar each, combined across the
 * cluster), nothing that each CTA would repeat with an effect (atomics, prints), no
 * user loop or branch in the body (their stores would run n times), and N a multiple
 * of n chunks. What else each CTA repeats (scalar loads, the scalar stores of values
 * every CTA computes alike) is harmless. */
static int cluster_sizes(const stripper *s) {
  if (s->rows != 1) return 0;
  for (int i = 0; i + 1 < s->nblocks; i++)
    if (s->blocks[i].ngroups) return 0;
  split_check c = {s, true};
  ir_walk(s->f->body, check_split, &c);
  if (!c.ok) return 0;
  int bits = 0;
  for (int n = 2; n <= IR_CLUSTER_MAX; n *= 2)
    if (s->n % (n * s->chunk) == 0) bits |= n;
  return bits;
}

/* Decides how the values two chunk loops need are kept (m->fuse_keep, or the cost model),
 * and sets the kernel up for it: pairs for the online rewrite, loads marked for the
 * shared-memory keep, or nothing (recompute). Says so in a remark and the kernel's note. */
static void choose_keep(stripper *s, int nvalues) {
  pass_keep_cost c = {.arch = s->m->arch, .threads = 32 * s->f->num_warps};
  int64_t values, dummy1, dummy2;
  c.reads_recompute = count_kept(s, nvalues, &c.kept_bytes, &values, &c.other_bytes);
  c.scratch_bytes = chunk_scratch(s, &c.reductions);
  if (c.kept_bytes == 0) return; /* nothing read twice: nothing to keep */
  block_state *st = save_blocks(s);
  int saved = 0;
  for (int i = 0; i < s->nblocks; i++) saved += pair_online(s, &s->blocks[i]);
  c.reads_online = saved ? count_kept(s, nvalues, &dummy1, &dummy2, NULL) : 0;
  if (saved && c.reads_online == 0) c.reads_online = 1;
  c.online_flops = s->online_flops;
  c.values_per_thread = values / c.threads;
  c.register_budget = SM_MAX_PER_THREAD;
  c.cluster_sizes = cluster_sizes(s);
  pass_keep_choose(&c);
  pass_keep k = c.best;
  const char *why = "the cost model's choice";
  switch (s->m->fuse_keep) {
  case IR_KEEP_RECOMPUTE: k = PASS_KEEP_RECOMPUTE, why = "-ffuse-keep"; break;
  case IR_KEEP_ONLINE: k = saved ? PASS_KEEP_ONLINE : PASS_KEEP_RECOMPUTE, why = saved ? "-ffuse-keep" : "-ffuse-keep=online, but no max/sum pair"; break;
  case IR_KEEP_SMEM: k = PASS_KEEP_SMEM, why = "-ffuse-keep"; break;
  case IR_KEEP_CLUSTER:
    k = c.avail[PASS_KEEP_CLUSTER] ? PASS_KEEP_CLUSTER : PASS_KEEP_RECOMPUTE;
    why = c.avail[PASS_KEEP_CLUSTER] ? "-ffuse-keep" : "-ffuse-keep=cluster, but the kernel cannot be split";
    break;
  default: break;
  }
  if (k != PASS_KEEP_ONLINE) restore_blocks(s, st);
  s->smem = k == PASS_KEEP_SMEM || k == PASS_KEEP_CLUSTER;
  s->cluster = k == PASS_KEEP_CLUSTER ? c.cluster_ctas : 0;
  const char *note = describe(s, &c, k, why);
  s->f->note = note;
  pass_remark(s->m, "fuse", s->f->loc, "kernel '%s': %s", s->f->name, note + 6);
}

/* ---- rewriting -------------------------------------------------------------------------- */

/* The chunk of a wide type: its last axis N cut to C. */
static const ir_type *chunk_type(stripper *s, const ir_type *wide) {
  int shape[2] = {wide->shape[0], s->chunk};
  shape[wide->rank - 1] = s->chunk;
  return ir_type_tile(s->m, wide->elem, wide->rank, shape);
}

/* What reducing a tile of type t along its last axis into dtype elem gives: a scalar for
 * a 1-D tile, a tile of its rows for a 2-D one. */
static const ir_type *row_type(stripper *s, const ir_type *t, const ir_type *elem) {
  return t->rank == 1 ? elem : ir_type_tile(s->m, elem, 1, &t->shape[0]);
}

/* v (a scalar, or a tile of rows) stretched along the last axis to the tile type t. */
static ir_value *spread(stripper *s, ir_builder *b, ir_value *v, const ir_type *t) {
  return pass_spread(s->m, b, v, t);
}

/* The positions 0 .. C-1 of the lanes of a chunk of shape t, as i32 (each row's). */
static ir_value *lane_index(stripper *s, ir_builder *b, const ir_type *t) {
  const ir_type *i32 = ir_type_scalar(s->m, TK_I32);
  const ir_type *lt = ir_type_tile(s->m, i32, 1, &s->chunk);
  ir_op *ar = ir_build(b, IR_ARANGE, 0, NULL, 1, &lt);
  ar->attr = 0;
  ar->attr2 = s->chunk;
  ir_value *v = ar->results[0];
  if (t->rank == 1) return v;
  int one[2] = {1, s->chunk};
  const ir_type *rt = ir_type_tile(s->m, i32, 2, one);
  ir_op *e = ir_build(b, IR_EXPAND_DIMS, 1, &v, 1, &rt);
  e->attr2 = 0;
  return ir_build1(b, IR_BROADCAST, ir_type_like(s->m, t, i32), 1, &e->results[0]);
}

static bool in_loop(const stripper *s, const ir_value *v) {
  const ir_block *b = v->def ? v->def->parent : v->owner;
  return b == s->inner.block;
}

/* A copy of op (attributes, constant, name hint) with new operands and result type,
 * placed at b. */
static ir_value *copy_op(ir_builder *b, const ir_op *op, ir_value **opnds, const ir_type *t) {
  ir_builder at = *b;
  at.loc = op->loc;
  ir_op *c = ir_build(&at, op->opc, op->noperands, opnds, 1, &t);
  ir_op_copy_attrs(c, op);
  c->results[0]->name = op->results[0]->name;
  return c->results[0];
}

/* The value a reduction of kind k starts from: sum 0 (-0.0 for floats, which adding
 * leaves every value as it is), max the lowest value, min the highest (infinities for
 * floats), of type t. */
static ir_value *identity(ir_builder *b, ir_reduce_kind k, const ir_type *t) {
  tk_dtype d = t->dtype;
  if (ir_dtype_is_float(d))
    return ir_const_float(b, t, k == IR_RED_SUM ? -0.0 : k == IR_RED_MAX ? -INFINITY : INFINITY);
  if (k == IR_RED_SUM) return ir_const_int(b, t, 0);
  int bits = ir_dtype_bits(d);
  int64_t lo = 0, hi = pass_int_wrap(d, -1); /* unsigned */
  if (ir_dtype_is_signed(d)) {
    hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    lo = -hi - 1;
  }
  return ir_const_int(b, t, k == IR_RED_MAX ? lo : hi);
}

static ir_opcode combine_op(ir_reduce_kind k) {
  return k == IR_RED_SUM ? IR_ADD : k == IR_RED_MAX ? IR_MAX : IR_MIN;
}

/* The chunk of a cumsum (or another scan) op over chunk x, in the loop that carries its
 * total: the carried total joins the first lane, the chunk is scanned (every prefix in the
 * order of the unchunked scan, so the results are its bits), and the last lane is the next
 * chunk's total. */
static ir_value *chunk_scan(stripper *s, const ir_op *op, ir_value *x) {
  ir_reduce_kind k = (ir_reduce_kind)op->attr;
  const ir_type *t = x->type, *it = ir_type_like(s->m, t, ir_type_scalar(s->m, TK_I32));
  int slot = s->scan_slot[op->results[0]->id];
  ir_value *carry = s->inner.block->args[1 + slot];
  ir_value *lanes = lane_index(s, &s->outer, t);
  ir_value *first = ir_cmp_build(&s->outer, IR_CMP_EQ, lanes, ir_const_int(&s->outer, it, 0));
  ir_value *last = ir_cmp_build(&s->outer, IR_CMP_EQ, lanes, ir_const_int(&s->outer, it, s->chunk - 1));
  ir_value *fill = identity(&s->outer, k, t);
  ir_builder at = s->inner;
  at.loc = op->loc;
  ir_value *joined = ir_binary(&at, combine_op(k), x, spread(s, &at, carry, t));
  ir_value *sel[3] = {first, joined, x};
  ir_value *in = ir_build1(&at, IR_SELECT, t, 3, sel);
  ir_value *y = copy_op(&at, op, &in, t);
  ir_value *tail[3] = {last, y, fill};
  ir_value *lastv = ir_build1(&at, IR_SELECT, t, 3, tail);
  ir_op *r = ir_build(&at, IR_REDUCE, 1, &lastv, 1, &carry->type);
  r->attr = k;
  r->attr2 = t->rank - 1;
  s->accs[slot] = r->results[0];
  return y;
}

static ir_value *chunk_of(stripper *s, ir_value *v);

/* The shared-memory keep: the chunk loops' clones of wide load `id` say so (`keep =
 * [id, 0]` on the first loop's, which stages each chunk; [id, 1] on the later ones, which
 * read it back); smemkeep.c makes it so on a GPU target, the interpreter loads as usual. */
static void mark_kept(stripper *s, ir_op *load, int id) {
  int *k = SU_NEW_ARRAY(s->m->arena, int, 2);
  k[0] = id;
  k[1] = s->loaded[id]++ ? 1 : 0;
  load->ints = k;
  load->nints = 2;
}

/* The chunk loop's copy of an interchanged user loop (interchangeable): the same bounds,
 * its carried tiles' chunks as the inits, its body copied with chunk types (s->src and
 * s->copy route the body's values, scalars included, into the copy). Returns the copy of
 * result v. */
static ir_value *chunk_user_loop(stripper *s, ir_value *v) {
  ir_op *op = v->def;
  int nc = op->nresults;
  ir_value **inits = SU_NEW_ARRAY(s->a, ir_value *, nc);
  for (int k = 0; k < nc; k++) inits[k] = chunk_of(s, op->operands[3 + k]);
  ir_builder at = s->inner;
  at.loc = op->loc;
  ir_op *loop = ir_build_for(&at, op->operands[0], op->operands[1], op->operands[2], nc, inits);
  ir_op_copy_attrs(loop, op);
  const ir_block *src = op->regions[0];
  ir_block *dst = loop->regions[0];
  for (int i = 0; i < src->nargs; i++) {
    s->var[src->args[i]->id] = dst->args[i];
    s->var_of[src->args[i]->id] = s->cur;
  }
  const ir_block *saved_src = s->src;
  ir_builder saved_copy = s->copy, saved_inner = s->inner;
  s->src = src;
  s->copy = (ir_builder){s->m, dst, NULL, op->loc};
  s->inner.before = loop; /* what the copy needs from the chunk loop's body goes before it */
  const ir_op *y = src->last;
  ir_value **ys = SU_NEW_ARRAY(s->a, ir_value *, y->noperands);
  for (int k = 0; k < y->noperands; k++) ys[k] = chunk_of(s, y->operands[k]);
  s->copy.loc = y->loc;
  ir_build(&s->copy, IR_YIELD, y->noperands, ys, 0, NULL);
  s->src = saved_src;
  s->copy = saved_copy;
  s->inner = saved_inner;
  for (int k = 0; k < nc; k++) {
    s->var[op->results[k]->id] = loop->results[k];
    s->var_of[op->results[k]->id] = s->cur;
  }
  return s->var[v->id];
}

/* The chunk of wide value v at the current loop's c0 (v itself when not wide), built on
 * first use: before the loops when it does not depend on c0, else in the loop body; in
 * the copy of an interchanged user loop's body for the values of that body. */
static ir_value *chunk_of(stripper *s, ir_value *v) {
  int id = v->id;
  bool local = s->src && (v->def ? v->def->parent : v->owner) == s->src;
  if (!local && !is_wide(s, v->type)) return v;
  if (s->var_of[id] == s->cur) return s->var[id];
  if (!local && s->inv[id]) return s->inv[id];
  ir_op *op = v->def;
  SU_ASSERT(op); /* the carried values of a copied body are mapped before */
  if (op->opc == IR_FOR) return chunk_user_loop(s, v);
  const ir_type *t = is_wide(s, v->type) ? chunk_type(s, v->type) : v->type;
  if (op->opc == IR_ARANGE && is_wide(s, v->type)) {
    if (!s->base[id]) {
      s->base[id] = copy_op(&s->outer, op, NULL, t);
      s->base[id]->def->attr2 = op->attr + s->chunk;
    }
    ir_value *c0 = s->inner.block->args[0];
    ir_value *lanes = ir_build1(&s->inner, IR_SPLAT, ir_type_like(s->m, t, c0->type), 1, &c0);
    s->var_of[id] = s->cur;
    return s->var[id] = ir_binary(&s->inner, IR_ADD, lanes, s->base[id]);
  }
  ir_value **opnds = SU_NEW_ARRAY(s->a, ir_value *, op->noperands);
  bool variant = op->opc == IR_LOAD || carried_scan(op); /* memory, a carried total */
  for (int k = 0; k < op->noperands; k++) {
    opnds[k] = chunk_of(s, op->operands[k]);
    variant |= in_loop(s, opnds[k]);
  }
  if (local) {
    s->var_of[id] = s->cur;
    return s->var[id] = copy_op(&s->copy, op, opnds, t);
  }
  if (!variant) return s->inv[id] = copy_op(&s->outer, op, opnds, t);
  s->var_of[id] = s->cur;
  s->var[id] = carried_scan(op) ? chunk_scan(s, op, opnds[0]) : copy_op(&s->inner, op, opnds, t);
  if (op->opc == IR_LOAD && s->smem) mark_kept(s, s->var[id]->def, id);
  return s->var[id];
}

/* Whether lane value v beats the running best b of an argmax (max) or argmin: the first
 * NaN wins over anything but an earlier NaN (as the interpreter's argreduce), else strictly
 * greater (smaller), so that each lane keeps its first best. An i1 tile. */
static ir_value *beats(ir_builder *b, bool max, ir_value *v, ir_value *best) {
  ir_value *better = ir_cmp_build(b, max ? IR_CMP_GT : IR_CMP_LT, v, best);
  if (!ir_dtype_is_float(v->type->dtype)) return better;
  ir_value *vnan = ir_cmp_build(b, IR_CMP_NE, v, v), *bnum = ir_cmp_build(b, IR_CMP_EQ, best, best);
  return ir_binary(b, IR_OR, better, ir_binary(b, IR_AND, vnan, bnum));
}

/* x reduced with kind k along its last axis into dtype elem. */
static ir_value *reduce_last(stripper *s, ir_builder *b, ir_reduce_kind k, ir_value *x,
                             const ir_type *elem) {
  const ir_type *rt = row_type(s, x->type, elem);
  ir_op *r = ir_build(b, IR_REDUCE, 1, &x, 1, &rt);
  r->attr = k;
  r->attr2 = x->type->rank - 1;
  return r->results[0];
}

/* The index the lanes' running bests (value tile bv, index tile bi) of an argmax or
 * argmin give, per row: a NaN lane's when there is one, else the best value's, the
 * smallest index among equal ones: the first in the row, as an unchunked argreduce. */
static ir_value *combine_arg(stripper *s, ir_builder *b, bool max, ir_value *bv, ir_value *bi) {
  const ir_type *i32 = ir_type_scalar(s->m, TK_I32);
  const ir_type *lanes = ir_type_like(s->m, bv->type, i32);
  ir_value *m = reduce_last(s, b, max ? IR_RED_MAX : IR_RED_MIN, bv, ir_type_elem(bv->type));
  ir_value *pick = ir_cmp_build(b, IR_CMP_EQ, bv, spread(s, b, m, bv->type));
  if (ir_dtype_is_float(bv->type->dtype)) {
    /* any NaN lane: pick the NaN lanes */
    ir_value *isnan = ir_cmp_build(b, IR_CMP_NE, bv, bv);
    ir_value *one = ir_const_int(b, lanes, 1), *zero = ir_const_int(b, lanes, 0);
    ir_value *sel[3] = {isnan, one, zero};
    ir_value *flags = ir_build1(b, IR_SELECT, lanes, 3, sel);
    ir_value *any = reduce_last(s, b, IR_RED_MAX, flags, i32);
    ir_value *hasnan = ir_cmp_build(b, IR_CMP_NE, spread(s, b, any, lanes), zero);
    ir_value *s3[3] = {hasnan, isnan, pick};
    pick = ir_build1(b, IR_SELECT, pick->type, 3, s3);
  }
  ir_value *s3[3] = {pick, bi, ir_const_int(b, lanes, INT32_MAX)};
  ir_value *cand = ir_build1(b, IR_SELECT, lanes, 3, s3);
  return reduce_last(s, b, IR_RED_MIN, cand, i32);
}

typedef struct {
  stripper *s;
  int tag;
  int *seen;
  ir_op **scans;
  int nscans;
} scan_find;

/* Collects the scans in the wide operand tree of v (each once per group). */
static void find_scans(scan_find *q, const ir_value *v) {
  if (!is_wide(q->s, v->type) || q->seen[v->id] == q->tag) return;
  q->seen[v->id] = q->tag;
  if (carried_scan(v->def)) q->scans[q->nscans++] = v->def;
  for (int k = 0; k < v->def->noperands; k++) find_scans(q, v->def->operands[k]);
}

/* Builds group g's loop before ops[at], and after it the final reductions, which take
 * over the uses of the original ones. A reduction carries one accumulator tile of a
 * chunk's shape; an argmax or argmin two (the running best value and its index); a scan
 * its running total. */
/* The exponential term E of an online sum (online_max) rebuilt on chunks with x := a and
 * the spread max M := mm (both of the chunk's shape), at b; its lane-uniform factors are
 * chunk clones built before the loop. */
static ir_value *online_term(stripper *s, ir_builder *b, const ir_value *v, const ir_value *x,
                             const ir_value *mw, ir_value *a, ir_value *mm) {
  if (v == x) return a;
  if (v == mw) return mm;
  const ir_op *op = v->def;
  if (op->opc == IR_CONST || op->opc == IR_SPLAT) return chunk_of(s, (ir_value *)v);
  ir_value *opnds[2];
  for (int k = 0; k < op->noperands; k++) opnds[k] = online_term(s, b, op->operands[k], x, mw, a, mm);
  return copy_op(b, op, opnds, a->type);
}

/* One chunk's step of online sum op (its spread max mw) in the loop body: with the lane's
 * running max going from m0 to m1 (the max's accumulator before and after this chunk) and
 * its running sum s0,
 *   s1 = (m0 == m1 ? s0 : s0 * E(m0, m1')) + E(x, m1'),  m1' = (m1 == -inf ? 0 : m1)
 * so that a lane whose values so far are all -inf (masked) keeps 0 instead of the NaN of
 * exp(-inf - -inf), and a lane whose max did not grow is not rescaled (no rounding). */
static ir_value *online_step(stripper *s, const ir_op *op, const ir_value *xw, const ir_value *mw,
                             ir_value *m0, ir_value *m1, ir_value *s0, ir_value *x) {
  const ir_value *e = op->operands[0];
  ir_builder at = s->inner;
  at.loc = op->loc;
  const ir_type *t = x->type;
  ir_value *ninf = ir_const_float(&s->outer, t, -INFINITY), *zero = ir_const_float(&s->outer, t, 0.0);
  ir_value *sel[3] = {ir_cmp_build(&at, IR_CMP_EQ, m1, ninf), zero, m1};
  ir_value *safe = ir_build1(&at, IR_SELECT, t, 3, sel);
  ir_value *term = online_term(s, &at, e, xw, mw, x, safe);
  ir_value *scaled = ir_binary(&at, IR_MUL, s0, online_term(s, &at, e, xw, mw, m0, safe));
  ir_value *keep[3] = {ir_cmp_build(&at, IR_CMP_EQ, m0, m1), s0, scaled};
  return ir_binary(&at, IR_ADD, ir_build1(&at, IR_SELECT, t, 3, keep), term);
}

/* After the loop: the online sum op from the lanes' running maxima mv and sums sv, each
 * lane rescaled to the row's max mfin: sum(sv * E(mv, mfin)). A row of -inf gives NaN, as
 * the unfused sum(exp(-inf - -inf)) does. */
static ir_value *online_total(stripper *s, ir_builder *ob, const ir_op *op, const ir_value *xw,
                              const ir_value *mw, ir_value *mv, ir_value *mfin, ir_value *sv) {
  ir_builder at = *ob;
  at.loc = op->loc;
  ir_value *mm = spread(s, &at, mfin, mv->type);
  ir_value *f = online_term(s, &at, op->operands[0], xw, mw, mv, mm);
  ir_value *r = reduce_last(s, &at, IR_RED_SUM, ir_binary(&at, IR_MUL, sv, f), ir_type_elem(sv->type));
  r->name = op->results[0]->name;
  return r;
}

static void emit_group(stripper *s, int g, scan_find *q) {
  sm_block *blk = s->b;
  sm_group *grp = &blk->groups[g];
  ir_op *before = grp->at < blk->nops ? blk->ops[grp->at] : NULL;
  ir_builder ob = {s->m, blk->blk, before, blk->ops[grp->first]->loc};
  int nred = 0, ncar = 0;
  q->tag++;
  q->nscans = 0;
  for (int i = grp->first; i < grp->end; i++) {
    if (blk->group_of[i] != g) continue;
    if (is_reduction(blk->ops[i])) {
      nred++;
      ncar += blk->ops[i]->opc == IR_ARGREDUCE ? 2 : 1;
    }
    for (int k = 0; k < blk->ops[i]->noperands; k++) find_scans(q, blk->ops[i]->operands[k]);
  }
  ir_op **reds = SU_NEW_ARRAY(s->a, ir_op *, nred);
  int *first = SU_NEW_ARRAY(s->a, int, nred); /* its first carried value */
  int *at_op = SU_NEW_ARRAY(s->a, int, nred); /* its op index */
  int *red_of = SU_NEW_ARRAY(s->a, int, grp->end - grp->first); /* op index - first -> r */
  ir_value **final = SU_NEW_ARRAY(s->a, ir_value *, nred);
  ir_value **accs = SU_NEW_ARRAY(s->a, ir_value *, ncar + q->nscans);
  const ir_type *i32 = ir_type_scalar(s->m, TK_I32);
  nred = ncar = 0;
  for (int i = grp->first; i < grp->end; i++) {
    ir_op *op = blk->ops[i];
    if (blk->group_of[i] != g || !is_reduction(op)) continue;
    reds[nred] = op;
    at_op[nred] = i;
    red_of[i - grp->first] = nred;
    first[nred++] = ncar;
    const ir_type *ct = chunk_type(s, op->operands[0]->type);
    accs[ncar++] = identity(&ob, (ir_reduce_kind)op->attr, ct);
    /* the first chunk's positions: ties keep the first */
    if (op->opc == IR_ARGREDUCE) accs[ncar++] = lane_index(s, &ob, ct);
  }
  for (int k = 0; k < q->nscans; k++) {
    ir_op *sc = q->scans[k];
    const ir_type *t = sc->results[0]->type;
    s->scan_slot[sc->results[0]->id] = ncar;
    accs[ncar++] = identity(&ob, (ir_reduce_kind)sc->attr, row_type(s, t, ir_type_elem(t)));
  }
  ir_value *lb = ir_const_int(&ob, i32, 0), *ub = ir_const_int(&ob, i32, s->n);
  ir_value *step = ir_const_int(&ob, i32, s->chunk);
  ir_op *loop = ir_build_for(&ob, lb, ub, step, ncar, accs);
  ir_block *body = loop->regions[0];
  if (s->cluster) { /* clusterkeep.c splits every marked loop, or none */
    int *k = SU_NEW_ARRAY(s->m->arena, int, 2);
    k[0] = s->cluster;
    k[1] = s->b->ngroups;
    loop->ints = k;
    loop->nints = 2;
  }
  s->cur++;
  s->accs = accs;
  s->outer = ob;
  s->outer.before = loop;
  s->inner = (ir_builder){s->m, body, NULL, ob.loc};

  int r = 0;
  for (int i = grp->first; i < grp->end; i++) {
    ir_op *op = blk->ops[i];
    if (blk->group_of[i] != g) continue;
    if (op->opc == IR_STORE) {
      ir_value **opnds = SU_NEW_ARRAY(s->a, ir_value *, op->noperands);
      for (int k = 0; k < op->noperands; k++) opnds[k] = chunk_of(s, op->operands[k]);
      ir_builder at = s->inner;
      at.loc = op->loc;
      ir_op_copy_attrs(ir_build(&at, IR_STORE, op->noperands, opnds, 0, NULL), op); /* its hints */
      continue;
    }
    int c = first[r++];
    if (blk->max_of[i] >= 0) { /* the chunk of the max's operand, not of exp(x - max) */
      ir_value *xw = blk->ops[blk->max_of[i]]->operands[0];
      int cm = first[red_of[blk->max_of[i] - grp->first]];
      accs[c] = online_step(s, op, xw, blk->spread_of[i], body->args[1 + cm], accs[cm],
                            body->args[1 + c], chunk_of(s, xw));
      continue;
    }
    ir_value *x = chunk_of(s, op->operands[0]);
    if (op->opc == IR_REDUCE) {
      accs[c] = ir_binary(&s->inner, combine_op((ir_reduce_kind)op->attr), body->args[1 + c], x);
      continue;
    }
    ir_builder at = s->inner;
    at.loc = op->loc;
    const ir_type *lanes = ir_type_like(s->m, x->type, i32);
    ir_value *c0 = body->args[0];
    ir_value *pos = ir_binary(&at, IR_ADD, ir_build1(&at, IR_SPLAT, lanes, 1, &c0),
                              lane_index(s, &s->outer, x->type));
    ir_value *win = beats(&at, op->attr == IR_RED_MAX, x, body->args[1 + c]);
    ir_value *sv[3] = {win, x, body->args[1 + c]}, *si[3] = {win, pos, body->args[2 + c]};
    accs[c] = ir_build1(&at, IR_SELECT, x->type, 3, sv);
    accs[c + 1] = ir_build1(&at, IR_SELECT, lanes, 3, si);
  }
  ir_build(&s->inner, IR_YIELD, ncar, accs, 0, NULL);

  ob.before = before;
  for (r = 0; r < nred; r++) {
    ir_value *acc = loop->results[first[r]], *red;
    int mi = blk->max_of[at_op[r]];
    if (mi >= 0) {
      int rm = red_of[mi - grp->first];
      red = online_total(s, &ob, reds[r], blk->ops[mi]->operands[0], blk->spread_of[at_op[r]], loop->results[first[rm]], final[rm], acc);
    } else if (reds[r]->opc == IR_REDUCE) {
      red = copy_op(&ob, reds[r], &acc, reds[r]->results[0]->type);
      red->def->attr2 = acc->type->rank - 1;
    } else {
      ir_builder at = ob;
      at.loc = reds[r]->loc;
      red = combine_arg(s, &at, reds[r]->attr == IR_RED_MAX, acc, loop->results[first[r] + 1]);
      red->name = reds[r]->results[0]->name;
    }
    final[r] = red;
    ir_replace_all_uses(s->f, reds[r]->results[0], red);
  }
}

/* ---- the pass --------------------------------------------------------------------------- */

/* Reads the kernel into s and decides whether it is in the class; false leaves it as is. */
static bool analyze(stripper *s, int nvalues) {
  if (s->f->num_warps < 1) return false;
  int64_t threads = 32 * (int64_t)s->f->num_warps;
  width_scan w = {threads * SM_MAX_PER_THREAD, 0, 1, false, NULL, NULL, NULL};
  ir_walk(s->f->body, scan_op, &w);
  if (!w.why && w.n) {
    w.second = true;
    ir_walk(s->f->body, scan_op, &w);
  }
  if (w.why) {
    su_buf t = {0};
    ir_type_print(&t, w.bad_type);
    pass_remark_missed(s->m, "fuse", w.bad_op->loc, "kernel '%s' left unfused: %s %s", s->f->name,
                       su_buf_str(&t), w.why);
    su_buf_free(&t);
  }
  if (w.why || !w.n) return false;
  s->n = w.n;
  s->rows = w.rows;
  int64_t chunk = threads * SM_CHUNK_PER_THREAD / w.rows;
  if (chunk < 1) {
    pass_remark_missed(s->m, "fuse", s->f->loc, "kernel '%s' left unfused: its wide tiles have %d "
                       "rows, more than a chunk of %d values per thread holds with one lane each",
                       s->f->name, w.rows, SM_CHUNK_PER_THREAD);
    return false;
  }
  if (chunk * w.rows != threads * SM_CHUNK_PER_THREAD || s->n % chunk != 0 || chunk >= s->n) {
    pass_remark_missed(s->m, "fuse", s->f->loc, "kernel '%s' left unfused: its wide length %d is "
                       "not a multiple of the chunk %lld", s->f->name, s->n, (long long)chunk);
    return false;
  }
  s->chunk = (int)chunk;
  class_check c = {s, true, NULL, NULL, SU_NEW_ARRAY(s->a, signed char, nvalues)};
  ir_walk(s->f->body, check_op, &c);
  if (!c.ok) {
    pass_remark_missed(s->m, "fuse", c.bad->loc, "kernel '%s' left unfused: %s ('%s')", s->f->name,
                       c.why, ir_op_info(c.bad->opc)->name);
    return false;
  }

  int nblocks = 1;
  ir_walk(s->f->body, count_blocks, &nblocks);
  s->blocks = SU_NEW_ARRAY(s->a, sm_block, nblocks);
  s->pos = SU_NEW_ARRAY(s->a, int, nvalues);
  read_blocks(s, s->f->body);
  int ngroups = 0;
  for (int i = 0; i < s->nblocks; i++) ngroups += s->blocks[i].ngroups;
  /* the order check also says when a wide load feeds nothing (no group at all) */
  if (!memory_order_ok(s, nvalues) || ngroups == 0) return false;
  choose_keep(s, nvalues);
  return true;
}

bool pass_fuse(ir_module *m, ir_func *f) {
  stripper s = {.m = m, .f = f, .a = su_arena_new()};
  int nvalues = ir_number_values(f);
  bool changed = analyze(&s, nvalues);
  if (changed) {
    s.inv = SU_NEW_ARRAY(s.a, ir_value *, nvalues);
    s.var = SU_NEW_ARRAY(s.a, ir_value *, nvalues);
    s.var_of = SU_NEW_ARRAY(s.a, int, nvalues);
    s.base = SU_NEW_ARRAY(s.a, ir_value *, nvalues);
    s.scan_slot = SU_NEW_ARRAY(s.a, int, nvalues);
    s.loaded = SU_NEW_ARRAY(s.a, int, nvalues);
    scan_find q = {&s, 0, SU_NEW_ARRAY(s.a, int, nvalues), SU_NEW_ARRAY(s.a, ir_op *, nvalues), 0};
    for (int bi = 0; bi < s.nblocks; bi++) {
      s.b = &s.blocks[bi];
      /* clones built before one block's loops are not visible in another */
      memset(s.inv, 0, sizeof *s.inv * (size_t)nvalues);
      memset(s.base, 0, sizeof *s.base * (size_t)nvalues);
      for (int g = 0; g < s.b->ngroups; g++) emit_group(&s, g, &q);
    }
    /* The originals, inner blocks first and last op first: each wide value's users are
     * wide ops or roots of its block or of blocks nested in it, all erased before it. */
    for (int bi = 0; bi < s.nblocks; bi++)
      for (int i = s.blocks[bi].nops - 1; i >= 0; i--)
        if (s.blocks[bi].group_of[i] >= 0 || has_wide_result(&s, s.blocks[bi].ops[i]))
          ir_op_erase(s.blocks[bi].ops[i]);
  }
  su_arena_free(s.a);
  return changed;
}
