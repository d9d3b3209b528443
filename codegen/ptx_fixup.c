/* Workarounds for ptxas, applied to the PTX text LLVM emits (cg_emit_ptx). Both were
 * found by tkdiff on the H200 and read in the SASS of ptxas 13.0 (nvdisasm); the
 * rewritten forms compute the same bits, and ptxas compiles them correctly.
 *
 * - neg.s16 and abs.s16 (LLVM's selection for `sub i16 0, x` and llvm.abs.i16, which is
 *   also how i8 negations end up: shl 8, neg.s16, shr.s16 8): ptxas keeps 16-bit values
 *   sign-extended in 32-bit registers and takes the negation or absolute value of a
 *   sign-extended value to be one too, which fails for -32768: -(-32768) comes out as
 *   +32768, so a following shr.s16, compare or widening sees 32768 where the 16-bit
 *   result is -32768 (seed 38040: an i8 -(-128) became +128). abs.s16 becomes max.s16
 *   of a and `sub.u16 0, a`; neg.s16 is written as below.
 * - neg.s32 and neg.s64 feeding a chain of max/min: ptxas folds the negations into its
 *   three-input VIMNMX3 and drops every other one (seeds 1012222, 1009129: `max(-x, 1)`
 *   came out as the max of half the elements negated and half not). `sub.u32 d, 0, a`
 *   is not enough where a is itself a sum (seed 3003365: -(offs) into an unsigned max
 *   reduction, `IADD3 RZ, -a, -b` for some elements and the plain sum for others), so
 *   the negation is written as its definition, `not` then `add 1`, which ptxas keeps;
 *   so is neg.s16, whose `sub.u16 0, a` ptxas also lost before a packed min.u16x2 (seed
 *   5119731: -x of u16 values into a min reduction came out as x).
 * - selp.f32 with a -0.0 immediate: ptxas compiles `selp.f32 d, 1.0, -0.0, p` (what LLVM
 *   writes when only the sign of a select is demanded) as FSET.BF, whose false is +0.0, so
 *   the sign is lost (seed 5003384: copysign(cols, where(isnan(x), 1.0, -|y|)) came out
 *   +cols). The select is written on the bits, selp.b32 with the immediates as integers.
 *   Unlike the others, this one is read in the SASS but its rewrite is not yet checked
 *   there (tests/diff/gpu-run-2026-12-02.txt). */
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

/* The first of the rewritten instructions at or after p, or NULL. */
static const char *next_hit(const char *p) {
  static const char *OPS[] = {"neg.s16", "abs.s16", "neg.s32", "neg.s64", "selp.f32"};
  const char *best = NULL;
  for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++) {
    const char *h = strstr(p, OPS[i]);
    if (h && (!best || h < best)) best = h;
  }
  return best;
}

void cg_ptx_fixup(su_buf *out, const char *ptx, size_t len) {
  const char *p = ptx, *e = ptx + len;
  while (p < e) {
    const char *hit = next_hit(p);
    if (!hit || hit >= e) {
      su_buf_put(out, p, (size_t)(e - p));
      return;
    }
    if (hit[0] == 's') { /* selp.f32: on the bits when an immediate is -0.0 */
      const char *semi = strchr(hit, ';');
      if (!semi || semi >= e) semi = e - 1;
      size_t n = (size_t)(semi + 1 - hit);
      su_buf_put(out, p, (size_t)(hit - p));
      const char *z = strstr(hit, "0f80000000");
      if (!z || z > semi) {
        su_buf_put(out, hit, n);
      } else {
        su_buf_puts(out, "selp.b32");
        for (const char *q = hit + 8; q <= semi; q++) {
          if (q[0] == '0' && q[1] == 'f' && q + 9 < semi) {
            su_buf_puts(out, "0x");
            q++;
            continue;
          }
          su_buf_put(out, q, 1);
        }
      }
      p = semi + 1;
      continue;
    }
    const char *d, *a, *end;
    size_t dn, an;
    if (!operands(hit + 7, &d, &dn, &a, &an, &end)) {
      su_buf_put(out, p, (size_t)(hit + 7 - p));
      p = hit + 7;
      continue;
    }
    su_buf_put(out, p, (size_t)(hit - p));
    if (hit[0] == 'n') {
      su_buf_printf(out, "not.b%.2s \t%.*s, %.*s; add.u%.2s \t%.*s, %.*s, 1;", hit + 5, (int)dn, d, (int)an, a,
                    hit + 5, (int)dn, d, (int)dn, d);
    } else {
      su_buf_printf(out, "{ .reg .b16 %%tk_neg; sub.u16 \t%%tk_neg, 0, %.*s; max.s16 \t%.*s, %.*s, %%tk_neg; }",
                    (int)an, a, (int)dn, d, (int)an, a);
    }
    p = end;
  }
}
