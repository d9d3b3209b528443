/* The generator: one random valid kernel per seed.
 *
 * A kernel works on a main tile, [C] or [R, C], one per program (a grid of G programs,
 * sometimes over two axes), at offsets `offs` into buffers of G·R·C elements, with a
 * runtime bound n and `mask = offs < n`. Its body is a random DAG of expressions over
 * loads, parameters, literals, index tiles and random numbers, through elementwise ops,
 * casts, broadcasting, reductions and scans, shape ops, dot, runtime and unrolled loops
 * with loop-carried vars, runtime and compile-time ifs, and atomics; each result is
 * stored (masked or not, in the shape it has) into its own output buffer.
 *
 * Every value carries two numbers: mag, a bound on its magnitude, and err, a bound on
 * |GPU − interpreter| for it (0: the two must agree). The rules, one per op, are the
 * documented precision rules (docs/decisions.md, "The differential tester"): IEEE
 * + − * / sqrt fma and casts are exact on both, so exact inputs give exact results; the
 * approximate functions, float sums in another order (reductions, scans, dot, float
 * atomics) and tf32 add error; an op carries its operands' errors by its Lipschitz bound
 * and rounds once more. Ops that are not continuous (comparisons, float → int casts,
 * rounding to integers, argmax, fmod, copysign's sign) are applied only to exact values,
 * so an allowed error can never flip a branch; an op is not applied where its bound would
 * exceed td_mag_limit. That keeps every comparison sound, if loose. */
#include "tkdiff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ---- values ------------------------------------------------------------------------- */

typedef struct {
  const char *t; /* the text: a name, a literal or a parenthesized expression */
  tk_dtype dt;
  int rank;      /* 0, 1 ([C] or [1]), 2 ([R or 1, C or 1]) */
  int sh[2];
  double mag, err;
  bool weak;     /* an untyped literal: adapts to the other operand */
  bool ok;
} ex;

typedef struct {
  td_kernel *k;
  const td_gen_options *o;
  su_arena *a;
  uint64_t rng;
  int R, C;      /* the main tile; R = 0 for a 1-D kernel */
  int G;         /* programs */
  int total;     /* elements of a main buffer: G·R·C */
  su_buf *body;  /* the block being written */
  int indent;
  int ntmp, nin, nout, nscal;
  bool loop_leaf; /* a loop body: `lv` (the loop's load) and `li` (its index) are leaves */
  ex lv, li;
  int nstores;
  su_buf sigbuf, cparams;
} gen;

static uint64_t next(gen *g) {
  uint64_t z = (g->rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int rnd(gen *g, int n) { return (int)(next(g) % (uint64_t)n); }
static bool chance(gen *g, int percent) { return rnd(g, 100) < percent; }
static double unit(gen *g) { return (double)(next(g) >> 11) * 0x1p-53; }

static const char *dn(tk_dtype d) { return ir_dtype_name(d); }
static bool isf(tk_dtype d) { return ir_dtype_is_float(d); }

static const tk_dtype INTS[] = {TK_I8, TK_I16, TK_I32, TK_I64, TK_U8, TK_U16, TK_U32, TK_U64};
static const tk_dtype FLOATS[] = {TK_F16, TK_BF16, TK_F32, TK_F64};

static tk_dtype any_dtype(gen *g) {
  int r = rnd(g, 100);
  if (r < 45) return FLOATS[r < 25 ? 2 : rnd(g, 4)];
  if (r < 95) return INTS[r < 70 ? 2 : rnd(g, 8)];
  return TK_I1;
}

/* The largest magnitude of an integer dtype. */
static double int_max(tk_dtype d) {
  if (d == TK_I1) return 1;
  int b = ir_dtype_bits(d);
  return ir_dtype_is_signed(d) ? ldexp(1, b - 1) : ldexp(1, b) - 1;
}

static void line(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(gen *g, const char *fmt, ...) {
  for (int i = 0; i < g->indent; i++) su_buf_puts(g->body, "    ");
  va_list ap;
  va_start(ap, fmt);
  su_buf_vprintf(g->body, fmt, ap);
  va_end(ap);
  su_buf_puts(g->body, "\n");
}

static void feature(gen *g, const char *f) {
  if (strstr(su_buf_str(&g->k->features), f)) return;
  if (g->k->features.len) su_buf_puts(&g->k->features, ",");
  su_buf_puts(&g->k->features, f);
}

static ex bad(void) { return (ex){.ok = false}; }

/* Whether converting x to the integer type d may wrap a negative value to a huge one: d
 * unsigned, x a signed integer (the magnitude bound is then d's range: tkdiff seed 1007249
 * of generator 2, where (pid as u64) * i64 gave ~2^64 against a bound of 10^3). */
static bool wraps_to(tk_dtype d, const ex *x) {
  return !isf(d) && d != TK_I1 && !ir_dtype_is_signed(d) && !isf(x->dt) && ir_dtype_is_signed(x->dt);
}

static ex mk(gen *g, const char *t, tk_dtype d, int rank, const int *sh, double mag, double err) {
  (void)g;
  ex e = {.t = t, .dt = d, .rank = rank, .mag = mag, .err = err, .ok = true};
  for (int i = 0; i < rank; i++) e.sh[i] = sh[i];
  if (!isf(d) && mag > int_max(d)) e.mag = int_max(d);
  return e;
}

static int elems(const ex *e) {
  int n = 1;
  for (int i = 0; i < e->rank; i++) n *= e->sh[i];
  return n;
}

/* The broadcast shape of a and b (always valid: every shape here is made of the main
 * tile's dims or 1, right-aligned). */
static void bshape(const ex *a, const ex *b, int *rank, int *sh) {
  *rank = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < *rank; i++) {
    int ia = i - (*rank - a->rank), ib = i - (*rank - b->rank);
    int da = ia >= 0 ? a->sh[ia] : 1, db = ib >= 0 ? b->sh[ib] : 1;
    sh[i] = da > db ? da : db;
  }
}

static bool valid_shape(const gen *g, int rank, const int *sh) {
  if (rank == 0) return true;
  if (rank == 1) return sh[0] == g->C || sh[0] == 1;
  return g->R && (sh[0] == g->R || sh[0] == 1) && (sh[1] == g->C || sh[1] == 1);
}

/* Too large to carry an error: the op that would make it is not applied. */
static bool over(tk_dtype d, double mag, double err) {
  return isf(d) && (err > 0 || !isfinite(err)) && !(mag <= td_mag_limit(d));
}

/* sema_promote, restated (docs/language.md §5.2). */
static tk_dtype promote(tk_dtype a, bool wa, tk_dtype b, bool wb) {
  if (wa && !wb) {
    if (isf(a)) return isf(b) ? b : a;
    return b == TK_I1 ? a : b;
  }
  if (wb && !wa) return promote(b, wb, a, wa);
  if (a == b) return a;
  if (isf(a) != isf(b)) return isf(a) ? a : b;
  if (isf(a)) {
    int x = ir_dtype_bits(a), y = ir_dtype_bits(b);
    return x == y ? TK_F32 : x > y ? a : b;
  }
  if (a == TK_I1) return b;
  if (b == TK_I1) return a;
  int x = ir_dtype_bits(a), y = ir_dtype_bits(b);
  if (x != y) return x > y ? a : b;
  return ir_dtype_is_signed(a) ? b : a;
}

/* The error after one more rounding to d of a value of magnitude mag that already
 * carries err: an exact value stays exact (both backends round the same exact value). */
static double rounded(tk_dtype d, double mag, double err) {
  if (isnan(err)) return INFINITY; /* never lose an error to 0 * inf */
  return err > 0 ? err + td_ulp(d) * mag : 0;
}

/* An error times a magnitude: no error stays none even against an unbounded magnitude
 * (an exact quotient's), where a * b would be NaN. */
static double emul(double err, double mag) { return err == 0 ? 0 : err * mag; }

/* ---- buffers and parameters ---------------------------------------------------------- */

static const char *add_param_text(gen *g, const char *name, const char *type) {
  if (g->sigbuf.len) su_buf_puts(&g->sigbuf, ", ");
  su_buf_printf(&g->sigbuf, "%s: %s", name, type);
  return name;
}

static int add_buf(gen *g, tk_dtype d, size_t n, double lo, double hi, int bits, bool out) {
  td_kernel *k = g->k;
  if (k->nbufs >= TD_MAX_BUFS || k->nparams >= TD_MAX_PARAMS) return -1;
  int b = k->nbufs++;
  const char *name = out ? su_fmt(g->a, "out%d", g->nout++) : su_fmt(g->a, "in%d", g->nin++);
  k->bufs[b] = (td_buf){.name = name, .dt = d, .n = n, .lo = lo, .hi = hi, .bits = bits, .out = out};
  k->params[k->nparams++] = (td_param){.is_ptr = true, .buf = b, .name = name};
  add_param_text(g, name, su_fmt(g->a, "*%s", dn(d)));
  return b;
}

static tk_arg scalar_arg(tk_dtype d, double v) {
  tk_arg a = {.type = d};
  if (isf(d)) a.v.f = v;
  else if (d == TK_U64 || d == TK_U32 || d == TK_U16 || d == TK_U8) a.v.u = (uint64_t)v;
  else a.v.i = (int64_t)v;
  return a;
}

static const char *add_scalar(gen *g, tk_dtype d, double v) {
  td_kernel *k = g->k;
  if (k->nparams >= TD_MAX_PARAMS) return NULL;
  const char *name = su_fmt(g->a, "s%d", g->nscal++);
  k->params[k->nparams++] = (td_param){.is_ptr = false, .arg = scalar_arg(d, v), .name = name};
  add_param_text(g, name, dn(d));
  return name;
}

/* A random value for a fill or a scalar of d, and the range it comes from. */
static void value_range(gen *g, tk_dtype d, double *lo, double *hi, int *bits) {
  *bits = 0;
  if (isf(d)) {
    static const double R[] = {1, 2, 4, 8, 100};
    double r = R[rnd(g, d == TK_F16 ? 4 : 5)];
    *lo = chance(g, 20) ? 0 : -r;
    *hi = r;
    *bits = chance(g, 30) ? 4 : 0; /* few bits: sums that are exact in any order */
  } else if (d == TK_I1) {
    *lo = 0, *hi = 1;
  } else {
    int k = rnd(g, 3);
    double m = k == 0 ? 10 : k == 1 ? 1000 : int_max(d);
    if (m > int_max(d)) m = int_max(d);
    bool sgn = ir_dtype_is_signed(d);
    *lo = sgn ? -m : 0;
    *hi = sgn ? fmin(m, int_max(d) - 1) : m;
    if (!sgn && k == 2) *hi = int_max(d);
  }
}

static double pick_value(gen *g, tk_dtype d, double lo, double hi) {
  if (isf(d)) {
    double v = lo + (hi - lo) * unit(g);
    return ldexp(rint(ldexp(v, 6)), -6); /* few bits: exact in every float type */
  }
  if (hi - lo > 1e15) return (double)(int64_t)(next(g) >> 12) * (lo < 0 ? (chance(g, 50) ? 1 : -1) : 1);
  return lo + floor((hi - lo + 1) * unit(g));
}

/* ---- leaves ---------------------------------------------------------------------------- */

static int full_rank(const gen *g) { return g->R ? 2 : 1; }
static void full_shape(const gen *g, int *sh) {
  if (g->R) sh[0] = g->R, sh[1] = g->C;
  else sh[0] = g->C;
}

static const char *tmp(gen *g) { return su_fmt(g->a, "t%d", g->ntmp++); }

/* Binds e to a fresh let name (not literals: their weakness would change meaning). */
static ex bind(gen *g, ex e) {
  if (!e.ok || e.weak) return e;
  const char *n = tmp(g);
  line(g, "let %s = %s;", n, e.t);
  e.t = n;
  return e;
}

static ex literal(gen *g, bool want_float) {
  static const char *F[] = {"0.5", "1.5", "2.0", "0.25", "3.0", "1.0", "0.75"};
  static const double FV[] = {0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75};
  ex e;
  if (want_float) {
    int i = rnd(g, 7);
    e = mk(g, F[i], TK_F32, 0, NULL, FV[i], 0);
  } else {
    int v = rnd(g, 10);
    e = mk(g, su_fmt(g->a, "%d", v), TK_I32, 0, NULL, v, 0);
  }
  e.weak = true;
  return e;
}

static ex load_leaf(gen *g) {
  tk_dtype d = any_dtype(g);
  double lo, hi;
  int bits;
  value_range(g, d, &lo, &hi, &bits);
  double mag = fmax(fabs(lo), fabs(hi));
  int kind = g->R ? rnd(g, 10) : rnd(g, 7);
  int sh[2];
  if (kind < 7) { /* the main tile */
    int b = add_buf(g, d, (size_t)g->total, lo, hi, bits, false);
    if (b < 0) return bad();
    const char *p = g->k->bufs[b].name;
    full_shape(g, sh);
    const char *t;
    int m = rnd(g, 3);
    if (m == 0) t = su_fmt(g->a, "load(%s + offs)", p);
    else if (m == 1) t = su_fmt(g->a, "load(%s + offs, mask)", p);
    else {
      ex o = literal(g, isf(d));
      if (d == TK_I1) o = mk(g, chance(g, 50) ? "true" : "false", TK_I1, 0, NULL, 1, 0);
      t = su_fmt(g->a, "load(%s + offs, mask = mask, other = %s)", p, o.t);
      mag = fmax(mag, o.mag);
    }
    feature(g, "load");
    return mk(g, t, d, full_rank(g), sh, mag, 0);
  }
  if (kind < 9 || !g->R) { /* a row: [C] */
    int b = add_buf(g, d, (size_t)g->C, lo, hi, bits, false);
    if (b < 0) return bad();
    sh[0] = g->C;
    return mk(g, su_fmt(g->a, "load(%s + cols)", g->k->bufs[b].name), d, 1, sh, mag, 0);
  }
  int b = add_buf(g, d, (size_t)g->R, lo, hi, bits, false); /* a column: [R, 1] */
  if (b < 0) return bad();
  sh[0] = g->R, sh[1] = 1;
  return mk(g, su_fmt(g->a, "load(%s + rows[:, None])", g->k->bufs[b].name), d, 2, sh, mag, 0);
}

static ex scalar_leaf(gen *g) {
  tk_dtype d = any_dtype(g);
  double lo, hi;
  int bits;
  value_range(g, d, &lo, &hi, &bits);
  double v = pick_value(g, d, lo, hi);
  const char *n = add_scalar(g, d, v);
  if (!n) return bad();
  return mk(g, n, d, 0, NULL, fabs(v) > 0 ? fabs(v) : 0, 0);
}

static ex index_leaf(gen *g) {
  int sh[2];
  switch (rnd(g, 5)) {
  case 0:
    full_shape(g, sh);
    return mk(g, "offs", TK_I32, full_rank(g), sh, g->total, 0);
  case 1:
    sh[0] = g->C;
    return mk(g, "cols", TK_I32, 1, sh, g->C, 0);
  case 2:
    if (g->R) {
      sh[0] = g->R, sh[1] = 1;
      return mk(g, "rows[:, None]", TK_I32, 2, sh, g->R, 0);
    }
    sh[0] = g->C;
    return mk(g, "cols", TK_I32, 1, sh, g->C, 0);
  case 3: return mk(g, "pid", TK_I32, 0, NULL, g->G, 0);
  default: {
    tk_dtype d = chance(g, 50) ? TK_I32 : INTS[rnd(g, 8)];
    full_shape(g, sh);
    const char *t = d == TK_I32 ? "offs" : su_fmt(g->a, "(offs as %s)", dn(d));
    return mk(g, t, d, full_rank(g), sh, fmin(g->total, int_max(d)), 0);
  }
  }
}

static ex full_leaf(gen *g) {
  tk_dtype d = any_dtype(g);
  int sh[2];
  full_shape(g, sh);
  if (chance(g, 30)) {
    const char *dims = g->R ? su_fmt(g->a, "%d, %d", g->R, g->C) : su_fmt(g->a, "%d", g->C);
    return mk(g, su_fmt(g->a, "zeros<%s>(%s)", dn(d), dims), d, full_rank(g), sh, 0, 0);
  }
  ex v = chance(g, 50) ? scalar_leaf(g) : literal(g, isf(d));
  if (!v.ok) return v;
  if (d == TK_I1) v = mk(g, "true", TK_I1, 0, NULL, 1, 0);
  /* full converts the value to d: a float value to an int d needs exactness, which a
   * leaf has */
  const char *dims = g->R ? su_fmt(g->a, "%d, %d", g->R, g->C) : su_fmt(g->a, "%d", g->C);
  /* a negative signed value wraps to an unsigned d's top (seed 3004905: full<u16>(s1) of
   * a negative s1 is near 65535, and the error model bounded it by |s1|) */
  double mag = isf(d) ? v.mag : wraps_to(d, &v) ? int_max(d) : fmin(int_max(d), v.mag + 1);
  if (isf(d) && !isf(v.dt) && v.mag > td_mag_limit(d)) mag = INFINITY;
  return mk(g, su_fmt(g->a, "full<%s>(%s, %s)", dn(d), v.t, dims), d, full_rank(g), sh, mag, 0);
}

static ex random_leaf(gen *g) {
  const char *seed = add_scalar(g, chance(g, 50) ? TK_I32 : TK_U64, (double)rnd(g, 1 << 20));
  if (!seed) return bad();
  int sh[2];
  full_shape(g, sh);
  feature(g, "random");
  if (chance(g, 50))
    return mk(g, su_fmt(g->a, "randint(%s, offs)", seed), TK_U32, full_rank(g), sh, int_max(TK_U32), 0);
  const char *rounds = chance(g, 30) ? su_fmt(g->a, ", %d", 1 + rnd(g, 12)) : "";
  return mk(g, su_fmt(g->a, "rand(%s, offs%s)", seed, rounds), TK_F32, full_rank(g), sh, 1, 0);
}

/* The old values of atomics on addresses no other lane or program touches: what the
 * buffer held (or 0 where masked off), the same in any order. */
static ex atomic_old_leaf(gen *g) {
  static const tk_dtype D[] = {TK_I32, TK_U32, TK_I64, TK_U64, TK_F32};
  tk_dtype d = D[rnd(g, 5)];
  double lo, hi;
  int bits;
  value_range(g, d, &lo, &hi, &bits);
  int b = add_buf(g, d, (size_t)g->total, lo, hi, bits, true);
  if (b < 0) return bad();
  const char *p = g->k->bufs[b].name;
  int sh[2];
  full_shape(g, sh);
  ex v = index_leaf(g);
  const char *val = isf(v.dt) || v.dt == d ? v.t : su_fmt(g->a, "(%s as %s)", v.t, dn(d));
  const char *t;
  feature(g, "atomic");
  /* a memory order now and then (the default is acq_rel): each adds its barrier and fences,
   * which must not change what the program computes */
  static const char *const SEM[] = {"relaxed", "acquire", "release", "acq_rel"};
  const char *sem = chance(g, 40) ? su_fmt(g->a, ", sem = \"%s\"", SEM[rnd(g, 4)]) : "";
  if (isf(d) || chance(g, 50)) {
    t = su_fmt(g->a, "atomic_xchg(%s + offs, %s%s%s)", p, val, chance(g, 50) ? ", mask" : "", sem);
  } else {
    const char *cmp = chance(g, 50) ? su_fmt(g->a, "load(%s + offs)", p) : val;
    t = su_fmt(g->a, "atomic_cas(%s + offs, %s, %s%s)", p, cmp, val, sem);
  }
  return bind(g, mk(g, t, d, full_rank(g), sh, fmax(fabs(lo), fabs(hi)), 0));
}

static const char *ks(gen *g, int K) { return su_fmt(g->a, "arange(0, %d)", K); }

/* dot(a, b[, acc]) of loads: [R, K] x [K, C], optionally a runtime loop over KT chunks
 * of K (the shape the software pipeliner, TMA and wgmma paths look for). */
static ex dot_leaf(gen *g) {
  if (!g->R || g->R < 16 || g->C < 16 || g->o->no_dot) return bad();
  static const tk_dtype D[] = {TK_F16, TK_BF16, TK_F32, TK_I8};
  tk_dtype d = D[rnd(g, 4)];
  int K = 16 << rnd(g, 3);
  if ((size_t)g->R * K > 8192 || (size_t)K * g->C > 8192) K = 16;
  int KT = chance(g, 50) ? 1 : 1 + rnd(g, 3);
  bool loop = KT > 1 || chance(g, 30);
  double lo, hi;
  int bits = 0;
  if (d == TK_I8) lo = chance(g, 50) ? -8 : -128, hi = lo < -8 ? 127 : 8;
  else lo = -1, hi = 1, bits = chance(g, 40) ? 4 : 0;
  int ba = add_buf(g, d, (size_t)g->G * g->R * K * KT, lo, hi, bits, false);
  int bb = add_buf(g, d, (size_t)K * KT * g->C, lo, hi, bits, false);
  if (ba < 0 || bb < 0) return bad();
  tk_dtype acc = d == TK_I8 ? TK_I32 : TK_F32;
  if (d == TK_F16 && chance(g, 25)) acc = TK_F16; /* an f16 accumulator */
  const char *A = g->k->bufs[ba].name, *B = g->k->bufs[bb].name;
  const char *kk = ks(g, K);
  double m = fmax(fabs(lo), fabs(hi));
  int sh[2] = {g->R, g->C};
  feature(g, "dot");
  const char *kv = NULL; /* a runtime bound on k: masked loads with other = 0 */
  int kvalid = K * KT;
  if (chance(g, 25)) {
    kvalid = rnd(g, K * KT + 1);
    kv = add_scalar(g, TK_I32, kvalid);
    if (!kv) return bad();
    feature(g, "dot-mask");
  }
  const char *an = tmp(g), *bn = tmp(g), *r = tmp(g);
  const char *ktxt = loop ? su_fmt(g->a, "(kk * %d + %s)", K, kk) : kk;
  const char *aload = su_fmt(g->a, "load(%s + pid * %d + rows[:, None] * %d + %s[None, :]%s)", A,
                             g->R * K * KT, K * KT, ktxt,
                             kv ? su_fmt(g->a, ", %s[None, :] < %s, %s", ktxt, kv, d == TK_I8 ? "0" : "0.0") : "");
  const char *bload = su_fmt(g->a, "load(%s + %s[:, None] * %d + cols[None, :]%s)", B, ktxt, g->C,
                             kv ? su_fmt(g->a, ", %s[:, None] < %s", ktxt, kv) : "");
  double macc = 0;
  const char *init = su_fmt(g->a, "zeros<%s>(%d, %d)", dn(acc), g->R, g->C);
  if (chance(g, 40)) { /* an accumulator that is a loaded tile */
    double l2, h2;
    int b2;
    value_range(g, acc, &l2, &h2, &b2);
    if (acc == TK_I32) l2 = -1000, h2 = 1000;
    if (acc == TK_F16) l2 = -64, h2 = 64;
    int bc = add_buf(g, acc, (size_t)g->total, l2, h2, b2, false);
    if (bc < 0) return bad();
    init = su_fmt(g->a, "load(%s + offs)", g->k->bufs[bc].name);
    macc = fmax(fabs(l2), fabs(h2));
  }
  int Kt = kv ? kvalid : K * KT;
  if (loop) {
    feature(g, "dot-loop");
    line(g, "var %s = %s;", r, init);
    if (chance(g, 50)) {
      const char *it = add_scalar(g, TK_I32, KT);
      if (!it) return bad();
      line(g, "for kk in range(0, %s) {", it);
    } else {
      line(g, "for kk in range(0, %d) {", KT);
    }
    g->indent++;
    line(g, "let %s = %s;", an, aload);
    line(g, "let %s = %s;", bn, bload);
    line(g, "%s = dot(%s, %s, %s);", r, an, bn, r);
    g->indent--;
    line(g, "}");
  } else {
    line(g, "let %s = %s;", an, aload);
    line(g, "let %s = %s;", bn, bload);
    /* without one the accumulator is f32, so an f16 one is always passed (chance first,
     * so that the stream of every other kernel stays as it was) */
    if (chance(g, 50) && !macc && acc != TK_F16) line(g, "let %s = dot(%s, %s);", r, an, bn);
    else line(g, "let %s = dot(%s, %s, %s);", r, an, bn, init);
  }
  double mag = macc + (double)Kt * m * m, err = 0;
  if (acc == TK_F32) {
    /* order: each of the Kt + 1 terms may be rounded differently, Kt + log2 Kt roundings
     * of at most mag each on either side; tf32: 2^-10 relative per input (rounded or
     * truncated), so 2^-9 per product */
    double n = Kt + 1;
    err = 2 * (n + log2(n) + 1) * td_ulp(TK_F32) * mag;
    if (d == TK_F32) err += (double)Kt * m * m * ldexp(1, -9);
    if (Kt <= 1 && d != TK_F32 && !macc) err = 0;
  } else if (acc == TK_F16) {
    /* summed in f32 (the bound above), rounded to f16 at each of the calls: sums that
     * differ may round to neighbours, and the difference is carried to the next call */
    if (mag > td_mag_limit(TK_F16)) return bad();
    double n = Kt + 1, calls = loop ? KT : 1;
    err = calls * (2 * (n + log2(n) + 1) * td_ulp(TK_F32) * mag + 2 * td_ulp(TK_F16) * mag);
    if (Kt <= 1 && !macc && !loop) err = 0;
    feature(g, "dot-f16acc");
  } else {
    mag = fmin(mag, int_max(TK_I32));
  }
  return mk(g, r, acc, 2, sh, mag, err);
}

static ex gen_ex(gen *g, int depth);

static ex leaf(gen *g) {
  if (g->loop_leaf && chance(g, 45)) return chance(g, 80) ? g->lv : g->li;
  int r = rnd(g, 100);
  ex e;
  if (r < 40) e = load_leaf(g);
  else if (r < 52) e = scalar_leaf(g);
  else if (r < 62) e = literal(g, chance(g, 50));
  else if (r < 74) e = index_leaf(g);
  else if (r < 82) e = full_leaf(g);
  else if (r < 88) e = random_leaf(g);
  else if (r < 93 && !g->loop_leaf) e = dot_leaf(g);
  else if (r < 96 && !g->loop_leaf) e = atomic_old_leaf(g);
  else e = load_leaf(g);
  if (!e.ok) e = literal(g, false);
  return e;
}

/* ---- casts ------------------------------------------------------------------------------ */

/* x as d, if allowed: a float that carries an error goes to a float only. */
static ex cast(gen *g, ex x, tk_dtype d) {
  if (x.dt == d && !x.weak) return x;
  if (isf(x.dt) && !isf(d) && x.err > 0) return bad();
  double mag = x.mag, err = x.err;
  if (isf(d)) {
    if (isf(x.dt) && ir_dtype_bits(d) < ir_dtype_bits(x.dt)) err = rounded(d, mag, err);
    if (d == TK_F16 && x.dt == TK_BF16) err = rounded(d, mag, err);
    if (mag > 65504 && d == TK_F16) mag = INFINITY;
  } else if (d == TK_I1) {
    mag = 1;
  } else {
    mag = wraps_to(d, &x) ? int_max(d) : fmin(int_max(d), isf(x.dt) ? mag + 1 : mag);
  }
  if (over(d, mag, err)) return bad();
  ex r = mk(g, su_fmt(g->a, "(%s as %s)", x.t, dn(d)), d, x.rank, x.sh, mag, err);
  return r;
}

/* ---- unary ops ----------------------------------------------------------------------------- */

/* A float version of x for the math functions (ints are promoted to f32 by the builtin
 * itself; named here so the error rules know the type). */
static tk_dtype math_dt(const ex *x) { return isf(x->dt) ? x->dt : TK_F32; }

/* The error an approximate function adds on the GPU, per docs/language.md §6.4: f32 sin
 * and cos the hardware's (2^-21 absolute on [-pi, pi]), f32 exp and exp2 the hardware 2^x
 * (2 ulp + 1.2 |x| ulp), the others libdevice (a few ulp: 4 here) against glibc (1 ulp);
 * f16 and bf16 get the f32 result rounded, one ulp of theirs more. */
typedef enum { AP_SINCOS, AP_EXP, AP_LIBDEVICE, AP_ERFC } approx_kind;
static double approx_err(approx_kind k, tk_dtype d, double mag_in, double mag_out) {
  double f32;
  switch (k) {
  case AP_SINCOS: f32 = ldexp(1, -20) + td_ulp(TK_F32) * fmax(mag_out, 1); break;
  case AP_EXP: f32 = (4 + 2.4 * mag_in) * td_ulp(TK_F32) * mag_out + ldexp(1, -126); break; /* expfold's ftz */
  /* the fast erfc (docs/language.md 6.4): (16 + 3 x^2) ulps; 1 ± erf computed as erfc
   * differs from the sum by the sum's own rounding too (the caller's ulp) */
  case AP_ERFC: f32 = (16 + 3 * mag_in * mag_in) * td_ulp(TK_F32) * mag_out; break;
  default: f32 = 5 * td_ulp(TK_F32) * mag_out; break;
  }
  if (d == TK_F64) return 5 * td_ulp(TK_F64) * fmax(mag_out, k == AP_SINCOS ? 1 : 0);
  if (d == TK_F32) return f32;
  return f32 + td_ulp(d) * mag_out;
}

static ex math1(gen *g, ex x) {
  tk_dtype d = math_dt(&x);
  double m = x.mag, e = x.err;
  if (!isf(x.dt) && m > 1e6) { /* keep the f32 value small enough to bound */
    x = mk(g, su_fmt(g->a, "(%s & 255)", x.t), x.dt, x.rank, x.sh, 255, 0);
    if (x.dt == TK_I1) return bad();
    m = 255;
  }
  if (x.dt == TK_I1) return bad();
  const char *t = NULL;
  double mag = 0, err = 0;
  /* for the domain wrappers: abs(x) + 1.0 */
  const char *absp1 = su_fmt(g->a, "(abs(%s) + 1.0)", x.t);
  double e1 = rounded(d, m + 1, e);
  switch (rnd(g, 16)) {
  case 0: case 1: { /* exp, exp2, expm1 */
    double lim = d == TK_F16 ? 9 : d == TK_F64 ? 50 : 20;
    if (m > lim) return bad();
    int w = rnd(g, 3);
    double base = w == 1 ? 2 : M_E;
    mag = pow(base, m);
    double L = log(base) * pow(base, m + e);
    err = e * L + approx_err(w == 2 ? AP_LIBDEVICE : AP_EXP, d, m, mag);
    t = su_fmt(g->a, "%s(%s)", w == 0 ? "exp" : w == 1 ? "exp2" : "expm1", x.t);
    if (w == 2) mag += 1;
    break;
  }
  case 2: case 3: { /* log, log2, log1p on >= 1 (or >= 0) */
    int w = rnd(g, 3);
    mag = log(m + 2) / (w == 1 ? M_LN2 : 1);
    err = e1 * (w == 1 ? 1 / M_LN2 : 1) + approx_err(AP_LIBDEVICE, d, m, mag);
    t = w == 2 ? su_fmt(g->a, "log1p(abs(%s))", x.t)
               : su_fmt(g->a, "%s(%s)", w == 1 ? "log2" : "log", absp1);
    break;
  }
  case 4: /* sqrt: exact */
    mag = sqrt(m);
    err = e > 0 ? sqrt(e) + td_ulp(d) * mag : 0;
    t = su_fmt(g->a, "%s(abs(%s))", chance(g, 50) ? "sqrt" : "sqrt_rn", x.t);
    break;
  case 5:
    mag = 1;
    err = 0.5 * e1 + approx_err(AP_LIBDEVICE, d, m, 1);
    t = su_fmt(g->a, "rsqrt(%s)", absp1);
    break;
  case 6: case 7:
    if (m > 3.2 && d != TK_F64) return bad();
    if (m > 1e3) return bad();
    mag = 1;
    err = e + approx_err(d == TK_F64 ? AP_LIBDEVICE : AP_SINCOS, d, m, 1);
    t = su_fmt(g->a, "%s(%s)", chance(g, 50) ? "sin" : "cos", x.t);
    break;
  case 8:
    mag = fmin(1, m);
    err = e + approx_err(AP_LIBDEVICE, d, m, mag);
    t = su_fmt(g->a, "tanh(%s)", x.t);
    break;
  case 9: { /* erf, erfc, and the complement forms the GPU computes as erfc (complement.c) */
    int w = rnd(g, 4);
    if (w == 0) {
      mag = fmin(1, 1.13 * m);
      err = 1.13 * e + approx_err(AP_LIBDEVICE, d, m, mag);
      t = su_fmt(g->a, "erf(%s)", x.t);
      break;
    }
    if (m > 30) return bad(); /* the bound grows as x^2; past 10 erfc is 0 or 2 anyway */
    mag = 2;
    err = 1.13 * e + approx_err(AP_ERFC, d, m, 2) + (w == 1 ? 0 : 2 * td_ulp(d) * 2);
    t = w == 1 ? su_fmt(g->a, "erfc(%s)", x.t)
               : su_fmt(g->a, w == 2 ? "(1.0 + erf(%s))" : "(1.0 - erf(%s))", x.t);
    break;
  }
  case 10:
    if (m > 20) return bad();
    mag = 1;
    err = 0.25 * e + approx_err(AP_EXP, d, m, 1) + 2 * td_ulp(d);
    t = su_fmt(g->a, "sigmoid(%s)", x.t);
    break;
  case 11: { /* rounding to an integer: exact values only */
    if (e > 0) return bad();
    static const char *R[] = {"floor", "ceil", "round", "rint", "trunc"};
    mag = m + 1;
    t = su_fmt(g->a, "%s(%s)", R[rnd(g, 5)], x.t);
    break;
  }
  case 12: { /* pow(abs(x) + 1, c) */
    static const char *C[] = {"0.5", "2.0", "-1.5", "3.0", "1.25"};
    static const double CV[] = {0.5, 2.0, -1.5, 3.0, 1.25};
    int i = rnd(g, 5);
    double c = CV[i], b = m + 1;
    mag = c > 0 ? pow(b, c) : 1;
    double L = fabs(c) * (c >= 1 ? pow(b + e1, c - 1) : 1);
    err = e1 * L + approx_err(AP_LIBDEVICE, d, b, mag);
    t = chance(g, 50) ? su_fmt(g->a, "pow(%s, %s)", absp1, C[i])
                      : su_fmt(g->a, "(%s ** %s)", absp1, C[i]);
    break;
  }
  case 13: { /* classification: exact values only */
    if (e > 0) return bad();
    static const char *K[] = {"isnan", "isinf", "isfinite"};
    return mk(g, su_fmt(g->a, "%s(%s)", K[rnd(g, 3)], x.t), TK_I1, x.rank, x.sh, 1, 0);
  }
  default:
    mag = m;
    err = e;
    t = su_fmt(g->a, "abs(%s)", x.t);
    if (!isf(x.dt)) return mk(g, t, x.dt, x.rank, x.sh, m, 0);
    break;
  }
  if (!isfinite(mag) || over(d, mag, err)) return bad();
  if (err > 0 && !(mag <= td_mag_limit(d))) return bad();
  feature(g, "math");
  return mk(g, t, d, x.rank, x.sh, mag, err);
}

static ex unary(gen *g, ex x) {
  switch (rnd(g, 6)) {
  case 0: /* negation */
    if (x.dt == TK_I1) return mk(g, su_fmt(g->a, "(!%s)", x.t), TK_I1, x.rank, x.sh, 1, 0);
    if (!isf(x.dt) && x.weak) return bad(); /* a negative literal may not fit the other side */
    {
      /* an unsigned negation wraps to 2^w - x: any magnitude of the type */
      bool u = !isf(x.dt) && !ir_dtype_is_signed(x.dt);
      ex r = mk(g, su_fmt(g->a, "(-%s)", x.t), x.dt, x.rank, x.sh, u ? int_max(x.dt) : x.mag, x.err);
      r.weak = x.weak;
      return r;
    }
  case 1: /* bitwise not */
    if (isf(x.dt)) return bad();
    return mk(g, su_fmt(g->a, "(~%s)", x.t), x.weak ? TK_I32 : x.dt, x.rank, x.sh,
              x.dt == TK_I1 ? 1 : int_max(x.dt), 0);
  case 2: case 3: {
    tk_dtype d = any_dtype(g);
    feature(g, "cast");
    return cast(g, x, d);
  }
  default: return math1(g, x);
  }
}

/* ---- binary ops ---------------------------------------------------------------------------- */

static ex binary(gen *g, ex x, ex y) {
  if (x.weak && y.weak) {
    y = cast(g, y, isf(y.dt) ? TK_F32 : TK_I32);
    if (!y.ok) return bad();
  }
  /* i1 meets a float as f32: the float builtins take no i1 */
  if (x.dt == TK_I1 && isf(y.dt)) x = cast(g, x, TK_F32);
  if (y.dt == TK_I1 && isf(x.dt)) y = cast(g, y, TK_F32);
  int rank, sh[2];
  bshape(&x, &y, &rank, sh);
  if (!valid_shape(g, rank, sh)) return bad();
  tk_dtype d = promote(x.dt, x.weak, y.dt, y.weak);
  bool f = isf(d);
  double mx = x.mag, my = y.mag, ex_ = x.err, ey = y.err;
  /* a negative operand converted to an unsigned d is near d's top */
  if (wraps_to(d, &x)) mx = int_max(d);
  if (wraps_to(d, &y)) my = int_max(d);
  bool exact = ex_ == 0 && ey == 0;
  /* an unsigned operand with a negative literal: the literal would not fit */
  int r = rnd(g, 20);
  if (d == TK_I1) { /* logic */
    static const char *L[] = {"&&", "||", "^", "&", "|"};
    return mk(g, su_fmt(g->a, "(%s %s %s)", x.t, L[rnd(g, 5)], y.t), TK_I1, rank, sh, 1, 0);
  }
  if (r < 3) { /* comparison: exact operands only */
    if (!exact) return bad();
    static const char *C[] = {"<", "<=", ">", ">=", "==", "!="};
    feature(g, "compare");
    return mk(g, su_fmt(g->a, "(%s %s %s)", x.t, C[rnd(g, 6)], y.t), TK_I1, rank, sh, 1, 0);
  }
  if (r < 6) { /* + - */
    bool add = chance(g, 50);
    double mag = mx + my, err = f ? rounded(d, mag, ex_ + ey) : 0;
    if (!f && !ir_dtype_is_signed(d) && d != TK_I1) mag = int_max(d); /* unsigned: wraps */
    if (over(d, mag, err)) return bad();
    if (!f && !add && !ir_dtype_is_signed(d) && x.weak) return bad();
    return mk(g, su_fmt(g->a, "(%s %s %s)", x.t, add ? "+" : "-", y.t), d, rank, sh, mag, err);
  }
  if (r < 9) { /* * */
    double mag = mx * my, err = f ? rounded(d, mag, emul(ex_, my) + emul(ey, mx) + ex_ * ey) : 0;
    if (f && !(mag <= td_mag_limit(d)) && !exact) return bad();
    if (over(d, mag, err)) return bad();
    return mk(g, su_fmt(g->a, "(%s * %s)", x.t, y.t), d, rank, sh, mag, err);
  }
  if (!f && (y.dt == TK_I1 || y.weak) && r >= 9) {
    /* the divisor and shift forms need a typed integer y ('&' of literals is typed i32) */
    y = cast(g, y, x.weak || x.dt == TK_I1 ? TK_I32 : x.dt);
    d = promote(x.dt, x.weak, y.dt, y.weak);
  }
  if (r < 11) { /* / and % */
    bool div = chance(g, 70);
    if (!f) { /* a divisor from 1 to 8 */
      /* or from -8 to -1 (for an unsigned y, 2^w - 8 to 2^w - 1): never 0 */
      const char *dv = chance(g, 30) ? su_fmt(g->a, "((%s & 7) - 8)", y.t) : su_fmt(g->a, "((%s & 7) + 1)", y.t);
      if (chance(g, 20)) /* cdiv */
        return mk(g, su_fmt(g->a, "cdiv(%s, %s)", x.t, dv), d, rank, sh, mx + 1, 0);
      return mk(g, su_fmt(g->a, "(%s %s %s)", x.t, div ? "/" : "%", dv), d, rank, sh, mx, 0);
    }
    if (!div) { /* fmod: not continuous */
      if (!exact) return bad();
      return mk(g, su_fmt(g->a, "(%s %% %s)", x.t, y.t), d, rank, sh, mx, 0);
    }
    int w = rnd(g, 3); /* '/', div_rn, fdiv */
    if (exact && w != 2 && chance(g, 50)) {
      const char *t = w == 0 ? su_fmt(g->a, "(%s / %s)", x.t, y.t)
                             : su_fmt(g->a, "div_rn(%s, %s)", x.t, y.t);
      return mk(g, t, d, rank, sh, INFINITY, 0);
    }
    /* x / (|y| + 1): the divisor is at least 1, and a float (f32 for an integer y) */
    d = promote(x.dt, x.weak, isf(y.dt) ? y.dt : TK_F32, false);
    double ed = rounded(d, my + 1, ey), err = ex_ + emul(ed, mx);
    const char *den = su_fmt(g->a, "(abs(%s) + 1.0)", y.t);
    const char *t;
    if (w == 2 && d != TK_F64) {
      err += 2 * td_ulp(TK_F32) * mx + (d != TK_F32 ? td_ulp(d) * mx : 0);
      t = chance(g, 50) ? su_fmt(g->a, "fdiv(%s, %s)", x.t, den)
                        : su_fmt(g->a, "fdiv(%s, %s, ieee_rounding = false)", x.t, den);
      feature(g, "fdiv");
    } else {
      err = rounded(d, mx, err);
      t = w == 0 ? su_fmt(g->a, "(%s / %s)", x.t, den) : su_fmt(g->a, "div_rn(%s, %s)", x.t, den);
    }
    if (over(d, mx, err)) return bad();
    return mk(g, t, d, rank, sh, mx, err);
  }
  if (r < 13) { /* minimum, maximum */
    const char *fn = chance(g, 50) ? "minimum" : "maximum";
    return mk(g, su_fmt(g->a, "%s(%s, %s)", fn, x.t, y.t), d, rank, sh, fmax(mx, my), fmax(ex_, ey));
  }
  if (!f) {
    if (r < 17) { /* bitwise */
      static const char *B[] = {"&", "|", "^"};
      return mk(g, su_fmt(g->a, "(%s %s %s)", x.t, B[rnd(g, 3)], y.t), d, rank, sh, int_max(d), 0);
    }
    if (r < 19) { /* shifts by less than the width */
      int w = ir_dtype_bits(d);
      const char *yy = y.t;
      int mask = w - 1;
      if (!y.weak && ir_dtype_bits(y.dt) < 8 && mask > 63) mask = 63;
      if (!y.weak && (y.dt == TK_I8) && mask > 63) mask = 63;
      const char *t = su_fmt(g->a, "(%s %s (%s & %d))", x.t, chance(g, 50) ? "<<" : ">>", yy, mask);
      return mk(g, t, d, rank, sh, int_max(d), 0);
    }
    if (x.dt == TK_I1 || y.dt == TK_I1) return bad();
    return mk(g, su_fmt(g->a, "umulhi(%s, %s)", x.t, y.t), d, rank, sh, int_max(d), 0);
  }
  if (r < 16) { /* copysign: y's sign must be exact */
    if (ey > 0) return bad();
    /* a NaN's sign is unspecified (docs/api.md, "Exact numerics"): not a sign to copy */
    const char *yt = isf(y.dt) && !y.weak ? su_fmt(g->a, "where(isnan(%s), 1.0, %s)", y.t, y.t) : y.t;
    return mk(g, su_fmt(g->a, "copysign(%s, %s)", x.t, yt), d, rank, sh, mx, ex_);
  }
  double mag = mx * my, err = rounded(d, mag, emul(ex_, my) + emul(ey, mx) + ex_ * ey);
  if (over(d, mag, err) || (!exact && !(mag <= td_mag_limit(d)))) return bad();
  return mk(g, su_fmt(g->a, "(%s * %s)", x.t, y.t), d, rank, sh, mag, err);
}

static ex ternary(gen *g, int depth) {
  ex a = gen_ex(g, depth - 1), b = gen_ex(g, depth - 1), c = gen_ex(g, depth - 1);
  if (!a.ok || !b.ok || !c.ok) return bad();
  int rank, sh[2];
  ex ab;
  switch (rnd(g, 3)) {
  case 0: { /* where(cond, b, c): cond from a comparison of exact values */
    ex cond = a;
    if (a.dt != TK_I1) {
      if (a.err > 0) return bad();
      cond = mk(g, su_fmt(g->a, "(%s > %s)", a.t, isf(a.dt) ? "0.0" : "0"), TK_I1, a.rank, a.sh, 1, 0);
    }
    bshape(&cond, &b, &rank, sh);
    ab = mk(g, "", TK_I1, rank, sh, 0, 0);
    bshape(&ab, &c, &rank, sh);
    if (!valid_shape(g, rank, sh)) return bad();
    if (b.weak && c.weak) c = cast(g, c, isf(c.dt) ? TK_F32 : TK_I32);
    if (!c.ok) return bad();
    tk_dtype d = promote(b.dt, b.weak, c.dt, c.weak);
    feature(g, "where");
    double mag = wraps_to(d, &b) || wraps_to(d, &c) ? int_max(d) : fmax(b.mag, c.mag);
    return mk(g, su_fmt(g->a, "where(%s, %s, %s)", cond.t, b.t, c.t), d, rank, sh,
              mag, fmax(b.err, c.err));
  }
  case 1: { /* fma: one rounding on both */
    tk_dtype d = promote(promote(a.dt, a.weak, b.dt, b.weak), a.weak && b.weak, c.dt, c.weak);
    if (!isf(d)) return bad();
    if (a.weak && b.weak && c.weak) return bad();
    bshape(&a, &b, &rank, sh);
    ab = mk(g, "", d, rank, sh, 0, 0);
    bshape(&ab, &c, &rank, sh);
    if (!valid_shape(g, rank, sh)) return bad();
    double mag = a.mag * b.mag + c.mag;
    double err = rounded(d, mag, emul(a.err, b.mag) + emul(b.err, a.mag) + a.err * b.err + c.err);
    if (over(d, mag, err) || (err > 0 && !(mag <= td_mag_limit(d)))) return bad();
    feature(g, "fma");
    return mk(g, su_fmt(g->a, "fma(%s, %s, %s)", a.t, b.t, c.t), d, rank, sh, mag, err);
  }
  default: { /* clamp */
    tk_dtype d = promote(promote(a.dt, a.weak, b.dt, b.weak), a.weak && b.weak, c.dt, c.weak);
    if (d == TK_I1 || (a.weak && b.weak && c.weak)) return bad();
    bshape(&a, &b, &rank, sh);
    ab = mk(g, "", d, rank, sh, 0, 0);
    bshape(&ab, &c, &rank, sh);
    if (!valid_shape(g, rank, sh)) return bad();
    double mag = wraps_to(d, &a) || wraps_to(d, &b) || wraps_to(d, &c) ? int_max(d)
                 : fmax(a.mag, fmax(b.mag, c.mag));
    return mk(g, su_fmt(g->a, "clamp(%s, %s, %s)", a.t, b.t, c.t), d, rank, sh,
              mag, fmax(a.err, fmax(b.err, c.err)));
  }
  }
}

/* ---- reductions, scans, shapes ------------------------------------------------------------ */

static tk_dtype sum_dt(tk_dtype d) {
  if (d == TK_I1) return TK_I32;
  if (d == TK_F16 || d == TK_BF16) return TK_F32;
  return d;
}

/* The bound of a float sum of n terms of magnitude m carrying e each, in any order. */
static double sum_err(tk_dtype d, int n, double m, double e) {
  double mag = n * m;
  if (n <= 2 && e == 0) return 0;
  return n * e + (n + log2(n) + 1) * td_ulp(d) * mag;
}

static ex reduce(gen *g, ex x) {
  if (x.rank == 0 || x.weak) return bad();
  int axis = rnd(g, x.rank + 1) - 1; /* -1: every element */
  int n = axis < 0 ? elems(&x) : x.sh[axis];
  int rank = 0, sh[2];
  if (axis >= 0)
    for (int i = 0; i < x.rank; i++)
      if (i != axis) sh[rank++] = x.sh[i];
  int k = rnd(g, 9);
  const char *fn;
  tk_dtype d;
  double mag, err = 0;
  if (k < 4) { /* sum, cumsum */
    bool scan = k == 3 && axis >= 0;
    if (x.dt == TK_I1 && chance(g, 50)) return bad();
    d = sum_dt(x.dt);
    mag = isf(d) ? n * x.mag : fmin(int_max(d), n * x.mag);
    if (isf(d)) err = sum_err(d, n, x.mag, x.err);
    if (over(d, mag, err)) return bad();
    fn = scan ? "cumsum" : "sum";
    if (scan) {
      rank = x.rank;
      for (int i = 0; i < rank; i++) sh[i] = x.sh[i];
      feature(g, "scan");
    }
  } else if (k < 7) {
    if (x.dt == TK_I1) return bad();
    d = x.dt;
    mag = x.mag;
    err = x.err;
    fn = chance(g, 50) ? "max" : "min";
  } else {
    if (x.err > 0 || axis < 0 || x.dt == TK_I1) return bad();
    d = TK_I32;
    mag = n;
    fn = chance(g, 50) ? "argmax" : "argmin";
  }
  feature(g, "reduce");
  const char *t = axis < 0 ? su_fmt(g->a, "%s(%s)", fn, x.t)
                           : su_fmt(g->a, "%s(%s, %d)", fn, x.t, axis - (chance(g, 20) ? x.rank : 0));
  if (strcmp(fn, "cumsum") && rank == 1 && x.rank == 2 && axis == 1) { /* [R] back to [R, 1] */
    sh[1] = 1;
    rank = 2;
    t = chance(g, 50) ? su_fmt(g->a, "%s[:, None]", t) : su_fmt(g->a, "expand_dims(%s, 1)", t);
  }
  if (!valid_shape(g, rank, sh)) return bad();
  return bind(g, mk(g, t, d, rank, sh, mag, err));
}

static ex shape_op(gen *g, ex x) {
  int sh[2];
  switch (rnd(g, 4)) {
  case 0: /* broadcast_to the main tile */
    if (x.weak) return bad();
    full_shape(g, sh);
    return mk(g, su_fmt(g->a, g->R ? "broadcast_to(%s, %d, %d)" : "broadcast_to(%s, %d)", x.t,
                        g->R ? g->R : g->C, g->C),
              x.dt, full_rank(g), sh, x.mag, x.err);
  case 1: /* [C] to [1, C] */
    if (x.rank != 1 || !g->R) return bad();
    sh[0] = 1, sh[1] = x.sh[0];
    return mk(g, chance(g, 50) ? su_fmt(g->a, "%s[None, :]", x.t) : su_fmt(g->a, "expand_dims(%s, 0)", x.t),
              x.dt, 2, sh, x.mag, x.err);
  case 2: /* trans */
    if (x.rank != 2) return bad();
    sh[0] = x.sh[1], sh[1] = x.sh[0];
    if (!valid_shape(g, 2, sh)) return bad();
    return mk(g, chance(g, 50) ? su_fmt(g->a, "trans(%s)", x.t) : su_fmt(g->a, "trans(%s, 1, 0)", x.t),
              x.dt, 2, sh, x.mag, x.err);
  default: /* reshape to itself through the flat shape */
    if (x.rank != 2) return bad();
    feature(g, "reshape");
    return mk(g, su_fmt(g->a, "reshape(reshape(%s, %d), %d, %d)", x.t, elems(&x), x.sh[0], x.sh[1]),
              x.dt, 2, x.sh, x.mag, x.err);
  }
}

static ex gen_ex(gen *g, int depth) {
  if (depth <= 0 || chance(g, 20)) return leaf(g);
  for (int tries = 0; tries < 6; tries++) {
    int r = rnd(g, 100);
    ex e;
    if (r < 30) e = unary(g, gen_ex(g, depth - 1));
    else if (r < 70) {
      ex x = gen_ex(g, depth - 1), y = gen_ex(g, depth - 1);
      e = x.ok && y.ok ? binary(g, x, y) : bad();
    } else if (r < 80) e = ternary(g, depth);
    else if (r < 92) e = reduce(g, gen_ex(g, depth - 1));
    else e = shape_op(g, gen_ex(g, depth - 1));
    if (e.ok) return chance(g, 35) ? bind(g, e) : e;
  }
  return leaf(g);
}

/* ---- statements ------------------------------------------------------------------------------ */

/* A loop-carried var: acc = combine(acc, E(lv, li)) over a runtime or unrolled loop. */
static ex if_stmt(gen *g, int depth);

static ex loop_stmt(gen *g, int depth) {
  int K = 1 + rnd(g, 4);
  bool stat = chance(g, 35);
  ex init = gen_ex(g, depth - 1);
  if (!init.ok || init.weak) return bad();
  tk_dtype d = init.dt;
  if (d == TK_I1) return bad();
  const char *acc = tmp(g);
  int sh[2];
  full_shape(g, sh);
  /* the var has the main tile's shape so that every iteration's value fits it */
  line(g, g->R ? "var %s = broadcast_to(%s, %d, %d);" : "var %s = broadcast_to(%s, %d);", acc,
       init.t, g->R ? g->R : g->C, g->C);
  tk_dtype ld = any_dtype(g);
  double lo, hi;
  int bits;
  value_range(g, ld, &lo, &hi, &bits);
  int b = add_buf(g, ld, (size_t)g->total * K, lo, hi, bits, false);
  if (b < 0) return bad();
  const char *bound;
  int start = 0, step = 1;
  if (!stat && chance(g, 30)) start = rnd(g, 3), step = 1 + rnd(g, 2);
  int end = start + K * step;
  if (stat) bound = su_fmt(g->a, "static_range(%d, %d%s)", start, end, step > 1 ? ", 2" : "");
  else if (chance(g, 50)) {
    const char *it = add_scalar(g, TK_I32, end);
    if (!it) return bad();
    bound = su_fmt(g->a, "range(%d, %s, %d)", start, it, step);
  } else bound = su_fmt(g->a, "range(%d, %d, %d)", start, end, step);
  const char *iv = su_fmt(g->a, "it%d", g->ntmp++);
  line(g, "for %s in %s {", iv, bound);
  feature(g, stat ? "static_range" : "range");
  g->indent++;
  bool save_leaf = g->loop_leaf; /* a loop inside an if inside a loop: restore the outer */
  ex save_lv = g->lv, save_li = g->li;
  g->loop_leaf = true;
  const char *lvn = tmp(g);
  line(g, "let %s = load(%s + (%s - %d) / %d * %d + offs, mask);", lvn, g->k->bufs[b].name, iv,
       start, step, g->total);
  g->lv = mk(g, lvn, ld, full_rank(g), sh, fmax(fabs(lo), fabs(hi)), 0);
  g->li = mk(g, iv, TK_I32, 0, NULL, end, 0);
  g->li.weak = stat; /* a static_range variable is a compile-time constant: untyped */
  ex e = depth > 2 && chance(g, 15) ? if_stmt(g, depth - 1) : gen_ex(g, depth - 1);
  if (e.ok && !isf(d) && isf(e.dt) && e.err > 0) e = bad();
  if (!e.ok) e = g->lv;
  ex ec = cast(g, e, d);
  if (!ec.ok) ec = cast(g, g->lv, d);
  if (!ec.ok) ec = mk(g, su_fmt(g->a, "(%s as %s)", "0", dn(d)), d, 0, NULL, 0, 0);
  /* the combine, and its bound after K iterations */
  double mag = init.mag, err = init.err;
  int how = rnd(g, 4);
  if (!isf(d) && how == 1) how = 4;
  for (int it = 0; it < K; it++) {
    switch (how) {
    case 0: mag += ec.mag; err = isf(d) ? rounded(d, mag, err + ec.err) : 0; break;
    case 1: mag = 0.5 * mag + ec.mag; err = isf(d) ? rounded(d, mag, 0.5 * err + ec.err) : 0; break;
    case 2: case 3: mag = fmax(mag, ec.mag); err = fmax(err, ec.err); break;
    default: mag = int_max(d); err = 0; break;
    }
  }
  if (over(d, mag, err)) how = 2, mag = fmax(init.mag, ec.mag), err = fmax(init.err, ec.err);
  switch (how) {
  case 0:
    if (chance(g, 50)) line(g, "%s += %s;", acc, ec.t);
    else line(g, "%s = %s + %s;", acc, acc, ec.t);
    break;
  case 1: line(g, "%s = %s * 0.5 + %s;", acc, acc, ec.t); break;
  case 2: line(g, "%s = maximum(%s, %s);", acc, acc, ec.t); break;
  case 3: line(g, "%s = minimum(%s, %s);", acc, acc, ec.t); break;
  default: line(g, "%s = (%s ^ %s) * 3;", acc, acc, ec.t); break;
  }
  g->indent--;
  line(g, "}");
  g->loop_leaf = save_leaf;
  g->lv = save_lv;
  g->li = save_li;
  return mk(g, acc, d, full_rank(g), sh, mag, err);
}

/* var t = A; if c { t = B; } else { t = C; } with a runtime or compile-time condition. */
static ex if_stmt(gen *g, int depth) {
  ex a = gen_ex(g, depth - 1);
  if (!a.ok || a.weak || a.dt == TK_I1) return bad();
  int sh[2];
  full_shape(g, sh);
  const char *t = tmp(g);
  line(g, g->R ? "var %s = broadcast_to(%s, %d, %d);" : "var %s = broadcast_to(%s, %d);", t, a.t,
       g->R ? g->R : g->C, g->C);
  const char *cond;
  if (chance(g, 30)) {
    /* a compile-time parameter: only the taken branch is checked, so both are valid */
    const char *cp = su_fmt(g->a, "CP%d", g->ntmp++);
    int v = rnd(g, 4);
    if (g->cparams.len) su_buf_puts(&g->cparams, ", ");
    su_buf_printf(&g->cparams, "%s: i32 = %d", cp, v);
    cond = su_fmt(g->a, "%s > %d", cp, rnd(g, 4));
    feature(g, "static-if");
  } else {
    const char *s = add_scalar(g, TK_I32, rnd(g, 5) - 2);
    if (!s) return bad();
    cond = su_fmt(g->a, "%s > 0", s);
    feature(g, "if");
  }
  double mag = a.mag, err = a.err;
  line(g, "if %s {", cond);
  for (int br = 0; br < 2; br++) {
    g->indent++;
    ex b = depth > 2 && chance(g, 15) ? loop_stmt(g, depth - 1) : gen_ex(g, depth - 1);
    ex bc = b.ok ? cast(g, b, a.dt) : bad();
    if (!bc.ok) bc = mk(g, a.t, a.dt, a.rank, a.sh, a.mag, a.err);
    line(g, g->R ? "%s = broadcast_to(%s, %d, %d);" : "%s = broadcast_to(%s, %d);", t, bc.t,
         g->R ? g->R : g->C, g->C);
    mag = fmax(mag, bc.mag);
    err = fmax(err, bc.err);
    g->indent--;
    if (br == 0) {
      if (chance(g, 50)) break;
      line(g, "} else {");
    }
  }
  line(g, "}");
  return mk(g, t, a.dt, full_rank(g), sh, mag, err);
}

/* Contended atomics: every lane of every program adds into a few addresses. The final
 * memory does not depend on the order for integers; for float atomic_add it is within
 * the bound of a sum in any order. */
static void atomic_stmt(gen *g, int depth) {
  ex v = gen_ex(g, depth - 1);
  if (!v.ok) return;
  static const tk_dtype D[] = {TK_I32, TK_U32, TK_I64, TK_U64, TK_F32, TK_F64, TK_F16, TK_BF16};
  tk_dtype d = D[rnd(g, 8)];
  if (!isf(d) && isf(v.dt) && v.err > 0) d = TK_F32;
  ex c = cast(g, v, d);
  if (!c.ok) return;
  int NB = 1 << rnd(g, 4);
  double lo, hi;
  int bits;
  value_range(g, d, &lo, &hi, &bits);
  if (isf(d)) lo = -4, hi = 4, bits = 4;
  int b = add_buf(g, d, (size_t)NB, lo, hi, bits, true);
  if (b < 0) return;
  const char *op = "atomic_add";
  if (!isf(d)) {
    static const char *O[] = {"atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor"};
    op = O[rnd(g, 6)];
  }
  int per = (g->total + NB - 1) / NB; /* lanes per address */
  if (isf(d)) {
    double mag = fmax(fabs(lo), fabs(hi)) + per * c.mag;
    double err = per * c.err + 2 * (per + 1) * td_ulp(d) * mag;
    if (over(d, mag, err)) return;
    if (g->k->bufs[b].tol < err) g->k->bufs[b].tol = err;
    g->k->bufs[b].why = "float atomic_add in any order";
  }
  feature(g, "atomic");
  const char *m = chance(g, 60) ? ", mask" : "";
  /* the value is broadcast to the pointers' shape, [R, C] */
  line(g, "%s(%s + offs %% %d, %s%s);", op, g->k->bufs[b].name, NB, c.t, m);
}

/* Stores e into a fresh output buffer in its own shape. */
static void store_stmt(gen *g, ex e) {
  if (!e.ok) return;
  if (e.weak) {
    e = cast(g, e, e.dt);
    if (!e.ok) return;
  }
  double lo, hi;
  int bits;
  value_range(g, e.dt, &lo, &hi, &bits);
  size_t n;
  const char *ptr, *mask = "";
  int kind = 0; /* 0 full, 1 [C], 2 [R, 1], 3 scalar, 4 [1, C] */
  if (e.rank == 0 && chance(g, 60)) kind = 3;
  else if (e.rank == 1 && e.sh[0] == g->C && chance(g, 60)) kind = 1;
  else if (e.rank == 2 && e.sh[0] == g->R && e.sh[1] == 1 && chance(g, 60)) kind = 2;
  else if (e.rank == 2 && e.sh[0] == 1 && e.sh[1] == g->C && chance(g, 60)) kind = 4;
  switch (kind) {
  case 1: n = (size_t)g->G * g->C; break;
  case 2: n = (size_t)g->G * g->R; break;
  case 3: n = (size_t)g->G; break;
  case 4: n = (size_t)g->G * g->C; break;
  default: n = (size_t)g->total; break;
  }
  int b = add_buf(g, e.dt, n, lo, hi, bits, true);
  if (b < 0) return;
  const char *p = g->k->bufs[b].name;
  switch (kind) {
  case 1: ptr = su_fmt(g->a, "%s + pid * %d + cols", p, g->C); break;
  case 2: ptr = su_fmt(g->a, "%s + pid * %d + rows[:, None]", p, g->R); break;
  case 3: ptr = su_fmt(g->a, "%s + pid", p); break;
  case 4: ptr = su_fmt(g->a, "%s + pid * %d + cols[None, :]", p, g->C); break;
  default:
    ptr = su_fmt(g->a, "%s + offs", p);
    if (chance(g, 60)) mask = ", mask";
    else if (chance(g, 30)) {
      ex c = gen_ex(g, 1);
      if (c.ok && c.dt == TK_I1 && !c.weak) mask = su_fmt(g->a, ", mask && %s", c.t);
    }
    break;
  }
  g->k->bufs[b].tol = e.err;
  g->k->bufs[b].why = e.err > 0 ? "error model" : NULL;
  line(g, "store(%s, %s%s);", ptr, e.t, mask);
  g->nstores++;
}

/* ---- the kernel ---------------------------------------------------------------------------- */

void td_generate(td_kernel *k, uint64_t seed, const td_gen_options *opt) {
  static const td_gen_options defaults = {.max_depth = 4, .max_elems = 1024};
  const td_gen_options *o = opt ? opt : &defaults;
  gen g = {.k = k, .o = o, .a = su_arena_new(), .rng = seed};
  k->seed = seed;
  snprintf(k->name, sizeof k->name, "k_%016llx", (unsigned long long)seed);
  int maxe = o->max_elems > 0 ? o->max_elems : defaults.max_elems;
  int depth = o->max_depth > 0 ? o->max_depth : defaults.max_depth;
  /* the main tile */
  if (chance(&g, 30)) {
    g.R = 0;
    g.C = 1 << rnd(&g, 11);
  } else {
    g.R = 1 << rnd(&g, 7);
    g.C = 1 << rnd(&g, 7);
    if (chance(&g, 25)) g.R = g.C = 16 << rnd(&g, 3); /* square: dot, trans */
  }
  while ((g.R ? g.R : 1) * g.C > maxe) {
    if (g.R > 1 && (g.R >= g.C || g.C == 1)) g.R /= 2;
    else g.C /= 2;
  }
  int gx = 1 + rnd(&g, 3), gy = chance(&g, 20) ? 2 : 1;
  g.G = gx * gy;
  k->grid = (tk_grid){(unsigned)gx, (unsigned)gy, 1};
  g.total = g.G * (g.R ? g.R : 1) * g.C;

  su_buf body = {0};
  g.body = &body;
  g.indent = 1;
  line(&g, gy > 1 ? "let pid = program_id(0) + program_id(1) * num_programs(0);" : "let pid = program_id(0);");
  if (g.R) {
    line(&g, "let rows = arange(0, %d);", g.R);
    line(&g, "let cols = arange(0, %d);", g.C);
    line(&g, "let offs = pid * %d + rows[:, None] * %d + cols[None, :];", g.R * g.C, g.C);
  } else {
    line(&g, "let cols = arange(0, %d);", g.C);
    line(&g, "let offs = pid * %d + cols;", g.C);
  }
  const char *n = add_scalar(&g, TK_I32, chance(&g, 40) ? g.total : rnd(&g, g.total + 1));
  line(&g, "let mask = offs < %s;", n);

  int nouts = 1 + rnd(&g, 3);
  for (int i = 0; i < nouts; i++) {
    int r = rnd(&g, 100);
    ex e;
    if (r < 15) e = loop_stmt(&g, depth);
    else if (r < 25) e = if_stmt(&g, depth);
    else if (r < 32) {
      atomic_stmt(&g, depth);
      continue;
    } else e = gen_ex(&g, depth);
    if (!e.ok) e = leaf(&g);
    store_stmt(&g, e);
  }
  if (!g.nstores) store_stmt(&g, load_leaf(&g));

  int warps = 1 << rnd(&g, 4);
  int stages = strstr(su_buf_str(&k->features), "dot") && chance(&g, 70) ? 2 + rnd(&g, 3) : 1;
  if (chance(&g, 60) || stages > 1) {
    su_buf_printf(&k->src, "@launch(warps = %d", warps);
    if (stages > 1) su_buf_printf(&k->src, ", stages = %d", stages);
    su_buf_puts(&k->src, ")\n");
  }
  su_buf_printf(&k->src, "kernel %s", k->name);
  if (g.cparams.len) su_buf_printf(&k->src, "<%s>", su_buf_str(&g.cparams));
  su_buf_printf(&k->src, "(%s) {\n%s}\n", su_buf_str(&g.sigbuf), su_buf_str(&body));
  /* the names of buffers and parameters live in the arena: copy them out */
  for (int i = 0; i < k->nbufs; i++) {
    k->bufs[i].name = strdup(k->bufs[i].name);
    if (k->bufs[i].why) k->bufs[i].why = strdup(k->bufs[i].why);
  }
  for (int i = 0; i < k->nparams; i++) k->params[i].name = strdup(k->params[i].name);
  su_buf_free(&body);
  su_buf_free(&g.sigbuf);
  su_buf_free(&g.cparams);
  su_arena_free(g.a);
}

void td_kernel_free(td_kernel *k) {
  for (int i = 0; i < k->nbufs; i++) {
    free((char *)k->bufs[i].name);
    free((char *)k->bufs[i].why);
  }
  for (int i = 0; i < k->nparams; i++) free((char *)k->params[i].name);
  su_buf_free(&k->src);
  su_buf_free(&k->features);
  memset(k, 0, sizeof *k);
}
