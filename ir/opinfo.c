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

bool ir_op_has_accurate(ir_opcode op) {
  return op == IR_SIN || op == IR_COS || op == IR_EXP || op == IR_EXP2 || op == IR_SIGMOID;
}
