/* Token kind names, type keyword spellings and the decoding of string literals. */
#include "lexer.h"

#include "../include/tk.h"

static const char *const kind_names[TOK_COUNT] = {
#define X(k, s) [TOK_##k] = s,
    LEX_TOKENS(X)
#undef X
};

const char *lex_kind_name(lex_kind k) {
  return (unsigned)k < TOK_COUNT ? kind_names[k] : "?";
}

const char *lex_dtype_name(int dtype) {
  static const char *const names[TK_NDTYPE] = {
      [TK_I1] = "i1",   [TK_I8] = "i8",   [TK_I16] = "i16", [TK_I32] = "i32",
      [TK_I64] = "i64", [TK_U8] = "u8",   [TK_U16] = "u16", [TK_U32] = "u32",
      [TK_U64] = "u64", [TK_F16] = "f16", [TK_BF16] = "bf16", [TK_F32] = "f32",
      [TK_F64] = "f64", [TK_PTR] = "ptr", [TK_F8E4M3] = "f8e4m3", [TK_F8E5M2] = "f8e5m2",
  };
  return dtype >= 0 && dtype < TK_NDTYPE ? names[dtype] : "?";
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

const char *lex_string_value(su_arena *a, const lex_token *t) {
  /* The token may be a malformed string the lexer already reported (no closing quote,
   * bad escape): decode what is there and never read outside the token. */
  const char *s = t->loc.src->text + t->loc.off;
  size_t n = t->loc.len;
  size_t from = n > 0 && s[0] == '"' ? 1 : 0;
  size_t to = n > from && s[n - 1] == '"' ? n - 1 : n;
  char *out = su_alloc(a, to - from + 1);
  size_t k = 0;
  for (size_t i = from; i < to; i++) {
    if (s[i] != '\\' || i + 1 >= to) {
      out[k++] = s[i];
      continue;
    }
    char e = s[++i];
    switch (e) {
    case 'n': out[k++] = '\n'; break;
    case 't': out[k++] = '\t'; break;
    case '0': out[k++] = '\0'; break;
    case 'x':
      if (i + 2 < to && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
        out[k++] = (char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
        i += 2;
      } else {
        out[k++] = 'x';
      }
      break;
    default: out[k++] = e; break; /* \\ and \" and anything already reported */
    }
  }
  out[k] = 0;
  return out;
}
