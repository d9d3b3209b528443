/* Unit tests for passes/: each pass on kernels built with the IR builder, and the
 * pipeline's options. The kernels end in stores so that what a pass leaves is observable
 * through the value each store writes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../passes/passes.h"

typedef struct {
  su_arena *a;
  ir_module *m;
  ir_func *f;
  ir_builder b;
} kernel;

static kernel *kernel_new(void) {
  su_arena *a = su_arena_new();
  kernel *k = SU_NEW(a, kernel);
  k->a = a;
  k->m = ir_module_new(a, "test.tk");
  ir_loc loc = {1, 1};
  k->f = ir_func_new(k->m, "k", loc);
  k->b.m = k->m;
  k->b.block = k->f->body;
  k->b.loc = loc;
  return k;
}

static void kernel_free(kernel *k) { su_arena_free(k->a); }

static const ir_type *scalar(kernel *k, tk_dtype d) { return ir_type_scalar(k->m, d); }

static ir_value *param(kernel *k, const char *name, tk_dtype d) {
  return ir_func_add_param(k->m, k->f, name, scalar(k, d));
}

static ir_value *ptr_param(kernel *k, tk_dtype d) {
  return ir_func_add_param(k->m, k->f, "p", ir_type_ptr(k->m, scalar(k, d)));
}

static ir_value *ci(kernel *k, tk_dtype d, int64_t v) { return ir_const_int(&k->b, scalar(k, d), v); }
static ir_value *cf(kernel *k, tk_dtype d, double v) { return ir_const_float(&k->b, scalar(k, d), v); }

static void store(kernel *k, ir_value *p, ir_value *v) {
  ir_value *o[2] = {p, v};
  ir_build(&k->b, IR_STORE, 2, o, 0, NULL);
}

static void finish(kernel *k) { ir_build(&k->b, IR_RETURN, 0, NULL, 0, NULL); }

static ir_value *cast(kernel *k, ir_value *x, tk_dtype to) {
  return ir_build1(&k->b, IR_CAST, scalar(k, to), 1, &x);
}

/* The value written by the n-th store of the kernel's top level. */
static ir_value *stored(kernel *k, int n) {
  for (ir_op *op = k->f->body->first; op; op = op->next)
    if (op->opc == IR_STORE && n-- == 0) return op->operands[1];
  fail_msg("no store #%d", n);
  return NULL;
}

static bool is_const_int(ir_value *v, int64_t x) {
  return v->def && v->def->opc == IR_CONST && v->def->cval.i == x;
}

static ir_opcode def_opc(ir_value *v) { return v->def ? v->def->opc : IR_NOPCODES; }

static void count_one(ir_op *op, void *ctx) {
  int *c = ctx;
  if (op->opc == (ir_opcode)c[0]) c[1]++;
}

/* Ops of opcode opc anywhere in the kernel. */
static int count(kernel *k, ir_opcode opc) {
  int c[2] = {opc, 0};
  ir_walk(k->f->body, count_one, c);
  return c[1];
}

/* True if a comes before b in the same block. */
static bool precedes(const ir_op *a, const ir_op *b) {
  for (const ir_op *o = a->next; o; o = o->next)
    if (o == b) return true;
  return false;
}

/* ---- constfold ---------------------------------------------------------------------- */

static void test_fold_int_wraps(void **state) {
  (void)state;
  kernel *k = kernel_new();
  ir_value *p8 = ptr_param(k, TK_I8), *pu = ptr_param(k, TK_U32), *p64 = ptr_param(k, TK_I64);
  store(k, p8, ir_binary(&k->b, IR_ADD, ci(k, TK_I8, 100), ci(k, TK_I8, 100)));
  store(k, pu, ir_binary(&k->b, IR_SUB, ci(k, TK_U32, 0), ci(k, TK_U32, 1)));
  store(k, pu, ir_binary(&k->b, IR_DIV, ci(k, TK_U32, 0xffffffff), ci(k, TK_U32, 2)));
  store(k, p64, ir_binary(&k->b, IR_MUL, ci(k, TK_I64, INT64_MAX), ci(k, TK_I64, 2)));
  store(k, p8, ir_binary(&k->b, IR_SHR, ci(k, TK_I8, -128), ci(k, TK_I8, 1)));
  store(k, p8, ir_unary(&k->b, IR_NEG, ci(k, TK_I8, -128)));
  store(k, pu, ir_binary(&k->b, IR_MAX, ci(k, TK_U32, 0xffffffff), ci(k, TK_U32, 1)));
  store(k, p8, ir_binary(&k->b, IR_REM, ci(k, TK_I8, -7), ci(k, TK_I8, 2)));
  finish(k);
  assert_true(pass_constfold(k->m, k->f));
  assert_true(is_const_int(stored(k, 0), -56));
  assert_true(is_const_int(stored(k, 1), 0xffffffff)); /* unsigned: zero-extended */
  assert_true(is_const_int(stored(k, 2), 0x7fffffff)); /* unsigned division */
  assert_true(is_const_int(stored(k, 3), -2));
  assert_true(is_const_int(stored(k, 4), -64)); /* arithmetic shift */
  assert_true(is_const_int(stored(k, 5), -128));
  assert_true(is_const_int(stored(k, 6), 0xffffffff)); /* unsigned compare */
  assert_true(is_const_int(stored(k, 7), -1));          /* C remainder */
  assert_false(pass_constfold(k->m, k->f));
  kernel_free(k);
}

static void test_fold_keeps_faults(void **state) {
  (void)state;
  kernel *k = kernel_new();
  ir_value *p = ptr_param(k, TK_I32);
  store(k, p, ir_binary(&k->b, IR_DIV, ci(k, TK_I32, 7), ci(k, TK_I32, 0)));
  store(k, p, ir_binary(&k->b, IR_REM, ci(k, TK_I32, 7), ci(k, TK_I32, 0)));
  store(k, p, ir_binary(&k->b, IR_DIV, ci(k, TK_I32, INT32_MIN), ci(k, TK_I32, -1)));
  store(k, p, ir_binary(&k->b, IR_SHL, ci(k, TK_I32, 1), ci(k, TK_I32, 32)));
  store(k, p, ir_binary(&k->b, IR_SHL, ci(k, TK_I32, 1), ci(k, TK_I32, -1)));
  ir_value *cond = ir_const_int(&k->b, scalar(k, TK_I1), 1);
  ir_op *as = ir_build(&k->b, IR_ASSERT, 1, &cond, 0, NULL);
  as->str = "never folded away";
  finish(k);
  assert_false(pass_constfold(k->m, k->f));
  assert_int_equal(def_opc(stored(k, 0)), IR_DIV);
  assert_int_equal(def_opc(stored(k, 1)), IR_REM);
  assert_int_equal(def_opc(stored(k, 2)), IR_DIV);
  assert_int_equal(def_opc(stored(k, 3)), IR_SHL);
  assert_int_equal(def_opc(stored(k, 4)), IR_SHL);
  assert_int_equal(count(k, IR_ASSERT), 1);
  assert_int_equal(count(k, IR_STORE), 5);
  kernel_free(k);
}

static void test_fold_float_precision(void **state) {
  (void)state;
  kernel *k = kernel_new();
  ir_value *p32 = ptr_param(k, TK_F32), *p16 = ptr_param(k, TK_F16), *pb = ptr_param(k, TK_BF16);
  store(k, p32, ir_binary(&k->b, IR_ADD, cf(k, TK_F32, 0.1f), cf(k, TK_F32, 0.2f)));
  store(k, p16, ir_binary(&k->b, IR_ADD, cf(k, TK_F16, 1.0), cf(k, TK_F16, ldexp(1, -11))));
  store(k, p16, ir_binary(&k->b, IR_ADD, cf(k, TK_F16, 1.0), cf(k, TK_F16, 3 * ldexp(1, -11))));
  store(k, p16, ir_binary(&k->b, IR_ADD, cf(k, TK_F16, 65504), cf(k, TK_F16, 16)));
  store(k, pb, ir_binary(&k->b, IR_ADD, cf(k, TK_BF16, 1.0), cf(k, TK_BF16, ldexp(1, -8))));
  store(k, p32, ir_binary(&k->b, IR_MIN, cf(k, TK_F32, 1.0), cf(k, TK_F32, NAN)));
  store(k, p32, ir_unary(&k->b, IR_EXP, cf(k, TK_F32, 1.0)));
  store(k, p16, ir_binary(&k->b, IR_MUL, cf(k, TK_F16, ldexp(1, -14)), cf(k, TK_F16, ldexp(1, -10))));
  finish(k);
  assert_true(pass_constfold(k->m, k->f));
  float want = 0.1f + 0.2f;
  assert_true(stored(k, 0)->def->cval.f == (double)want);
  assert_true(stored(k, 1)->def->cval.f == 1.0);                 /* a tie goes to even */
  assert_true(stored(k, 2)->def->cval.f == 1.0 + ldexp(1, -9));  /* 1.5 ulp rounds up */
  assert_true(isinf(stored(k, 3)->def->cval.f));                 /* past f16's max */
  assert_true(stored(k, 4)->def->cval.f == 1.0);
  assert_true(isnan(stored(k, 5)->def->cval.f));                 /* NaN propagates */
  assert_int_equal(def_opc(stored(k, 6)), IR_EXP);               /* library-dependent */
  assert_true(stored(k, 7)->def->cval.f == ldexp(1, -24));       /* smallest subnormal */
  kernel_free(k);
}

static void test_fold_cmp_and_cast(void **state) {
  (void)state;
  kernel *k = kernel_new();
  ir_value *p1 = ptr_param(k, TK_I1), *p32 = ptr_param(k, TK_I32), *p8 = ptr_param(k, TK_U8);
  ir_value *pf = ptr_param(k, TK_F16);
  store(k, p1, ir_cmp_build(&k->b, IR_CMP_LT, ci(k, TK_I32, -1), ci(k, TK_I32, 1)));
  store(k, p1, ir_cmp_build(&k->b, IR_CMP_LT, ci(k, TK_U32, 0xffffffff), ci(k, TK_U32, 1)));
  store(k, p1, ir_cmp_build(&k->b, IR_CMP_NE, cf(k, TK_F32, NAN), cf(k, TK_F32, NAN)));
  store(k, p1, ir_cmp_build(&k->b, IR_CMP_GE, cf(k, TK_F32, NAN), cf(k, TK_F32, 0)));
  store(k, p32, cast(k, cf(k, TK_F32, -3.9), TK_I32));
  store(k, p32, cast(k, cf(k, TK_F32, 1e10), TK_I32));
  store(k, p32, cast(k, cf(k, TK_F32, NAN), TK_I32));
  store(k, p8, cast(k, ci(k, TK_I32, -1), TK_U8));
  store(k, p32, cast(k, ci(k, TK_U8, 255), TK_I32));
  store(k, p32, cast(k, ci(k, TK_I8, -1), TK_I32));
  store(k, p1, cast(k, ci(k, TK_I32, 4), TK_I1));
  store(k, p8, cast(k, cf(k, TK_F32, -5.0), TK_U8));
  store(k, p32, cast(k, cf(k, TK_F32, -1e10), TK_I32));
  store(k, pf, cast(k, cf(k, TK_F64, 1.0 + ldexp(1, -11) + ldexp(1, -30)), TK_F16));
  finish(k);
  assert_true(pass_constfold(k->m, k->f));
  int64_t want[] = {1, 0, 1, 0, -3, INT32_MAX, 0, 255, 255, -1, 1, 0, INT32_MIN};
  for (int i = 0; i < 13; i++) {
    if (!is_const_int(stored(k, i), want[i])) fail_msg("store %d", i);
  }
  assert_true(stored(k, 13)->def->cval.f == 1.0 + ldexp(1, -10)); /* above the tie: up */
  kernel_free(k);
}

static void test_fold_shapes(void **state) {
  (void)state;
  kernel *k = kernel_new();
  int shape[2] = {4, 8}, row[2] = {1, 8};
  const ir_type *t = ir_type_tile(k->m, scalar(k, TK_I32), 2, shape);
  const ir_type *r = ir_type_tile(k->m, scalar(k, TK_I32), 2, row);
  const ir_type *v = ir_type_tile(k->m, scalar(k, TK_I32), 1, shape + 1);
  ir_value *pt = ir_func_add_param(k->m, k->f, "p", ir_type_tile(k->m, ir_type_ptr(k->m, scalar(k, TK_I32)), 2, shape));
  ir_value *pv = ir_func_add_param(k->m, k->f, "q", ir_type_tile(k->m, ir_type_ptr(k->m, scalar(k, TK_I32)), 1, shape + 1));
  ir_value *c = ci(k, TK_I32, 3);
  ir_value *s = ir_build1(&k->b, IR_SPLAT, r, 1, &c);
  ir_value *bc = ir_build1(&k->b, IR_BROADCAST, t, 1, &s);
  store(k, pt, ir_binary(&k->b, IR_ADD, bc, bc));
  ir_op *red = ir_build(&k->b, IR_REDUCE, 1, &bc, 1, &v);
  red->attr = IR_RED_SUM;
  red->attr2 = 0;
  store(k, pv, red->results[0]);
  finish(k);
  assert_true(pass_constfold(k->m, k->f));
  assert_true(is_const_int(stored(k, 0), 6));
  assert_ptr_equal(stored(k, 0)->type, t);
  assert_true(is_const_int(stored(k, 1), 12)); /* 4 rows of 3 */
  assert_ptr_equal(stored(k, 1)->type, v);
  kernel_free(k);
}

/* ---- simplify ----------------------------------------------------------------------- */

static void test_simplify_identities(void **state) {
  (void)state;
  kernel *k = kernel_new();
  ir_value *pi = ptr_param(k, TK_I32), *pf = ptr_param(k, TK_F32), *p1 = ptr_param(k, TK_I1);
  ir_value *x = param(k, "x", TK_I32), *y = param(k, "y", TK_F32);
  store(k, pi, ir_binary(&k->b, IR_ADD, ci(k, TK_I32, 0), x));             /* 0 */
  store(k, pi, ir_binary(&k->b, IR_MUL, x, ci(k, TK_I32, 1)));             /* 1 */
  store(k, pi, ir_binary(&k->b, IR_MUL, x, ci(k, TK_I32, 0)));             /* 2 */
  store(k, pi, ir_binary(&k->b, IR_SUB, x, x));                            /* 3 */
  store(k, pi, ir_unary(&k->b, IR_NEG, ir_unary(&k->b, IR_NEG, x)));      /* 4 */
  store(k, pi, cast(k, x, TK_I32));                                        /* 5 */
  store(k, pf, ir_binary(&k->b, IR_MUL, y, cf(k, TK_F32, 0)));             /* 6: NaN*0 */
  store(k, pf, ir_binary(&k->b, IR_SUB, y, y));                            /* 7: inf-inf */
  store(k, pf, ir_binary(&k->b, IR_ADD, y, cf(k, TK_F32, 0)));             /* 8: -0+0 */
  store(k, pf, ir_binary(&k->b, IR_ADD, y, cf(k, TK_F32, -0.0)));          /* 9 */
  store(k, p1, ir_cmp_build(&k->b, IR_CMP_LE, x, x));                      /* 10 */
  store(k, p1, ir_cmp_build(&k->b, IR_CMP_LT, y, y));                      /* 11 */
  store(k, pi, ir_binary(&k->b, IR_MUL, x, ci(k, TK_I32, 8)));             /* 12 */
  ir_value *sel[3] = {ir_const_int(&k->b, scalar(k, TK_I1), 0), x, ci(k, TK_I32, 5)};
  store(k, pi, ir_build1(&k->b, IR_SELECT, scalar(k, TK_I32), 3, sel));    /* 13 */
  store(k, pi, ir_binary(&k->b, IR_AND, x, ci(k, TK_I32, -1)));            /* 14 */
  finish(k);
  assert_true(pass_simplify(k->m, k->f));
  assert_ptr_equal(stored(k, 0), x);
  assert_ptr_equal(stored(k, 1), x);
  assert_true(is_const_int(stored(k, 2), 0));
  assert_true(is_const_int(stored(k, 3), 0));
  assert_ptr_equal(stored(k, 4), x);
  assert_ptr_equal(stored(k, 5), x);
  assert_int_equal(def_opc(stored(k, 6)), IR_MUL);
  assert_int_equal(def_opc(stored(k, 7)), IR_SUB);
  assert_int_equal(def_opc(stored(k, 8)), IR_ADD);
  assert_ptr_equal(stored(k, 9), y);
  assert_true(is_const_int(stored(k, 10), 1));
  assert_int_equal(def_opc(stored(k, 11)), IR_CMP);
  ir_value *sh = stored(k, 12);
  assert_int_equal(def_opc(sh), IR_SHL);
  assert_true(is_const_int(sh->def->operands[1], 3));
  assert_true(is_const_int(stored(k, 13), 5));
  assert_ptr_equal(stored(k, 14), x);
  kernel_free(k);
}

static void test_simplify_control(void **state) {
  (void)state;
  kernel *k = kernel_new();
  ir_value *p = ptr_param(k, TK_I32), *x = param(k, "x", TK_I32);
  const ir_type *i32 = scalar(k, TK_I32);
  /* if true { yield x + 1 } else { yield 7 } */
  ir_op *iff = ir_build_if(&k->b, ir_const_int(&k->b, scalar(k, TK_I1), 1), 1, &i32);
  ir_builder tb = {k->m, iff->regions[0], NULL, k->b.loc}, eb = {k->m, iff->regions[1], NULL, k->b.loc};
  ir_value *sum = ir_binary(&tb, IR_ADD, x, ir_const_int(&tb, i32, 1));
  ir_build(&tb, IR_YIELD, 1, &sum, 0, NULL);
  ir_value *seven = ir_const_int(&eb, i32, 7);
  ir_build(&eb, IR_YIELD, 1, &seven, 0, NULL);
  store(k, p, iff->results[0]);
  /* for i in range(5, 5) carrying x: runs zero times */
  ir_op *loop = ir_build_for(&k->b, ci(k, TK_I32, 5), ci(k, TK_I32, 5), ci(k, TK_I32, 1), 1, &x);
  ir_builder lb = {k->m, loop->regions[0], NULL, k->b.loc};
  ir_value *next = ir_binary(&lb, IR_ADD, loop->regions[0]->args[1], loop->regions[0]->args[0]);
  ir_build(&lb, IR_YIELD, 1, &next, 0, NULL);
  store(k, p, loop->results[0]);
  finish(k);
  assert_true(pass_simplify(k->m, k->f));
  assert_int_equal(count(k, IR_IF), 0);
  assert_int_equal(count(k, IR_FOR), 0);
  assert_int_equal(def_opc(stored(k, 0)), IR_ADD);
  assert_ptr_equal(stored(k, 0)->def->parent, k->f->body);
  assert_ptr_equal(stored(k, 1), x);
  kernel_free(k);
}

/* ---- cse ---------------------------------------------------------------------------- */

static void test_cse(void **state) {
  (void)state;
  kernel *k = kernel_new();
  ir_value *p = ptr_param(k, TK_I32), *x = param(k, "x", TK_I32), *y = param(k, "y", TK_I32);
  ir_value *a = ir_binary(&k->b, IR_ADD, x, y);
  ir_value *b = ir_binary(&k->b, IR_ADD, y, x); /* commutative: the same */
  ir_value *lt = ir_cmp_build(&k->b, IR_CMP_LT, x, y);
  ir_value *gt = ir_cmp_build(&k->b, IR_CMP_GT, x, y); /* another predicate: kept */
  ir_value *d1 = ir_binary(&k->b, IR_SUB, x, y), *d2 = ir_binary(&k->b, IR_SUB, y, x);
  store(k, p, a);
  store(k, p, b);
  store(k, p, cast(k, lt, TK_I32));
  store(k, p, cast(k, gt, TK_I32));
  store(k, p, d1);
  store(k, p, d2);
  /* if lt { yield x + y (outer value reused); mul x, y (scoped) } */
  const ir_type *i32 = scalar(k, TK_I32);
  ir_op *iff = ir_build_if(&k->b, lt, 1, &i32);
  ir_builder tb = {k->m, iff->regions[0], NULL, k->b.loc}, eb = {k->m, iff->regions[1], NULL, k->b.loc};
  ir_value *inner = ir_binary(&tb, IR_ADD, x, y);
  ir_value *m1 = ir_binary(&tb, IR_MUL, x, y);
  ir_value *sum = ir_binary(&tb, IR_ADD, inner, m1);
  ir_build(&tb, IR_YIELD, 1, &sum, 0, NULL);
  ir_build(&eb, IR_YIELD, 1, &x, 0, NULL);
  store(k, p, iff->results[0]);
  ir_value *m2 = ir_binary(&k->b, IR_MUL, x, y); /* not available from inside the if */
  store(k, p, m2);
  finish(k);
  assert_true(pass_cse(k->m, k->f));
  assert_ptr_equal(stored(k, 0), stored(k, 1));
  assert_ptr_not_equal(stored(k, 2)->def->operands[0], stored(k, 3)->def->operands[0]);
  assert_ptr_not_equal(stored(k, 4), stored(k, 5));
  assert_ptr_equal(sum->def->operands[0], a);
  assert_int_equal(def_opc(stored(k, 7)), IR_MUL);
  assert_ptr_equal(stored(k, 7)->def->parent, k->f->body);
  assert_int_equal(count(k, IR_ADD), 2);
  assert_int_equal(count(k, IR_MUL), 2);
  assert_false(pass_cse(k->m, k->f));
  kernel_free(k);
}

/* ---- dce ---------------------------------------------------------------------------- */

static void test_dce(void **state) {
  (void)state;
  kernel *k = kernel_new();
  ir_value *p = ptr_param(k, TK_I32), *x = param(k, "x", TK_I32), *n = param(k, "n", TK_I32);
  ir_binary(&k->b, IR_MUL, x, x);                       /* dead */
  ir_build1(&k->b, IR_LOAD, scalar(k, TK_I32), 1, &p); /* unused, but may fault: kept */
  /* for i in range(0, n) carrying (dead, live): dead = dead + i; live = live * 2 */
  ir_value *inits[2] = {x, x};
  ir_op *loop = ir_build_for(&k->b, ci(k, TK_I32, 0), n, ci(k, TK_I32, 1), 2, inits);
  ir_block *body = loop->regions[0];
  ir_builder lb = {k->m, body, NULL, k->b.loc};
  ir_value *ys[2] = {ir_binary(&lb, IR_ADD, body->args[1], body->args[0]),
                     ir_binary(&lb, IR_MUL, body->args[2], ir_const_int(&lb, scalar(k, TK_I32), 2))};
  ir_build(&lb, IR_YIELD, 2, ys, 0, NULL);
  store(k, p, loop->results[1]);
  /* a loop that computes nothing observable */
  ir_op *idle = ir_build_for(&k->b, ci(k, TK_I32, 0), n, ci(k, TK_I32, 1), 1, &x);
  ir_builder ib = {k->m, idle->regions[0], NULL, k->b.loc};
  ir_value *w = ir_binary(&ib, IR_ADD, idle->regions[0]->args[1], x);
  ir_build(&ib, IR_YIELD, 1, &w, 0, NULL);
  finish(k);
  assert_true(pass_dce(k->m, k->f));
  assert_int_equal(count(k, IR_LOAD), 1);
  assert_int_equal(count(k, IR_FOR), 1);
  assert_int_equal(count(k, IR_ADD), 0);
  assert_int_equal(loop->nresults, 1);
  assert_int_equal(loop->noperands, 4);
  assert_int_equal(body->nargs, 2);
  assert_int_equal(body->args[1]->index, 1);
  assert_int_equal(body->last->noperands, 1);
  assert_ptr_equal(stored(k, 0), loop->results[0]);
  assert_int_equal(loop->results[0]->index, 0);
  assert_int_equal(count(k, IR_MUL), 1);
  assert_false(pass_dce(k->m, k->f));
  kernel_free(k);
}

static void test_dce_if(void **state) {
  (void)state;
  kernel *k = kernel_new();
  ir_value *p = ptr_param(k, TK_I32), *x = param(k, "x", TK_I32), *c = param(k, "c", TK_I1);
  const ir_type *ts[2] = {scalar(k, TK_I32), scalar(k, TK_I32)};
  ir_op *iff = ir_build_if(&k->b, c, 2, ts);
  ir_builder tb = {k->m, iff->regions[0], NULL, k->b.loc}, eb = {k->m, iff->regions[1], NULL, k->b.loc};
  ir_value *t[2] = {ir_binary(&tb, IR_ADD, x, x), ir_binary(&tb, IR_MUL, x, x)};
  ir_build(&tb, IR_YIELD, 2, t, 0, NULL);
  ir_value *e[2] = {x, ir_binary(&eb, IR_SUB, x, x)};
  ir_build(&eb, IR_YIELD, 2, e, 0, NULL);
  store(k, p, iff->results[1]);
  finish(k);
  assert_true(pass_dce(k->m, k->f));
  assert_int_equal(iff->nresults, 1);
  assert_int_equal(count(k, IR_ADD), 0);
  assert_ptr_equal(iff->regions[0]->last->operands[0], t[1]);
  assert_ptr_equal(stored(k, 0), iff->results[0]);
  kernel_free(k);
}

/* ---- licm --------------------------------------------------------------------------- */

static void test_licm(void **state) {
  (void)state;
  kernel *k = kernel_new();
  ir_value *p = ptr_param(k, TK_I32), *x = param(k, "x", TK_I32), *n = param(k, "n", TK_I32);
  ir_op *outer = ir_build_for(&k->b, ci(k, TK_I32, 0), n, ci(k, TK_I32, 1), 0, NULL);
  ir_builder ob = {k->m, outer->regions[0], NULL, k->b.loc};
  ir_op *inner = ir_build_for(&ob, ir_const_int(&ob, scalar(k, TK_I32), 0), n,
                              ir_const_int(&ob, scalar(k, TK_I32), 1), 0, NULL);
  ir_build(&ob, IR_YIELD, 0, NULL, 0, NULL);
  ir_builder ib = {k->m, inner->regions[0], NULL, k->b.loc};
  ir_value *inv = ir_binary(&ib, IR_MUL, x, x);                      /* invariant twice */
  ir_value *inv2 = ir_binary(&ib, IR_ADD, inv, x);                    /* follows it out */
  ir_value *oi = ir_binary(&ib, IR_ADD, outer->regions[0]->args[0], x); /* only inner-invariant */
  ir_value *var = ir_binary(&ib, IR_ADD, inner->regions[0]->args[0], inv2);
  ir_value *div = ir_binary(&ib, IR_DIV, x, n);                       /* may fault: stays */
  ir_value *ld = ir_build1(&ib, IR_LOAD, scalar(k, TK_I32), 1, &p);    /* not pure: stays */
  ir_value *s1 = ir_binary(&ib, IR_ADD, var, oi), *s2 = ir_binary(&ib, IR_ADD, div, ld);
  ir_value *o[2] = {p, ir_binary(&ib, IR_ADD, s1, s2)};
  ir_build(&ib, IR_STORE, 2, o, 0, NULL);
  ir_build(&ib, IR_YIELD, 0, NULL, 0, NULL);
  finish(k);
  assert_true(pass_licm(k->m, k->f));
  assert_ptr_equal(inv->def->parent, k->f->body);
  assert_ptr_equal(inv2->def->parent, k->f->body);
  assert_true(precedes(inv2->def, outer));
  assert_ptr_equal(oi->def->parent, outer->regions[0]);
  assert_ptr_equal(var->def->parent, inner->regions[0]);
  assert_ptr_equal(div->def->parent, inner->regions[0]);
  assert_ptr_equal(ld->def->parent, inner->regions[0]);
  /* the inner loop's constant bounds left the outer loop too */
  assert_ptr_equal(inner->operands[0]->def->parent, k->f->body);
  kernel_free(k);
}

/* ---- pipeline ----------------------------------------------------------------------- */

static void test_pass_names(void **state) {
  (void)state;
  const char *const *n = pass_names();
  int found = 0, total = 0;
  for (; *n; n++, total++)
    found += !strcmp(*n, "cse") || !strcmp(*n, "licm") || !strcmp(*n, "canonicalize");
  assert_int_equal(found, 3);
  assert_true(total >= 6);
}

/* A kernel with one fold, one duplicate and one dead op. */
static kernel *small_kernel(void) {
  kernel *k = kernel_new();
  ir_value *p = ptr_param(k, TK_I32), *x = param(k, "x", TK_I32);
  ir_value *a = ir_binary(&k->b, IR_ADD, x, ir_binary(&k->b, IR_ADD, ci(k, TK_I32, 2), ci(k, TK_I32, 3)));
  ir_value *b = ir_binary(&k->b, IR_ADD, x, ci(k, TK_I32, 5));
  ir_binary(&k->b, IR_MUL, a, b);
  store(k, p, ir_binary(&k->b, IR_SUB, a, b));
  finish(k);
  return k;
}

static void test_pipeline_options(void **state) {
  (void)state;
  kernel *k = small_kernel();
  su_diags d;
  su_diags_init(&d, k->a, NULL);
  pass_options o = {.opt_level = 0};
  assert_true(pass_run(k->m, &o, &d));
  assert_int_equal(count(k, IR_MUL), 1); /* -O0 runs nothing */

  o.only = "dce,nosuch";
  assert_false(pass_run(k->m, &o, &d));
  assert_int_equal(d.nerrors, 1);
  assert_non_null(strstr(d.first->msg, "nosuch"));
  assert_int_equal(count(k, IR_MUL), 1); /* nothing ran */

  char *text = NULL;
  size_t len = 0;
  FILE *log = open_memstream(&text, &len);
  o.only = "dce";
  o.print_after = "dce";
  o.time_passes = true;
  o.log = log;
  assert_true(pass_run(k->m, &o, &d));
  fclose(log);
  assert_int_equal(count(k, IR_MUL), 0);
  assert_int_equal(count(k, IR_ADD), 3); /* only dce ran */
  assert_non_null(strstr(text, "// -----// IR after dce //----- //\nmodule"));
  assert_non_null(strstr(text, "dce"));
  assert_non_null(strstr(text, "total"));
  free(text);
  kernel_free(k);
}

static void test_pipeline_full(void **state) {
  (void)state;
  kernel *k = small_kernel();
  su_diags d;
  su_diags_init(&d, k->a, NULL);
  pass_options o = {.opt_level = 2, .verify_each = true};
  assert_true(pass_run(k->m, &o, &d));
  assert_int_equal(d.nerrors, 0);
  /* (x + 5) - (x + 5) folds to 0 once the constant is folded and the adds are merged */
  assert_true(is_const_int(stored(k, 0), 0));
  assert_int_equal(count(k, IR_ADD), 0);
  kernel_free(k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fold_int_wraps),
      cmocka_unit_test(test_fold_keeps_faults),
      cmocka_unit_test(test_fold_float_precision),
      cmocka_unit_test(test_fold_cmp_and_cast),
      cmocka_unit_test(test_fold_shapes),
      cmocka_unit_test(test_simplify_identities),
      cmocka_unit_test(test_simplify_control),
      cmocka_unit_test(test_cse),
      cmocka_unit_test(test_dce),
      cmocka_unit_test(test_dce_if),
      cmocka_unit_test(test_licm),
      cmocka_unit_test(test_pass_names),
      cmocka_unit_test(test_pipeline_options),
      cmocka_unit_test(test_pipeline_full),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
