/* Blocked layouts of 1-D tiles (Triton's sizePerThread=[vec], threadsPerWarp=[32],
 * warpsPerCTA=[W]). One vector width per tile size and kernel, so that every elementwise
 * op sees its operands distributed identically and never needs a layout conversion: the
 * width is 16 bytes of the narrowest element any load, store or atomic of that size moves
 * (a f16 load then a f32 store: 8 per thread, the store issues two 16-byte vectors). */
#include "cg.h"

enum { DEFAULT_VEC = 4 };

static int log2i(int64_t n) {
  int k = 0;
  while ((int64_t)1 << (k + 1) <= n) k++;
  return k;
}

static void note_access(ir_op *op, void *ctx) {
  cg_ctx *c = ctx;
  if (op->opc != IR_LOAD && op->opc != IR_STORE && op->opc != IR_ATOMIC &&
      op->opc != IR_ATOMIC_CAS)
    return;
  const ir_type *t = op->operands[0]->type;
  if (t->kind != IR_TILE || t->rank != 1) return;
  int bytes = ir_dtype_bytes(t->elem->elem->dtype);
  int vec = CG_VEC_BYTES / bytes;
  int k = log2i(t->shape[0]);
  if (vec > c->vec_for_log2[k]) c->vec_for_log2[k] = vec;
}

void cg_layout_choose(cg_ctx *c, const ir_func *f) {
  for (int k = 0; k < 32; k++) c->vec_for_log2[k] = 0;
  ir_walk(f->body, note_access, c);
}

cg_layout cg_layout_of(cg_ctx *c, const ir_type *t) {
  cg_layout l = {false, 1, 1, c->threads, 1};
  if (t->kind != IR_TILE) return l;
  SU_ASSERT(t->rank == 1);
  l.tile = true;
  l.numel = t->shape[0];
  int vec = c->vec_for_log2[log2i(l.numel)];
  if (t->layout && t->layout->kind == IR_LAYOUT_BLOCKED) vec = t->layout->size_per_thread[0];
  if (vec <= 0) vec = DEFAULT_VEC;
  /* Small tiles first spread over all threads, one element each (as Triton does), and
   * only then replicate. */
  int spread = l.numel / l.threads;
  if (vec > spread) vec = spread > 1 ? spread : 1;
  l.vec = vec;
  l.per = l.numel >= vec * l.threads ? l.numel / l.threads : vec;
  return l;
}

LLVMValueRef cg_layout_index(cg_ctx *c, const cg_layout *l, int j) {
  if (!l->tile) return cg_i32(c, 0);
  int span = l->vec * l->threads;
  int wrap = l->numel < span ? l->numel : span;
  LLVMValueRef base = LLVMBuildMul(c->b, c->tid, cg_i32(c, l->vec), "");
  base = LLVMBuildAnd(c->b, base, cg_i32(c, wrap - 1), "");
  int64_t off = (int64_t)(j / l->vec) * span + j % l->vec;
  return LLVMBuildAdd(c->b, base, cg_i32(c, off), "idx");
}

LLVMValueRef cg_layout_owner(cg_ctx *c, const cg_layout *l) {
  if (!l->tile || l->numel >= l->vec * l->threads) return NULL;
  LLVMValueRef first = LLVMBuildMul(c->b, c->tid, cg_i32(c, l->vec), "");
  return LLVMBuildICmp(c->b, LLVMIntULT, first, cg_i32(c, l->numel), "owner");
}
