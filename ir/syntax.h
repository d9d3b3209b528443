/* Private to ir/: how each op's attributes are spelled in the text form, shared by the
 * printer and the parser so that the two cannot drift apart. */
#ifndef TK_IR_SYNTAX_H
#define TK_IR_SYNTAX_H

#include "ir.h"

/* A keyword or literal written right after the op name. */
typedef enum {
  IR_MOD_NONE,
  IR_MOD_CMP,    /* cmp lt ...        (attr: ir_cmp) */
  IR_MOD_REDUCE, /* reduce sum ...    (attr: ir_reduce_kind) */
  IR_MOD_ATOMIC, /* atomic add ...    (attr: ir_atomic_kind; atomic's attr2: ir_sem, after it) */
  IR_MOD_SEM,    /* atomic_cas acq_rel %p ... (attr2: ir_sem; nothing written for relaxed) */
  IR_MOD_CONST,  /* const 1.5 : f32   (cval) */
  IR_MOD_WHILE,  /* for while %lb ... (attr 1; nothing written for 0) */
  IR_MOD_PRECISION, /* dot ieee %a ... (attr: ir_dot_precision; nothing written for tf32) */
  IR_MOD_ACCURATE,  /* sin accurate %x (attr 1; nothing written for 0) */
  IR_MOD_FTZ,    /* exp2 ftz %x       (attr 1; nothing written for 0) */
  IR_MOD_LIKELY, /* if likely %c      (attr 1; nothing written for 0) */
  IR_MOD_WG,     /* barrier wg, bulk_wait wg {pending = 1} (attr2 1; nothing written for 0) */
  IR_MOD_CACHE   /* load cg %p, load evict_last %p (attr: ir_cache, attr2: ir_evict; nothing
                    written for none/normal) */
} ir_modifier;

/* Which op field a `{key = value}` attribute fills. */
/* IR_SLOT_SCALE (cval.f) and IR_SLOT_EXP (attr2) are optional numbers: nothing is
 * written while they hold 0, their "none" (a factor of 1, an exponent of 0). */
typedef enum { IR_SLOT_ATTR, IR_SLOT_ATTR2, IR_SLOT_INTS, IR_SLOT_STR, IR_SLOT_SCALE, IR_SLOT_EXP } ir_slot;

typedef struct {
  const char *key;
  ir_slot slot;
} ir_attr_spec;

typedef struct {
  ir_modifier mod;
  int nattrs;
  ir_attr_spec attrs[2];
} ir_syntax;

/* The text syntax of op. */
const ir_syntax *ir_op_syntax(ir_opcode op);
/* The word a flag modifier writes when its attr is set ("while", "ftz", "likely"). */
const char *ir_flag_word(ir_modifier mod);

#endif
