/* The text printer. The grammar is in docs/ir.md; parse.c reads back exactly what this
 * writes. Values are renumbered %0.. per kernel in print order (ir_number_values). */
#include "syntax.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_ident(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
  return true;
}

/* A quoted string with C-like escapes; bytes outside printable ASCII become \xHH so the
 * text form stays one line per op and 7-bit clean. */
static void print_string(su_buf *b, const char *s) {
  su_buf_puts(b, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      su_buf_printf(b, "\\%c", c);
    else if (c == '\n')
      su_buf_puts(b, "\\n");
    else if (c == '\t')
      su_buf_puts(b, "\\t");
    else if (c < 32 || c >= 127)
      su_buf_printf(b, "\\x%02x", c);
    else
      su_buf_put(b, (const char *)&c, 1);
  }
  su_buf_puts(b, "\"");
}

/* The shortest decimal that reads back (strtod) as exactly v, always with a '.' or an
 * exponent so that it lexes as a float; inf and nan are spelled out (NaN payloads are not
 * kept). */
static void print_float(su_buf *b, double v) {
  if (isnan(v)) {
    su_buf_puts(b, "nan");
    return;
  }
  if (isinf(v)) {
    su_buf_puts(b, v < 0 ? "-inf" : "inf");
    return;
  }
  char tmp[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (strtod(tmp, NULL) == v) break;
  }
  su_buf_puts(b, tmp);
  if (!strpbrk(tmp, ".e")) su_buf_puts(b, ".0");
}

static void print_value(su_buf *b, const ir_value *v) {
  if (v)
    su_buf_printf(b, "%%%d", v->id);
  else
    su_buf_puts(b, "%<null>");
}

/* A definition: the value, then its name hint as a comment. */
static void print_def(su_buf *b, const ir_value *v) {
  print_value(b, v);
  if (is_ident(v->name)) su_buf_printf(b, " /*%s*/", v->name);
}

static void print_loc(su_buf *b, ir_loc l) { su_buf_printf(b, " @%u:%u", l.line, l.col); }

static void print_cval(su_buf *b, const ir_op *op) {
  const ir_type *t = op->nresults == 1 ? op->results[0]->type : NULL;
  tk_dtype dt = t ? t->dtype : TK_I64;
  if (ir_dtype_is_float(dt))
    print_float(b, op->cval.f);
  else if (ir_dtype_is_int(dt) && !ir_dtype_is_signed(dt) && dt != TK_I1)
    su_buf_printf(b, "%" PRIu64, (uint64_t)op->cval.i);
  else
    su_buf_printf(b, "%" PRId64, op->cval.i);
}

static void print_modifier(su_buf *b, const ir_op *op, ir_modifier mod) {
  const char *name = NULL;
  switch (mod) {
  case IR_MOD_NONE: return;
  case IR_MOD_WHILE: case IR_MOD_FTZ: case IR_MOD_LIKELY:
    /* a flag word; another value than 1 is printed with a '?' for the verifier to name */
    if (op->attr) su_buf_printf(b, " %s%s", ir_flag_word(mod), op->attr == 1 ? "" : "?");
    if (mod == IR_MOD_WHILE && op->ints) {
      su_buf_puts(b, " cluster[");
      for (int k = 0; k < op->nints; k++) su_buf_printf(b, "%s%d", k ? ", " : "", op->ints[k]);
      su_buf_puts(b, "]");
    }
    return;
  case IR_MOD_WG:
    if (op->attr2) su_buf_printf(b, " wg%s", op->attr2 == 1 ? "" : "?");
    return;
  case IR_MOD_SEM:
    /* an out-of-range order is printed as its number, for the verifier to name */
    if (op->attr2 && ir_sem_name((ir_sem)op->attr2)) su_buf_printf(b, " %s", ir_sem_name((ir_sem)op->attr2));
    else if (op->attr2) su_buf_printf(b, " sem?%" PRId64, op->attr2);
    return;
  case IR_MOD_ACCURATE:
    if (op->attr) su_buf_puts(b, op->attr == 1 ? " accurate" : " accurate?");
    return;
  case IR_MOD_PRECISION:
    if (!op->attr) return;
    name = ir_dot_precision_name((ir_dot_precision)op->attr);
    break;
  case IR_MOD_CACHE:
    /* an out-of-range hint is printed as its number, for the verifier to name */
    if (op->attr && ir_cache_name((ir_cache)op->attr)) su_buf_printf(b, " %s", ir_cache_name((ir_cache)op->attr));
    else if (op->attr) su_buf_printf(b, " cache?%" PRId64, op->attr);
    if (op->attr2 && ir_evict_name((ir_evict)op->attr2)) su_buf_printf(b, " %s", ir_evict_name((ir_evict)op->attr2));
    else if (op->attr2) su_buf_printf(b, " evict?%" PRId64, op->attr2);
    return;
  case IR_MOD_CONST:
    su_buf_puts(b, " ");
    print_cval(b, op);
    return;
  case IR_MOD_CMP: name = ir_cmp_name((ir_cmp)op->attr); break;
  case IR_MOD_REDUCE: name = ir_reduce_name((ir_reduce_kind)op->attr); break;
  case IR_MOD_ATOMIC: name = ir_atomic_name((ir_atomic_kind)op->attr); break;
  }
  /* An out-of-range kind is printed as its number so that a broken op is still visible;
   * the verifier reports it and the parser rejects it. */
  if (name)
    su_buf_printf(b, " %s", name);
  else
    su_buf_printf(b, " %" PRId64, op->attr);
  if (op->opc == IR_ATOMIC) print_modifier(b, op, IR_MOD_SEM);
}

/* `{key = value, ...}`: integers always (even when zero), strings and lists only when set,
 * so that "absent" and "empty" stay distinct; the optional numbers only when not 0. */
static void print_attrs(su_buf *b, const ir_op *op, const ir_syntax *syn) {
  bool open = false;
  for (int i = 0; i < syn->nattrs; i++) {
    const ir_attr_spec *a = &syn->attrs[i];
    if ((a->slot == IR_SLOT_STR && !op->str) || (a->slot == IR_SLOT_INTS && !op->ints) ||
        (a->slot == IR_SLOT_SCALE && op->cval.f == 0) || (a->slot == IR_SLOT_EXP && !op->attr2))
      continue;
    su_buf_printf(b, "%s%s = ", open ? ", " : " {", a->key);
    open = true;
    switch (a->slot) {
    case IR_SLOT_ATTR: su_buf_printf(b, "%" PRId64, op->attr); break;
    case IR_SLOT_ATTR2: case IR_SLOT_EXP: su_buf_printf(b, "%" PRId64, op->attr2); break;
    case IR_SLOT_SCALE: print_float(b, op->cval.f); break;
    case IR_SLOT_STR: print_string(b, op->str); break;
    case IR_SLOT_INTS:
      su_buf_puts(b, "[");
      for (int k = 0; k < op->nints; k++) su_buf_printf(b, "%s%d", k ? ", " : "", op->ints[k]);
      su_buf_puts(b, "]");
      break;
    }
  }
  if (open) su_buf_puts(b, "}");
}

static void print_block(su_buf *b, const ir_block *blk, int indent);

static void print_op(su_buf *b, const ir_op *op, int indent) {
  su_buf_printf(b, "%*s", indent, "");
  for (int i = 0; i < op->nresults; i++) {
    if (i) su_buf_puts(b, ", ");
    print_def(b, op->results[i]);
  }
  if (op->nresults) su_buf_puts(b, " = ");
  su_buf_puts(b, ir_op_info(op->opc)->name);
  const ir_syntax *syn = ir_op_syntax(op->opc);
  print_modifier(b, op, syn->mod);
  for (int i = 0; i < op->noperands; i++) {
    su_buf_puts(b, i ? ", " : " ");
    print_value(b, op->operands[i]);
  }
  print_attrs(b, op, syn);
  if (op->nresults) {
    su_buf_puts(b, op->nresults > 1 ? " : (" : " : ");
    for (int i = 0; i < op->nresults; i++) {
      if (i) su_buf_puts(b, ", ");
      ir_type_print(b, op->results[i]->type);
    }
    if (op->nresults > 1) su_buf_puts(b, ")");
  }
  for (int r = 0; r < op->nregions; r++) {
    su_buf_puts(b, r == 0 ? " {\n" : op->opc == IR_IF ? " else {\n" : " {\n");
    const ir_block *blk = op->regions[r];
    if (blk->nargs) {
      su_buf_printf(b, "%*s^bb(", indent, "");
      for (int i = 0; i < blk->nargs; i++) {
        if (i) su_buf_puts(b, ", ");
        print_def(b, blk->args[i]);
        su_buf_puts(b, ": ");
        ir_type_print(b, blk->args[i]->type);
      }
      su_buf_puts(b, "):\n");
    }
    print_block(b, blk, indent + 2);
    su_buf_printf(b, "%*s}", indent, "");
  }
  print_loc(b, op->loc);
  su_buf_puts(b, "\n");
}

static void print_block(su_buf *b, const ir_block *blk, int indent) {
  for (const ir_op *op = blk->first; op; op = op->next) print_op(b, op, indent);
}

static void print_func(su_buf *b, ir_func *f) {
  ir_number_values(f);
  su_buf_puts(b, "kernel @");
  if (is_ident(f->name))
    su_buf_puts(b, f->name);
  else
    print_string(b, f->name);
  su_buf_puts(b, "(");
  for (int i = 0; i < f->body->nargs; i++) {
    const ir_value *v = f->body->args[i];
    if (i) su_buf_puts(b, ", ");
    print_value(b, v);
    const char *name = f->param_names ? f->param_names[i] : NULL;
    if (is_ident(name)) su_buf_printf(b, " /*%s*/", name);
    su_buf_puts(b, ": ");
    ir_type_print(b, v->type);
    if (ir_param_div(f, i) != 1) su_buf_printf(b, " {div = %d}", ir_param_div(f, i));
    if (ir_param_pos(f, i)) su_buf_puts(b, " {pos}");
  }
  su_buf_printf(b, ") warps(%d) stages(%d)", f->num_warps, f->num_stages);
  if (f->programs_per_sm) su_buf_printf(b, " per_sm(%d)", f->programs_per_sm);
  if (f->persistent) su_buf_puts(b, " persistent");
  if (f->pdl) su_buf_puts(b, " pdl");
  if (f->cluster) su_buf_printf(b, " cluster(%d)", f->cluster);
  if (f->nbindings) {
    su_buf_puts(b, " bind(");
    for (int i = 0; i < f->nbindings; i++) {
      const ir_binding *bd = &f->bindings[i];
      su_buf_printf(b, "%s%s = ", i ? ", " : "", bd->name);
      if (bd->is_dtype)
        su_buf_puts(b, ir_dtype_name((tk_dtype)bd->ival));
      else if (bd->is_float)
        print_float(b, bd->fval);
      else
        su_buf_printf(b, "%" PRId64, bd->ival);
    }
    su_buf_puts(b, ")");
  }
  if (f->note) {
    su_buf_puts(b, " note(");
    print_string(b, f->note);
    su_buf_puts(b, ")");
  }
  print_loc(b, f->loc);
  su_buf_puts(b, " {\n");
  print_block(b, f->body, 2);
  su_buf_puts(b, "}\n");
}

void ir_print(su_buf *out, const ir_module *m) {
  su_buf_puts(out, "module ");
  print_string(out, m->source_name);
  su_buf_puts(out, "\n");
  for (int i = 0; i < m->nfuncs; i++) {
    su_buf_puts(out, "\n");
    print_func(out, m->funcs[i]);
  }
}
