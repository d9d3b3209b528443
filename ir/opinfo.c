/* The opcode table, generated from ops.def so that names, arities and traits live in one
 * place. */
#include "ir.h"

static const ir_opinfo table[IR_NOPCODES] = {
#define X(e, name, nopnd, nres, traits) [IR_##e] = {name, nopnd, nres, traits},
#include "ops.def"
#undef X
};

const ir_opinfo *ir_op_info(ir_opcode op) {
  SU_ASSERT(op >= 0 && op < IR_NOPCODES);
  return &table[op];
}

/* Not exp2: its attr is `ftz` (expfold's flushed exp2), and the hardware ex2.approx.f32 it
 * always uses is what libdevice's __nv_exp2f itself is (2 ulp over the full range), so an
 * `accurate` exp2 would compile to the same instruction. erf itself is libdevice's either
 * way; its flag is the one the GPU's `1 ± erf(x)` takes as erfc (passes/complement.c). */
bool ir_op_has_accurate(ir_opcode op) {
  return op == IR_SIN || op == IR_COS || op == IR_EXP || op == IR_SIGMOID || op == IR_ERF ||
         op == IR_ERFC;
}
