/* sema/check_decl.c — the file level: declarations visible everywhere (so consts and
 * helpers may be used before they are written), file constants, kernels with their
 * compile-time parameters bound from defines or defaults, and launch attributes. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sema_int.h"

static const su_loc no_loc; /* defines come from the command line: no source location */

void sema_check_global_const(sema_ctx *c, sema_sym *s) {
  if (s->state == 2) return;
  ast_node *d = s->decl;
  if (s->state == 1) {
    su_error(c->d, d->name_loc, "constant '%s' depends on itself", s->name);
    s->state = 2;
    return;
  }
  s->state = 1;
  /* a constant's initializer sees the file scope only, whoever asks first */
  sema_ctx save = *c;
  c->scope = c->global;
  c->flow = NULL;
  const ir_type *t = d->rhs ? sema_check_value(c, d->rhs) : NULL;
  if (t && (t->kind != IR_SCALAR || !d->rhs->sema_is_const)) {
    su_error(c->d, d->rhs->loc, "initializer of constant '%s' is not a compile-time scalar", s->name);
    t = NULL;
  }
  if (t && d->type) {
    const ir_type *want = sema_resolve_type(c, d->type);
    t = want && sema_check_assignable(c, d->rhs, t, want, su_fmt(c->a, "'%s'", s->name)) ? want : NULL;
  }
  c->scope = save.scope;
  c->flow = save.flow;
  if (s->state == 2) return; /* a cycle was reported meanwhile */
  s->state = 2;
  s->type = t;
  if (t) {
    s->cval = sema_const_as(d->rhs, t->dtype);
    s->weak = !d->type && sema_is_weak(d->rhs);
  }
}

/* ---- defines -------------------------------------------------------------------------- */

/* Parses an integer literal as written in .tk (decimal, 0x, 0b, '_' separators, a sign). */
static bool parse_int(const char *s, int64_t *out) {
  bool neg = *s == '-';
  if (*s == '-' || *s == '+') s++;
  int base = 10;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, s += 2;
  else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) base = 2, s += 2;
  uint64_t v = 0;
  int ndig = 0;
  for (; *s; s++) {
    if (*s == '_') continue;
    int dg = *s >= '0' && *s <= '9' ? *s - '0'
             : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
             : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : 99;
    if (dg >= base || v > (UINT64_MAX - (uint64_t)dg) / (uint64_t)base) return false;
    v = v * (uint64_t)base + (uint64_t)dg;
    ndig++;
  }
  if (!ndig || v > (uint64_t)INT64_MAX + neg) return false;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return true;
}

static bool parse_float(const char *s, double *out) {
  char *end;
  errno = 0;
  *out = strtod(s, &end);
  return *s && !*end && errno == 0;
}

/* The value of define `name` for a parameter of dtype d; false after reporting. */
static bool define_value(sema_ctx *c, const sema_define *df, tk_dtype d, sema_cval *out) {
  const char *v = df->value ? df->value : "";
  int64_t i;
  double f;
  if (d == TK_I1) {
    if (!strcmp(v, "true") || !strcmp(v, "1")) out->i = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "0")) out->i = 0;
    else goto bad;
    return true;
  }
  if (ir_dtype_is_float(d)) {
    if (parse_int(v, &i)) out->f = sema_round_float(d, (double)i);
    else if (parse_float(v, &f)) out->f = sema_round_float(d, f);
    else goto bad;
    return true;
  }
  if (!parse_int(v, &i)) goto bad;
  if (sema_wrap_int(d, i) != i) {
    su_error(c->d, no_loc, "value '%s' of define '%s' does not fit in %s", v, df->name,
             ir_dtype_name(d));
    return false;
  }
  out->i = i;
  return true;
bad:
  su_error(c->d, no_loc, "define '%s' expects %s, got '%s'", df->name,
           d == TK_I1 ? "true or false" : ir_dtype_is_float(d) ? "a number" : "an integer", v);
  return false;
}

static const sema_define *find_define(sema_ctx *c, const char *name) {
  const sema_define *found = NULL;
  for (int i = 0; c->opt && i < c->opt->ndefines; i++)
    if (c->opt->defines[i].name && !strcmp(c->opt->defines[i].name, name)) found = &c->opt->defines[i];
  return found; /* the last one wins, like -D on a C compiler command line */
}

/* The launch attributes: warps and stages take integers, the others true or false
 * (docs/language.md, "Launch attributes"). A define of the same name overrides the
 * source. */
typedef struct {
  const char *name;
  bool boolean;
} launch_attr;

static const launch_attr ATTRS[] = {{"warps", false}, {"stages", false},
                                    {"warp_specialize", true}, {"persistent", true},
                                    {"programs_per_sm", false}, {"pdl", true}, {"streamk", true}};
enum { NATTRS = sizeof ATTRS / sizeof ATTRS[0] };

static int *attr_field(sema_kernel *info, int which) {
  switch (which) {
  case 0: return &info->warps;
  case 1: return &info->stages;
  case 2: return &info->warp_specialize;
  case 3: return &info->persistent;
  case 4: return &info->programs_per_sm;
  case 5: return &info->pdl;
  default: return &info->streamk;
  }
}

static int attr_index(const char *name) {
  for (int i = 0; i < NATTRS; i++)
    if (!strcmp(ATTRS[i].name, name)) return i;
  return -1;
}

static void check_defines_used(sema_ctx *c, ast_file *f) {
  for (int i = 0; c->opt && i < c->opt->ndefines; i++) {
    const char *n = c->opt->defines[i].name;
    bool used = n && attr_index(n) >= 0;
    for (int k = 0; !used && k < f->decls.len; k++) {
      ast_node *d = f->decls.items[k];
      if (d->kind != AST_KERNEL) continue;
      for (int j = 0; j < d->cparams.len; j++) used |= !strcmp(d->cparams.items[j]->name, n);
    }
    if (!used)
      su_error(c->d, no_loc, "define '%s' names no compile-time parameter of any kernel",
               n ? n : "");
  }
}

/* ---- kernels -------------------------------------------------------------------------- */

static const char DTYPES[] =
    "i1 (bool), i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, f8e4m3, f8e5m2";

/* The dtype a dtype parameter's default names: a type keyword or an earlier dtype
 * parameter; -1 after reporting. */
static int dtype_default(sema_ctx *c, ast_node *p) {
  ast_node *e = p->rhs;
  if (e->kind == AST_TYPE) return (int)e->dtype;
  if (e->kind == AST_NAME && !e->qual) {
    sema_sym *s = sema_lookup(c, e->name);
    if (s && s->kind == SYM_DTYPE) return s->type ? (int)s->type->dtype : -1;
    if (!s) {
      su_error(c->d, e->loc, "unknown dtype '%s'", e->name);
      su_note(c->d, e->loc, "a dtype is one of %s", DTYPES);
      return -1;
    }
  }
  su_error(c->d, e->loc, "default of dtype parameter '%s' must be a dtype, such as 'f16'", p->name);
  return -1;
}

/* T: dtype = f16. Its symbol stands for the scalar type it is bound to; the checker
 * resolves every use ('*T', 'x as T', 'zeros<T>', 'let v: T') to that type, so nothing
 * after the checker knows there was a parameter. */
static void bind_dtype_cparam(sema_ctx *c, ast_node *p) {
  int d = p->rhs ? dtype_default(c, p) : -1;
  if (!p->rhs) su_error(c->d, p->name_loc, "compile-time parameter '%s' needs a default value", p->name);
  const sema_define *df = find_define(c, p->name);
  if (df) {
    const char *v = df->value ? df->value : "";
    d = sema_dtype_named(v);
    if (d < 0) su_error(c->d, no_loc, "define '%s' expects a dtype (%s), got '%s'", df->name, DTYPES, v);
  }
  sema_sym *s = sema_declare(c, SYM_DTYPE, p->name, p);
  s->type = d >= 0 ? ir_type_scalar(c->m, (tk_dtype)d) : NULL;
  s->cval.i = d;
  p->sema_ref = s;
}

static bool is_dtype_cparam(const ast_node *p) {
  return p->type && p->type->kind == AST_TYPE_NAME && !strcmp(p->type->name, "dtype");
}

static void bind_cparam(sema_ctx *c, ast_node *p) {
  if (is_dtype_cparam(p)) {
    bind_dtype_cparam(c, p);
    return;
  }
  const ir_type *t = p->type ? sema_resolve_type(c, p->type) : NULL;
  if (!p->type) su_error(c->d, p->name_loc, "compile-time parameter '%s' needs a type", p->name);
  if (t && t != ir_type_scalar(c->m, TK_I32) && t != ir_type_scalar(c->m, TK_I64) &&
      t != ir_type_scalar(c->m, TK_I1) && t != ir_type_scalar(c->m, TK_F32)) {
    su_error(c->d, p->type->loc,
             "compile-time parameter '%s' must have type i32, i64, bool, f32 or dtype", p->name);
    t = NULL;
  }
  sema_cval v = {0};
  const sema_define *df = find_define(c, p->name);
  bool ok = t != NULL;
  if (p->rhs) {
    /* the default is checked even when a define overrides it */
    const ir_type *dt = sema_check_value(c, p->rhs);
    if (dt && (dt->kind != IR_SCALAR || !p->rhs->sema_is_const)) {
      su_error(c->d, p->rhs->loc, "default of '%s' is not a compile-time constant", p->name);
      dt = NULL;
    }
    ok = ok && dt && sema_check_assignable(c, p->rhs, dt, t, su_fmt(c->a, "'%s'", p->name));
    if (ok) v = sema_const_as(p->rhs, t->dtype);
  } else if (!df) {
    su_error(c->d, p->name_loc, "compile-time parameter '%s' needs a default value", p->name);
    ok = false;
  }
  if (t && df) ok = define_value(c, df, t->dtype, &v);
  sema_sym *s = sema_declare(c, SYM_CONST, p->name, p);
  s->type = ok ? t : NULL;
  s->cval = v;
  p->sema_ref = s;
}

static void check_param(sema_ctx *c, ast_node *p) {
  const ir_type *t = p->type ? sema_resolve_type(c, p->type) : NULL;
  if (!p->type) su_error(c->d, p->name_loc, "kernel parameter '%s' needs a type", p->name);
  if (t && t->kind == IR_SCALAR && ir_dtype_is_fp8(t->dtype)) {
    /* no launch API passes a byte-sized float; an f32 converted in the kernel costs nothing */
    su_error(c->d, p->type->loc, "kernel parameter '%s' cannot be %s: fp8 is a storage type",
             p->name, ir_dtype_name(t->dtype));
    su_note(c->d, p->type->loc, "take an f32 and convert it ('x as %s'), or a pointer '*%s'",
            ir_dtype_name(t->dtype), ir_dtype_name(t->dtype));
    t = NULL;
  }
  sema_sym *s = sema_declare(c, SYM_PARAM, p->name, p);
  s->type = t;
  p->sema_ref = s;
}

/* Checks a launch attribute's value (from the source or a define) against its range. */
static bool attr_ok(sema_ctx *c, su_loc loc, const char *name, int64_t v) {
  bool warps = !strcmp(name, "warps");
  if (warps && !(sema_is_pow2(v) && v <= 32)) {
    su_error(c->d, loc, "'warps' must be a power of two between 1 and 32, got %lld", (long long)v);
    return false;
  }
  if (!warps && (v < 1 || v > 8)) {
    su_error(c->d, loc, "'%s' must be between 1 and 8, got %lld", name, (long long)v);
    return false;
  }
  return true;
}

static void set_attr(sema_kernel *info, int which, int64_t v) {
  *attr_field(info, which) = ATTRS[which].boolean ? (v ? 1 : -1) : (int)v;
}

static void check_attrs(sema_ctx *c, ast_node *k, sema_kernel *info) {
  bool seen[NATTRS] = {false};
  for (int i = 0; i < k->attrs.len; i++) {
    ast_node *a = k->attrs.items[i];
    int which = attr_index(a->name);
    if (which < 0) {
      su_error(c->d, a->name_loc,
               "unknown launch attribute '%s'; expected warps, stages, warp_specialize, persistent, "
               "programs_per_sm, pdl or streamk",
               a->name);
      continue;
    }
    if (seen[which]) {
      su_error(c->d, a->name_loc, "launch attribute '%s' given twice", a->name);
      continue;
    }
    seen[which] = true;
    if (!a->rhs) continue;
    if (ATTRS[which].boolean) {
      const ir_type *t = sema_check_value(c, a->rhs);
      if (t && (t != ir_type_scalar(c->m, TK_I1) || !a->rhs->sema_is_const)) {
        su_error(c->d, a->rhs->loc, "'%s' must be true or false", a->name);
        continue;
      }
      if (t) set_attr(info, which, sema_const_as(a->rhs, TK_I1).i);
      continue;
    }
    int64_t v;
    if (sema_const_int(c, a->rhs, su_fmt(c->a, "'%s'", a->name), &v) && attr_ok(c, a->rhs->loc, a->name, v))
      set_attr(info, which, v);
  }
  for (int i = 0; i < NATTRS; i++) {
    const sema_define *df = find_define(c, ATTRS[i].name);
    int64_t v;
    if (!df) continue;
    const char *s = df->value ? df->value : "";
    if (ATTRS[i].boolean) {
      if (strcmp(s, "true") && strcmp(s, "false")) {
        su_error(c->d, no_loc, "define '%s' expects true or false, got '%s'", ATTRS[i].name, s);
        continue;
      }
      set_attr(info, i, !strcmp(s, "true"));
      continue;
    }
    if (!parse_int(s, &v)) {
      su_error(c->d, no_loc, "define '%s' expects an integer, got '%s'", ATTRS[i].name, s);
      continue;
    }
    if (attr_ok(c, no_loc, ATTRS[i].name, v)) set_attr(info, i, v);
  }
}

/* The early exits of a kernel: `return;` as the last statement of a branch of an `if`
 * (or of an else-if chain) at the kernel's top level, the Triton idiom
 * `if pid >= n: return`. They are marked (ival 1) for check_return, and the lowering
 * puts the statements after such an `if` into the branches that do not return. */
static void mark_exits(ast_node *s) {
  if (!s || s->kind != AST_IF) return;
  ast_node *arms[2] = {s->body, s->els};
  for (int i = 0; i < 2; i++) {
    ast_node *b = arms[i];
    if (b && b->kind == AST_IF) mark_exits(b);
    else if (b && b->kind == AST_BLOCK && b->stmts.len && b->stmts.items[b->stmts.len - 1]->kind == AST_RETURN)
      b->stmts.items[b->stmts.len - 1]->ival = 1;
  }
}

static void check_kernel(sema_ctx *c, ast_node *k) {
  sema_kernel *info = SU_NEW(c->a, sema_kernel);
  info->warps = TG_DEFAULT_WARPS;
  info->stages = TG_DEFAULT_STAGES;
  k->sema_ref = info;
  sema_scope_push(c);
  for (int i = 0; i < k->cparams.len; i++) bind_cparam(c, k->cparams.items[i]);
  check_attrs(c, k, info);
  for (int i = 0; i < k->params.len; i++) check_param(c, k->params.items[i]);
  c->func = k;
  c->in_helper = false;
  c->ret_stmt = NULL;
  for (int i = 0; k->body && i < k->body->stmts.len; i++) mark_exits(k->body->stmts.items[i]);
  sema_check_body(c, k->body);
  sema_scope_pop(c);
}

/* inf and nan are predeclared weak f32 constants. */
static void predeclare(sema_ctx *c, const char *name, double v) {
  sema_sym *s = SU_NEW(c->a, sema_sym);
  s->kind = SYM_CONST;
  s->name = name;
  s->type = ir_type_scalar(c->m, TK_F32);
  s->weak = true;
  s->state = 2;
  s->cval.f = v;
  s->next = c->global->syms;
  c->global->syms = s;
  su_map_put(c->global->index, name, strlen(name), s);
}

bool sema_check(su_arena *a, ast_file *f, ir_module *m, const sema_options *opt, su_diags *d) {
  sema_ctx c = {.a = a, .m = m, .d = d, .opt = opt};
  int nerr0 = d->nerrors;
  sema_scope_push(&c);
  c.global = c.scope;
  c.global->index = su_map_new(a);
  predeclare(&c, "inf", INFINITY);
  predeclare(&c, "nan", NAN);
  for (int i = 0; i < f->decls.len; i++) {
    ast_node *dcl = f->decls.items[i];
    sema_sym_kind k = dcl->kind == AST_KERNEL ? SYM_KERNEL : dcl->kind == AST_FUNC ? SYM_FUNC : SYM_CONST;
    if (!dcl->name) continue;
    /* A file-level name equal to a builtin's would leave calls ambiguous to the reader. */
    if (sema_builtin_find(dcl->name)) {
      su_error(d, dcl->name_loc, "'%s' is a builtin and cannot be redeclared", dcl->name);
      continue;
    }
    sema_sym *s = sema_declare(&c, k, dcl->name, dcl);
    dcl->sema_ref = k == SYM_CONST ? s : NULL;
  }
  check_defines_used(&c, f);
  for (int i = 0; i < f->decls.len; i++) {
    ast_node *dcl = f->decls.items[i];
    if (dcl->kind == AST_CONST && dcl->sema_ref) sema_check_global_const(&c, dcl->sema_ref);
  }
  for (int i = 0; i < f->decls.len; i++)
    if (f->decls.items[i]->kind == AST_KERNEL) check_kernel(&c, f->decls.items[i]);
  return d->nerrors == nerr0;
}
