/*
 * lexer/ — turns a .tk source into tokens (re2c, lexer.re).
 *
 * Contract:
 *  - lex_next returns the next token of the source with its location; at the end it
 *    returns TOK_EOF forever. It never fails: a malformed token (unterminated comment or
 *    string, stray byte, NUL, bad number) is reported through the diagnostics and returned
 *    as TOK_ERROR, and lexing goes on after it.
 *  - Integer literals are parsed with overflow detection (an overflowing literal is an
 *    error); their value is in tok.ival (u64). Float literals in tok.fval. Identifiers and
 *    strings point into the source (tok.loc) and are interned on demand by the parser.
 * Prefix: lex_ / TOK_.
 */
#ifndef TK_LEXER_H
#define TK_LEXER_H

#include "../support/support.h"

/* X(kind, spelling): every token kind. Keywords have their spelling; the rest describe. */
#define LEX_TOKENS(X)                 \
  X(EOF, "end of file")               \
  X(ERROR, "invalid token")           \
  X(IDENT, "identifier")              \
  X(INT, "integer literal")           \
  X(FLOAT, "float literal")           \
  X(STRING, "string literal")         \
  /* keywords */                      \
  X(KERNEL, "kernel")                 \
  X(FN, "fn")                         \
  X(LET, "let")                       \
  X(VAR, "var")                       \
  X(FOR, "for")                       \
  X(IN, "in")                         \
  X(IF, "if")                         \
  X(ELSE, "else")                     \
  X(RETURN, "return")                 \
  X(AS, "as")                         \
  X(TRUE, "true")                     \
  X(FALSE, "false")                   \
  X(NONE, "None")                     \
  X(CONST, "const")                   \
  /* loops (§4.3.1) */                  \
  X(WHILE, "while")                   \
  X(BREAK, "break")                   \
  X(CONTINUE, "continue")             \
  /* type keywords: TYPE, the dtype in tok.ival (a tk_dtype) */ \
  X(TYPE, "type name")                \
  /* punctuation */                   \
  X(LPAREN, "(")                      \
  X(RPAREN, ")")                      \
  X(LBRACKET, "[")                    \
  X(RBRACKET, "]")                    \
  X(LBRACE, "{")                      \
  X(RBRACE, "}")                      \
  X(COMMA, ",")                       \
  X(COLON, ":")                       \
  X(SEMI, ";")                        \
  X(DOT, ".")                         \
  X(AT, "@")                          \
  X(ARROW, "->")                      \
  X(ASSIGN, "=")                      \
  X(PLUS_ASSIGN, "+=")                \
  X(MINUS_ASSIGN, "-=")               \
  X(STAR_ASSIGN, "*=")                \
  X(SLASH_ASSIGN, "/=")               \
  X(PLUS, "+")                        \
  X(MINUS, "-")                       \
  X(STAR, "*")                        \
  X(STARSTAR, "**")                   \
  X(SLASH, "/")                       \
  X(PERCENT, "%")                     \
  X(AMP, "&")                         \
  X(PIPE, "|")                        \
  X(CARET, "^")                       \
  X(TILDE, "~")                       \
  X(BANG, "!")                        \
  X(SHL, "<<")                        \
  X(SHR, ">>")                        \
  X(ANDAND, "&&")                     \
  X(OROR, "||")                       \
  X(EQ, "==")                         \
  X(NE, "!=")                         \
  X(LT, "<")                          \
  X(LE, "<=")                         \
  X(GT, ">")                          \
  X(GE, ">=")                         \
  /* '<' directly followed (spaces allowed) by a type keyword: opens type arguments, as in \
   * zeros<f32>(...). Lexing it apart keeps the grammar LALR(1). */ \
  X(LT_TYPE, "<")

typedef enum {
#define X(k, s) TOK_##k,
  LEX_TOKENS(X)
#undef X
  TOK_COUNT
} lex_kind;

typedef struct {
  lex_kind kind;
  su_loc loc;
  uint64_t ival;  /* INT value; TYPE: the tk_dtype */
  double fval;    /* FLOAT value */
} lex_token;

typedef struct lex_state lex_state;

/* Starts lexing src; errors go to d. State lives in arena a. */
lex_state *lex_new(su_arena *a, const su_source *src, su_diags *d);
/* Returns the next token. */
lex_token lex_next(lex_state *l);
/* The printable spelling of a token kind ("identifier", "+", "kernel"). */
const char *lex_kind_name(lex_kind k);
/* The type keyword that spells a tk_dtype ("i1", "bf16"; "ptr" for TK_PTR, "?" outside). */
const char *lex_dtype_name(int dtype);
/* Decodes the body of a STRING token (escapes \n \t \\ \" \0 \xHH) into an arena string. */
const char *lex_string_value(su_arena *a, const lex_token *t);

#endif
