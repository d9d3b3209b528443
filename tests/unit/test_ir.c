/* Unit tests for ir/: types, builder, editing helpers, verifier, printer and parser. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../ir/ir.h"

/* ---- fixtures ----------------------------------------------------------------------- */

typedef struct {
  su_arena *a;
  ir_module *m;
  su_diags d;
  const ir_type *i1, *i32, *i64, *f32, *pf32;
} fx;

static fx *fx_new(void) {
  su_arena *a = su_arena_new();
  fx *f = SU_NEW(a, fx);
  f->a = a;
  f->m = ir_module_new(a, "k.tk");
  su_diags_init(&f->d, a, NULL);
  f->i1 = ir_type_scalar(f->m, TK_I1);
  f->i32 = ir_type_scalar(f->m, TK_I32);
  f->i64 = ir_type_scalar(f->m, TK_I64);
  f->f32 = ir_type_scalar(f->m, TK_F32);
  f->pf32 = ir_type_ptr(f->m, f->f32);
  return f;
}

static const ir_type *tile1(fx *f, const ir_type *e, int n) { return ir_type_tile(f->m, e, 1, &n); }

static ir_loc L(uint32_t line, uint32_t col) { return (ir_loc){line, col}; }

/* Pieces of the kernel below that tests break on purpose. */
typedef struct {
  ir_func *fn;
  ir_op *load, *cmp, *red, *loop, *yield, *ret, *store;
  ir_value *x, *acc, *mask, *offs;
} kern;

/* A masked row-sum kernel with a loop:
 *   pid = program_id 0; offs = arange(0,16) + splat(pid*16); mask = offs < splat(n)
 *   x = load(in + offs, mask, 0.0)
 *   acc = for i in 0..4 carry s=0.0: s + reduce_sum(x)
 *   store(out + pid, acc)  (scalar store) */
static kern build_kernel(fx *f) {
  kern k;
  memset(&k, 0, sizeof k);
  ir_module *m = f->m;
  k.fn = ir_func_new(m, "rowsum", L(1, 1));
  ir_value *in = ir_func_add_param(m, k.fn, "in", f->pf32);
  ir_value *out = ir_func_add_param(m, k.fn, "out", f->pf32);
  ir_value *n = ir_func_add_param(m, k.fn, "n", f->i32);
  ir_builder b = {m, k.fn->body, NULL, L(2, 3)};
  ir_value *pid = ir_build1(&b, IR_PROGRAM_ID, f->i32, 0, NULL);
  const ir_type *ti = tile1(f, f->i32, 16), *tf = tile1(f, f->f32, 16), *tp = tile1(f, f->pf32, 16);
  ir_op *ar = ir_build(&b, IR_ARANGE, 0, NULL, 1, &ti);
  ar->attr2 = 16;
  ir_value *base = ir_binary(&b, IR_MUL, pid, ir_const_int(&b, f->i32, 16));
  k.offs = ir_binary(&b, IR_ADD, ar->results[0], ir_build1(&b, IR_SPLAT, ti, 1, &base));
  b.loc = L(3, 5);
  k.mask = ir_cmp_build(&b, IR_CMP_LT, k.offs, ir_build1(&b, IR_SPLAT, ti, 1, &n));
  k.cmp = k.mask->def;
  ir_value *pin = ir_build1(&b, IR_SPLAT, tp, 1, &in);
  ir_value *ptrs[2] = {pin, k.offs};
  ir_value *addr = ir_build1(&b, IR_ADDPTR, tp, 2, ptrs);
  ir_value *zero = ir_const_float(&b, tf, 0.0);
  ir_value *lopnds[3] = {addr, k.mask, zero};
  b.loc = L(4, 7);
  k.x = ir_build1(&b, IR_LOAD, tf, 3, lopnds);
  k.x->name = "x";
  k.load = k.x->def;
  ir_value *s0 = ir_const_float(&b, f->f32, 0.0);
  ir_value *lb = ir_const_int(&b, f->i32, 0), *ub = ir_const_int(&b, f->i32, 4), *st = ir_const_int(&b, f->i32, 1);
  b.loc = L(5, 3);
  k.loop = ir_build_for(&b, lb, ub, st, 1, &s0);
  ir_builder body = {m, k.loop->regions[0], NULL, L(6, 5)};
  ir_value *r = ir_build1(&body, IR_REDUCE, f->f32, 1, &k.x);
  k.red = r->def;
  k.red->attr = IR_RED_SUM;
  ir_value *sum = ir_binary(&body, IR_ADD, k.loop->regions[0]->args[1], r);
  body.loc = L(7, 5);
  k.yield = ir_build(&body, IR_YIELD, 1, &sum, 0, NULL);
  k.acc = k.loop->results[0];
  b.loc = L(8, 3);
  ir_value *oaddr_ops[2] = {out, pid};
  ir_value *oaddr = ir_build1(&b, IR_ADDPTR, f->pf32, 2, oaddr_ops);
  ir_value *sops[2] = {oaddr, k.acc};
  k.store = ir_build(&b, IR_STORE, 2, sops, 0, NULL);
  b.loc = L(9, 1);
  k.ret = ir_build(&b, IR_RETURN, 0, NULL, 0, NULL);
  return k;
}

static char *print_module(fx *f, const ir_module *m) {
  su_buf b = {0};
  ir_print(&b, m);
  char *s = su_strdup(f->a, su_buf_str(&b));
  su_buf_free(&b);
  return s;
}

static ir_module *parse_text(fx *f, const char *text) {
  su_source *src = su_source_new(f->a, "t.tkir", text, strlen(text));
  return ir_parse(f->a, src, &f->d);
}

/* Expects the verifier to fail with a message containing `want` at line:col. */
static void expect_verify_error(fx *f, const char *want, uint32_t line, uint32_t col) {
  assert_false(ir_verify(f->m, &f->d));
  for (su_diag *g = f->d.first; g; g = g->next)
    if (strstr(g->msg, want)) {
      assert_string_equal(g->loc.src->name, "k.tk");
      assert_int_equal(g->loc.line, line);
      assert_int_equal(g->loc.col, col);
      return;
    }
  fail_msg("no verifier error containing \"%s\" (first: %s)", want, f->d.first ? f->d.first->msg : "none");
}

/* ---- types -------------------------------------------------------------------------- */

static void test_types_interned_and_printed(void **state) {
  (void)state;
  fx *f = fx_new();
  int sh[2] = {128, 64};
  const ir_type *t = ir_type_tile(f->m, f->f32, 2, sh);
  assert_ptr_equal(t, ir_type_tile(f->m, ir_type_scalar(f->m, TK_F32), 2, sh));
  assert_ptr_not_equal(t, ir_type_tile(f->m, f->f32, 1, sh));
  assert_ptr_equal(ir_type_ptr(f->m, f->f32), f->pf32);
  assert_int_equal(ir_type_numel(t), 128 * 64);
  assert_ptr_equal(ir_type_elem(t), f->f32);
  assert_ptr_equal(ir_type_like(f->m, t, f->i1)->elem, f->i1);
  assert_ptr_equal(ir_type_like(f->m, f->f32, f->i1), f->i1);

  ir_layout l = {.kind = IR_LAYOUT_BLOCKED, .rank = 2, .size_per_thread = {1, 4},
                 .threads_per_warp = {8, 4}, .warps_per_cta = {4, 1}, .order = {1, 0}};
  const ir_layout *li = ir_layout_intern(f->m, &l);
  assert_ptr_equal(li, ir_layout_intern(f->m, &l));
  const ir_type *tl = ir_type_with_layout(f->m, t, li);
  assert_ptr_not_equal(tl, t);
  assert_ptr_equal(ir_type_with_layout(f->m, tl, NULL), t);
  ir_layout s = {.kind = IR_LAYOUT_SLICE, .parent = &l, .slice_dim = 1};
  const ir_layout *si = ir_layout_intern(f->m, &s);
  assert_ptr_equal(si->parent, li);
  assert_int_equal(si->rank, 1);

  su_buf b = {0};
  ir_type_print(&b, tl);
  su_buf_puts(&b, " ");
  ir_type_print(&b, ir_type_ptr(f->m, ir_type_scalar(f->m, TK_BF16)));
  su_buf_puts(&b, " ");
  ir_type_print(&b, tile1(f, f->pf32, 8));
  su_buf_puts(&b, " ");
  ir_layout_print(&b, si);
  assert_string_equal(su_buf_str(&b),
                      "tile<128x64xf32, #blocked<spt=[1,4], tpw=[8,4], wpc=[4,1], order=[1,0]>> "
                      "ptr<bf16> tile<8xptr<f32>> "
                      "#slice<dim=1, parent=#blocked<spt=[1,4], tpw=[8,4], wpc=[4,1], order=[1,0]>>");
  su_buf_free(&b);
  su_arena_free(f->a);
}

/* The shared-memory layout rule codegen lays buffers out by and the passes budget with:
 * slots and buffers rounded to 1 KB, an mbarrier 8 bytes. */
static void test_smem_buffer_bytes(void **state) {
  (void)state;
  fx *f = fx_new();
  ir_layout sl = {.kind = IR_LAYOUT_SHARED, .rank = 2, .order = {1, 0}};
  const ir_layout *li = ir_layout_intern(f->m, &sl);
  int ring[3] = {3, 128, 64}; /* 3 slots of 128x64 f16: 16 KB each */
  const ir_type *r = ir_type_smem(f->m, ir_type_scalar(f->m, TK_F16), 3, ring, li);
  assert_int_equal(ir_smem_slot_bytes(r), 16384);
  assert_int_equal(ir_smem_buffer_bytes(r), 3 * 16384);
  int odd[3] = {2, 3, 100}; /* 1200-byte slots: each rounded to 2 KB */
  const ir_type *o = ir_type_smem(f->m, f->f32, 3, odd, li);
  assert_int_equal(ir_smem_slot_bytes(o), 2048);
  assert_int_equal(ir_smem_buffer_bytes(o), 4096);
  assert_int_equal(ir_smem_buffer_bytes(ir_type_mbar(f->m, 3)), 1024);   /* 24 bytes */
  assert_int_equal(ir_smem_buffer_bytes(ir_type_mbar(f->m, 200)), 2048); /* 1600 bytes */
  su_arena_free(f->a);
}

static void test_dtype_helpers(void **state) {
  (void)state;
  assert_true(ir_dtype_is_int(TK_I1) && ir_dtype_is_int(TK_U64) && !ir_dtype_is_int(TK_F16));
  assert_true(ir_dtype_is_signed(TK_I8) && !ir_dtype_is_signed(TK_I1) && !ir_dtype_is_signed(TK_U32));
  assert_true(ir_dtype_is_float(TK_BF16) && !ir_dtype_is_float(TK_PTR));
  assert_int_equal(ir_dtype_bits(TK_I1), 1);
  assert_int_equal(ir_dtype_bytes(TK_I1), 1);
  assert_int_equal(ir_dtype_bytes(TK_F16), 2);
  assert_int_equal(ir_dtype_bits(TK_PTR), 64);
  for (int d = 0; d < TK_NDTYPE; d++) {
    const char *n = ir_dtype_name((tk_dtype)d);
    tk_dtype back;
    assert_true(ir_dtype_parse(n, strlen(n), &back));
    assert_int_equal(back, d);
  }
  tk_dtype dummy;
  assert_false(ir_dtype_parse("f3", 2, &dummy));
  assert_false(ir_dtype_parse("f32x", 4, &dummy));
  assert_string_equal(ir_op_info(IR_ATOMIC_CAS)->name, "atomic_cas");
  assert_int_equal(ir_op_info(IR_SELECT)->noperands, 3);
  assert_true(ir_op_info(IR_ADD)->traits & IR_COMMUT);
}

/* ---- builder, editing, verifier ----------------------------------------------------- */

static void test_built_kernel_verifies_and_prints(void **state) {
  (void)state;
  fx *f = fx_new();
  kern k = build_kernel(f);
  assert_true(ir_verify(f->m, &f->d));
  assert_int_equal(f->d.nerrors, 0);
  assert_ptr_equal(ir_module_find(f->m, "rowsum"), k.fn);
  assert_null(ir_module_find(f->m, "nope"));
  const char *want =
      "module \"k.tk\"\n"
      "\n"
      "kernel @rowsum(%0 /*in*/: ptr<f32>, %1 /*out*/: ptr<f32>, %2 /*n*/: i32) warps(4) stages(1) @1:1 {\n"
      "  %3 = program_id {axis = 0} : i32 @2:3\n"
      "  %4 = arange {start = 0, end = 16} : tile<16xi32> @2:3\n"
      "  %5 = const 16 : i32 @2:3\n"
      "  %6 = mul %3, %5 : i32 @2:3\n"
      "  %7 = splat %6 : tile<16xi32> @2:3\n"
      "  %8 = add %4, %7 : tile<16xi32> @2:3\n"
      "  %9 = splat %2 : tile<16xi32> @3:5\n"
      "  %10 = cmp lt %8, %9 : tile<16xi1> @3:5\n"
      "  %11 = splat %0 : tile<16xptr<f32>> @3:5\n"
      "  %12 = addptr %11, %8 : tile<16xptr<f32>> @3:5\n"
      "  %13 = const 0.0 : tile<16xf32> @3:5\n"
      "  %14 /*x*/ = load %12, %10, %13 : tile<16xf32> @4:7\n"
      "  %15 = const 0.0 : f32 @4:7\n"
      "  %16 = const 0 : i32 @4:7\n"
      "  %17 = const 4 : i32 @4:7\n"
      "  %18 = const 1 : i32 @4:7\n"
      "  %19 = for %16, %17, %18, %15 : f32 {\n"
      "  ^bb(%20: i32, %21: f32):\n"
      "    %22 = reduce sum %14 {axis = 0} : f32 @6:5\n"
      "    %23 = add %21, %22 : f32 @6:5\n"
      "    yield %23 @7:5\n"
      "  } @5:3\n"
      "  %24 = addptr %1, %3 : ptr<f32> @8:3\n"
      "  store %24, %19 @8:3\n"
      "  return @9:1\n"
      "}\n";
  assert_string_equal(print_module(f, f->m), want);
  int n;
  int *uses = ir_count_uses(f->m, k.fn, &n);
  assert_int_equal(n, 25);
  assert_int_equal(uses[3], 2);  /* pid: mul and the output addptr */
  assert_int_equal(uses[8], 2);  /* offs: cmp and addptr */
  assert_int_equal(uses[20], 0); /* the unused induction variable */
  su_arena_free(f->a);
}

static void count_op(ir_op *op, void *ctx) {
  (void)op;
  (*(int *)ctx)++;
}

static void erase_consts(ir_op *op, void *ctx) {
  (void)ctx;
  if (op->opc == IR_CONST && op->results[0]->type->kind == IR_TILE) ir_op_erase(op);
}

static void test_editing_helpers(void **state) {
  (void)state;
  fx *f = fx_new();
  kern k = build_kernel(f);
  int nops = 0;
  ir_walk(k.fn->body, count_op, &nops);
  assert_int_equal(nops, 23);

  /* Move the reduce out of the loop (it is loop-invariant) and check it still verifies. */
  ir_op_move_before(k.red, k.loop);
  assert_ptr_equal(k.red->parent, k.fn->body);
  assert_ptr_equal(k.loop->prev, k.red);
  assert_ptr_equal(k.loop->regions[0]->first->opc == IR_ADD ? k.red : NULL, k.red);
  assert_true(ir_verify(f->m, &f->d));

  /* Use the induction variable's sum instead of the reduce: the types differ (i32), so
   * the verifier must now object at the add. */
  ir_replace_all_uses(k.fn, k.red->results[0], k.loop->regions[0]->args[0]);
  expect_verify_error(f, "'add': operand 1 has type i32", 6, 5);

  /* Erasing during a walk is allowed. The load's 'other' is now undefined. */
  fx *g = fx_new();
  kern k2 = build_kernel(g);
  ir_walk(k2.fn->body, erase_consts, NULL);
  nops = 0;
  ir_walk(k2.fn->body, count_op, &nops);
  assert_int_equal(nops, 22);
  assert_false(ir_verify(g->m, &g->d));
  assert_non_null(strstr(g->d.first->msg, "'load': operand 2 is not defined before this use"));
  su_arena_free(g->a);
  su_arena_free(f->a);
}

static void test_verifier_catches_breakage(void **state) {
  (void)state;
  struct {
    int which;
    const char *msg;
    uint32_t line, col;
  } cases[] = {
      {0, "'add': operand 1 has type", 6, 5},
      {1, "'cmp': result must be i1", 3, 5},
      {2, "kernel 'rowsum' does not end with return", 1, 1},
      {3, "'store': operand 1 is not defined before this use", 8, 3},
      {4, "'yield': value 0 has type i32, the enclosing for's result is f32", 7, 5},
      {5, "'load': mask must be i1 shaped like", 4, 7},
      {6, "'reduce': axis 1 out of range", 6, 5},
      {7, "'load': expects 1 to 3 operands, has 0", 4, 7},
      {8, "'return': terminator is not the last op", 9, 1},
      {9, "'for': body region must end with yield", 5, 3},
      {10, "'cmp': bad predicate 9", 3, 5},
      {11, "'load': value type tile<16xi32> does not match pointer type", 4, 7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    fx *f = fx_new();
    kern k = build_kernel(f);
    switch (cases[i].which) {
    case 0: k.yield->operands[0]->def->operands[1] = k.loop->regions[0]->args[0]; break;
    case 1: k.cmp->results[0]->type = tile1(f, f->i32, 16); break;
    case 2: ir_op_erase(k.ret); break;
    case 3: k.store->operands[1] = k.yield->operands[0]; break;
    case 4: k.yield->operands[0] = k.loop->regions[0]->args[0]; break;
    case 5: k.load->operands[1] = k.offs; break;
    case 6: k.red->attr2 = 1; break;
    case 7: k.load->noperands = 0; break;
    case 8: ir_op_move_before(k.ret, k.store); break;
    case 9: ir_op_erase(k.yield); break;
    case 10: k.cmp->attr = 9; break;
    case 11: k.load->results[0]->type = tile1(f, f->i32, 16); break;
    }
    expect_verify_error(f, cases[i].msg, cases[i].line, cases[i].col);
    su_arena_free(f->a);
  }
}

static void test_verifier_shape_ops(void **state) {
  (void)state;
  fx *f = fx_new();
  ir_func *fn = ir_func_new(f->m, "shapes", L(1, 1));
  ir_value *p = ir_func_add_param(f->m, fn, "p", f->pf32);
  ir_builder b = {f->m, fn->body, NULL, L(2, 1)};
  int s2[2] = {16, 32}, s2t[2] = {32, 16}, s1x[2] = {1, 16}, mk[2] = {16, 8}, kn[2] = {8, 32};
  const ir_type *t2 = ir_type_tile(f->m, f->f32, 2, s2), *tt = ir_type_tile(f->m, f->f32, 2, s2t);
  ir_value *a = ir_const_float(&b, ir_type_tile(f->m, f->f32, 2, mk), 1.0);
  ir_value *bb = ir_const_float(&b, ir_type_tile(f->m, f->f32, 2, kn), 2.0);
  ir_value *acc = ir_const_float(&b, t2, 0.0);
  ir_value *dops[3] = {a, bb, acc};
  ir_value *d = ir_build1(&b, IR_DOT, t2, 3, dops);
  ir_op *tr = ir_build1(&b, IR_TRANS, tt, 1, &d)->def;
  static const int perm[2] = {1, 0};
  tr->ints = perm;
  tr->nints = 2;
  ir_value *row = ir_const_float(&b, tile1(f, f->f32, 16), 3.0);
  ir_op *ex = ir_build1(&b, IR_EXPAND_DIMS, ir_type_tile(f->m, f->f32, 2, s1x), 1, &row)->def;
  ir_value *bc = ir_build1(&b, IR_BROADCAST, ir_type_tile(f->m, f->f32, 2, (int[]){32, 16}), 1, &ex->results[0]);
  ir_value *sum = ir_binary(&b, IR_ADD, tr->results[0], bc);
  ir_op *rs = ir_build1(&b, IR_RESHAPE, tile1(f, f->f32, 512), 1, &sum)->def;
  ir_value *am = ir_build1(&b, IR_ARGREDUCE, f->i32, 1, &rs->results[0]);
  am->def->attr = IR_RED_MAX;
  ir_value *c = ir_cmp_build(&b, IR_CMP_GT, am, ir_const_int(&b, f->i32, 3));
  ir_op *iff = ir_build_if(&b, c, 1, &f->f32);
  ir_builder tb = {f->m, iff->regions[0], NULL, L(3, 1)}, eb = {f->m, iff->regions[1], NULL, L(4, 1)};
  ir_value *one = ir_const_float(&tb, f->f32, 1.0), *two = ir_const_float(&eb, f->f32, 2.0);
  ir_build(&tb, IR_YIELD, 1, &one, 0, NULL);
  ir_build(&eb, IR_YIELD, 1, &two, 0, NULL);
  ir_value *sops[2] = {p, iff->results[0]};
  ir_build(&b, IR_STORE, 2, sops, 0, NULL);
  ir_build(&b, IR_RETURN, 0, NULL, 0, NULL);
  assert_true(ir_verify(f->m, &f->d));

  ex->attr2 = 1; /* a 1 at axis 1 gives 16x1, not 1x16 */
  expect_verify_error(f, "'expand_dims': tile<16xf32> with a 1 at axis 1 is not tile<1x16xf32>", 2, 1);
  ex->attr2 = 0;
  tr->ints = (const int[]){0, 1};
  expect_verify_error(f, "'trans': permutation does not take", 2, 1);
  tr->ints = perm;
  d->def->operands[1] = a;
  expect_verify_error(f, "'dot': shapes", 2, 1);
  d->def->operands[1] = bb;
  iff->results[0]->type = f->i32;
  expect_verify_error(f, "'yield': value 0 has type f32, the enclosing if's result is i32", 3, 1);
  su_arena_free(f->a);
}

/* ---- text form ---------------------------------------------------------------------- */

static void assert_roundtrip(fx *f, const char *text) {
  ir_module *m = parse_text(f, text);
  if (!m) fail_msg("parse failed: %s", f->d.first ? f->d.first->msg : "?");
  assert_string_equal(print_module(f, m), text);
}

static void test_print_parse_roundtrip(void **state) {
  (void)state;
  fx *f = fx_new();
  kern k = build_kernel(f);
  /* Extras the simple kernel lacks: bindings, odd floats, strings, layouts, names. */
  k.fn->num_warps = 8;
  k.fn->num_stages = 3;
  static ir_binding binds[4] = {{"BLOCK", 1024, 0, false, false}, {"EPS", 0, 1e-5, true, false},
                                {"TWO", 0, 2.0, true, false}, {"T", TK_BF16, 0, false, true}};
  k.fn->bindings = binds;
  k.fn->nbindings = 4;
  ir_builder b = {f->m, k.fn->body, k.ret, L(10, 2)};
  const double vals[] = {0.1, -0.0, 1e300, 3.4028234663852886e38, 5e-324, 1.0 / 3.0};
  for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) ir_const_float(&b, f->f32, vals[i]);
  ir_const_int(&b, ir_type_scalar(f->m, TK_U64), -1);
  ir_const_int(&b, f->i64, INT64_MIN);
  ir_op *pr = ir_build(&b, IR_PRINT, 1, &k.acc, 0, NULL);
  pr->str = "acc = \"\\\t\n\x01\x7f";
  ir_op *as = ir_build(&b, IR_ASSERT, 1, &k.mask, 0, NULL);
  as->str = "";
  ir_build(&b, IR_PRINT, 0, NULL, 0, NULL);
  ir_layout l = {.kind = IR_LAYOUT_BLOCKED, .rank = 1, .size_per_thread = {4}, .threads_per_warp = {32},
                 .warps_per_cta = {4}, .order = {0}};
  const ir_type *lt = ir_type_with_layout(f->m, k.x->type, ir_layout_intern(f->m, &l));
  ir_build1(&b, IR_CONVERT_LAYOUT, lt, 1, &k.x)->name = "xl";
  assert_true(ir_verify(f->m, &f->d));

  char *text = print_module(f, f->m);
  assert_non_null(strstr(text, "bind(BLOCK = 1024, EPS = 1e-05, TWO = 2.0, T = bf16)"));
  assert_non_null(strstr(text, "const 18446744073709551615 : u64"));
  assert_non_null(strstr(text, "print %19 {prefix = \"acc = \\\"\\\\\\t\\n\\x01\\x7f\"}"));
  assert_non_null(strstr(text, "%33 /*xl*/ = convert_layout %14 : tile<16xf32, #blocked<spt=[4], tpw=[32], wpc=[4], order=[0]>>"));
  assert_roundtrip(f, text);

  /* The parsed module holds the same values, not just the same text. */
  ir_module *m = parse_text(f, text);
  assert_true(ir_verify(m, &f->d));
  ir_func *pf = m->funcs[0];
  assert_string_equal(pf->param_names[2], "n");
  assert_int_equal(pf->bindings[1].is_float, true);
  assert_true(pf->bindings[1].fval == 1e-5);
  assert_true(pf->bindings[3].is_dtype && pf->bindings[3].ival == TK_BF16);
  ir_op *op = pf->body->first;
  while (op && !(op->opc == IR_CONST && op->loc.line == 10)) op = op->next;
  for (size_t i = 0; i < sizeof vals / sizeof *vals; i++, op = op->next) {
    assert_memory_equal(&op->cval.f, &vals[i], sizeof(double)); /* bit-exact, -0.0 included */
  }
  assert_int_equal(op->cval.i, -1);
  assert_int_equal(op->next->cval.i, INT64_MIN);
  su_arena_free(f->a);
}

static void test_parse_hand_written(void **state) {
  (void)state;
  fx *f = fx_new();
  /* Comments, free spacing, names that are not numbers, no locations: all accepted; the
   * printer then renumbers and writes @0:0. */
  const char *in =
      "// a comment\n"
      "module \"x.tk\"\n"
      "kernel @k(%p: ptr<f16>, %n: i32) {\n"
      "  %c = const 2 : i32   /* not a hint: two words */\n"
      "  %m, %s = for %c, %n, %c, %c, %n : (i32, i32) {\n"
      "  ^bb(%i /*i*/: i32, %a: i32, %b: i32):\n"
      "    yield %b, %a\n"
      "  }\n"
      "  return @9:9\n"
      "}\n";
  ir_module *m = parse_text(f, in);
  if (!m) fail_msg("%s", f->d.first->msg);
  if (!ir_verify(m, &f->d)) fail_msg("%s", f->d.first->msg);
  assert_string_equal(print_module(f, m),
                      "module \"x.tk\"\n\n"
                      "kernel @k(%0: ptr<f16>, %1: i32) warps(4) stages(1) @0:0 {\n"
                      "  %2 = const 2 : i32 @0:0\n"
                      "  %3, %4 = for %2, %1, %2, %2, %1 : (i32, i32) {\n"
                      "  ^bb(%5 /*i*/: i32, %6: i32, %7: i32):\n"
                      "    yield %7, %6 @0:0\n"
                      "  } @0:0\n"
                      "  return @9:9\n"
                      "}\n");
  su_arena_free(f->a);
}

/* The math ops of issue 12: pow, rint, ... take floats; umulhi and cdiv integers wider
 * than i1. */
/* Positivity is a float parameter's fact: set on an integer by an API caller, the
 * verifier refuses it, naming the kernel and the parameter. */
static void test_verifier_param_pos(void **state) {
  (void)state;
  fx *f = fx_new();
  ir_module *m = parse_text(f, "module \"p.tk\"\nkernel @k(%0 /*n*/: i32, %1 /*s*/: f32) {\n  return\n}\n");
  if (!m) fail_msg("parse failed");
  ir_func_set_param_pos(m, m->funcs[0], 1, true);
  assert_true(ir_verify(m, &f->d));
  ir_func_set_param_pos(m, m->funcs[0], 0, true);
  assert_false(ir_verify(m, &f->d));
  assert_non_null(f->d.first);
  assert_non_null(strstr(f->d.first->msg, "parameter 0 is known positive, but is not an f32 or f64"));
  su_arena_free(f->a);
}

static void test_verifier_math_types(void **state) {
  (void)state;
  fx *f = fx_new();
  const char *in = "module \"m.tk\"\n"
                   "kernel @k(%a: i32, %f: f32, %b: i1) {\n"
                   "  %p = pow %a, %a : i32\n"
                   "  %r = rint %a : i32\n"
                   "  %u = umulhi %f, %f : f32\n"
                   "  %c = cdiv %b, %b : i1\n"
                   "  %ok1 = copysign %f, %f : f32\n"
                   "  %ok2 = cdiv %a, %a : i32\n"
                   "  return\n"
                   "}\n";
  ir_module *m = parse_text(f, in);
  if (!m) fail_msg("%s", f->d.first->msg);
  assert_false(ir_verify(m, &f->d));
  assert_int_equal(f->d.nerrors, 4);
  static const char *const want[] = {"'pow': needs float operands, has i32",
                                     "'rint': needs float operands, has i32",
                                     "'umulhi': needs integer operands wider than i1, has f32",
                                     "'cdiv': needs integer operands wider than i1, has i1"};
  su_diag *g = f->d.first;
  for (int i = 0; i < 4; i++, g = g->next) assert_non_null(strstr(g->msg, want[i]));
  su_arena_free(f->a);
}

static void test_parse_errors_located(void **state) {
  (void)state;
  struct {
    const char *text, *msg;
    uint32_t line, col;
  } cases[] = {
      {"", "expected 'module', found end of input", 1, 1},
      {"module \"m\"\nkernel @k() {\n  %0 = bogus : i32\n}", "unknown op 'bogus'", 3, 8},
      {"module \"m\"\nkernel @k() {\n  %0 = add %1, %1 : i32\n}", "use of undefined value '%1'", 3, 12},
      {"module \"m\"\nkernel @k(%0: i32) {\n  %0 = neg %0 : i32\n}", "redefinition of '%0'", 3, 3},
      {"module \"m\"\nkernel @k(%0: tile<0xf32>) {}", "tile dimension 0 out of range", 2, 20},
      {"module \"m\"\nkernel @k(%0: tile<1x2x3x4x5xf32>) {}", "tile rank exceeds 4", 2, 28},
      {"module \"m\"\nkernel @k(%0: ptr<tile<4xf32>>) {}", "expected a scalar type here", 2, 19},
      {"module \"m\"\nkernel @k(%0: f31) {}", "unknown type 'f31'", 2, 15},
      {"module \"m\"\nkernel @k() {\n  %0 = const 1.5 : i32\n}", "constant 1.5 does not fit type i32", 3, 14},
      {"module \"m\"\nkernel @k() {\n  %0 = const -1 : u8\n}", "negative constant -1 for unsigned type u8", 3, 14},
      {"module \"m\"\nkernel @k() {\n  %0 = const 99999999999999999999 : i64\n}", "out of range", 3, 14},
      {"module \"m\"\nkernel @k() {\n  %0 = cmp lq %1 : i1\n}", "expected a predicate", 3, 12},
      {"module \"m\"\nkernel @k() {\n  %0, %1 = const 1 : i32\n}", "defines 2 values but has 1 result type", 3, 3},
      {"module \"m\"\nkernel @k() {\n  print {prefix = \"a\\qb\"}\n}", "bad escape in string", 3, 19},
      {"module \"m\"\nkernel @k() {\n  return @3\n}", "malformed location", 3, 10},
      {"module \"m\"\nkernel @k() {\n  return /* never closed", "unterminated comment", 3, 10},
      {"module \"m\"\nkernel @k() {\n  %0 = for %a", "use of undefined value", 3, 12},
      {"module \"m\"\nkernel @k() {\n  return\n", "expected '}' before end of input", 4, 1},
      {"module \"m\"\nkernel @k(%0: tile<4xf32, #blocked<spt=[1,1], tpw=[32], wpc=[1], order=[0]>>) {}",
       "'tpw' has 1 entries, expected 2", 2, 51},
      {"module \"m\"\nkernel @k() {\n  %0 = program_id {axis = 0, axis = 1} : i32\n}", "duplicate attribute 'axis'", 3, 30},
      {"module \"m\"\nkernel @k() {\n  %0 = if %0 : i32 {\n  } else {\n  }\n}", "use of undefined value '%0'", 3, 11},
      {"module \"m\"\nkernel @k() { return }\nkernel @k() { return }", "redefinition of kernel 'k'", 3, 8},
      {"module \"m\"\nkernel @k() {\n  %0 = const 1 : i32 \x01\n}", "unexpected character", 3, 22},
      {"module \"m\"\nkernel @k(%0: tile<4x4xf32, #slice<dim=0, parent=#slice<dim=0, parent=#slice<dim=0, "
       "parent=#slice<dim=0, parent=#slice<dim=0, parent=#blocked<", "slice layouts nested too deeply", 2, 113},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    fx *f = fx_new();
    ir_module *m = parse_text(f, cases[i].text);
    if (m) fail_msg("case %zu parsed", i);
    assert_int_equal(f->d.nerrors, 1);
    su_diag *g = f->d.first;
    if (!strstr(g->msg, cases[i].msg)) fail_msg("case %zu: got \"%s\"", i, g->msg);
    assert_string_equal(g->loc.src->name, "t.tkir");
    if (g->loc.line != cases[i].line || g->loc.col != cases[i].col)
      fail_msg("case %zu: at %u:%u, expected %u:%u", i, g->loc.line, g->loc.col, cases[i].line, cases[i].col);
    su_arena_free(f->a);
  }
}

/* Deep nesting is refused with an error instead of exhausting the stack. */
static void test_parse_deep_nesting(void **state) {
  (void)state;
  fx *f = fx_new();
  su_buf b = {0};
  su_buf_puts(&b, "module \"m\"\nkernel @k(%c: i1) {\n");
  for (int i = 0; i < 100000; i++) su_buf_puts(&b, "if %c {");
  ir_module *m = parse_text(f, su_buf_str(&b));
  su_buf_free(&b);
  assert_null(m);
  assert_non_null(strstr(f->d.first->msg, "regions nested more than 200 deep"));
  assert_int_equal(f->d.first->loc.line, 3);
  su_arena_free(f->a);
}

/* Every prefix of a valid text, and every single-byte corruption of it, must give either a
 * module or a located error: never a crash (run under ASan/UBSan). */
static void test_parse_never_crashes(void **state) {
  (void)state;
  fx *f = fx_new();
  build_kernel(f);
  char *text = print_module(f, f->m);
  size_t n = strlen(text);
  char *buf = su_alloc(f->a, n + 1);
  const char junk[] = {'%', '{', '}', '0', 'x', '"', '/', '@', ':', ',', '-', '\n'};
  for (size_t cut = 0; cut <= n; cut += 1) {
    for (size_t j = 0; j <= sizeof junk; j++) {
      memcpy(buf, text, n + 1);
      size_t len = n;
      if (j == sizeof junk)
        len = cut; /* a prefix */
      else if (cut < n)
        buf[cut] = junk[j];
      else
        continue;
      su_arena *a = su_arena_new();
      su_diags d;
      su_diags_init(&d, a, NULL);
      su_source *src = su_source_new(a, "fuzz.tkir", buf, len);
      ir_module *m = ir_parse(a, src, &d);
      if (m) {
        assert_int_equal(d.nerrors, 0);
        ir_verify(m, &d); /* may fail; must not crash */
      } else {
        assert_int_equal(d.nerrors, 1);
        assert_true(d.first->loc.line >= 1);
      }
      su_arena_free(a);
    }
  }
  su_arena_free(f->a);
}

/* ---- flags the text form cannot misspell -------------------------------------------- */

static ir_op *find_op(ir_block *b, ir_opcode opc) {
  for (ir_op *op = b->first; op; op = op->next) {
    if (op->opc == opc) return op;
    for (int r = 0; r < op->nregions; r++) {
      ir_op *in = find_op(op->regions[r], opc);
      if (in) return in;
    }
  }
  return NULL;
}

/* An out-of-range memory order on an atomic, and the wg flag on a tma_load (which has no
 * such form: one thread loads the slot for all), made by a pass rather than parsed: the
 * verifier names each, and the printer shows the bad order as a number. */
static void test_verifier_atomic_order_and_wg_load(void **state) {
  (void)state;
  fx *f = fx_new();
  ir_module *m = parse_text(f,
      "module \"v.tk\"\n"
      "kernel @a(%0: ptr<i32>) warps(4) stages(1) @1:1 {\n"
      "  %1 = const 1 : i32 @2:3\n"
      "  %2 = atomic add acq_rel %0, %1 : i32 @3:3\n"
      "  %3 = atomic_cas acquire %0, %1, %2 : i32 @4:3\n"
      "  return @5:1\n"
      "}\n"
      "kernel @t(%0: ptr<f16> {div = 16}, %1: i32 {div = 16}) warps(8) stages(2) @6:1 {\n"
      "  %2 = tensor_map %0, %1, %1, %1 {box = [64, 64], swizzle = 128} : tmap @7:3\n"
      "  %3 = smem_alloc : smem<2x64x64xf16, #shared<swizzle=128, order=[1,0]>> @8:3\n"
      "  %4 = mbar_alloc {count = 1} : mbar<2> @9:3\n"
      "  %5 = const 0 : i32 @10:3\n"
      "  tma_load %2, %3, %5, %4, %5, %5, %5 @11:3\n"
      "  return @12:1\n"
      "}\n");
  if (!m) fail_msg("parse failed: %s", f->d.first ? f->d.first->msg : "?");
  assert_true(ir_verify(m, &f->d));
  ir_op *add = find_op(m->funcs[0]->body, IR_ATOMIC), *cas = find_op(m->funcs[0]->body, IR_ATOMIC_CAS);
  ir_op *load = find_op(m->funcs[1]->body, IR_TMA_LOAD);
  assert_non_null(add);
  assert_non_null(cas);
  assert_non_null(load);
  add->attr2 = 7;
  cas->attr2 = -1;
  load->attr2 = 1;
  su_buf b = {0};
  ir_print(&b, m);
  assert_non_null(strstr(su_buf_str(&b), "atomic add sem?7 %0"));
  su_buf_free(&b);
  assert_false(ir_verify(m, &f->d));
  const char *want[] = {"'atomic': bad memory order 7", "'atomic_cas': bad memory order -1",
                        "'tma_load': a tma_load has no wg form"};
  for (int i = 0; i < 3; i++) {
    bool seen = false;
    for (su_diag *g = f->d.first; g; g = g->next) seen |= strstr(g->msg, want[i]) != NULL;
    if (!seen) fail_msg("no verifier error containing \"%s\"", want[i]);
  }
  su_arena_free(f->a);
}

/* ---- signatures --------------------------------------------------------------------- */

/* The signature is read off the kernel once: names, dtypes, pointers and their pointees,
 * which parameters can be specialized, bindings and launch attributes. */
static void test_signature(void **state) {
  (void)state;
  fx *f = fx_new();
  ir_module *m = parse_text(f,
      "module \"s.tk\"\n"
      "kernel @k(%0 /*x*/: ptr<f16>, %1 /*n*/: i32, %2 /*flag*/: i1, %3 /*s*/: f32, "
      "%4 /*u*/: u64) warps(8) stages(3) "
      "bind(BLOCK = 256, EPS = 0.5) {\n  return\n}\n"
      "kernel @empty() warps(4) stages(1) {\n  return\n}\n");
  if (!m) fail_msg("parse failed: %s", f->d.first ? f->d.first->msg : "?");
  ir_signature *s = ir_func_signature(f->a, m->funcs[0]);
  assert_string_equal(s->name, "k");
  assert_int_equal(s->nparams, 5);
  static const struct { const char *name; tk_dtype type, pointee; bool spec; const char *text; } want[] = {
      {"x", TK_PTR, TK_F16, true, "ptr<f16>"}, {"n", TK_I32, TK_NDTYPE, true, "i32"},
      {"flag", TK_I1, TK_NDTYPE, false, "i1"}, {"s", TK_F32, TK_NDTYPE, true, "f32"},
      {"u", TK_U64, TK_NDTYPE, true, "u64"}};
  for (int i = 0; i < 5; i++) {
    assert_string_equal(s->params[i].name, want[i].name);
    assert_int_equal(s->params[i].type, want[i].type);
    assert_int_equal(s->params[i].pointee, want[i].pointee);
    assert_int_equal(s->params[i].specializable, want[i].spec);
    assert_int_equal(s->params[i].specializable, ir_param_specializable(m->funcs[0]->body->args[i]->type));
    su_buf b = {0};
    ir_sig_param_print(&b, &s->params[i]);
    assert_string_equal(su_buf_str(&b), want[i].text);
    su_buf_free(&b);
  }
  assert_int_equal(s->num_warps, 8);
  assert_int_equal(s->num_stages, 3);
  assert_int_equal(s->nconsts, 2);
  assert_string_equal(s->consts[0].name, "BLOCK");
  assert_int_equal(s->consts[0].ival, 256);
  assert_true(s->consts[1].is_float && s->consts[1].fval == 0.5);
  ir_signature *e = ir_func_signature(f->a, m->funcs[1]);
  assert_int_equal(e->nparams, 0);
  assert_int_equal(e->nconsts, 0);
  /* a parameter without a name (built, not parsed) has "" */
  ir_func *g = ir_func_new(m, "g", L(1, 1));
  ir_func_add_param(m, g, NULL, f->pf32);
  ir_signature *gs = ir_func_signature(f->a, g);
  assert_string_equal(gs->params[0].name, "");
  ir_sig_param unknown = {"p", TK_PTR, TK_NDTYPE, false};
  su_buf b = {0};
  ir_sig_param_print(&b, &unknown);
  assert_string_equal(su_buf_str(&b), "ptr");
  su_buf_free(&b);
  su_arena_free(f->a);
}


/* The fp8 rule of ir/types.c (docs/language.md §5.6): the edges of rounding and saturation
 * by value, every byte back to itself through its value, NaN bytes kept, converted NaNs
 * 0x7f. (tests/interp/test_lang.c checks the conversions against a search.) */
/* The fp8 accumulation bound: 2^-12 (|S| + sum |ab|) per step of 32 products, S the exact
 * sum before the step; a partial last step counts too. */
static void test_fp8_acc_bound(void **state) {
  (void)state;
  ir_fp8_acc a = {0};
  assert_true(ir_fp8_acc_bound(&a) == 0.0);
  for (int i = 0; i < 64; i++) ir_fp8_acc_add(&a, 1.0);
  assert_true(a.sum == 64.0);
  assert_true(ir_fp8_acc_bound(&a) == ldexp(32 + (32 + 32), -12)); /* step 2 starts at S = 32 */
  ir_fp8_acc_add(&a, -3.0);                                        /* a third, partial step */
  assert_true(a.sum == 61.0 && ir_fp8_acc_bound(&a) == ldexp(32 + 64 + (64 + 3), -12));
}

static void test_fp8_rule(void **state) {
  (void)state;
  assert_true(ir_dtype_is_float(TK_F8E4M3) && ir_dtype_is_fp8(TK_F8E5M2) && !ir_dtype_is_fp8(TK_F16));
  assert_int_equal(ir_dtype_bits(TK_F8E4M3), 8);
  assert_int_equal(ir_dtype_bytes(TK_F8E5M2), 1);
  assert_string_equal(ir_dtype_name(TK_F8E4M3), "f8e4m3");
  tk_dtype d;
  assert_true(ir_dtype_parse("f8e5m2", 6, &d) && d == TK_F8E5M2);
  const struct { tk_dtype t; double x, want; } cases[] = {
      {TK_F8E4M3, 448, 448},      {TK_F8E4M3, 464, 448},       {TK_F8E4M3, 1e9, 448},
      {TK_F8E4M3, INFINITY, 448}, {TK_F8E4M3, -INFINITY, -448}, {TK_F8E4M3, 0x1p-10, 0},
      {TK_F8E4M3, 0x1.0000001p-10, 0x1p-9}, {TK_F8E4M3, 1.0625, 1}, {TK_F8E4M3, 1.1875, 1.25},
      {TK_F8E5M2, 57344, 57344},  {TK_F8E5M2, 61440, 57344},   {TK_F8E5M2, INFINITY, 57344},
      {TK_F8E5M2, 0x1p-17, 0},    {TK_F8E5M2, 0x1.8p-16, 0x1p-15}, {TK_F8E5M2, 1.125, 1},
      {TK_F8E5M2, 1.375, 1.5},    {TK_F8E5M2, -0.0, -0.0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    double got = ir_dtype_round(cases[i].t, cases[i].x);
    if (got != cases[i].want || signbit(got) != signbit(cases[i].want))
      fail_msg("%s of %a: %a, want %a", ir_dtype_name(cases[i].t), cases[i].x, got, cases[i].want);
  }
  assert_true(isnan(ir_dtype_round(TK_F8E4M3, -NAN)) && !signbit(ir_dtype_round(TK_F8E4M3, -NAN)));
  for (int t = 0; t < 2; t++) {
    tk_dtype dt = t ? TK_F8E5M2 : TK_F8E4M3;
    assert_int_equal(ir_fp8_bits(dt, NAN), 0x7f);
    assert_int_equal(ir_fp8_bits(dt, -NAN), 0x7f ^ 0x80 * !!signbit(-NAN));
    assert_int_equal(ir_fp8_bits(dt, 1e30), t ? 0x7b : 0x7e);
    for (int b = 0; b < 256; b++) assert_int_equal(ir_fp8_bits(dt, ir_fp8_value(dt, (uint8_t)b)), b);
  }
  assert_true(isinf(ir_fp8_value(TK_F8E5M2, 0xfc)) && ir_fp8_value(TK_F8E5M2, 0xfc) < 0);
  assert_true(isnan(ir_fp8_value(TK_F8E4M3, 0xff)) && isnan(ir_fp8_value(TK_F8E5M2, 0x7d)));
  assert_true(ir_fp8_value(TK_F8E4M3, 0x7e) == 448 && ir_fp8_value(TK_F8E4M3, 0x01) == 0x1p-9);
  assert_true(ir_fp8_value(TK_F8E5M2, 0x7b) == 57344 && ir_fp8_value(TK_F8E5M2, 0x01) == 0x1p-16);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_types_interned_and_printed),
      cmocka_unit_test(test_smem_buffer_bytes),
      cmocka_unit_test(test_dtype_helpers),
      cmocka_unit_test(test_fp8_rule),
      cmocka_unit_test(test_fp8_acc_bound),
      cmocka_unit_test(test_built_kernel_verifies_and_prints),
      cmocka_unit_test(test_editing_helpers),
      cmocka_unit_test(test_verifier_catches_breakage),
      cmocka_unit_test(test_verifier_shape_ops),
      cmocka_unit_test(test_print_parse_roundtrip),
      cmocka_unit_test(test_parse_hand_written),
      cmocka_unit_test(test_verifier_math_types),
      cmocka_unit_test(test_verifier_param_pos),
      cmocka_unit_test(test_parse_errors_located),
      cmocka_unit_test(test_parse_deep_nesting),
      cmocka_unit_test(test_parse_never_crashes),
      cmocka_unit_test(test_signature),
      cmocka_unit_test(test_verifier_atomic_order_and_wg_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
