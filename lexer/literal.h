/*
 * Internal to lexer/: the values of number literals, once the scanner has matched their
 * spelling. Kept apart from the re2c source so the arithmetic is plain, testable C.
 */
#ifndef TK_LEXER_LITERAL_H
#define TK_LEXER_LITERAL_H

#include "../support/support.h"

/* The value of an integer literal (decimal, 0x hex or 0b binary, '_' separators) spelled
 * by the n bytes at s, which the scanner has already matched. Returns false when the value
 * does not fit in 64 bits. */
bool lex_int_value(const char *s, size_t n, uint64_t *out);

/* The value of a float literal spelled by the n bytes at s ('_' separators allowed in
 * its digit runs). Scratch space comes from a. */
double lex_float_value(su_arena *a, const char *s, size_t n);

#endif
