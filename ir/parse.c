/* The text parser: recursive descent over irlex tokens, building through ir_op_new so
 * that anything the printer writes comes back op for op. It checks what it needs to build
 * well-formed data (names defined once and in scope, types constructible, counts of
 * results matching their types); everything semantic is ir_verify's job. The first error
 * is reported, located in the .tkir text, and parsing stops (longjmp: all memory is in the
 * arena, so nothing leaks). */
#include "irlex.h"
#include "syntax.h"

#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

/* Limits that keep hostile input from exhausting memory or the stack: a dimension, and
 * how deeply regions nest (the printer and verifier recurse as deep). */
enum { MAX_DIM = 1 << 24, MAX_NESTING = 200 };

/* A name bound in the innermost enclosing region; popped when the region closes. */
typedef struct scope_entry {
  const char *name;
  size_t len;
  struct scope_entry *next;
} scope_entry;

typedef struct {
  su_arena *arena;
  su_diags *diags;
  irlex lx;
  irtok tok;
  ir_module *m;
  su_map *values; /* "%name" -> ir_value*, NULL when out of scope */
  su_map *kernels; /* name -> ir_func*: redefinitions found in constant time */
  scope_entry *scope;
  int depth;       /* regions being parsed */
  int slice_depth; /* slice layouts being parsed (their own bound: a slice in a deep loop nest is fine) */
  jmp_buf fail;
} parser;

/* A growable arena array (old copies are abandoned, which is fine for parser sizes and
 * keeps longjmp leak-free). */
typedef struct {
  void **data;
  int len, cap;
} ptrvec;

static void pv_push(su_arena *a, ptrvec *v, void *p) {
  if (v->len == v->cap) {
    int cap = v->cap ? v->cap * 2 : 8;
    void **d = SU_NEW_ARRAY(a, void *, cap);
    if (v->len) memcpy(d, v->data, sizeof *d * (size_t)v->len);
    v->data = d;
    v->cap = cap;
  }
  v->data[v->len++] = p;
}

static const char *describe(const irtok *t) {
  switch (t->kind) {
  case IRT_EOF: return "end of input";
  case IRT_IDENT: return "an identifier";
  case IRT_INT: return "an integer";
  case IRT_FLOAT: return "a float";
  case IRT_DIM: return "a tile dimension";
  case IRT_VALUE: return "a value";
  case IRT_GLOBAL: return "a kernel name";
  case IRT_LOC: return "a location";
  case IRT_STRING: return "a string";
  case IRT_HINT: return "a name comment";
  case IRT_PUNCT: return t->text[0] == '{' ? "'{'" : "punctuation";
  case IRT_ERROR: return "an invalid token";
  }
  return "a token";
}

_Noreturn static void fail_at(parser *p, su_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn static void fail_at(parser *p, su_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  su_verror(p->diags, loc, fmt, ap);
  va_end(ap);
  longjmp(p->fail, 1);
}

static void next(parser *p) {
  p->tok = irlex_next(&p->lx);
  if (p->tok.kind == IRT_ERROR) fail_at(p, p->tok.loc, "%s", p->tok.text);
}

static bool is_punct(const parser *p, char c) {
  return p->tok.kind == IRT_PUNCT && p->tok.text[0] == c;
}

static bool is_word(const parser *p, const char *w) {
  return p->tok.kind == IRT_IDENT && p->tok.len == strlen(w) && memcmp(p->tok.text, w, p->tok.len) == 0;
}

static void expect_punct(parser *p, char c) {
  if (!is_punct(p, c)) fail_at(p, p->tok.loc, "expected '%c', found %s", c, describe(&p->tok));
  next(p);
}

static void expect_word(parser *p, const char *w) {
  if (!is_word(p, w)) fail_at(p, p->tok.loc, "expected '%s', found %s", w, describe(&p->tok));
  next(p);
}

static bool accept_punct(parser *p, char c) {
  if (!is_punct(p, c)) return false;
  next(p);
  return true;
}

static int64_t parse_int(parser *p, int64_t lo, int64_t hi, const char *what) {
  if (p->tok.kind != IRT_INT) fail_at(p, p->tok.loc, "expected %s, found %s", what, describe(&p->tok));
  char *s = su_strndup(p->arena, p->tok.text, p->tok.len);
  errno = 0;
  long long v = strtoll(s, NULL, 10);
  if (errno || v < lo || v > hi)
    fail_at(p, p->tok.loc, "%s %s out of range [%lld, %lld]", what, s, (long long)lo, (long long)hi);
  next(p);
  return v;
}

static const char *parse_ident(parser *p, const char *what) {
  if (p->tok.kind != IRT_IDENT && p->tok.kind != IRT_STRING)
    fail_at(p, p->tok.loc, "expected %s, found %s", what, describe(&p->tok));
  const char *s = su_strndup(p->arena, p->tok.text, p->tok.len);
  next(p);
  return s;
}

static ir_loc parse_loc_opt(parser *p) {
  ir_loc l = {0, 0};
  if (p->tok.kind == IRT_LOC) {
    l.line = p->tok.line;
    l.col = p->tok.col;
    next(p);
  }
  return l;
}

/* ---- types -------------------------------------------------------------------------- */

/* Parses `key=[a,b,...]`, the list's length fixing the layout's rank on first use. */
static void parse_layout_field(parser *p, const char *key, int *out, int *rank) {
  expect_word(p, key);
  expect_punct(p, '=');
  su_loc at = p->tok.loc;
  expect_punct(p, '[');
  int n = 0;
  while (!is_punct(p, ']')) {
    if (n) expect_punct(p, ',');
    if (n == IR_MAX_RANK) fail_at(p, p->tok.loc, "layout rank exceeds %d", IR_MAX_RANK);
    out[n++] = (int)parse_int(p, 0, MAX_DIM, "a layout entry");
  }
  next(p);
  if (n == 0) fail_at(p, at, "empty layout list '%s'", key);
  if (*rank && n != *rank) fail_at(p, at, "'%s' has %d entries, expected %d", key, n, *rank);
  *rank = n;
}

static const ir_layout *parse_layout(parser *p) {
  su_loc at = p->tok.loc;
  expect_punct(p, '#');
  ir_layout l;
  memset(&l, 0, sizeof l);
  if (is_word(p, "slice")) {
    /* A slice removes a dim, so a chain of them is at most IR_MAX_RANK deep. */
    if (++p->slice_depth > IR_MAX_RANK) fail_at(p, at, "slice layouts nested too deeply");
    next(p);
    expect_punct(p, '<');
    expect_word(p, "dim");
    expect_punct(p, '=');
    su_loc dim_at = p->tok.loc;
    l.kind = IR_LAYOUT_SLICE;
    l.slice_dim = (int)parse_int(p, 0, IR_MAX_RANK - 1, "a slice dim");
    expect_punct(p, ',');
    expect_word(p, "parent");
    expect_punct(p, '=');
    l.parent = parse_layout(p);
    expect_punct(p, '>');
    if (l.parent->rank < 2 || l.slice_dim >= l.parent->rank)
      fail_at(p, dim_at, "slice dim %d of a rank-%d parent layout", l.slice_dim, l.parent->rank);
    p->slice_depth--;
    return ir_layout_intern(p->m, &l);
  }
  if (is_word(p, "shared")) {
    next(p);
    expect_punct(p, '<');
    l.kind = IR_LAYOUT_SHARED;
    expect_word(p, "swizzle");
    expect_punct(p, '=');
    su_loc sw_at = p->tok.loc;
    l.swizzle = (int)parse_int(p, 0, 128, "a swizzle width");
    if (l.swizzle != 0 && l.swizzle != 32 && l.swizzle != 64 && l.swizzle != 128)
      fail_at(p, sw_at, "swizzle must be 0, 32, 64 or 128 (bytes)");
    expect_punct(p, ',');
    parse_layout_field(p, "order", l.order, &l.rank);
    expect_punct(p, '>');
    return ir_layout_intern(p->m, &l);
  }
  if (is_word(p, "blocked"))
    l.kind = IR_LAYOUT_BLOCKED;
  else if (is_word(p, "mma"))
    l.kind = IR_LAYOUT_MMA;
  else if (is_word(p, "wgmma"))
    l.kind = IR_LAYOUT_WGMMA;
  else
    fail_at(p, at, "expected a layout (#blocked, #slice, #mma, #wgmma, #shared), found %s",
            describe(&p->tok));
  next(p);
  expect_punct(p, '<');
  parse_layout_field(p, "spt", l.size_per_thread, &l.rank);
  expect_punct(p, ',');
  if (is_word(p, "rpw")) {
    parse_layout_field(p, "rpw", l.reps_per_warp, &l.rank);
    expect_punct(p, ',');
  }
  parse_layout_field(p, "tpw", l.threads_per_warp, &l.rank);
  expect_punct(p, ',');
  parse_layout_field(p, "wpc", l.warps_per_cta, &l.rank);
  expect_punct(p, ',');
  parse_layout_field(p, "order", l.order, &l.rank);
  expect_punct(p, '>');
  return ir_layout_intern(p->m, &l);
}

static const ir_type *parse_type(parser *p);

static const ir_type *parse_elem_type(parser *p, bool allow_ptr) {
  su_loc at = p->tok.loc;
  const ir_type *t = parse_type(p);
  if (t->kind != IR_SCALAR && !(allow_ptr && t->kind == IR_PTR)) /* tiles, tmap, mbar, smem */
    fail_at(p, at, "expected a scalar%s type here", allow_ptr ? " or pointer" : "");
  return t;
}

static const ir_type *parse_type(parser *p) {
  su_loc at = p->tok.loc;
  if (p->tok.kind != IRT_IDENT) fail_at(p, at, "expected a type, found %s", describe(&p->tok));
  if (is_word(p, "ptr")) {
    next(p);
    expect_punct(p, '<');
    const ir_type *pointee = parse_elem_type(p, false);
    expect_punct(p, '>');
    return ir_type_ptr(p->m, pointee);
  }
  bool smem = is_word(p, "smem");
  if (is_word(p, "tile") || smem) {
    next(p);
    expect_punct(p, '<');
    int shape[IR_MAX_RANK], rank = 0;
    while (p->tok.kind == IRT_DIM) {
      if (rank == IR_MAX_RANK) fail_at(p, p->tok.loc, "tile rank exceeds %d", IR_MAX_RANK);
      char *s = su_strndup(p->arena, p->tok.text, p->tok.len);
      long v = strtol(s, NULL, 10);
      if (p->tok.len > 9 || v < 1 || v > MAX_DIM)
        fail_at(p, p->tok.loc, "tile dimension %s out of range [1, %d]", s, MAX_DIM);
      shape[rank++] = (int)v;
      next(p);
    }
    if (rank == 0 || (smem && rank < 2))
      fail_at(p, p->tok.loc, smem ? "expected a buffer shape like 3x128x64xf16 (slots first)"
                                  : "expected a tile shape like 128x64xf32");
    const ir_type *elem = parse_elem_type(p, !smem);
    if (smem) {
      expect_punct(p, ',');
      su_loc lat = p->tok.loc;
      const ir_layout *l = parse_layout(p);
      if (l->kind != IR_LAYOUT_SHARED || l->rank != rank - 1)
        fail_at(p, lat, "a shared buffer takes a #shared layout of its slot's rank (%d)", rank - 1);
      expect_punct(p, '>');
      return ir_type_smem(p->m, elem, rank, shape, l);
    }
    const ir_type *t = ir_type_tile(p->m, elem, rank, shape);
    if (accept_punct(p, ',')) {
      su_loc lat = p->tok.loc;
      const ir_layout *l = parse_layout(p);
      if (l->kind == IR_LAYOUT_SHARED) fail_at(p, lat, "a #shared layout belongs to a shared buffer, not a tile");
      t = ir_type_with_layout(p->m, t, l);
    }
    expect_punct(p, '>');
    return t;
  }
  if (is_word(p, "mbar")) {
    next(p);
    expect_punct(p, '<');
    int n = (int)parse_int(p, 1, 1024, "a barrier count");
    expect_punct(p, '>');
    return ir_type_mbar(p->m, n);
  }
  if (is_word(p, "tmap")) {
    next(p);
    return ir_type_tmap(p->m);
  }
  tk_dtype dt;
  if (!ir_dtype_parse(p->tok.text, p->tok.len, &dt) || dt == TK_PTR)
    fail_at(p, at, "unknown type '%.*s'", (int)p->tok.len, p->tok.text);
  next(p);
  return ir_type_scalar(p->m, dt);
}

/* ---- values and scopes -------------------------------------------------------------- */

static ir_value *use_value(parser *p) {
  if (p->tok.kind != IRT_VALUE) fail_at(p, p->tok.loc, "expected a value, found %s", describe(&p->tok));
  ir_value *v = su_map_get(p->values, p->tok.text, p->tok.len);
  if (!v) fail_at(p, p->tok.loc, "use of undefined value '%%%.*s'", (int)p->tok.len, p->tok.text);
  next(p);
  return v;
}

/* Binds the current %name token (checked by the caller) to v in the innermost scope. */
static void define_value(parser *p, const irtok *name, ir_value *v) {
  if (su_map_get(p->values, name->text, name->len))
    fail_at(p, name->loc, "redefinition of '%%%.*s'", (int)name->len, name->text);
  su_map_put(p->values, name->text, name->len, v);
  scope_entry *e = SU_NEW(p->arena, scope_entry);
  e->name = name->text;
  e->len = name->len;
  e->next = p->scope;
  p->scope = e;
}

static void pop_scope(parser *p, scope_entry *mark) {
  for (; p->scope != mark; p->scope = p->scope->next)
    su_map_put(p->values, p->scope->name, p->scope->len, NULL);
}

/* `%name` optionally followed by a name hint comment: returns the name token and sets
 * *hint (NULL if none). */
static irtok parse_def_name(parser *p, const char **hint) {
  if (p->tok.kind != IRT_VALUE) fail_at(p, p->tok.loc, "expected a value name, found %s", describe(&p->tok));
  irtok name = p->tok;
  next(p);
  *hint = NULL;
  if (p->tok.kind == IRT_HINT) {
    *hint = su_strndup(p->arena, p->tok.text, p->tok.len);
    next(p);
  }
  return name;
}

/* ---- ops ---------------------------------------------------------------------------- */

static void parse_block_body(parser *p, ir_block *blk);

static void parse_region(parser *p, ir_op *op) {
  if (++p->depth > MAX_NESTING) fail_at(p, p->tok.loc, "regions nested more than %d deep", MAX_NESTING);
  expect_punct(p, '{');
  ir_block *blk = ir_op_add_region(p->m, op, 0, NULL);
  scope_entry *mark = p->scope;
  if (accept_punct(p, '^')) {
    expect_word(p, "bb");
    expect_punct(p, '(');
    while (!is_punct(p, ')')) {
      if (blk->nargs) expect_punct(p, ',');
      const char *hint;
      irtok name = parse_def_name(p, &hint);
      expect_punct(p, ':');
      ir_value *v = ir_block_add_arg(p->m, blk, parse_type(p));
      v->name = hint;
      define_value(p, &name, v);
    }
    next(p);
    expect_punct(p, ':');
  }
  parse_block_body(p, blk);
  expect_punct(p, '}');
  pop_scope(p, mark);
  p->depth--;
}

/* Converts the literal of a const op once its result type is known. */
static void set_const(parser *p, ir_op *op, const irtok *lit) {
  if (op->nresults != 1) fail_at(p, lit->loc, "const has exactly one result");
  tk_dtype dt = op->results[0]->type->dtype;
  char *s = su_strndup(p->arena, lit->text, lit->len);
  errno = 0;
  if (ir_dtype_is_float(dt)) {
    op->cval.f = strtod(s, NULL);
    return;
  }
  if (lit->kind != IRT_INT || dt == TK_PTR)
    fail_at(p, lit->loc, "constant %s does not fit type %s", s, ir_dtype_name(dt));
  if (ir_dtype_is_signed(dt) || dt == TK_I1) {
    op->cval.i = strtoll(s, NULL, 10);
  } else {
    if (s[0] == '-') fail_at(p, lit->loc, "negative constant %s for unsigned type %s", s, ir_dtype_name(dt));
    op->cval.i = (int64_t)strtoull(s, NULL, 10);
  }
  if (errno) fail_at(p, lit->loc, "constant %s out of range", s);
}

static void parse_modifier(parser *p, ir_op *op, ir_modifier mod, irtok *lit) {
  if (mod == IR_MOD_NONE) return;
  if (mod == IR_MOD_WHILE || mod == IR_MOD_FTZ || mod == IR_MOD_LIKELY) {
    const char *word = ir_flag_word(mod);
    size_t n = strlen(word);
    if (p->tok.kind == IRT_IDENT && p->tok.len == n && !memcmp(p->tok.text, word, n)) {
      op->attr = 1;
      next(p);
    }
    /* fuse's mark on a chunk loop for the cluster keep: `for cluster[C, n] ...` (a word
     * before the operands: after them a `{` would open the body) */
    if (mod == IR_MOD_WHILE && is_word(p, "cluster")) {
      next(p);
      expect_punct(p, '[');
      int *k = SU_NEW_ARRAY(p->arena, int, 2);
      k[0] = (int)parse_int(p, 0, 64, "a cluster size");
      expect_punct(p, ',');
      k[1] = (int)parse_int(p, 0, 1 << 20, "a count of loops");
      expect_punct(p, ']');
      op->ints = k;
      op->nints = 2;
    }
    return;
  }
  if (mod == IR_MOD_SEM) {
    int k = p->tok.kind == IRT_IDENT ? ir_sem_parse(p->tok.text, p->tok.len) : -1;
    if (k > 0) {
      op->attr2 = k;
      next(p);
    }
    return;
  }
  if (mod == IR_MOD_WG) {
    if (p->tok.kind == IRT_IDENT && p->tok.len == 2 && !memcmp(p->tok.text, "wg", 2)) {
      op->attr2 = 1;
      next(p);
    }
    return;
  }
  if (mod == IR_MOD_ACCURATE) {
    if (p->tok.kind == IRT_IDENT && p->tok.len == 8 && !memcmp(p->tok.text, "accurate", 8)) {
      op->attr = 1;
      next(p);
    }
    return;
  }
  if (mod == IR_MOD_PRECISION) {
    int k = p->tok.kind == IRT_IDENT ? ir_dot_precision_parse(p->tok.text, p->tok.len) : -1;
    if (k >= 0) {
      op->attr = k;
      next(p);
    }
    return;
  }
  if (mod == IR_MOD_CACHE) {
    int k = p->tok.kind == IRT_IDENT ? ir_cache_parse(p->tok.text, p->tok.len) : -1;
    if (k >= 0) {
      op->attr = k;
      next(p);
    }
    k = p->tok.kind == IRT_IDENT ? ir_evict_parse(p->tok.text, p->tok.len) : -1;
    if (k >= 0) {
      op->attr2 = k;
      next(p);
    }
    if (p->tok.kind == IRT_IDENT)
      fail_at(p, p->tok.loc, "expected a cache hint (ca cg cs lu cv wb wt) or an eviction priority "
              "(evict_first evict_last) after '%s', found %s", ir_op_info(op->opc)->name, describe(&p->tok));
    return;
  }
  if (mod == IR_MOD_CONST) {
    if (p->tok.kind != IRT_INT && p->tok.kind != IRT_FLOAT)
      fail_at(p, p->tok.loc, "expected a constant value, found %s", describe(&p->tok));
    *lit = p->tok;
    next(p);
    return;
  }
  int k = -1;
  if (p->tok.kind == IRT_IDENT) {
    if (mod == IR_MOD_CMP) k = ir_cmp_parse(p->tok.text, p->tok.len);
    if (mod == IR_MOD_REDUCE) k = ir_reduce_parse(p->tok.text, p->tok.len);
    if (mod == IR_MOD_ATOMIC) k = ir_atomic_parse(p->tok.text, p->tok.len);
  }
  if (k < 0)
    fail_at(p, p->tok.loc, "expected a %s after '%s'",
            mod == IR_MOD_CMP ? "predicate (eq ne lt le gt ge)"
            : mod == IR_MOD_REDUCE ? "kind (sum max min)"
                                   : "kind (add max min and or xor xchg)",
            ir_op_info(op->opc)->name);
  op->attr = k;
  next(p);
  if (op->opc == IR_ATOMIC) parse_modifier(p, op, IR_MOD_SEM, lit);
}

static void parse_attrs(parser *p, ir_op *op, const ir_syntax *syn) {
  if (syn->nattrs == 0 || !accept_punct(p, '{')) return;
  unsigned seen = 0;
  do {
    su_loc at = p->tok.loc;
    const ir_attr_spec *a = NULL;
    for (int i = 0; i < syn->nattrs; i++)
      if (is_word(p, syn->attrs[i].key)) a = &syn->attrs[i];
    if (!a) fail_at(p, at, "unknown attribute for '%s'", ir_op_info(op->opc)->name);
    unsigned bit = 1u << (a - syn->attrs);
    if (seen & bit) fail_at(p, at, "duplicate attribute '%s'", a->key);
    seen |= bit;
    next(p);
    expect_punct(p, '=');
    switch (a->slot) {
    case IR_SLOT_ATTR: op->attr = parse_int(p, INT64_MIN, INT64_MAX, "an integer"); break;
    case IR_SLOT_ATTR2: case IR_SLOT_EXP: op->attr2 = parse_int(p, INT64_MIN, INT64_MAX, "an integer"); break;
    case IR_SLOT_SCALE:
      if (p->tok.kind != IRT_FLOAT && p->tok.kind != IRT_INT)
        fail_at(p, p->tok.loc, "expected a number, found %s", describe(&p->tok));
      op->cval.f = strtod(su_strndup(p->arena, p->tok.text, p->tok.len), NULL);
      next(p);
      break;
    case IR_SLOT_STR:
      if (p->tok.kind != IRT_STRING) fail_at(p, p->tok.loc, "expected a string, found %s", describe(&p->tok));
      op->str = p->tok.text;
      next(p);
      break;
    case IR_SLOT_INTS: {
      int buf[IR_MAX_RANK];
      expect_punct(p, '[');
      int n = 0;
      while (!is_punct(p, ']')) {
        if (n) expect_punct(p, ',');
        if (n == IR_MAX_RANK) fail_at(p, p->tok.loc, "more than %d entries", IR_MAX_RANK);
        buf[n++] = (int)parse_int(p, 0, MAX_DIM, "a list entry");
      }
      next(p);
      op->ints = su_memdup(p->arena, buf, sizeof(int) * (size_t)(n ? n : 1));
      op->nints = n;
      break;
    }
    }
  } while (accept_punct(p, ','));
  expect_punct(p, '}');
}

/* op := [defs '='] NAME [modifier] [operands] [attrs] [':' types] [regions] [@L:C] */
static void parse_op(parser *p, ir_block *blk) {
  ptrvec names = {0}, hints = {0}, opnds = {0}, types = {0};
  su_loc start = p->tok.loc;
  if (p->tok.kind == IRT_VALUE) {
    do {
      irtok *name = SU_NEW(p->arena, irtok);
      const char *hint;
      *name = parse_def_name(p, &hint);
      pv_push(p->arena, &names, name);
      pv_push(p->arena, &hints, (void *)hint);
    } while (accept_punct(p, ','));
    expect_punct(p, '=');
  }
  if (p->tok.kind != IRT_IDENT) fail_at(p, p->tok.loc, "expected an op name, found %s", describe(&p->tok));
  int opc = -1;
  for (int i = 0; i < IR_NOPCODES && opc < 0; i++) {
    const char *n = ir_op_info((ir_opcode)i)->name;
    if (strlen(n) == p->tok.len && memcmp(n, p->tok.text, p->tok.len) == 0) opc = i;
  }
  if (opc < 0) fail_at(p, p->tok.loc, "unknown op '%.*s'", (int)p->tok.len, p->tok.text);
  su_loc op_at = p->tok.loc;
  next(p);
  /* The modifier and attributes are parsed into a prototype before the operand and result
   * counts are known; the real op is made from it below. */
  ir_op proto;
  memset(&proto, 0, sizeof proto);
  proto.opc = (ir_opcode)opc;
  ir_op *op = &proto;
  const ir_syntax *syn = ir_op_syntax(op->opc);
  irtok lit = p->tok; /* replaced by the constant literal, for const */
  parse_modifier(p, op, syn->mod, &lit);
  if (p->tok.kind == IRT_VALUE) {
    do pv_push(p->arena, &opnds, use_value(p));
    while (accept_punct(p, ','));
  }
  parse_attrs(p, op, syn);
  if (accept_punct(p, ':')) {
    if (accept_punct(p, '(')) {
      do pv_push(p->arena, &types, (void *)parse_type(p));
      while (accept_punct(p, ','));
      expect_punct(p, ')');
    } else {
      pv_push(p->arena, &types, (void *)parse_type(p));
    }
  }
  if (names.len != types.len)
    fail_at(p, names.len ? start : op_at, "'%s' defines %d value%s but has %d result type%s",
            ir_op_info(op->opc)->name, names.len, names.len == 1 ? "" : "s", types.len,
            types.len == 1 ? "" : "s");
  ir_op *full = ir_op_new(p->m, op->opc, op->loc, opnds.len, (ir_value *const *)opnds.data,
                          types.len, (const ir_type *const *)types.data);
  full->attr = op->attr;
  full->attr2 = op->attr2;
  full->ints = op->ints;
  full->nints = op->nints;
  full->str = op->str;
  full->cval = op->cval; /* erfc's `in` */
  if (syn->mod == IR_MOD_CONST) set_const(p, full, &lit);
  if (ir_op_info(full->opc)->traits & IR_REGION) {
    parse_region(p, full);
    while (is_punct(p, '{') || is_word(p, "else")) {
      if (is_word(p, "else")) next(p);
      parse_region(p, full);
    }
  }
  full->loc = parse_loc_opt(p);
  ir_block_insert_before(blk, full, NULL);
  /* Results come into scope after the op, so an op cannot use its own results. */
  for (int i = 0; i < names.len; i++) {
    full->results[i]->name = hints.data[i];
    define_value(p, names.data[i], full->results[i]);
  }
}

static void parse_block_body(parser *p, ir_block *blk) {
  while (!is_punct(p, '}')) {
    if (p->tok.kind == IRT_EOF) fail_at(p, p->tok.loc, "expected '}' before end of input");
    parse_op(p, blk);
  }
}

/* ---- kernels and the module --------------------------------------------------------- */

static void parse_bindings(parser *p, ir_func *f) {
  ptrvec v = {0};
  expect_punct(p, '(');
  while (!is_punct(p, ')')) {
    if (v.len) expect_punct(p, ',');
    ir_binding *b = SU_NEW(p->arena, ir_binding);
    b->name = parse_ident(p, "a binding name");
    expect_punct(p, '=');
    if (p->tok.kind == IRT_FLOAT || p->tok.kind == IRT_INT) {
      char *s = su_strndup(p->arena, p->tok.text, p->tok.len);
      errno = 0;
      b->is_float = p->tok.kind == IRT_FLOAT;
      if (b->is_float)
        b->fval = strtod(s, NULL);
      else
        b->ival = strtoll(s, NULL, 10);
      if (errno && !b->is_float) fail_at(p, p->tok.loc, "binding value %s out of range", s);
      next(p);
    } else if (p->tok.kind == IRT_IDENT) {
      /* a dtype parameter's binding: T = bf16 */
      tk_dtype dt;
      if (!ir_dtype_parse(p->tok.text, p->tok.len, &dt) || dt == TK_PTR)
        fail_at(p, p->tok.loc, "expected a number or a dtype, found %s", describe(&p->tok));
      b->is_dtype = true;
      b->ival = dt;
      next(p);
    } else {
      fail_at(p, p->tok.loc, "expected a number or a dtype, found %s", describe(&p->tok));
    }
    pv_push(p->arena, &v, b);
  }
  next(p);
  f->nbindings = v.len;
  f->bindings = SU_NEW_ARRAY(p->arena, ir_binding, v.len ? v.len : 1);
  for (int i = 0; i < v.len; i++) f->bindings[i] = *(ir_binding *)v.data[i];
}

/* `{div = D}` or `{pos}` after the last parameter's type: what is known about its
 * values. */
static void parse_param_facts(parser *p, ir_func *f) {
  int i = f->body->nargs - 1;
  const ir_type *t = f->body->args[i]->type;
  su_loc at = p->tok.loc;
  expect_punct(p, '{');
  if (is_word(p, "pos")) {
    next(p);
    expect_punct(p, '}');
    if (!ir_param_can_be_positive(t)) fail_at(p, at, "only f32 and f64 parameters can be known positive");
    ir_func_set_param_pos(p->m, f, i, true);
    return;
  }
  expect_word(p, "div");
  expect_punct(p, '=');
  su_loc dat = p->tok.loc;
  int64_t d = parse_int(p, 1, 1 << 30, "a divisibility");
  if (d & (d - 1)) fail_at(p, dat, "divisibility %lld is not a power of two", (long long)d);
  expect_punct(p, '}');
  if (!ir_param_can_divide(t)) fail_at(p, at, "only integer and pointer parameters take a divisibility");
  ir_func_set_param_div(p->m, f, i, (int)d);
}

static void parse_kernel(parser *p) {
  expect_word(p, "kernel");
  const char *name;
  su_loc name_at = p->tok.loc;
  if (p->tok.kind == IRT_GLOBAL) {
    name = su_strndup(p->arena, p->tok.text, p->tok.len);
    next(p);
  } else {
    expect_punct(p, '@');
    if (p->tok.kind != IRT_STRING) fail_at(p, p->tok.loc, "expected a kernel name, found %s", describe(&p->tok));
    name = p->tok.text;
    next(p);
  }
  if (su_map_get(p->kernels, name, strlen(name)))
    fail_at(p, name_at, "redefinition of kernel '%s'", name);
  ir_func *f = ir_func_new(p->m, name, (ir_loc){0, 0});
  su_map_put(p->kernels, name, strlen(name), f);
  scope_entry *mark = p->scope;
  expect_punct(p, '(');
  while (!is_punct(p, ')')) {
    if (f->body->nargs) expect_punct(p, ',');
    const char *hint;
    irtok vname = parse_def_name(p, &hint);
    expect_punct(p, ':');
    define_value(p, &vname, ir_func_add_param(p->m, f, hint, parse_type(p)));
    if (is_punct(p, '{')) parse_param_facts(p, f);
  }
  next(p);
  if (is_word(p, "warps")) {
    next(p);
    expect_punct(p, '(');
    f->num_warps = (int)parse_int(p, 1, 1024, "a warp count");
    expect_punct(p, ')');
  }
  if (is_word(p, "stages")) {
    next(p);
    expect_punct(p, '(');
    f->num_stages = (int)parse_int(p, 1, 1024, "a stage count");
    expect_punct(p, ')');
  }
  if (is_word(p, "per_sm")) {
    next(p);
    expect_punct(p, '(');
    f->programs_per_sm = (int)parse_int(p, 1, 64, "a count of programs per SM");
    expect_punct(p, ')');
  }
  if (is_word(p, "persistent")) {
    next(p);
    f->persistent = true;
  }
  if (is_word(p, "pdl")) {
    next(p);
    f->pdl = true;
  }
  if (is_word(p, "cluster")) {
    next(p);
    expect_punct(p, '(');
    f->cluster = (int)parse_int(p, 2, IR_CLUSTER_MAX, "a cluster of 2, 4, 8 or 16 CTAs");
    if (!ir_cluster_size_ok(f->cluster)) fail_at(p, p->tok.loc, "a cluster of 2, 4, 8 or 16 CTAs, not %d", f->cluster);
    expect_punct(p, ')');
  }
  if (is_word(p, "bind")) {
    next(p);
    parse_bindings(p, f);
  }
  if (is_word(p, "note")) {
    next(p);
    expect_punct(p, '(');
    if (p->tok.kind != IRT_STRING) fail_at(p, p->tok.loc, "expected a string, found %s", describe(&p->tok));
    f->note = p->tok.text;
    next(p);
    expect_punct(p, ')');
  }
  f->loc = parse_loc_opt(p);
  expect_punct(p, '{');
  parse_block_body(p, f->body);
  expect_punct(p, '}');
  pop_scope(p, mark);
}

ir_module *ir_parse(su_arena *a, const su_source *src, su_diags *d) {
  parser *p = SU_NEW(a, parser);
  p->arena = a;
  p->diags = d;
  p->values = su_map_new(a);
  p->kernels = su_map_new(a);
  irlex_init(&p->lx, a, src);
  if (setjmp(p->fail)) return NULL;
  next(p);
  expect_word(p, "module");
  if (p->tok.kind != IRT_STRING) fail_at(p, p->tok.loc, "expected the source name string, found %s", describe(&p->tok));
  p->m = ir_module_new(a, p->tok.text);
  next(p);
  while (p->tok.kind != IRT_EOF) parse_kernel(p);
  return p->m;
}
