/* The grammar of .tk (docs/language.md) and the AST it builds (parser/ast.h).
 *
 * A pure LALR(1) parser with no conflicts. Syntax errors are reported by ps_syntax_error
 * from the exact set of acceptable tokens (LAC makes that set exact); recovery happens at
 * statements (skip to ';', over a whole block, or to the block's '}') and at declarations
 * (skip to the next 'kernel', 'fn', 'const' or '@'). Every node is finished by ps_done, which bounds its
 * nesting, so no input can make the tree deeper than AST_MAX_DEPTH. */

%define api.pure full
%define api.prefix {tkp_}
%define api.location.type {su_loc}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%param {ps_state *ps}

%code requires {
#include "parser/build.h"
}

%code {
#include <string.h>

/* A node's range is from its first to its last non-empty child: an empty optional part
 * (no attributes before 'kernel') must not stretch it back over the previous text. */
static su_loc span(const su_loc *rhs, int n) {
  if (n == 0) {
    su_loc r = rhs[0];
    r.off += r.len;
    r.col += r.len;
    r.len = 0;
    return r;
  }
  int first = 1, last = n;
  while (first < n && rhs[first].len == 0) first++;
  while (last > first && rhs[last].len == 0) last--;
  return su_loc_join(rhs[first], rhs[last]);
}
#define YYLLOC_DEFAULT(cur, rhs, n) ((cur) = span((rhs), (n)))

/* The parser stack grows with nesting before any node exists to measure it: allow
 * deep nesting (the node limit reports it) but not unbounded memory. */
#define YYMAXDEPTH 100000

static int tkp_lex(TKP_STYPE *val, su_loc *loc, ps_state *ps);
static void tkp_error(su_loc *loc, ps_state *ps, const char *msg);

static ast_node *leaf(ps_state *ps, ast_kind k, su_loc loc) { return ps_done(ps, ps_node(ps, k, loc)); }

static ast_node *unary(ps_state *ps, int op, ast_node *e, su_loc loc) {
  ast_node *n = ps_node(ps, AST_UNARY, loc);
  n->op = op;
  n->lhs = e;
  return ps_done(ps, n);
}

static ast_node *named(ps_state *ps, ast_kind k, const char *name, su_loc name_loc, su_loc loc) {
  ast_node *n = ps_node(ps, k, loc);
  n->name = name;
  n->name_loc = name_loc;
  return n;
}

static ast_list list1(ps_state *ps, ast_node *n) {
  ast_list l = {0};
  ast_list_push(ps->a, &l, n);
  return l;
}

static ast_list append(ps_state *ps, ast_list l, ast_node *n) {
  ast_list_push(ps->a, &l, n);
  return l;
}
}

%union {
  ast_node *node;
  ast_list list;
  const char *str; /* identifiers: interned; strings: decoded */
  uint64_t ival;   /* integers; type keywords: the tk_dtype */
  double fval;
}

%token T_EOF 0 "end of file"
%token T_ERROR
%token <str> T_IDENT "identifier" T_STRING "string literal"
%token <ival> T_INT "integer literal" T_TYPE "type name"
%token <fval> T_FLOAT "float literal"
%token T_KERNEL "kernel" T_FN "fn" T_LET "let" T_VAR "var" T_FOR "for" T_IN "in" T_IF "if"
       T_ELSE "else" T_RETURN "return" T_AS "as" T_TRUE "true" T_FALSE "false" T_NONE "None"
       T_CONST "const" T_WHILE "while" T_BREAK "break" T_CONTINUE "continue"
%token T_LPAREN "(" T_RPAREN ")" T_LBRACKET "[" T_RBRACKET "]" T_LBRACE "{" T_RBRACE "}"
       T_COMMA "," T_COLON ":" T_SEMI ";" T_DOT "." T_AT "@" T_ARROW "->"
       T_ASSIGN "=" T_PLUS_ASSIGN "+=" T_MINUS_ASSIGN "-=" T_STAR_ASSIGN "*="
       T_SLASH_ASSIGN "/="
       T_PLUS "+" T_MINUS "-" T_STAR "*" T_STARSTAR "**" T_SLASH "/" T_PERCENT "%" T_AMP "&" T_PIPE "|"
       T_CARET "^" T_TILDE "~" T_BANG "!" T_SHL "<<" T_SHR ">>" T_ANDAND "&&" T_OROR "||"
       T_EQ "==" T_NE "!=" T_LT "<" T_LE "<=" T_GT ">" T_GE ">="
       T_LT_TYPE /* '<' opening type arguments */

/* Binary operators, loosest first; comparisons are left-associative here only so that
 * a chain reaches ps_binary, which reports it. */
%left "||"
%left "&&"
%left "==" "!="
%left "<" "<=" ">" ">="
%left "|"
%left "^"
%left "&"
%left "<<" ">>"
%left "+" "-"
%left "*" "/" "%"

%type <node> decl kernel func const_decl cparam kparam fparam attr type ptr_type ret_opt type_ann_opt
%type <node> block stmt if_stmt expr unary power postfix primary call arg index_item cdefault literal
%type <node> tuple
%type <list> attrs_opt attr_list cparams_opt cparam_list kparams_opt kparam_list fparams_opt
%type <list> fparam_list stmts args_opt args type_list index_items exprs names
%type <ival> assign_op

%initial-action { @$ = (su_loc){ps->src, 0, 0, 1, 1}; }

%%

file:
  %empty
| file decl  { if ($2) su_vec_push(&ps->decls, $2); }
;

decl:
  kernel
| func
| const_decl
| error      { $$ = NULL; }
;

/* [@launch(name = expr, ...)]* kernel NAME [<cparams>] (params) block */
kernel:
  attrs_opt "kernel" T_IDENT cparams_opt "(" kparams_opt ")" block {
    $$ = named(ps, AST_KERNEL, $3, @3, @$);
    $$->attrs = $1;
    $$->cparams = $4;
    $$->params = $6;
    $$->body = $8;
  }
;

attrs_opt:
  %empty                                   { $$ = (ast_list){0}; }
| attrs_opt "@" T_IDENT "(" attr_list ")"  {
    if (strcmp($3, "launch") != 0) su_error(ps->d, @3, "unknown attribute '@%s'", $3);
    $$ = $1;
    for (int i = 0; i < $5.len; i++) $$ = append(ps, $$, $5.items[i]);
  }
;

attr_list:
  attr                { $$ = list1(ps, $1); }
| attr_list "," attr  { $$ = append(ps, $1, $3); }
;

attr:
  T_IDENT "=" expr  { $$ = named(ps, AST_ATTR, $1, @1, @$); $$->rhs = $3; }
;

cparams_opt:
  %empty                   { $$ = (ast_list){0}; }
| "<" cparam_list ">"      { $$ = $2; }
;

cparam_list:
  cparam                  { $$ = list1(ps, $1); }
| cparam_list "," cparam  { $$ = append(ps, $1, $3); }
;

/* NAME: type = default. The default is kept simple so that '>' ends the list. */
cparam:
  T_IDENT ":" type "=" cdefault  { $$ = named(ps, AST_PARAM, $1, @1, @$); $$->type = $3; $$->rhs = $5; }
;

cdefault:
  literal
| "-" T_INT          { ast_node *i = leaf(ps, AST_INT, @2); i->ival = $2; $$ = unary(ps, TOK_MINUS, i, @$); }
| "-" T_FLOAT        { ast_node *f = leaf(ps, AST_FLOAT, @2); f->fval = $2; $$ = unary(ps, TOK_MINUS, f, @$); }
| T_IDENT            { $$ = leaf(ps, AST_NAME, @1); $$->name = $1; }
| T_TYPE             { $$ = leaf(ps, AST_TYPE, @1); $$->dtype = (tk_dtype)$1; } /* a dtype's */
| "(" expr ")"       { $$ = ps_paren(ps, $2); }
;

kparams_opt:
  %empty       { $$ = (ast_list){0}; }
| kparam_list
;

kparam_list:
  kparam                  { $$ = list1(ps, $1); }
| kparam_list "," kparam  { $$ = append(ps, $1, $3); }
;

kparam:
  T_IDENT ":" type  { $$ = named(ps, AST_PARAM, $1, @1, @$); $$->type = $3; }
;

/* fn NAME(params) [-> type] block; parameter types are optional */
func:
  "fn" T_IDENT "(" fparams_opt ")" ret_opt block {
    $$ = named(ps, AST_FUNC, $2, @2, @$);
    $$->params = $4;
    $$->type = $6;
    $$->body = $7;
  }
;

fparams_opt:
  %empty       { $$ = (ast_list){0}; }
| fparam_list
;

fparam_list:
  fparam                  { $$ = list1(ps, $1); }
| fparam_list "," fparam  { $$ = append(ps, $1, $3); }
;

fparam:
  T_IDENT           { $$ = named(ps, AST_PARAM, $1, @1, @$); }
| T_IDENT ":" type  { $$ = named(ps, AST_PARAM, $1, @1, @$); $$->type = $3; }
;

ret_opt:
  %empty      { $$ = NULL; }
| "->" type   { $$ = $2; }
;

/* const NAME [: type] = expr; */
const_decl:
  "const" T_IDENT type_ann_opt "=" expr ";" {
    $$ = named(ps, AST_CONST, $2, @2, @$);
    $$->type = $3;
    $$->rhs = $5;
  }
;

type_ann_opt:
  %empty    { $$ = NULL; }
| ":" type  { $$ = $2; }
;

/* '**' is one token (the power operator): in a type it is two pointer levels, which the
 * checker reports as it reports '* *f32'. */
type:
  T_TYPE     { $$ = leaf(ps, AST_TYPE, @1); $$->dtype = (tk_dtype)$1; }
| T_IDENT    { $$ = leaf(ps, AST_TYPE_NAME, @1); $$->name = $1; } /* a dtype parameter */
| "*" type   { $$ = ps_node(ps, AST_PTR_TYPE, @$); $$->lhs = $2; $$ = ps_done(ps, $$); }
| "**" type  {
    ast_node *in = ps_node(ps, AST_PTR_TYPE, @$);
    in->lhs = $2;
    $$ = ps_node(ps, AST_PTR_TYPE, @$);
    $$->lhs = ps_done(ps, in);
    $$ = ps_done(ps, $$);
  }
;

/* x.to(*i8): a pointer type where arguments go (x.to(f16) is a call whose argument is
 * the type f16, a primary). */
ptr_type:
  "*" type   { $$ = ps_node(ps, AST_PTR_TYPE, @$); $$->lhs = $2; $$ = ps_done(ps, $$); }
| "**" type  {
    ast_node *in = ps_node(ps, AST_PTR_TYPE, @$);
    in->lhs = $2;
    $$ = ps_node(ps, AST_PTR_TYPE, @$);
    $$->lhs = ps_done(ps, in);
    $$ = ps_done(ps, $$);
  }
;

/* ---- statements ---------------------------------------------------------------------- */

block:
  "{" stmts "}"        { $$ = ps_node(ps, AST_BLOCK, @$); $$->stmts = $2; $$ = ps_done(ps, $$); }
| "{" stmts error "}"  {
    yyerrok;
    $$ = ps_node(ps, AST_BLOCK, @$);
    $$->stmts = $2;
    $$ = ps_done(ps, $$);
  }
;

stmts:
  %empty      { $$ = (ast_list){0}; }
| stmts stmt  { $$ = $2 ? append(ps, $1, $2) : $1; }
;

stmt:
  "let" T_IDENT type_ann_opt "=" expr ";" {
    $$ = named(ps, AST_LET, $2, @2, @$);
    $$->type = $3;
    $$->rhs = $5;
    $$ = ps_done(ps, $$);
  }
| "var" T_IDENT type_ann_opt "=" expr ";" {
    $$ = named(ps, AST_LET, $2, @2, @$);
    $$->ival = 1;
    $$->type = $3;
    $$->rhs = $5;
    $$ = ps_done(ps, $$);
  }
| "let" "(" names ")" "=" expr ";" {
    $$ = ps_node(ps, AST_LET, @$);
    $$->params = $3;
    $$->rhs = $6;
    $$ = ps_done(ps, $$);
  }
| "var" "(" names ")" "=" expr ";" {
    $$ = ps_node(ps, AST_LET, @$);
    $$->ival = 1;
    $$->params = $3;
    $$->rhs = $6;
    $$ = ps_done(ps, $$);
  }
| tuple "=" expr ";" { $$ = ps_tuple_assign(ps, $1, $3, @$); }
| T_IDENT assign_op expr ";" {
    $$ = named(ps, AST_ASSIGN, $1, @1, @$);
    $$->op = (int)$2;
    $$->rhs = $3;
    $$ = ps_done(ps, $$);
  }
| expr ";"  { $$ = ps_node(ps, AST_EXPR_STMT, @$); $$->lhs = $1; $$ = ps_done(ps, $$); }
| "for" T_IDENT "in" postfix block {
    $$ = named(ps, AST_FOR, $2, @2, @$);
    $$->lhs = $4;
    $$->body = $5;
    $$ = ps_done(ps, $$);
  }
| if_stmt
| "while" expr block  {
    $$ = ps_node(ps, AST_WHILE, @$);
    $$->lhs = $2;
    $$->body = $3;
    $$ = ps_done(ps, $$);
  }
| "break" ";"         { $$ = ps_node(ps, AST_BREAK, @$); $$ = ps_done(ps, $$); }
| "continue" ";"      { $$ = ps_node(ps, AST_CONTINUE, @$); $$ = ps_done(ps, $$); }
| "return" ";"       { $$ = ps_node(ps, AST_RETURN, @$); $$ = ps_done(ps, $$); }
| "return" expr ";"  { $$ = ps_node(ps, AST_RETURN, @$); $$->lhs = $2; $$ = ps_done(ps, $$); }
| block
| error ";"          { yyerrok; $$ = NULL; }
| error block        { yyerrok; $$ = NULL; } /* a bad header: if {, for i in x { */
;

/* The names a `let (a, b) = ...` declares: AST_PARAM nodes (name and where it is). */
names:
  T_IDENT            { $$ = list1(ps, ps_done(ps, named(ps, AST_PARAM, $1, @1, @1))); }
| names "," T_IDENT  { $$ = append(ps, $1, ps_done(ps, named(ps, AST_PARAM, $3, @3, @3))); }
;

assign_op:
  "="   { $$ = TOK_ASSIGN; }
| "+="  { $$ = TOK_PLUS_ASSIGN; }
| "-="  { $$ = TOK_MINUS_ASSIGN; }
| "*="  { $$ = TOK_STAR_ASSIGN; }
| "/="  { $$ = TOK_SLASH_ASSIGN; }
;

/* if c block [else (block | if ...)] */
if_stmt:
  "if" expr block                  { $$ = ps_node(ps, AST_IF, @$); $$->lhs = $2; $$->body = $3; $$ = ps_done(ps, $$); }
| "if" expr block "else" block     {
    $$ = ps_node(ps, AST_IF, @$);
    $$->lhs = $2;
    $$->body = $3;
    $$->els = $5;
    $$ = ps_done(ps, $$);
  }
| "if" expr block "else" if_stmt   {
    $$ = ps_node(ps, AST_IF, @$);
    $$->lhs = $2;
    $$->body = $3;
    $$->els = $5;
    $$ = ps_done(ps, $$);
  }
;

/* ---- expressions --------------------------------------------------------------------- */

expr:
  unary
| expr "||" expr  { $$ = ps_binary(ps, TOK_OROR, $1, $3, @$, @1, @2); }
| expr "&&" expr  { $$ = ps_binary(ps, TOK_ANDAND, $1, $3, @$, @1, @2); }
| expr "==" expr  { $$ = ps_binary(ps, TOK_EQ, $1, $3, @$, @1, @2); }
| expr "!=" expr  { $$ = ps_binary(ps, TOK_NE, $1, $3, @$, @1, @2); }
| expr "<" expr   { $$ = ps_binary(ps, TOK_LT, $1, $3, @$, @1, @2); }
| expr "<=" expr  { $$ = ps_binary(ps, TOK_LE, $1, $3, @$, @1, @2); }
| expr ">" expr   { $$ = ps_binary(ps, TOK_GT, $1, $3, @$, @1, @2); }
| expr ">=" expr  { $$ = ps_binary(ps, TOK_GE, $1, $3, @$, @1, @2); }
| expr "|" expr   { $$ = ps_binary(ps, TOK_PIPE, $1, $3, @$, @1, @2); }
| expr "^" expr   { $$ = ps_binary(ps, TOK_CARET, $1, $3, @$, @1, @2); }
| expr "&" expr   { $$ = ps_binary(ps, TOK_AMP, $1, $3, @$, @1, @2); }
| expr "<<" expr  { $$ = ps_binary(ps, TOK_SHL, $1, $3, @$, @1, @2); }
| expr ">>" expr  { $$ = ps_binary(ps, TOK_SHR, $1, $3, @$, @1, @2); }
| expr "+" expr   { $$ = ps_binary(ps, TOK_PLUS, $1, $3, @$, @1, @2); }
| expr "-" expr   { $$ = ps_binary(ps, TOK_MINUS, $1, $3, @$, @1, @2); }
| expr "*" expr   { $$ = ps_binary(ps, TOK_STAR, $1, $3, @$, @1, @2); }
| expr "/" expr   { $$ = ps_binary(ps, TOK_SLASH, $1, $3, @$, @1, @2); }
| expr "%" expr   { $$ = ps_binary(ps, TOK_PERCENT, $1, $3, @$, @1, @2); }
;

/* Unary operators bind looser than casts: -x as f32 is -(x as f32). */
unary:
  power
| "-" unary  { $$ = unary(ps, TOK_MINUS, $2, @$); }
| "+" unary  { $$ = unary(ps, TOK_PLUS, $2, @$); }
| "!" unary  { $$ = unary(ps, TOK_BANG, $2, @$); }
| "~" unary  { $$ = unary(ps, TOK_TILDE, $2, @$); }
;

/* x ** y binds tighter than a unary operator on its left and groups to the right, as in
 * Python: -x ** 2 is -(x ** 2), 2.0 ** -k is 2.0 ** (-k), a ** b ** c is a ** (b ** c). */
power:
  postfix
| postfix "**" unary  { $$ = ps_binary(ps, TOK_STARSTAR, $1, $3, @$, @1, @2); }
;

postfix:
  primary
| postfix "[" index_items "]"  { $$ = ps_node(ps, AST_INDEX, @$); $$->lhs = $1; $$->args = $3; $$ = ps_done(ps, $$); }
| postfix "as" type            { $$ = ps_node(ps, AST_CAST, @$); $$->lhs = $1; $$->type = $3; $$ = ps_done(ps, $$); }
/* Triton's spellings, parsed to be reported with tk's (habits.c): tl.load(p), x.to(f16),
 * x.sum(0), x.T */
| postfix "." T_IDENT                      { $$ = ps_field(ps, $1, $3, @3, @$); }
| postfix "." T_IDENT "(" args_opt ")"     { $$ = ps_method(ps, $1, $3, @3, $5, @$); }
| postfix "." T_IDENT "(" ptr_type ")"     { $$ = ps_method_type(ps, $1, $3, @3, $5, @$); }
;

index_items:
  index_item                  { $$ = list1(ps, $1); }
| index_items "," index_item  { $$ = append(ps, $1, $3); }
;

/* ':' keeps an axis, 'a:b' (either bound may be left out) keeps part of it, 'None'
 * inserts one; an expression alone is parsed so that the checker can say what to write. */
index_item:
  ":"            { $$ = leaf(ps, AST_SLICE, @1); }
| expr ":" expr  { $$ = ps_node(ps, AST_SLICE, @$); $$->lhs = $1; $$->rhs = $3; $$ = ps_done(ps, $$); }
| ":" expr       { $$ = ps_node(ps, AST_SLICE, @$); $$->rhs = $2; $$ = ps_done(ps, $$); }
| expr ":"       { $$ = ps_node(ps, AST_SLICE, @$); $$->lhs = $1; $$ = ps_done(ps, $$); }
| "None"         { $$ = leaf(ps, AST_NONE, @1); }
| expr
;

/* A type keyword as a primary is no value: the checker reports it ('f16' is a type), and
 * x.to(f16) reads it as the habit's type. */
primary:
  literal
| T_IDENT       { $$ = leaf(ps, AST_NAME, @1); $$->name = $1; }
| T_TYPE        { $$ = leaf(ps, AST_TYPE, @1); $$->dtype = (tk_dtype)$1; }
| call
| "(" expr ")"  { $$ = ps_paren(ps, $2); }
| tuple
;

/* (a, b, ...): what a helper returns several values as, and what `(m, l) = ...` assigns. */
tuple:
  "(" expr "," exprs ")"  {
    $$ = ps_node(ps, AST_TUPLE, @$);
    $$->args = list1(ps, $2);
    for (int i = 0; i < $4.len; i++) $$->args = append(ps, $$->args, $4.items[i]);
    $$ = ps_done(ps, $$);
  }
;

exprs:
  expr            { $$ = list1(ps, $1); }
| exprs "," expr  { $$ = append(ps, $1, $3); }
;

literal:
  T_INT     { $$ = leaf(ps, AST_INT, @1); $$->ival = $1; }
| T_FLOAT   { $$ = leaf(ps, AST_FLOAT, @1); $$->fval = $1; }
| T_STRING  { $$ = leaf(ps, AST_STRING, @1); $$->str = $1; }
| "true"    { $$ = leaf(ps, AST_BOOL, @1); $$->ival = 1; }
| "false"   { $$ = leaf(ps, AST_BOOL, @1); }
;

/* f(args) and f<types>(args); the lexer marks a '<' that opens types (T_LT_TYPE). */
call:
  T_IDENT "(" args_opt ")" {
    $$ = named(ps, AST_CALL, $1, @1, @$);
    $$->args = $3;
    $$ = ps_done(ps, $$);
  }
| T_IDENT T_LT_TYPE type_list ">" "(" args_opt ")" {
    $$ = named(ps, AST_CALL, $1, @1, @$);
    $$->targs = $3;
    $$->args = $6;
    $$ = ps_done(ps, $$);
  }
;

type_list:
  type                { $$ = list1(ps, $1); }
| type_list "," type  { $$ = append(ps, $1, $3); }
;

args_opt:
  %empty  { $$ = (ast_list){0}; }
| args
;

args:
  arg           { $$ = list1(ps, $1); }
| args "," arg  { $$ = append(ps, $1, $3); }
;

/* A positional argument, or name = value. */
arg:
  expr              { $$ = ps_node(ps, AST_ARG, @$); $$->lhs = $1; $$ = ps_done(ps, $$); }
| T_IDENT "=" expr  {
    $$ = named(ps, AST_ARG, $1, @1, @$);
    $$->lhs = $3;
    $$ = ps_done(ps, $$);
  }
;

%%

/* Bison's token numbers for the lexer's kinds, by the X-macro that defines both names. */
static const int token_of_kind[TOK_COUNT] = {
#define X(k, s) [TOK_##k] = T_##k,
    LEX_TOKENS(X)
#undef X
};

static lex_kind kind_of_symbol(yysymbol_kind_t s) {
  /* Bison names its end-of-input symbol itself, whatever the token is called. */
#define YYSYMBOL_T_EOF YYSYMBOL_YYEOF
  switch (s) {
#define X(k, s) case YYSYMBOL_T_##k: return TOK_##k;
    LEX_TOKENS(X)
#undef X
  default: return TOK_ERROR;
  }
}

static int tkp_lex(TKP_STYPE *val, su_loc *loc, ps_state *ps) {
  for (;;) {
    lex_token t = ps->nsyntax >= PS_MAX_SYNTAX_ERRORS
                      ? (lex_token){.kind = TOK_EOF, .loc = ps->look.loc}
                      : lex_next(ps->lex);
    /* A malformed literal was reported by the lexer; a stand-in of its kind keeps it
     * from also showing up as a syntax error. Other bad bytes are simply skipped. */
    if (t.kind == TOK_ERROR) {
      char c = ps->src->text[t.loc.off];
      if (c == '"')
        t.kind = TOK_STRING;
      else if ((c >= '0' && c <= '9') || c == '.')
        t.kind = TOK_INT, t.ival = 0;
      else
        continue;
    }
    const char *text = ps->src->text + t.loc.off;
    switch (t.kind) {
    case TOK_IDENT: val->str = su_intern(ps->names, text, t.loc.len); break;
    case TOK_STRING: val->str = lex_string_value(ps->a, &t); break;
    case TOK_INT: case TOK_TYPE: val->ival = t.ival; break;
    case TOK_FLOAT: val->fval = t.fval; break;
    default: break;
    }
    if (t.kind == TOK_WHILE || t.kind == TOK_FOR || t.kind == TOK_IF || t.kind == TOK_ELSE)
      ps->opener = t;
    ps->prev = ps->look;
    ps->look = t;
    *loc = t.loc;
    return token_of_kind[t.kind];
  }
}

static int yyreport_syntax_error(const yypcontext_t *ctx, ps_state *ps) {
  yysymbol_kind_t syms[YYNTOKENS];
  lex_kind kinds[YYNTOKENS];
  int n = yypcontext_expected_tokens(ctx, syms, YYNTOKENS);
  for (int i = 0; i < n; i++) kinds[i] = kind_of_symbol(syms[i]);
  ps_syntax_error(ps, *yypcontext_location(ctx), kinds, n < 0 ? 0 : n);
  return 0;
}

/* Bison calls this only when its stack is exhausted (syntax errors go through
 * yyreport_syntax_error). */
static void tkp_error(su_loc *loc, ps_state *ps, const char *msg) {
  (void)msg;
  su_error(ps->d, *loc, "nesting too deep for the parser");
}

ast_file *ast_parse(su_arena *a, const su_source *src, su_diags *d, su_map *names) {
  ps_state ps = {.a = a, .d = d, .names = names, .src = src};
  int nerr0 = d->nerrors;
  ps.lex = lex_new(a, src, d);
  ps.look.loc = (su_loc){src, 0, 0, 1, 1};
  tkp_parse(&ps);
  ast_file *f = SU_NEW(a, ast_file);
  f->src = src;
  f->decls.items = (ast_node **)su_vec_freeze(a, &ps.decls);
  f->decls.len = ps.decls.len;
  f->checkable = d->nerrors - nerr0 == ps.nrecovered;
  su_vec_free(&ps.decls);
  return f;
}
