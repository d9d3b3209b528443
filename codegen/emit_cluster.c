/* A program run as a cluster of CTAs (ir_func.cluster, passes/clusterkeep.c): its rank,
 * the combination of a scalar over the cluster, the barrier protocol that keeps each
 * CTA's shared memory alive while its partners read it, and the PTX directive that
 * requires the cluster.
 *
 * cluster_reduce: every CTA writes its value to a shared slot of its own (one per op, so
 * no later op of the kernel reuses it), the cluster meets at a barrier (arrive.release /
 * wait.acquire: the writes are visible), and every thread reads the C slots through
 * their cluster addresses (mapa; a generic load reaches another CTA's shared memory) and
 * combines them in rank order, so all CTAs hold the same bits. Then it arrives again
 * (release: after its reads), without waiting: the next cluster_reduce (or the kernel's end) waits for that
 * phase, which completes when every CTA has finished reading, before its slot may be
 * written again or the CTA may exit (a CTA's shared memory must outlive its partners'
 * reads). The kernel's entry arrives once so that the first op's wait has a phase to
 * close; the first remote read comes after a full barrier, so every CTA of the cluster
 * has started by then. */
#include "cg.h"

#include <string.h>

static void cluster_barrier(cg_ctx *c, const char *which) {
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.barrier.cluster.%s", which);
  cg_intrinsic(c, name, NULL, 0, NULL, 0);
}

void cg_cluster_begin(cg_ctx *c) {
  if (c->f->cluster) cluster_barrier(c, "arrive.relaxed");
}

void cg_cluster_end(cg_ctx *c) {
  if (c->f->cluster) cluster_barrier(c, "wait");
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
  LLVMTypeRef t = LLVMTypeOf(v);
  LLVMValueRef slot = LLVMAddGlobalInAddressSpace(c->mod, t, "tk_cluster_slot", CG_SHARED_AS);
  LLVMSetInitializer(slot, LLVMGetUndef(t));
  LLVMSetLinkage(slot, LLVMInternalLinkage);
  LLVMSetAlignment(slot, 8);
  cluster_barrier(c, "wait"); /* every partner has read this slot's last value */
  LLVMBuildStore(c->b, v, slot); /* every thread writes the same value */
  cluster_barrier(c, "arrive");
  cluster_barrier(c, "wait");
  LLVMValueRef generic = LLVMBuildAddrSpaceCast(c->b, slot, LLVMPointerTypeInContext(c->llc, 0), "");
  /* 16-bit floats combine in f32, as a CTA's reduction folds them */
  tk_dtype fold = dt == TK_F16 || dt == TK_BF16 ? TK_F32 : dt;
  LLVMValueRef acc = NULL;
  for (int r = 0; r < c->f->cluster; r++) {
    LLVMValueRef args[2] = {generic, cg_i32(c, r)};
    LLVMValueRef p = cg_intrinsic(c, "llvm.nvvm.mapa", NULL, 0, args, 2);
    LLVMValueRef y = cg_convert(c, LLVMBuildLoad2(c->b, t, p, ""), dt, fold);
    acc = r ? cg_combine(c, (ir_reduce_kind)op->attr, fold, acc, y) : y;
  }
  /* release: the remote reads complete before a partner may pass its wait and exit (a
   * relaxed arrive let ptxas signal with the loads in flight: the H200 faulted when a
   * partner's shared memory went away under them, in launches of short CTAs) */
  cluster_barrier(c, "arrive");
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
