/* Workarounds for ptxas, applied to the PTX text LLVM emits (cg_emit_ptx).
 *
 * neg.s16 and abs.s16 (LLVM's selection for `sub i16 0, x` and llvm.abs.i16, which is
 * also how i8 negations end up: shl 8, neg.s16, shr.s16 8): ptxas (13.0, and the H200
 * driver's JIT: tkdiff seed 38040) keeps 16-bit values sign-extended in 32-bit registers
 * and takes the negation or absolute value of a sign-extended value to be one too, which
 * fails for -32768: -(-32768) comes out as +32768, so a following shr.s16, compare or
 * widening sees 32768 where the 16-bit result is -32768 (an i8 -(-128) became +128).
 * `sub.u16 d, 0, a` computes the same 16 bits and is re-extended where needed, so neg.s16
 * becomes that, and abs.s16 becomes max.s16 of a and that. */
#include "cg.h"

#include <string.h>

/* The operands "D, A" of the instruction text at p (after the opcode), up to ';'. */
static bool operands(const char *p, const char **d, size_t *dn, const char **a, size_t *an,
                     const char **end) {
  while (*p == ' ' || *p == '\t') p++;
  const char *comma = strchr(p, ','), *semi = strchr(p, ';'), *nl = strchr(p, '\n');
  if (!comma || !semi || comma > semi || (nl && nl < semi)) return false;
  const char *s = comma + 1;
  while (*s == ' ') s++;
  *d = p;
  *dn = (size_t)(comma - p);
  *a = s;
  *an = (size_t)(semi - s);
  *end = semi + 1;
  return true;
}

void cg_ptx_fixup(su_buf *out, const char *ptx, size_t len) {
  const char *p = ptx, *e = ptx + len;
  while (p < e) {
    const char *neg = strstr(p, "neg.s16"), *abs = strstr(p, "abs.s16");
    const char *hit = !neg ? abs : !abs ? neg : neg < abs ? neg : abs;
    if (!hit || hit >= e) {
      su_buf_put(out, p, (size_t)(e - p));
      return;
    }
    const char *d, *a, *end;
    size_t dn, an;
    if (!operands(hit + 7, &d, &dn, &a, &an, &end)) {
      su_buf_put(out, p, (size_t)(hit + 7 - p));
      p = hit + 7;
      continue;
    }
    su_buf_put(out, p, (size_t)(hit - p));
    if (hit == neg) {
      su_buf_printf(out, "sub.u16 \t%.*s, 0, %.*s;", (int)dn, d, (int)an, a);
    } else {
      su_buf_printf(out, "{ .reg .b16 %%tk_neg; sub.u16 \t%%tk_neg, 0, %.*s; max.s16 \t%.*s, %.*s, %%tk_neg; }",
                    (int)an, a, (int)dn, d, (int)an, a);
    }
    p = end;
  }
}
