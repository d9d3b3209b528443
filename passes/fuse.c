/* Fusion (design §5: fusion, tiling (b) and recomputation). The ops of a kernel that share
 * one wide iteration space (loads, elementwise ops, broadcasts of scalars, reductions and
 * stores over the same N lanes) are grouped into loop nests over register-sized chunks,
 * so the intermediates of a group live in registers chunk by chunk and never touch memory,
 * and softmax over a 32768-wide row can be written as one tile. A reduction closes a
 * group; its scalar result feeds the next. -fno-fuse replaces this pass with materialize.c
 * (every op's result through global memory): the baseline that shows what fusion buys.
 *
 * The class handled: the top level of the kernel body computes "wide" tiles, all of one
 * length N, with arange, const, splat, elementwise ops and loads, and consumes them only
 * with stores, sum/max/min reductions and argmax/argmin to scalars; scalars flow freely in
 * between. Any other use of a wide tile (a shape op, scan, dot, atomic, print, a loop or
 * branch that touches one) leaves the kernel unchanged: correct, possibly spilling, and
 * said with a remark at the op that stops it (-Rpass-missed=fuse, pass_remark_missed).
 *
 * Groups. Reductions and wide stores are the roots. Walking the body in order, roots
 * join one group until an op needs a result of the group's reductions (the splat of
 * softmax's max), or a scalar memory op, a print or assert, a loop or branch, or the
 * return comes; the group's loop goes just before that op. Each loop runs
 * `for c0 in range(0, N, C)`, rebuilds the roots' operand trees on the chunk
 * (arange(s, s+N) becomes c0 + arange(s, s+C)), stores chunk by chunk, and carries one
 * accumulator tile of C lanes per reduction, combined lane-wise (add, max, min; an
 * argmax/argmin carries the lanes' best values and their positions) and reduced once
 * after the loop: one cross-warp reduction per loop rather than per chunk.
 * Chunk clones that do not depend on c0 (splats, constants, the arange base) are built
 * once before the first loop that needs them.
 *
 * Keep or recompute. A value needed by two groups (softmax's x: max, sum, normalize) is
 * always recomputed: reloaded and its producers re-run in the later loop. Registers
 * cannot keep it (that is why we strip-mine); shared memory could: 228 KB on H200 holds
 * about 57k f32, so a row of N <= ~48k f32 per CTA (leaving room for the reductions)
 * could be staged once and read back at shared-memory bandwidth instead of re-reading
 * global memory (L2 usually hits for a row this small). That keep path pays when the
 * producers are expensive or the loads are not L2-resident, and costs occupancy (one CTA
 * per SM at 128 KB). It is not implemented: recomputation needs no barrier and suits the
 * bandwidth-bound kernels this pass targets (docs/passes.md).
 *
 * Memory order. Re-running a load is exact only if its memory has not changed since the
 * original load: a wide load is recomputed in a loop only when no store or atomic lies
 * between it and that loop, other than the loop's own stores; otherwise nothing is
 * rewritten. Within one loop, loads and stores interleave chunk by chunk instead of all
 * loads before all stores, which is exact unless a store writes memory that a load of
 * the same loop reads at another lane (buffers overlapping with an offset) — the
 * assumption every hand-written chunked kernel makes. A wide load no root needs would
 * vanish, so such a kernel is left alone (loads may fault and are never removed).
 *
 * Budget. N is wide when a tile of N values gives each of the kernel's 32 * warps
 * threads more than SM_MAX_PER_THREAD of them; chunks give each thread
 * SM_CHUNK_PER_THREAD values (C = 32 * warps * 16: 4 vectors of 16 bytes per f32 tile). */
#include "pass_util.h"

#include <math.h>

enum {
  /* softmax at 8192 f32 with 8 warps holds 32 values per thread in 80 registers without
   * spilling, and one pass over memory beats three; at 64 it needs 128, at 128 all 255. */
  SM_MAX_PER_THREAD = 32,
  SM_CHUNK_PER_THREAD = 16,
};

/* One loop of the rewrite: its roots are the ops of [first, at) marked with its index;
 * the loop goes before ops[at] (the end of the body when at == nops). */
typedef struct {
  int first, at;
} sm_group;

typedef struct {
  ir_module *m;
  ir_func *f;
  su_arena *a; /* scratch for this run */
  int n;       /* the wide length */
  int chunk;   /* C */
  ir_op **ops; /* the body's top-level ops, in order */
  int nops;
  int *pos;      /* value id -> index in ops of its defining op (top level only) */
  int *group_of; /* op index -> the group that runs it as a root, or -1 */
  bool *writes;  /* op index -> the op stores or does atomics (nested ones included) */
  sm_group *groups;
  int ngroups;
  /* rewrite state, per value id of the original kernel */
  ir_value **inv;  /* chunk clone built before the loops (does not depend on c0) */
  ir_value **var;  /* chunk clone in the body of loop var_of[id] - 1 */
  int *var_of;
  ir_value **base; /* an arange's chunk base arange(s, s + C) */
  int cur;         /* the group being emitted */
  ir_builder outer, inner;
} stripper;

static bool is_wide(const stripper *s, const ir_type *t) {
  return t->kind == IR_TILE && t->rank == 1 && t->shape[0] == s->n;
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
  bool bad;       /* a wide tile that is not 1-D, has a layout, or has another length */
  const ir_op *bad_op; /* the first op making one (for the remark) */
  const ir_type *bad_type;
} width_scan;

static void scan_type(width_scan *w, const ir_op *op, const ir_type *t) {
  if (t->kind != IR_TILE || ir_type_numel(t) <= w->budget) return;
  if (t->rank != 1 || t->layout || (w->n && w->n != t->shape[0])) {
    if (!w->bad) w->bad_op = op, w->bad_type = t;
    w->bad = true;
  } else {
    w->n = t->shape[0];
  }
}

static void scan_op(ir_op *op, void *ctx) {
  for (int i = 0; i < op->nresults; i++) scan_type(ctx, op, op->results[i]->type);
  for (int r = 0; r < op->nregions; r++)
    for (int i = 0; i < op->regions[r]->nargs; i++) scan_type(ctx, op, op->regions[r]->args[i]->type);
}

/* ---- the supported class ---------------------------------------------------------------- */

/* An op producing a wide tile that the loops can rebuild chunk by chunk. */
static bool rebuildable(const ir_op *op) {
  switch (op->opc) {
  case IR_ARANGE: case IR_CONST: case IR_SPLAT: case IR_LOAD: return true;
  default: return (ir_op_info(op->opc)->traits & IR_ELEM) != 0;
  }
}

/* An op consuming wide tiles into no wide result: a store, a reduction to a scalar whose
 * lane-wise combination exists (not over i1, whose sum is not its own type's), or an
 * argmax/argmin to a scalar (a running value and index per lane). */
static bool is_root_kind(const ir_op *op) {
  if (op->opc == IR_STORE) return true;
  if (op->opc == IR_ARGREDUCE)
    return op->results[0]->type->kind == IR_SCALAR && op->operands[0]->type->dtype != TK_I1;
  return op->opc == IR_REDUCE && op->results[0]->type->kind == IR_SCALAR &&
         op->results[0]->type->dtype != TK_I1;
}

static bool is_reduction(const ir_op *op) {
  return op->opc == IR_REDUCE || op->opc == IR_ARGREDUCE;
}

typedef struct {
  const stripper *s;
  bool ok;
  const ir_op *bad; /* the first op outside the class, and why (for the remark) */
  const char *why;
} class_check;

static void check_op(ir_op *op, void *ctx) {
  class_check *c = ctx;
  bool res = has_wide_result(c->s, op), opnd = has_wide_operand(c->s, op);
  if (!res && !opnd) return;
  const char *why = NULL;
  if (op->parent != c->s->f->body || op->nregions)
    why = "a wide tile inside a loop or an if (or carried by one)";
  else if (res && !(op->nresults == 1 && rebuildable(op)))
    why = "this op has no chunked form";
  else if (!res && !is_root_kind(op))
    why = "a wide tile used by an op other than a store or a sum/max/min to a scalar";
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

/* True if the open group g must be closed before ops[i]: the op needs one of its
 * reductions, or is an effect (other than a wide load or store) that the group's loads
 * and stores must not move across. */
static bool closes_group(const stripper *s, int g, int i) {
  ir_op *op = s->ops[i];
  if (op->opc == IR_RETURN || op->nregions) return true;
  bool wide_mem = (op->opc == IR_LOAD && has_wide_result(s, op)) || is_root(s, op);
  if ((ir_op_info(op->opc)->traits & IR_MEM) && !wide_mem) return true;
  for (int k = 0; k < op->noperands; k++) {
    ir_op *d = op->operands[k]->def;
    if (d && is_reduction(d) && d->parent == s->f->body &&
        s->group_of[s->pos[op->operands[k]->id]] == g)
      return true;
  }
  return false;
}

static void form_groups(stripper *s) {
  s->groups = SU_NEW_ARRAY(s->a, sm_group, s->nops);
  int open = -1;
  for (int i = 0; i < s->nops; i++) {
    if (open >= 0 && closes_group(s, open, i)) {
      s->groups[open].at = i;
      open = -1;
    }
    if (!is_root(s, s->ops[i])) continue;
    if (open < 0) {
      open = s->ngroups++;
      s->groups[open].first = i;
    }
    s->group_of[i] = open;
  }
  if (open >= 0) s->groups[open].at = s->nops;
}

/* ---- memory order ----------------------------------------------------------------------- */

typedef struct {
  const stripper *s;
  int g;
  int *seen;       /* value id -> last group + 1 that visited it */
  bool *loaded;    /* value id -> a wide load some group runs */
  bool ok;
  const ir_op *bad_load, *bad_write; /* the first reload a write forbids (for the remark) */
} mem_check;

/* Visits the wide operand tree of v for group c->g; each load in it must see no store
 * or atomic between its place and the group's loop, other than the group's own. */
static void check_tree(mem_check *c, const ir_value *v) {
  const stripper *s = c->s;
  if (!is_wide(s, v->type) || c->seen[v->id] == c->g + 1) return;
  c->seen[v->id] = c->g + 1;
  ir_op *op = v->def;
  if (op->opc == IR_LOAD) {
    c->loaded[v->id] = true;
    for (int q = s->pos[v->id] + 1; q < s->groups[c->g].at; q++)
      if (s->writes[q] && s->group_of[q] != c->g) {
        if (c->ok) c->bad_load = op, c->bad_write = s->ops[q];
        c->ok = false;
      }
  }
  for (int k = 0; k < op->noperands; k++) check_tree(c, op->operands[k]);
}

static bool memory_order_ok(const stripper *s, int nvalues) {
  mem_check c = {s, 0, SU_NEW_ARRAY(s->a, int, nvalues), SU_NEW_ARRAY(s->a, bool, nvalues), true,
                 NULL, NULL};
  for (c.g = 0; c.g < s->ngroups; c.g++)
    for (int i = s->groups[c.g].first; i < s->groups[c.g].at; i++)
      if (s->group_of[i] == c.g)
        for (int k = 0; k < s->ops[i]->noperands; k++) check_tree(&c, s->ops[i]->operands[k]);
  for (int i = 0; i < s->nops; i++) {
    ir_op *op = s->ops[i];
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

/* ---- rewriting -------------------------------------------------------------------------- */

static const ir_type *chunk_type(stripper *s, const ir_type *wide) {
  return ir_type_tile(s->m, wide->elem, 1, &s->chunk);
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

/* The chunk of wide value v at the current loop's c0 (v itself when not wide), built on
 * first use: before the loops when it does not depend on c0, else in the loop body. */
static ir_value *chunk_of(stripper *s, ir_value *v) {
  if (!is_wide(s, v->type)) return v;
  int id = v->id;
  if (s->inv[id]) return s->inv[id];
  if (s->var_of[id] == s->cur + 1) return s->var[id];
  ir_op *op = v->def;
  const ir_type *t = chunk_type(s, v->type);
  if (op->opc == IR_ARANGE) {
    if (!s->base[id]) {
      s->base[id] = copy_op(&s->outer, op, NULL, t);
      s->base[id]->def->attr2 = op->attr + s->chunk;
    }
    ir_value *c0 = s->inner.block->args[0];
    ir_value *lanes = ir_build1(&s->inner, IR_SPLAT, ir_type_like(s->m, t, c0->type), 1, &c0);
    s->var_of[id] = s->cur + 1;
    return s->var[id] = ir_binary(&s->inner, IR_ADD, lanes, s->base[id]);
  }
  ir_value **opnds = SU_NEW_ARRAY(s->a, ir_value *, op->noperands);
  bool variant = op->opc == IR_LOAD; /* memory: never hoisted */
  for (int k = 0; k < op->noperands; k++) {
    opnds[k] = chunk_of(s, op->operands[k]);
    variant |= in_loop(s, opnds[k]);
  }
  if (!variant) return s->inv[id] = copy_op(&s->outer, op, opnds, t);
  s->var_of[id] = s->cur + 1;
  return s->var[id] = copy_op(&s->inner, op, opnds, t);
}

/* The value a reduction of kind k starts from: sum 0 (-0.0 for floats, the identity of
 * IEEE addition: a row of -0.0 sums to -0.0, as on the interpreter), max the lowest
 * value, min the highest (infinities for floats), as a tile of type t. */
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

/* Whether lane value v beats the running best b of an argmax (max) or argmin: the first
 * NaN wins over anything but an earlier NaN (as the interpreter's argreduce), else strictly
 * greater (smaller), so that each lane keeps its first best. An i1 tile. */
static ir_value *beats(ir_builder *b, bool max, ir_value *v, ir_value *best) {
  ir_value *better = ir_cmp_build(b, max ? IR_CMP_GT : IR_CMP_LT, v, best);
  if (!ir_dtype_is_float(v->type->dtype)) return better;
  ir_value *vnan = ir_cmp_build(b, IR_CMP_NE, v, v), *bnum = ir_cmp_build(b, IR_CMP_EQ, best, best);
  return ir_binary(b, IR_OR, better, ir_binary(b, IR_AND, vnan, bnum));
}

/* The index the lanes' running bests (value tile bv, index tile bi) of an argmax or
 * argmin give: a NaN lane's when there is one, else the best value's, the smallest index
 * among equal ones: the first in the row, as an unchunked argreduce. */
static ir_value *combine_arg(stripper *s, ir_builder *b, bool max, ir_value *bv, ir_value *bi) {
  const ir_type *i32 = ir_type_scalar(s->m, TK_I32), *vs = ir_type_elem(bv->type);
  const ir_type *lanes = ir_type_like(s->m, bv->type, i32);
  ir_op *m = ir_build(b, IR_REDUCE, 1, &bv, 1, &vs);
  m->attr = max ? IR_RED_MAX : IR_RED_MIN;
  ir_value *mt = ir_build1(b, IR_SPLAT, bv->type, 1, &m->results[0]);
  ir_value *pick = ir_cmp_build(b, IR_CMP_EQ, bv, mt);
  if (ir_dtype_is_float(bv->type->dtype)) {
    /* any NaN lane: pick the NaN lanes */
    ir_value *isnan = ir_cmp_build(b, IR_CMP_NE, bv, bv);
    ir_value *one = ir_const_int(b, lanes, 1), *zero = ir_const_int(b, lanes, 0);
    ir_value *sel[3] = {isnan, one, zero};
    ir_value *flags = ir_build1(b, IR_SELECT, lanes, 3, sel);
    ir_op *any = ir_build(b, IR_REDUCE, 1, &flags, 1, &i32);
    any->attr = IR_RED_MAX;
    ir_value *anyt = ir_build1(b, IR_SPLAT, lanes, 1, &any->results[0]);
    ir_value *hasnan = ir_cmp_build(b, IR_CMP_NE, anyt, zero);
    ir_value *s3[3] = {hasnan, isnan, pick};
    pick = ir_build1(b, IR_SELECT, pick->type, 3, s3);
  }
  ir_value *s3[3] = {pick, bi, ir_const_int(b, lanes, INT32_MAX)};
  ir_value *cand = ir_build1(b, IR_SELECT, lanes, 3, s3);
  ir_op *r = ir_build(b, IR_REDUCE, 1, &cand, 1, &i32);
  r->attr = IR_RED_MIN;
  return r->results[0];
}

/* Builds group g's loop before ops[at], and after it the final reductions, which take
 * over the uses of the original ones. A reduction carries one accumulator tile of C
 * lanes; an argmax or argmin two (the running best value and its index). */
static void emit_group(stripper *s, int g) {
  sm_group *grp = &s->groups[g];
  ir_op *before = grp->at < s->nops ? s->ops[grp->at] : NULL;
  ir_builder ob = {s->m, s->f->body, before, s->ops[grp->first]->loc};
  int nred = 0, ncar = 0;
  for (int i = grp->first; i < grp->at; i++)
    if (s->group_of[i] == g && is_reduction(s->ops[i])) {
      nred++;
      ncar += s->ops[i]->opc == IR_ARGREDUCE ? 2 : 1;
    }
  ir_op **reds = SU_NEW_ARRAY(s->a, ir_op *, nred);
  int *first = SU_NEW_ARRAY(s->a, int, nred); /* its first carried value */
  ir_value **accs = SU_NEW_ARRAY(s->a, ir_value *, ncar);
  const ir_type *i32 = ir_type_scalar(s->m, TK_I32);
  const ir_type *lanes = ir_type_tile(s->m, i32, 1, &s->chunk);
  ir_value *lane_base = NULL; /* arange(0, C): the positions of a chunk's lanes from c0 */
  nred = ncar = 0;
  for (int i = grp->first; i < grp->at; i++) {
    ir_op *op = s->ops[i];
    if (s->group_of[i] != g || !is_reduction(op)) continue;
    reds[nred] = op;
    first[nred++] = ncar;
    accs[ncar++] = identity(&ob, (ir_reduce_kind)op->attr, chunk_type(s, op->operands[0]->type));
    if (op->opc == IR_ARGREDUCE) {
      if (!lane_base) {
        ir_op *ar = ir_build(&ob, IR_ARANGE, 0, NULL, 1, &lanes);
        ar->attr = 0;
        ar->attr2 = s->chunk;
        lane_base = ar->results[0];
      }
      accs[ncar++] = lane_base; /* the first chunk's positions: ties keep the first */
    }
  }
  ir_value *lb = ir_const_int(&ob, i32, 0), *ub = ir_const_int(&ob, i32, s->n);
  ir_value *step = ir_const_int(&ob, i32, s->chunk);
  ir_op *loop = ir_build_for(&ob, lb, ub, step, ncar, accs);
  ir_block *body = loop->regions[0];
  s->cur = g;
  s->outer = ob;
  s->outer.before = loop;
  s->inner = (ir_builder){s->m, body, NULL, ob.loc};

  int r = 0;
  ir_value *pos = NULL; /* c0 + arange(0, C), built on first use */
  for (int i = grp->first; i < grp->at; i++) {
    ir_op *op = s->ops[i];
    if (s->group_of[i] != g) continue;
    if (op->opc == IR_STORE) {
      ir_value **opnds = SU_NEW_ARRAY(s->a, ir_value *, op->noperands);
      for (int k = 0; k < op->noperands; k++) opnds[k] = chunk_of(s, op->operands[k]);
      ir_builder at = s->inner;
      at.loc = op->loc;
      ir_build(&at, IR_STORE, op->noperands, opnds, 0, NULL);
      continue;
    }
    ir_value *x = chunk_of(s, op->operands[0]);
    int c = first[r++];
    if (op->opc == IR_REDUCE) {
      accs[c] = ir_binary(&s->inner, combine_op((ir_reduce_kind)op->attr), body->args[1 + c], x);
      continue;
    }
    if (!pos) {
      ir_value *c0 = body->args[0];
      ir_value *sp = ir_build1(&s->inner, IR_SPLAT, lanes, 1, &c0);
      pos = ir_binary(&s->inner, IR_ADD, sp, lane_base);
    }
    ir_builder at = s->inner;
    at.loc = op->loc;
    ir_value *win = beats(&at, op->attr == IR_RED_MAX, x, body->args[1 + c]);
    ir_value *sv[3] = {win, x, body->args[1 + c]}, *si[3] = {win, pos, body->args[2 + c]};
    accs[c] = ir_build1(&at, IR_SELECT, x->type, 3, sv);
    accs[c + 1] = ir_build1(&at, IR_SELECT, lanes, 3, si);
  }
  ir_build(&s->inner, IR_YIELD, ncar, accs, 0, NULL);

  ob.before = before;
  for (r = 0; r < nred; r++) {
    ir_value *acc = loop->results[first[r]], *red;
    if (reds[r]->opc == IR_REDUCE) {
      red = copy_op(&ob, reds[r], &acc, reds[r]->results[0]->type);
      red->def->attr2 = 0;
    } else {
      ir_builder at = ob;
      at.loc = reds[r]->loc;
      red = combine_arg(s, &at, reds[r]->attr == IR_RED_MAX, acc, loop->results[first[r] + 1]);
      red->name = reds[r]->results[0]->name;
    }
    ir_replace_all_uses(s->f, reds[r]->results[0], red);
  }
}

/* ---- the pass --------------------------------------------------------------------------- */

/* Reads the kernel into s and decides whether it is in the class; false leaves it as is. */
static bool analyze(stripper *s, int nvalues) {
  if (s->f->num_warps < 1) return false;
  int64_t threads = 32 * (int64_t)s->f->num_warps;
  width_scan w = {threads * SM_MAX_PER_THREAD, 0, false, NULL, NULL};
  ir_walk(s->f->body, scan_op, &w);
  if (w.bad) {
    su_buf t = {0};
    ir_type_print(&t, w.bad_type);
    pass_remark_missed(s->m, "fuse", w.bad_op->loc, "kernel '%s' left unfused: %s has more than "
                       "%d values per thread and is not a 1-D tile of the kernel's one wide "
                       "length%s", s->f->name, su_buf_str(&t), SM_MAX_PER_THREAD,
                       w.bad_type->layout ? " (it has a layout already)" : "");
    su_buf_free(&t);
  }
  if (w.bad || !w.n) return false;
  s->n = w.n;
  s->chunk = (int)(threads * SM_CHUNK_PER_THREAD); /* < n, which is wide */
  if (s->n % s->chunk != 0) {
    pass_remark_missed(s->m, "fuse", s->f->loc, "kernel '%s' left unfused: its wide length %d is "
                       "not a multiple of the chunk %d", s->f->name, s->n, s->chunk);
    return false;
  }
  class_check c = {s, true, NULL, NULL};
  ir_walk(s->f->body, check_op, &c);
  if (!c.ok) {
    pass_remark_missed(s->m, "fuse", c.bad->loc, "kernel '%s' left unfused: %s ('%s')", s->f->name,
                       c.why, ir_op_info(c.bad->opc)->name);
    return false;
  }

  for (ir_op *op = s->f->body->first; op; op = op->next) s->nops++;
  s->ops = SU_NEW_ARRAY(s->a, ir_op *, s->nops);
  s->group_of = SU_NEW_ARRAY(s->a, int, s->nops);
  s->writes = SU_NEW_ARRAY(s->a, bool, s->nops);
  s->pos = SU_NEW_ARRAY(s->a, int, nvalues);
  int i = 0;
  for (ir_op *op = s->f->body->first; op; op = op->next, i++) {
    s->ops[i] = op;
    s->group_of[i] = -1;
    for (int k = 0; k < op->nresults; k++) s->pos[op->results[k]->id] = i;
    s->writes[i] = is_write_op(op);
    for (int r = 0; r < op->nregions; r++) ir_walk(op->regions[r], find_write, &s->writes[i]);
  }
  form_groups(s);
  return s->ngroups > 0 && memory_order_ok(s, nvalues);
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
    for (int g = 0; g < s.ngroups; g++) emit_group(&s, g);
    /* The originals, last first: each wide value's users are wide ops or roots, all
     * erased before it. */
    for (int i = s.nops - 1; i >= 0; i--)
      if (s.group_of[i] >= 0 || has_wide_result(&s, s.ops[i])) ir_op_erase(s.ops[i]);
  }
  su_arena_free(s.a);
  return changed;
}
