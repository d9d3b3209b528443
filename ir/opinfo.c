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
