/*
 * passes/pass_util.h — helpers the passes share: reading and making constants with the
 * language's arithmetic (wrap-around integers, floats rounded to their type), and
 * replacing an op by a value. Internal to passes/; not part of the folder's contract.
 */
#ifndef TK_PASS_UTIL_H
#define TK_PASS_UTIL_H

#include "passes.h"

/* True if v is the result of a const op (a scalar, or a tile filled with one value). */
bool pass_is_const(const ir_value *v);

/* v reduced to dtype d's width, in the canonical form folded constants are stored in:
 * sign-extended for signed types, zero-extended for unsigned ones and i1 (0 or 1). */
int64_t pass_int_wrap(tk_dtype d, int64_t v);
/* x rounded to nearest even in float type d's precision and range (overflow gives inf). */
double pass_float_round(tk_dtype d, double x);

/* The value of an integer (or i1) constant, canonical for its dtype. */
int64_t pass_const_int(const ir_value *v);
/* The value of a float constant, rounded to its dtype. */
double pass_const_float(const ir_value *v);
/* True if v is a constant equal to k in its dtype (for floats, exactly k: 0.0 is not -0.0). */
bool pass_const_eq(const ir_value *v, double k);
/* True if v is an integer constant with every bit of its width set. */
bool pass_const_all_ones(const ir_value *v);

/* A new constant of type t (canonicalized) placed just before op. */
ir_value *pass_const_int_before(ir_module *m, ir_op *op, const ir_type *t, int64_t v);
ir_value *pass_const_float_before(ir_module *m, ir_op *op, const ir_type *t, double v);

/* Redirects every use of op's single result to v, then erases op. */
void pass_replace_op(ir_func *f, ir_op *op, ir_value *v);

#endif
