/* Values of number literals. The scanner guarantees the spelling, so these only convert. */
#include "literal.h"

#include <stdlib.h>

static int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

bool lex_int_value(const char *s, size_t n, uint64_t *out) {
  uint64_t base = 10;
  size_t i = 0;
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, i = 2;
  if (n > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) base = 2, i = 2;
  uint64_t v = 0;
  for (; i < n; i++) {
    if (s[i] == '_') continue;
    uint64_t d = (uint64_t)digit_value(s[i]);
    SU_ASSERT(d < base);
    if (v > (UINT64_MAX - d) / base) return false;
    v = v * base + d;
  }
  *out = v;
  return true;
}

double lex_float_value(su_arena *a, const char *s, size_t n) {
  /* strtod wants a NUL-terminated spelling without separators. */
  char *buf = su_alloc(a, n + 1);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] != '_') buf[k++] = s[i];
  buf[k] = 0;
  return strtod(buf, NULL);
}
