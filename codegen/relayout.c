/* Moving a tile's elements between layouts and shapes: convert_layout, broadcast,
 * expand_dims, reshape and trans are all "result element i is operand element map(i)".
 * When every thread already holds, in one fixed slot for all threads, the operand element
 * each of its result slots needs (a slice expanded back into its parent, a broadcast along
 * a dim the layout replicates, a trans of a permuted layout), the result is those slots:
 * no instruction at all. This is decided on the host by evaluating both layouts for every
 * thread. Otherwise the operand goes through shared memory: stored by logical index, a
 * barrier, loaded by the result's logical index. */
#include "cg.h"

/* Operand coordinate s is the result coordinate from[s], or 0 when from[s] < 0; linear
 * maps linear index to linear index (reshape, convert). */
typedef struct {
  bool linear;
  int srank;
  int sshape[IR_MAX_RANK];
  int from[IR_MAX_RANK];
  int off[IR_MAX_RANK]; /* added to the operand coordinate (slice) */
} index_map;

static int64_t map_at(const index_map *m, const cg_layout *to, int t, int j) {
  if (m->linear) return cg_layout_elem_at(to, t, j, NULL);
  int64_t idx = 0;
  for (int s = 0; s < m->srank; s++) {
    int x = (m->from[s] < 0 ? 0 : cg_layout_coord_at(to, t, j, m->from[s], NULL)) + m->off[s];
    idx = idx * m->sshape[s] + x;
  }
  return idx;
}

static LLVMValueRef map_value(cg_ctx *c, const index_map *m, const cg_layout *to, int j) {
  if (m->linear) return cg_layout_index(c, to, j);
  LLVMValueRef idx = cg_i32(c, 0);
  for (int s = 0; s < m->srank; s++) {
    idx = LLVMBuildMul(c->b, idx, cg_i32(c, m->sshape[s]), "");
    if (m->from[s] >= 0) idx = LLVMBuildAdd(c->b, idx, cg_layout_coord(c, to, j, m->from[s]), "");
    if (m->off[s]) idx = LLVMBuildAdd(c->b, idx, cg_i32(c, m->off[s]), "");
  }
  return idx;
}

/* Fills slot[j] with the operand slot holding what result slot j needs, the same for
 * every thread; false when some thread lacks an element. */
static bool in_registers(cg_ctx *c, const cg_layout *from, const cg_layout *to,
                         const index_map *m, int *slot) {
  int *at = SU_NEW_ARRAY(c->arena, int, from->numel);
  for (int i = 0; i < from->numel; i++) at[i] = -1;
  for (int j = from->per - 1; j >= 0; j--) at[cg_layout_elem_at(from, 0, j, NULL)] = j;
  for (int j = 0; j < to->per; j++)
    if ((slot[j] = at[map_at(m, to, 0, j)]) < 0) return false;
  for (int t = 1; t < to->threads; t++)
    for (int j = 0; j < to->per; j++)
      if (cg_layout_elem_at(from, t, slot[j], NULL) != map_at(m, to, t, j)) return false;
  return true;
}

LLVMValueRef cg_to_smem(cg_ctx *c, LLVMValueRef x) {
  if (LLVMTypeOf(x) != LLVMInt1TypeInContext(c->llc)) return x;
  return LLVMBuildZExt(c->b, x, LLVMInt8TypeInContext(c->llc), "");
}

LLVMValueRef cg_from_smem(cg_ctx *c, LLVMValueRef x, LLVMTypeRef reg) {
  return LLVMTypeOf(x) == reg ? x : LLVMBuildTrunc(c->b, x, reg, "");
}

/* Every thread stores all its slots (a replica stores the same value as the owner, which
 * is harmless and cheaper than a branch), then loads what it needs. */
static cg_val through_smem(cg_ctx *c, cg_val x, const cg_layout *from, const cg_layout *to,
                           const index_map *m) {
  LLVMTypeRef reg = LLVMTypeOf(x.v[0]);
  LLVMTypeRef mt = LLVMTypeOf(cg_to_smem(c, x.v[0]));
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(c->mod);
  int bytes = (int)LLVMABISizeOfType(td, mt);
  LLVMValueRef base = cg_smem_take(c, from->numel * bytes);
  for (int j = 0; j < from->per; j++) {
    LLVMValueRef p = cg_smem_at(c, base, mt, cg_layout_index(c, from, j));
    LLVMSetAlignment(LLVMBuildStore(c->b, cg_to_smem(c, x.v[x.n == 1 ? 0 : j]), p), (unsigned)bytes);
  }
  cg_barrier(c);
  LLVMValueRef *out = cg_slots(c, to->per);
  for (int j = 0; j < to->per; j++) {
    LLVMValueRef p = cg_smem_at(c, base, mt, map_value(c, m, to, j));
    LLVMValueRef v = LLVMBuildLoad2(c->b, mt, p, "");
    LLVMSetAlignment(v, (unsigned)bytes);
    out[j] = cg_from_smem(c, v, reg);
  }
  return (cg_val){out, to->per};
}

cg_val cg_from_owners(cg_ctx *c, cg_val x, const cg_layout *l) {
  LLVMValueRef *own = cg_slots(c, l->per);
  bool any = false;
  for (int j = 0; j < l->per; j++) any |= (own[j] = cg_layout_owner(c, l, j, -1)) != NULL;
  if (!any) return x;
  LLVMTypeRef reg = LLVMTypeOf(x.v[0]);
  LLVMTypeRef mt = LLVMTypeOf(cg_to_smem(c, x.v[0]));
  int bytes = (int)LLVMABISizeOfType(LLVMGetModuleDataLayout(c->mod), mt);
  LLVMValueRef base = cg_smem_take(c, l->numel * bytes);
  for (int j = 0; j < l->per; j++) {
    LLVMBasicBlockRef put = NULL, join = NULL;
    if (own[j]) {
      put = cg_block(c, "own.put");
      join = cg_block(c, "own.join");
      LLVMBuildCondBr(c->b, own[j], put, join);
      LLVMPositionBuilderAtEnd(c->b, put);
    }
    LLVMValueRef p = cg_smem_at(c, base, mt, cg_layout_index(c, l, j));
    LLVMSetAlignment(LLVMBuildStore(c->b, cg_to_smem(c, x.v[x.n == 1 ? 0 : j]), p), (unsigned)bytes);
    if (own[j]) {
      LLVMBuildBr(c->b, join);
      LLVMPositionBuilderAtEnd(c->b, join);
    }
  }
  cg_barrier(c);
  LLVMValueRef *out = cg_slots(c, l->per);
  for (int j = 0; j < l->per; j++) {
    LLVMValueRef v = LLVMBuildLoad2(c->b, mt, cg_smem_at(c, base, mt, cg_layout_index(c, l, j)), "");
    LLVMSetAlignment(v, (unsigned)bytes);
    out[j] = cg_from_smem(c, v, reg);
  }
  return (cg_val){out, l->per};
}

static cg_val move(cg_ctx *c, cg_val x, const cg_layout *from, const cg_layout *to,
                   const index_map *m) {
  int *slot = SU_NEW_ARRAY(c->arena, int, to->per);
  if (!in_registers(c, from, to, m, slot)) return through_smem(c, x, from, to, m);
  LLVMValueRef *out = cg_slots(c, to->per);
  for (int j = 0; j < to->per; j++) out[j] = x.v[x.n == 1 ? 0 : slot[j]];
  return (cg_val){out, to->per};
}

cg_val cg_relayout(cg_ctx *c, cg_val x, const cg_layout *from, const cg_layout *to) {
  if (!from->tile || (x.n == to->per && cg_layout_same(from, to))) return x;
  index_map m = {.linear = true};
  return move(c, x, from, to, &m);
}

cg_val cg_get_in(cg_ctx *c, const ir_value *v, const cg_layout *to) {
  cg_layout from = cg_layout_of(c, v->type);
  return cg_relayout(c, cg_get(c, v), &from, to);
}

void cg_emit_gather(cg_ctx *c, const ir_op *op) {
  const ir_value *src = op->operands[0], *res = op->results[0];
  const ir_type *st = src->type;
  cg_layout from = cg_layout_of(c, st), to = cg_layout_of(c, res->type);
  cg_val x = cg_get(c, src), ix = cg_get_in(c, op->operands[1], &to);
  LLVMTypeRef reg = LLVMTypeOf(x.v[0]);
  LLVMTypeRef mt = LLVMTypeOf(cg_to_smem(c, x.v[0]));
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(c->mod);
  int bytes = (int)LLVMABISizeOfType(td, mt);
  LLVMValueRef base = cg_smem_take(c, from.numel * bytes);
  for (int j = 0; j < from.per; j++) {
    LLVMValueRef p = cg_smem_at(c, base, mt, cg_layout_index(c, &from, j));
    LLVMSetAlignment(LLVMBuildStore(c->b, cg_to_smem(c, x.v[x.n == 1 ? 0 : j]), p), (unsigned)bytes);
  }
  cg_barrier(c);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c->llc);
  LLVMValueRef *out = cg_slots(c, to.per);
  for (int j = 0; j < to.per; j++) {
    LLVMValueRef k = ix.v[ix.n == 1 ? 0 : j];
    k = LLVMBuildIntCast2(c->b, k, i32, ir_dtype_is_signed(op->operands[1]->type->dtype), "");
    LLVMValueRef at = cg_i32(c, 0);
    for (int d = 0; d < st->rank; d++) {
      at = LLVMBuildMul(c->b, at, cg_i32(c, st->shape[d]), "");
      at = LLVMBuildAdd(c->b, at, d == op->attr2 ? k : cg_layout_coord(c, &to, j, d), "");
    }
    LLVMValueRef v = LLVMBuildLoad2(c->b, mt, cg_smem_at(c, base, mt, at), "");
    LLVMSetAlignment(v, (unsigned)bytes);
    out[j] = cg_from_smem(c, v, reg);
  }
  cg_set(c, res, out, to.per);
}

void cg_emit_join(cg_ctx *c, const ir_op *op) {
  const ir_value *res = op->results[0];
  cg_layout to = cg_layout_of(c, res->type);
  cg_val x = cg_get(c, op->operands[0]);
  LLVMTypeRef reg = LLVMTypeOf(x.v[0]);
  LLVMTypeRef mt = LLVMTypeOf(cg_to_smem(c, x.v[0]));
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(c->mod);
  int bytes = (int)LLVMABISizeOfType(td, mt);
  LLVMValueRef base = cg_smem_take(c, to.numel * bytes);
  for (int k = 0; k < 2; k++) {
    cg_layout from = cg_layout_of(c, op->operands[k]->type);
    cg_val v = k ? cg_get(c, op->operands[1]) : x;
    for (int j = 0; j < from.per; j++) {
      LLVMValueRef at = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, cg_layout_index(c, &from, j), cg_i32(c, 2), ""),
                                     cg_i32(c, k), "");
      LLVMValueRef p = cg_smem_at(c, base, mt, at);
      LLVMSetAlignment(LLVMBuildStore(c->b, cg_to_smem(c, v.v[v.n == 1 ? 0 : j]), p), (unsigned)bytes);
    }
  }
  cg_barrier(c);
  LLVMValueRef *out = cg_slots(c, to.per);
  for (int j = 0; j < to.per; j++) {
    LLVMValueRef p = cg_smem_at(c, base, mt, cg_layout_index(c, &to, j));
    LLVMValueRef v = LLVMBuildLoad2(c->b, mt, p, "");
    LLVMSetAlignment(v, (unsigned)bytes);
    out[j] = cg_from_smem(c, v, reg);
  }
  cg_set(c, res, out, to.per);
}

void cg_emit_shape_op(cg_ctx *c, const ir_op *op) {
  const ir_value *src = op->operands[0], *res = op->results[0];
  const ir_type *st = src->type, *rt = res->type;
  cg_layout from = cg_layout_of(c, st), to = cg_layout_of(c, rt);
  index_map m = {.linear = false, .srank = st->rank};
  for (int s = 0; s < st->rank; s++) m.sshape[s] = st->shape[s];
  switch (op->opc) {
  case IR_CONVERT_LAYOUT: case IR_RESHAPE: m.linear = true; break;
  case IR_BROADCAST:
    for (int s = 0; s < st->rank; s++) m.from[s] = st->shape[s] == rt->shape[s] ? s : -1;
    break;
  case IR_EXPAND_DIMS:
    for (int s = 0; s < st->rank; s++) m.from[s] = s < op->attr2 ? s : s + 1;
    break;
  case IR_TRANS:
    for (int i = 0; i < rt->rank; i++) m.from[op->ints[i]] = i;
    break;
  case IR_SLICE:
    for (int s = 0; s < st->rank; s++) m.from[s] = s, m.off[s] = op->ints[s];
    break;
  default: SU_UNREACHABLE();
  }
  cg_val r = move(c, cg_get(c, src), &from, &to, &m);
  cg_set(c, res, r.v, r.n);
}
