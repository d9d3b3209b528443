/* The scanner: re2c matches a token at the cursor; comments and strings, whose errors
 * need care, are finished by hand. re2c's "sentinel with bounds checks" mode reads the NUL
 * at text[len] as end of input only when it is at len, so an embedded NUL is an ordinary
 * (invalid) byte and the scanner never reads past the text. */
#include "lexer/lexer.h"

#include "include/tk.h"
#include "lexer/literal.h"

#include <ctype.h>
#include <string.h>

enum {
  MAX_ERRORS = 50, /* lexical errors reported per file: binary garbage must not flood */
  MAX_SHOWN = 32   /* bytes of a bad token quoted in a message */
};

struct lex_state {
  su_arena *arena;
  const su_source *src;
  su_diags *d;
  const unsigned char *cur;        /* the next byte to scan */
  const unsigned char *lim;        /* text + len: the NUL sentinel */
  const unsigned char *line_start; /* first byte of the current line */
  uint32_t line;
  int nerrors;
};

lex_state *lex_new(su_arena *a, const su_source *src, su_diags *d) {
  lex_state *l = SU_NEW(a, lex_state);
  l->arena = a;
  l->src = src;
  l->d = d;
  l->cur = l->line_start = (const unsigned char *)src->text;
  l->lim = l->cur + src->len;
  l->line = 1;
  if (src->len >= UINT32_MAX) {
    /* Locations are 32-bit; a 4 GiB source is refused rather than mislocated. */
    su_error(d, (su_loc){src, 0, 0, 1, 1}, "source file is too large");
    l->cur = l->lim;
  }
  return l;
}

/* The location of the bytes [s, e) on the current line. */
static su_loc loc_of(const lex_state *l, const unsigned char *s, const unsigned char *e) {
  const unsigned char *text = (const unsigned char *)l->src->text;
  return (su_loc){l->src, (uint32_t)(s - text), (uint32_t)(e - s), l->line,
                  (uint32_t)(s - l->line_start + 1)};
}

static void newline(lex_state *l, const unsigned char *nl) {
  l->line++;
  l->line_start = nl + 1;
}

__attribute__((format(printf, 3, 4))) static void error(lex_state *l, su_loc loc, const char *fmt,
                                                        ...) {
  if (++l->nerrors > MAX_ERRORS) return;
  va_list ap;
  va_start(ap, fmt);
  su_verror(l->d, loc, fmt, ap);
  va_end(ap);
  if (l->nerrors == MAX_ERRORS) su_note(l->d, loc, "further lexical errors are not reported");
}

static lex_token token(const lex_state *l, lex_kind k, const unsigned char *s) {
  return (lex_token){.kind = k, .loc = loc_of(l, s, l->cur)};
}

/* Skips a block comment whose opening starts at s (the cursor is after it). Not nested. */
static void block_comment(lex_state *l, const unsigned char *s) {
  su_loc open = loc_of(l, s, s + 2);
  for (const unsigned char *p = l->cur; p < l->lim; p++) {
    if (*p == '\n') newline(l, p);
    if (p[0] == '*' && p + 1 < l->lim && p[1] == '/') {
      l->cur = p + 2;
      return;
    }
  }
  l->cur = l->lim;
  error(l, open, "unterminated comment");
}

/* Scans a string literal whose '"' is at s (the cursor is after it). A string ends at its
 * line: a newline or the end of the text before the closing quote is an error. */
static lex_token string(lex_state *l, const unsigned char *s) {
  bool ok = true;
  const unsigned char *p = l->cur;
  for (; p < l->lim && *p != '"' && *p != '\n'; p++) {
    if (*p == 0) {
      error(l, loc_of(l, p, p + 1), "invalid character '\\x00' in string literal");
      ok = false;
    }
    if (*p != '\\' || p + 1 >= l->lim || p[1] == '\n') continue;
    p++;
    if (*p == 'x') {
      if (p + 2 < l->lim && isxdigit(p[1]) && isxdigit(p[2])) {
        p += 2;
        continue;
      }
      error(l, loc_of(l, p - 1, p + 1), "\\x escape needs two hex digits");
      ok = false;
    } else if (!strchr("nt\\\"0", *p) || *p == 0) {
      if (*p >= 32 && *p < 127)
        error(l, loc_of(l, p - 1, p + 1), "unknown escape sequence '\\%c'", *p);
      else
        error(l, loc_of(l, p - 1, p + 1), "invalid byte '\\x%02X' after '\\' in string literal", *p);
      ok = false;
    }
  }
  if (p < l->lim && *p == '"') {
    l->cur = p + 1;
    return token(l, ok ? TOK_STRING : TOK_ERROR, s);
  }
  l->cur = p;
  lex_token t = token(l, TOK_ERROR, s);
  error(l, t.loc, "unterminated string literal");
  return t;
}

static lex_token integer(lex_state *l, const unsigned char *s) {
  lex_token t = token(l, TOK_INT, s);
  if (!lex_int_value((const char *)s, t.loc.len, &t.ival)) {
    error(l, t.loc, "integer literal is too large");
    t.kind = TOK_ERROR;
  }
  return t;
}

static lex_token floating(lex_state *l, const unsigned char *s) {
  lex_token t = token(l, TOK_FLOAT, s);
  t.fval = lex_float_value(l->arena, (const char *)s, t.loc.len);
  return t;
}

static lex_token type_keyword(lex_state *l, const unsigned char *s, tk_dtype dt) {
  lex_token t = token(l, TOK_TYPE, s);
  t.ival = (uint64_t)dt;
  return t;
}

/* A stray byte. A UTF-8 sequence is reported once, as its bytes. */
static lex_token invalid(lex_state *l, const unsigned char *s) {
  if (*s >= 0xc0)
    while (l->cur < l->lim && l->cur - s < 4 && (*l->cur & 0xc0) == 0x80) l->cur++;
  lex_token t = token(l, TOK_ERROR, s);
  if (*s > 32 && *s < 127) {
    error(l, t.loc, "invalid character '%c'", *s);
  } else {
    char buf[4 * 4 + 1];
    for (uint32_t i = 0; i < t.loc.len; i++) snprintf(buf + 4 * i, 5, "\\x%02X", s[i]);
    error(l, t.loc, "invalid character '%s'", buf);
  }
  return t;
}

/* A number spelling that is no number: "0x", "0b102", "12abc". */
static lex_token bad_number(lex_state *l, const unsigned char *s) {
  lex_token t = token(l, TOK_ERROR, s);
  int n = t.loc.len > MAX_SHOWN ? MAX_SHOWN : (int)t.loc.len;
  error(l, t.loc, "invalid number literal '%.*s%s'", n, (const char *)s,
        t.loc.len > MAX_SHOWN ? "..." : "");
  return t;
}

lex_token lex_next(lex_state *l) {
  const unsigned char *mar = NULL, *ctx = NULL;
  for (;;) {
    const unsigned char *s = l->cur;
#define T(k) return token(l, TOK_##k, s)
    /*!re2c
      re2c:define:YYCTYPE = "unsigned char";
      re2c:define:YYCURSOR = "l->cur";
      re2c:define:YYLIMIT = "l->lim";
      re2c:define:YYMARKER = mar;
      re2c:define:YYCTXMARKER = ctx;
      re2c:yyfill:enable = 0;
      re2c:eof = 0;

      ident  = [A-Za-z_][A-Za-z0-9_]*;
      dec    = [0-9]+ ("_" [0-9]+)*;
      hex    = "0" [xX] [0-9a-fA-F]+ ("_" [0-9a-fA-F]+)*;
      bin    = "0" [bB] [01]+ ("_" [01]+)*;
      exp    = [eE] [+-]? [0-9]+;
      float  = dec "." [0-9]* exp? | "." [0-9]+ exp? | dec exp;
      typekw = "i1" | "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64"
             | "f16" | "bf16" | "f32" | "f64" | "f8e4m3" | "f8e5m2" | "bool";

      $ { return token(l, TOK_EOF, s); }
      [ \t\r]+ { continue; }
      "\n" { newline(l, s); continue; }
      "//" [^\n]* { continue; }
      "/*" { block_comment(l, s); continue; }
      ["] { return string(l, s); }

      "kernel" { T(KERNEL); }
      "fn" { T(FN); }
      "let" { T(LET); }
      "var" { T(VAR); }
      "for" { T(FOR); }
      "in" { T(IN); }
      "if" { T(IF); }
      "else" { T(ELSE); }
      "return" { T(RETURN); }
      "as" { T(AS); }
      "true" { T(TRUE); }
      "false" { T(FALSE); }
      "None" { T(NONE); }
      "const" { T(CONST); }
      "while" { T(WHILE); }
      "break" { T(BREAK); }
      "continue" { T(CONTINUE); }

      "i1" { return type_keyword(l, s, TK_I1); }
      "bool" { return type_keyword(l, s, TK_I1); }
      "i8" { return type_keyword(l, s, TK_I8); }
      "i16" { return type_keyword(l, s, TK_I16); }
      "i32" { return type_keyword(l, s, TK_I32); }
      "i64" { return type_keyword(l, s, TK_I64); }
      "u8" { return type_keyword(l, s, TK_U8); }
      "u16" { return type_keyword(l, s, TK_U16); }
      "u32" { return type_keyword(l, s, TK_U32); }
      "u64" { return type_keyword(l, s, TK_U64); }
      "f16" { return type_keyword(l, s, TK_F16); }
      "bf16" { return type_keyword(l, s, TK_BF16); }
      "f32" { return type_keyword(l, s, TK_F32); }
      "f64" { return type_keyword(l, s, TK_F64); }
      "f8e4m3" { return type_keyword(l, s, TK_F8E4M3); }
      "f8e5m2" { return type_keyword(l, s, TK_F8E5M2); }

      ident { T(IDENT); }
      dec | hex | bin { return integer(l, s); }
      float { return floating(l, s); }
      [0-9] [0-9A-Za-z_]* { return bad_number(l, s); }

      "<" / [ \t]* typekw [^A-Za-z0-9_] { T(LT_TYPE); }
      /* zeros<T>(...) with T a dtype parameter: read as comparisons, `a < T > (...)` would
       * be a chain, which is an error anyway */
      "<" / [ \t]* ident [ \t]* ">" [ \t]* "(" { T(LT_TYPE); }

      "(" { T(LPAREN); }
      ")" { T(RPAREN); }
      "[" { T(LBRACKET); }
      "]" { T(RBRACKET); }
      "{" { T(LBRACE); }
      "}" { T(RBRACE); }
      "," { T(COMMA); }
      ":" { T(COLON); }
      ";" { T(SEMI); }
      "." { T(DOT); }
      "@" { T(AT); }
      "->" { T(ARROW); }
      "=" { T(ASSIGN); }
      "+=" { T(PLUS_ASSIGN); }
      "-=" { T(MINUS_ASSIGN); }
      "*=" { T(STAR_ASSIGN); }
      "/=" { T(SLASH_ASSIGN); }
      "+" { T(PLUS); }
      "-" { T(MINUS); }
      "*" { T(STAR); }
      "**" { T(STARSTAR); }
      "/" { T(SLASH); }
      "%" { T(PERCENT); }
      "&" { T(AMP); }
      "|" { T(PIPE); }
      "^" { T(CARET); }
      "~" { T(TILDE); }
      "!" { T(BANG); }
      "<<" { T(SHL); }
      ">>" { T(SHR); }
      "&&" { T(ANDAND); }
      "||" { T(OROR); }
      "==" { T(EQ); }
      "!=" { T(NE); }
      "<" { T(LT); }
      "<=" { T(LE); }
      ">" { T(GT); }
      ">=" { T(GE); }

      * { return invalid(l, s); }
    */
#undef T
  }
}
