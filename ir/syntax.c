/* The spelling of op attributes in the text form, and the names of predicates and
 * kinds. */
#include "syntax.h"

#include <string.h>

static const char *const cmp_names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
static const char *const reduce_names[] = {"sum", "max", "min"};
static const char *const atomic_names[] = {"add", "max", "min", "and", "or", "xor", "xchg"};
static const char *const precision_names[] = {"tf32", "ieee", "tf32x3"};
static const char *const cache_names[] = {"", "ca", "cg", "cs", "lu", "cv", "wb", "wt"};
static const char *const evict_names[] = {"", "evict_first", "evict_last"};
static const char *const sem_names[] = {"", "acquire", "release", "acq_rel"};

const char *ir_cmp_name(ir_cmp c) {
  return c >= 0 && c <= IR_CMP_GE ? cmp_names[c] : NULL;
}

const char *ir_reduce_name(ir_reduce_kind k) {
  return k >= 0 && k <= IR_RED_MIN ? reduce_names[k] : NULL;
}

const char *ir_atomic_name(ir_atomic_kind k) {
  return k >= 0 && k <= IR_ATOM_XCHG ? atomic_names[k] : NULL;
}

const char *ir_dot_precision_name(ir_dot_precision p) {
  return p >= 0 && p <= IR_DOT_TF32X3 ? precision_names[p] : NULL;
}

const char *ir_cache_name(ir_cache c) {
  return c > IR_CACHE_NONE && c <= IR_CACHE_WT ? cache_names[c] : NULL;
}

const char *ir_evict_name(ir_evict e) {
  return e > IR_EVICT_NORMAL && e <= IR_EVICT_LAST ? evict_names[e] : NULL;
}

const char *ir_sem_name(ir_sem s) {
  return s > IR_SEM_RELAXED && s <= IR_SEM_ACQ_REL ? sem_names[s] : NULL;
}

bool ir_cache_allowed(ir_opcode op, ir_cache c) {
  switch (c) {
  case IR_CACHE_NONE: return true;
  case IR_CACHE_CG: case IR_CACHE_CS: return op == IR_LOAD || op == IR_STORE;
  case IR_CACHE_CA: case IR_CACHE_LU: case IR_CACHE_CV: return op == IR_LOAD;
  case IR_CACHE_WB: case IR_CACHE_WT: return op == IR_STORE;
  }
  return false;
}

static int lookup(const char *const *names, int n, const char *s, size_t len) {
  for (int i = 0; i < n; i++)
    if (strlen(names[i]) == len && memcmp(names[i], s, len) == 0) return i;
  return -1;
}

int ir_cmp_parse(const char *s, size_t n) { return lookup(cmp_names, 6, s, n); }
int ir_reduce_parse(const char *s, size_t n) { return lookup(reduce_names, 3, s, n); }
int ir_atomic_parse(const char *s, size_t n) { return lookup(atomic_names, 7, s, n); }
int ir_dot_precision_parse(const char *s, size_t n) { return lookup(precision_names, 3, s, n); }
/* index 0 is the empty name of "none", which no text spells */
int ir_cache_parse(const char *s, size_t n) { return n ? lookup(cache_names, 8, s, n) : -1; }
int ir_evict_parse(const char *s, size_t n) { return n ? lookup(evict_names, 3, s, n) : -1; }
int ir_sem_parse(const char *s, size_t n) { return n ? lookup(sem_names, 4, s, n) : -1; }

const char *ir_flag_word(ir_modifier mod) {
  return mod == IR_MOD_WHILE ? "while" : mod == IR_MOD_FTZ ? "ftz" : mod == IR_MOD_LIKELY ? "likely"
         : mod == IR_MOD_WG ? "wg" : NULL;
}

const ir_syntax *ir_op_syntax(ir_opcode op) {
  static const ir_syntax none = {IR_MOD_NONE, 0, {{0}}};
  static const ir_syntax konst = {IR_MOD_CONST, 0, {{0}}};
  static const ir_syntax axis = {IR_MOD_NONE, 1, {{"axis", IR_SLOT_ATTR}}};
  static const ir_syntax axis2 = {IR_MOD_NONE, 1, {{"axis", IR_SLOT_ATTR2}}};
  static const ir_syntax range = {IR_MOD_NONE, 2, {{"start", IR_SLOT_ATTR}, {"end", IR_SLOT_ATTR2}}};
  static const ir_syntax perm = {IR_MOD_NONE, 1, {{"perm", IR_SLOT_INTS}}};
  static const ir_syntax start = {IR_MOD_NONE, 1, {{"start", IR_SLOT_INTS}}};
  static const ir_syntax cmp = {IR_MOD_CMP, 0, {{0}}};
  static const ir_syntax reduce = {IR_MOD_REDUCE, 1, {{"axis", IR_SLOT_ATTR2}}};
  static const ir_syntax atomic = {IR_MOD_ATOMIC, 0, {{0}}};
  static const ir_syntax sem = {IR_MOD_SEM, 0, {{0}}};
  static const ir_syntax prefix = {IR_MOD_NONE, 1, {{"prefix", IR_SLOT_STR}}};
  static const ir_syntax msg = {IR_MOD_NONE, 1, {{"msg", IR_SLOT_STR}}};
  static const ir_syntax tmap = {IR_MOD_NONE, 2, {{"box", IR_SLOT_INTS}, {"swizzle", IR_SLOT_ATTR}}};
  static const ir_syntax count = {IR_MOD_NONE, 1, {{"count", IR_SLOT_ATTR}}};
  static const ir_syntax bytes = {IR_MOD_NONE, 1, {{"bytes", IR_SLOT_ATTR}}};
  static const ir_syntax pending = {IR_MOD_NONE, 1, {{"pending", IR_SLOT_ATTR}}};
  static const ir_syntax wtrans = {IR_MOD_NONE, 1, {{"trans", IR_SLOT_INTS}}};
  static const ir_syntax scratch = {IR_MOD_NONE, 2, {{"offset", IR_SLOT_ATTR}, {"per_program", IR_SLOT_ATTR2}}};
  static const ir_syntax workspace = {IR_MOD_NONE, 1, {{"per_program", IR_SLOT_ATTR2}}};
  static const ir_syntax loop = {IR_MOD_WHILE, 0, {{0}}};
  static const ir_syntax creduce = {IR_MOD_REDUCE, 0, {{0}}};
  static const ir_syntax dot = {IR_MOD_PRECISION, 0, {{0}}};
  static const ir_syntax accurate = {IR_MOD_ACCURATE, 0, {{0}}};
  static const ir_syntax erfc = {IR_MOD_ACCURATE, 2, {{"in", IR_SLOT_SCALE}, {"out", IR_SLOT_EXP}}};
  static const ir_syntax step = {IR_MOD_NONE, 1, {{"step", IR_SLOT_ATTR}}};
  static const ir_syntax ftz = {IR_MOD_FTZ, 0, {{0}}};
  static const ir_syntax likely = {IR_MOD_LIKELY, 0, {{0}}};
  static const ir_syntax wg = {IR_MOD_WG, 0, {{0}}};
  static const ir_syntax wg_pending = {IR_MOD_WG, 1, {{"pending", IR_SLOT_ATTR}}};
  static const ir_syntax cache = {IR_MOD_CACHE, 0, {{0}}};
  static const ir_syntax kept = {IR_MOD_CACHE, 1, {{"keep", IR_SLOT_INTS}}};
  static const ir_syntax wspec = {IR_MOD_NONE, 2, {{"producer_warps", IR_SLOT_ATTR}, {"regs", IR_SLOT_INTS}}};
  switch (op) {
  case IR_CONST: return &konst;
  case IR_PROGRAM_ID:
  case IR_NUM_PROGRAMS: return &axis;
  case IR_ARANGE: return &range;
  case IR_EXPAND_DIMS: case IR_GATHER: return &axis2;
  case IR_TRANS: return &perm;
  case IR_SLICE: return &start;
  case IR_CMP: return &cmp;
  case IR_REDUCE:
  case IR_ARGREDUCE:
  case IR_SCAN: return &reduce;
  case IR_ATOMIC: case IR_SMEM_ATOMIC: return &atomic;
  case IR_ATOMIC_CAS: return &sem;
  case IR_LOAD: return &kept;
  case IR_STORE: return &cache;
  case IR_PRINT: return &prefix;
  case IR_ASSERT: return &msg;
  case IR_TENSOR_MAP: return &tmap;
  case IR_MBAR_ALLOC: return &count;
  case IR_MBAR_EXPECT: return &bytes;
  case IR_CP_ASYNC_WAIT:
  case IR_WGMMA_WAIT: return &pending;
  case IR_BULK_WAIT: return &wg_pending;
  case IR_BARRIER: case IR_TMA_STORE: case IR_BULK_COMMIT: return &wg;
  case IR_WARP_SPEC: return &wspec;
  case IR_WGMMA: case IR_MMA: return &wtrans;
  case IR_GRID_SIZE: return &axis;
  case IR_CLUSTER_REDUCE: return &creduce;
  case IR_SCRATCH: return &scratch;
  case IR_WORKSPACE: return &workspace;
  case IR_WG_TURN: return &step;
  case IR_FOR: return &loop;
  case IR_DOT: return &dot;
  case IR_SIN: case IR_COS: case IR_EXP: case IR_SIGMOID: case IR_ERF: return &accurate;
  case IR_ERFC: return &erfc;
  case IR_EXP2: return &ftz;
  case IR_IF: return &likely;
  default: return &none;
  }
}
