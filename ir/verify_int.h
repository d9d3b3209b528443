/* Private to ir/: the verifier's state and reporting helpers, shared by verify.c (the
 * ops of the tile level) and verify_gpu.c (the GPU level). */
#ifndef TK_IR_VERIFY_INT_H
#define TK_IR_VERIFY_INT_H

#include "syntax.h"

#include <string.h>

typedef struct {
  const ir_module *m;
  su_diags *d;
  const su_source *src; /* no text: only the name, for file:line:col */
  ir_value **byid;      /* id -> value of the kernel being checked */
  bool *visible;        /* id -> defined in an enclosing scope, before this point */
  int nvalues;
  ir_value **defined;   /* stack of visible values, popped when a region closes */
  int ndefined;
  int64_t scratch_bytes; /* of the kernel's scratch ops (0: none yet) */
  int64_t workspace_bytes; /* of the kernel's workspace ops (0: none yet) */
  const ir_func *f;      /* the kernel being checked */
  bool ok;
} verifier;

/* Reports "'OP': MESSAGE" at op's location and marks the module invalid. */
__attribute__((format(printf, 3, 4)))
void ir_verr(verifier *v, const ir_op *op, const char *fmt, ...);
/* An arena string of t's text form, for messages. */
const char *ir_vts(verifier *v, const ir_type *t);
/* The operand and result counts op must have when they vary with its operands
 * (GPU-level ops; false: op is none of them): operands in [*lo, *hi]. */
bool ir_verify_gpu_counts(const ir_op *op, int *lo, int *hi);
/* The type and placement rules of a GPU-level op; false when op is none. `top` tells
 * that op lies in the kernel body itself, not in a region. */
bool ir_verify_gpu_op(verifier *v, const ir_op *op, bool top);

#endif
