/* A program run as a cluster of CTAs (ir_func.cluster, passes/clusterkeep.c): its rank,
 * the combination of a scalar over the cluster, and the PTX directive that requires the
 * cluster.
 *
 * cluster_reduce pushes rather than pulls: each op has, in every CTA, C slots and an
 * mbarrier (one exchange per op: the ops sit in the kernel's body, each runs once).
 * Thread 0 of every CTA arrives on its own barrier expecting C values' bytes; thread
 * r < C stores the CTA's value into slot `rank` of CTA r with st.async, which completes
 * those bytes on CTA r's barrier; every thread then waits on its own barrier (acquire,
 * cluster scope) and combines its C slots in rank order, so all CTAs hold the same bits.
 * st.async's completion carries the release, so no thread fences: a store followed by a
 * release arrive at cluster scope, the first form, cost a MEMBAR.ALL.GPU per exchange in
 * the SASS. Nothing ever reads another CTA's shared memory, so a CTA may exit as soon as
 * it has its last value: every write into it came before that (a pull protocol needs a
 * second cluster barrier after the reads, since a CTA must not exit under a partner's
 * read). The entry initializes the barriers, fences the initialization for the cluster
 * and arrives; the first exchange waits, so no peer stores into a barrier's phase before
 * it is initialized. */
#include "cg.h"

#include <string.h>

static void cluster_barrier(cg_ctx *c, const char *which) {
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.barrier.cluster.%s", which);
  cg_intrinsic(c, name, NULL, 0, NULL, 0);
}

/* The integer a value travels as: 32 bits, or 64 for a 64-bit one (16-bit floats travel
 * as the f32 they are combined in). */
static tk_dtype fold_type(tk_dtype dt) { return dt == TK_F16 || dt == TK_BF16 ? TK_F32 : dt; }
static LLVMTypeRef bits_type(cg_ctx *c, tk_dtype fold) {
  return LLVMIntTypeInContext(c->llc, ir_dtype_bits(fold) > 32 ? 64 : 32);
}

void cg_cluster_begin(cg_ctx *c) {
  const ir_func *f = c->f;
  c->cl_n = c->cl_next = 0;
  if (!f->cluster) return;
  for (const ir_op *op = f->body->first; op; op = op->next) c->cl_n += op->opc == IR_CLUSTER_REDUCE;
  c->cl_bar = SU_NEW_ARRAY(c->arena, LLVMValueRef, c->cl_n ? c->cl_n : 1);
  c->cl_slot = SU_NEW_ARRAY(c->arena, LLVMValueRef, c->cl_n ? c->cl_n : 1);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c->llc);
  LLVMBasicBlockRef join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_i32(c, 0), ""));
  int k = 0;
  for (const ir_op *op = f->body->first; op; op = op->next) {
    if (op->opc != IR_CLUSTER_REDUCE) continue;
    LLVMTypeRef st = LLVMArrayType2(bits_type(c, fold_type(op->operands[0]->type->dtype)), (unsigned)f->cluster);
    c->cl_slot[k] = LLVMAddGlobalInAddressSpace(c->mod, st, "tk_cluster_slot", CG_SHARED_AS);
    c->cl_bar[k] = LLVMAddGlobalInAddressSpace(c->mod, i64, "tk_cluster_bar", CG_SHARED_AS);
    for (int j = 0; j < 2; j++) {
      LLVMValueRef g = j ? c->cl_bar[k] : c->cl_slot[k];
      LLVMSetInitializer(g, LLVMGetUndef(j ? i64 : st));
      LLVMSetLinkage(g, LLVMInternalLinkage);
      LLVMSetAlignment(g, 8);
    }
    LLVMValueRef args[2] = {c->cl_bar[k], cg_i32(c, 1)}; /* the expecting arrive */
    cg_intrinsic(c, "llvm.nvvm.mbarrier.init.shared", NULL, 0, args, 2);
    k++;
  }
  cg_ptx_mbar_init_fence(c);
  cg_if_end(c, join);
  cluster_barrier(c, "arrive.relaxed");
}

void cg_cluster_end(cg_ctx *c) {
  if (c->f->cluster && c->cl_next == 0) cluster_barrier(c, "wait"); /* the entry's phase */
}

static void emit_reduce(cg_ctx *c, const ir_op *op) {
  const ir_value *x = op->operands[0];
  tk_dtype dt = x->type->dtype;
  LLVMValueRef v = cg_get(c, x).v[0];
  if (!c->f->cluster) { /* one CTA: its value is the cluster's */
    LLVMValueRef *s = cg_slots(c, 1);
    s[0] = v;
    cg_set(c, op->results[0], s, 1);
    return;
  }
  SU_ASSERT(op->parent == c->f->body && c->cl_next < c->cl_n); /* verify_gpu: in the body */
  int k = c->cl_next++;
  if (k == 0) cluster_barrier(c, "wait"); /* every peer's barriers are initialized */
  tk_dtype fold = fold_type(dt);
  LLVMTypeRef bt = bits_type(c, fold);
  int bytes = LLVMGetIntTypeWidth(bt) / 8;
  LLVMValueRef w = cg_convert(c, v, dt, fold);
  LLVMValueRef bits = LLVMBuildBitCast(c->b, w, LLVMIntTypeInContext(c->llc, (unsigned)ir_dtype_bits(fold)), "");
  if (ir_dtype_bits(fold) < 32) bits = LLVMBuildZExt(c->b, bits, bt, "");
  LLVMValueRef slots = cg_shared_addr(c, c->cl_slot[k]), bar = cg_shared_addr(c, c->cl_bar[k]);
  LLVMValueRef rank = cg_intrinsic(c, "llvm.nvvm.read.ptx.sreg.cluster.ctarank", NULL, 0, NULL, 0);
  /* thread 0 expects the C values; a value may land before that (the transaction count
   * goes below zero, and the phase cannot complete before the arrive) */
  LLVMBasicBlockRef join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_i32(c, 0), ""));
  cg_ptx_mbar_expect(c, bar, c->f->cluster * bytes);
  cg_if_end(c, join);
  /* thread r sends to CTA r */
  join = cg_if_begin(c, LLVMBuildICmp(c->b, LLVMIntULT, c->tid, cg_i32(c, c->f->cluster), ""));
  LLVMValueRef mine = LLVMBuildAdd(c->b, slots, LLVMBuildMul(c->b, rank, cg_i32(c, bytes), ""), "");
  cg_ptx_st_async(c, cg_ptx_mapa_shared(c, mine, c->tid), bits, cg_ptx_mapa_shared(c, bar, c->tid));
  cg_if_end(c, join);
  LLVMBasicBlockRef loop = cg_block(c, "cluster.wait"), done = cg_block(c, "cluster.done");
  LLVMBuildBr(c->b, loop);
  LLVMPositionBuilderAtEnd(c->b, loop);
  LLVMValueRef ok = cg_ptx_mbar_try_wait_cluster(c, bar, cg_i32(c, 0));
  LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntNE, ok, cg_i32(c, 0), ""), done, loop);
  LLVMPositionBuilderAtEnd(c->b, done);
  LLVMTypeRef st = LLVMGlobalGetValueType(c->cl_slot[k]);
  LLVMValueRef acc = NULL;
  for (int r = 0; r < c->f->cluster; r++) {
    LLVMValueRef idx[2] = {cg_i32(c, 0), cg_i32(c, r)};
    LLVMValueRef p = LLVMBuildInBoundsGEP2(c->b, st, c->cl_slot[k], idx, 2, "");
    LLVMValueRef y = LLVMBuildLoad2(c->b, bt, p, "");
    if (ir_dtype_bits(fold) < 32) y = LLVMBuildTrunc(c->b, y, LLVMIntTypeInContext(c->llc, (unsigned)ir_dtype_bits(fold)), "");
    y = LLVMBuildBitCast(c->b, y, LLVMTypeOf(w), "");
    acc = r ? cg_combine(c, (ir_reduce_kind)op->attr, fold, acc, y) : y;
  }
  LLVMValueRef *s = cg_slots(c, 1);
  s[0] = cg_convert(c, acc, fold, dt);
  cg_set(c, op->results[0], s, 1);
}

void cg_emit_cluster(cg_ctx *c, const ir_op *op) {
  if (op->opc == IR_CLUSTER_REDUCE) {
    emit_reduce(c, op);
    return;
  }
  LLVMValueRef *s = cg_slots(c, 1);
  s[0] = c->f->cluster ? cg_intrinsic(c, "llvm.nvvm.read.ptx.sreg.cluster.ctarank", NULL, 0, NULL, 0)
                       : cg_i32(c, 0);
  cg_set(c, op->results[0], s, 1);
}

void cg_ptx_cluster_dims(su_buf *out, const char *ptx, const ir_module *m, int lo, int hi) {
  const char *p = ptx;
  for (int i = lo; i < hi; i++) {
    const ir_func *f = m->funcs[i];
    if (!f->cluster) continue;
    char head[300];
    snprintf(head, sizeof head, ".entry %s(", f->name);
    const char *e = strstr(p, head);
    const char *brace = e ? strstr(e, "\n{") : NULL;
    SU_ASSERT(brace); /* LLVM wrote the kernel: its entry and its body */
    su_buf_put(out, p, (size_t)(brace + 1 - p));
    /* LLVM 19 has no annotation for it (cluster_dim_x arrives in LLVM 20) */
    su_buf_printf(out, ".explicitcluster\n.reqnctapercluster %d, 1, 1\n", f->cluster);
    p = brace + 1;
  }
  su_buf_puts(out, p);
}
