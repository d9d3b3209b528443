/* The error model's constants: the precision rules of docs/language.md §6.4–6.6 and
 * docs/api.md ("The interpreter") as numbers. The per-op rules that use them (what error
 * an op adds, how it carries its operands' errors) are in gen.c next to each op; the
 * table of both is in docs/decisions.md ("The differential tester"). */
#include "tkdiff.h"

#include <math.h>

double td_ulp(tk_dtype d) {
  switch (d) {
  case TK_F16: return ldexp(1, -10);
  case TK_BF16: return ldexp(1, -7);
  case TK_F32: return ldexp(1, -23);
  case TK_F64: return ldexp(1, -52);
  default: return 0;
  }
}

/* Far enough below the largest finite value (65504 for f16) that a bound computed from
 * magnitudes never overflows, and that no inexact value can round to infinity on one
 * backend and not on the other. */
double td_mag_limit(tk_dtype d) {
  switch (d) {
  case TK_F16: return 1e4;
  case TK_BF16: return 1e30;
  case TK_F32: return 1e30;
  case TK_F64: return 1e200;
  default: return INFINITY;
  }
}
