/* Native fp8 products on sm_90a (docs/passes.md). sema casts fp8 operands of a dot to f16
 * (exact: every fp8 value is an f16 one) so that every backend computes the f16 product.
 * Hopper's wgmma multiplies e4m3 and e5m2 directly (K = 32 a step, twice f16's rate, half
 * the bytes through the TMA ring), with the same exact products but summed at the tensor
 * cores' fp8 precision (about 13 bits below the step's leading bit, not f32's 24: cuBLAS's
 * "fast accumulation", Triton's default on sm_90): where the dot would run on wgmma and its
 * input_precision is the default "tf32" (the fastest form; "ieee" or "tf32x3" ask for f32
 * sums and keep the f16 product), the casts go and the dot takes the fp8 tiles themselves.
 *
 * 8-bit wgmma reads K-major operands only (no transposition immediates), so this applies to
 * dot(cast(a), cast(trans(b))) with a loaded [M, K] and b [N, K] — Triton's
 * tl.dot(a, tl.trans(b)), the layout fp8 GEMMs use — each cast used by the dot alone, an
 * f32 accumulator, and a shape pass_dot_uses_wgmma takes. Any other fp8 dot keeps the f16
 * product (mma.sync or wgmma on f16). Runs before tiling, whose layouts follow. */
#include "pass_util.h"

/* The fp8 tile an f16 operand was cast from, when the cast is used by the dot alone. */
static ir_value *fp8_source(const ir_func *f, const ir_value *v) {
  const ir_op *d = v->def;
  if (!d || d->opc != IR_CAST || pass_count_uses(f->body, v) != 1) return NULL;
  ir_value *x = d->operands[0];
  return x->type->kind == IR_TILE && ir_dtype_is_fp8(x->type->dtype) ? x : NULL;
}

bool pass_fp8dot(ir_module *m, ir_func *f) {
  if (!pass_has(m, PASS_WGMMA)) return false;
  ir_op *dots[256];
  int nd = pass_collect(f->body, IR_DOT, dots, 256);
  bool changed = false;
  for (int i = 0; i < nd; i++) {
    ir_op *dot = dots[i];
    if (dot->results[0]->type->dtype != TK_F32 || dot->results[0]->type->rank != 2) continue;
    if (dot->attr != IR_DOT_TF32) continue;
    ir_value *a = dot->operands[0], *b = dot->operands[1];
    ir_value *xa = fp8_source(f, a), *xb = fp8_source(f, b);
    if (!xa || !xb) continue;
    /* the casts go first: pass_dot_uses_wgmma counts the uses of b's transpose */
    ir_op *ca = a->def, *cb = b->def;
    dot->operands[0] = xa;
    dot->operands[1] = xb;
    ir_op_erase(ca);
    ir_op_erase(cb);
    if (!pass_dot_uses_wgmma(m, f, dot)) { /* not K-major, or a shape wgmma does not take */
      ir_block_insert_before(dot->parent, ca, dot);
      ir_block_insert_before(dot->parent, cb, dot);
      dot->operands[0] = a;
      dot->operands[1] = b;
      continue;
    }
    changed = true;
  }
  return changed;
}
