/*
 * Internal to parser/: the state of one parse and the helpers the grammar actions call to
 * build nodes, bound their nesting and report errors. Keeping them out of parser.y leaves
 * the grammar file to the grammar.
 * Prefix: ps_.
 */
#ifndef TK_PARSER_BUILD_H
#define TK_PARSER_BUILD_H

#include "../lexer/lexer.h"
#include "ast.h"

enum { PS_MAX_SYNTAX_ERRORS = 50 }; /* after this many, the rest of the file is skipped */

typedef struct {
  su_arena *a;
  su_diags *d;
  su_map *names;
  const su_source *src;
  lex_state *lex;
  lex_token look;     /* the token read last: the one a syntax error is about */
  lex_token prev;     /* the token before it */
  su_vec decls;       /* declarations so far, kept even if the parse is abandoned */
  int nsyntax;        /* syntax errors reported */
  int nrecovered;     /* errors after which the tree holds the tk construct (habits.c) */
  lex_token opener;   /* the last 'while', 'for', 'if' or 'else': what a ':' was meant to open */
  bool depth_reported;
} ps_state;

/* A new node of kind k at loc. */
ast_node *ps_node(ps_state *ps, ast_kind k, su_loc loc);

/* Measures the nesting height of a node whose children are all set and returns it; a
 * node nested deeper than AST_MAX_DEPTH is reported (once per file) and replaced by a
 * leaf in its place, so the tree stays shallow whatever the input. */
ast_node *ps_done(ps_state *ps, ast_node *n);

/* `(a, b) = rhs`: an assignment to each name of the tuple, which must all be plain names
 * (anything else is reported, and NULL returned). */
ast_node *ps_tuple_assign(ps_state *ps, ast_node *tuple, ast_node *rhs, su_loc loc);

/* Parentheses around e: they add one level of nesting (as in C compilers' bracket
 * limit) but no node. */
ast_node *ps_paren(ps_state *ps, ast_node *e);

/* The binary node `l op r` spanning loc. lwritten is where l is written (it includes
 * parentheses around it): an unparenthesized comparison on the left of a comparison of
 * the same level is a chain, reported at op_loc. */
ast_node *ps_binary(ps_state *ps, int op, ast_node *l, ast_node *r, su_loc loc, su_loc lwritten,
                    su_loc op_loc);

/* ---- habits.c: Triton's spellings, reported with tk's ---- */

/* Reports a syntax error at the token ps->look (at loc) given the token kinds the
 * grammar would have accepted there. */
void ps_syntax_error(ps_state *ps, su_loc loc, const lex_kind *expected, int nexpected);

/* recv.name: under a module (tl, triton, libdevice, or a path in one) the qualified name
 * itself (qual set, for the checker to report); `.T` of a value is reported and becomes
 * trans(recv); any other field of a value is reported and becomes an AST_ERROR. */
ast_node *ps_field(ps_state *ps, ast_node *recv, const char *name, su_loc name_loc, su_loc loc);
/* recv.name(args): under a module, the call name(args) with qual set; `.to(tl.float16)` is
 * reported and becomes `recv as f16`; another method becomes name(recv, args...) with
 * qual ".", which the checker reports. */
ast_node *ps_method(ps_state *ps, ast_node *recv, const char *name, su_loc name_loc, ast_list args,
                    su_loc loc);
/* recv.name(type): `.to(f16)` is reported and becomes `recv as f16`; another is reported. */
ast_node *ps_method_type(ps_state *ps, ast_node *recv, const char *name, su_loc name_loc,
                         ast_node *type, su_loc loc);

#endif
