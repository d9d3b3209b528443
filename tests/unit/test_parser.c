/* Unit tests for parser/: every construct's tree and locations, precedence, error
 * messages and recovery, nesting limits, hostile inputs, the --emit=ast printer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lexer/lexer.h"
#include "../../parser/ast.h"

/* One parse: the tree and the diagnostics, all in one arena. */
typedef struct {
  su_arena *a;
  su_diags d;
  su_map *names;
  ast_file *f;
} parsed;

static parsed *parse_text(const char *text, size_t len) {
  parsed *p = calloc(1, sizeof *p);
  p->a = su_arena_new();
  su_diags_init(&p->d, p->a, NULL);
  p->names = su_map_new(p->a);
  p->f = ast_parse(p->a, su_source_new(p->a, "t.tk", text, len), &p->d, p->names);
  assert_non_null(p->f);
  return p;
}

static parsed *parse(const char *text) { return parse_text(text, strlen(text)); }

/* Parses text that must have no errors. */
static parsed *parse_ok(const char *text) {
  parsed *p = parse(text);
  if (p->d.nerrors) fail_msg("unexpected error: %u:%u: %s", p->d.first->loc.line,
                             p->d.first->loc.col, p->d.first->msg);
  return p;
}

static void done(parsed *p) {
  su_arena_free(p->a);
  free(p);
}

/* "line:col: msg" of diagnostic i. */
static const char *diag(parsed *p, int i) {
  const su_diag *g = p->d.first;
  for (; g && i > 0; i--) g = g->next;
  assert_non_null(g);
  return su_fmt(p->a, "%u:%u: %s", g->loc.line, g->loc.col, g->msg);
}

/* The text a location covers. */
static const char *text_at(parsed *p, su_loc l) {
  return su_strndup(p->a, l.src->text + l.off, l.len);
}

/* A compact one-line form of an expression, to check tree shapes: (+ a (* b c)). */
static void sx(su_buf *b, const ast_node *n) {
  switch (n->kind) {
  case AST_INT: su_buf_printf(b, "%llu", (unsigned long long)n->ival); break;
  case AST_FLOAT: su_buf_printf(b, "%g", n->fval); break;
  case AST_BOOL: su_buf_puts(b, n->ival ? "true" : "false"); break;
  case AST_STRING: su_buf_printf(b, "\"%s\"", n->str); break;
  case AST_NAME: su_buf_printf(b, "%s%s", n->qual ? n->qual : "", n->name); break;
  case AST_SLICE:
    if (n->lhs) sx(b, n->lhs);
    su_buf_puts(b, ":");
    if (n->rhs) sx(b, n->rhs);
    break;
  case AST_NONE: su_buf_puts(b, "None"); break;
  case AST_TYPE: su_buf_puts(b, lex_dtype_name(n->dtype)); break;
  case AST_PTR_TYPE: su_buf_puts(b, "*"); sx(b, n->lhs); break;
  case AST_UNARY: case AST_BINARY:
    su_buf_printf(b, "(%s ", lex_kind_name(n->op));
    sx(b, n->lhs);
    if (n->rhs) su_buf_puts(b, " "), sx(b, n->rhs);
    su_buf_puts(b, ")");
    break;
  case AST_CAST:
    su_buf_puts(b, "(as ");
    sx(b, n->lhs);
    su_buf_puts(b, " ");
    sx(b, n->type);
    su_buf_puts(b, ")");
    break;
  case AST_INDEX:
    su_buf_puts(b, "([] ");
    sx(b, n->lhs);
    for (int i = 0; i < n->args.len; i++) su_buf_puts(b, " "), sx(b, n->args.items[i]);
    su_buf_puts(b, ")");
    break;
  case AST_CALL:
    su_buf_printf(b, "(%s%s", n->qual ? n->qual : "", n->name);
    for (int i = 0; i < n->targs.len; i++) {
      su_buf_puts(b, i ? "," : "<");
      sx(b, n->targs.items[i]);
    }
    if (n->targs.len) su_buf_puts(b, ">");
    for (int i = 0; i < n->args.len; i++) {
      const ast_node *a = n->args.items[i];
      assert_int_equal(a->kind, AST_ARG);
      su_buf_puts(b, " ");
      if (a->name) su_buf_printf(b, "%s=", a->name);
      sx(b, a->lhs);
    }
    su_buf_puts(b, ")");
    break;
  default: su_buf_printf(b, "<%s>", ast_kind_name(n->kind)); break;
  }
}

/* The compact form of the expression e in "const C = e;". */
static const char *expr_shape(const char *e) {
  static char out[512];
  char src[512];
  snprintf(src, sizeof src, "const C = %s;", e);
  parsed *p = parse_ok(src);
  assert_int_equal(p->f->decls.len, 1);
  su_buf b = {0};
  sx(&b, p->f->decls.items[0]->rhs);
  snprintf(out, sizeof out, "%s", su_buf_str(&b));
  su_buf_free(&b);
  done(p);
  return out;
}

/* The --emit=ast text of a parse. */
static const char *printed(parsed *p) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ast_print(f, p->f);
  fclose(f);
  char *s = su_strdup(p->a, buf);
  free(buf);
  return s;
}

/* The height of a tree, measured independently of the parser's depth field. */
static int height(const ast_node *n) {
  if (!n) return 0;
  int h = 0;
  const ast_node *kids[] = {n->lhs, n->rhs, n->type, n->body, n->els};
  for (int i = 0; i < 5; i++) {
    int k = height(kids[i]);
    if (k > h) h = k;
  }
  const ast_list *lists[] = {&n->args, &n->targs, &n->stmts, &n->params, &n->cparams, &n->attrs};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < lists[i]->len; j++) {
      int k = height(lists[i]->items[j]);
      if (k > h) h = k;
    }
  return h + 1;
}

static const char *softmax =
    "// one program per row\n"
    "@launch(warps = 8, stages = 2)\n"
    "kernel softmax<BLOCK: i32 = 1024>(x: *f32, y: *f32, stride: i64, n: i32) {\n"
    "    let row  = program_id(0);\n"
    "    let cols = arange(0, BLOCK);\n"
    "    let mask = cols < n;\n"
    "    let v    = load(x + row * stride + cols, mask, -inf);\n"
    "    store(y + row * stride + cols, v, mask = mask);\n"
    "}\n";

static void test_kernel(void **state) {
  (void)state;
  parsed *p = parse_ok(softmax);
  assert_int_equal(p->f->decls.len, 1);
  ast_node *k = p->f->decls.items[0];
  assert_int_equal(k->kind, AST_KERNEL);
  assert_string_equal(k->name, "softmax");
  assert_int_equal(k->name_loc.line, 3);
  assert_int_equal(k->name_loc.col, 8);
  /* The kernel spans from its attribute to its closing brace. */
  assert_int_equal(k->loc.line, 2);
  assert_int_equal(k->loc.col, 1);
  assert_int_equal(k->loc.off + k->loc.len, strlen(softmax) - 1);

  assert_int_equal(k->attrs.len, 2);
  assert_int_equal(k->attrs.items[0]->kind, AST_ATTR);
  assert_string_equal(k->attrs.items[1]->name, "stages");
  assert_int_equal(k->attrs.items[1]->rhs->ival, 2);
  assert_string_equal(text_at(p, k->attrs.items[0]->loc), "warps = 8");

  assert_int_equal(k->cparams.len, 1);
  ast_node *c = k->cparams.items[0];
  assert_int_equal(c->kind, AST_PARAM);
  assert_string_equal(c->name, "BLOCK");
  assert_int_equal(c->type->dtype, TK_I32);
  assert_int_equal(c->rhs->kind, AST_INT);
  assert_int_equal(c->rhs->ival, 1024);
  assert_string_equal(text_at(p, c->loc), "BLOCK: i32 = 1024");

  assert_int_equal(k->params.len, 4);
  ast_node *x = k->params.items[0];
  assert_string_equal(x->name, "x");
  assert_int_equal(x->type->kind, AST_PTR_TYPE);
  assert_int_equal(x->type->lhs->kind, AST_TYPE);
  assert_int_equal(x->type->lhs->dtype, TK_F32);
  assert_null(x->rhs);
  assert_int_equal(k->params.items[2]->type->dtype, TK_I64);

  ast_node *body = k->body;
  assert_int_equal(body->kind, AST_BLOCK);
  assert_int_equal(body->stmts.len, 5);
  ast_node *let = body->stmts.items[0];
  assert_int_equal(let->kind, AST_LET);
  assert_int_equal(let->ival, 0);
  assert_string_equal(text_at(p, let->loc), "let row  = program_id(0);");
  assert_string_equal(text_at(p, let->name_loc), "row");
  ast_node *st = body->stmts.items[4];
  assert_int_equal(st->kind, AST_EXPR_STMT);
  assert_int_equal(st->lhs->kind, AST_CALL);
  assert_string_equal(st->lhs->name, "store");
  assert_string_equal(text_at(p, st->lhs->loc), "store(y + row * stride + cols, v, mask = mask)");

  /* Names are interned: equal names are the same pointer. */
  assert_ptr_equal(let->name, su_intern(p->names, "row", 3));
  assert_ptr_equal(c->name, body->stmts.items[1]->rhs->args.items[1]->lhs->name);
  done(p);
}

static void test_cparam_defaults(void **state) {
  (void)state;
  parsed *p = parse_ok("kernel k<A: i32 = -4, B: f32 = -1.5, C: bool = true, D: i64 = N,"
                       " E: i32 = (N * 2 > 3)>() {}");
  ast_list cp = p->f->decls.items[0]->cparams;
  assert_int_equal(cp.len, 5);
  su_buf b = {0};
  for (int i = 0; i < cp.len; i++) {
    if (i) su_buf_puts(&b, " | ");
    sx(&b, cp.items[i]->rhs);
  }
  assert_string_equal(su_buf_str(&b), "(- 4) | (- 1.5) | true | N | (> (* N 2) 3)");
  su_buf_free(&b);
  assert_int_equal(cp.items[2]->type->dtype, TK_I1);
  assert_int_equal(p->f->decls.items[0]->params.len, 0);
  done(p);
  /* The default is required. */
  p = parse("kernel k<N: i32>() {}");
  assert_string_equal(diag(p, 0), "1:16: unexpected '>', expected '='");
  done(p);
}

static void test_func_and_const(void **state) {
  (void)state;
  parsed *p = parse_ok("fn gelu(x) { return 0.5 * x; }\n"
                       "fn axpy(a: f32, x, y) -> f32 { return a * x + y; }\n"
                       "fn nothing() { return; }\n"
                       "const LOG2E = 1.4426950408889634;\n"
                       "const N: i32 = 4;\n");
  ast_list ds = p->f->decls;
  assert_int_equal(ds.len, 5);
  assert_int_equal(ds.items[0]->kind, AST_FUNC);
  assert_null(ds.items[0]->params.items[0]->type);
  assert_null(ds.items[0]->type);
  ast_node *axpy = ds.items[1];
  assert_string_equal(axpy->name, "axpy");
  assert_int_equal(axpy->params.len, 3);
  assert_int_equal(axpy->params.items[0]->type->dtype, TK_F32);
  assert_null(axpy->params.items[1]->type);
  assert_int_equal(axpy->type->dtype, TK_F32);
  assert_int_equal(axpy->body->stmts.items[0]->kind, AST_RETURN);
  assert_int_equal(ds.items[2]->body->stmts.items[0]->kind, AST_RETURN);
  assert_null(ds.items[2]->body->stmts.items[0]->lhs);
  assert_int_equal(ds.items[3]->kind, AST_CONST);
  assert_null(ds.items[3]->type);
  assert_true(ds.items[3]->rhs->fval == 1.4426950408889634);
  assert_int_equal(ds.items[4]->type->dtype, TK_I32);
  assert_string_equal(text_at(p, ds.items[4]->loc), "const N: i32 = 4;");
  done(p);
}

static void test_statements(void **state) {
  (void)state;
  parsed *p = parse_ok("kernel k() {\n"
                       "  var acc: f32 = 0.0;\n"
                       "  acc = 1; acc += 2; acc -= 3; acc *= 4; acc /= 5;\n"
                       "  for i in range(0, 10, 2) { acc += i; }\n"
                       "  for j in static_range(4) {}\n"
                       "  if a { } else if b { x(); } else { { y(); } }\n"
                       "  if c {}\n"
                       "  store(p, acc);\n"
                       "}\n");
  ast_list s = p->f->decls.items[0]->body->stmts;
  assert_int_equal(s.len, 11);
  assert_int_equal(s.items[0]->kind, AST_LET);
  assert_int_equal(s.items[0]->ival, 1);
  assert_int_equal(s.items[0]->type->dtype, TK_F32);
  const int ops[] = {TOK_ASSIGN, TOK_PLUS_ASSIGN, TOK_MINUS_ASSIGN, TOK_STAR_ASSIGN,
                     TOK_SLASH_ASSIGN};
  for (int i = 0; i < 5; i++) {
    assert_int_equal(s.items[1 + i]->kind, AST_ASSIGN);
    assert_string_equal(s.items[1 + i]->name, "acc");
    assert_int_equal(s.items[1 + i]->op, ops[i]);
    assert_int_equal(s.items[1 + i]->rhs->ival, (uint64_t)i + 1);
  }
  assert_string_equal(text_at(p, s.items[2]->loc), "acc += 2;");
  ast_node *f = s.items[6];
  assert_int_equal(f->kind, AST_FOR);
  assert_string_equal(f->name, "i");
  assert_int_equal(f->name_loc.col, 7);
  assert_int_equal(f->lhs->kind, AST_CALL);
  assert_string_equal(f->lhs->name, "range");
  assert_int_equal(f->lhs->args.len, 3);
  assert_int_equal(f->body->kind, AST_BLOCK);
  assert_string_equal(text_at(p, f->loc), "for i in range(0, 10, 2) { acc += i; }");
  assert_string_equal(s.items[7]->lhs->name, "static_range");

  ast_node *i = s.items[8];
  assert_int_equal(i->kind, AST_IF);
  assert_string_equal(i->lhs->name, "a");
  assert_int_equal(i->body->stmts.len, 0);
  assert_int_equal(i->els->kind, AST_IF); /* else if: a nested if */
  assert_int_equal(i->els->els->kind, AST_BLOCK);
  assert_int_equal(i->els->els->stmts.items[0]->kind, AST_BLOCK);
  assert_string_equal(text_at(p, i->els->loc), "if b { x(); } else { { y(); } }");
  assert_null(s.items[9]->els);
  assert_int_equal(s.items[10]->kind, AST_EXPR_STMT);
  done(p);
}

static void test_precedence(void **state) {
  (void)state;
  assert_string_equal(expr_shape("a + b * c"), "(+ a (* b c))");
  assert_string_equal(expr_shape("a - b - c"), "(- (- a b) c)");
  assert_string_equal(expr_shape("a / b % c * d"), "(* (% (/ a b) c) d)");
  assert_string_equal(expr_shape("(a + b) * c"), "(* (+ a b) c)");
  assert_string_equal(expr_shape("a << b + c"), "(<< a (+ b c))");
  assert_string_equal(expr_shape("a & b << c"), "(& a (<< b c))");
  assert_string_equal(expr_shape("a ^ b & c"), "(^ a (& b c))");
  assert_string_equal(expr_shape("a | b ^ c"), "(| a (^ b c))");
  assert_string_equal(expr_shape("a < b | c"), "(< a (| b c))");
  assert_string_equal(expr_shape("a == b < c"), "(== a (< b c))");
  assert_string_equal(expr_shape("a < b == c >= d"), "(== (< a b) (>= c d))");
  assert_string_equal(expr_shape("a && b == c"), "(&& a (== b c))");
  assert_string_equal(expr_shape("a || b && c || d"), "(|| (|| a (&& b c)) d)");
  assert_string_equal(expr_shape("-a * b"), "(* (- a) b)");
  assert_string_equal(expr_shape("!~+-a"), "(! (~ (+ (- a))))");
  assert_string_equal(expr_shape("-x as f32"), "(- (as x f32))");
  assert_string_equal(expr_shape("a + b as i64"), "(+ a (as b i64))");
  assert_string_equal(expr_shape("p as *f16 as *f32"), "(as (as p *f16) *f32)");
  assert_string_equal(expr_shape("(a < b) < c"), "(< (< a b) c)");
  assert_string_equal(expr_shape("a < (b < c)"), "(< a (< b c))");
  /* '**' as in Python: tighter than unary minus on its left, to the right */
  assert_string_equal(expr_shape("-x ** 2"), "(- (** x 2))");
  assert_string_equal(expr_shape("a ** b ** c"), "(** a (** b c))");
  assert_string_equal(expr_shape("a ** -b * c"), "(* (** a (- b)) c)");
  assert_string_equal(expr_shape("x as f32 ** 2"), "(** (as x f32) 2)");
  assert_string_equal(expr_shape("a * b ** c"), "(* a (** b c))");
}

/* Triton's spellings (habits.c): reported with tk's, and rewritten to it where one is
 * meant; module calls and methods are left marked for the checker. */
static void test_triton_habits(void **state) {
  (void)state;
  parsed *p = parse("const A = x.to(f16);\nconst B = (a + b).to(tl.float16);\nconst C = t.T;\n"
                    "const D = tl.math.exp(x);\nconst E = v.sum(0);\nconst F = v.shape;\n"
                    "const G = x.to(*i8);\n");
  static const char *const shapes[] = {"(as x f16)", "(as (+ a b) f16)", "(trans t)",
                                       "(tl.math.exp x)", "(.sum v 0)", "<error>", "(as x *i8)"};
  assert_int_equal(p->f->decls.len, 7);
  for (int i = 0; i < 7; i++) {
    su_buf b = {0};
    sx(&b, p->f->decls.items[i]->rhs);
    assert_string_equal(su_buf_str(&b), shapes[i]);
    su_buf_free(&b);
  }
  assert_int_equal(p->d.nerrors, 5); /* the module call and the method are the checker's */
  assert_string_equal(diag(p, 0), "1:13: tk converts with 'as', not '.to()'");
  assert_string_equal(diag(p, 1), "1:13: write 'x as f16'");
  assert_string_equal(diag(p, 3), "2:19: write '(a + b) as f16'");
  assert_string_equal(diag(p, 4), "3:13: tk values have no field 'T'");
  assert_string_equal(diag(p, 5), "3:13: write 'trans(t)'");
  assert_string_equal(diag(p, 6), "6:13: tk values have no field 'shape'");
  assert_string_equal(diag(p, 9), "7:13: write 'x as *i8'");
  done(p);

  /* while, break and continue are statements */
  p = parse("kernel k() { while a { f(); } for i in range(3) { break; continue; } g(); }\n");
  assert_int_equal(p->d.nerrors, 0);
  ast_list s = p->f->decls.items[0]->body->stmts;
  assert_int_equal(s.len, 3);
  assert_int_equal(s.items[0]->kind, AST_WHILE);
  assert_int_equal(s.items[0]->lhs->kind, AST_NAME);
  assert_int_equal(s.items[0]->body->stmts.len, 1);
  assert_int_equal(s.items[1]->kind, AST_FOR);
  assert_int_equal(s.items[1]->body->stmts.items[0]->kind, AST_BREAK);
  assert_int_equal(s.items[1]->body->stmts.items[1]->kind, AST_CONTINUE);
  done(p);
}

static void test_calls_and_indexing(void **state) {
  (void)state;
  assert_string_equal(expr_shape("f()"), "(f)");
  assert_string_equal(expr_shape("load(p, mask = m, other = 0.0)"), "(load p mask=m other=0)");
  assert_string_equal(expr_shape("zeros<f32>(BM, BN)"), "(zeros<f32> BM BN)");
  assert_string_equal(expr_shape("full< bf16 >(1.5, 4)"), "(full<bf16> 1.5 4)");
  assert_string_equal(expr_shape("g<i8, *u8>(x)"), "(g<i8,*u8> x)");
  assert_string_equal(expr_shape("x[:, None]"), "([] x : None)");
  assert_string_equal(expr_shape("(k + rk)[None, :][:]"), "([] ([] (+ k rk) None :) :)");
  assert_string_equal(expr_shape("f(a)[:] as f16"), "(as ([] (f a) :) f16)");
  assert_string_equal(expr_shape("device_print(\"x=\\t\", true, false)"),
                      "(device_print \"x=\t\" true false)");
  /* zeros < f32 ... without a type after '<' is a comparison. */
  assert_string_equal(expr_shape("zeros < f32x"), "(< zeros f32x)");

  parsed *p = parse_ok("const C = zeros<f32>(4, mask = m)[:, None];");
  ast_node *ix = p->f->decls.items[0]->rhs;
  assert_int_equal(ix->kind, AST_INDEX);
  assert_string_equal(text_at(p, ix->loc), "zeros<f32>(4, mask = m)[:, None]");
  ast_node *call = ix->lhs;
  assert_string_equal(text_at(p, call->name_loc), "zeros");
  assert_int_equal(call->targs.items[0]->kind, AST_TYPE);
  ast_node *named = call->args.items[1];
  assert_string_equal(text_at(p, named->loc), "mask = m");
  assert_string_equal(text_at(p, named->name_loc), "mask");
  assert_int_equal(ix->args.items[1]->kind, AST_NONE);
  assert_string_equal(text_at(p, ix->args.items[1]->loc), "None");
  done(p);

  /* Slices with bounds; a bare expression parses (the checker says it is no index). */
  assert_string_equal(expr_shape("x[:, 0:64]"), "([] x : 0:64)");
  assert_string_equal(expr_shape("x[a + 1:, :B, None]"), "([] x (+ a 1): :B None)");
  p = parse("const C = x[i];");
  assert_int_equal(p->d.nerrors, 0);
  done(p);
}

static void test_locations(void **state) {
  (void)state;
  parsed *p = parse_ok("const C =\n  (a +\n   b) * c;");
  ast_node *e = p->f->decls.items[0]->rhs;
  assert_int_equal(e->kind, AST_BINARY);
  assert_int_equal(e->loc.line, 2);
  assert_int_equal(e->loc.col, 3);
  assert_string_equal(text_at(p, e->loc), "(a +\n   b) * c");
  /* Parentheses make no node; the sum inside starts at 'a'. */
  assert_string_equal(text_at(p, e->lhs->loc), "a +\n   b");
  assert_int_equal(e->rhs->loc.line, 3);
  assert_int_equal(e->rhs->loc.col, 9);
  done(p);
}

static void test_chained_comparison(void **state) {
  (void)state;
  parsed *p = parse("const C = a < b < c;\nconst D = a == b != c;\n");
  assert_int_equal(p->d.nerrors, 2);
  assert_string_equal(diag(p, 0),
                      "1:17: comparison operators cannot be chained; use '&&' or parentheses");
  assert_string_equal(diag(p, 1),
                      "2:18: comparison operators cannot be chained; use '&&' or parentheses");
  assert_int_equal(p->f->decls.len, 2); /* the tree is still built */
  done(p);
}

static void test_syntax_errors(void **state) {
  (void)state;
  parsed *p = parse("kernel a() {\n"
                    "  let x = ;\n"
                    "  let y = a foo;\n"
                    "  f(1, );\n"
                    "  return x\n"
                    "}\n");
  assert_int_equal(p->d.nerrors, 4);
  assert_string_equal(diag(p, 0), "2:11: expected expression before ';'");
  assert_string_equal(diag(p, 1), "3:13: unexpected identifier 'foo', expected ';'");
  assert_string_equal(diag(p, 2), "4:8: expected expression before ')'");
  assert_string_equal(diag(p, 3), "6:1: unexpected '}', expected ';'");
  assert_int_equal(p->f->decls.len, 1);
  done(p);

  p = parse("fn f() { let = 2; }\nfoo\nkernel k() { ) }\nconst C = 1\n");
  assert_string_equal(diag(p, 0), "1:14: unexpected '=', expected identifier");
  assert_string_equal(diag(p, 1), "2:1: unexpected identifier 'foo', expected 'kernel', 'fn', "
                                  "'const' or '@'");
  assert_string_equal(diag(p, 2), "3:14: expected statement before ')'");
  assert_string_equal(diag(p, 3), "5:1: unexpected end of file, expected ';'");
  assert_int_equal(p->d.nerrors, 4);
  done(p);

  /* A bad statement header skips its whole block, not just up to the first '}'. */
  p = parse("kernel c() { for i range(4) { } }\nkernel d() { if { } let y = ; }\n");
  assert_int_equal(p->d.nerrors, 3);
  assert_string_equal(diag(p, 0), "1:20: unexpected identifier 'range', expected 'in'");
  assert_string_equal(diag(p, 1), "2:17: expected expression before '{'");
  assert_string_equal(diag(p, 2), "2:29: expected expression before ';'");
  assert_int_equal(p->f->decls.len, 2);
  done(p);

  p = parse("@tune(x = 1) kernel k() {}");
  assert_string_equal(diag(p, 0), "1:2: unknown attribute '@tune'");
  done(p);
}

static void test_recovery_keeps_declarations(void **state) {
  (void)state;
  /* A broken header skips to the next declaration; later ones are all there. */
  parsed *p = parse("kernel bad(x: *f32 n: i32) { let a = 1; }\n"
                    "kernel good() { let b = 2; }\n"
                    "fn h(x) { x(; return x; }\n"
                    "const Z = 3;\n");
  assert_int_equal(p->d.nerrors, 2);
  assert_string_equal(diag(p, 0), "1:20: unexpected identifier 'n', expected ')' or ','");
  assert_string_equal(diag(p, 1), "3:13: expected expression or ')' before ';'");
  assert_int_equal(p->f->decls.len, 3);
  assert_string_equal(p->f->decls.items[0]->name, "good");
  ast_node *h = p->f->decls.items[1];
  assert_string_equal(h->name, "h");
  assert_int_equal(h->body->stmts.len, 1); /* the bad statement is dropped */
  assert_int_equal(h->body->stmts.items[0]->kind, AST_RETURN);
  assert_string_equal(p->f->decls.items[2]->name, "Z");
  done(p);
}

static void test_error_limit(void **state) {
  (void)state;
  su_buf b = {0};
  su_buf_puts(&b, "kernel k() {\n");
  for (int i = 0; i < 200; i++) su_buf_puts(&b, "  let = 1;\n");
  su_buf_puts(&b, "}\n");
  parsed *p = parse(su_buf_str(&b));
  su_buf_free(&b);
  assert_int_equal(p->d.nerrors, 50);
  assert_string_equal(diag(p, 49), "51:7: unexpected '=', expected identifier");
  assert_int_equal(p->d.last->sev, SU_NOTE);
  done(p);
}

static void test_deep_nesting(void **state) {
  (void)state;
  enum { N = 10000 };
  su_buf b = {0};
  /* 10 000 parentheses. */
  su_buf_puts(&b, "const C = ");
  for (int i = 0; i < N; i++) su_buf_puts(&b, "(");
  su_buf_puts(&b, "x");
  for (int i = 0; i < N; i++) su_buf_puts(&b, ")");
  su_buf_puts(&b, ";");
  parsed *p = parse(su_buf_str(&b));
  assert_int_equal(p->d.nerrors, 1);
  assert_string_equal(p->d.first->msg, "expression nested too deeply (the limit is 256 levels)");
  assert_int_equal(p->f->decls.len, 1);
  done(p);
  su_buf_free(&b);

  /* A left-deep chain a+a+...+a: reported once, and the tree stays shallow. */
  su_buf_puts(&b, "const C = a");
  for (int i = 0; i < N; i++) su_buf_puts(&b, " + a");
  su_buf_puts(&b, ";\nconst D = ");
  for (int i = 0; i < N; i++) su_buf_puts(&b, "-");
  su_buf_puts(&b, "a;");
  p = parse(su_buf_str(&b));
  assert_int_equal(p->d.nerrors, 1);
  assert_string_equal(diag(p, 0), "1:11: expression nested too deeply (the limit is 256 levels)");
  assert_int_equal(p->f->decls.len, 2);
  assert_true(height(p->f->decls.items[0]->rhs) <= AST_MAX_DEPTH);
  assert_true(height(p->f->decls.items[1]->rhs) <= AST_MAX_DEPTH);
  done(p);
  su_buf_free(&b);

  /* Nested blocks and ifs. */
  su_buf_puts(&b, "kernel k() {");
  for (int i = 0; i < N; i++) su_buf_puts(&b, i % 2 ? "{" : "if c {");
  for (int i = 0; i < N; i++) su_buf_puts(&b, "}");
  su_buf_puts(&b, "}");
  p = parse(su_buf_str(&b));
  assert_int_equal(p->d.nerrors, 1);
  assert_string_equal(p->d.first->msg, "block nested too deeply (the limit is 256 levels)");
  assert_true(height(p->f->decls.items[0]) <= AST_MAX_DEPTH + 2);
  done(p);
  su_buf_free(&b);

  /* Exactly at the limit is fine. */
  su_buf_puts(&b, "const C = ");
  for (int i = 0; i < AST_MAX_DEPTH - 1; i++) su_buf_puts(&b, "-");
  su_buf_puts(&b, "a;");
  p = parse_ok(su_buf_str(&b));
  assert_int_equal(height(p->f->decls.items[0]->rhs), AST_MAX_DEPTH);
  done(p);
  su_buf_free(&b);

  /* Deeper than the parser's own stack: an error, not a crash. */
  su_buf_puts(&b, "const C = ");
  for (int i = 0; i < 200000; i++) su_buf_puts(&b, "(");
  p = parse(su_buf_str(&b));
  assert_string_equal(p->d.first->msg, "nesting too deep for the parser");
  done(p);
  su_buf_free(&b);
}

static void test_hostile_inputs(void **state) {
  (void)state;
  parsed *p = parse("");
  assert_int_equal(p->f->decls.len, 0);
  assert_int_equal(p->d.nerrors, 0);
  done(p);

  p = parse("  // only a comment\n");
  assert_int_equal(p->f->decls.len, 0);
  assert_int_equal(p->d.nerrors, 0);
  done(p);

  /* Binary garbage, NULs included: errors, bounded, no crash. */
  enum { N = 100000 };
  char *g = malloc(N);
  uint32_t r = 12345;
  for (int i = 0; i < N; i++) {
    r = r * 1103515245u + 12345u;
    g[i] = (char)(r >> 16);
  }
  p = parse_text(g, N);
  assert_true(p->d.nerrors > 1);
  assert_true(p->d.nerrors <= 101);
  done(p);
  free(g);

  /* A megabyte identifier. */
  enum { M = 1 << 20 };
  char *big = malloc(M + 32);
  strcpy(big, "const ");
  memset(big + 6, 'x', M);
  strcpy(big + 6 + M, " = 1;");
  p = parse_ok(big);
  assert_int_equal(strlen(p->f->decls.items[0]->name), M);
  done(p);
  free(big);

  /* An overflowing literal is one error, not a cascade of syntax errors too. */
  p = parse("const C = 99999999999999999999 + 1;");
  assert_int_equal(p->d.nerrors, 1);
  assert_string_equal(diag(p, 0), "1:11: integer literal is too large");
  assert_int_equal(p->f->decls.len, 1);
  done(p);

  p = parse("kernel k() { device_print(\"abc); }");
  assert_string_equal(diag(p, 0), "1:27: unterminated string literal");
  done(p);
}

static void test_print(void **state) {
  (void)state;
  parsed *p = parse_ok("@launch(warps = 4)\n"
                       "kernel k<B: i32 = 16>(x: *f32) {\n"
                       "  var a = zeros<f32>(B)[:, None] as f16;\n"
                       "  a += load(x, mask = -1.5 < a);\n"
                       "}\n"
                       "fn f(y) -> i1 { return !y; }\n");
  assert_string_equal(printed(p),
                      "(kernel k @1:1\n"
                      "  (attr warps @1:9\n"
                      "    (int 4 @1:17))\n"
                      "  (cparam B @2:10\n"
                      "    (type i32 @2:13)\n"
                      "    (int 16 @2:19))\n"
                      "  (param x @2:23\n"
                      "    (type *f32 @2:26))\n"
                      "  (block @2:32\n"
                      "    (var a @3:3\n"
                      "      (cast @3:11\n"
                      "        (index @3:11\n"
                      "          (call zeros @3:11\n"
                      "            (type f32 @3:17)\n"
                      "            (name B @3:22))\n"
                      "          (slice @3:25)\n"
                      "          (none @3:28))\n"
                      "        (type f16 @3:37)))\n"
                      "    (assign a += @4:3\n"
                      "      (call load @4:8\n"
                      "        (name x @4:13)\n"
                      "        (arg mask @4:16\n"
                      "          (binary < @4:23\n"
                      "            (unary - @4:23\n"
                      "              (float 1.5 @4:24))\n"
                      "            (name a @4:30)))))))\n"
                      "(fn f @6:1\n"
                      "  (param y @6:6)\n"
                      "  (type i1 @6:12)\n"
                      "  (block @6:15\n"
                      "    (return @6:17\n"
                      "      (unary ! @6:24\n"
                      "        (name y @6:25)))))\n");
  done(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernel),
      cmocka_unit_test(test_cparam_defaults),
      cmocka_unit_test(test_func_and_const),
      cmocka_unit_test(test_statements),
      cmocka_unit_test(test_precedence),
      cmocka_unit_test(test_triton_habits),
      cmocka_unit_test(test_calls_and_indexing),
      cmocka_unit_test(test_locations),
      cmocka_unit_test(test_chained_comparison),
      cmocka_unit_test(test_syntax_errors),
      cmocka_unit_test(test_recovery_keeps_declarations),
      cmocka_unit_test(test_error_limit),
      cmocka_unit_test(test_deep_nesting),
      cmocka_unit_test(test_hostile_inputs),
      cmocka_unit_test(test_print),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
