/*
 * parser/ — the bison grammar (parser.y) that builds the AST of a .tk file, and the AST
 * itself with its printer (--emit=ast).
 *
 * Contract:
 *  - ast_parse parses a whole source into an ast_file allocated in the arena. It never
 *    fails hard: syntax errors are reported through the diagnostics (located, with what was
 *    expected), the parser recovers at statement and declaration boundaries, and the tree
 *    it returns holds every declaration it could build. Callers check d->nerrors, and
 *    f->checkable before they run the checker on a tree that had errors.
 *  - Nesting deeper than AST_MAX_DEPTH is reported as an error, not a stack overflow.
 *  - Every node has a source range (loc) covering its whole text.
 *  - Fields named "sema" are left zero by the parser and filled by sema/.
 * Prefix: ast_ / AST_.
 */
#ifndef TK_AST_H
#define TK_AST_H

#include "../include/tk.h"
#include "../support/support.h"

enum { AST_MAX_DEPTH = 256 };

typedef struct ast_node ast_node;
struct ir_type; /* sema's result types live in ir/ */

typedef enum {
  /* expressions */
  AST_INT,      /* ival; suffix type in type (NULL: untyped literal) */
  AST_FLOAT,    /* fval */
  AST_BOOL,     /* ival 0/1 */
  AST_STRING,   /* str (decoded) */
  AST_NAME,     /* name */
  AST_UNARY,    /* op (TOK_MINUS, TOK_BANG, TOK_TILDE, TOK_PLUS), lhs */
  AST_BINARY,   /* op (a TOK_ binary operator), lhs, rhs; name_loc = the operator */
  AST_CALL,     /* name, targs (types, may be empty), args (AST_ARG) */
  AST_ARG,      /* name (NULL if positional), lhs = value */
  AST_INDEX,    /* lhs = base, args = items (AST_SLICE / AST_NONE) */
  AST_SLICE,    /* ':' in an index; 'a:b': lhs = a, rhs = b (either may be NULL) */
  AST_NONE,     /* 'None' in an index */
  AST_CAST,     /* lhs as type */
  AST_ERROR,    /* stands in for a construct the parser reported (a field of a value):
                   no type, and no further message */
  AST_TUPLE,    /* args = the elements (expressions): `return (a, b);`, `(m, l) = ...` */
  /* types (syntax) */
  AST_TYPE,     /* dtype (a tk_dtype, not TK_PTR); also a type keyword written where a
                   value goes (reported by the checker, or x.to(f16)'s type) */
  AST_TYPE_NAME,/* name: a type written as a name, a compile-time dtype parameter's */
  AST_PTR_TYPE, /* *lhs */
  /* statements */
  AST_BLOCK,    /* stmts */
  AST_LET,      /* name, type (optional annotation), rhs = init; ival 1 for 'var';
                   `let (a, b) = e`: name NULL, params = the names (AST_PARAM) */
  AST_ASSIGN,   /* name, op (TOK_ASSIGN or TOK_PLUS_ASSIGN ...), rhs; `(a, b) = e`: name
                   NULL, args = the targets (AST_NAME), op TOK_ASSIGN */
  AST_EXPR_STMT,/* lhs */
  AST_FOR,      /* name = induction variable, lhs = iterator call (range/static_range), body */
  AST_IF,       /* cond = lhs, body = then block, els = else block or nested AST_IF (or NULL) */
  AST_WHILE,    /* lhs = condition, body */
  AST_BREAK,
  AST_CONTINUE,
  AST_RETURN,   /* lhs (may be NULL); ival 1: a kernel's early exit (set by the checker) */
  /* declarations */
  AST_PARAM,    /* name, type (NULL for an untyped helper parameter), rhs = default (constexpr) */
  AST_ATTR,     /* name, rhs = value: a launch attribute in @launch(...) */
  AST_KERNEL,   /* name, cparams (AST_PARAM, compile-time), params (AST_PARAM), attrs, body */
  AST_FUNC,     /* name, params, type = return annotation (optional), body */
  AST_CONST,    /* name, type (optional), rhs: a file-level compile-time constant */
} ast_kind;

/* A list of nodes (arena array). */
typedef struct {
  ast_node **items;
  int len;
} ast_list;

struct ast_node {
  ast_kind kind;
  su_loc loc;       /* the whole construct */
  su_loc name_loc;  /* where name is written, for notes ("declared here") */
  const char *name; /* interned */
  int op;           /* lex_kind of the operator */
  uint64_t ival;
  double fval;
  const char *str;
  /* AST_CALL, AST_NAME written in a Triton habit, which the checker reports before it
   * checks the plain name: a module prefix as written ("tl.", "tl.math.") for tl.load(p),
   * or "." for a method call x.sum(0), whose receiver is then args[0]. NULL normally. */
  const char *qual;
  tk_dtype dtype;
  ast_node *lhs, *rhs, *type, *body, *els;
  ast_list args, targs, stmts, params, cparams, attrs;
  /* Nesting height of the subtree as the parser measured it: for expressions and types
   * the height counting parentheses, for statements the nesting of blocks. The parser
   * keeps it at most AST_MAX_DEPTH, so recursive stages need no depth checks. */
  int depth;

  /* sema results */
  const struct ir_type *sema_type; /* the value's type (expressions) */
  bool sema_is_const;              /* a compile-time constant */
  union {
    int64_t i;
    double f;
  } sema_const;                    /* its value when sema_is_const (ints and bools in i) */
  void *sema_ref;                  /* resolved declaration or builtin */
  /* sema/overflow.c: what the value derives from (program id, kernel argument) and the
   * first 32-bit product of run-time values inside it */
  uint8_t sema_taint;
  struct ast_node *sema_hazard;
};

typedef struct {
  const su_source *src;
  ast_list decls; /* AST_KERNEL, AST_FUNC, AST_CONST in source order */
  /* Every error of the parse was a Triton habit after which the tree holds the tk
   * construct meant (`x.to(f16)` as `x as f16`): the checker may run and report the
   * file's other errors; the compile fails all the same. True when there was no error. */
  bool checkable;
} ast_file;

/* Parses src. Never returns NULL. Errors go to d. Names are interned in names. */
ast_file *ast_parse(su_arena *a, const su_source *src, su_diags *d, su_map *names);

/* Prints the tree as indented S-expressions with line:col of each node (--emit=ast).
 * With sema results present, each expression also shows its type. */
void ast_print(FILE *out, const ast_file *f);

/* Node constructors used by the grammar and by tests. */
ast_node *ast_new(su_arena *a, ast_kind k, su_loc loc);
/* The name of a node kind ("call", "binary", ...). */
const char *ast_kind_name(ast_kind k);
/* Appends n to the arena list l (amortized: the storage doubles when full). */
void ast_list_push(su_arena *a, ast_list *l, ast_node *n);
/* The tk dtype Triton calls name ("float16" → TK_F16, "int1" → TK_I1), or -1. */
int ast_triton_dtype(const char *name);
/* True for the statement kinds (AST_BLOCK .. AST_RETURN). */
bool ast_is_stmt(ast_kind k);

#endif
