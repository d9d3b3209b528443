/* Running blocks: op dispatch and the structured control flow (for with carried values,
 * if with results). */
#include "internal.h"

#include <string.h>

/* Copies v's elements into dst (same type): how a carried value leaves the iteration
 * whose scratch memory is about to be released. */
static ip_val copy_into(ip_val v, ip_elem *dst) {
  memcpy(dst, v.e, (size_t)v.n * sizeof *dst);
  v.e = dst;
  return v;
}

static int64_t int_value(tk_dtype dt, ip_elem v) {
  return ir_dtype_is_signed(dt) ? v.i : (int64_t)v.u;
}

/* for iv in range(lb, ub, step) with carried values. Each iteration runs between a
 * scratch mark and its release; the yielded values are copied into one of two buffers
 * allocated before the loop (the other still holds the values the body read). */
static bool run_for(ip_exec *x, const ip_inst *in) {
  const ir_op *op = in->op;
  const ip_code *body = &in->regions[0];
  int ncarried = op->noperands - 3;
  tk_dtype ivt = ip_elem_dtype(op->operands[0]->type);
  int64_t lb = int_value(ivt, IP_IN(x, in, 0).e[0]);
  int64_t ub = int_value(ivt, IP_IN(x, in, 1).e[0]);
  int64_t step = int_value(ivt, IP_IN(x, in, 2).e[0]);
  if (step == 0) return ip_fail(x, op, "zero loop step", "range() with step 0 never ends");

  ip_val *carried = ip_scratch_alloc(x->scratch, sizeof(ip_val) * (size_t)(ncarried + 1));
  ip_elem **bufs = ip_scratch_alloc(x->scratch, sizeof(ip_elem *) * 2 * (size_t)(ncarried + 1));
  for (int k = 0; k < ncarried; k++) {
    carried[k] = IP_IN(x, in, 3 + k);
    for (int j = 0; j < 2; j++)
      bufs[2 * k + j] = ip_scratch_alloc(x->scratch, sizeof(ip_elem) * (size_t)carried[k].n);
  }
  int flip = 0;
  /* The induction variable runs in int64 and wraps to its type only when read, so a
   * bound near the type's limit cannot make the loop run forever. */
  bool flagged = op->attr == 1; /* {while = 1}: carried value 0 must stay true */
  for (int64_t iv = lb; step > 0 ? iv < ub : iv > ub; iv += step) {
    if (flagged && !carried[0].e[0].u) break;
    ip_mark mark = ip_scratch_mark(x->scratch);
    ip_val ivv = ip_val_new(x, op->operands[0]->type);
    ivv.e[0] = ip_int(ivt, (uint64_t)iv);
    x->slots[body->args[0]] = ivv;
    for (int k = 0; k < ncarried; k++) x->slots[body->args[1 + k]] = carried[k];
    const ip_inst *yield = NULL;
    if (!ip_run_block(x, body, &yield)) return false;
    SU_ASSERT(yield && yield->op->noperands == ncarried);
    for (int k = 0; k < ncarried; k++) carried[k] = copy_into(IP_IN(x, yield, k), bufs[2 * k + flip]);
    flip ^= 1;
    ip_scratch_release(x->scratch, mark);
    if ((step > 0 && iv > INT64_MAX - step) || (step < 0 && iv < INT64_MIN - step)) break;
  }
  for (int k = 0; k < ncarried; k++) *IP_OUT(x, in, k) = carried[k];
  return true;
}

static bool run_if(ip_exec *x, const ip_inst *in) {
  const ip_code *branch = &in->regions[IP_IN(x, in, 0).e[0].u ? 0 : 1];
  const ip_inst *yield = NULL;
  if (!ip_run_block(x, branch, &yield)) return false;
  int nres = in->op->nresults;
  if (nres == 0) return true;
  SU_ASSERT(yield && yield->op->noperands == nres);
  for (int k = 0; k < nres; k++) *IP_OUT(x, in, k) = IP_IN(x, yield, k);
  return true;
}

static bool run_inst(ip_exec *x, const ip_inst *in) {
  switch (in->op->opc) {
  case IR_CONST: case IR_PROGRAM_ID: case IR_NUM_PROGRAMS: case IR_GRID_SIZE: case IR_ARANGE: case IR_SCRATCH:
  case IR_WORKSPACE:
  case IR_SPLAT: case IR_BROADCAST: case IR_EXPAND_DIMS: case IR_RESHAPE: case IR_TRANS: case IR_SLICE: case IR_JOIN: case IR_GATHER:
  case IR_CONVERT_LAYOUT:
    return ip_run_shape(x, in);
  case IR_LOAD: case IR_STORE: case IR_ATOMIC: case IR_ATOMIC_CAS: case IR_SLOT_STORE: case IR_SLOT_LOAD:
    return ip_run_memory(x, in);
  case IR_REDUCE: case IR_ARGREDUCE: case IR_SCAN: case IR_DOT: case IR_HISTOGRAM:
    return ip_run_reduce(x, in);
  case IR_PRINT: case IR_ASSERT:
    return ip_run_debug(x, in);
  case IR_FOR: return run_for(x, in);
  case IR_IF: return run_if(x, in);
  /* a program runs its tile ops one after the other: every thread of it has already
   * reached a barrier */
  case IR_BARRIER:
  case IR_YIELD: case IR_RETURN: return true;
  default:
    if (ir_op_info(in->op->opc)->traits & IR_ELEM) return ip_run_elementwise(x, in);
    su_fatal("interpreter: no semantics for op '%s'", ir_op_info(in->op->opc)->name);
  }
}

bool ip_run_block(ip_exec *x, const ip_code *c, const ip_inst **yield) {
  for (int i = 0; i < c->ninsts; i++) {
    const ip_inst *in = &c->insts[i];
    if (!run_inst(x, in)) return false;
    if (in->op->opc == IR_YIELD && yield) *yield = in;
  }
  return true;
}
