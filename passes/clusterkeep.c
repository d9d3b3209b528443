/* The cluster keep (sm_90 targets, right after tiling; docs/passes.md "Keep or
 * recompute"). fuse marks every chunk loop of a kernel it splits over a cluster of C
 * CTAs with `{cluster = [C, n]}` (n: how many loops it marked) and the loads they share
 * with the shared-memory keep's marks; the IR is the recomputed kernel, what the
 * interpreter runs. This pass makes each program a cluster:
 *
 *   %r = cluster_rank                      (kernel top)
 *   for c0 in range(0, N / C, step)        each loop runs its CTA's share:
 *     c0' = c0 + %r * (N / C)              the lanes' positions, masks and addresses
 *   %p = reduce ... (the loop's result)     the CTA's partial
 *   %t = cluster_reduce %p                  combined over the cluster, in rank order
 *
 * and sets the kernel's cluster(C): codegen reads program_id(0) as the cluster's index,
 * launches C CTAs per program (the ABI line) and requires the cluster in the PTX. The
 * shared-memory keep (smemkeep, next) then keeps each CTA's share in its own shared
 * memory: the row is read from HBM once, and only the scalars cross the cluster.
 *
 * Exact as far as the recomputed kernel is: each lane is computed by one CTA at the
 * positions it had, a max or min combines to the same value, and a sum is reassociated
 * (the GPU's reductions are: docs/language.md). Every CTA computes each combined scalar
 * alike, so what the kernel does with them outside the loops (a scalar store) has the
 * same value in each.
 *
 * Split all or nothing: a CTA that ran one loop whole would add its full sum to its
 * partners'. When the marks are not fuse's pattern (a loop lost its mark, a loop's result
 * feeds something other than a reduction to a scalar, the target has no clusters), the
 * marks are dropped and the kernel runs unsplit, one CTA a program, which is correct. */
#include "pass_util.h"

#include "../target/target.h"

typedef struct {
  ir_op *loops[64];
  int n;
  bool bad; /* a mark that is not on a loop of the body, or more than the array holds */
} marks;

static void collect(ir_op *op, void *ctx) {
  marks *k = ctx;
  if (op->opc != IR_FOR || !op->ints) return;
  if (k->n == 64) k->bad = true;
  else k->loops[k->n++] = op;
}

static bool is_loop_result(const marks *k, const ir_value *v) {
  for (int i = 0; i < k->n; i++)
    if (v->def == k->loops[i]) return true;
  return false;
}

typedef struct {
  const marks *k;
  bool ok;
} use_check;

/* Every use of a marked loop's results is a reduction of the whole (1-D) tile to a
 * scalar, directly or through one layout conversion. */
static void check_use(ir_op *op, void *ctx) {
  use_check *u = ctx;
  for (int i = 0; i < op->noperands; i++) {
    const ir_value *v = op->operands[i];
    if (!is_loop_result(u->k, v) && !(v->def && v->def->opc == IR_CONVERT_LAYOUT &&
                                       is_loop_result(u->k, v->def->operands[0])))
      continue;
    if (op->opc == IR_CONVERT_LAYOUT && is_loop_result(u->k, v)) continue;
    if (op->opc != IR_REDUCE || op->results[0]->type->kind != IR_SCALAR) u->ok = false;
  }
}

typedef struct {
  const marks *k;
  ir_op *reds[256];
  int n;
  bool full;
} red_find;

static void find_reduce(ir_op *op, void *ctx) {
  red_find *r = ctx;
  if (op->opc != IR_REDUCE) return;
  const ir_value *v = op->operands[0];
  if (!is_loop_result(r->k, v) && !(v->def && v->def->opc == IR_CONVERT_LAYOUT &&
                                     is_loop_result(r->k, v->def->operands[0])))
    return;
  if (r->n == 256) r->full = true;
  else r->reds[r->n++] = op;
}

static void drop(marks *k) {
  for (int i = 0; i < k->n; i++) k->loops[i]->ints = NULL, k->loops[i]->nints = 0;
}

/* Whether the marks are fuse's: C and n agree on every loop, there are n, all in the
 * kernel's body with constant bounds (0, N, step), one N, C * step dividing it. */
static bool pattern(ir_module *m, const ir_func *f, const marks *k, int64_t *len) {
  if (k->bad || k->n == 0) return false;
  int c = k->loops[0]->ints[0];
  if (k->loops[0]->ints[1] != k->n) return false;
  for (int i = 0; i < k->n; i++) {
    const ir_op *l = k->loops[i];
    if (l->ints[0] != c || l->ints[1] != k->n || l->parent != f->body || l->attr ||
        l->regions[0]->args[0]->type != ir_type_scalar(m, TK_I32))
      return false;
    for (int j = 0; j < 3; j++)
      if (!pass_is_const(l->operands[j])) return false;
    int64_t lb = pass_const_int(l->operands[0]), ub = pass_const_int(l->operands[1]);
    int64_t step = pass_const_int(l->operands[2]);
    if (lb != 0 || step <= 0 || ub % (c * step) || (i && ub != *len)) return false;
    *len = ub;
  }
  return true;
}

bool pass_clusterkeep(ir_module *m, ir_func *f) {
  marks k = {0};
  ir_walk(f->body, collect, &k);
  if (k.n == 0) return false;
  int64_t len = 0;
  use_check u = {&k, true};
  ir_walk(f->body, check_use, &u);
  red_find r = {&k, {0}, 0, false};
  ir_walk(f->body, find_reduce, &r);
  bool sized = tg_has(m->arch, TG_CLUSTERS) && (k.loops[0]->ints[0] <= 8 || tg_has(m->arch, TG_CLUSTER16));
  if (!sized || f->cluster || !pattern(m, f, &k, &len) || !u.ok || r.full) {
    pass_remark_missed(m, "fuse", k.loops[0]->loc, "kernel '%s': its loops are not split over a "
                       "cluster (no clusters of that size on this target, or they are no longer fuse's chunk "
                       "loops); each program runs as one CTA", f->name);
    drop(&k);
    return true;
  }
  int c = k.loops[0]->ints[0];
  const ir_type *i32 = ir_type_scalar(m, TK_I32);
  ir_builder top = {m, f->body, f->body->first, f->loc};
  ir_value *rank = ir_build1(&top, IR_CLUSTER_RANK, i32, 0, NULL);
  ir_value *base = ir_binary(&top, IR_MUL, rank, ir_const_int(&top, i32, len / c));
  for (int i = 0; i < k.n; i++) {
    ir_op *l = k.loops[i];
    ir_builder at = {m, f->body, l, l->loc};
    l->operands[1] = ir_const_int(&at, l->operands[1]->type, len / c);
    ir_block *body = l->regions[0];
    ir_value *iv = body->args[0];
    ir_builder in = {m, body, body->first, l->loc};
    ir_value *pos = ir_binary(&in, IR_ADD, iv, base);
    ir_replace_all_uses(f, iv, pos);
    pos->def->operands[0] = iv; /* the one use of the old variable left */
    l->ints = NULL;
    l->nints = 0;
  }
  for (int i = 0; i < r.n; i++) {
    ir_op *red = r.reds[i];
    ir_builder after = {m, red->parent, red->next, red->loc};
    ir_value *part = red->results[0];
    ir_value *all = ir_build1(&after, IR_CLUSTER_REDUCE, part->type, 1, &part);
    all->def->attr = red->attr;
    ir_replace_all_uses(f, part, all);
    all->def->operands[0] = part;
  }
  f->cluster = c;
  return true;
}
