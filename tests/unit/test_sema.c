/* Unit tests for sema_check: types, promotion, broadcasting, constants, defines, helper
 * instances, static_range, and the exact text and position of errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sema/sema_int.h"

typedef struct {
  su_arena *a;
  su_diags d;
  ast_file *f;
  ir_module *m;
  bool ok;
} fixture;

static fixture *check_with(const char *src, const sema_define *defs, int ndefs) {
  fixture *x = calloc(1, sizeof *x);
  x->a = su_arena_new();
  su_diags_init(&x->d, x->a, NULL);
  su_source *s = su_source_new(x->a, "t.tk", src, strlen(src));
  x->f = ast_parse(x->a, s, &x->d, su_map_new(x->a));
  assert_int_equal(x->d.nerrors, 0);
  x->m = ir_module_new(x->a, "t.tk");
  sema_options o = {.defines = defs, .ndefines = ndefs};
  x->ok = sema_check(x->a, x->f, x->m, &o, &x->d);
  return x;
}
static fixture *check(const char *src) { return check_with(src, NULL, 0); }

static void done(fixture *x) {
  su_arena_free(x->a);
  free(x);
}

/* The first top-level `let`/`var` called name in the first kernel. */
static ast_node *find_let(fixture *x, const char *name) {
  for (int i = 0; i < x->f->decls.len; i++) {
    ast_node *k = x->f->decls.items[i];
    if (k->kind != AST_KERNEL) continue;
    for (int j = 0; j < k->body->stmts.len; j++) {
      ast_node *s = k->body->stmts.items[j];
      if (s->kind == AST_LET && strcmp(s->name, name) == 0) return s;
    }
  }
  fail_msg("no let %s", name);
  return NULL;
}

static const char *type_of(fixture *x, const char *name) {
  ast_node *s = find_let(x, name);
  assert_non_null(s->rhs->sema_type);
  return sema_type_str(x->a, s->rhs->sema_type);
}

/* Asserts the i-th diagnostic (errors and notes in order). */
static void expect_diag(fixture *x, int i, su_severity sev, int line, int col, const char *msg) {
  su_diag *g = x->d.first;
  for (int k = 0; k < i && g; k++) g = g->next;
  assert_non_null(g);
  assert_int_equal(g->sev, sev);
  assert_string_equal(g->msg, msg);
  if (line) assert_int_equal(g->loc.line, line);
  if (col) assert_int_equal(g->loc.col, col);
}

#define KERNEL(body) "kernel k(x: *f32, h: *f16, n: i32, m: i64, u: u32) {\n" body "}\n"

static void test_types_and_promotion(void **st) {
  (void)st;
  fixture *x = check(KERNEL(
      "  let a = n + m;\n"
      "  let b = u + n;\n"
      "  let c = load(h) * 2.0;\n"
      "  let d = load(h) + 3;\n"
      "  let e = n * 1.5;\n"
      "  let f = load(h) + load(x + 1) as bf16;\n"
      "  let g = arange(0, 128) < n;\n"
      "  let p = x + arange(0, 16);\n"
      "  let s = sum(load(h + arange(0, 8)));\n"
      "  let t = arange(0, 4)[:, None];\n"));
  assert_true(x->ok);
  assert_string_equal(type_of(x, "a"), "i64");
  assert_string_equal(type_of(x, "b"), "u32");
  assert_string_equal(type_of(x, "c"), "f16");
  assert_string_equal(type_of(x, "d"), "f16");
  assert_string_equal(type_of(x, "e"), "f32");
  assert_string_equal(type_of(x, "f"), "f32");
  assert_string_equal(type_of(x, "g"), "tile<128xi1>");
  assert_string_equal(type_of(x, "p"), "tile<16x*f32>");
  assert_string_equal(type_of(x, "s"), "f32");
  assert_string_equal(type_of(x, "t"), "tile<4x1xi32>");
  done(x);
}


/* fp8 (docs/language.md §2.1): a storage type that loads, stores, casts, moves and
 * multiplies in dot (e4m3 with e5m2 too, into f32 or f16); everything that computes on it
 * is an error, one per expression, with a note. */
static void test_fp8(void **st) {
  (void)st;
  fixture *x = check(
      "kernel k(p: *f8e4m3, q: *f8e5m2, o: *f32) {\n"
      "  let a = load(p + arange(0, 32)[:, None] * 32 + arange(0, 32)[None, :]);\n"
      "  let b = load(q + arange(0, 32)[:, None] * 32 + arange(0, 32)[None, :]);\n"
      "  let c = dot(a, b);\n"
      "  let d = dot(b, b, zeros<f16>(32, 32));\n"
      "  let e = a as f32;\n"
      "  let f = e as f8e5m2;\n"
      "  let g = where(e > 0.0, a, 1.0);\n"
      "  let h = trans(a, 1, 0)[0:16, :];\n"
      "  let i = where(e > 0.0, a, b);\n"
      "}\n");
  assert_true(x->ok);
  assert_string_equal(type_of(x, "c"), "tile<32x32xf32>");
  assert_string_equal(type_of(x, "d"), "tile<32x32xf16>");
  assert_string_equal(type_of(x, "f"), "tile<32x32xf8e5m2>");
  assert_string_equal(type_of(x, "g"), "tile<32x32xf8e4m3>");
  assert_string_equal(type_of(x, "h"), "tile<16x32xf8e4m3>");
  assert_string_equal(type_of(x, "i"), "tile<32x32xf32>"); /* as f16 with bf16: neither holds the other */
  done(x);
  x = check("kernel k(p: *f8e4m3) {\n  let a = load(p);\n  let b = a + a;\n  let c = sqrt(a);\n"
            "  let d = max(load(p + arange(0, 16)));\n}\n");
  assert_false(x->ok);
  assert_int_equal(x->d.nerrors, 3);
  expect_diag(x, 0, SU_ERROR, 3, 13, "'+' does not compute on 'f8e4m3': f8e4m3 is a storage type");
  expect_diag(x, 2, SU_ERROR, 4, 16, "'sqrt' does not compute on 'f8e4m3': f8e4m3 is a storage type");
  expect_diag(x, 4, SU_ERROR, 5, 15,
              "'max' does not compute on 'tile<16xf8e4m3>': f8e4m3 is a storage type");
  done(x);
}

static void test_broadcast(void **st) {
  (void)st;
  fixture *x = check(KERNEL("  let r = arange(0, 128)[:, None] + arange(0, 64)[None, :];\n"));
  assert_true(x->ok);
  assert_string_equal(type_of(x, "r"), "tile<128x64xi32>");
  done(x);
  x = check(KERNEL("  let a = arange(0, 128);\n  let b = arange(0, 64);\n  let c = a + b;\n"));
  assert_false(x->ok);
  assert_int_equal(x->d.nerrors, 1);
  expect_diag(x, 0, SU_ERROR, 4, 13, "cannot broadcast 'tile<128xi32>' with 'tile<64xi32>'");
  expect_diag(x, 1, SU_NOTE, 2, 7, "'a' is declared here with type 'tile<128xi32>'");
  expect_diag(x, 2, SU_NOTE, 3, 7, "'b' is declared here with type 'tile<64xi32>'");
  done(x);
}

static void test_constants(void **st) {
  (void)st;
  fixture *x = check("const BIG = 2147483647 + 1;\nconst Q = cdiv(10, 4) << 2;\n"
                     "kernel k<B: i32 = (Q * 2)>() { let v = B - 1; static_assert(v == 23, \"b\"); }\n");
  assert_true(x->ok);
  ast_node *big = x->f->decls.items[0]->rhs;
  assert_true(big->sema_is_const);
  assert_int_equal(big->sema_const.i, INT32_MIN); /* wraps like the runtime */
  assert_true(find_let(x, "v")->rhs->sema_is_const);
  assert_int_equal(find_let(x, "v")->rhs->sema_const.i, 23);
  done(x);
  x = check("const Z = 1 / 0;\nkernel k() { static_assert(1 > 2, \"nope\"); }\n");
  assert_int_equal(x->d.nerrors, 2);
  expect_diag(x, 0, SU_ERROR, 1, 13, "division by zero in constant expression");
  expect_diag(x, 1, SU_ERROR, 2, 14, "static assertion failed: nope");
  done(x);
}

/* Compile-time floats carry the precision of their type, as the runtime computes them. */
static void test_float_constants_round_to_type(void **st) {
  (void)st;
  fixture *x = check("kernel k() { let h = 0.1 as f16; let b = 0.1 as bf16; let f = 0.1 as f32; }\n");
  assert_true(x->ok);
  assert_true(find_let(x, "h")->rhs->sema_is_const);
  assert_true(find_let(x, "h")->rhs->sema_const.f == 0.0999755859375);  /* nearest f16 */
  assert_true(find_let(x, "b")->rhs->sema_const.f == 0.10009765625);    /* nearest bf16 */
  assert_true(find_let(x, "f")->rhs->sema_const.f == (double)0.1f);
  done(x);
}

static void test_defines(void **st) {
  (void)st;
  const char *src = "@launch(warps = 8)\nkernel k<BLOCK: i32 = 1024, F: bool = false>() {\n"
                    "  let c = arange(0, BLOCK);\n}\n";
  sema_define good[] = {{"BLOCK", "0x100"}, {"stages", "3"}};
  fixture *x = check_with(src, good, 2);
  assert_true(x->ok);
  assert_string_equal(type_of(x, "c"), "tile<256xi32>");
  sema_kernel *info = x->f->decls.items[0]->sema_ref;
  assert_int_equal(info->warps, 8);
  assert_int_equal(info->stages, 3);
  done(x);
  sema_define bad[] = {{"BLOK", "1"}, {"F", "2"}, {"warps", "3"}};
  x = check_with(src, bad, 3);
  assert_int_equal(x->d.nerrors, 3);
  expect_diag(x, 0, SU_ERROR, 0, 0, "define 'BLOK' names no compile-time parameter of any kernel");
  expect_diag(x, 1, SU_ERROR, 0, 0, "define 'F' expects true or false, got '2'");
  expect_diag(x, 2, SU_ERROR, 0, 0, "'warps' must be a power of two between 1 and 32, got 3");
  done(x);
}

/* A dtype parameter stands for its bound type wherever a type is written; a define or
 * an earlier parameter sets it; the kernel's parameters take the bound types. */
static void test_dtype_params(void **st) {
  (void)st;
  const char *src = "kernel k<T: dtype = f16, A: dtype = T, B: i32 = 16>(x: *T, n: i32) {\n"
                    "  let v = load(x + arange(0, B));\n"
                    "  let w: A = v as A;\n"
                    "  let z = zeros<T>(B, 2);\n"
                    "  let f = full<A>(1.0, B) * 2.0;\n"
                    "  let p = x as *A;\n"
                    "}\n";
  fixture *x = check(src);
  assert_true(x->ok);
  assert_string_equal(type_of(x, "v"), "tile<16xf16>");
  assert_string_equal(type_of(x, "w"), "tile<16xf16>");
  assert_string_equal(type_of(x, "z"), "tile<16x2xf16>");
  assert_string_equal(type_of(x, "f"), "tile<16xf16>");
  assert_string_equal(type_of(x, "p"), "*f16");
  ast_node *k = x->f->decls.items[0];
  sema_sym *px = k->params.items[0]->sema_ref;
  assert_string_equal(sema_type_str(x->a, px->type), "*f16");
  done(x);
  /* T set to bf16: A follows T; A set alone leaves T at its default. */
  sema_define bf[] = {{"T", "bf16"}};
  x = check_with(src, bf, 1);
  assert_true(x->ok);
  assert_string_equal(type_of(x, "v"), "tile<16xbf16>");
  assert_string_equal(type_of(x, "w"), "tile<16xbf16>");
  done(x);
  sema_define a32[] = {{"A", "f32"}, {"B", "32"}};
  x = check_with(src, a32, 2);
  assert_true(x->ok);
  assert_string_equal(type_of(x, "v"), "tile<32xf16>");
  assert_string_equal(type_of(x, "w"), "tile<32xf32>");
  assert_string_equal(type_of(x, "f"), "tile<32xf32>");
  assert_string_equal(type_of(x, "p"), "*f32");
  done(x);
  sema_define bool_t[] = {{"T", "bool"}};
  x = check_with("kernel k<T: dtype = f16>(x: *T) { let v = load(x); }\n", bool_t, 1);
  assert_true(x->ok);
  assert_string_equal(type_of(x, "v"), "i1");
  done(x);
  /* errors: a bad define, a dtype where a value goes, a dtype in arithmetic; each once */
  sema_define bad[] = {{"T", "half"}};
  x = check_with("kernel k<T: dtype = f16>(x: *T) { let a = T; let b = T * 2; }\n", bad, 1);
  assert_false(x->ok);
  assert_int_equal(x->d.nerrors, 3);
  expect_diag(x, 0, SU_ERROR, 0, 0,
              "define 'T' expects a dtype (i1 (bool), i8, i16, i32, i64, u8, u16, u32, u64, f16, "
              "bf16, f32, f64, f8e4m3, f8e5m2), got 'half'");
  expect_diag(x, 1, SU_ERROR, 1, 43, "'T' is a dtype, not a value");
  done(x);
  /* an int parameter is not a type, a dtype parameter is no int */
  x = check("kernel k<N: i32 = 4, T: dtype = f32>(x: *N) { let a = arange(0, T); }\n");
  assert_int_equal(x->d.nerrors, 2);
  expect_diag(x, 0, SU_ERROR, 1, 42, "'N' is not a type");
  expect_diag(x, 1, SU_NOTE, 1, 10, "'N' is declared here");
  expect_diag(x, 2, SU_ERROR, 1, 65, "'T' is a dtype, not a value");
  done(x);
}

static void test_helpers(void **st) {
  (void)st;
  fixture *x = check("fn twice(v) { return v + v; }\n"
                     "fn blk(N) { return arange(0, N); }\n"
                     "kernel k(h: *f16) {\n"
                     "  let a = twice(load(h));\n"
                     "  let b = twice(3);\n"
                     "  let c = blk(32);\n"
                     "}\n");
  assert_true(x->ok);
  ast_node *ca = find_let(x, "a")->rhs, *cb = find_let(x, "b")->rhs;
  assert_string_equal(type_of(x, "a"), "f16");
  assert_string_equal(type_of(x, "b"), "i32");
  assert_string_equal(type_of(x, "c"), "tile<32xi32>");
  /* one instance per call, each with its own types */
  assert_non_null(ca->body);
  assert_non_null(cb->body);
  assert_ptr_not_equal(ca->body, cb->body);
  assert_true(cb->sema_is_const);
  assert_int_equal(cb->sema_const.i, 6);
  done(x);
  x = check("fn f(v) { return g(v); }\nfn g(v) { return f(v); }\nkernel k() { let a = f(1); }\n");
  assert_false(x->ok);
  expect_diag(x, 0, SU_ERROR, 2, 18, "recursive call to 'f'");
  done(x);
}

static void test_static_range_and_const_if(void **st) {
  (void)st;
  fixture *x = check("kernel k<USE: bool = false>(x: *f32) {\n"
                     "  var acc = 0.0;\n"
                     "  for i in static_range(0, 8, 2) { acc += i; }\n"
                     "  if USE { let bad = undefined_name; }\n"
                     "}\n");
  assert_true(x->ok);
  ast_node *loop = x->f->decls.items[0]->body->stmts.items[1];
  assert_int_equal(loop->stmts.len, 4);
  done(x);
}

static void test_errors(void **st) {
  (void)st;
  fixture *x = check(KERNEL(
      "  let a = foo;\n"
      "  let b = 1;\n"
      "  b = 2;\n"
      "  let c = where(n > 0, 1, 2, 3);\n"
      "  let d = load(x + arange(0, 16), arange(0, 16));\n"
      "  let e = sum(arange(0, 16), 1);\n"
      "  let f = a + 1;\n"));
  assert_int_equal(x->d.nerrors, 5); /* f's error is silenced: a is already wrong */
  expect_diag(x, 0, SU_ERROR, 2, 11, "use of undeclared name 'foo'");
  expect_diag(x, 1, SU_ERROR, 4, 3, "'b' is immutable; declare it with 'var' to assign");
  expect_diag(x, 2, SU_NOTE, 3, 7, "'b' is declared here");
  expect_diag(x, 3, SU_ERROR, 5, 11, "expected 3 arguments to 'where', got 4");
  expect_diag(x, 4, SU_ERROR, 6, 35, "mask of 'load' must be i1, got 'tile<16xi32>'");
  expect_diag(x, 5, SU_ERROR, 7, 30, "axis 1 is out of range for 'tile<16xi32>' (rank 1)");
  done(x);
}

static void test_loops_and_dot(void **st) {
  (void)st;
  fixture *x = check(KERNEL(
      "  var acc = zeros(32, 32);\n"
      "  for i in range(n) { acc = dot(zeros<f16>(32, 16), zeros<f16>(16, 32), acc); }\n"
      "  let bad = dot(zeros<f16>(32, 8), zeros<f16>(8, 32));\n"
      "  var j = 0;\n"
      "  if n > 3 { j = 1.5; } else { j = j + 1; }\n"));
  assert_int_equal(x->d.nerrors, 2);
  expect_diag(x, 0, SU_ERROR, 4, 13,
              "dimensions of 'dot' must be at least 16, got 'tile<32x8xf16>' and 'tile<8x32xf16>'");
  expect_diag(x, 1, SU_ERROR, 6, 18, "cannot assign 'f32' to 'j' of type 'i32'");
  /* the loop carries acc; the if yields j (recorded even from the erroneous branch) */
  sema_flow *loop = x->f->decls.items[0]->body->stmts.items[1]->sema_ref;
  assert_int_equal(loop->nsyms, 1);
  assert_string_equal(loop->syms[0]->name, "acc");
  sema_flow *iff = x->f->decls.items[0]->body->stmts.items[4]->sema_ref;
  assert_int_equal(iff->nsyms, 1);
  done(x);
}

static void test_scopes_and_operators(void **st) {
  (void)st;
  fixture *x = check("kernel k(n: i32, x: *f32) {\n"
                     "  let n = 1;\n"
                     "  { let x = 2.0; let y = x & 1.0; }\n"
                     "  for i in range(0, n, 0) { }\n"
                     "}\n");
  assert_int_equal(x->d.nerrors, 3);
  expect_diag(x, 0, SU_ERROR, 2, 7, "redeclaration of 'n'");
  expect_diag(x, 1, SU_NOTE, 1, 10, "'n' was declared here");
  /* at the operator once the parser records it (name_loc), else at the expression */
  expect_diag(x, 2, SU_ERROR, 3, 0, "invalid operands to '&': 'f32' and 'f32'");
  expect_diag(x, 3, SU_ERROR, 4, 24, "step of 'range' must be positive, got 0");
  done(x);
}

/* The math builtins of issue 12: their result types, the exact compile-time cdiv, '**'. */
static void test_more_math(void **st) {
  (void)st;
  fixture *x = check(KERNEL(
      "  let offs = arange(0, 64);\n"
      "  let a = round(n);\n"
      "  let b = pow(load(h), 2);\n"
      "  let c = umulhi(u, n);\n"
      "  let d = isnan(load(x + offs));\n"
      "  let e = copysign(load(h), -1.0);\n"
      "  let f = fdiv(load(x), 3.0, true);\n"
      "  let g = cdiv(offs, 3);\n"
      "  let p = load(h + offs) ** 2;\n"
      "  let q = n ** 0.5;\n"
      "  let r = -2.0 ** 2.0;\n"
      "  let s = trunc(load(h)) + rint(load(h)) + log1p(load(h)) + expm1(load(h));\n"
      "  let t = sqrt_rn(m) + div_rn(m, 2);\n"
      "  let cm = cdiv(-7, 2);\n"
      "  let cx = cdiv(2147483647, 2);\n"
      "  let cu = cdiv(4294967295 as u32, 2 as u32);\n"));
  assert_true(x->ok);
  assert_string_equal(type_of(x, "a"), "f32");
  assert_string_equal(type_of(x, "b"), "f16");
  assert_string_equal(type_of(x, "c"), "u32");
  assert_string_equal(type_of(x, "d"), "tile<64xi1>");
  assert_string_equal(type_of(x, "e"), "f16");
  assert_string_equal(type_of(x, "f"), "f32");
  assert_string_equal(type_of(x, "g"), "tile<64xi32>");
  assert_string_equal(type_of(x, "p"), "tile<64xf16>");
  assert_string_equal(type_of(x, "q"), "f32");
  assert_string_equal(type_of(x, "s"), "f16");
  assert_string_equal(type_of(x, "t"), "f32");
  /* '**' groups tighter than unary minus and does not fold (it is pow) */
  ast_node *r = find_let(x, "r")->rhs;
  assert_int_equal(r->kind, AST_UNARY);
  assert_false(r->sema_is_const);
  /* cdiv folds to the exact ceiling, without the overflow of (a + b - 1) / b */
  assert_int_equal(find_let(x, "cm")->rhs->sema_const.i, -3);
  assert_int_equal(find_let(x, "cx")->rhs->sema_const.i, 1073741824);
  assert_int_equal(find_let(x, "cu")->rhs->sema_const.i, 2147483648);
  done(x);
  x = check(KERNEL(
      "  let a = umulhi(1.0, 2.0);\n"
      "  let b = n ** 2;\n"
      "  let c = fdiv(1.0, 2.0, n > 0);\n"
      "  let d = cdiv(n, 0) + cdiv(3, 0);\n"));
  assert_int_equal(x->d.nerrors, 4);
  expect_diag(x, 0, SU_ERROR, 2, 11, "arguments of 'umulhi' must be integers, got 'f32' and 'f32'");
  expect_diag(x, 1, SU_ERROR, 3, 13, "invalid operands to '**': 'i32' and 'i32'");
  expect_diag(x, 2, SU_NOTE, 3, 13,
              "'**' is pow(), a float function: convert an operand ('x as f32'), or multiply "
              "out a small integer power ('x * x')");
  expect_diag(x, 3, SU_ERROR, 4, 26, "ieee_rounding of 'fdiv' must be a compile-time i1 (true or false)");
  expect_diag(x, 4, SU_ERROR, 5, 24, "division by zero in constant expression");
  done(x);
}

/* rand, randn, randint: u32 words for offsets of any integer width, as Triton 3.6; f32
 * floats. */
static void test_random(void **st) {
  (void)st;
  fixture *x = check(KERNEL(
      "  let offs = arange(0, 64);\n"
      "  let a = randint(m, offs);\n"
      "  let b = randint(7, offs as i64, 7);\n"
      "  let c = rand(n, offs);\n"
      "  let d = randn(u, offs as u64, n_rounds = 3);\n"
      "  let e = rand(1, 0);\n"
      "  let f = randint(m, offs as i16);\n"
      "  let g = randint(u, offs as u8);\n"));
  assert_true(x->ok);
  assert_string_equal(type_of(x, "a"), "tile<64xu32>");
  assert_string_equal(type_of(x, "b"), "tile<64xu32>");
  assert_string_equal(type_of(x, "c"), "tile<64xf32>");
  assert_string_equal(type_of(x, "d"), "tile<64xf32>");
  assert_string_equal(type_of(x, "e"), "f32");
  assert_string_equal(type_of(x, "f"), "tile<64xu32>");
  assert_string_equal(type_of(x, "g"), "tile<64xu32>");
  done(x);
  x = check(KERNEL(
      "  let offs = arange(0, 64);\n"
      "  let a = rand(offs, offs);\n"
      "  let b = rand(1.5, offs);\n"
      "  let c = randn(n, offs < 5);\n"
      "  let d = randint(n, load(x + offs));\n"
      "  let e = rand(n, offs, 0);\n"
      "  let f = rand(n, offs, n);\n"));
  assert_int_equal(x->d.nerrors, 6);
  expect_diag(x, 0, SU_ERROR, 3, 16, "seed of 'rand' must be an integer scalar, got 'tile<64xi32>'");
  expect_diag(x, 1, SU_ERROR, 4, 16, "seed of 'rand' must be an integer scalar, got 'f32'");
  expect_diag(x, 2, SU_ERROR, 5, 20, "offset of 'randn' must be integers, got 'tile<64xi1>'");
  expect_diag(x, 3, SU_ERROR, 6, 22, "offset of 'randint' must be integers, got 'tile<64xf32>'");
  expect_diag(x, 4, SU_ERROR, 7, 25, "n_rounds of 'rand' must be between 1 and 32, got 0");
  expect_diag(x, 5, SU_ERROR, 8, 25, "n_rounds of 'rand' must be a compile-time integer");
  done(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_types_and_promotion), cmocka_unit_test(test_fp8), cmocka_unit_test(test_broadcast),
      cmocka_unit_test(test_constants),           cmocka_unit_test(test_float_constants_round_to_type),
      cmocka_unit_test(test_defines),             cmocka_unit_test(test_dtype_params),
      cmocka_unit_test(test_helpers),             cmocka_unit_test(test_static_range_and_const_if),
      cmocka_unit_test(test_errors),              cmocka_unit_test(test_loops_and_dot),
      cmocka_unit_test(test_scopes_and_operators),
      cmocka_unit_test(test_more_math),           cmocka_unit_test(test_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
