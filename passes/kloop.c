/* kloop: a dot over a logical K becomes the K loop a user would write (docs/passes.md).
 *
 * A user may write the whole reduction axis of a matrix product as one tile, as the math
 * reads (samples/matmul_logical.tk):
 *
 *   let kk = arange(0, KP);
 *   let ta = load(a + rm[:, None] * K + kk[None, :], (rm[:, None] < M) && (kk[None, :] < K), 0.0);
 *   let tb = load(b + kk[:, None] * N + rn[None, :], (kk[:, None] < K) && (rn[None, :] < N), 0.0);
 *   let acc = dot(ta, tb);
 *
 * [BM, KP] and [KP, BN] tiles fit neither registers nor shared memory once KP is in the
 * thousands. This pass cuts K into steps of BK (one 128-byte line of the element type: 64
 * for f16, the BK of samples/matmul.tk and the TMA box / wgmma swizzle line) and builds
 *
 *   acc = for k in range(0, min(K, KP), BK) carrying acc0 {
 *     ta' = load(<ta's pointer and mask, with arange(0, KP) read as k + arange(0, BK)>)
 *     tb' = load(<the same for tb>)
 *     yield dot(ta', tb', acc)
 *   }
 *
 * which is what the user's loop lowers to, so swpipe, lower_dot and warpspec then make
 * the same TMA ring and wgmma of it. What the loads read that the step does not change is
 * copied into the body too, as a written loop has it; licm hoists it back out in the same
 * order as the looped kernel's (ptxas allocates from that order). BK divides KP (both powers of two), so every step
 * lies inside the tile and the masks need no extra term. The upper bound is KP, lowered to
 * min(B, KP) when both loads' masks contain a conjunct `kk < B` (kk the K index, B a
 * scalar): the steps from B on read nothing but the zero `other`, and skipping them is
 * exact (both operands are zero there, so no 0 * inf is lost).
 *
 * Exactness on the interpreter: its dot sums acc, then k = 0, 1, ... in turn, so the loop
 * is the same sum in the same order, bit for bit, for every accumulator it takes (an f16
 * or bf16 `acc` is carried in f32 and rounded once after the loop, which is exactly the
 * f16-accumulated dot's definition); tf32x3 adds each step's product to acc instead of the
 * whole one, a reassociation (docs/language.md, 6.6.1).
 *
 * What it takes: a 2-D dot outside any `for` (inside one, the user already chose K's
 * tile) whose operands are loads of its block used by it alone, with no op with effects
 * between them and it (the loads move to the dot); the loads' pointers, masks and `other`
 * computed from the K index by arange (of the whole KP), const, splat, broadcast,
 * expand_dims and elementwise ops; no layout yet. Anything else with K > BK stays as it is,
 * with a remark (-Rpass-missed=kloop). */
#include "pass_util.h"

#include <string.h>

enum { MAX_TRACE = 512 };

typedef struct {
  ir_value *v;
  int kdim;    /* the axis of v that is K */
  ir_value *nv; /* v on one step, inside the loop (NULL until built) */
} traced;

typedef struct {
  ir_module *m;
  ir_func *f;
  int kp, bk;
  traced t[MAX_TRACE];
  int nt;
  const ir_op *why_op; /* where the trace stopped */
  const char *why;     /* and why */
  ir_builder in;       /* inside the loop body */
  ir_block *home;      /* the dot's block */
  ir_vmap *copies;     /* step-invariant ops of home copied into the loop */
  int depth;           /* of the copying */
  ir_value *iv;
} kl;

/* The K step for operands of dtype d: one 128-byte line, at least 16 (dot's minimum). */
static int step_for(tk_dtype d) {
  int b = 128 / ir_dtype_bytes(d);
  return b < 16 ? 16 : b;
}

static traced *find(const kl *s, const ir_value *v) {
  for (int i = 0; i < s->nt; i++)
    if (s->t[i].v == v) return (traced *)&s->t[i];
  return NULL;
}

static bool stop(kl *s, const ir_op *op, const char *why) {
  if (!s->why) {
    s->why_op = op;
    s->why = why;
  }
  return false;
}

/* Records that v's axis d is K and checks that its computation can be rebuilt on one
 * step: true when it can. */
static bool trace(kl *s, ir_value *v, int d) {
  if (v->type->kind != IR_TILE || d >= v->type->rank || v->type->shape[d] != s->kp)
    return stop(s, v->def, "a tile of its K computation has another shape");
  if (v->type->layout) return stop(s, v->def, "the tiles already have layouts");
  traced *seen = find(s, v);
  if (seen && seen->v->def && seen->v->def->opc == IR_LOAD)
    return stop(s, v->def, "one operand's K computation reads the other");
  if (seen) return seen->kdim == d || stop(s, v->def, "a tile is indexed by K along two axes");
  if (s->nt == MAX_TRACE) return stop(s, v->def, "its K computation is too large");
  s->t[s->nt++] = (traced){v, d, NULL};
  ir_op *op = v->def;
  if (!op) return stop(s, NULL, "its K computation reads a loop-carried tile");
  switch (op->opc) {
  case IR_ARANGE:
    return (op->attr2 - op->attr == s->kp) || stop(s, op, "an arange of another length indexes K");
  case IR_CONST: case IR_SPLAT: return true;
  case IR_BROADCAST: {
    ir_value *o = op->operands[0];
    if (o->type->kind != IR_TILE || o->type->rank != v->type->rank)
      return stop(s, op, "a broadcast changes the rank of a tile of its K computation");
    return o->type->shape[d] == 1 || trace(s, o, d);
  }
  case IR_EXPAND_DIMS:
    if (op->attr2 == d) return stop(s, op, "an expand_dims inserts the K axis");
    return trace(s, op->operands[0], d < op->attr2 ? d : d - 1);
  case IR_LOAD: return stop(s, op, "its K computation loads (a gather)");
  default: break;
  }
  const ir_opinfo *info = ir_op_info(op->opc);
  if (!(info->traits & IR_ELEM) || !(info->traits & IR_PURE) || op->nregions)
    return stop(s, op, "an op in its K computation has no per-step form");
  for (int i = 0; i < op->noperands; i++)
    if (op->operands[i]->type->kind == IR_TILE && !trace(s, op->operands[i], d)) return false;
  return true;
}

/* The operand load ld, its axis d being K: its result and every operand. */
static bool trace_load(kl *s, ir_op *ld, int d) {
  ir_value *v = ld->results[0];
  if (v->type->layout) return stop(s, ld, "the tiles already have layouts");
  if (s->nt == MAX_TRACE) return stop(s, ld, "its K computation is too large");
  s->t[s->nt++] = (traced){v, d, NULL};
  for (int i = 0; i < ld->noperands; i++)
    if (!trace(s, ld->operands[i], d)) return false;
  return true;
}

/* v's shape with axis d of length BK. */
static const ir_type *step_type(kl *s, const ir_value *v, int d) {
  int shape[IR_MAX_RANK];
  memcpy(shape, v->type->shape, sizeof shape);
  shape[d] = s->bk;
  return ir_type_tile(s->m, v->type->elem, v->type->rank, shape);
}

/* v on the step at the loop's induction variable: built in the loop body (licm hoists
 * what does not depend on it), or v itself when it does not depend on K. */
static ir_value *rebuild(kl *s, ir_value *v);

/* A value the step does not change, as the loop body reads it: a pure op of the dot's block
 * is copied into the body (once), as it stands in a written loop, and licm hoists it back
 * out in the body's order (CSE then keeps the first of two equal ops): the order the
 * looped kernel's ops come in, which LLVM and ptxas schedule from. Anything else is read
 * where it is. */
static ir_value *invariant(kl *s, ir_value *v) {
  ir_op *op = v->def;
  if (!op || op->parent != s->home || op->nregions || op->nresults != 1 ||
      !(ir_op_info(op->opc)->traits & IR_PURE))
    return v;
  ir_value *c = ir_vmap_get(s->copies, v);
  if (c != v || s->depth > 64) return c; /* deep chains: read where they are */
  ir_value *opnds[8];
  SU_ASSERT(op->noperands <= 8);
  s->depth++;
  /* its operands as they are, not on one step: a value CSE shares between the K index and
   * another axis of the same length (arange(0, BN) with BN = KP) is traced, but here it is
   * read whole */
  for (int i = 0; i < op->noperands; i++) opnds[i] = invariant(s, op->operands[i]);
  s->depth--;
  ir_op *n = ir_op_new(s->m, op->opc, op->loc, op->noperands, opnds, 1, &v->type);
  ir_op_copy_attrs(n, op);
  ir_block_insert_before(s->in.block, n, s->in.before);
  n->results[0]->name = v->name;
  ir_vmap_put(s->copies, v, n->results[0]);
  return n->results[0];
}

static ir_value *rebuild(kl *s, ir_value *v) {
  traced *t = find(s, v);
  if (!t) return invariant(s, v);
  if (t->nv) return t->nv;
  ir_op *op = v->def;
  ir_builder *b = &s->in;
  b->loc = op->loc;
  const ir_type *nt = step_type(s, v, t->kdim);
  ir_value *nv;
  if (op->opc == IR_ARANGE) {
    /* lanes start + k .. start + k + BK - 1 of arange(start, start + KP) */
    ir_op *ar = ir_build(b, IR_ARANGE, 0, NULL, 1, &nt);
    ar->attr = op->attr;
    ar->attr2 = op->attr + s->bk;
    ir_value *k = ir_build1(b, IR_SPLAT, nt, 1, &s->iv);
    nv = ir_binary(b, IR_ADD, k, ar->results[0]);
  } else {
    ir_value *opnds[8];
    SU_ASSERT(op->noperands <= 8);
    for (int i = 0; i < op->noperands; i++) {
      /* a broadcast that stretches K from 1 reads its operand whole: that operand may be
       * traced all the same, along another axis, when CSE shares it with the other
       * operand's K index (kk[None, :] of a and rn[None, :] of b, rn = arange(0, KP)) */
      ir_value *o = op->operands[i];
      bool whole = op->opc == IR_BROADCAST && o->type->shape[t->kdim] == 1;
      opnds[i] = whole ? invariant(s, o) : rebuild(s, o);
    }
    ir_op *c = ir_op_new(s->m, op->opc, op->loc, op->noperands, opnds, 1, &nt);
    ir_op_copy_attrs(c, op);
    ir_block_insert_before(b->block, c, b->before);
    nv = c->results[0];
  }
  nv->name = v->name;
  t->nv = nv;
  return nv;
}

/* Whether v, along its axis d, is arange(0, KP)'s index: through broadcast and expand_dims
 * of the K axis only. */
static bool is_k_index(const kl *s, const ir_value *v) {
  const ir_op *op = v->def;
  for (int n = 0; op && n < 16; n++, op = op->operands[0]->def) {
    if (op->opc == IR_ARANGE) return op->attr == 0;
    if (op->opc != IR_BROADCAST && op->opc != IR_EXPAND_DIMS) return false;
    if (!find(s, op->operands[0])) return false;
  }
  return false;
}

/* The scalar B of a conjunct `kk < B` (or `B > kk`) of mask m, i32; NULL when none. */
static ir_value *mask_bound(const kl *s, const ir_value *m, int depth) {
  const ir_op *op = m->def;
  if (!op || depth > 16) return NULL;
  if (op->opc == IR_AND) {
    ir_value *b = mask_bound(s, op->operands[0], depth + 1);
    return b ? b : mask_bound(s, op->operands[1], depth + 1);
  }
  if (op->opc == IR_BROADCAST) return mask_bound(s, op->operands[0], depth + 1);
  if (op->opc != IR_CMP || (op->attr != IR_CMP_LT && op->attr != IR_CMP_GT)) return NULL;
  const ir_value *x = op->operands[op->attr == IR_CMP_GT], *y = op->operands[op->attr == IR_CMP_LT];
  if (ir_type_elem(x->type)->dtype != TK_I32 || !is_k_index(s, x)) return NULL;
  if (!y->def || y->def->opc != IR_SPLAT) return NULL;
  return y->def->operands[0];
}

/* Why the two loads of dot cannot move to it, or NULL when they can. */
static const char *movable(kl *s, ir_op *dot) {
  ir_op *ld[2] = {dot->operands[0]->def, dot->operands[1]->def};
  for (int i = 0; i < 2; i++) {
    if (!ld[i] || ld[i]->opc != IR_LOAD) return i ? "its b is not a load" : "its a is not a load";
    if (ld[i]->parent != dot->parent) return "a load of its operands is in another block";
    if (pass_count_uses(s->f->body, ld[i]->results[0]) != 1) return "a load of its operands has other users";
  }
  int seen = 0;
  for (ir_op *op = dot->parent->first; op != dot; op = op->next) {
    if (op == ld[0] || op == ld[1]) {
      seen++;
      continue;
    }
    if (seen && (op->nregions || !(ir_op_info(op->opc)->traits & IR_PURE)) && op->opc != IR_LOAD)
      return "an op with effects lies between its loads and it";
  }
  return NULL;
}

static void remark(kl *s, const ir_op *at, const char *why) {
  pass_remark_missed(s->m, "kloop", at->loc, "dot over K = %d left whole (not cut into steps of %d): %s",
                     s->kp, s->bk, why);
}

/* Rewrites dot when it matches; true when it did. */
static bool try_dot(ir_module *m, ir_func *f, ir_op *dot) {
  ir_value *a = dot->operands[0], *b = dot->operands[1], *acc = dot->operands[2];
  if (a->type->kind != IR_TILE || a->type->rank != 2) return false;
  kl s;
  memset(&s, 0, sizeof s);
  s.m = m;
  s.f = f;
  s.kp = a->type->shape[1];
  s.bk = step_for(a->type->dtype);
  if (s.kp <= s.bk) return false;
  if (s.kp % s.bk) {
    remark(&s, dot, "K is not a multiple of the step");
    return false;
  }
  const char *why = movable(&s, dot);
  if (why) {
    remark(&s, dot, why);
    return false;
  }
  if (!trace_load(&s, a->def, 1) || !trace_load(&s, b->def, 0)) {
    remark(&s, s.why_op ? s.why_op : dot, s.why);
    return false;
  }
  ir_value *ba = a->def->noperands >= 2 ? mask_bound(&s, a->def->operands[1], 0) : NULL;
  ir_value *bb = b->def->noperands >= 2 ? mask_bound(&s, b->def->operands[1], 0) : NULL;

  ir_builder at = {m, dot->parent, dot, dot->loc};
  const ir_type *i32 = ir_type_scalar(m, TK_I32);
  ir_value *lb = ir_const_int(&at, i32, 0);
  ir_value *kp = ir_const_int(&at, i32, s.kp);
  ir_value *ub = kp;
  if (ba && bb) {
    ir_value *bound = ba == bb ? ba : ir_binary(&at, IR_MIN, ba, bb);
    ub = ir_binary(&at, IR_MIN, bound, kp);
  }
  ir_value *step = ir_const_int(&at, i32, s.bk);
  /* f16/bf16 accumulators are carried in f32 and rounded once: the dot's definition */
  tk_dtype ad = acc->type->dtype;
  bool narrow = ad == TK_F16 || ad == TK_BF16;
  const ir_type *ct = narrow ? ir_type_like(m, acc->type, ir_type_scalar(m, TK_F32)) : acc->type;
  ir_value *init = narrow ? ir_build1(&at, IR_CAST, ct, 1, &acc) : acc;
  ir_op *loop = ir_build_for(&at, lb, ub, step, 1, &init);
  ir_block *body = loop->regions[0];
  s.iv = body->args[0];
  s.iv->name = "k";
  body->args[1]->name = acc->name;
  s.in = (ir_builder){m, body, NULL, dot->loc};
  s.home = dot->parent;
  s.copies = ir_vmap_new(m->arena);
  ir_value *opnds[3] = {rebuild(&s, a), rebuild(&s, b), body->args[1]};
  s.in.loc = dot->loc;
  ir_op *nd = ir_build(&s.in, IR_DOT, 3, opnds, 1, &ct);
  ir_op_copy_attrs(nd, dot);
  nd->results[0]->name = dot->results[0]->name;
  ir_build(&s.in, IR_YIELD, 1, nd->results, 0, NULL);
  ir_value *r = loop->results[0];
  r->name = dot->results[0]->name;
  if (narrow) r = ir_build1(&at, IR_CAST, dot->results[0]->type, 1, &r);
  ir_replace_all_uses(f, dot->results[0], r);
  ir_op_erase(dot);
  ir_op_erase(a->def);
  ir_op_erase(b->def);
  return true;
}

/* The dots of blk and of the ifs in it, not those inside a for. */
static int collect(ir_block *blk, ir_op **out, int n, int cap) {
  for (ir_op *op = blk->first; op; op = op->next) {
    if (op->opc == IR_DOT && n < cap) out[n++] = op;
    if (op->opc == IR_IF)
      for (int r = 0; r < op->nregions; r++) n = collect(op->regions[r], out, n, cap);
  }
  return n;
}

bool pass_kloop(ir_module *m, ir_func *f) {
  ir_op *dots[64];
  int n = collect(f->body, dots, 0, 64);
  bool changed = false;
  for (int i = 0; i < n; i++) changed |= try_dot(m, f, dots[i]);
  return changed;
}
