/* Unit tests for lexer/: token kinds, keywords, type keywords, '<' before types, number,
 * string and comment spelling, errors with their exact locations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../include/tk.h"
#include "../../lexer/lexer.h"

enum { MAX_TOKS = 256 };

/* One lexed text: its tokens up to and including EOF and the diagnostics. */
typedef struct {
  su_arena *a;
  su_diags d;
  su_source *src;
  lex_token t[MAX_TOKS];
  int n;
} lexed;

static lexed *lex_text(const char *text, size_t len) {
  lexed *x = calloc(1, sizeof *x);
  x->a = su_arena_new();
  su_diags_init(&x->d, x->a, NULL);
  x->src = su_source_new(x->a, "t.tk", text, len);
  lex_state *l = lex_new(x->a, x->src, &x->d);
  do {
    assert_true(x->n < MAX_TOKS);
    x->t[x->n] = lex_next(l);
  } while (x->t[x->n++].kind != TOK_EOF);
  return x;
}

static lexed *lex_str(const char *text) { return lex_text(text, strlen(text)); }

static void done(lexed *x) {
  su_arena_free(x->a);
  free(x);
}

/* The text of token i. */
static const char *text_of(lexed *x, int i) {
  return su_strndup(x->a, x->src->text + x->t[i].loc.off, x->t[i].loc.len);
}

static void assert_kinds(const char *text, const lex_kind *kinds, int n) {
  lexed *x = lex_str(text);
  assert_int_equal(x->n, n + 1);
  for (int i = 0; i < n; i++) assert_int_equal(x->t[i].kind, kinds[i]);
  assert_int_equal(x->t[n].kind, TOK_EOF);
  assert_int_equal(x->d.nerrors, 0);
  done(x);
}

/* "line:col: msg" of the first diagnostic. */
static const char *first_error(lexed *x) {
  assert_non_null(x->d.first);
  return su_fmt(x->a, "%u:%u: %s", x->d.first->loc.line, x->d.first->loc.col, x->d.first->msg);
}

static void test_punctuation(void **state) {
  (void)state;
  const char *text = "( ) [ ] { } , : ; . @ -> = += -= *= /= + - * / % & | ^ ~ ! << >> && || "
                     "== != < <= > >=";
  const lex_kind kinds[] = {
      TOK_LPAREN,       TOK_RPAREN,       TOK_LBRACKET,  TOK_RBRACKET,     TOK_LBRACE,
      TOK_RBRACE,       TOK_COMMA,        TOK_COLON,     TOK_SEMI,         TOK_DOT,
      TOK_AT,           TOK_ARROW,        TOK_ASSIGN,    TOK_PLUS_ASSIGN,  TOK_MINUS_ASSIGN,
      TOK_STAR_ASSIGN,  TOK_SLASH_ASSIGN, TOK_PLUS,      TOK_MINUS,        TOK_STAR,
      TOK_SLASH,        TOK_PERCENT,      TOK_AMP,       TOK_PIPE,         TOK_CARET,
      TOK_TILDE,        TOK_BANG,         TOK_SHL,       TOK_SHR,          TOK_ANDAND,
      TOK_OROR,         TOK_EQ,           TOK_NE,        TOK_LT,           TOK_LE,
      TOK_GT,           TOK_GE};
  assert_kinds(text, kinds, sizeof kinds / sizeof kinds[0]);
  /* Without spaces the longest operator wins. */
  const lex_kind tight[] = {TOK_SHL, TOK_ASSIGN, TOK_ARROW, TOK_GT, TOK_MINUS, TOK_MINUS,
                            TOK_LE,  TOK_EQ,     TOK_BANG,  TOK_NE};
  assert_kinds("<<=->>--<===!!=", tight, sizeof tight / sizeof tight[0]);
  const lex_kind stars[] = {TOK_STARSTAR, TOK_STAR_ASSIGN, TOK_STARSTAR, TOK_STAR};
  assert_kinds("***=***", stars, sizeof stars / sizeof stars[0]);
  /* Every kind has a name for messages. */
  for (int k = 0; k < TOK_COUNT; k++) assert_true(strlen(lex_kind_name((lex_kind)k)) > 0);
  assert_string_equal(lex_kind_name(TOK_ARROW), "->");
  assert_string_equal(lex_kind_name(TOK_IDENT), "identifier");
}

static void test_keywords_and_identifiers(void **state) {
  (void)state;
  const lex_kind kinds[] = {TOK_KERNEL, TOK_FN,    TOK_LET,  TOK_VAR,    TOK_FOR,
                            TOK_IN,     TOK_IF,    TOK_ELSE, TOK_RETURN, TOK_AS,
                            TOK_TRUE,   TOK_FALSE, TOK_NONE, TOK_CONST};
  assert_kinds("kernel fn let var for in if else return as true false None const", kinds,
               sizeof kinds / sizeof kinds[0]);
  /* A keyword inside a longer name is a name; keywords are case-sensitive. */
  lexed *x = lex_str("kernels _let none iff fn2 x_1 Kernel _ inf");
  for (int i = 0; i < x->n - 1; i++) assert_int_equal(x->t[i].kind, TOK_IDENT);
  assert_int_equal(x->n, 10);
  assert_string_equal(text_of(x, 0), "kernels");
  assert_string_equal(text_of(x, 8), "inf");
  done(x);
}

static void test_type_keywords(void **state) {
  (void)state;
  lexed *x = lex_str("i1 i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64 bool i128 f32x");
  const tk_dtype want[] = {TK_I1,  TK_I8,  TK_I16,  TK_I32, TK_I64, TK_U8,  TK_U16,
                           TK_U32, TK_U64, TK_F16, TK_BF16, TK_F32, TK_F64, TK_I1};
  for (int i = 0; i < 14; i++) {
    assert_int_equal(x->t[i].kind, TOK_TYPE);
    assert_int_equal(x->t[i].ival, want[i]);
  }
  assert_int_equal(x->t[14].kind, TOK_IDENT); /* i128 is no type */
  assert_int_equal(x->t[15].kind, TOK_IDENT);
  assert_string_equal(lex_dtype_name(TK_BF16), "bf16");
  assert_string_equal(lex_dtype_name(TK_I1), "i1");
  done(x);
}

static void test_lt_before_type(void **state) {
  (void)state;
  lexed *x = lex_str("zeros<f32>(a <  i64) b<c x<i32x y <bool, z< u8\n");
  assert_int_equal(x->t[1].kind, TOK_LT_TYPE);
  assert_int_equal(x->t[1].loc.len, 1);
  assert_int_equal(x->t[2].kind, TOK_TYPE); /* the type is its own token after it */
  assert_int_equal(x->t[3].kind, TOK_GT);
  assert_int_equal(x->t[6].kind, TOK_LT_TYPE); /* spaces allowed */
  assert_int_equal(x->t[7].kind, TOK_TYPE);
  assert_int_equal(x->t[10].kind, TOK_LT); /* b<c: a name follows */
  assert_int_equal(x->t[13].kind, TOK_LT); /* x<i32x: a name that starts like a type */
  assert_int_equal(x->t[16].kind, TOK_LT_TYPE);
  assert_int_equal(x->t[20].kind, TOK_LT_TYPE);
  assert_int_equal(x->t[21].ival, TK_U8);
  done(x);
  /* At the very end there is no character after the type: a plain '<'. */
  x = lex_str("x<f32");
  assert_int_equal(x->t[1].kind, TOK_LT);
  assert_int_equal(x->t[2].kind, TOK_TYPE);
  done(x);
  /* A name between '<' and '>(' is a dtype parameter's type argument; without the '(' (or
   * with '>>', '>=') it is a comparison. */
  x = lex_str("zeros<T>(4) full< T > (1) a<b>c a<b>>(c) a<b>=(c)");
  assert_int_equal(x->t[1].kind, TOK_LT_TYPE);
  assert_int_equal(x->t[2].kind, TOK_IDENT);
  assert_int_equal(x->t[8].kind, TOK_LT_TYPE);
  assert_int_equal(x->t[15].kind, TOK_LT);  /* a<b>c */
  assert_int_equal(x->t[20].kind, TOK_LT);  /* a<b>>(c) */
  assert_int_equal(x->t[21].kind, TOK_IDENT);
  assert_int_equal(x->t[22].kind, TOK_SHR);
  assert_int_equal(x->t[27].kind, TOK_LT);  /* a<b>=(c) */
  done(x);
}

static void test_integers(void **state) {
  (void)state;
  lexed *x = lex_str("0 123 1_000_000 0x7f 0XFF_FF 0b101 0B1_0 18446744073709551615 "
                     "0xffff_ffff_ffff_ffff");
  const uint64_t want[] = {0, 123, 1000000, 0x7f, 0xffff, 5, 2, UINT64_MAX, UINT64_MAX};
  for (int i = 0; i < 9; i++) {
    assert_int_equal(x->t[i].kind, TOK_INT);
    assert_true(x->t[i].ival == want[i]);
  }
  assert_int_equal(x->d.nerrors, 0);
  assert_string_equal(text_of(x, 2), "1_000_000");
  done(x);

  x = lex_str("let a = 18446744073709551616;\n0x1_0000_0000_0000_0000 7");
  assert_int_equal(x->t[3].kind, TOK_ERROR);
  assert_string_equal(first_error(x), "1:9: integer literal is too large");
  assert_int_equal(x->d.nerrors, 2);
  assert_int_equal(x->d.first->next->loc.line, 2);
  assert_int_equal(x->t[6].kind, TOK_INT); /* lexing goes on */
  assert_int_equal(x->t[6].ival, 7);
  done(x);

  x = lex_str("x 0b102 12ab");
  assert_int_equal(x->t[1].kind, TOK_ERROR);
  assert_string_equal(first_error(x), "1:3: invalid number literal '0b102'");
  assert_int_equal(x->t[2].kind, TOK_ERROR);
  assert_int_equal(x->d.nerrors, 2);
  done(x);
}

static void test_floats(void **state) {
  (void)state;
  lexed *x = lex_str("1.0 .5 1e-3 2.5e+4 1. 3E2 1_000.5");
  const double want[] = {1.0, 0.5, 1e-3, 2.5e4, 1.0, 300.0, 1000.5};
  for (int i = 0; i < 7; i++) {
    assert_int_equal(x->t[i].kind, TOK_FLOAT);
    assert_true(x->t[i].fval == want[i]);
  }
  assert_int_equal(x->d.nerrors, 0);
  done(x);
  /* A '.' not followed by a digit is punctuation; '1.x' is a float then a name. */
  const lex_kind k[] = {TOK_IDENT, TOK_DOT, TOK_IDENT, TOK_FLOAT, TOK_IDENT};
  assert_kinds("a.b 1.x", k, 5);
}

static void test_strings(void **state) {
  (void)state;
  lexed *x = lex_str("\"a\\nb\\t\\\\\\\"\\x41\\0z\" \"\"");
  assert_int_equal(x->t[0].kind, TOK_STRING);
  assert_int_equal(x->d.nerrors, 0);
  const char *v = lex_string_value(x->a, &x->t[0]);
  assert_memory_equal(v, "a\nb\t\\\"A\0z", 10);
  assert_int_equal(x->t[1].kind, TOK_STRING);
  assert_string_equal(lex_string_value(x->a, &x->t[1]), "");
  done(x);

  /* Unterminated: at the end of the line, located at the opening quote. */
  x = lex_str("f(\"abc\n  x)");
  assert_int_equal(x->t[2].kind, TOK_ERROR);
  assert_string_equal(first_error(x), "1:3: unterminated string literal");
  assert_int_equal(x->t[3].kind, TOK_IDENT);
  assert_int_equal(x->t[3].loc.line, 2);
  assert_int_equal(x->t[3].loc.col, 3);
  done(x);

  x = lex_str("\"abc");
  assert_string_equal(first_error(x), "1:1: unterminated string literal");
  done(x);

  x = lex_str("\"a\\qb\" \"\\x4\"");
  assert_string_equal(first_error(x), "1:3: unknown escape sequence '\\q'");
  assert_string_equal(x->d.first->next->msg, "\\x escape needs two hex digits");
  assert_int_equal(x->t[0].kind, TOK_ERROR);
  done(x);
}

static void test_comments(void **state) {
  (void)state;
  const lex_kind k[] = {TOK_IDENT, TOK_IDENT, TOK_IDENT, TOK_SLASH, TOK_IDENT};
  assert_kinds("a // b c\n b /* c \n d */ e / f", k, 5);
  lexed *x = lex_str("a /* x\n y */ b");
  assert_int_equal(x->t[1].loc.line, 2);
  assert_int_equal(x->t[1].loc.col, 7);
  done(x);

  x = lex_str("a\n  b /* never\n closed");
  assert_int_equal(x->n, 3);
  assert_string_equal(first_error(x), "2:5: unterminated comment");
  assert_int_equal(x->d.first->loc.len, 2);
  done(x);

  /* Comments do not nest: the first close ends it. */
  const lex_kind k2[] = {TOK_IDENT, TOK_STAR, TOK_SLASH};
  assert_kinds("/* /* */ x */", k2, 3);
}

static void test_invalid_characters(void **state) {
  (void)state;
  lexed *x = lex_str("a $ b\n`\x01 \xc3\xa9" "c");
  assert_string_equal(first_error(x), "1:3: invalid character '$'");
  const su_diag *g = x->d.first->next;
  assert_string_equal(g->msg, "invalid character '`'");
  assert_int_equal(g->loc.line, 2);
  assert_int_equal(g->loc.col, 1);
  assert_string_equal(g->next->msg, "invalid character '\\x01'");
  assert_string_equal(g->next->next->msg, "invalid character '\\xC3\\xA9'"); /* one report */
  assert_int_equal(x->d.nerrors, 4);
  assert_int_equal(x->t[0].kind, TOK_IDENT);
  assert_int_equal(x->t[1].kind, TOK_ERROR);
  assert_int_equal(x->t[2].kind, TOK_IDENT);
  assert_int_equal(x->t[6].kind, TOK_IDENT); /* 'c' right after the UTF-8 bytes */
  assert_int_equal(x->t[6].loc.col, 6);
  done(x);
}

static void test_embedded_nul(void **state) {
  (void)state;
  /* A NUL inside the text does not end it: it is an error and lexing goes on. */
  lexed *x = lex_text("a\0b // c\0\n\"s\0\" d", 16);
  assert_string_equal(first_error(x), "1:2: invalid character '\\x00'");
  assert_int_equal(x->t[0].kind, TOK_IDENT);
  assert_int_equal(x->t[1].kind, TOK_ERROR);
  assert_int_equal(x->t[2].kind, TOK_IDENT);
  assert_int_equal(x->t[3].kind, TOK_ERROR); /* the string with a NUL in it */
  assert_int_equal(x->t[4].kind, TOK_IDENT);
  assert_int_equal(x->t[4].loc.line, 2);
  assert_int_equal(x->t[5].kind, TOK_EOF);
  assert_int_equal(x->d.nerrors, 2);
  done(x);
}

static void test_locations(void **state) {
  (void)state;
  lexed *x = lex_str("kernel k\n\tlet  x =\r\n  42;");
  assert_int_equal(x->t[0].loc.line, 1);
  assert_int_equal(x->t[0].loc.col, 1);
  assert_int_equal(x->t[0].loc.len, 6);
  assert_int_equal(x->t[1].loc.col, 8);
  assert_int_equal(x->t[2].loc.line, 2); /* a tab counts one column */
  assert_int_equal(x->t[2].loc.col, 2);
  assert_int_equal(x->t[3].loc.col, 7);
  assert_int_equal(x->t[5].loc.line, 3);
  assert_int_equal(x->t[5].loc.col, 3);
  assert_int_equal(x->t[5].loc.off, 22);
  assert_int_equal(x->t[6].loc.col, 5);
  assert_int_equal(x->t[7].kind, TOK_EOF);
  assert_int_equal(x->t[7].loc.line, 3);
  assert_int_equal(x->t[7].loc.col, 6);
  assert_int_equal(x->t[7].loc.len, 0);
  done(x);
}

static void test_eof_forever_and_empty(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  lex_state *l = lex_new(a, su_source_new(a, "e.tk", "", 0), &d);
  for (int i = 0; i < 3; i++) assert_int_equal(lex_next(l).kind, TOK_EOF);
  assert_int_equal(d.nerrors, 0);
  su_arena_free(a);
}

static void test_garbage_is_bounded(void **state) {
  (void)state;
  /* Binary garbage: errors stop being reported after a limit, lexing still ends. */
  enum { N = 5000 };
  char *buf = malloc(N);
  for (int i = 0; i < N; i++) buf[i] = (char)(i % 7 == 0 ? 0 : 0x80 + i % 60);
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  lex_state *l = lex_new(a, su_source_new(a, "g.tk", buf, N), &d);
  int n = 0;
  while (lex_next(l).kind != TOK_EOF) n++;
  assert_true(n > 50);
  assert_int_equal(d.nerrors, 50);
  assert_int_equal(d.last->sev, SU_NOTE);
  su_arena_free(a);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_punctuation),
      cmocka_unit_test(test_keywords_and_identifiers),
      cmocka_unit_test(test_type_keywords),
      cmocka_unit_test(test_lt_before_type),
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_floats),
      cmocka_unit_test(test_strings),
      cmocka_unit_test(test_comments),
      cmocka_unit_test(test_invalid_characters),
      cmocka_unit_test(test_embedded_nul),
      cmocka_unit_test(test_locations),
      cmocka_unit_test(test_eof_forever_and_empty),
      cmocka_unit_test(test_garbage_is_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
