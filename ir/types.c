/* Types and layouts of the Tile IR, interned per module so that equality is pointer
 * equality; dtype helpers; the text form of types. */
#include "ir.h"

#include <math.h>

#include <string.h>

/* The module's interning tables. Keys are the raw bytes of a canonical (zero-padded)
 * struct: the pointers inside (elem, layout, parent) are themselves interned, so equal
 * bytes mean equal types. */
typedef struct {
  su_map *types;
  su_map *layouts;
} tables;

static tables *tables_of(ir_module *m) {
  if (!m->types) {
    tables *t = SU_NEW(m->arena, tables);
    t->types = su_map_new(m->arena);
    t->layouts = su_map_new(m->arena);
    m->types = t;
  }
  return m->types;
}

static const ir_type *intern(ir_module *m, const ir_type *key) {
  tables *t = tables_of(m);
  const ir_type *found = su_map_get(t->types, (const char *)key, sizeof *key);
  if (found) return found;
  ir_type *fresh = su_memdup(m->arena, key, sizeof *key);
  su_map_put(t->types, (const char *)key, sizeof *key, fresh);
  return fresh;
}

const ir_type *ir_type_scalar(ir_module *m, tk_dtype dt) {
  SU_ASSERT(dt >= 0 && dt < TK_NDTYPE && dt != TK_PTR);
  ir_type k;
  memset(&k, 0, sizeof k);
  k.kind = IR_SCALAR;
  k.dtype = dt;
  return intern(m, &k);
}

const ir_type *ir_type_ptr(ir_module *m, const ir_type *pointee) {
  SU_ASSERT(pointee && pointee->kind == IR_SCALAR);
  ir_type k;
  memset(&k, 0, sizeof k);
  k.kind = IR_PTR;
  k.dtype = TK_PTR;
  k.elem = pointee;
  return intern(m, &k);
}

static const ir_type *tile(ir_module *m, const ir_type *elem, int rank, const int *shape,
                           const ir_layout *l) {
  SU_ASSERT(elem && elem->kind != IR_TILE);
  SU_ASSERT(rank >= 1 && rank <= IR_MAX_RANK);
  ir_type k;
  memset(&k, 0, sizeof k);
  k.kind = IR_TILE;
  k.dtype = elem->dtype;
  k.elem = elem;
  k.rank = rank;
  for (int i = 0; i < rank; i++) {
    SU_ASSERT(shape[i] >= 1);
    k.shape[i] = shape[i];
  }
  k.layout = l;
  return intern(m, &k);
}

const ir_type *ir_type_tile(ir_module *m, const ir_type *elem, int rank, const int *shape) {
  return tile(m, elem, rank, shape, NULL);
}

const ir_type *ir_type_smem(ir_module *m, const ir_type *elem, int rank, const int *shape,
                            const ir_layout *shared) {
  SU_ASSERT(elem && elem->kind == IR_SCALAR);
  SU_ASSERT(rank >= 2 && rank <= IR_MAX_RANK);
  SU_ASSERT(shared && shared->kind == IR_LAYOUT_SHARED && shared->rank == rank - 1);
  ir_type k;
  memset(&k, 0, sizeof k);
  k.kind = IR_SMEM;
  k.dtype = elem->dtype;
  k.elem = elem;
  k.rank = rank;
  for (int i = 0; i < rank; i++) {
    SU_ASSERT(shape[i] >= 1);
    k.shape[i] = shape[i];
  }
  k.layout = shared;
  return intern(m, &k);
}

const ir_type *ir_type_mbar(ir_module *m, int count) {
  SU_ASSERT(count >= 1);
  ir_type k;
  memset(&k, 0, sizeof k);
  k.kind = IR_MBAR;
  k.dtype = TK_I64;
  k.rank = 1;
  k.shape[0] = count;
  return intern(m, &k);
}

static int64_t smem_round(int64_t n) { return (n + IR_SMEM_ALIGN - 1) / IR_SMEM_ALIGN * IR_SMEM_ALIGN; }

int64_t ir_smem_slot_bytes(const ir_type *t) {
  SU_ASSERT(t->kind == IR_SMEM);
  int64_t n = ir_dtype_bytes(t->dtype);
  for (int i = 1; i < t->rank; i++) n *= t->shape[i];
  return smem_round(n);
}

int64_t ir_smem_buffer_bytes(const ir_type *t) {
  SU_ASSERT(t->kind == IR_SMEM || t->kind == IR_MBAR);
  if (t->kind == IR_MBAR) return smem_round((int64_t)t->shape[0] * IR_MBAR_BYTES);
  return smem_round((int64_t)t->shape[0] * ir_smem_slot_bytes(t));
}

const ir_type *ir_type_tmap(ir_module *m) {
  ir_type k;
  memset(&k, 0, sizeof k);
  k.kind = IR_TMAP;
  k.dtype = TK_I64;
  return intern(m, &k);
}

const ir_type *ir_type_slot(ir_module *m, const ir_type *t) {
  SU_ASSERT(t->kind == IR_SMEM);
  return ir_type_tile(m, t->elem, t->rank - 1, t->shape + 1);
}

const ir_type *ir_type_with_layout(ir_module *m, const ir_type *t, const ir_layout *l) {
  SU_ASSERT(t->kind == IR_TILE);
  return tile(m, t->elem, t->rank, t->shape, l);
}

const ir_layout *ir_layout_intern(ir_module *m, const ir_layout *l) {
  ir_layout k;
  memset(&k, 0, sizeof k);
  k.kind = l->kind;
  if (l->kind == IR_LAYOUT_SLICE) {
    /* A slice is fully described by its parent and the removed dim: the per-dim arrays
     * stay zero so that equal slices intern to one pointer. */
    SU_ASSERT(l->parent && l->parent->rank >= 2);
    SU_ASSERT(l->slice_dim >= 0 && l->slice_dim < l->parent->rank);
    k.parent = ir_layout_intern(m, l->parent);
    k.slice_dim = l->slice_dim;
    k.rank = l->parent->rank - 1;
  } else if (l->kind == IR_LAYOUT_SHARED) {
    SU_ASSERT(l->rank >= 1 && l->rank <= IR_MAX_RANK);
    k.rank = l->rank;
    k.swizzle = l->swizzle;
    for (int i = 0; i < l->rank; i++) k.order[i] = l->order[i];
  } else {
    SU_ASSERT(l->rank >= 1 && l->rank <= IR_MAX_RANK);
    k.rank = l->rank;
    for (int i = 0; i < l->rank; i++) {
      k.size_per_thread[i] = l->size_per_thread[i];
      k.threads_per_warp[i] = l->threads_per_warp[i];
      k.warps_per_cta[i] = l->warps_per_cta[i];
      k.order[i] = l->order[i];
      k.reps_per_warp[i] = ir_layout_rpw(l, i); /* 0 and 1 intern alike */
    }
  }
  tables *t = tables_of(m);
  const ir_layout *found = su_map_get(t->layouts, (const char *)&k, sizeof k);
  if (found) return found;
  ir_layout *fresh = su_memdup(m->arena, &k, sizeof k);
  su_map_put(t->layouts, (const char *)&k, sizeof k, fresh);
  return fresh;
}

const ir_type *ir_type_elem(const ir_type *t) { return t->kind == IR_TILE ? t->elem : t; }

const ir_type *ir_type_like(ir_module *m, const ir_type *like, const ir_type *elem) {
  if (like->kind != IR_TILE) return elem;
  return ir_type_tile(m, elem, like->rank, like->shape);
}

int64_t ir_type_numel(const ir_type *t) {
  if (t->kind != IR_TILE) return 1;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

/* ---- dtypes ------------------------------------------------------------------------- */

static const struct {
  const char *name;
  int bits;
} dtypes[TK_NDTYPE] = {
    [TK_I1] = {"i1", 1},     [TK_I8] = {"i8", 8},     [TK_I16] = {"i16", 16},
    [TK_I32] = {"i32", 32},  [TK_I64] = {"i64", 64},  [TK_U8] = {"u8", 8},
    [TK_U16] = {"u16", 16},  [TK_U32] = {"u32", 32},  [TK_U64] = {"u64", 64},
    [TK_F16] = {"f16", 16},  [TK_BF16] = {"bf16", 16}, [TK_F32] = {"f32", 32},
    [TK_F64] = {"f64", 64},  [TK_PTR] = {"ptr", 64},  [TK_F8E4M3] = {"f8e4m3", 8},
    [TK_F8E5M2] = {"f8e5m2", 8},
};

bool ir_cluster_size_ok(long long ctas) { return ctas >= 2 && ctas <= IR_CLUSTER_MAX && !(ctas & (ctas - 1)); }

bool ir_dtype_is_int(tk_dtype d) { return d >= TK_I1 && d <= TK_U64; }
bool ir_dtype_is_signed(tk_dtype d) { return d >= TK_I8 && d <= TK_I64; }
bool ir_dtype_is_float(tk_dtype d) { return (d >= TK_F16 && d <= TK_F64) || ir_dtype_is_fp8(d); }
bool ir_dtype_is_fp8(tk_dtype d) { return d == TK_F8E4M3 || d == TK_F8E5M2; }

int ir_dtype_bits(tk_dtype d) {
  SU_ASSERT(d >= 0 && d < TK_NDTYPE);
  return dtypes[d].bits;
}

int ir_dtype_bytes(tk_dtype d) {
  int bits = ir_dtype_bits(d);
  return bits < 8 ? 1 : bits / 8;
}

const char *ir_dtype_name(tk_dtype d) {
  SU_ASSERT(d >= 0 && d < TK_NDTYPE);
  return dtypes[d].name;
}

bool ir_dtype_parse(const char *s, size_t n, tk_dtype *out) {
  for (int d = 0; d < TK_NDTYPE; d++) {
    if (strlen(dtypes[d].name) == n && memcmp(dtypes[d].name, s, n) == 0) {
      *out = (tk_dtype)d;
      return true;
    }
  }
  return false;
}

/* ---- text form ---------------------------------------------------------------------- */

static void print_ints(su_buf *b, const char *key, const int *v, int n) {
  su_buf_printf(b, "%s=[", key);
  for (int i = 0; i < n; i++) su_buf_printf(b, "%s%d", i ? "," : "", v[i]);
  su_buf_puts(b, "]");
}

int ir_layout_rpw(const ir_layout *l, int d) {
  return l->reps_per_warp[d] > 1 ? l->reps_per_warp[d] : 1;
}

void ir_layout_print(su_buf *b, const ir_layout *l) {
  if (l->kind == IR_LAYOUT_SLICE) {
    su_buf_printf(b, "#slice<dim=%d, parent=", l->slice_dim);
    ir_layout_print(b, l->parent);
    su_buf_puts(b, ">");
    return;
  }
  if (l->kind == IR_LAYOUT_SHARED) {
    su_buf_printf(b, "#shared<swizzle=%d, ", l->swizzle);
    print_ints(b, "order", l->order, l->rank);
    su_buf_puts(b, ">");
    return;
  }
  su_buf_puts(b, l->kind == IR_LAYOUT_MMA     ? "#mma<"
                 : l->kind == IR_LAYOUT_WGMMA ? "#wgmma<"
                                              : "#blocked<");
  print_ints(b, "spt", l->size_per_thread, l->rank);
  bool rpw = false;
  int reps[IR_MAX_RANK];
  for (int d = 0; d < l->rank; d++) rpw |= (reps[d] = ir_layout_rpw(l, d)) != 1;
  if (rpw) print_ints(b, ", rpw", reps, l->rank);
  print_ints(b, ", tpw", l->threads_per_warp, l->rank);
  print_ints(b, ", wpc", l->warps_per_cta, l->rank);
  print_ints(b, ", order", l->order, l->rank);
  su_buf_puts(b, ">");
}

void ir_type_print(su_buf *b, const ir_type *t) {
  switch (t->kind) {
  case IR_SCALAR:
    su_buf_puts(b, ir_dtype_name(t->dtype));
    return;
  case IR_PTR:
    su_buf_puts(b, "ptr<");
    ir_type_print(b, t->elem);
    su_buf_puts(b, ">");
    return;
  case IR_TILE:
    su_buf_puts(b, "tile<");
    for (int i = 0; i < t->rank; i++) su_buf_printf(b, "%dx", t->shape[i]);
    ir_type_print(b, t->elem);
    if (t->layout) {
      su_buf_puts(b, ", ");
      ir_layout_print(b, t->layout);
    }
    su_buf_puts(b, ">");
    return;
  case IR_SMEM:
    su_buf_puts(b, "smem<");
    for (int i = 0; i < t->rank; i++) su_buf_printf(b, "%dx", t->shape[i]);
    ir_type_print(b, t->elem);
    su_buf_puts(b, ", ");
    ir_layout_print(b, t->layout);
    su_buf_puts(b, ">");
    return;
  case IR_MBAR:
    su_buf_printf(b, "mbar<%d>", t->shape[0]);
    return;
  case IR_TMAP:
    su_buf_puts(b, "tmap");
    return;
  }
  SU_UNREACHABLE();
}

/* Scale so that one unit in the last place of a p-bit significand becomes 1, round to an
 * integer in the default (nearest-even) mode, scale back: exact, since scaling by powers
 * of two is. Below emin the unit stays at emin's, which is how subnormals lose precision.
 * Past max (the largest finite value) the result is inf, or max itself when the format
 * saturates (the fp8 types, whose conversions are PTX's .satfinite ones: an infinity
 * becomes max too). */
static double round_to_format(double x, int p, int emin, double max, bool saturate) {
  if (x == 0 || isnan(x)) return x;
  if (isinf(x)) return saturate ? copysign(max, x) : x;
  int e = ilogb(x);
  if (e < emin) e = emin;
  int q = e - (p - 1);
  double r = ldexp(nearbyint(ldexp(x, -q)), q);
  return fabs(r) > max ? copysign(saturate ? max : INFINITY, x) : r;
}

/* The largest finite value of an IEEE-style format: all significand bits set at emax. */
static double ieee_max(int p, int emax) { return ldexp(2.0 - ldexp(1.0, 1 - p), emax); }

/* The fp8 formats: significand bits (the hidden one included), the exponent bias, the
 * largest finite value. E4M3 spends its top exponent on numbers (only S.1111.111 is NaN),
 * so its max is 1.75 * 2^8 rather than IEEE's 1.875 * 2^7. */
typedef struct {
  int p, bias;
  double max;
} fp8_format;

static fp8_format fp8_of(tk_dtype d) {
  if (d == TK_F8E4M3) return (fp8_format){4, 7, 448.0};
  SU_ASSERT(d == TK_F8E5M2);
  return (fp8_format){3, 15, 57344.0};
}

/* A NaN byte travels through the interpreter as a double NaN that keeps its sign and,
 * in its lowest significand bits, the byte's own (the GPU moves fp8 bytes untouched); a
 * NaN that a conversion makes has none of those bits, and is 0x7f. */
static double fp8_nan(uint8_t b) {
  uint64_t u = UINT64_C(0x7ff8000000000000) | (b & 0x03u) | ((uint64_t)(b & 0x80) << 56);
  double x;
  memcpy(&x, &u, 8);
  return x;
}

uint8_t ir_fp8_bits(tk_dtype d, double x) {
  fp8_format f = fp8_of(d);
  uint8_t sign = signbit(x) ? 0x80 : 0;
  if (isnan(x)) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return d == TK_F8E5M2 && (u & 3) ? (uint8_t)(sign | 0x7c | (u & 3)) : (uint8_t)(sign | 0x7f);
  }
  if (isinf(x) && d == TK_F8E5M2) return sign | 0x7c;
  double a = fabs(ir_dtype_round(d, x));
  if (a == 0) return sign;
  int m = f.p - 1, e = ilogb(a), emin = 1 - f.bias;
  if (e < emin) /* subnormal: a whole number of units of 2^(emin - m) */
    return sign | (uint8_t)ldexp(a, m - emin);
  return sign | (uint8_t)((e + f.bias) << m) | (uint8_t)(ldexp(a, m - e) - (1 << m));
}

double ir_fp8_value(tk_dtype d, uint8_t b) {
  fp8_format f = fp8_of(d);
  int m = f.p - 1, e = (b & 0x7f) >> m, frac = b & ((1 << m) - 1);
  double s = b & 0x80 ? -1.0 : 1.0;
  if (d == TK_F8E4M3 && (b & 0x7f) == 0x7f) return fp8_nan(b);
  if (d == TK_F8E5M2 && e == 31) return frac ? fp8_nan(b) : s * INFINITY;
  if (e == 0) return s * ldexp(frac, 1 - f.bias - m);
  return s * ldexp(frac + (1 << m), e - f.bias - m);
}

void ir_fp8_acc_add(ir_fp8_acc *a, double product) {
  if (a->n % 32 == 0) { /* a step opens: close the last one */
    a->bound += ldexp(a->mag, -12);
    a->mag = fabs(a->sum);
  }
  a->sum += product;
  a->mag += fabs(product);
  a->n++;
}

double ir_fp8_acc_bound(const ir_fp8_acc *a) { return a->bound + ldexp(a->mag, -12); }

double ir_dtype_round(tk_dtype d, double x) {
  switch (d) {
  case TK_F16: return round_to_format(x, 11, -14, ieee_max(11, 15), false);
  case TK_BF16: return round_to_format(x, 8, -126, ieee_max(8, 127), false);
  /* Not (float)x: converting an out-of-range double to float is undefined in C. */
  case TK_F32: return round_to_format(x, 24, -126, ieee_max(24, 127), false);
  case TK_F64: return x;
  case TK_F8E4M3: case TK_F8E5M2: {
    fp8_format f = fp8_of(d);
    if (isnan(x)) return NAN; /* cvt.rn.satfinite's NaN: 0x7f, whatever x's sign */
    return round_to_format(x, f.p, 1 - f.bias, f.max, true);
  }
  default: su_fatal("ir_dtype_round: %s is not a float type", ir_dtype_name(d));
  }
}
