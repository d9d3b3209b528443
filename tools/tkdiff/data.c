/* Buffer contents: the deterministic fill of each buffer, and the comparison of two
 * executions' results under a buffer's tolerance. */
#include "tkdiff.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* f32 → f16, round to nearest even, subnormals and overflow included. */
static uint16_t to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  float a = fabsf(f);
  if (isnan(f)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;
  if (a < 0x1p-24f * 0.5f) return sign;
  int e;
  frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  int q = e - 11 < -24 ? -24 : e - 11; /* the quantum: 2^q */
  float m = rintf(ldexpf(a, -q));     /* a / 2^q, to nearest even */
  double v = ldexp(m, q);
  /* pack: normal when v >= 2^-14 */
  if (v < 0x1p-14) return sign | (uint16_t)m;
  int ve;
  double vm = frexp(v, &ve); /* v = vm * 2^ve */
  uint16_t mant = (uint16_t)((int)ldexp(vm, 11) & 1023);
  return sign | (uint16_t)((ve + 14) << 10) | mant;
}

static float from_half(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}

static float from_bf16(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* f32 → bf16, nearest even (the values filled here are exact anyway). */
static uint16_t to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (isnan(f)) return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

/* v rounded to `bits` significant bits. */
static double keep_bits(double v, int bits) {
  if (v == 0 || bits <= 0) return v;
  int e;
  frexp(v, &e);
  return ldexp(rint(ldexp(v, bits - e)), e - bits);
}

static int type_bits(tk_dtype d) {
  switch (d) {
  case TK_F16: return 11;
  case TK_BF16: return 8;
  case TK_F32: return 24;
  default: return 53;
  }
}

static void put(tk_dtype d, void *p, size_t i, double v, uint64_t raw) {
  char *c = (char *)p + i * (size_t)ir_dtype_bytes(d);
  switch (d) {
  case TK_I1: { uint8_t x = v != 0; memcpy(c, &x, 1); break; }
  case TK_I8: case TK_U8: { uint8_t x = (uint8_t)raw; memcpy(c, &x, 1); break; }
  case TK_I16: case TK_U16: { uint16_t x = (uint16_t)raw; memcpy(c, &x, 2); break; }
  case TK_I32: case TK_U32: { uint32_t x = (uint32_t)raw; memcpy(c, &x, 4); break; }
  case TK_I64: case TK_U64: memcpy(c, &raw, 8); break;
  case TK_F16: { uint16_t x = to_half((float)v); memcpy(c, &x, 2); break; }
  case TK_BF16: { uint16_t x = to_bf16((float)v); memcpy(c, &x, 2); break; }
  case TK_F32: { float x = (float)v; memcpy(c, &x, 4); break; }
  case TK_F64: memcpy(c, &v, 8); break;
  default: break;
  }
}

void td_fill(const td_kernel *k, int b, void *host) {
  const td_buf *t = &k->bufs[b];
  uint64_t s = k->seed * 0x100000001b3ull + (uint64_t)b * 0x9E3779B97F4A7C15ull + 1;
  bool flt = ir_dtype_is_float(t->dt);
  int bits = t->bits > 0 ? t->bits : type_bits(t->dt);
  int w = ir_dtype_bits(t->dt);
  double span = t->hi - t->lo;
  for (size_t i = 0; i < t->n; i++) {
    uint64_t r = mix(&s);
    if (flt) {
      double v = t->lo + span * ((double)(r >> 11) * 0x1p-53);
      v = keep_bits(v, bits);
      if (t->dt == TK_F16 && fabs(v) < 0x1p-14) v = 0;
      put(t->dt, host, i, v, 0);
    } else if (t->dt == TK_I1) {
      put(t->dt, host, i, (double)(r & 1), r & 1);
    } else if (span >= ldexp(1, w) - 2) { /* the whole type */
      put(t->dt, host, i, 0, r);
    } else {
      int64_t v = (int64_t)t->lo + (int64_t)(r % (uint64_t)(span + 1));
      put(t->dt, host, i, (double)v, (uint64_t)v);
    }
  }
}

static double value(tk_dtype d, const void *p, size_t i) {
  const char *c = (const char *)p + i * (size_t)ir_dtype_bytes(d);
  switch (d) {
  case TK_F16: { uint16_t h; memcpy(&h, c, 2); return from_half(h); }
  case TK_BF16: { uint16_t h; memcpy(&h, c, 2); return from_bf16(h); }
  case TK_F32: { float f; memcpy(&f, c, 4); return f; }
  case TK_F64: { double f; memcpy(&f, c, 8); return f; }
  default: return 0;
  }
}

static void describe(su_buf *why, const td_buf *t, const void *p, size_t i) {
  const char *c = (const char *)p + i * (size_t)ir_dtype_bytes(t->dt);
  if (ir_dtype_is_float(t->dt)) {
    su_buf_printf(why, "%.9g", value(t->dt, p, i));
    return;
  }
  uint64_t u = 0;
  memcpy(&u, c, (size_t)ir_dtype_bytes(t->dt));
  int w = ir_dtype_bits(t->dt);
  if (ir_dtype_is_signed(t->dt) && w < 64 && (u >> (w - 1)) & 1) u |= ~0ull << w;
  if (ir_dtype_is_signed(t->dt)) su_buf_printf(why, "%lld", (long long)u);
  else su_buf_printf(why, "%llu", (unsigned long long)u);
}

size_t td_compare(const td_kernel *k, int b, const void *ref, const void *got, double tol_override,
                  su_buf *why) {
  const td_buf *t = &k->bufs[b];
  double tol = tol_override >= 0 ? tol_override : t->tol;
  size_t bytes = (size_t)ir_dtype_bytes(t->dt), bad = 0;
  for (size_t i = 0; i < t->n; i++) {
    bool same;
    double diff = 0;
    if (ir_dtype_is_float(t->dt)) {
      double r = value(t->dt, ref, i), g = value(t->dt, got, i);
      diff = fabs(r - g);
      same = (isnan(r) && isnan(g)) || r == g || (tol > 0 && diff <= tol);
    } else {
      same = !memcmp((const char *)ref + i * bytes, (const char *)got + i * bytes, bytes);
    }
    if (same) continue;
    if (bad++ < 4 && why) {
      su_buf_printf(why, "  %s[%zu]: expected ", t->name, i);
      describe(why, t, ref, i);
      su_buf_puts(why, ", got ");
      describe(why, t, got, i);
      if (ir_dtype_is_float(t->dt)) su_buf_printf(why, " (|diff| %.3g, tolerance %.3g)", diff, tol);
      su_buf_puts(why, "\n");
    }
  }
  return bad;
}
