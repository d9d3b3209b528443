/* math_cases.c — the cases of math_cases.h: inputs, launches, C references, comparison.
 *
 * The references follow docs/language.md §6.4 to the bit: f16, bf16 and f32 math is the C
 * library's float function rounded once to the type (f64: the double one); umulhi and cdiv
 * are computed in 128-bit arithmetic by another route than the interpreter's (the
 * ceiling as minus the floor of -a / b); Philox is written out here from its definition
 * (checked against the Random123 known-answer vectors), with Triton's mapping to floats. */
#include "tests/kernels/math_cases.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F16 TK_F16
#define BF16 TK_BF16
#define F32 TK_F32
#define F64 TK_F64

static const mc_tol EXACT = {0, 0};

/* GPU bounds against the interpreter (docs/language.md §6.4): libdevice's stated ulps plus
 * the C library's (at most 1); f16/bf16 results computed in f32 are off by at most one
 * rounding of the narrow type. */
#define T(u) {u, 0}
#define FLOAT1(name, dt, lib)                                                                  \
  {name, "math.tk", name, MC_FLOAT1, dt, 0, 0, 6, {dt, dt, dt, dt, dt, dt},                    \
   {"round", "rint", "trunc", "log1p", "expm1", "sqrt_rn"},                                    \
   {EXACT, EXACT, EXACT, T(lib), T(lib), EXACT}}
#define FLOAT2(name, dt, pow, fdiv)                                                            \
  {name, "math.tk", name, MC_FLOAT2, dt, 0, 0, 6, {dt, dt, dt, dt, dt, dt},                    \
   {"pow", "**", "copysign", "div_rn", "fdiv", "fdiv(ieee_rounding = true)"},                  \
   {T(pow), T(pow), EXACT, EXACT, T(fdiv), EXACT}}
/* erf and the accurate erfc are libdevice's (CUDA: erff 2 ulp, erfcf 4, erf 2, erfc 5)
 * plus the C library's ulp; the fast f32 erfc's is docs/language.md's (16 + 3 x^2) ulps
 * at its largest where the result is still normal (|x| = 9.2: 270; the inputs reach 10,
 * and past 9.2 a subnormal's ulps are few).
 * The complement forms are absolute: the GPU computes 1 + erf(-x) as erfc(x), the
 * interpreter as written, whose own rounding near 1 (and the narrow type's erf rounded
 * before the sum) is the larger part. */
#define ERF(name, dt, erf, fast, acc, cabs)                                                    \
  {name, "math.tk", name, MC_ERF, dt, 0, 0, 5, {dt, dt, dt, dt, dt},                           \
   {"erf", "erfc", "1 + erf(-x)", "1 - erf(x / 2)", "erfc(accurate = true)"},                  \
   {T(erf), T(fast), {0, cabs}, {0, cabs}, T(acc)}}
#define FCLASS(name, dt)                                                                       \
  {name, "math.tk", name, MC_FCLASS, dt, 0, 0, 3, {TK_I1, TK_I1, TK_I1},                       \
   {"isnan", "isinf", "isfinite"}, {EXACT, EXACT, EXACT}}
#define INT2(name, dt)                                                                         \
  {name, "math.tk", name, MC_INT2, dt, 0, 0, 2, {dt, dt}, {"umulhi", "cdiv"}, {EXACT, EXACT}}
/* randn: cos.approx.f32 (about 2^-21 absolute) times a radius below 5.7, and logf */
#define RANDOM(name, kernel, fam, word, seed, base)                                            \
  {name, "random.tk", kernel, fam, word, seed, base, 3, {word, F32, F32},                      \
   {"randint", "rand", "randn"}, {EXACT, EXACT, {0, 1e-5}}}

const mc_case mc_cases[] = {
    FLOAT1("float1_f16", F16, 1), FLOAT1("float1_bf16", BF16, 1),
    FLOAT1("float1_f32", F32, 2), FLOAT1("float1_f64", F64, 2),
    FLOAT2("float2_f16", F16, 1, 1), FLOAT2("float2_bf16", BF16, 1, 1),
    FLOAT2("float2_f32", F32, 5, 2), FLOAT2("float2_f64", F64, 3, 0),
    ERF("erf1_f16", F16, 1, 1, 1, 1e-3), ERF("erf1_bf16", BF16, 1, 1, 1, 1.6e-2),
    ERF("erf1_f32", F32, 3, 270, 5, 1e-6), ERF("erf1_f64", F64, 3, 6, 6, 1e-15),
    FCLASS("fclass_f16", F16), FCLASS("fclass_f32", F32), FCLASS("fclass_f64", F64),
    INT2("int2_u8", TK_U8), INT2("int2_i16", TK_I16), INT2("int2_i32", TK_I32),
    INT2("int2_u32", TK_U32), INT2("int2_i64", TK_I64), INT2("int2_u64", TK_U64),
    RANDOM("random32_zero", "random32", MC_RANDOM32, TK_U32, 0, 0),
    RANDOM("random32_seed", "random32", MC_RANDOM32, TK_U32, 0x123456789abcdef, 1000),
    RANDOM("random32_negative", "random32", MC_RANDOM32, TK_U32, -1, -700),
    RANDOM("random64", "random64", MC_RANDOM64, TK_U32, (int64_t)0xdeadbeefcafef00d,
           (INT64_C(1) << 32) - 300),
    {"random_rounds", "random.tk", "random_rounds", MC_ROUNDS, TK_U32, -123456789,
     (int64_t)0xffffff00, 2, {TK_U32, F32}, {"randint (7 rounds)", "rand (3 rounds)"},
     {EXACT, EXACT}},
    {"random_narrow", "random.tk", "random_narrow", MC_NARROW, TK_U32, 0xf00dface, -34000, 3,
     {TK_U32, F32, F32}, {"randint (i16 offsets)", "rand (u8 offsets)", "randn (i8 offsets)"},
     {EXACT, EXACT, {0, 1e-5}}},
};
const int mc_ncases = sizeof mc_cases / sizeof mc_cases[0];

/* ---- elements -------------------------------------------------------------------------- */

size_t mc_size(tk_dtype t) {
  switch (t) {
  case TK_I1: case TK_I8: case TK_U8: return 1;
  case TK_I16: case TK_U16: case TK_F16: case TK_BF16: return 2;
  case TK_I32: case TK_U32: case TK_F32: return 4;
  default: return 8;
  }
}

static bool is_float(tk_dtype t) { return t == F16 || t == BF16 || t == F32 || t == F64; }
static bool is_signed(tk_dtype t) { return t == TK_I8 || t == TK_I16 || t == TK_I32 || t == TK_I64; }
static int bits_of(tk_dtype t) { return (int)mc_size(t) * 8; }

static uint64_t raw(tk_dtype t, const void *p, long i) {
  uint64_t v = 0;
  memcpy(&v, (const char *)p + i * (long)mc_size(t), mc_size(t)); /* little-endian hosts */
  return v;
}

static void set_raw(tk_dtype t, void *p, long i, uint64_t v) {
  memcpy((char *)p + i * (long)mc_size(t), &v, mc_size(t));
}

/* f32 to bf16, round to nearest even (NaN kept a NaN). */
static uint16_t bf16_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  if (isnan(f)) return (uint16_t)((b >> 16) | 0x40);
  return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

static double get_f(tk_dtype t, const void *p, long i) {
  uint64_t b = raw(t, p, i);
  if (t == F64) {
    double d;
    memcpy(&d, &b, 8);
    return d;
  }
  float f;
  if (t == F16) {
    _Float16 h;
    memcpy(&h, &b, 2);
    return h;
  }
  uint32_t w = t == BF16 ? (uint32_t)b << 16 : (uint32_t)b;
  memcpy(&f, &w, 4);
  return f;
}

/* Stores v rounded once to t (v is exact in f32 for the 16-bit types' callers, or an f64). */
static void set_f(tk_dtype t, void *p, long i, double v) {
  uint64_t b = 0;
  if (t == F64) {
    memcpy(&b, &v, 8);
  } else if (t == F16) {
    _Float16 h = (_Float16)v;
    memcpy(&b, &h, 2);
  } else if (t == BF16) {
    b = bf16_bits((float)v);
  } else {
    float f = (float)v;
    memcpy(&b, &f, 4);
  }
  set_raw(t, p, i, b);
}

/* An integer element, sign- or zero-extended from its width. */
static int64_t get_i(tk_dtype t, const void *p, long i) {
  uint64_t v = raw(t, p, i);
  int w = bits_of(t);
  if (w < 64 && is_signed(t) && (v >> (w - 1)) & 1) v |= ~UINT64_C(0) << w;
  return (int64_t)v;
}

/* ---- inputs ------------------------------------------------------------------------------ */

static uint64_t next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { return (double)(next(s) >> 11) * 0x1p-53; }

static const double SPECIAL_X[] = {
    0.0, -0.0, INFINITY, -INFINITY, NAN, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 1, -1,
    2, 1e-7, -1e-7, 1e-3, -0.999, -1, -2, 10, 88.5, 100, 1e30, -1e30, 1e-40, 65504, 0.1,
    7.3, 1024.5, 4194304.5, 8388609, 0x1p-149, 3e38};
static const double SPECIAL_Z[] = {
    0.0, -0.0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, INFINITY, -INFINITY, NAN, 1.0 / 3, 10, 1e-30,
    1e30, 7, -0.0, 2.5, 1e-40, 3e38};
enum {
  NX = sizeof SPECIAL_X / sizeof *SPECIAL_X,
  NZ = sizeof SPECIAL_Z / sizeof *SPECIAL_Z
};

/* A float value of every kind a math function treats apart: exact halves (ties), wide
 * magnitudes, values near 0 (log1p, expm1), moderate ones. */
static double random_float(uint64_t *s) {
  double sign = next(s) & 1 ? -1 : 1;
  switch (next(s) % 4) {
  case 0: return sign * 10 * uniform(s);
  case 1: return (double)((int64_t)(next(s) % 201) - 100) + 0.5;
  case 2: return sign * ldexp(1 + uniform(s), (int)(next(s) % 61) - 30);
  default: return sign * 1e-3 * uniform(s);
  }
}

/* Powers stay moderate and include integers (so negative bases give numbers, not NaN). */
static double random_exponent(uint64_t *s) {
  return next(s) % 3 ? (double)((int64_t)(next(s) % 13) - 6) : 8 * uniform(s) - 4;
}

static int64_t int_special(tk_dtype t, int k) {
  int w = bits_of(t);
  int64_t max = is_signed(t) ? (int64_t)((UINT64_C(1) << (w - 1)) - 1)
                             : (int64_t)(w == 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1);
  int64_t min = is_signed(t) ? -max - 1 : 0;
  const int64_t v[] = {0, 1, -1, 2, -2, 7, -7, max, min, max - 1, min + 1, 3};
  return v[k % 12];
}

static int64_t random_int(uint64_t *s) {
  uint64_t r = next(s);
  return next(s) % 2 ? (int64_t)(r % 2001) - 1000 : (int64_t)r;
}

/* The w low bits set. */
static uint64_t low_bits(int w) { return w == 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1; }

int mc_inputs(const mc_case *c, long n, uint64_t seed, void *in[2]) {
  int nin = c->family == MC_FLOAT1 || c->family == MC_FCLASS || c->family == MC_ERF ? 1
            : c->family == MC_FLOAT2 || c->family == MC_INT2 ? 2 : 0;
  uint64_t s = seed ^ (uint64_t)c->family * 0x51ed270b27a1f3c5u ^ (uint64_t)c->dt;
  for (int k = 0; k < nin; k++) {
    in[k] = malloc((size_t)n * mc_size(c->dt) + 1);
    for (long i = 0; i < n; i++) {
      if (is_float(c->dt)) {
        /* one operand: each special, then random; two: every pair of specials first */
        double v;
        if (nin == 1) v = i < NX ? SPECIAL_X[i] : random_float(&s);
        else if (i < NX * NZ) v = k == 0 ? SPECIAL_X[i / NZ] : SPECIAL_Z[i % NZ];
        else v = k == 0 ? random_float(&s) : random_exponent(&s);
        set_f(c->dt, in[k], i, v);
      } else {
        /* every pair of the 12 special integers first; no zero divisor */
        int64_t v = i < 144 ? int_special(c->dt, k == 0 ? (int)(i / 12) : (int)(i % 12)) : random_int(&s);
        if (k == 1 && ((uint64_t)v & low_bits(bits_of(c->dt))) == 0) v = 5;
        set_raw(c->dt, in[k], i, (uint64_t)v);
      }
    }
  }
  return nin;
}

/* ---- running ----------------------------------------------------------------------------- */

static tk_status upload(tk_context *ctx, tk_devptr *d, const void *h, size_t bytes) {
  tk_status st = tk_malloc(ctx, d, bytes ? bytes : 1);
  return st == TK_OK && bytes ? tk_memcpy_htod(ctx, *d, h, bytes) : st;
}

tk_status mc_run(tk_context *ctx, tk_kernel *k, const mc_case *c, long n, void *const in[2],
                 void *out[MC_MAX_OUTS]) {
  size_t ie = mc_size(c->dt);
  tk_devptr din[2] = {0, 0}, dout[MC_MAX_OUTS] = {0};
  tk_status st = TK_OK;
  bool random = c->family >= MC_RANDOM32;
  /* the math kernels write every output into one buffer, output o at o * n */
  int nbuf = random ? c->nout : 1;
  size_t obytes = random ? 0 : (size_t)n * mc_size(c->out[0]) * (size_t)c->nout;
  unsigned char *poison = malloc(16 * (size_t)n * MC_MAX_OUTS + 1);
  memset(poison, 0xa5, 16 * (size_t)n * MC_MAX_OUTS + 1);
  int nin = random ? 0 : c->family == MC_FLOAT2 || c->family == MC_INT2 ? 2 : 1;
  for (int i = 0; i < nin && st == TK_OK; i++) st = upload(ctx, &din[i], in[i], (size_t)n * ie);
  for (int o = 0; o < nbuf && st == TK_OK; o++)
    st = upload(ctx, &dout[o], poison, random ? (size_t)n * mc_size(c->out[o]) : obytes);
  tk_arg a[8];
  int na = 0;
  switch (c->family) {
  case MC_RANDOM32: a[na++] = tk_arg_i64(c->seed); break;
  case MC_RANDOM64: a[na++] = tk_arg_u64((uint64_t)c->seed); break;
  case MC_ROUNDS: a[na++] = tk_arg_i32((int32_t)c->seed); break;
  case MC_NARROW: a[na++] = tk_arg_u32((uint32_t)c->seed); break;
  default:
    for (int i = 0; i < nin; i++) a[na++] = tk_arg_ptr(din[i]);
  }
  for (int o = 0; o < nbuf; o++) a[na++] = tk_arg_ptr(dout[o]);
  a[na++] = tk_arg_i32((int32_t)n);
  if (c->family == MC_RANDOM32 || c->family == MC_NARROW) a[na++] = tk_arg_i32((int32_t)c->base);
  if (c->family == MC_RANDOM64) a[na++] = tk_arg_i64(c->base);
  if (c->family == MC_ROUNDS) a[na++] = tk_arg_u32((uint32_t)c->base);
  tk_grid g = {(unsigned)((n + MC_BLOCK - 1) / MC_BLOCK), 1, 1};
  if (st == TK_OK) st = tk_launch(k, g, NULL, a, na);
  for (int o = 0; o < c->nout; o++) out[o] = NULL;
  for (int o = 0; o < c->nout && st == TK_OK; o++) {
    size_t bytes = (size_t)n * mc_size(c->out[o]);
    out[o] = malloc(bytes + 1);
    tk_devptr src = random ? dout[o] : dout[0] + (tk_devptr)(bytes * (size_t)o);
    st = tk_memcpy_dtoh(ctx, out[o], src, bytes);
  }
  if (st != TK_OK)
    for (int o = 0; o < c->nout; o++) free(out[o]), out[o] = NULL;
  for (int i = 0; i < 2; i++) tk_free(ctx, din[i]);
  for (int o = 0; o < nbuf; o++) tk_free(ctx, dout[o]);
  free(poison);
  return st;
}

/* ---- references -------------------------------------------------------------------------- */

/* The high half of the unsigned product, and the exact ceiling, of two elements of t. */
static uint64_t ref_umulhi(tk_dtype t, int64_t a, int64_t b) {
  int w = bits_of(t);
  unsigned __int128 mask = w == 64 ? ~(unsigned __int128)0 >> 64 : ((unsigned __int128)1 << w) - 1;
  unsigned __int128 p = ((unsigned __int128)(uint64_t)a & mask) * ((unsigned __int128)(uint64_t)b & mask);
  return (uint64_t)(p >> w);
}

static uint64_t ref_cdiv(tk_dtype t, int64_t a, int64_t b) {
  __int128 x = a, y = b;
  if (!is_signed(t)) x = (uint64_t)a, y = (uint64_t)b;
  __int128 nx = -x, q = nx / y; /* floor(-x / y), then negated */
  if (nx % y != 0 && ((nx < 0) != (y < 0))) q -= 1;
  return (uint64_t)(-q); /* wraps like the language: INT_MIN / -1 */
}

static double ref_float1(int o, tk_dtype t, double v) {
  if (t == F64) {
    switch (o) {
    case 0: case 1: return nearbyint(v);
    case 2: return trunc(v);
    case 3: return log1p(v);
    case 4: return expm1(v);
    default: return sqrt(v);
    }
  }
  float f = (float)v;
  switch (o) {
  case 0: case 1: return nearbyintf(f);
  case 2: return truncf(f);
  case 3: return log1pf(f);
  case 4: return expm1f(f);
  default: return sqrtf(f);
  }
}

/* v rounded to t (to f32 for f32; f64 kept). */
static double round_to(tk_dtype t, double v) {
  if (t == F64) return v;
  unsigned char b[8];
  set_f(t, b, 0, v);
  return get_f(t, b, 0);
}

/* Each op of the erf1 kernel rounded to t, as the interpreter computes it: the complement
 * forms as written (erf rounded, then the sum). */
static double ref_erf(int o, tk_dtype t, double v) {
  bool d = t == F64;
  float f = (float)v;
  switch (o) {
  case 0: return d ? erf(v) : erff(f);
  case 1: case 4: return d ? erfc(v) : erfcf(f);
  case 2: return round_to(t, 1 + round_to(t, d ? erf(-v) : erff(-f)));
  default: {
    double h = round_to(t, 0.5 * v);
    return round_to(t, 1 - round_to(t, d ? erf(h) : erff((float)h)));
  }
  }
}

static double ref_float2(int o, tk_dtype t, double a, double b) {
  if (t == F64) {
    switch (o) {
    case 0: case 1: return pow(a, b);
    case 2: return copysign(a, b);
    default: return a / b;
    }
  }
  float x = (float)a, y = (float)b;
  switch (o) {
  case 0: case 1: return powf(x, y);
  case 2: return copysignf(x, y);
  default: return x / y;
  }
}

/* Philox4x32: `rounds` rounds on counter c with key (k0, k1). */
static void philox(uint32_t c[4], uint32_t k0, uint32_t k1, int rounds) {
  for (int r = 0; r < rounds; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53 * c[0], p1 = (uint64_t)0xCD9E8D57 * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n1 = (uint32_t)p1;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1, n3 = (uint32_t)p0;
    c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
}

/* The known answers of Philox4x32-10 (Random123's kat_vectors): a reference that gets
 * these wrong would make every random test meaningless. */
static void philox_self_check(void) {
  static const uint32_t kat[3][2][4] = {
      {{0, 0, 0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}};
  static const uint32_t keys[3][2] = {{0, 0}, {0xffffffff, 0xffffffff}, {0xa4093822, 0x299f31d0}};
  for (int i = 0; i < 3; i++) {
    uint32_t c[4];
    memcpy(c, kat[i][0], sizeof c);
    philox(c, keys[i][0], keys[i][1], 10);
    if (memcmp(c, kat[i][1], sizeof c) != 0) {
      fprintf(stderr, "math_cases: the C Philox fails known-answer vector %d\n", i);
      abort();
    }
  }
}

/* Triton's word-to-float mapping: signed, negatives complemented, scaled below 1. */
static float to_uniform(uint32_t word) {
  int32_t x = (int32_t)word;
  return (float)(x < 0 ? ~x : x) * (float)4.6566127342e-10;
}

static float to_normal(float u1, float u2) {
  u1 = u1 > 1.0e-7f ? u1 : 1.0e-7f;
  float th = (float)6.283185307179586 * u2;
  float r = sqrtf(-2.0f * logf(u1));
  return r * cosf(th);
}

/* Triton 3.6's randint4x: the counter is the offset's low word, its high word (64-bit
 * offsets), 0, 0; the key the seed's two words. */
static void ref_random(const mc_case *c, long n, void *out[MC_MAX_OUTS]) {
  uint64_t seed = (uint64_t)c->seed; /* the kernels' seeds are signed, hence sign-extended */
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (long i = 0; i < n; i++) {
    /* the offsets wrap in their own width: i32 and u32 at 32 bits, i64 at 64 */
    uint64_t off = (uint64_t)c->base + (uint64_t)i;
    uint32_t hi = c->family == MC_RANDOM64 ? (uint32_t)(off >> 32) : 0;
    uint32_t a[4] = {(uint32_t)off, hi, 0, 0}, b[4] = {(uint32_t)off, hi, 0, 0};
    if (c->family == MC_ROUNDS) {
      philox(a, k0, k1, 7);
      philox(b, k0, k1, 3);
      set_raw(TK_U32, out[0], i, a[0]);
      set_f(F32, out[1], i, to_uniform(b[0]));
      continue;
    }
    if (c->family == MC_NARROW) { /* the counter word extended by the offsets' signedness */
      uint32_t w[4] = {(uint32_t)(int16_t)off}, u[4] = {(uint8_t)off}, g[4] = {(uint32_t)(int8_t)off};
      philox(w, k0, k1, 10);
      philox(u, k0, k1, 10);
      philox(g, k0, k1, 10);
      set_raw(TK_U32, out[0], i, w[0]);
      set_f(F32, out[1], i, to_uniform(u[0]));
      set_f(F32, out[2], i, to_normal(to_uniform(g[0]), to_uniform(g[1])));
      continue;
    }
    philox(a, k0, k1, 10);
    set_raw(TK_U32, out[0], i, a[0]);
    set_f(F32, out[1], i, to_uniform(a[0]));
    set_f(F32, out[2], i, to_normal(to_uniform(a[0]), to_uniform(a[1])));
  }
}

void mc_reference(const mc_case *c, long n, void *const in[2], void *out[MC_MAX_OUTS]) {
  philox_self_check();
  for (int o = 0; o < c->nout; o++) out[o] = malloc((size_t)n * mc_size(c->out[o]) + 1);
  if (c->family >= MC_RANDOM32) {
    ref_random(c, n, out);
    return;
  }
  for (long i = 0; i < n; i++)
    for (int o = 0; o < c->nout; o++) {
      switch (c->family) {
      case MC_FLOAT1: set_f(c->dt, out[o], i, ref_float1(o, c->dt, get_f(c->dt, in[0], i))); break;
      case MC_ERF: set_f(c->dt, out[o], i, ref_erf(o, c->dt, get_f(c->dt, in[0], i))); break;
      case MC_FLOAT2:
        set_f(c->dt, out[o], i, ref_float2(o, c->dt, get_f(c->dt, in[0], i), get_f(c->dt, in[1], i)));
        break;
      case MC_FCLASS: {
        double v = get_f(c->dt, in[0], i);
        set_raw(TK_I1, out[o], i, o == 0 ? isnan(v) != 0 : o == 1 ? isinf(v) != 0 : isfinite(v) != 0);
        break;
      }
      default: {
        int64_t a = get_i(c->dt, in[0], i), b = get_i(c->dt, in[1], i);
        set_raw(c->dt, out[o], i, o == 0 ? ref_umulhi(c->dt, a, b) : ref_cdiv(c->dt, a, b));
      }
      }
    }
}

/* ---- comparing --------------------------------------------------------------------------- */

/* A float's bits as a signed integer that orders like the value (-0 and +0 alike), so that
 * the difference of two is their distance in ulps. */
static int64_t ordered(tk_dtype t, uint64_t b) {
  int w = bits_of(t);
  uint64_t sign = UINT64_C(1) << (w - 1);
  int64_t mag = (int64_t)(b & (sign - 1));
  return b & sign ? -mag : mag;
}

static void describe_inputs(const mc_case *c, long i, void *const in[2], char *buf, size_t cap) {
  buf[0] = 0;
  if (!in) return;
  int nin = c->family == MC_FLOAT2 || c->family == MC_INT2 ? 2 : 1;
  size_t len = 0;
  for (int k = 0; k < nin && len < cap; k++) {
    if (is_float(c->dt))
      len += (size_t)snprintf(buf + len, cap - len, "%s%.17g", k ? ", " : " of ", get_f(c->dt, in[k], i));
    else
      len += (size_t)snprintf(buf + len, cap - len, "%s%lld", k ? ", " : " of ",
                              (long long)get_i(c->dt, in[k], i));
  }
}

long mc_compare(const mc_case *c, int o, long n, const void *got, const void *want, mc_tol tol,
                void *const in[2], char *msg, size_t cap) {
  tk_dtype t = c->out[o];
  for (long i = 0; i < n; i++) {
    uint64_t g = raw(t, got, i), w = raw(t, want, i);
    if (g == w) continue;
    if (is_float(t)) {
      double gv = get_f(t, got, i), wv = get_f(t, want, i);
      if (isnan(gv) && isnan(wv)) continue;
      if (!isnan(gv) && !isnan(wv)) {
        if (tol.abs > 0 && fabs(gv - wv) <= tol.abs) continue;
        int64_t d = ordered(t, g) - ordered(t, w);
        if (tol.abs == 0 && (d < 0 ? -d : d) <= tol.ulps) continue;
      }
      char ins[128];
      describe_inputs(c, i, in, ins, sizeof ins);
      snprintf(msg, cap, "%s: %s%s at %ld: got %.9g (0x%llx), want %.9g (0x%llx)", c->name,
               c->what[o], ins, i, gv, (unsigned long long)g, wv, (unsigned long long)w);
      return i;
    }
    char ins[128];
    describe_inputs(c, i, in, ins, sizeof ins);
    snprintf(msg, cap, "%s: %s%s at %ld: got 0x%llx, want 0x%llx", c->name, c->what[o], ins, i,
             (unsigned long long)g, (unsigned long long)w);
    return i;
  }
  return -1;
}
