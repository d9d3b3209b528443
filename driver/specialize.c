/* Specialization (Triton's, on divisibility; tk's, on the sign of a float): the facts the
 * lowering passes and codegen may assume of a kernel's arguments — an integer or pointer
 * a multiple of 16, a float positive — set by name for tkc --specialize and by signature
 * bits for the JIT's variants. Both end in the same parameter facts (ir_func.param_div,
 * param_pos), set before the target part of the pipeline. */
#include "driver.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Sets divisibility d on the integer and pointer parameters called name (NULL: all) of
 * every kernel, and (pos) the positivity fact on its float ones; returns how many it set. */
static int specialize_param(ir_module *m, const char *name, size_t len, int d, bool pos) {
  int n = 0;
  for (int k = 0; k < m->nfuncs; k++) {
    ir_func *f = m->funcs[k];
    for (int i = 0; i < f->body->nargs; i++) {
      const char *pn = f->param_names ? f->param_names[i] : NULL;
      const ir_type *t = f->body->args[i]->type;
      if (name && (!pn || strlen(pn) != len || strncmp(pn, name, len))) continue;
      if (d && ir_param_can_divide(t)) ir_func_set_param_div(m, f, i, d);
      else if (pos && ir_param_can_be_positive(t)) ir_func_set_param_pos(m, f, i, true);
      else continue;
      n++;
    }
  }
  return n;
}

bool drv_specialize_list(ir_module *m, const char *list, su_arena *a, su_buf *why) {
  if (!strcmp(list, "all")) {
    specialize_param(m, NULL, 0, DRV_SPEC_DIV, true);
    return true;
  }
  for (const char *s = list; *s;) {
    size_t len = strcspn(s, ",");
    const char *item = su_strndup(a, s, len);
    const char *colon = strchr(item, ':');
    size_t nlen = colon ? (size_t)(colon - item) : len;
    long d = DRV_SPEC_DIV;
    bool pos = !colon; /* a bare name: whichever fact its type takes */
    if (colon && !strcmp(colon + 1, "pos")) {
      d = 0;
      pos = true;
    } else if (colon) {
      char *end;
      errno = 0;
      d = strtol(colon + 1, &end, 10);
      if (errno || *end || end == colon + 1 || d < 1 || d > (1L << 30) || (d & (d - 1))) {
        su_buf_printf(why, "'%s' needs a power of two or 'pos' after ':'", item);
        return false;
      }
    }
    if (nlen == 0) {
      su_buf_printf(why, "'%s' has no parameter name", item);
      return false;
    }
    if (!specialize_param(m, item, nlen, (int)d, pos)) {
      su_buf_printf(why, "no kernel has %s parameter '%.*s'",
                    !d ? "an f32 or f64" : pos ? "an integer, pointer, f32 or f64" : "an integer or pointer",
                    (int)nlen, item);
      return false;
    }
    s += len;
    if (*s == ',') s++;
  }
  return true;
}

/* Whether bit i of bits gives parameter i of f its fact: a multiple of DRV_SPEC_DIV (an
 * integer or pointer) or positive (a float). */
static bool spec_bit(const ir_func *f, int i, uint64_t bits) {
  return i < 64 && (bits >> i & 1) && ir_param_specializable(f->body->args[i]->type);
}

/* Gives g's parameters the facts bits selects (g's arrays its own, in a). */
static void set_facts(su_arena *a, ir_func *g, const ir_func *f, uint64_t bits) {
  int n = f->body->nargs;
  g->param_div = SU_NEW_ARRAY(a, int, n ? n : 1);
  g->param_pos = SU_NEW_ARRAY(a, bool, n ? n : 1);
  for (int i = 0; i < n; i++) {
    bool on = spec_bit(f, i, bits);
    const ir_type *t = f->body->args[i]->type;
    g->param_div[i] = on && ir_param_can_divide(t) ? DRV_SPEC_DIV : ir_param_div(f, i);
    g->param_pos[i] = (on && ir_param_can_be_positive(t)) || ir_param_pos(f, i);
  }
}

/* A shallow copy of f with the facts bits selects. */
static ir_func *specialized(su_arena *a, const ir_func *f, uint64_t bits) {
  ir_func *g = SU_NEW(a, ir_func);
  *g = *f;
  set_facts(a, g, f, bits);
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
  set_facts(v->arena, g, f, bits);
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
