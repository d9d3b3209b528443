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
 *   The rewrite was checked on the H200: the seed passes.
 * - cvt.rn.fNN.u32 (or .rz, .rm, .rp) of a register that holds a narrow signed value
 *   sign-extended to 32 bits (bfe.s32, cvt.s32.s8, cvt.s32.s16: LLVM's selection for
 *   `sext i8 to i32` of a byte of a vector load): ptxas folds the extension into the
 *   conversion and emits I2F.S8 of the byte, a signed conversion, where the unsigned one
 *   reads 2^32 - 105 for -105 (seeds 6053804, 6065702: `(x as u32) as f64` of an i8 x;
 *   read in the SASS). The conversion goes through 64 bits: cvt.u64.u32, then
 *   cvt.<rnd>.fNN.s64 of that value (below 2^32, so the same number as signed), which
 *   ptxas compiles as SGXT and I2F.S64; cvt.rn.f32.u64 is not enough, ptxas folds it to
 *   I2F.S8 as well (`((x as u32) as f32) as f64`, seed 6053804). The rz form is the first
 *   step of the round-to-odd conversion to bf16 (inline_ptx.c), which failed the same way
 *   for `(x as u32) as bf16`. */
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

static const char *const OPS[] = {"neg.s16", "abs.s16", "neg.s32", "neg.s64", "selp.f32", "cvt.r"};
enum { NOPS = sizeof OPS / sizeof OPS[0] };

/* Where each of OPS next occurs (NULL: nowhere after); each is searched again only once
 * the scan has passed it, so the whole text is read once per op. */
typedef struct {
  const char *at[NOPS];
} hits;

/* The first of the rewritten instructions at or after p, or NULL. */
static const char *next_hit(hits *h, const char *p) {
  const char *best = NULL;
  for (int i = 0; i < NOPS; i++) {
    if (h->at[i] && h->at[i] < p) h->at[i] = strstr(p, OPS[i]);
    if (h->at[i] && (!best || h->at[i] < best)) best = h->at[i];
  }
  return best;
}

/* The register name at p (after blanks), its length in *n. */
static const char *reg_at(const char *p, size_t *n) {
  while (*p == ' ' || *p == '\t') p++;
  const char *q = p;
  while (*q == '%' || *q == '_' || (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
    q++;
  *n = (size_t)(q - p);
  return p;
}

/* The registers defined by a sign extension from 8 or 16 bits to 32 (see the header). */
static void note_sext(su_map *m, const char *ptx) {
  static const char *const EXT[] = {"bfe.s32", "cvt.s32.s8", "cvt.s32.s16"};
  for (size_t i = 0; i < sizeof EXT / sizeof EXT[0]; i++)
    for (const char *p = strstr(ptx, EXT[i]); p; p = strstr(p + 1, EXT[i])) {
      size_t n;
      const char *r = reg_at(p + strlen(EXT[i]), &n);
      if (n && (p == ptx || p[-1] == '\t' || p[-1] == ' ')) su_map_put(m, r, n, (void *)r);
    }
}

/* cvt.<rnd>.<float>.u32 D, A at hit (rnd: rn, rz, rm or rp; rz is how inline_ptx.c's
 * round-to-odd conversion to bf16 starts): rewritten through 64 bits when A is in sext;
 * false when it is not such a conversion (nothing written). */
static bool fix_cvt(su_buf *out, const char *hit, const su_map *sext, const char **end) {
  const char *r = hit + 4;
  if (!r[1] || !strchr("nzmp", r[1]) || r[2] != '.' || (r[3] != 'f' && r[3] != 'b')) return false;
  const char *t = r + 3, *dot = strchr(t, '.');
  if (!dot || dot - t > 4 || strncmp(dot, ".u32", 4) || (dot[4] != ' ' && dot[4] != '\t')) return false;
  const char *d, *a;
  size_t dn, an;
  if (!operands(dot + 4, &d, &dn, &a, &an, end) || !su_map_get(sext, a, an)) return false;
  su_buf_printf(out, "{ .reg .b64 %%tk_z; cvt.u64.u32 \t%%tk_z, %.*s; cvt.%.2s.%.*s.s64 \t%.*s, %%tk_z; }", (int)an, a,
                r, (int)(dot - t), t, (int)dn, d);
  return true;
}

void cg_ptx_fixup(su_buf *out, const char *ptx, size_t len) {
  const char *p = ptx, *e = ptx + len;
  su_arena *arena = su_arena_new();
  su_map *sext = su_map_new(arena);
  note_sext(sext, ptx);
  hits h;
  for (int i = 0; i < NOPS; i++) h.at[i] = strstr(ptx, OPS[i]);
  while (p < e) {
    const char *hit = next_hit(&h, p);
    if (!hit || hit >= e) {
      su_buf_put(out, p, (size_t)(e - p));
      break;
    }
    if (hit[0] == 'c') { /* cvt.r: only the unsigned conversions of a sign extension */
      const char *end;
      su_buf_put(out, p, (size_t)(hit - p));
      if (fix_cvt(out, hit, sext, &end)) {
        p = end;
      } else {
        su_buf_put(out, hit, 5);
        p = hit + 5;
      }
      continue;
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
  su_arena_free(arena);
}
