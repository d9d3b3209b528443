/* sema/builtins.c — the table of builtins: name, kind, arity, parameter names (for named
 * arguments) and the IR opcode or kind they lower to. The typing rules per kind are in
 * check_builtin.c. */
#include <string.h>

#include "sema_int.h"

#define V SEMA_VARIADIC
static const sema_builtin builtins[] = {
  {"program_id", B_PROGRAM_ID, 1, 1, {"axis"}, false, 0},
  {"num_programs", B_NUM_PROGRAMS, 1, 1, {"axis"}, false, 0},
  {"arange", B_ARANGE, 2, 2, {"start", "end"}, false, 0},
  {"zeros", B_ZEROS, 1, V, {0}, true, 0},
  {"full", B_FULL, 2, V, {0}, true, 0},
  {"load", B_LOAD, 1, 5, {"ptr", "mask", "other", "cache", "eviction"}, false, 0},
  {"store", B_STORE, 2, 5, {"ptr", "value", "mask", "cache", "eviction"}, false, 0},
  {"atomic_add", B_ATOMIC, 2, 3, {"ptr", "value", "mask"}, false, IR_ATOM_ADD},
  {"atomic_max", B_ATOMIC, 2, 3, {"ptr", "value", "mask"}, false, IR_ATOM_MAX},
  {"atomic_min", B_ATOMIC, 2, 3, {"ptr", "value", "mask"}, false, IR_ATOM_MIN},
  {"atomic_and", B_ATOMIC, 2, 3, {"ptr", "value", "mask"}, false, IR_ATOM_AND},
  {"atomic_or", B_ATOMIC, 2, 3, {"ptr", "value", "mask"}, false, IR_ATOM_OR},
  {"atomic_xor", B_ATOMIC, 2, 3, {"ptr", "value", "mask"}, false, IR_ATOM_XOR},
  {"atomic_xchg", B_ATOMIC, 2, 3, {"ptr", "value", "mask"}, false, IR_ATOM_XCHG},
  {"atomic_cas", B_ATOMIC_CAS, 3, 3, {"ptr", "cmp", "value"}, false, 0},
  {"where", B_WHERE, 3, 3, {"cond", "x", "y"}, false, 0},
  {"exp", B_MATH1, 1, 2, {"x", "accurate"}, false, IR_EXP},
  {"exp2", B_MATH1, 1, 2, {"x", "accurate"}, false, IR_EXP2},
  {"log", B_MATH1, 1, 1, {"x"}, false, IR_LOG},
  {"log2", B_MATH1, 1, 1, {"x"}, false, IR_LOG2},
  {"sqrt", B_MATH1, 1, 1, {"x"}, false, IR_SQRT},
  {"rsqrt", B_MATH1, 1, 1, {"x"}, false, IR_RSQRT},
  {"sin", B_MATH1, 1, 2, {"x", "accurate"}, false, IR_SIN},
  {"cos", B_MATH1, 1, 2, {"x", "accurate"}, false, IR_COS},
  {"tanh", B_MATH1, 1, 1, {"x"}, false, IR_TANH},
  {"erf", B_MATH1, 1, 1, {"x"}, false, IR_ERF},
  {"floor", B_MATH1, 1, 1, {"x"}, false, IR_FLOOR},
  {"ceil", B_MATH1, 1, 1, {"x"}, false, IR_CEIL},
  {"sigmoid", B_MATH1, 1, 2, {"x", "accurate"}, false, IR_SIGMOID},
  {"round", B_MATH1, 1, 1, {"x"}, false, IR_RINT},
  {"rint", B_MATH1, 1, 1, {"x"}, false, IR_RINT},
  {"trunc", B_MATH1, 1, 1, {"x"}, false, IR_TRUNC},
  {"log1p", B_MATH1, 1, 1, {"x"}, false, IR_LOG1P},
  {"expm1", B_MATH1, 1, 1, {"x"}, false, IR_EXPM1},
  {"sqrt_rn", B_MATH1, 1, 1, {"x"}, false, IR_SQRT},
  {"pow", B_MATH2, 2, 2, {"x", "y"}, false, IR_POW},
  {"copysign", B_MATH2, 2, 2, {"x", "y"}, false, IR_COPYSIGN},
  {"div_rn", B_MATH2, 2, 2, {"x", "y"}, false, IR_DIV},
  {"fdiv", B_MATH2, 2, 3, {"x", "y", "ieee_rounding"}, false, IR_FDIV},
  {"umulhi", B_UMULHI, 2, 2, {"x", "y"}, false, IR_UMULHI},
  {"isnan", B_FCLASS, 1, 1, {"x"}, false, SEMA_ISNAN},
  {"isinf", B_FCLASS, 1, 1, {"x"}, false, SEMA_ISINF},
  {"isfinite", B_FCLASS, 1, 1, {"x"}, false, SEMA_ISFINITE},
  {"randint", B_RANDOM, 2, 3, {"seed", "offset", "n_rounds"}, false, SEMA_RANDINT},
  {"rand", B_RANDOM, 2, 3, {"seed", "offset", "n_rounds"}, false, SEMA_RAND},
  {"randn", B_RANDOM, 2, 3, {"seed", "offset", "n_rounds"}, false, SEMA_RANDN},
  {"abs", B_ABS, 1, 1, {"x"}, false, IR_ABS},
  {"fma", B_FMA, 3, 3, {"a", "b", "c"}, false, IR_FMA},
  {"minimum", B_MINIMUM, 2, 2, {"a", "b"}, false, IR_MIN},
  {"maximum", B_MAXIMUM, 2, 2, {"a", "b"}, false, IR_MAX},
  {"clamp", B_CLAMP, 3, 3, {"x", "lo", "hi"}, false, 0},
  {"sum", B_REDUCE, 1, 2, {"x", "axis"}, false, IR_RED_SUM},
  {"max", B_REDUCE, 1, 2, {"x", "axis"}, false, IR_RED_MAX},
  {"min", B_REDUCE, 1, 2, {"x", "axis"}, false, IR_RED_MIN},
  {"argmax", B_ARGREDUCE, 2, 2, {"x", "axis"}, false, IR_RED_MAX},
  {"argmin", B_ARGREDUCE, 2, 2, {"x", "axis"}, false, IR_RED_MIN},
  {"cumsum", B_CUMSUM, 2, 2, {"x", "axis"}, false, IR_RED_SUM},
  {"dot", B_DOT, 2, 4, {"a", "b", "acc", "input_precision"}, false, 0},
  {"reshape", B_RESHAPE, 2, V, {0}, false, 0},
  {"trans", B_TRANS, 1, V, {0}, false, 0},
  {"permute", B_TRANS, 2, V, {0}, false, 0}, /* Triton's name for trans with a permutation */
  {"broadcast_to", B_BROADCAST_TO, 2, V, {0}, false, 0},
  {"join", B_JOIN, 2, 2, {"a", "b"}, false, SEMA_JOIN},
  {"interleave", B_JOIN, 2, 2, {"a", "b"}, false, SEMA_INTERLEAVE},
  {"cat", B_JOIN, 2, 2, {"a", "b"}, false, SEMA_CAT},
  {"split", B_SPLIT, 1, 1, {"x"}, false, 0},
  {"gather", B_GATHER, 3, 3, {"src", "index", "axis"}, false, 0},
  {"sort", B_SORT, 1, 2, {"x", "descending"}, false, 0},
  {"topk", B_SORT, 2, 2, {"x", "k"}, false, 1},
  {"histogram", B_HISTOGRAM, 2, 3, {"x", "bins", "mask"}, false, 0},
  {"expand_dims", B_EXPAND_DIMS, 2, 2, {"x", "axis"}, false, 0},
  {"cdiv", B_CDIV, 2, 2, {"a", "b"}, false, IR_CDIV},
  {"static_assert", B_STATIC_ASSERT, 1, 2, {"cond", "msg"}, false, 0},
  {"device_print", B_DEVICE_PRINT, 1, V, {0}, false, 0},
  {"device_assert", B_DEVICE_ASSERT, 1, 2, {"cond", "msg"}, false, 0},
  {"range", B_RANGE, 1, 3, {0}, false, 0},
  {"static_range", B_STATIC_RANGE, 1, 3, {0}, false, 0},
};
#undef V

const sema_builtin *sema_builtin_find(const char *name) {
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    if (strcmp(builtins[i].name, name) == 0) return &builtins[i];
  return NULL;
}
