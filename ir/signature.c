/* A kernel's signature, read off its IR once: the one description of its parameters that
 * launch checking, argument packing, the JIT's specialization bits and generated launchers
 * share, so that none of them re-derives it from types its own way. */
#include "ir.h"

bool ir_param_can_divide(const ir_type *t) {
  return t->kind == IR_PTR || (t->kind == IR_SCALAR && ir_dtype_is_int(t->dtype) && t->dtype != TK_I1);
}

bool ir_param_can_be_positive(const ir_type *t) {
  return t->kind == IR_SCALAR && (t->dtype == TK_F32 || t->dtype == TK_F64);
}

bool ir_param_specializable(const ir_type *t) { return ir_param_can_divide(t) || ir_param_can_be_positive(t); }

ir_signature *ir_func_signature(su_arena *a, const ir_func *f) {
  ir_signature *s = SU_NEW(a, ir_signature);
  s->name = f->name;
  s->nparams = f->body->nargs;
  s->params = SU_NEW_ARRAY(a, ir_sig_param, s->nparams ? s->nparams : 1);
  for (int i = 0; i < s->nparams; i++) {
    const ir_type *t = f->body->args[i]->type;
    ir_sig_param *p = &s->params[i];
    p->name = f->param_names && f->param_names[i] ? f->param_names[i] : "";
    p->type = t->kind == IR_PTR ? TK_PTR : t->dtype;
    p->pointee = t->kind == IR_PTR ? t->elem->dtype : TK_NDTYPE;
    p->specializable = ir_param_specializable(t);
  }
  s->consts = f->bindings;
  s->nconsts = f->nbindings;
  s->num_warps = f->num_warps;
  s->num_stages = f->num_stages;
  return s;
}

void ir_sig_param_print(su_buf *b, const ir_sig_param *p) {
  if (p->type != TK_PTR)
    su_buf_puts(b, ir_dtype_name(p->type));
  else if (p->pointee != TK_NDTYPE)
    su_buf_printf(b, "ptr<%s>", ir_dtype_name(p->pointee));
  else
    su_buf_puts(b, "ptr");
}
