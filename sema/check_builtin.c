/* sema/check_builtin.c — the typing rule of each builtin (docs/language.md, "Builtins").
 * Arguments arrive sorted into parameter order (check_call.c); each rule checks them and
 * returns the call's type. The lowering re-derives every conversion from the types left
 * here, so a rule only has to accept or reject and name the result. */
#include "sema_int.h"

#include <string.h>

enum { MAX_NUMEL = 1 << 20 };

static const char *tstr(sema_ctx *c, const ir_type *t) { return sema_type_quoted(c->a, t); }
static const ir_type *scalar(sema_ctx *c, tk_dtype d) { return ir_type_scalar(c->m, d); }
static const int *shape_of(const ir_type *t) { return t->kind == IR_TILE ? t->shape : NULL; }
static bool numeric(const ir_type *t) {
  return sema_elem(t)->kind == IR_SCALAR && sema_is_numeric(sema_elem(t)->dtype);
}

/* Is a string allowed as argument i of b? */
static bool string_arg(const sema_builtin *b, int i) {
  return (b->kind == B_DEVICE_PRINT && i == 0) || (b->kind == B_DOT && i == 3) ||
         ((b->kind == B_LOAD || b->kind == B_STORE || b->kind == B_ATOMIC || b->kind == B_ATOMIC_CAS) && i >= 3) ||
         ((b->kind == B_STATIC_ASSERT || b->kind == B_DEVICE_ASSERT) && i == 1);
}

/* A tile shape from compile-time dims argv[from..argc): powers of two, bounded. */
static bool const_dims(sema_ctx *c, ast_node *e, sema_call *cl, int from, int *rank, int *shape) {
  int n = cl->argc - from;
  if (n > IR_MAX_RANK) {
    su_error(c->d, e->loc, "a tile has at most %d dimensions", IR_MAX_RANK);
    return false;
  }
  int64_t numel = 1;
  for (int i = 0; i < n; i++) {
    int64_t v;
    ast_node *a = cl->argv[from + i];
    if (!sema_const_int(c, a, su_fmt(c->a, "dimension of '%s'", e->name), &v)) return false;
    if (!sema_is_pow2(v) || v > MAX_NUMEL) {
      su_error(c->d, a->loc, "dimension %lld of a tile must be a power of two", (long long)v);
      return false;
    }
    shape[i] = (int)v;
    numel *= v;
  }
  if (numel > MAX_NUMEL) {
    su_error(c->d, e->loc, "a tile of %lld elements exceeds the limit of %d", (long long)numel,
             MAX_NUMEL);
    return false;
  }
  *rank = n;
  return true;
}

/* A compile-time axis in [-rank, rank), normalized. */
static bool axis_arg(sema_ctx *c, ast_node *e, ast_node *a, const ir_type *t, int rank, int *axis) {
  int64_t v;
  if (!sema_const_int(c, a, su_fmt(c->a, "axis of '%s'", e->name), &v)) return false;
  if (v < -rank || v >= rank) {
    su_error(c->d, a->loc, "axis %lld is out of range for %s (rank %d)", (long long)v, tstr(c, t),
             sema_rank(t));
    return false;
  }
  *axis = (int)(v < 0 ? v + rank : v);
  return true;
}

/* Checks that a (type t) broadcasts to the shape of `to`, naming it `what`. */
static bool to_shape(sema_ctx *c, ast_node *a, const ir_type *t, const ir_type *to, const char *what) {
  int rank, shape[IR_MAX_RANK];
  bool ok = sema_broadcast_shapes(t, to, &rank, shape) && rank == sema_rank(to);
  for (int i = 0; ok && i < rank; i++) ok = shape[i] == to->shape[i];
  if (!ok)
    su_error(c->d, a->loc, "cannot broadcast %s %s to the shape of %s", what, tstr(c, t), tstr(c, to));
  return ok;
}

/* A value stored or compared through a pointer to `elem`: a weak constant adapts, anything
 * else must already have that dtype. */
static bool value_for(sema_ctx *c, ast_node *e, ast_node *a, const ir_type *t, const ir_type *elem,
                      const char *what) {
  const ir_type *te = sema_elem(t);
  if (te == elem) return true;
  if (sema_is_weak(a) && te->kind == IR_SCALAR && elem->kind == IR_SCALAR &&
      (ir_dtype_is_int(te->dtype) ? elem->dtype != TK_I1 : ir_dtype_is_float(elem->dtype)))
    return sema_weak_fits(c, a, elem->dtype);
  su_error(c->d, a->loc, "%s of '%s' has type %s, expected %s; convert it with 'as %s'", what,
           e->name, tstr(c, t), tstr(c, elem), sema_type_str(c->a, elem));
  return false;
}

static bool mask_arg(sema_ctx *c, ast_node *e, ast_node *m, const ir_type *ptr) {
  if (!m) return true;
  if (sema_elem(m->sema_type)->dtype != TK_I1 || sema_elem(m->sema_type)->kind != IR_SCALAR) {
    su_error(c->d, m->loc, "mask of '%s' must be i1, got %s", e->name, tstr(c, m->sema_type));
    return false;
  }
  return to_shape(c, m, m->sema_type, ptr, "mask");
}

static const ir_type *pointee_of(sema_ctx *c, ast_node *e, ast_node *p) {
  const ir_type *el = sema_elem(p->sema_type);
  if (el->kind != IR_PTR) {
    su_error(c->d, p->loc, "'%s' expects a pointer or a tile of pointers, got %s", e->name,
             tstr(c, p->sema_type));
    return NULL;
  }
  return el->elem;
}

/* Common type of n numeric operands after promotion and broadcasting. */
static const ir_type *common(sema_ctx *c, ast_node *e, ast_node **v, int n, bool want_float) {
  for (int i = 0; i < n; i++)
    if (!numeric(v[i]->sema_type)) {
      su_error(c->d, v[i]->loc, "argument of '%s' must be numeric, got %s", e->name,
               tstr(c, v[i]->sema_type));
      return NULL;
    }
  const ir_type *acc = v[0]->sema_type;
  tk_dtype d = sema_elem(acc)->dtype;
  bool weak = sema_is_weak(v[0]);
  int rank = sema_rank(acc), shape[IR_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = acc->shape[i];
  for (int i = 1; i < n; i++) {
    const ir_type *t = v[i]->sema_type;
    d = sema_promote(d, weak, sema_elem(t)->dtype, sema_is_weak(v[i]));
    weak = weak && sema_is_weak(v[i]);
    const ir_type *cur = sema_with_shape(c, scalar(c, d), rank, shape);
    if (!sema_broadcast(c, e->loc, v[i - 1], cur, v[i], t, &rank, shape)) return NULL;
  }
  if (want_float && !ir_dtype_is_float(d)) d = TK_F32;
  return sema_with_shape(c, scalar(c, d), rank, shape);
}

static tk_dtype sum_dtype(tk_dtype d) {
  if (d == TK_I1) return TK_I32;
  if (d == TK_F16 || d == TK_BF16) return TK_F32;
  return d;
}

static const ir_type *check_reduce(sema_ctx *c, ast_node *e, sema_call *cl) {
  const sema_builtin *b = cl->builtin;
  const ir_type *t = cl->argv[0]->sema_type;
  if (t->kind != IR_TILE || !numeric(t)) {
    su_error(c->d, cl->argv[0]->loc, "'%s' expects a tile of numbers, got %s", e->name, tstr(c, t));
    return NULL;
  }
  tk_dtype d = t->elem->dtype;
  if (b->kind == B_ARGREDUCE) d = TK_I32;
  else if (b->kind == B_CUMSUM || b->sub == IR_RED_SUM) d = sum_dtype(d);
  ast_node *ax = cl->argc > 1 ? cl->argv[1] : NULL;
  if (!ax) return scalar(c, d);
  int axis, rank = 0, shape[IR_MAX_RANK];
  if (!axis_arg(c, e, ax, t, t->rank, &axis)) return NULL;
  if (b->kind == B_CUMSUM) return sema_with_shape(c, scalar(c, d), t->rank, t->shape);
  for (int i = 0; i < t->rank; i++)
    if (i != axis) shape[rank++] = t->shape[i];
  return sema_with_shape(c, scalar(c, d), rank, shape);
}

/* dot's input_precision: a string literal naming one (Triton's names), else the compile
 * option's; recorded for f32 operands, and for fp8 ones, where anything but "tf32" keeps
 * the f32 sums of the f16 product instead of the tensor cores' fp8 accumulation (fp8dot).
 * The products of the other types are exact whatever it says (a dtype-generic kernel may
 * name it for every T). */
static bool check_precision(sema_ctx *c, sema_call *cl, tk_dtype in) {
  ast_node *p = cl->argc > 3 ? cl->argv[3] : NULL;
  int k = c->opt ? c->opt->dot_precision : IR_DOT_TF32;
  if (p) {
    k = p->kind == AST_STRING ? ir_dot_precision_parse(p->str, strlen(p->str)) : -1;
    if (k < 0) {
      su_error(c->d, p->loc, "input_precision of 'dot' must be \"ieee\", \"tf32\" or \"tf32x3\"");
      su_note(c->d, p->loc, "\"ieee\": f32 products and sums; \"tf32\": inputs rounded to tf32 "
              "on the tensor cores; \"tf32x3\": three tf32 products, close to f32");
      return false;
    }
  }
  cl->numerics = in == TK_F32 || ir_dtype_is_fp8(in) ? k : IR_DOT_TF32;
  return true;
}

/* dot(a, b, [acc]): [M, K] x [K, N], or batched, [B, M, K] x [B, K, N] (both 3-D, one B). */
static const ir_type *check_dot(sema_ctx *c, ast_node *e, sema_call *cl) {
  const ir_type *a = cl->argv[0]->sema_type, *b = cl->argv[1]->sema_type;
  for (int i = 0; i < 2; i++) {
    const ir_type *t = cl->argv[i]->sema_type;
    if (t->kind != IR_TILE || (t->rank != 2 && t->rank != 3)) {
      su_error(c->d, cl->argv[i]->loc, "'dot' expects 2-D tiles (or 3-D, batched), got %s", tstr(c, t));
      return NULL;
    }
  }
  int batch = 0; /* 0: not batched */
  if (a->rank != b->rank) {
    su_error(c->d, e->loc, "operands of 'dot' must both be 2-D or both 3-D (batched), got %s and %s",
             tstr(c, a), tstr(c, b));
    return NULL;
  }
  if (a->rank == 3) {
    if (a->shape[0] != b->shape[0]) {
      su_error(c->d, e->loc, "batch dimensions of 'dot' do not match: %s and %s", tstr(c, a), tstr(c, b));
      return NULL;
    }
    batch = a->shape[0];
    if (batch > SEMA_DOT_MAX_BATCH) {
      su_error(c->d, e->loc, "batch of 'dot' is %d; at most %d (each batch is its own product)",
               batch, SEMA_DOT_MAX_BATCH);
      return NULL;
    }
    int ms[2] = {a->shape[1], a->shape[2]}, ns[2] = {b->shape[1], b->shape[2]};
    a = ir_type_tile(c->m, a->elem, 2, ms);
    b = ir_type_tile(c->m, b->elem, 2, ns);
  }
  /* f8e4m3 with f8e5m2 is allowed (Triton allows it; the products are exact either way) */
  bool fp8 = ir_dtype_is_fp8(a->elem->dtype) && ir_dtype_is_fp8(b->elem->dtype);
  if (a->elem != b->elem && !fp8) {
    su_error(c->d, e->loc, "operands of 'dot' must have the same dtype, got %s and %s",
             tstr(c, a->elem), tstr(c, b->elem));
    return NULL;
  }
  tk_dtype d = a->elem->dtype, acc;
  if (d == TK_F16 || d == TK_BF16 || d == TK_F32 || fp8) acc = TK_F32;
  else if (d == TK_I8) acc = TK_I32;
  else {
    su_error(c->d, e->loc, "'dot' does not support %s operands (f16, bf16, f32, fp8 or i8)",
             ir_dtype_name(d));
    return NULL;
  }
  if (a->shape[1] != b->shape[0]) {
    su_error(c->d, e->loc, "inner dimensions of 'dot' do not match: %s and %s", tstr(c, a), tstr(c, b));
    return NULL;
  }
  int shape[2] = {a->shape[0], b->shape[1]};
  if (shape[0] < 16 || shape[1] < 16 || a->shape[1] < 16) {
    su_error(c->d, e->loc, "dimensions of 'dot' must be at least 16, got %s and %s", tstr(c, a),
             tstr(c, b));
    return NULL;
  }
  int bshape[3] = {batch, shape[0], shape[1]};
  const ir_type *r = batch ? ir_type_tile(c->m, scalar(c, acc), 3, bshape) : ir_type_tile(c->m, scalar(c, acc), 2, shape);
  ast_node *ac = cl->argc > 2 ? cl->argv[2] : NULL;
  /* f16 (and fp8) operands may accumulate in f16 (Triton's out_dtype=float16): an f16 acc,
   * f16 result */
  bool f16_acc = d == TK_F16 || fp8;
  if (ac && f16_acc && ac->sema_type == ir_type_like(c->m, r, scalar(c, TK_F16)))
    r = ac->sema_type;
  if (ac && ac->sema_type != r) {
    su_error(c->d, ac->loc, "accumulator of 'dot' must have type %s, got %s", tstr(c, r),
             tstr(c, ac->sema_type));
    if (f16_acc)
      su_note(c->d, ac->loc, "%s operands also take an f16 accumulator of that shape",
              ir_dtype_name(d));
    return NULL;
  }
  return check_precision(c, cl, d) ? r : NULL;
}

/* join(a, b), interleave(a, b), cat(a, b): two tiles of one shape (after promotion and
 * broadcasting, as for '+') made into one. */
static const ir_type *check_join(sema_ctx *c, ast_node *e, sema_call *cl) {
  ast_node **v = cl->argv;
  const ir_type *t = common(c, e, v, 2, false);
  if (!t) return NULL;
  int r = sema_rank(t), shape[IR_MAX_RANK];
  if (r == 0) {
    su_error(c->d, e->loc, "arguments of '%s' must be tiles, got %s and %s", e->name,
             tstr(c, v[0]->sema_type), tstr(c, v[1]->sema_type));
    return NULL;
  }
  for (int i = 0; i < r; i++) shape[i] = t->shape[i];
  switch ((sema_join)cl->builtin->sub) {
  case SEMA_JOIN:
    if (r + 1 > IR_MAX_RANK) {
      su_error(c->d, e->loc, "a tile has at most %d dimensions", IR_MAX_RANK);
      return NULL;
    }
    shape[r++] = 2;
    break;
  case SEMA_INTERLEAVE: shape[r - 1] *= 2; break;
  case SEMA_CAT: shape[0] *= 2; break;
  }
  if (ir_type_numel(t) * 2 > (1 << 20)) {
    su_error(c->d, e->loc, "tile of %lld elements is too large; at most %d",
             (long long)ir_type_numel(t) * 2, 1 << 20);
    return NULL;
  }
  return sema_with_shape(c, t, r, shape);
}

/* split(x): x's last axis has 2 elements; the two tiles without it, as a tuple. */
static const ir_type *check_split(sema_ctx *c, sema_call *cl) {
  const ir_type *t = cl->argv[0]->sema_type;
  int r = sema_rank(t);
  if (r < 2 || t->shape[r - 1] != 2) {
    su_error(c->d, cl->argv[0]->loc, "'split' needs a tile of rank 2 or more whose last axis has "
                                      "2 elements, got %s", tstr(c, t));
    if (r == 1 && t->shape[0] == 2)
      su_note(c->d, cl->argv[0]->loc, "for the two elements of a 1-D tile, slice: 'x[0:1]', 'x[1:2]'");
    return NULL;
  }
  const ir_type *half = sema_with_shape(c, t, r - 1, t->shape);
  cl->nrets = 2;
  cl->rets = SU_NEW_ARRAY(c->a, const ir_type *, 2);
  cl->rets[0] = cl->rets[1] = half;
  return SEMA_TUPLE;
}

/* gather(src, index, axis): index is an integer tile of src's rank, of src's shape but on
 * the axis; the result has index's shape and src's elements. */
static const ir_type *check_gather(sema_ctx *c, ast_node *e, sema_call *cl) {
  const ir_type *t = cl->argv[0]->sema_type, *ix = cl->argv[1]->sema_type;
  int r = sema_rank(t), axis;
  if (r == 0) {
    su_error(c->d, cl->argv[0]->loc, "source of 'gather' must be a tile, got %s", tstr(c, t));
    return NULL;
  }
  if (!axis_arg(c, e, cl->argv[2], t, r, &axis)) return NULL;
  bool ok = sema_rank(ix) == r && sema_elem(ix)->kind == IR_SCALAR && ir_dtype_is_int(ix->dtype) &&
            ix->dtype != TK_I1;
  for (int i = 0; ok && i < r; i++) ok = i == axis || ix->shape[i] == t->shape[i];
  if (!ok) {
    su_error(c->d, cl->argv[1]->loc, "index of 'gather' must be integers of the shape of %s but "
                                      "on axis %d, got %s", tstr(c, t), axis, tstr(c, ix));
    return NULL;
  }
  return sema_with_shape(c, t, r, ix->shape);
}

/* sort(x[, descending]) along x's last axis; topk(x, k): the k largest of the last axis,
 * largest first. The axis is at most SEMA_MAX_SORT long: a sorting network is unrolled. */
static const ir_type *check_sort(sema_ctx *c, ast_node *e, sema_call *cl) {
  const ir_type *t = cl->argv[0]->sema_type;
  int r = sema_rank(t);
  if (r == 0 || !numeric(t) || sema_elem(t)->dtype == TK_I1) {
    su_error(c->d, cl->argv[0]->loc, "'%s' needs a tile of numbers, got %s", e->name, tstr(c, t));
    return NULL;
  }
  int n = t->shape[r - 1];
  if (n > SEMA_MAX_SORT) {
    su_error(c->d, cl->argv[0]->loc, "'%s' sorts a last axis of at most %d elements, got %d",
             e->name, SEMA_MAX_SORT, n);
    return NULL;
  }
  if (cl->builtin->sub == 0) {
    if (cl->argc > 1 && cl->argv[1]) {
      const ir_type *d = sema_check_value(c, cl->argv[1]);
      if (d && (d != scalar(c, TK_I1) || !cl->argv[1]->sema_is_const)) {
        su_error(c->d, cl->argv[1]->loc, "'descending' of 'sort' must be true or false");
        return NULL;
      }
      if (!d) return NULL;
    }
    return t;
  }
  int64_t k;
  if (!sema_const_int(c, cl->argv[1], "k of 'topk'", &k)) return NULL;
  if (k < 1 || k > n || !sema_is_pow2(k)) {
    su_error(c->d, cl->argv[1]->loc, "k of 'topk' must be a power of two from 1 to %d, got %lld", n,
             (long long)k);
    return NULL;
  }
  int shape[IR_MAX_RANK];
  for (int i = 0; i < r; i++) shape[i] = t->shape[i];
  shape[r - 1] = (int)k;
  return sema_with_shape(c, t, r, shape);
}

static const ir_type *check_shape_op(sema_ctx *c, ast_node *e, sema_call *cl) {
  const ir_type *t = cl->argv[0]->sema_type;
  int rank, shape[IR_MAX_RANK];
  switch (cl->builtin->kind) {
  case B_RESHAPE:
    if (!const_dims(c, e, cl, 1, &rank, shape)) return NULL;
    {
      const ir_type *r = sema_with_shape(c, t, rank, shape);
      if (ir_type_numel(r) != ir_type_numel(t)) {
        su_error(c->d, e->loc, "cannot reshape %s (%lld elements) to %s (%lld elements)", tstr(c, t),
                 (long long)ir_type_numel(t), tstr(c, r), (long long)ir_type_numel(r));
        return NULL;
      }
      return r;
    }
  case B_BROADCAST_TO:
    if (!const_dims(c, e, cl, 1, &rank, shape)) return NULL;
    {
      const ir_type *r = sema_with_shape(c, t, rank, shape);
      return to_shape(c, cl->argv[0], t, r, "value") ? r : NULL;
    }
  case B_EXPAND_DIMS: {
    int axis, r = sema_rank(t);
    if (!axis_arg(c, e, cl->argv[1], t, r + 1, &axis)) return NULL;
    if (r + 1 > IR_MAX_RANK) {
      su_error(c->d, e->loc, "a tile has at most %d dimensions", IR_MAX_RANK);
      return NULL;
    }
    for (int i = 0, k = 0; i <= r; i++) shape[i] = i == axis ? 1 : t->shape[k++];
    return sema_with_shape(c, t, r + 1, shape);
  }
  case B_TRANS: {
    int r = sema_rank(t), perm[IR_MAX_RANK];
    bool seen[IR_MAX_RANK] = {0};
    if (cl->argc == 1) {
      if (r != 2) {
        su_error(c->d, e->loc, "'trans' without a permutation needs a 2-D tile, got %s", tstr(c, t));
        return NULL;
      }
      perm[0] = 1, perm[1] = 0;
    } else {
      if (cl->argc - 1 != r) {
        su_error(c->d, e->loc, "permutation of '%s' must list each of the %d axes of %s once",
                 e->name, r, tstr(c, t));
        return NULL;
      }
      for (int i = 0; i < r; i++) {
        int64_t v;
        if (!sema_const_int(c, cl->argv[i + 1], su_fmt(c->a, "axis of '%s'", e->name), &v)) return NULL;
        if (v < 0 || v >= r || seen[v]) {
          su_error(c->d, cl->argv[i + 1]->loc,
                   "permutation of '%s' must list each of the %d axes of %s once", e->name, r,
                   tstr(c, t));
          return NULL;
        }
        seen[v] = true;
        perm[i] = (int)v;
      }
    }
    for (int i = 0; i < r; i++) shape[i] = t->shape[perm[i]];
    return sema_with_shape(c, t, r, shape);
  }
  default: SU_UNREACHABLE();
  }
}

/* A hint's string: "" (none), or one of the n names, written with or without Triton's
 * leading dot (".cg"); the index of the name + 1, 0 for none, -1 for anything else. */
static int hint_index(const ast_node *a, const char *const *names, int n) {
  if (a->kind != AST_STRING) return -1;
  const char *s = a->str[0] == '.' ? a->str + 1 : a->str;
  if (!a->str[0]) return 0;
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) return i + 1;
  return -1;
}

/* load's and store's cache and eviction hints (Triton's cache_modifier and
 * eviction_policy): string literals, recorded in cl->numerics as ir_cache | ir_evict << 8.
 * PTX's ld and st take a cache operator or an L1 eviction priority, not both. */
static bool check_hints(sema_ctx *c, ast_node *e, sema_call *cl) {
  bool load = cl->builtin->kind == B_LOAD;
  ast_node *ca = cl->argc > 3 ? cl->argv[3] : NULL, *ev = cl->argc > 4 ? cl->argv[4] : NULL;
  static const char *const load_names[] = {"ca", "cg", "cs", "lu", "cv"};
  static const char *const store_names[] = {"wb", "cg", "cs", "wt"};
  static const ir_cache load_kinds[] = {IR_CACHE_CA, IR_CACHE_CG, IR_CACHE_CS, IR_CACHE_LU, IR_CACHE_CV};
  static const ir_cache store_kinds[] = {IR_CACHE_WB, IR_CACHE_CG, IR_CACHE_CS, IR_CACHE_WT};
  static const char *const evict_names[] = {"evict_first", "evict_last", "evict_normal"};
  static const ir_evict evict_kinds[] = {IR_EVICT_FIRST, IR_EVICT_LAST, IR_EVICT_NORMAL};
  ir_cache cache = IR_CACHE_NONE;
  ir_evict evict = IR_EVICT_NORMAL;
  if (ca) {
    int k = hint_index(ca, load ? load_names : store_names, load ? 5 : 4);
    if (k < 0) {
      su_error(c->d, ca->loc, "cache of '%s' must be %s", e->name,
               load ? "\"ca\", \"cg\", \"cs\", \"lu\" or \"cv\"" : "\"wb\", \"cg\", \"cs\" or \"wt\"");
      su_note(c->d, ca->loc, "the PTX cache operators of '%s' (Triton's cache_modifier; a leading '.' "
              "may be written)", load ? "ld" : "st");
      return false;
    }
    if (k) cache = (load ? load_kinds : store_kinds)[k - 1];
  }
  if (ev) {
    int k = hint_index(ev, evict_names, 3);
    if (k < 0 || (ev->kind == AST_STRING && ev->str[0] == '.')) {
      su_error(c->d, ev->loc, "eviction of '%s' must be \"evict_first\", \"evict_last\" or "
               "\"evict_normal\"", e->name);
      return false;
    }
    if (k) evict = evict_kinds[k - 1];
  }
  if (cache != IR_CACHE_NONE && evict != IR_EVICT_NORMAL) {
    su_error(c->d, ev->loc, "'%s' takes a cache hint or an eviction priority, not both", e->name);
    su_note(c->d, ca->loc, "PTX has no %s with both (ptxas rejects '%s.global.%s.L1::%s')", load ? "load" : "store",
            load ? "ld" : "st", ir_cache_name(cache), ir_evict_name(evict));
    return false;
  }
  cl->numerics = (int64_t)cache | (int64_t)evict << 8;
  return true;
}

/* An atomic's memory order (Triton's sem): a string literal, recorded in cl->numerics as
 * an ir_sem; acq_rel when absent, as in Triton. The IR's names are the language's, but for
 * relaxed, which the IR writes as nothing. */
static bool check_sem(sema_ctx *c, ast_node *e, sema_call *cl, ast_node *a) {
  cl->numerics = IR_SEM_ACQ_REL;
  if (!a) return true;
  int k = a->kind != AST_STRING ? -1 : strcmp(a->str, "relaxed") == 0 ? IR_SEM_RELAXED
                                                                    : ir_sem_parse(a->str, strlen(a->str));
  if (k < 0) {
    su_error(c->d, a->loc, "sem of '%s' must be \"relaxed\", \"acquire\", \"release\" or \"acq_rel\"", e->name);
    return false;
  }
  cl->numerics = k;
  return true;
}

/* histogram(x, bins[, mask]): integers, a compile-time power-of-two bin count, a mask
 * broadcast to x's shape; one i32 count per bin. */
static const ir_type *check_histogram(sema_ctx *c, ast_node *e, sema_call *cl) {
  const ir_type *t = cl->argv[0]->sema_type;
  if (t->kind != IR_TILE || !ir_dtype_is_int(sema_elem(t)->dtype) || sema_elem(t)->kind != IR_SCALAR ||
      sema_elem(t)->dtype == TK_I1) {
    su_error(c->d, cl->argv[0]->loc, "'histogram' needs a tile of integers, got %s", tstr(c, t));
    return NULL;
  }
  int64_t bins;
  if (!sema_const_int(c, cl->argv[1], "bins of 'histogram'", &bins)) return NULL;
  if (bins < 1 || bins > SEMA_MAX_BINS || !sema_is_pow2(bins)) {
    su_error(c->d, cl->argv[1]->loc, "bins of 'histogram' must be a power of two from 1 to %d, got %lld",
             SEMA_MAX_BINS, (long long)bins);
    return NULL;
  }
  if (!mask_arg(c, e, cl->argc > 2 ? cl->argv[2] : NULL, t)) return NULL;
  int n = (int)bins;
  return ir_type_tile(c->m, scalar(c, TK_I32), 1, &n);
}

static const ir_type *check_memory(sema_ctx *c, ast_node *e, sema_call *cl) {
  ast_node *p = cl->argv[0];
  const ir_type *elem = pointee_of(c, e, p);
  if (!elem) return NULL;
  const ir_type *pt = p->sema_type;
  const ir_type *res = sema_with_shape(c, elem, sema_rank(pt), shape_of(pt));
  switch (cl->builtin->kind) {
  case B_LOAD: {
    ast_node *o = cl->argc > 2 ? cl->argv[2] : NULL;
    if (!mask_arg(c, e, cl->argv[1], pt)) return NULL;
    if (o && (!value_for(c, e, o, o->sema_type, elem, "other") ||
              !to_shape(c, o, o->sema_type, pt, "other")))
      return NULL;
    return check_hints(c, e, cl) ? res : NULL;
  }
  case B_STORE:
  case B_ATOMIC: {
    ast_node *v = cl->argv[1];
    if (cl->builtin->kind == B_ATOMIC && cl->builtin->sub >= IR_ATOM_AND &&
        cl->builtin->sub <= IR_ATOM_XOR && !ir_dtype_is_int(elem->dtype)) {
      su_error(c->d, p->loc, "'%s' needs a pointer to integers, got %s", e->name, tstr(c, pt));
      return NULL;
    }
    if (!value_for(c, e, v, v->sema_type, elem, "value") || !to_shape(c, v, v->sema_type, pt, "value") ||
        !mask_arg(c, e, cl->argc > 2 ? cl->argv[2] : NULL, pt))
      return NULL;
    if (cl->builtin->kind == B_STORE) return check_hints(c, e, cl) ? SEMA_VOID : NULL;
    return check_sem(c, e, cl, cl->argc > 3 ? cl->argv[3] : NULL) ? res : NULL;
  }
  case B_ATOMIC_CAS:
    for (int i = 1; i < 3; i++) {
      ast_node *v = cl->argv[i];
      if (!value_for(c, e, v, v->sema_type, elem, i == 1 ? "cmp" : "value") ||
          !to_shape(c, v, v->sema_type, pt, i == 1 ? "cmp" : "value"))
        return NULL;
    }
    return check_sem(c, e, cl, cl->argc > 3 ? cl->argv[3] : NULL) ? res : NULL;
  default: SU_UNREACHABLE();
  }
}

static const ir_type *check_static_assert(sema_ctx *c, ast_node *e, sema_call *cl) {
  ast_node *cond = cl->argv[0], *msg = cl->argc > 1 ? cl->argv[1] : NULL;
  if (msg && msg->kind != AST_STRING) {
    su_error(c->d, msg->loc, "message of '%s' must be a string literal", e->name);
    return NULL;
  }
  if (cl->builtin->kind == B_DEVICE_ASSERT) {
    if (sema_elem(cond->sema_type)->dtype != TK_I1 || sema_elem(cond->sema_type)->kind != IR_SCALAR) {
      su_error(c->d, cond->loc, "condition of 'device_assert' must be i1, got %s",
               tstr(c, cond->sema_type));
      return NULL;
    }
    return SEMA_VOID;
  }
  if (cond->sema_type->kind != IR_SCALAR || cond->sema_type->dtype != TK_I1 || !cond->sema_is_const) {
    su_error(c->d, cond->loc, "condition of 'static_assert' must be a compile-time i1");
    return NULL;
  }
  if (!cond->sema_const.i) {
    if (msg) su_error(c->d, e->loc, "static assertion failed: %s", msg->str);
    else su_error(c->d, e->loc, "static assertion failed");
  }
  return SEMA_VOID;
}

/* cdiv and umulhi: two integers (not i1), promoted and broadcast like '+'. */
static const ir_type *int_pair(sema_ctx *c, ast_node *e, sema_call *cl) {
  const ir_type *t = common(c, e, cl->argv, 2, false);
  if (!t) return NULL;
  if (!ir_dtype_is_int(sema_elem(t)->dtype) || sema_elem(t)->dtype == TK_I1) {
    su_error(c->d, e->loc, "arguments of '%s' must be integers, got %s and %s", e->name,
             tstr(c, cl->argv[0]->sema_type), tstr(c, cl->argv[1]->sema_type));
    return NULL;
  }
  return t;
}

static const ir_type *check_cdiv(sema_ctx *c, ast_node *e, sema_call *cl) {
  const ir_type *t = int_pair(c, e, cl);
  if (!t) return NULL;
  ast_node *a = cl->argv[0], *b = cl->argv[1];
  if (t->kind == IR_SCALAR && a->sema_is_const && b->sema_is_const) {
    sema_cval r;
    const char *why = NULL;
    if (!sema_fold_cdiv(t->dtype, sema_const_as(a, t->dtype), sema_const_as(b, t->dtype), &r, &why)) {
      su_error(c->d, e->loc, "%s in constant expression", why);
      return NULL;
    }
    sema_set_const(e, t, r);
  }
  return t;
}

/* The one-operand math functions; sin, cos, exp, exp2, sigmoid, erf and erfc take
 * `accurate`, a compile-time i1 (else the compile option's), which the GPU's f32 code
 * reads. */
static const ir_type *check_math1(sema_ctx *c, ast_node *e, sema_call *cl) {
  ast_node *acc = cl->argc > 1 ? cl->argv[1] : NULL;
  if (acc && (acc->sema_type->kind != IR_SCALAR || acc->sema_type->dtype != TK_I1 ||
              !acc->sema_is_const)) {
    su_error(c->d, acc->loc, "accurate of '%s' must be a compile-time i1 (true or false)", e->name);
    return NULL;
  }
  cl->numerics = acc ? acc->sema_const.i != 0 : c->opt && c->opt->accurate_math;
  return common(c, e, cl->argv, 1, true);
}

/* pow, copysign, div_rn, fdiv: floats (ints promoted to f32), broadcast like '+'; fdiv's
 * ieee_rounding is a compile-time i1. */
static const ir_type *check_math2(sema_ctx *c, ast_node *e, sema_call *cl) {
  ast_node *ieee = cl->argc > 2 ? cl->argv[2] : NULL;
  if (ieee && (ieee->sema_type->kind != IR_SCALAR || ieee->sema_type->dtype != TK_I1 ||
               !ieee->sema_is_const)) {
    su_error(c->d, ieee->loc, "ieee_rounding of '%s' must be a compile-time i1 (true or false)",
             e->name);
    return NULL;
  }
  return common(c, e, cl->argv, 2, true);
}

/* rand, randn, randint(seed, offset, [n_rounds]): an integer scalar seed, integer offsets
 * of any width (Triton casts them to u32 words), a result shaped like them: u32 words
 * whatever the offsets' width, as Triton 3.6's tl.randint, or f32. */
static const ir_type *check_random(sema_ctx *c, ast_node *e, sema_call *cl) {
  ast_node *seed = cl->argv[0], *off = cl->argv[1], *rounds = cl->argc > 2 ? cl->argv[2] : NULL;
  const ir_type *st = seed->sema_type, *ot = off->sema_type, *oe = sema_elem(ot);
  if (st->kind != IR_SCALAR || !ir_dtype_is_int(st->dtype) || st->dtype == TK_I1) {
    su_error(c->d, seed->loc, "seed of '%s' must be an integer scalar, got %s", e->name, tstr(c, st));
    return NULL;
  }
  if (oe->kind != IR_SCALAR || !ir_dtype_is_int(oe->dtype) || oe->dtype == TK_I1) {
    su_error(c->d, off->loc, "offset of '%s' must be integers, got %s", e->name, tstr(c, ot));
    return NULL;
  }
  int64_t n;
  if (rounds) {
    if (!sema_const_int(c, rounds, su_fmt(c->a, "n_rounds of '%s'", e->name), &n)) return NULL;
    if (n < 1 || n > SEMA_PHILOX_MAX_ROUNDS) {
      su_error(c->d, rounds->loc, "n_rounds of '%s' must be between 1 and %d, got %lld", e->name,
               SEMA_PHILOX_MAX_ROUNDS, (long long)n);
      return NULL;
    }
  }
  tk_dtype d = cl->builtin->sub != SEMA_RANDINT ? TK_F32 : TK_U32;
  return sema_with_shape(c, scalar(c, d), sema_rank(ot), shape_of(ot));
}

/* fp8 is a storage type (docs/language.md §2.1): the builtins that move, select, convert
 * or multiply values take it; those that compute on elements, compare them or update
 * memory atomically do not. */
static bool fp8_allowed(sema_ctx *c, ast_node *e, sema_call *cl) {
  switch (cl->builtin->kind) {
  case B_LOAD: case B_STORE: case B_WHERE: case B_DOT: case B_RESHAPE: case B_TRANS:
  case B_BROADCAST_TO: case B_EXPAND_DIMS: case B_JOIN: case B_SPLIT: case B_GATHER:
  case B_ZEROS: case B_FULL:
    return true;
  default: break;
  }
  const char *what = su_fmt(c->a, "'%s'", e->name);
  for (int i = 0; i < cl->argc; i++) {
    ast_node *a = cl->argv[i];
    if (!a || !a->sema_type || a->kind == AST_STRING) continue;
    const ir_type *t = a->sema_type, *el = sema_elem(t);
    if (el->kind == IR_PTR) t = el->elem; /* atomics on fp8 memory */
    if (sema_fp8_rejected(c, a->loc, what, t)) return false;
  }
  return true;
}

const ir_type *sema_check_builtin(sema_ctx *c, ast_node *e, sema_call *cl) {
  const sema_builtin *b = cl->builtin;
  if (b->kind == B_RANGE || b->kind == B_STATIC_RANGE) {
    su_error(c->d, e->loc, "'%s' can only be the iterator of a 'for' loop", e->name);
    return NULL;
  }
  bool ok = true;
  for (int i = 0; i < cl->argc; i++) {
    ast_node *a = cl->argv[i];
    if (!a) continue;
    if (a->kind == AST_STRING && string_arg(b, i)) continue;
    ok &= sema_check_value(c, a) != NULL;
  }
  if (!ok) return NULL;
  if (!fp8_allowed(c, e, cl)) return NULL;
  ast_node **v = cl->argv;
  int rank, shape[IR_MAX_RANK];
  switch (b->kind) {
  case B_PROGRAM_ID:
  case B_NUM_PROGRAMS: {
    int64_t ax;
    if (!sema_const_int(c, v[0], su_fmt(c->a, "axis of '%s'", e->name), &ax)) return NULL;
    if (ax < 0 || ax > 2) {
      su_error(c->d, v[0]->loc, "axis of '%s' must be 0, 1 or 2, got %lld", e->name, (long long)ax);
      return NULL;
    }
    return scalar(c, TK_I32);
  }
  case B_ARANGE: {
    int64_t lo, hi;
    if (!sema_const_int(c, v[0], "start of 'arange'", &lo) ||
        !sema_const_int(c, v[1], "end of 'arange'", &hi))
      return NULL;
    if (hi <= lo) {
      su_error(c->d, e->loc, "'arange' needs end > start, got [%lld, %lld)", (long long)lo, (long long)hi);
      return NULL;
    }
    if (!sema_is_pow2(hi - lo) || hi - lo > MAX_NUMEL || lo < INT32_MIN || hi > INT32_MAX) {
      su_error(c->d, e->loc, "length of 'arange' must be a power of two up to %d, got %lld",
               MAX_NUMEL, (long long)(hi - lo));
      return NULL;
    }
    int n = (int)(hi - lo);
    return ir_type_tile(c->m, scalar(c, TK_I32), 1, &n);
  }
  case B_ZEROS:
  case B_FULL: {
    int from = b->kind == B_FULL ? 1 : 0;
    if (b->kind == B_FULL && (v[0]->sema_type->kind != IR_SCALAR || !numeric(v[0]->sema_type))) {
      su_error(c->d, v[0]->loc, "value of 'full' must be a numeric scalar, got %s",
               tstr(c, v[0]->sema_type));
      return NULL;
    }
    if (!const_dims(c, e, cl, from, &rank, shape)) return NULL;
    if (rank == 0) {
      su_error(c->d, e->loc, "'%s' needs at least one dimension", e->name);
      return NULL;
    }
    return sema_with_shape(c, cl->targ ? cl->targ : scalar(c, TK_F32), rank, shape);
  }
  case B_LOAD: case B_STORE: case B_ATOMIC: case B_ATOMIC_CAS:
    return check_memory(c, e, cl);
  case B_WHERE: {
    const ir_type *cd = v[0]->sema_type;
    if (sema_elem(cd)->kind != IR_SCALAR || sema_elem(cd)->dtype != TK_I1) {
      su_error(c->d, v[0]->loc, "condition of 'where' must be i1, got %s", tstr(c, cd));
      return NULL;
    }
    const ir_type *t;
    if (sema_elem(v[1]->sema_type)->kind == IR_PTR || sema_elem(v[2]->sema_type)->kind == IR_PTR) {
      if (sema_elem(v[1]->sema_type) != sema_elem(v[2]->sema_type)) {
        su_error(c->d, e->loc, "'where' cannot choose between %s and %s", tstr(c, v[1]->sema_type),
                 tstr(c, v[2]->sema_type));
        return NULL;
      }
      if (!sema_broadcast(c, e->loc, v[1], v[1]->sema_type, v[2], v[2]->sema_type, &rank, shape))
        return NULL;
      t = sema_with_shape(c, v[1]->sema_type, rank, shape);
    } else {
      t = common(c, e, v + 1, 2, false);
    }
    if (!t || !sema_broadcast(c, e->loc, v[0], cd, v[2], t, &rank, shape)) return NULL;
    return sema_with_shape(c, t, rank, shape);
  }
  case B_MATH1: return check_math1(c, e, cl);
  case B_ABS: return common(c, e, v, 1, false);
  case B_FMA: return common(c, e, v, 3, true);
  case B_MINIMUM: case B_MAXIMUM: return common(c, e, v, 2, false);
  case B_MATH2: return check_math2(c, e, cl);
  case B_UMULHI: return int_pair(c, e, cl);
  case B_FCLASS: {
    const ir_type *t = common(c, e, v, 1, true);
    return t ? sema_with_shape(c, scalar(c, TK_I1), sema_rank(t), shape_of(t)) : NULL;
  }
  case B_RANDOM: return check_random(c, e, cl);
  case B_CLAMP: return common(c, e, v, 3, false);
  case B_REDUCE: case B_ARGREDUCE: case B_CUMSUM: {
    const ir_type *t = check_reduce(c, e, cl);
    if (!t) sema_hint_elementwise(c, e, cl);
    return t;
  }
  case B_DOT: return check_dot(c, e, cl);
  case B_RESHAPE: case B_TRANS: case B_BROADCAST_TO: case B_EXPAND_DIMS:
    return check_shape_op(c, e, cl);
  case B_CDIV: return check_cdiv(c, e, cl);
  case B_JOIN: return check_join(c, e, cl);
  case B_SPLIT: return check_split(c, cl);
  case B_GATHER: return check_gather(c, e, cl);
  case B_SORT: return check_sort(c, e, cl);
  case B_HISTOGRAM: return check_histogram(c, e, cl);
  case B_STATIC_ASSERT: case B_DEVICE_ASSERT: return check_static_assert(c, e, cl);
  case B_DEVICE_PRINT:
    if (v[0]->kind != AST_STRING) {
      su_error(c->d, v[0]->loc, "first argument of 'device_print' must be a string literal");
      return NULL;
    }
    return SEMA_VOID;
  case B_RANGE: case B_STATIC_RANGE: break;
  }
  SU_UNREACHABLE();
}
