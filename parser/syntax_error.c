/* Syntax error messages in a C compiler's voice: "expected expression before ')'",
 * "unexpected identifier 'foo', expected ';'". The grammar hands over every token kind it
 * would have accepted; this file turns that set into the one or two the user most likely
 * meant. */
#include <string.h>

#include "build.h"

enum { MAX_QUOTED = 32 }; /* characters of an identifier or number quoted in a message */
enum { MAX_HEADER = 60 }; /* characters of a loop or if header quoted in a hint */

static bool starts_expression(lex_kind k) {
  switch (k) {
  case TOK_IDENT: case TOK_INT: case TOK_FLOAT: case TOK_STRING: case TOK_TRUE:
  case TOK_FALSE: case TOK_LPAREN: case TOK_MINUS: case TOK_PLUS: case TOK_BANG:
  case TOK_TILDE: case TOK_TYPE:
    return true;
  default:
    return false;
  }
}

static bool contains(const lex_kind *ks, int n, lex_kind k) {
  for (int i = 0; i < n; i++)
    if (ks[i] == k) return true;
  return false;
}

/* How the offending token reads in a message: "identifier 'foo'", "'}'", "end of file". */
static void describe(su_buf *b, const ps_state *ps) {
  const lex_token *t = &ps->look;
  const char *text = ps->src->text + t->loc.off;
  int n = t->loc.len > MAX_QUOTED ? MAX_QUOTED : (int)t->loc.len;
  const char *more = t->loc.len > MAX_QUOTED ? "..." : "";
  switch (t->kind) {
  case TOK_EOF: su_buf_puts(b, "end of file"); break;
  case TOK_IDENT: case TOK_INT: case TOK_FLOAT:
    su_buf_printf(b, "%s '%.*s%s'", lex_kind_name(t->kind), n, text, more);
    break;
  case TOK_STRING: case TOK_ERROR: su_buf_puts(b, lex_kind_name(t->kind)); break;
  case TOK_TYPE: su_buf_printf(b, "type '%.*s'", n, text); break;
  default: su_buf_printf(b, "'%s'", lex_kind_name(t->kind)); break;
  }
}

/* How an expected kind reads: "identifier", "';'". */
static void spell(su_buf *b, lex_kind k) {
  switch (k) {
  case TOK_IDENT: case TOK_INT: case TOK_FLOAT: case TOK_STRING: su_buf_puts(b, lex_kind_name(k)); break;
  case TOK_TYPE: su_buf_puts(b, "type"); break;
  default: su_buf_printf(b, "'%s'", lex_kind_name(k)); break;
  }
}

/* "a", "a or b", "a, b or c". */
static void spell_list(su_buf *b, const lex_kind *ks, int n) {
  for (int i = 0; i < n; i++) {
    if (i) su_buf_puts(b, i == n - 1 ? " or " : ", ");
    spell(b, ks[i]);
  }
}

/* An identifier is a type where a type goes (a dtype parameter's name), so in
 * `x: tl.constexpr` or `x: tile<16 x f32>` the parser stops only at the '.' or '<' after
 * it. Where one of those follows an identifier and is not acceptable — in an expression
 * both always are — and what the parser wants is what ends a type (and no ':', which a
 * name being declared would take), the identifier was meant as a type: the message is
 * about it. */
static bool after_type_name(const ps_state *ps, const lex_kind *expected, int n) {
  if (ps->prev.kind != TOK_IDENT || (ps->look.kind != TOK_DOT && ps->look.kind != TOK_LT))
    return false;
  if (contains(expected, n, TOK_COLON)) return false;
  static const lex_kind enders[] = {TOK_RPAREN, TOK_COMMA, TOK_ASSIGN, TOK_LBRACE, TOK_GT};
  for (size_t i = 0; i < sizeof enders / sizeof enders[0]; i++)
    if (contains(expected, n, enders[i])) return true;
  return false;
}

static bool is_module_name(const lex_token *t, const char *text) {
  return t->kind == TOK_IDENT && ((t->loc.len == 2 && memcmp(text, "tl", 2) == 0) ||
                                  (t->loc.len == 6 && memcmp(text, "triton", 6) == 0));
}

/* Python's `while c:` where tk wants `while c {`: a ':' where a block may open, on the
 * line of the 'while', 'for', 'if' or 'else' before it. The note quotes the header. */
static void python_block_hint(ps_state *ps, su_loc loc, const lex_kind *expected, int n) {
  const lex_token *k = &ps->opener;
  if (ps->look.kind != TOK_COLON || !contains(expected, n, TOK_LBRACE) || !k->loc.len ||
      k->loc.line != ps->look.loc.line || k->loc.off >= ps->look.loc.off)
    return;
  const char *text = ps->src->text + k->loc.off;
  int len = (int)(ps->look.loc.off - k->loc.off);
  while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t')) len--;
  if (len > MAX_HEADER)
    su_note(ps->d, loc, "tk opens a block with braces, not Python's ':' and indentation: "
                        "'%s ... { ... }'", lex_kind_name(k->kind));
  else
    su_note(ps->d, loc, "tk opens a block with braces, not Python's ':' and indentation: "
                        "write '%.*s { ... }'", len, text);
}

void ps_syntax_error(ps_state *ps, su_loc loc, const lex_kind *expected, int nexpected) {
  if (ps->nsyntax >= PS_MAX_SYNTAX_ERRORS) return;
  ps->nsyntax++;
  if (after_type_name(ps, expected, nexpected)) {
    const lex_token *p = &ps->prev;
    const char *text = ps->src->text + p->loc.off;
    int n = p->loc.len > MAX_QUOTED ? MAX_QUOTED : (int)p->loc.len;
    su_error(ps->d, p->loc, "unexpected '%s' after '%.*s', expected type or '*'",
             lex_kind_name(ps->look.kind), n, text);
    if (is_module_name(p, text))
      su_note(ps->d, p->loc, "tk's types and builtins have no module prefix: Triton's 'tl.float16' is "
                             "'f16', and a 'tl.constexpr' parameter is written after the kernel's "
                             "name, 'kernel k<BLOCK: i32 = 1024>(...)'");
    else if (ps->look.kind == TOK_LT)
      su_note(ps->d, p->loc, "tile types have no spelling: a kernel takes scalars and pointers, "
                             "and tiles are built in its body");
    if (ps->nsyntax == PS_MAX_SYNTAX_ERRORS)
      su_note(ps->d, p->loc, "too many syntax errors; the rest of the file is not parsed");
    return;
  }

  /* End of file is acceptable in many places and almost never what was meant. */
  bool expr = contains(expected, nexpected, TOK_INT);
  lex_kind rest[TOK_COUNT];
  int nrest = 0;
  /* '**' opens a type only as two '*': naming '*' says it */
  bool star = contains(expected, nexpected, TOK_STAR);
  for (int i = 0; i < nexpected && nrest < TOK_COUNT; i++)
    if (expected[i] != TOK_EOF && !(expr && starts_expression(expected[i])) &&
        !(star && expected[i] == TOK_STARSTAR))
      rest[nrest++] = expected[i];

  /* after 'let': a name, or the '(' of `let (a, b) = ...`, which is not what a mistake
   * there is about */
  if (nrest == 2 && contains(rest, nrest, TOK_IDENT) && contains(rest, nrest, TOK_LPAREN))
    nrest = 1, rest[0] = TOK_IDENT;

  su_buf tok = {0}, msg = {0};
  describe(&tok, ps);
  if (contains(expected, nexpected, TOK_LET)) {
    su_buf_printf(&msg, "expected statement before %s", su_buf_str(&tok));
  } else if (expr) {
    su_buf_puts(&msg, "expected expression");
    if (nrest > 0 && nrest <= 2) {
      su_buf_puts(&msg, " or ");
      spell_list(&msg, rest, nrest);
    }
    su_buf_printf(&msg, " before %s", su_buf_str(&tok));
  } else {
    su_buf_printf(&msg, "unexpected %s", su_buf_str(&tok));
    if (nrest > 0 && nrest <= 4) {
      su_buf_puts(&msg, ", expected ");
      spell_list(&msg, rest, nrest);
    } else {
      /* A long list means "an operator or the end of this construct": name the end. */
      static const lex_kind closers[] = {TOK_SEMI,  TOK_RPAREN, TOK_RBRACKET, TOK_RBRACE,
                                         TOK_LBRACE, TOK_COMMA, TOK_GT};
      for (size_t i = 0; i < sizeof closers / sizeof closers[0]; i++)
        if (contains(rest, nrest, closers[i])) {
          su_buf_puts(&msg, ", expected ");
          spell(&msg, closers[i]);
          break;
        }
    }
  }
  su_error(ps->d, loc, "%s", su_buf_str(&msg));
  const char *text = ps->src->text + ps->look.loc.off;
  if (is_module_name(&ps->look, text))
    su_note(ps->d, loc, "tk's types and builtins have no module prefix: Triton's 'tl.float16' is "
                        "'f16', and a 'tl.constexpr' parameter is written after the kernel's name, "
                        "'kernel k<BLOCK: i32 = 1024>(...)'");
  python_block_hint(ps, loc, expected, nexpected);
  if (ps->nsyntax == PS_MAX_SYNTAX_ERRORS)
    su_note(ps->d, loc, "too many syntax errors; the rest of the file is not parsed");
  su_buf_free(&tok);
  su_buf_free(&msg);
}
