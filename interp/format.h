/*
 * interp/format.h — values as bits: f16 and bf16 against f32, and the memory format of
 * every dtype. Inline, because every f16 or bf16 op rounds through here and every load
 * and store decodes or encodes through here.
 *
 * f16 and bf16 against f32: free of libm. Each is exact (round to nearest even, overflow
 * to infinity) and gives the same value as ir_dtype_round on the float
 * (tests/unit/test_interp.c checks every f16 and bf16 value and the rounding boundaries
 * between them). NaN is the caller's business: the rounding functions keep a NaN as it
 * is.
 */
#ifndef TK_INTERP_FORMAT_H
#define TK_INTERP_FORMAT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../support/support.h"
#include "interp.h"

static inline uint32_t ip_float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float ip_bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* The f16 bits of f rounded to nearest even; a NaN gives the quiet NaN 0x7e00 with f's
 * sign. The subnormal case lets a float addition do the rounding (F. Giesen's method). */
static inline uint16_t ip_f16_bits(float f) {
  uint32_t u = ip_float_bits(f), sign = (u >> 16) & 0x8000;
  u &= 0x7fffffff;
  if (u >= (127u + 16) << 23) /* 65536 and up, inf, NaN */
    return (uint16_t)(sign | (u > 0x7f800000u ? 0x7e00 : 0x7c00));
  if (u < 113u << 23) { /* below 2^-14: subnormal or zero */
    const uint32_t magic = ((127u - 15) + (23 - 10) + 1) << 23;
    return (uint16_t)(sign | (ip_float_bits(ip_bits_float(u) + ip_bits_float(magic)) - magic));
  }
  uint32_t odd = (u >> 13) & 1;
  u += ((uint32_t)(15 - 127) << 23) + 0xfff + odd; /* a carry into the exponent is right */
  return (uint16_t)(sign | (u >> 13));
}

/* The value of f16 bits h; a NaN is C's NAN, negated when h's sign is set. */
static inline float ip_f16_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023;
  if (e == 31) return m ? (sign ? -NAN : NAN) : ip_bits_float(sign | 0x7f800000u);
  if (e == 0) return ip_bits_float(ip_float_bits((float)m * 0x1p-24f) | sign);
  return ip_bits_float(sign | ((e + 112) << 23) | (m << 13));
}

/* f rounded to f16 / bf16 precision and range, as a float, on f's own bits: round at
 * bit 13 (f16) or 16 (bf16), carries going into the exponent; below f16's normal range a
 * float addition rounds to a multiple of 2^-24 (the ulp of 0.5 is 2^-24). */
static inline float ip_round_f16(float f) {
  uint32_t u = ip_float_bits(f), sign = u & 0x80000000u, a = u ^ sign;
  if (a >= 0x477ff000u) /* 65520 (the midpoint above 65504) and up, inf, NaN */
    return a > 0x7f800000u ? f : ip_bits_float(sign | 0x7f800000u);
  if (a < 0x38800000u) /* below 2^-14 */
    return ip_bits_float(sign | ip_float_bits((ip_bits_float(a) + 0.5f) - 0.5f));
  a += 0xfff + ((a >> 13) & 1);
  return ip_bits_float(sign | (a & 0xffffe000u));
}

static inline float ip_round_bf16(float f) {
  if (f != f) return f;
  uint32_t u = ip_float_bits(f);
  u += 0x7fff + ((u >> 16) & 1); /* carries into the exponent round up, to inf at the top */
  return ip_bits_float(u & 0xffff0000u);
}

/* ---- memory format ---------------------------------------------------------------------- */

/* One element, in canonical form: signed ints sign-extended from their width into i,
 * unsigned ints and i1 zero-extended into u, floats already rounded to their type in f,
 * pointers as byte offset i into buffer buf (their provenance). */
typedef struct {
  union {
    int64_t i;
    uint64_t u;
    double f;
  };
  uint32_t buf;
} ip_elem;

/* The ir_dtype_bytes(dt) bytes at p (host order) as a canonical value. With dt a
 * constant the switch folds away, which is how the typed load loops use it. */
static inline ip_elem ip_decode_inline(tk_dtype dt, const void *p) {
  ip_elem r = {.u = 0};
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  float f;
  switch (dt) {
  case TK_I1: memcpy(&u8, p, 1); r.u = u8 != 0; return r;
  case TK_I8: memcpy(&u8, p, 1); r.i = (int8_t)u8; return r;
  case TK_U8: memcpy(&u8, p, 1); r.u = u8; return r;
  case TK_I16: memcpy(&u16, p, 2); r.i = (int16_t)u16; return r;
  case TK_U16: memcpy(&u16, p, 2); r.u = u16; return r;
  case TK_I32: memcpy(&u32, p, 4); r.i = (int32_t)u32; return r;
  case TK_U32: memcpy(&u32, p, 4); r.u = u32; return r;
  case TK_I64: case TK_U64: memcpy(&r.u, p, 8); return r;
  case TK_F16: memcpy(&u16, p, 2); r.f = ip_f16_float(u16); return r;
  case TK_BF16: memcpy(&u16, p, 2); r.f = ip_bits_float((uint32_t)u16 << 16); return r;
  case TK_F32: memcpy(&f, p, 4); r.f = f; return r;
  case TK_F64: memcpy(&r.f, p, 8); return r;
  case TK_F8E4M3: case TK_F8E5M2: memcpy(&u8, p, 1); r.f = ir_fp8_value(dt, u8); return r;
  default: SU_UNREACHABLE();
  }
}

/* Canonical v of type dt as its bytes at p. v is rounded to dt already, so the f16 and
 * bf16 conversions are exact; a bf16 NaN is kept quiet; an fp8 NaN is 0x7f, as the GPU's
 * conversions write it. */
static inline void ip_encode_inline(tk_dtype dt, ip_elem v, void *p) {
  uint8_t u8 = (uint8_t)v.u;
  uint16_t u16 = (uint16_t)v.u;
  uint32_t u32 = (uint32_t)v.u;
  float f = (float)v.f;
  switch (dt) {
  case TK_I1: u8 &= 1; memcpy(p, &u8, 1); return;
  case TK_I8: case TK_U8: memcpy(p, &u8, 1); return;
  case TK_I16: case TK_U16: memcpy(p, &u16, 2); return;
  case TK_I32: case TK_U32: memcpy(p, &u32, 4); return;
  case TK_I64: case TK_U64: memcpy(p, &v.u, 8); return;
  case TK_F16: u16 = ip_f16_bits(f); memcpy(p, &u16, 2); return;
  case TK_BF16:
    u32 = ip_float_bits(f);
    u16 = (uint16_t)(f != f ? (u32 >> 16) | 0x0040 : u32 >> 16);
    memcpy(p, &u16, 2);
    return;
  case TK_F32: memcpy(p, &f, 4); return;
  case TK_F64: memcpy(p, &v.f, 8); return;
  case TK_F8E4M3: case TK_F8E5M2: u8 = ir_fp8_bits(dt, v.f); memcpy(p, &u8, 1); return;
  default: SU_UNREACHABLE();
  }
}

#endif
