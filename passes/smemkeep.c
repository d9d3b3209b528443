/* The shared-memory keep (GPU targets, right after tiling; docs/passes.md "Keep or
 * recompute"). fuse marks the chunk loops' clones of a wide load it keeps in shared
 * memory: `keep = [K, 0]` on the first loop's (the writer), `[K, 1]` on the later loops'
 * (the readers), all in loops `for c0 in range(0, N, C)` of one block. The recomputed
 * IR is what the interpreter runs; this pass makes it a keep:
 *
 *   %buf = smem_alloc : smem<N/C x chunk, #shared<swizzle=0, order=[...]>>  (kernel top)
 *   for c0: cp_async %buf, c0 / C, ptrs, mask      (a 1-D row in the kernel's body:
 *   cp_async_commit; cp_async_wait 0                the whole share in flight at once)
 *   writer's loop:  %v = select mask, smem_load %buf, c0 / C, other
 *     (elsewhere:   %v = load ...;  smem_store %buf, c0 / C, %v)
 *   reader's loop:  %v' = smem_load %buf, c0' / C   (in the writer's layout; a
 *                   convert_layout to the reader's if tiling chose another; after the
 *                   cp_async fill, select mask', %v', other' too: the slot holds zeros
 *                   in the masked-off lanes, not the `other` a stored load put there)
 *
 * Exact: fuse only recomputes a load whose memory nothing writes in between, at the same
 * addresses and masks, so the reader's load would have read the writer's values (masked
 * lanes included, as `other`). No barrier: the slot is written and read back in the
 * writer's layout, so each thread reads exactly the elements it wrote itself (program
 * order suffices; a cp_async copies each thread's own elements, and its wait makes them
 * visible to that thread); a conversion to another layout goes through codegen's scratch
 * with its own barriers. A later iteration of an enclosing loop overwrites a slot only
 * after the same thread read it (that case keeps the synchronous store). The readers'
 * address arithmetic is left dead for canonicalize.
 *
 * A mark is dropped (the load stays a load) when the marks do not form that pattern, or
 * when the buffers would not fit the target's shared memory per block with room for the
 * scratch (fuse's cost model checked the same, smem.c would reject the kernel). */
#include "pass_util.h"

#include "../target/target.h"

#include <stdlib.h>

typedef struct {
  ir_op **loads;
  int n, cap;
} load_list;

static void collect(ir_op *op, void *ctx) {
  load_list *l = ctx;
  if (op->opc != IR_LOAD || op->nints != 2) return;
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    ir_op **p = realloc(l->loads, sizeof *p * (size_t)cap);
    SU_ASSERT(p);
    l->loads = p, l->cap = cap;
  }
  l->loads[l->n++] = op;
}

/* The chunk loop directly holding load op, `for c0 in range(0, N, C)` with constant
 * bounds: its step C and length N; NULL otherwise. */
static ir_op *chunk_loop(const ir_op *op, int64_t *n, int64_t *c) {
  ir_op *loop = op->parent->parent;
  if (!loop || loop->opc != IR_FOR || loop->attr) return NULL;
  for (int k = 0; k < 3; k++)
    if (!pass_is_const(loop->operands[k])) return NULL;
  if (pass_const_int(loop->operands[0]) != 0) return NULL;
  *n = pass_const_int(loop->operands[1]);
  *c = pass_const_int(loop->operands[2]);
  return *c > 0 && *n % *c == 0 ? loop : NULL;
}

/* c0 / C, the slot of the loop's chunk, at the top of its body. */
static ir_value *slot_of(ir_module *m, ir_op *loop, int64_t c) {
  ir_block *body = loop->regions[0];
  ir_builder b = {m, body, body->first, loop->loc};
  const ir_type *i32 = ir_type_scalar(m, TK_I32);
  ir_value *opnds[2] = {body->args[0], ir_const_int(&b, i32, c)};
  return ir_build1(&b, IR_DIV, i32, 2, opnds);
}

/* v, read back from a slot that cp_async filled for load ld, as ld would have read it:
 * cp_async's masked-off lanes are zero in the slot, where ld gives its `other`, so a
 * select on ld's own mask restores it (v in ld's layout; nothing when ld has no mask or
 * its `other` is +0 — or no `other`, undefined lanes — which the zeros already are). */
static ir_value *as_loaded(ir_module *m, const ir_op *ld, ir_value *v) {
  if (ld->noperands < 3 || pass_const_eq(ld->operands[2], 0)) return v;
  ir_builder b = {m, ld->parent, (ir_op *)ld, ld->loc};
  ir_value *sel[3] = {ld->operands[1], v, ld->operands[2]};
  return ir_build1(&b, IR_SELECT, v->type, 3, sel);
}

/* The writer's chunks copied into buf asynchronously, all of them before its loop: a
 * loop of cp_async over the same chunks (its addresses and masks recomputed there), one
 * group, waited for; the writer then reads its chunk back like a reader (masked-off
 * lanes, zero in the slot, become the load's `other`). Every copy is in flight at once
 * without holding a register, where the loads in the loop wait chunk by chunk. Each
 * thread reads back the elements it copied (the load's layout), so no barrier. */
static bool fill_async(ir_module *m, ir_func *f, ir_op *w, ir_op *wl, ir_value *buf, int64_t c) {
  if (wl->parent != f->body || w->results[0]->type->rank != 1) return false;
  ir_builder at = {m, wl->parent, wl, wl->loc};
  ir_op *fl = ir_build_for(&at, wl->operands[0], wl->operands[1], wl->operands[2], 0, NULL);
  ir_block *body = fl->regions[0];
  ir_vmap *map = ir_vmap_new(m->arena);
  ir_vmap_put(map, wl->regions[0]->args[0], body->args[0]);
  ir_builder in = {m, body, NULL, w->loc};
  ir_value *ptrs = pass_clone_slice(m, &in, wl->regions[0], w->operands[0], map);
  ir_value *mask = w->noperands > 1 ? pass_clone_slice(m, &in, wl->regions[0], w->operands[1], map) : NULL;
  if (!ptrs || (w->noperands > 1 && !mask)) {
    ir_op_erase(fl);
    return false;
  }
  ir_value *slot = slot_of(m, fl, c);
  ir_value *cp[4] = {buf, slot, ptrs, mask};
  ir_build(&in, IR_CP_ASYNC, mask ? 4 : 3, cp, 0, NULL);
  ir_build(&in, IR_YIELD, 0, NULL, 0, NULL);
  ir_build(&at, IR_CP_ASYNC_COMMIT, 0, NULL, 0, NULL);
  ir_build(&at, IR_CP_ASYNC_WAIT, 0, NULL, 0, NULL)->attr = 0;

  ir_builder rd = {m, w->parent, w, w->loc};
  ir_value *ld[2] = {buf, slot_of(m, wl, c)};
  ir_value *v = as_loaded(m, w, ir_build1(&rd, IR_SMEM_LOAD, w->results[0]->type, 2, ld));
  ir_replace_all_uses(f, w->results[0], v);
  ir_op_erase(w);
  return true;
}

/* Makes load group [first, first + n) of marks K (writer first) a keep; false when the
 * marks are not fuse's pattern or the buffer does not fit in *room bytes. */
static bool keep_one(ir_module *m, ir_func *f, ir_op **ls, int n, int64_t *room) {
  ir_op *w = NULL;
  for (int i = 0; i < n; i++)
    if (ls[i]->ints[1] == 0) {
      if (w) return false;
      w = ls[i];
    }
  if (!w || n < 2) return false;
  int64_t len, c;
  ir_op *wl = chunk_loop(w, &len, &c);
  if (!wl) return false;
  for (int i = 0; i < n; i++) {
    int64_t l2, c2;
    ir_op *rl = ls[i] == w ? wl : chunk_loop(ls[i], &l2, &c2);
    if (!rl || (ls[i] != w && (l2 != len || c2 != c || rl->parent != wl->parent))) return false;
    if (ls[i] != w && ls[i]->results[0]->type->shape[0] != w->results[0]->type->shape[0]) return false;
  }
  /* the writer's loop first in their block: it precedes every reader's */
  for (const ir_op *o = wl->parent->first; o && o != wl; o = o->next)
    for (int i = 0; i < n; i++)
      if (ls[i]->parent->parent == o) return false;

  const ir_type *t = w->results[0]->type;
  int rank = t->rank, shape[IR_MAX_RANK + 1];
  shape[0] = (int)(len / c);
  for (int k = 0; k < rank; k++) shape[k + 1] = t->shape[k];
  ir_layout sl = {0};
  sl.kind = IR_LAYOUT_SHARED;
  sl.rank = rank;
  for (int k = 0; k < rank; k++) sl.order[k] = rank - 1 - k; /* the last axis contiguous */
  const ir_type *bt = ir_type_smem(m, t->elem, rank + 1, shape, ir_layout_intern(m, &sl));
  int64_t bytes = ir_smem_buffer_bytes(bt);
  if (bytes > *room) return false;
  *room -= bytes;

  ir_builder top = {m, f->body, f->body->first, w->loc};
  ir_value *buf = ir_build1(&top, IR_SMEM_ALLOC, bt, 0, NULL);
  bool async = fill_async(m, f, w, wl, buf, c);
  if (!async) {
    ir_builder after = {m, w->parent, w->next, w->loc};
    ir_value *st[3] = {buf, slot_of(m, wl, c), w->results[0]};
    ir_build(&after, IR_SMEM_STORE, 3, st, 0, NULL);
  }
  for (int i = 0; i < n; i++) {
    ir_op *r = ls[i];
    if (r == w) continue;
    ir_builder at = {m, r->parent, r, r->loc};
    ir_value *ld[2] = {buf, slot_of(m, r->parent->parent, c)};
    ir_value *v = ir_build1(&at, IR_SMEM_LOAD, t, 2, ld);
    if (r->results[0]->type != t) v = ir_build1(&at, IR_CONVERT_LAYOUT, r->results[0]->type, 1, &v);
    /* filled by cp_async, the slot holds zeros where the writer's load had `other`: every
     * reader restores its load's (else softmax's sum adds exp(0 - max) for each -inf lane
     * of a ragged row) */
    if (async) v = as_loaded(m, r, v);
    ir_replace_all_uses(f, r->results[0], v);
    ir_op_erase(r);
  }
  if (!async) {
    w->ints = NULL; /* a plain load from here on */
    w->nints = 0;
  }
  return true;
}

bool pass_smemkeep(ir_module *m, ir_func *f) {
  load_list l = {0};
  ir_walk(f->body, collect, &l);
  bool changed = false;
  /* room for the chunk exchanges' scratch and the buffers' alignment (fusecost.c) */
  int64_t limit = tg_smem_program(m->arch, f->programs_per_sm), room = limit;
  for (int i = 0; i < l.n; i++) {
    const ir_type *t = l.loads[i]->results[0]->type;
    int64_t reserve = 1024 + 2 * ir_type_numel(t) * ir_dtype_bytes(t->dtype);
    if (room > limit - reserve) room = limit - reserve;
  }
  /* groups of one mark, in walk order (the writer is walked before its readers) */
  for (int i = 0; i < l.n; i++) {
    if (!l.loads[i] || l.loads[i]->nints != 2) continue;
    int k = l.loads[i]->ints[0], n = 0;
    ir_op **group = malloc(sizeof *group * (size_t)l.n);
    SU_ASSERT(group);
    for (int j = i; j < l.n; j++)
      if (l.loads[j] && l.loads[j]->ints[0] == k) group[n++] = l.loads[j], l.loads[j] = NULL;
    bool kept = keep_one(m, f, group, n, &room);
    changed |= kept;
    if (!kept) {
      for (int j = 0; j < n; j++) group[j]->ints = NULL, group[j]->nints = 0;
      if (n > 1)
        pass_remark_missed(m, "fuse", group[0]->loc, "kernel '%s': this load is recomputed, not "
                           "kept in shared memory (its chunks would not fit the shared memory "
                           "per block, or its loops are not fuse's chunk loops)", f->name);
    }
    free(group);
  }
  free(l.loads);
  return changed;
}
