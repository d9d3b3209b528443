/* Warp specialization and persistence (sm_90a): warp_spec splits the CTA into the
 * kernel's warps (region 0, with its own named barrier so that the producers never wait on
 * it) and a producer warpgroup, of which one thread runs region 1. setmaxnreg moves
 * registers from the producers to the consumers; it takes effect because the kernel is
 * compiled for one CTA per SM (the `minctasm` annotation, emit_kernel.c). grid_size reads
 * the launched grid, a persistent kernel's hidden arguments. */
#include "cg.h"

void cg_emit_warp_spec(cg_ctx *c, const ir_op *op) {
  int consumers = c->threads;
  LLVMValueRef is_cons = LLVMBuildICmp(c->b, LLVMIntULT, c->tid, cg_i32(c, consumers), "");
  LLVMBasicBlockRef cons = cg_block(c, "ws.consumer"), prod = cg_block(c, "ws.producer");
  LLVMBasicBlockRef join = cg_block(c, "ws.join");
  LLVMBuildCondBr(c->b, is_cons, cons, prod);

  LLVMPositionBuilderAtEnd(c->b, cons);
  cg_ptx_setmaxnreg(c, true, op->ints[0]);
  int bar_id = c->bar_id, bar_threads = c->bar_threads;
  c->bar_id = 1;
  c->bar_threads = consumers;
  int smem_before = c->smem_uses;
  cg_emit_block(c, op->regions[0]);
  cg_smem_region_end(c, smem_before);
  c->bar_id = bar_id;
  c->bar_threads = bar_threads;
  if (c->failed) return;
  LLVMBuildBr(c->b, join);

  LLVMPositionBuilderAtEnd(c->b, prod);
  cg_ptx_setmaxnreg(c, false, op->ints[1]);
  LLVMValueRef first = LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, cg_i32(c, consumers), "");
  LLVMBasicBlockRef one = cg_block(c, "ws.producer.thread");
  LLVMBuildCondBr(c->b, first, one, join);
  LLVMPositionBuilderAtEnd(c->b, one);
  c->single_thread = true;
  cg_emit_block(c, op->regions[1]);
  c->single_thread = false;
  if (c->failed) return;
  LLVMBuildBr(c->b, join);
  LLVMPositionBuilderAtEnd(c->b, join);
}
