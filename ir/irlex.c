/* Tokenizer of the IR text form. Hand-written: the token set is small, and the one
 * context-dependent token (a tile dimension "128x", which must not swallow the "x64xf32"
 * that follows) is easier to express here than in a generated scanner. */
#include "irlex.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void irlex_init(irlex *lx, su_arena *a, const su_source *src) {
  memset(lx, 0, sizeof *lx);
  lx->arena = a;
  lx->src = src;
  lx->line = 1;
}

static int peekc(const irlex *lx, size_t ahead) {
  size_t p = lx->pos + ahead;
  return p < lx->src->len ? (unsigned char)lx->src->text[p] : -1;
}

static void advance(irlex *lx) {
  if (peekc(lx, 0) == '\n') {
    lx->line++;
    lx->line_start = lx->pos + 1;
  }
  lx->pos++;
}

static su_loc here(const irlex *lx) {
  su_loc l = {lx->src, (uint32_t)lx->pos, 0, lx->line, (uint32_t)(lx->pos - lx->line_start + 1)};
  return l;
}

static bool is_word(int c) { return c >= 0 && (isalnum(c) || c == '_' || c == '.'); }

static irtok error_tok(irtok t, const char *msg) {
  t.kind = IRT_ERROR;
  t.text = msg;
  t.len = strlen(msg);
  return t;
}

/* Skips whitespace and comments. Returns false at an unterminated block comment. A block
 * comment holding exactly one identifier is a name hint and is left for the caller. */
static bool skip_space(irlex *lx) {
  for (;;) {
    int c = peekc(lx, 0);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance(lx);
    } else if (c == '/' && peekc(lx, 1) == '/') {
      while (peekc(lx, 0) != -1 && peekc(lx, 0) != '\n') advance(lx);
    } else if (c == '/' && peekc(lx, 1) == '*') {
      size_t i = 2;
      bool ident = isalpha(peekc(lx, 2)) || peekc(lx, 2) == '_';
      while (peekc(lx, i) != -1 && !(peekc(lx, i) == '*' && peekc(lx, i + 1) == '/')) {
        int d = peekc(lx, i);
        if (!(isalnum(d) || d == '_')) ident = false;
        i++;
      }
      if (peekc(lx, i) == -1) return false;
      if (ident) return true;
      for (size_t k = 0; k < i + 2; k++) advance(lx);
    } else {
      return true;
    }
  }
}

/* Decodes a string literal; the opening quote is the current char. */
static irtok lex_string(irlex *lx, irtok t) {
  su_buf b = {0};
  advance(lx);
  const char *err = NULL;
  for (;;) {
    int c = peekc(lx, 0);
    if (c == -1 || c == '\n') {
      err = "unterminated string";
      break;
    }
    advance(lx);
    if (c == '"') break;
    if (c != '\\') {
      char ch = (char)c;
      su_buf_put(&b, &ch, 1);
      continue;
    }
    int e = peekc(lx, 0);
    char ch = 0;
    if (e == 'n') ch = '\n';
    else if (e == 't') ch = '\t';
    else if (e == '"' || e == '\\') ch = (char)e;
    else if (e == 'x' && isxdigit(peekc(lx, 1)) && isxdigit(peekc(lx, 2))) {
      char hex[3] = {(char)peekc(lx, 1), (char)peekc(lx, 2), 0};
      ch = (char)strtol(hex, NULL, 16);
      advance(lx);
      advance(lx);
      if (!ch) {
        err = "\\x00 is not allowed in a string";
        break;
      }
    } else {
      err = "bad escape in string";
      break;
    }
    advance(lx);
    su_buf_put(&b, &ch, 1);
  }
  t.text = su_strndup(lx->arena, b.data ? b.data : "", b.len);
  t.len = b.len;
  su_buf_free(&b);
  t.loc.len = (uint32_t)(lx->pos - t.loc.off);
  return err ? error_tok(t, err) : t;
}

/* A number: [-]digits[.digits][e[+-]digits], or [-]inf. Digits followed by 'x' form a
 * tile dimension. */
static irtok lex_number(irlex *lx, irtok t) {
  size_t start = lx->pos;
  if (peekc(lx, 0) == '-') advance(lx);
  if (peekc(lx, 0) == 'i') {
    for (int i = 0; i < 3; i++) advance(lx); /* "inf", checked by the caller */
    t.kind = IRT_FLOAT;
  } else {
    t.kind = IRT_INT;
    while (isdigit(peekc(lx, 0))) advance(lx);
    if (peekc(lx, 0) == 'x' && lx->src->text[start] != '-') {
      t.kind = IRT_DIM;
      t.text = lx->src->text + start;
      t.len = lx->pos - start;
      advance(lx);
      t.loc.len = (uint32_t)(lx->pos - start);
      return t;
    }
    if (peekc(lx, 0) == '.' && isdigit(peekc(lx, 1))) {
      t.kind = IRT_FLOAT;
      advance(lx);
      while (isdigit(peekc(lx, 0))) advance(lx);
    }
    if (peekc(lx, 0) == 'e' || peekc(lx, 0) == 'E') {
      size_t k = 1;
      if (peekc(lx, k) == '+' || peekc(lx, k) == '-') k++;
      if (isdigit(peekc(lx, k))) {
        t.kind = IRT_FLOAT;
        while (k--) advance(lx);
        while (isdigit(peekc(lx, 0))) advance(lx);
      }
    }
  }
  t.text = lx->src->text + start;
  t.len = lx->pos - start;
  t.loc.len = (uint32_t)t.len;
  if (is_word(peekc(lx, 0))) return error_tok(t, "malformed number");
  return t;
}

static size_t word_len(const irlex *lx, size_t from) {
  size_t n = 0;
  while (is_word(peekc(lx, from + n))) n++;
  return n;
}

/* @3:13 (a location) or @name (a kernel). */
static irtok lex_at(irlex *lx, irtok t) {
  if (isdigit(peekc(lx, 1))) {
    size_t i = 1;
    uint64_t line = 0, col = 0;
    while (isdigit(peekc(lx, i)) && line < UINT32_MAX) line = line * 10 + (uint64_t)(peekc(lx, i++) - '0');
    if (peekc(lx, i) != ':' || !isdigit(peekc(lx, i + 1))) {
      for (size_t k = 0; k < i; k++) advance(lx);
      return error_tok(t, "malformed location (expected @LINE:COL)");
    }
    i++;
    while (isdigit(peekc(lx, i)) && col < UINT32_MAX) col = col * 10 + (uint64_t)(peekc(lx, i++) - '0');
    for (size_t k = 0; k < i; k++) advance(lx);
    if (line > UINT32_MAX || col > UINT32_MAX || isdigit(peekc(lx, 0)))
      return error_tok(t, "location out of range");
    t.kind = IRT_LOC;
    t.line = (uint32_t)line;
    t.col = (uint32_t)col;
    t.loc.len = (uint32_t)i;
    return t;
  }
  size_t n = word_len(lx, 1);
  if (n == 0) {
    advance(lx);
    t.kind = IRT_PUNCT;
    t.text = "@";
    t.len = 1;
    t.loc.len = 1;
    return t;
  }
  t.kind = IRT_GLOBAL;
  t.text = lx->src->text + lx->pos + 1;
  t.len = n;
  t.loc.len = (uint32_t)n + 1;
  for (size_t k = 0; k < n + 1; k++) advance(lx);
  return t;
}

irtok irlex_next(irlex *lx) {
  irtok t;
  memset(&t, 0, sizeof t);
  bool ok = skip_space(lx);
  t.loc = here(lx);
  if (!ok) {
    lx->pos = lx->src->len;
    return error_tok(t, "unterminated comment");
  }
  int c = peekc(lx, 0);
  if (c == -1) {
    t.kind = IRT_EOF;
    return t;
  }
  if (c == '/' && peekc(lx, 1) == '*') { /* a name hint, vetted by skip_space */
    size_t n = word_len(lx, 2);
    t.kind = IRT_HINT;
    t.text = lx->src->text + lx->pos + 2;
    t.len = n;
    t.loc.len = (uint32_t)n + 4;
    for (size_t k = 0; k < n + 4; k++) advance(lx);
    return t;
  }
  if (c == '"') {
    t.kind = IRT_STRING;
    return lex_string(lx, t);
  }
  if (isdigit(c) || (c == '-' && (isdigit(peekc(lx, 1)) ||
                                  (peekc(lx, 1) == 'i' && peekc(lx, 2) == 'n' && peekc(lx, 3) == 'f'))))
    return lex_number(lx, t);
  if (c == '@') return lex_at(lx, t);
  if (c == '%') {
    size_t n = word_len(lx, 1);
    advance(lx);
    if (n == 0) return error_tok(t, "expected a value name after '%'");
    t.kind = IRT_VALUE;
    t.text = lx->src->text + lx->pos;
    t.len = n;
    t.loc.len = (uint32_t)n + 1;
    for (size_t k = 0; k < n; k++) advance(lx);
    return t;
  }
  if (isalpha(c) || c == '_') {
    t.kind = IRT_IDENT;
    t.text = lx->src->text + lx->pos;
    t.len = word_len(lx, 0);
    t.loc.len = (uint32_t)t.len;
    for (size_t k = 0; k < t.len; k++) advance(lx);
    if ((t.len == 3 && (memcmp(t.text, "inf", 3) == 0 || memcmp(t.text, "nan", 3) == 0)))
      t.kind = IRT_FLOAT;
    return t;
  }
  if (strchr("(){}[]<>,:=^#", c)) {
    t.kind = IRT_PUNCT;
    t.text = lx->src->text + lx->pos;
    t.len = 1;
    t.loc.len = 1;
    advance(lx);
    return t;
  }
  advance(lx);
  t.loc.len = 1;
  return error_tok(t, "unexpected character");
}
