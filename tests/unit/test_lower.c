/* Unit tests for sema_lower: the ops produced from small kernels, and that every result
 * passes ir_verify. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sema/sema.h"

typedef struct {
  su_arena *a;
  ir_module *m;
} lowered;

/* Parses, checks, lowers and verifies src; asserts every stage succeeds. */
static lowered lower_with(const char *src, const sema_define *defs, int ndefs) {
  lowered r = {su_arena_new(), NULL};
  su_diags d;
  su_diags_init(&d, r.a, stderr);
  su_source *s = su_source_new(r.a, "t.tk", src, strlen(src));
  ast_file *f = ast_parse(r.a, s, &d, su_map_new(r.a));
  assert_int_equal(d.nerrors, 0);
  r.m = ir_module_new(r.a, "t.tk");
  sema_options o = {.defines = defs, .ndefines = ndefs};
  assert_true(sema_check(r.a, f, r.m, &o, &d));
  sema_lower(f, r.m);
  assert_true(ir_verify(r.m, &d));
  return r;
}
static lowered lower(const char *src) { return lower_with(src, NULL, 0); }

typedef struct {
  ir_opcode opc;
  int n;
  ir_op *last;
} counter;

static void count_op(ir_op *op, void *ctx) {
  counter *c = ctx;
  if (op->opc == c->opc) c->n++, c->last = op;
}

/* Number of ops with opcode opc in kernel i (nested regions included). */
static int count(lowered *r, int i, ir_opcode opc) {
  counter c = {opc, 0, NULL};
  ir_walk(r->m->funcs[i]->body, count_op, &c);
  return c.n;
}
static ir_op *last(lowered *r, int i, ir_opcode opc) {
  counter c = {opc, 0, NULL};
  ir_walk(r->m->funcs[i]->body, count_op, &c);
  return c.last;
}

static void test_softmax(void **st) {
  (void)st;
  lowered r = lower("kernel softmax<BLOCK: i32 = 1024>(x: *f32, y: *f32, stride: i64, n: i32) {\n"
                    "  let row = program_id(0);\n"
                    "  let cols = arange(0, BLOCK);\n"
                    "  let mask = cols < n;\n"
                    "  let v = load(x + row * stride + cols, mask, -inf);\n"
                    "  let e = exp(v - max(v, 0));\n"
                    "  store(y + row * stride + cols, e / sum(e, 0), mask);\n"
                    "}\n");
  assert_int_equal(r.m->nfuncs, 1);
  ir_func *f = r.m->funcs[0];
  assert_int_equal(f->body->nargs, 4);
  assert_string_equal(f->param_names[2], "stride");
  assert_int_equal(f->nbindings, 1);
  assert_int_equal(f->bindings[0].ival, 1024);
  assert_int_equal(count(&r, 0, IR_LOAD), 1);
  assert_int_equal(last(&r, 0, IR_LOAD)->noperands, 3); /* ptr, mask, other */
  assert_int_equal(count(&r, 0, IR_STORE), 1);
  assert_int_equal(count(&r, 0, IR_REDUCE), 2);
  assert_int_equal(count(&r, 0, IR_ADDPTR), 4);
  assert_int_equal(count(&r, 0, IR_CAST), 2); /* row (i32) widened to i64 twice */
  assert_int_equal(f->body->last->opc, IR_RETURN);
  /* locations are the .tk ones */
  ir_op *ld = last(&r, 0, IR_LOAD);
  assert_int_equal(ld->loc.line, 5);
  assert_int_equal(ld->loc.col, 11);
  su_arena_free(r.a);
}

static void test_for_carries_vars(void **st) {
  (void)st;
  lowered r = lower("kernel k(a: *f16, K: i32) {\n"
                    "  var acc = zeros(16, 16);\n"
                    "  var s = 0;\n"
                    "  let t = arange(0, 16)[:, None] * 16 + arange(0, 16)[None, :];\n"
                    "  for k in range(0, K, 16) {\n"
                    "    acc = dot(load(a + t), load(a + t), acc);\n"
                    "    s += k;\n"
                    "  }\n"
                    "  store(a + t, acc as f16);\n"
                    "}\n");
  assert_int_equal(count(&r, 0, IR_FOR), 1);
  ir_op *loop = last(&r, 0, IR_FOR);
  assert_int_equal(loop->nresults, 2);
  assert_int_equal(loop->regions[0]->nargs, 3);
  assert_int_equal(loop->regions[0]->last->opc, IR_YIELD);
  assert_int_equal(count(&r, 0, IR_DOT), 1);
  assert_int_equal(count(&r, 0, IR_EXPAND_DIMS), 2);
  assert_int_equal(count(&r, 0, IR_BROADCAST), 2);
  su_arena_free(r.a);
}

static void test_if_results(void **st) {
  (void)st;
  lowered r = lower("kernel k(x: *f32, n: i32) {\n"
                    "  var v = 1.0;\n"
                    "  var w = 2;\n"
                    "  if n > 0 { v = 3.0; } else if n < -4 { w = 5; }\n"
                    "  store(x, v + w);\n"
                    "}\n");
  assert_int_equal(count(&r, 0, IR_IF), 2);
  ir_op *outer = NULL;
  for (ir_op *op = r.m->funcs[0]->body->first; op; op = op->next)
    if (op->opc == IR_IF) outer = op;
  assert_non_null(outer);
  assert_int_equal(outer->nresults, 2); /* v and w */
  su_arena_free(r.a);
}

static void test_helpers_and_unrolling(void **st) {
  (void)st;
  lowered r = lower("fn gelu(x) { return 0.5 * x * (1.0 + erf(x * 0.7071067811865476)); }\n"
                    "kernel k(x: *f32, h: *f16) {\n"
                    "  let c = arange(0, 64);\n"
                    "  store(x + c, gelu(load(x + c)));\n"
                    "  store(h + c, gelu(load(h + c)));\n"
                    "  var acc = 0;\n"
                    "  for i in static_range(0, 3) { acc += i; }\n"
                    "  store(x, acc as f32);\n"
                    "}\n");
  assert_int_equal(count(&r, 0, IR_ERF), 2);
  assert_int_equal(count(&r, 0, IR_FOR), 0);
  /* 2 adds per gelu instance, 3 unrolled acc += i, 2 address adds are addptr */
  assert_int_equal(count(&r, 0, IR_ADD), 2 + 3);
  su_arena_free(r.a);
}

static void test_builtins(void **st) {
  (void)st;
  sema_define defs[] = {{"warps", "2"}};
  lowered r = lower_with("kernel k(x: *f32, n: i32) {\n"
                         "  let t = load(x + arange(0, 8)[:, None] * 4 + arange(0, 4)[None, :]);\n"
                         "  let a = sum(t);\n"
                         "  let b = argmax(t, 1);\n"
                         "  let c = cumsum(t, -1);\n"
                         "  let d = clamp(t, 0, 1);\n"
                         "  let e = where(t > 0, t, 0);\n"
                         "  let f = trans(t);\n"
                         "  device_print(\"a\", a, b);\n"
                         "  device_assert(n > 0, \"n\");\n"
                         "  store(x, a + cdiv(n, 3));\n"
                         "}\n", defs, 1);
  assert_int_equal(r.m->funcs[0]->num_warps, 2);
  assert_int_equal(count(&r, 0, IR_RESHAPE), 1); /* sum without axis: to 1-D first */
  assert_int_equal(count(&r, 0, IR_REDUCE), 1);
  assert_int_equal(count(&r, 0, IR_ARGREDUCE), 1);
  assert_int_equal(last(&r, 0, IR_SCAN)->attr2, 1);
  assert_int_equal(count(&r, 0, IR_MIN), 1);
  assert_int_equal(count(&r, 0, IR_MAX), 1);
  assert_int_equal(count(&r, 0, IR_SELECT), 1);
  assert_int_equal(count(&r, 0, IR_TRANS), 1);
  assert_int_equal(last(&r, 0, IR_PRINT)->noperands, 2);
  assert_string_equal(last(&r, 0, IR_ASSERT)->str, "n");
  assert_int_equal(count(&r, 0, IR_CDIV), 1); /* one op, not (a + b - 1) / b */
  assert_int_equal(count(&r, 0, IR_DIV), 0);
  su_arena_free(r.a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_softmax),       cmocka_unit_test(test_for_carries_vars),
      cmocka_unit_test(test_if_results),    cmocka_unit_test(test_helpers_and_unrolling),
      cmocka_unit_test(test_builtins),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
