/* The verifier: every invariant of ops.def and ir.h, one located error per violation.
 * It keeps going after an error so that one run shows everything wrong, but skips the
 * type rules of an op whose operand or result counts are already wrong (they would only
 * repeat the problem, or read past the arrays). */
#include "verify_int.h"

#include <inttypes.h>
#include <math.h>

void ir_verr(verifier *v, const ir_op *op, const char *fmt, ...) {
  /* off lies past the (empty) text, so the diagnostic shows file:line:col without a
   * source line: the .tk text is not at hand here. */
  su_loc loc = {v->src, 1, 0, op->loc.line, op->loc.col};
  su_buf b = {0};
  va_list ap;
  va_start(ap, fmt);
  su_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  su_error(v->d, loc, "'%s': %s", ir_op_info(op->opc)->name, su_buf_str(&b));
  su_buf_free(&b);
  v->ok = false;
}

/* An arena string of t's text form, for messages. */
const char *ir_vts(verifier *v, const ir_type *t) {
  su_buf b = {0};
  ir_type_print(&b, t);
  const char *s = su_strdup(v->d->arena, su_buf_str(&b));
  su_buf_free(&b);
  return s;
}

static bool same_shape(const ir_type *a, const ir_type *b) {
  if ((a->kind == IR_TILE) != (b->kind == IR_TILE)) return false;
  if (a->kind != IR_TILE) return true;
  return a->rank == b->rank && memcmp(a->shape, b->shape, sizeof(int) * (size_t)a->rank) == 0;
}

static bool is_i1(const ir_type *t) { return ir_type_elem(t)->kind == IR_SCALAR && t->dtype == TK_I1; }
static bool is_int(const ir_type *t) { return ir_type_elem(t)->kind == IR_SCALAR && ir_dtype_is_int(t->dtype); }
static bool is_float(const ir_type *t) { return ir_dtype_is_float(t->dtype); }
static bool is_ptr(const ir_type *t) { return ir_type_elem(t)->kind == IR_PTR; }

/* fp8 is a storage type: the ops that compute on elements refuse it (the GPU back end
 * has no fp8 arithmetic; the language converts first). */
static void no_fp8(verifier *v, const ir_op *op, const ir_type *t) {
  const ir_type *e = ir_type_elem(t);
  if (e->kind == IR_PTR) e = e->elem;
  if (e->kind == IR_SCALAR && ir_dtype_is_fp8(e->dtype))
    ir_verr(v, op, "computes on %s, a storage type", ir_vts(v, t));
}


/* ---- structure: counts and scopes --------------------------------------------------- */

static bool check_counts(verifier *v, const ir_op *op) {
  const ir_opinfo *info = ir_op_info(op->opc);
  int n = op->noperands, lo = info->noperands, hi = info->noperands;
  switch (op->opc) {
  case IR_LOAD: lo = 1, hi = 3; break;
  case IR_HISTOGRAM: lo = 1, hi = 2; break;
  case IR_STORE:
  case IR_ATOMIC: lo = 2, hi = 3; break;
  case IR_PRINT:
  case IR_YIELD: lo = 0, hi = 1 << 30; break;
  case IR_FOR: lo = 3, hi = 1 << 30; break;
  default: ir_verify_gpu_counts(op, &lo, &hi); break;
  }
  bool ok = true;
  if (n < lo || n > hi) {
    if (lo == hi)
      ir_verr(v, op, "expects %d operand%s, has %d", lo, lo == 1 ? "" : "s", n);
    else
      ir_verr(v, op, "expects %d to %d operands, has %d", lo, hi, n);
    ok = false;
  }
  int res = info->nresults;
  if (op->opc == IR_FOR) res = n >= 3 ? n - 3 : op->nresults;
  if (op->opc == IR_WGMMA_WAIT) res = n;
  if (res >= 0 && op->nresults != res) {
    ir_verr(v, op, "expects %d result%s, has %d", res, res == 1 ? "" : "s", op->nresults);
    ok = false;
  }
  int regions = op->opc == IR_FOR ? 1 : op->opc == IR_IF || op->opc == IR_WARP_SPEC ? 2 : 0;
  if (op->nregions != regions) {
    ir_verr(v, op, "expects %d region%s, has %d", regions, regions == 1 ? "" : "s", op->nregions);
    ok = false;
  }
  for (int i = 0; i < op->noperands; i++)
    if (!op->operands[i]) {
      ir_verr(v, op, "operand %d is null", i);
      ok = false;
    }
  for (int i = 0; i < op->nresults; i++)
    if (!op->results[i] || !op->results[i]->type || op->results[i]->def != op) {
      ir_verr(v, op, "result %d is malformed", i);
      ok = false;
    }
  return ok;
}

static bool in_kernel(const verifier *v, const ir_value *x) {
  return x->id >= 0 && x->id < v->nvalues && v->byid[x->id] == x;
}

static void make_visible(verifier *v, ir_value *x) {
  /* Already visible only when the IR links one op twice; pushing it again could overrun
   * the stack. */
  if (!in_kernel(v, x) || v->visible[x->id]) return;
  v->visible[x->id] = true;
  v->defined[v->ndefined++] = x;
}

static void check_dominance(verifier *v, const ir_op *op) {
  for (int i = 0; i < op->noperands; i++) {
    const ir_value *x = op->operands[i];
    if (x && !(in_kernel(v, x) && v->visible[x->id]))
      ir_verr(v, op, "operand %d is not defined before this use in an enclosing scope", i);
  }
}

/* ---- type rules --------------------------------------------------------------------- */

static void check_layout(verifier *v, const ir_op *op, const ir_type *t) {
  if (t->kind == IR_TILE && t->layout && t->layout->rank != t->rank)
    ir_verr(v, op, "layout of rank %d on %s", t->layout->rank, ir_vts(v, t));
  if (t->kind == IR_TILE && t->layout && t->layout->kind == IR_LAYOUT_SHARED)
    ir_verr(v, op, "a tile cannot have a #shared layout (%s)", ir_vts(v, t));
}

/* erfc's folded factors (docs/ir.md): `in` a finite non-zero factor of the argument,
 * `out` a power of two of the result that keeps every f32 result normal or zero (erfc is
 * at most 2: 2^out between 2^-100 and 2^100), on f32 only, where the fast lowering
 * folds them into its constants. */
static void check_erfc_scales(verifier *v, const ir_op *op, const ir_type *r) {
  if (!op->attr2 && op->cval.f == 0) return;
  if (r->dtype != TK_F32) ir_verr(v, op, "in and out are for f32 only, has %s", ir_vts(v, r));
  if (!isfinite(op->cval.f)) ir_verr(v, op, "in must be a finite non-zero number");
  if (op->attr2 < -100 || op->attr2 > 100) ir_verr(v, op, "out must be within [-100, 100], is %lld", (long long)op->attr2);
}

static void check_elementwise(verifier *v, const ir_op *op) {
  const ir_type *r = op->results[0]->type;
  for (int i = 0; i < op->noperands; i++)
    if (!same_shape(op->operands[i]->type, r)) {
      ir_verr(v, op, "operand %d has shape of %s, result is %s", i, ir_vts(v, op->operands[i]->type), ir_vts(v, r));
      return;
    }
  const ir_type *a = op->operands[0]->type;
  switch (op->opc) {
  case IR_CAST:
    /* as the language: pointers cast to pointers only (the GPU back end has no
     * conversion between an address and a number) */
    if (is_ptr(a) != is_ptr(r)) ir_verr(v, op, "cannot cast %s to %s", ir_vts(v, a), ir_vts(v, r));
    return;
  case IR_CMP:
    no_fp8(v, op, a);
    if (op->operands[1]->type != a) ir_verr(v, op, "operand types differ (%s vs %s)", ir_vts(v, a), ir_vts(v, op->operands[1]->type));
    if (!is_i1(r)) ir_verr(v, op, "result must be i1, is %s", ir_vts(v, r));
    if (!ir_cmp_name((ir_cmp)op->attr)) ir_verr(v, op, "bad predicate %lld", (long long)op->attr);
    return;
  case IR_SELECT:
    if (!is_i1(a)) ir_verr(v, op, "condition must be i1, is %s", ir_vts(v, a));
    if (op->operands[1]->type != r || op->operands[2]->type != r)
      ir_verr(v, op, "both choices must have the result type %s", ir_vts(v, r));
    return;
  case IR_ADDPTR:
    if (!is_ptr(a) || a != r) ir_verr(v, op, "first operand and result must be one pointer type");
    if (!is_int(op->operands[1]->type)) ir_verr(v, op, "offset must be an integer, is %s", ir_vts(v, op->operands[1]->type));
    return;
  default: break;
  }
  for (int i = 0; i < op->noperands; i++)
    if (op->operands[i]->type != r) {
      ir_verr(v, op, "operand %d has type %s, result is %s", i, ir_vts(v, op->operands[i]->type), ir_vts(v, r));
      return;
    }
  if (is_ptr(r)) ir_verr(v, op, "does not take pointers");
  no_fp8(v, op, r);
  switch (op->opc) {
  case IR_NOT: case IR_AND: case IR_OR: case IR_XOR: case IR_SHL: case IR_SHR:
    if (!is_int(r)) ir_verr(v, op, "needs integer operands, has %s", ir_vts(v, r));
    break;
  case IR_UMULHI: case IR_CDIV:
    if (!is_int(r) || is_i1(r)) ir_verr(v, op, "needs integer operands wider than i1, has %s", ir_vts(v, r));
    break;
  case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2: case IR_SQRT: case IR_RSQRT:
  case IR_SIN: case IR_COS: case IR_TANH: case IR_ERF: case IR_FLOOR: case IR_CEIL:
  case IR_SIGMOID: case IR_FMA: case IR_RINT: case IR_TRUNC: case IR_LOG1P: case IR_EXPM1:
  case IR_ERFC:
  case IR_POW: case IR_COPYSIGN: case IR_FDIV:
    if (!is_float(r)) ir_verr(v, op, "needs float operands, has %s", ir_vts(v, r));
    if (op->opc == IR_EXP2 && (op->attr < 0 || op->attr > 1 || (op->attr && r->dtype != TK_F32)))
      ir_verr(v, op, "ftz is for f32 only, and 0 or 1 (is %lld)", (long long)op->attr);
    if (op->opc == IR_ERFC) check_erfc_scales(v, op, r);
    break;
  default: break;
  }
  if (op->attr && op->opc != IR_EXP2 && !(ir_op_has_accurate(op->opc) && op->attr == 1))
    ir_verr(v, op, "attribute %" PRId64 " is not 'accurate'", op->attr);
}

/* slot_store p, v / slot_load p: p a scalar pointer to v's (the result's) dtype, f32 or
 * i32, and the tile a tile. */
static void check_slot(verifier *v, const ir_op *op) {
  const ir_type *p = op->operands[0]->type;
  const ir_type *t = op->opc == IR_SLOT_LOAD ? op->results[0]->type : op->operands[1]->type;
  if (p->kind != IR_PTR || t->kind != IR_TILE || p->elem != ir_type_elem(t) ||
      (t->dtype != TK_F32 && t->dtype != TK_I32))
    ir_verr(v, op, "needs a scalar pointer to the tile's dtype (f32 or i32), has %s and %s", ir_vts(v, p), ir_vts(v, t));
}

/* The pointer operand p and the accessed value type x must agree: x's element is p's
 * pointee and the shapes are equal. mask, when present, is i1 of that shape. */
static void check_access(verifier *v, const ir_op *op, const ir_type *x, int mask_index) {
  const ir_type *p = op->operands[0]->type;
  if (!is_ptr(p)) {
    ir_verr(v, op, "first operand must be a pointer, is %s", ir_vts(v, p));
    return;
  }
  if (ir_type_elem(p)->elem != ir_type_elem(x) || !same_shape(p, x))
    ir_verr(v, op, "value type %s does not match pointer type %s", ir_vts(v, x), ir_vts(v, p));
  if (mask_index < op->noperands) {
    const ir_type *mk = op->operands[mask_index]->type;
    if (!is_i1(mk) || !same_shape(mk, p)) ir_verr(v, op, "mask must be i1 shaped like %s, is %s", ir_vts(v, p), ir_vts(v, mk));
  }
}

/* load's and store's hints: a cache operator the access takes, an eviction priority, not
 * both (PTX has no form with both: ptxas rejects `ld.global.cg.L1::evict_last`). */
static void check_hints(verifier *v, const ir_op *op) {
  bool cache_ok = ir_cache_allowed(op->opc, (ir_cache)op->attr) &&
                  (op->attr == IR_CACHE_NONE || ir_cache_name((ir_cache)op->attr));
  if (!cache_ok) ir_verr(v, op, "bad cache hint %lld", (long long)op->attr);
  if (op->attr2 != IR_EVICT_NORMAL && !ir_evict_name((ir_evict)op->attr2))
    ir_verr(v, op, "bad eviction priority %lld", (long long)op->attr2);
  if (op->attr && op->attr2) ir_verr(v, op, "a cache hint and an eviction priority cannot be combined");
}

/* histogram: integers (not i1) of any shape, a mask of their shape, a 1-D i32 result. */
static void check_histogram(verifier *v, const ir_op *op) {
  const ir_type *x = op->operands[0]->type, *r = op->results[0]->type;
  if (x->kind != IR_TILE || !is_int(x) || is_i1(x)) ir_verr(v, op, "operand must be a tile of integers, is %s", ir_vts(v, x));
  if (op->noperands == 2) {
    const ir_type *mk = op->operands[1]->type;
    if (!is_i1(mk) || !same_shape(mk, x)) ir_verr(v, op, "mask must be i1 shaped like %s, is %s", ir_vts(v, x), ir_vts(v, mk));
  }
  if (r->kind != IR_TILE || r->rank != 1 || r->dtype != TK_I32 || r->elem->kind != IR_SCALAR)
    ir_verr(v, op, "result must be a 1-D tile of i32 (one count per bin), is %s", ir_vts(v, r));
}

static void check_reduce(verifier *v, const ir_op *op) {
  const ir_type *a = op->operands[0]->type, *r = op->results[0]->type;
  const char *kind = ir_reduce_name((ir_reduce_kind)op->attr);
  if (!kind || (op->opc == IR_ARGREDUCE && op->attr == IR_RED_SUM) ||
      (op->opc == IR_SCAN && op->attr != IR_RED_SUM))
    ir_verr(v, op, "bad kind %lld", (long long)op->attr);
  if (a->kind != IR_TILE) {
    ir_verr(v, op, "operand must be a tile, is %s", ir_vts(v, a));
    return;
  }
  if (op->attr2 < 0 || op->attr2 >= a->rank) {
    ir_verr(v, op, "axis %lld out of range for %s", (long long)op->attr2, ir_vts(v, a));
    return;
  }
  if (op->opc == IR_SCAN) {
    if (!same_shape(a, r) || a->elem != r->elem) ir_verr(v, op, "result must be %s, is %s", ir_vts(v, a), ir_vts(v, r));
    return;
  }
  int shape[IR_MAX_RANK], n = 0;
  for (int i = 0; i < a->rank; i++)
    if (i != op->attr2) shape[n++] = a->shape[i];
  const ir_type *re = ir_type_elem(r);
  bool elem_ok = op->opc == IR_ARGREDUCE ? re->kind == IR_SCALAR && re->dtype == TK_I32 : re == a->elem;
  bool good = elem_ok && (n == 0 ? r->kind != IR_TILE
                                 : r->kind == IR_TILE && r->rank == n &&
                                       memcmp(r->shape, shape, sizeof(int) * (size_t)n) == 0);
  if (!good) ir_verr(v, op, "result %s does not match %s reduced along axis %lld", ir_vts(v, r), ir_vts(v, a), (long long)op->attr2);
}

static void check_dot(verifier *v, const ir_op *op) {
  const ir_type *a = op->operands[0]->type, *b = op->operands[1]->type, *c = op->operands[2]->type;
  if (a->kind != IR_TILE || b->kind != IR_TILE || c->kind != IR_TILE || a->rank != 2 || b->rank != 2 ||
      c->rank != 2) {
    ir_verr(v, op, "operands must be rank-2 tiles");
    return;
  }
  if (a->shape[1] != b->shape[0] || c->shape[0] != a->shape[0] || c->shape[1] != b->shape[1])
    ir_verr(v, op, "shapes %s x %s do not give %s", ir_vts(v, a), ir_vts(v, b), ir_vts(v, c));
  /* sema casts fp8 operands to f16 (exact); fp8dot (sm_90a) gives wgmma the fp8 tiles
   * back: two fp8 operands (e4m3, e5m2 or one of each) into f32 */
  bool f8 = ir_dtype_is_fp8(a->dtype) && ir_dtype_is_fp8(b->dtype);
  if (a->dtype != b->dtype && !f8) ir_verr(v, op, "a and b element types differ");
  if ((ir_dtype_is_fp8(a->dtype) || ir_dtype_is_fp8(b->dtype)) && (!f8 || c->dtype != TK_F32))
    ir_verr(v, op, "fp8 operands of a dot must both be fp8, into f32");
  if (op->results[0]->type != c) ir_verr(v, op, "result must have the accumulator type %s", ir_vts(v, c));
  if (!ir_dot_precision_name((ir_dot_precision)op->attr))
    ir_verr(v, op, "unknown input precision %" PRId64, op->attr);
}

static void check_shape_op(verifier *v, const ir_op *op) {
  const ir_type *a = op->operands[0]->type, *r = op->results[0]->type;
  if (r->kind != IR_TILE) {
    ir_verr(v, op, "result must be a tile, is %s", ir_vts(v, r));
    return;
  }
  if (op->opc == IR_SPLAT) {
    if (a->kind == IR_TILE || r->elem != a) ir_verr(v, op, "cannot splat %s to %s", ir_vts(v, a), ir_vts(v, r));
    return;
  }
  if (a->kind != IR_TILE || a->elem != r->elem) {
    ir_verr(v, op, "operand %s and result %s must be tiles of one element type", ir_vts(v, a), ir_vts(v, r));
    return;
  }
  switch (op->opc) {
  case IR_BROADCAST:
    if (a->rank != r->rank) {
      ir_verr(v, op, "rank changes from %d to %d", a->rank, r->rank);
      return;
    }
    for (int i = 0; i < a->rank; i++)
      if (a->shape[i] != r->shape[i] && a->shape[i] != 1) ir_verr(v, op, "dim %d cannot stretch from %d to %d", i, a->shape[i], r->shape[i]);
    return;
  case IR_EXPAND_DIMS: {
    int ax = (int)op->attr2;
    bool good = op->attr2 >= 0 && op->attr2 <= a->rank && r->rank == a->rank + 1 && r->shape[ax] == 1;
    for (int i = 0, j = 0; good && i < r->rank; i++)
      if (i != ax) good = r->shape[i] == a->shape[j++];
    if (!good) ir_verr(v, op, "%s with a 1 at axis %lld is not %s", ir_vts(v, a), (long long)op->attr2, ir_vts(v, r));
    return;
  }
  case IR_RESHAPE:
    if (ir_type_numel(a) != ir_type_numel(r)) ir_verr(v, op, "element count changes (%s to %s)", ir_vts(v, a), ir_vts(v, r));
    return;
  case IR_TRANS: {
    bool good = op->ints && op->nints == a->rank && r->rank == a->rank;
    unsigned seen = 0;
    for (int i = 0; good && i < a->rank; i++) {
      int p = op->ints[i];
      good = p >= 0 && p < a->rank && !(seen & (1u << p)) && r->shape[i] == a->shape[p];
      if (good) seen |= 1u << p;
    }
    if (!good) ir_verr(v, op, "permutation does not take %s to %s", ir_vts(v, a), ir_vts(v, r));
    return;
  }
  case IR_CONVERT_LAYOUT:
    if (!same_shape(a, r)) ir_verr(v, op, "shape changes (%s to %s)", ir_vts(v, a), ir_vts(v, r));
    return;
  case IR_GATHER: {
    const ir_type *ix = op->operands[1]->type;
    int ax = (int)op->attr2;
    bool good = ix->kind == IR_TILE && ix->rank == a->rank && ir_dtype_is_int(ix->dtype) && ix->dtype != TK_I1 &&
                ax >= 0 && ax < a->rank && r->rank == a->rank && r->dtype == a->dtype;
    for (int i = 0; good && i < a->rank; i++) good = r->shape[i] == ix->shape[i] && (i == ax || ix->shape[i] == a->shape[i]);
    if (!good) ir_verr(v, op, "gathering %s along axis %d by %s does not make %s", ir_vts(v, a), ax, ir_vts(v, ix), ir_vts(v, r));
    return;
  }
  case IR_JOIN: {
    const ir_type *b = op->operands[1]->type;
    bool good = b == a && r->rank == a->rank + 1 && r->shape[a->rank] == 2;
    for (int i = 0; good && i < a->rank; i++) good = r->shape[i] == a->shape[i];
    if (!good) ir_verr(v, op, "joining %s and %s does not make %s", ir_vts(v, a), ir_vts(v, b), ir_vts(v, r));
    return;
  }
  case IR_SLICE: {
    bool good = op->ints && op->nints == a->rank && r->rank == a->rank;
    for (int i = 0; good && i < a->rank; i++)
      good = op->ints[i] >= 0 && r->shape[i] >= 1 && op->ints[i] + r->shape[i] <= a->shape[i];
    if (!good) ir_verr(v, op, "%s is not a part of %s at the given starts", ir_vts(v, r), ir_vts(v, a));
    return;
  }
  default: SU_UNREACHABLE();
  }
}

static void check_yield(verifier *v, const ir_op *owner, const ir_block *blk, const char *which) {
  const ir_op *y = blk->last;
  if (!y || y->opc != IR_YIELD) {
    ir_verr(v, owner, "%s region must end with yield", which);
    return;
  }
  if (y->noperands != owner->nresults) {
    ir_verr(v, y, "yields %d value%s, the enclosing %s has %d result%s", y->noperands, y->noperands == 1 ? "" : "s",
        ir_op_info(owner->opc)->name, owner->nresults, owner->nresults == 1 ? "" : "s");
    return;
  }
  for (int i = 0; i < y->noperands; i++)
    if (y->operands[i] && y->operands[i]->type != owner->results[i]->type)
      ir_verr(v, y, "value %d has type %s, the enclosing %s's result is %s", i, ir_vts(v, y->operands[i]->type),
          ir_op_info(owner->opc)->name, ir_vts(v, owner->results[i]->type));
}

static void check_control(verifier *v, const ir_op *op) {
  if (op->opc == IR_IF) {
    const ir_type *c = op->operands[0]->type;
    if (c->kind != IR_SCALAR || c->dtype != TK_I1) ir_verr(v, op, "condition must be scalar i1, is %s", ir_vts(v, c));
    if (op->attr != 0 && op->attr != 1) ir_verr(v, op, "likely must be 0 or 1, is %lld", (long long)op->attr);
    for (int r = 0; r < 2; r++) {
      if (op->regions[r]->nargs) ir_verr(v, op, "regions take no arguments");
      check_yield(v, op, op->regions[r], r ? "else" : "then");
    }
    return;
  }
  const ir_type *lb = op->operands[0]->type;
  if (lb->kind != IR_SCALAR || !ir_dtype_is_int(lb->dtype) || lb->dtype == TK_I1)
    ir_verr(v, op, "bounds must be scalar integers, are %s", ir_vts(v, lb));
  if (op->operands[1]->type != lb || op->operands[2]->type != lb) ir_verr(v, op, "lb, ub and step must have one type");
  const ir_block *body = op->regions[0];
  if (body->nargs != op->nresults + 1) {
    ir_verr(v, op, "body takes %d arguments, expected %d (the induction variable and each carried value)",
        body->nargs, op->nresults + 1);
    return;
  }
  if (body->args[0]->type != lb) ir_verr(v, op, "induction variable has type %s, bounds %s", ir_vts(v, body->args[0]->type), ir_vts(v, lb));
  for (int i = 0; i < op->nresults; i++) {
    const ir_type *t = op->results[i]->type;
    if (op->operands[3 + i]->type != t || body->args[1 + i]->type != t)
      ir_verr(v, op, "carried value %d: initial %s, argument %s and result %s must agree", i,
          ir_vts(v, op->operands[3 + i]->type), ir_vts(v, body->args[1 + i]->type), ir_vts(v, t));
  }
  if (op->attr != 0 && op->attr != 1) ir_verr(v, op, "while must be 0 or 1, is %lld", (long long)op->attr);
  if (op->attr == 1 && (op->nresults < 1 || !is_i1(op->results[0]->type) || op->results[0]->type->kind != IR_SCALAR))
    ir_verr(v, op, "a while loop's first carried value must be a scalar i1");
  /* fuse's mark on its chunk loops for the cluster keep: [CTAs, the kernel's marked loops] */
  if (op->ints && (op->nints != 2 || !ir_cluster_size_ok(op->ints[0]) || op->ints[1] < 1))
    ir_verr(v, op, "cluster must be [2, 4, 8 or 16 CTAs, the number of marked loops]");
  check_yield(v, op, body, "body");
}

static void check_types(verifier *v, const ir_op *op, bool top) {
  for (int i = 0; i < op->nresults; i++) check_layout(v, op, op->results[i]->type);
  if (ir_verify_gpu_op(v, op, top)) return;
  const ir_opinfo *info = ir_op_info(op->opc);
  if (info->traits & IR_ELEM) {
    check_elementwise(v, op);
    return;
  }
  const ir_type *r = op->nresults == 1 ? op->results[0]->type : NULL;
  switch (op->opc) {
  case IR_CONST:
    if (is_ptr(r)) ir_verr(v, op, "cannot be a pointer");
    return;
  case IR_PROGRAM_ID:
  case IR_NUM_PROGRAMS:
    if (op->attr < 0 || op->attr > 2) ir_verr(v, op, "axis %lld is not 0, 1 or 2", (long long)op->attr);
    if (r->kind != IR_SCALAR || r->dtype != TK_I32) ir_verr(v, op, "result must be i32, is %s", ir_vts(v, r));
    return;
  case IR_SCRATCH:
    /* one size per kernel, a multiple of 16 so that every program's part starts aligned */
    if (r->kind != IR_PTR) ir_verr(v, op, "result must be a pointer, is %s", ir_vts(v, r));
    if (op->attr2 < 16 || op->attr2 % 16 || op->attr2 > ((int64_t)1 << 36))
      ir_verr(v, op, "bytes per program %lld is not a positive multiple of 16 up to 2^36", (long long)op->attr2);
    if (op->attr < 0 || op->attr >= op->attr2 || (r->kind == IR_PTR && op->attr % ir_dtype_bytes(r->elem->dtype)))
      ir_verr(v, op, "offset %lld is not an aligned offset below %lld", (long long)op->attr, (long long)op->attr2);
    if (v->scratch_bytes && v->scratch_bytes != op->attr2)
      ir_verr(v, op, "bytes per program %lld differs from the kernel's other scratch (%lld)", (long long)op->attr2, (long long)v->scratch_bytes);
    v->scratch_bytes = op->attr2;
    return;
  case IR_WORKSPACE:
    /* as scratch: one size per kernel (the launch's one buffer), each program's part aligned */
    if (r->kind != IR_PTR) ir_verr(v, op, "result must be a pointer, is %s", ir_vts(v, r));
    if (op->attr2 < 16 || op->attr2 % 16 || op->attr2 > ((int64_t)1 << 36))
      ir_verr(v, op, "bytes per program %lld is not a positive multiple of 16 up to 2^36", (long long)op->attr2);
    if (v->workspace_bytes && v->workspace_bytes != op->attr2)
      ir_verr(v, op, "bytes per program %lld differs from the kernel's other workspace (%lld)", (long long)op->attr2, (long long)v->workspace_bytes);
    v->workspace_bytes = op->attr2;
    return;
  case IR_ARANGE: {
    bool good = op->attr < op->attr2 && r->kind == IR_TILE && r->rank == 1 && r->dtype == TK_I32 &&
                r->elem->kind == IR_SCALAR && r->shape[0] == op->attr2 - op->attr;
    if (!good) ir_verr(v, op, "range [%lld, %lld) does not give %s", (long long)op->attr, (long long)op->attr2, ir_vts(v, r));
    return;
  }
  case IR_SPLAT: case IR_BROADCAST: case IR_EXPAND_DIMS: case IR_RESHAPE: case IR_TRANS: case IR_SLICE: case IR_JOIN: case IR_GATHER:
  case IR_CONVERT_LAYOUT:
    check_shape_op(v, op);
    return;
  case IR_LOAD:
    check_access(v, op, r, 1);
    if (op->noperands == 3 && op->operands[2]->type != r) ir_verr(v, op, "'other' must have the result type %s", ir_vts(v, r));
    check_hints(v, op);
    if (op->ints && (op->nints != 2 || op->ints[0] < 0 || op->ints[1] < 0 || op->ints[1] > 1))
      ir_verr(v, op, "keep must be [id, 0 (stages its chunk) or 1 (reads it back)]");
    return;
  case IR_STORE:
    check_access(v, op, op->operands[1]->type, 2);
    check_hints(v, op);
    return;
  case IR_HISTOGRAM:
    check_histogram(v, op);
    return;
  case IR_SLOT_STORE: case IR_SLOT_LOAD:
    check_slot(v, op);
    return;
  case IR_ATOMIC:
    if (!ir_atomic_name((ir_atomic_kind)op->attr)) ir_verr(v, op, "bad kind %lld", (long long)op->attr);
    if (op->attr2 && !ir_sem_name((ir_sem)op->attr2)) ir_verr(v, op, "bad memory order %lld", (long long)op->attr2);
    check_access(v, op, op->operands[1]->type, 2);
    if (op->operands[1]->type != r) ir_verr(v, op, "result must have the value's type");
    return;
  case IR_ATOMIC_CAS:
    if (op->attr2 && !ir_sem_name((ir_sem)op->attr2)) ir_verr(v, op, "bad memory order %lld", (long long)op->attr2);
    no_fp8(v, op, op->operands[0]->type);
    check_access(v, op, op->operands[2]->type, 3);
    if (op->operands[1]->type != op->operands[2]->type || r != op->operands[2]->type)
      ir_verr(v, op, "compare, value and result must have one type");
    return;
  case IR_REDUCE: case IR_ARGREDUCE: case IR_SCAN:
    no_fp8(v, op, op->operands[0]->type);
    check_reduce(v, op);
    return;
  case IR_DOT:
    check_dot(v, op);
    return;
  case IR_ASSERT:
    if (!is_i1(op->operands[0]->type)) ir_verr(v, op, "condition must be i1, is %s", ir_vts(v, op->operands[0]->type));
    return;
  case IR_FOR: case IR_IF:
    check_control(v, op);
    return;
  case IR_PRINT: case IR_YIELD: case IR_RETURN:
    return;
  default: break;
  }
  SU_UNREACHABLE();
}

/* ---- walking ------------------------------------------------------------------------ */

static void check_block(verifier *v, ir_block *blk);

static void check_op(verifier *v, ir_op *op) {
  bool counts_ok = check_counts(v, op);
  check_dominance(v, op);
  if (counts_ok) check_types(v, op, op->parent && !op->parent->parent);
  for (int r = 0; r < op->nregions; r++) {
    if (op->regions[r]->parent != op) ir_verr(v, op, "region %d does not point back to its op", r);
    check_block(v, op->regions[r]);
  }
  for (int i = 0; i < op->nresults; i++)
    if (op->results[i]) make_visible(v, op->results[i]);
}

static void check_block(verifier *v, ir_block *blk) {
  int mark = v->ndefined;
  for (int i = 0; i < blk->nargs; i++) make_visible(v, blk->args[i]);
  for (ir_op *op = blk->first; op; op = op->next) {
    if (op->opc < 0 || op->opc >= IR_NOPCODES) {
      su_loc loc = {v->src, 1, 0, op->loc.line, op->loc.col};
      su_error(v->d, loc, "invalid opcode %d", (int)op->opc);
      v->ok = false;
      continue;
    }
    if (op->parent != blk) ir_verr(v, op, "op is linked into a block it does not belong to");
    if ((ir_op_info(op->opc)->traits & IR_TERM) && op->next) ir_verr(v, op, "terminator is not the last op of its block");
    if (op->opc == IR_YIELD && !blk->parent) ir_verr(v, op, "yield outside a for or if region");
    if (op->opc == IR_RETURN && blk->parent) ir_verr(v, op, "return inside a for or if region");
    check_op(v, op);
  }
  while (v->ndefined > mark) v->visible[v->defined[--v->ndefined]->id] = false;
}

static void collect(ir_op *op, void *ctx) {
  verifier *v = ctx;
  for (int i = 0; i < op->nresults; i++)
    if (op->results[i]) v->byid[op->results[i]->id] = op->results[i];
  for (int r = 0; r < op->nregions; r++)
    for (int i = 0; i < op->regions[r]->nargs; i++) v->byid[op->regions[r]->args[i]->id] = op->regions[r]->args[i];
}

/* Divisibilities are powers of two, on integer and pointer parameters only; positivity is
 * on float parameters only. */
static void check_param_facts(verifier *v, const ir_func *f) {
  for (int i = 0; i < f->body->nargs; i++) {
    int d = ir_param_div(f, i);
    const ir_type *t = f->body->args[i]->type;
    bool fits = ir_param_can_divide(t);
    if (ir_param_pos(f, i) && !ir_param_can_be_positive(t)) {
      su_loc loc = {v->src, 1, 0, f->loc.line, f->loc.col};
      su_error(v->d, loc, "kernel '%s': parameter %d is known positive, but is not an f32 or f64", f->name, i);
      v->ok = false;
    }
    if (d == 1 || (d > 1 && !(d & (d - 1)) && fits)) continue;
    su_loc loc = {v->src, 1, 0, f->loc.line, f->loc.col};
    su_error(v->d, loc, "kernel '%s': parameter %d has divisibility %d%s", f->name, i, d,
             fits ? ", not a power of two" : ", but is neither an integer nor a pointer");
    v->ok = false;
  }
}

static void check_func(verifier *v, ir_func *f) {
  v->nvalues = ir_number_values(f);
  su_arena *a = v->d->arena;
  v->byid = SU_NEW_ARRAY(a, ir_value *, v->nvalues + 1);
  v->visible = SU_NEW_ARRAY(a, bool, v->nvalues + 1);
  v->defined = SU_NEW_ARRAY(a, ir_value *, v->nvalues + 1);
  v->ndefined = 0;
  v->scratch_bytes = 0;
  v->workspace_bytes = 0;
  v->f = f;
  for (int i = 0; i < f->body->nargs; i++) v->byid[f->body->args[i]->id] = f->body->args[i];
  ir_walk(f->body, collect, v);
  check_param_facts(v, f);
  check_block(v, f->body);
  if (!f->body->last || f->body->last->opc != IR_RETURN) {
    su_loc loc = {v->src, 1, 0, f->loc.line, f->loc.col};
    su_error(v->d, loc, "kernel '%s' does not end with return", f->name);
    v->ok = false;
  }
}

bool ir_verify(const ir_module *m, su_diags *d) {
  verifier v;
  memset(&v, 0, sizeof v);
  v.m = m;
  v.d = d;
  v.src = su_source_new(d->arena, m->source_name, "", 0);
  v.ok = true;
  for (int i = 0; i < m->nfuncs; i++) check_func(&v, m->funcs[i]);
  return v.ok;
}
