/* Specialization on divisibility (Triton's): the facts the lowering passes and codegen
 * may assume of a kernel's integer and pointer arguments, set by name for tkc
 * --specialize and by signature bits for the JIT's variants. Both end in the same
 * parameter facts (ir_func.param_div), set before the target part of the pipeline. */
#include "driver.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Sets divisibility d on the integer and pointer parameters called name (NULL: all) of
 * every kernel; returns how many it set. */
static int specialize_param(ir_module *m, const char *name, size_t len, int d) {
  int n = 0;
  for (int k = 0; k < m->nfuncs; k++) {
    ir_func *f = m->funcs[k];
    for (int i = 0; i < f->body->nargs; i++) {
      const char *pn = f->param_names ? f->param_names[i] : NULL;
      if (!ir_param_can_divide(f->body->args[i]->type)) continue;
      if (name && (!pn || strlen(pn) != len || strncmp(pn, name, len))) continue;
      ir_func_set_param_div(m, f, i, d);
      n++;
    }
  }
  return n;
}

bool drv_specialize_list(ir_module *m, const char *list, su_arena *a, su_buf *why) {
  if (!strcmp(list, "all")) {
    specialize_param(m, NULL, 0, DRV_SPEC_DIV);
    return true;
  }
  for (const char *s = list; *s;) {
    size_t len = strcspn(s, ",");
    const char *item = su_strndup(a, s, len);
    const char *colon = strchr(item, ':');
    size_t nlen = colon ? (size_t)(colon - item) : len;
    long d = DRV_SPEC_DIV;
    if (colon) {
      char *end;
      errno = 0;
      d = strtol(colon + 1, &end, 10);
      if (errno || *end || end == colon + 1 || d < 1 || d > (1L << 30) || (d & (d - 1))) {
        su_buf_printf(why, "'%s' needs a power of two after ':'", item);
        return false;
      }
    }
    if (nlen == 0) {
      su_buf_printf(why, "'%s' has no parameter name", item);
      return false;
    }
    if (!specialize_param(m, item, nlen, (int)d)) {
      su_buf_printf(why, "no kernel has an integer or pointer parameter '%.*s'", (int)nlen, item);
      return false;
    }
    s += len;
    if (*s == ',') s++;
  }
  return true;
}

/* Whether bit i of bits makes parameter i of f a known multiple of DRV_SPEC_DIV. */
static bool spec_bit(const ir_func *f, int i, uint64_t bits) {
  return i < 64 && (bits >> i & 1) && ir_param_can_divide(f->body->args[i]->type);
}

/* A shallow copy of f whose parameters spec_bit selects are known multiples of
 * DRV_SPEC_DIV. */
static ir_func *specialized(su_arena *a, const ir_func *f, uint64_t bits) {
  ir_func *g = SU_NEW(a, ir_func);
  *g = *f;
  int n = f->body->nargs;
  g->param_div = SU_NEW_ARRAY(a, int, n ? n : 1);
  for (int i = 0; i < n; i++) g->param_div[i] = spec_bit(f, i, bits) ? DRV_SPEC_DIV : ir_param_div(f, i);
  return g;
}

/* A copy of m holding only `only` (NULL: every kernel) made by copy(a, f, bits). */
static ir_module *variant_of(su_arena *a, const ir_module *m, const ir_func *only, uint64_t bits,
                             ir_func *(*copy)(su_arena *, ir_module *, const ir_func *, uint64_t)) {
  ir_module *v = SU_NEW(a, ir_module);
  *v = *m; /* the same arena and type tables */
  v->nfuncs = v->capfuncs = only ? 1 : m->nfuncs;
  v->funcs = SU_NEW_ARRAY(a, ir_func *, v->nfuncs ? v->nfuncs : 1);
  for (int k = 0; k < v->nfuncs; k++) v->funcs[k] = copy(a, v, only ? only : m->funcs[k], bits);
  return v;
}

static ir_func *shallow(su_arena *a, ir_module *v, const ir_func *f, uint64_t bits) {
  (void)v;
  return specialized(a, f, bits);
}

static ir_func *deep(su_arena *a, ir_module *v, const ir_func *f, uint64_t bits) {
  (void)a;
  ir_func *g = ir_func_clone(v, f);
  for (int i = 0; i < g->body->nargs; i++)
    if (spec_bit(f, i, bits)) ir_func_set_param_div(v, g, i, DRV_SPEC_DIV);
  return g;
}

ir_module *drv_specialize(su_arena *a, const ir_module *m, const ir_func *only, uint64_t bits) {
  return variant_of(a, m, only, bits, shallow);
}

ir_module *drv_variant(ir_module *m, const ir_func *only, uint64_t bits, const drv_options *o,
                       su_diags *d) {
  ir_module *v = variant_of(m->arena, m, only, bits, deep);
  return drv_lower(v, o->arch, o, d) ? v : NULL;
}
