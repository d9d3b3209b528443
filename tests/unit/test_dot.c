/* dot on the GPU back end: the tiling pass's MMA layouts (and their text form), and the
 * PTX of dot kernels built with the IR builder: mma.sync of the right kind, ldmatrix for
 * 16-bit inputs, exactly one instruction per 16x8 tile and K step, accepted by ptxas for
 * sm_80, sm_90 and sm_90a, and a matmul K loop that does not spill at 128x128x64 with 4
 * and 8 warps. ptxas checks are skipped, saying so, when ptxas is not installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "codegen/codegen.h"
#include "passes/passes.h"
#include "tests/unit/ptx_check.h"

/* ---- building dot kernels ---- */

typedef struct {
  su_arena *arena;
  ir_module *m;
  ir_func *f;
  ir_builder b;
  su_diags d;
} fixture;

static void begin(fixture *x, int warps) {
  x->arena = su_arena_new();
  x->m = ir_module_new(x->arena, "dot.tk");
  x->f = ir_func_new(x->m, "k", (ir_loc){1, 1});
  x->f->num_warps = warps;
  x->b = (ir_builder){x->m, x->f->body, NULL, {2, 5}};
  su_diags_init(&x->d, x->arena, NULL);
}

static void end(fixture *x) { su_arena_free(x->arena); }

static const ir_type *i32(fixture *x) { return ir_type_scalar(x->m, TK_I32); }
static const ir_type *tile2(fixture *x, const ir_type *e, int r, int c) {
  return ir_type_tile(x->m, e, 2, (int[]){r, c});
}
static ir_value *op1(fixture *x, ir_opcode opc, const ir_type *t, ir_value *a) {
  return ir_build1(&x->b, opc, t, 1, &a);
}
static ir_value *binary(fixture *x, ir_opcode opc, ir_value *a, ir_value *b) {
  return ir_binary(&x->b, opc, a, b);
}

/* arange(0, n) as a [n, 1] (axis 1) or [1, n] (axis 0) tile broadcast to [r, c]. */
static ir_value *index2(fixture *x, int r, int c, int axis) {
  int n = axis == 1 ? r : c;
  ir_op *op = ir_build(&x->b, IR_ARANGE, 0, NULL, 1,
                       (const ir_type *[]){ir_type_tile(x->m, i32(x), 1, &n)});
  op->attr2 = n;
  ir_value *e = op1(x, IR_EXPAND_DIMS, axis == 1 ? tile2(x, i32(x), r, 1) : tile2(x, i32(x), 1, c),
                    op->results[0]);
  e->def->attr2 = axis;
  return op1(x, IR_BROADCAST, tile2(x, i32(x), r, c), e);
}

/* Pointers to the row-major [r, c] block at base + first, rows `stride` apart (a scalar
 * i32 value). */
static ir_value *block(fixture *x, ir_value *base, int r, int c, ir_value *stride, ir_value *first) {
  const ir_type *t = tile2(x, i32(x), r, c);
  ir_value *rows = binary(x, IR_MUL, index2(x, r, c, 1), op1(x, IR_SPLAT, t, stride));
  ir_value *off = binary(x, IR_ADD, rows, index2(x, r, c, 0));
  if (first) off = binary(x, IR_ADD, off, op1(x, IR_SPLAT, t, first));
  ir_value *p = op1(x, IR_SPLAT, tile2(x, base->type, r, c), base);
  ir_value *v[2] = {p, off};
  return ir_build1(&x->b, IR_ADDPTR, p->type, 2, v);
}

static ir_value *load(fixture *x, ir_value *p) {
  return ir_build1(&x->b, IR_LOAD, ir_type_like(x->m, p->type, p->type->elem->elem), 1, &p);
}

static ir_value *dot(fixture *x, ir_value *a, ir_value *b, ir_value *acc) {
  ir_value *v[3] = {a, b, acc};
  return ir_build1(&x->b, IR_DOT, acc->type, 3, v);
}

static tk_dtype acc_of(tk_dtype in) { return in == TK_I8 ? TK_I32 : TK_F32; }

static ir_value *zeros(fixture *x, tk_dtype dt, int m, int n) {
  const ir_type *t = tile2(x, ir_type_scalar(x->m, dt), m, n);
  return dt == TK_F32 ? ir_const_float(&x->b, t, 0) : ir_const_int(&x->b, t, 0);
}

/* c[M, N] = a[M, K] @ b[K, N], all row-major and contiguous, one tile. */
static void build_dot(fixture *x, tk_dtype in, int m, int n, int k) {
  const ir_type *pin = ir_type_ptr(x->m, ir_type_scalar(x->m, in));
  const ir_type *pacc = ir_type_ptr(x->m, ir_type_scalar(x->m, acc_of(in)));
  ir_value *a = ir_func_add_param(x->m, x->f, "a", pin);
  ir_value *b = ir_func_add_param(x->m, x->f, "b", pin);
  ir_value *c = ir_func_add_param(x->m, x->f, "c", pacc);
  ir_value *ta = load(x, block(x, a, m, k, ir_const_int(&x->b, i32(x), k), NULL));
  ir_value *tb = load(x, block(x, b, k, n, ir_const_int(&x->b, i32(x), n), NULL));
  ir_value *r = dot(x, ta, tb, zeros(x, acc_of(in), m, n));
  ir_value *v[2] = {block(x, c, m, n, ir_const_int(&x->b, i32(x), n), NULL), r};
  ir_build(&x->b, IR_STORE, 2, v, 0, NULL);
  ir_build(&x->b, IR_RETURN, 0, NULL, 0, NULL);
}

/* The matmul sample's loop without masks: c = a @ b for M x K and K x N f16 matrices,
 * one BM x BN tile per program (program_id 0 and 1), K in steps of BK, every pointer
 * and size a multiple of 16 (as the JIT specializes for such arguments). */
static void build_matmul(fixture *x, int bm, int bn, int bk) {
  const ir_type *ph = ir_type_ptr(x->m, ir_type_scalar(x->m, TK_F16));
  ir_value *a = ir_func_add_param(x->m, x->f, "a", ph);
  ir_value *b = ir_func_add_param(x->m, x->f, "b", ph);
  ir_value *c = ir_func_add_param(x->m, x->f, "c", ph);
  ir_value *n = ir_func_add_param(x->m, x->f, "N", i32(x));
  ir_value *k = ir_func_add_param(x->m, x->f, "K", i32(x));
  for (int i = 0; i < 5; i++) ir_func_set_param_div(x->m, x->f, i, 16);
  ir_op *pm = ir_build(&x->b, IR_PROGRAM_ID, 0, NULL, 1, (const ir_type *[]){i32(x)});
  ir_op *pn = ir_build(&x->b, IR_PROGRAM_ID, 0, NULL, 1, (const ir_type *[]){i32(x)});
  pn->attr = 1;
  ir_value *row0 = binary(x, IR_MUL, pm->results[0], ir_const_int(&x->b, i32(x), bm));
  ir_value *col0 = binary(x, IR_MUL, pn->results[0], ir_const_int(&x->b, i32(x), bn));
  ir_value *a0 = binary(x, IR_MUL, row0, k);
  ir_value *acc = zeros(x, TK_F32, bm, bn);
  ir_value *lb = ir_const_int(&x->b, i32(x), 0), *step = ir_const_int(&x->b, i32(x), bk);
  ir_op *loop = ir_build_for(&x->b, lb, k, step, 1, &acc);
  ir_builder outer = x->b;
  x->b.block = loop->regions[0];
  ir_value *kk = loop->regions[0]->args[0];
  ir_value *ta = load(x, block(x, a, bm, bk, k, binary(x, IR_ADD, a0, kk)));
  ir_value *boff = binary(x, IR_ADD, binary(x, IR_MUL, kk, n), col0);
  ir_value *tb = load(x, block(x, b, bk, bn, n, boff));
  ir_value *r = dot(x, ta, tb, loop->regions[0]->args[1]);
  ir_build(&x->b, IR_YIELD, 1, &r, 0, NULL);
  x->b = outer;
  ir_value *coff = binary(x, IR_ADD, binary(x, IR_MUL, row0, n), col0);
  ir_value *h = op1(x, IR_CAST, tile2(x, ir_type_scalar(x->m, TK_F16), bm, bn), loop->results[0]);
  ir_value *v[2] = {block(x, c, bm, bn, n, coff), h};
  ir_build(&x->b, IR_STORE, 2, v, 0, NULL);
  ir_build(&x->b, IR_RETURN, 0, NULL, 0, NULL);
}

/* n0 + arange(0, n) as a [n, 1] (axis 1) or [1, n] (axis 0) tile. */
static ir_value *range2(fixture *x, ir_value *n0, int n, int axis) {
  const ir_type *t1 = ir_type_tile(x->m, i32(x), 1, &n);
  ir_op *op = ir_build(&x->b, IR_ARANGE, 0, NULL, 1, &t1);
  op->attr2 = n;
  ir_value *r = binary(x, IR_ADD, op1(x, IR_SPLAT, t1, n0), op->results[0]);
  ir_value *e = op1(x, IR_EXPAND_DIMS, axis == 1 ? tile2(x, i32(x), n, 1) : tile2(x, i32(x), 1, n), r);
  e->def->attr2 = axis;
  return e;
}

/* idx < bound (a scalar), as an i1 tile shaped like idx. */
static ir_value *below(fixture *x, ir_value *idx, ir_value *bound) {
  ir_value *v[2] = {idx, op1(x, IR_SPLAT, idx->type, bound)};
  ir_value *r = ir_build1(&x->b, IR_CMP, ir_type_like(x->m, idx->type, ir_type_scalar(x->m, TK_I1)), 2, v);
  r->def->attr = IR_CMP_LT;
  return r;
}

/* (p < P) && (q < Q) for a [r, 1] p and a [1, c] q, broadcast to [r, c]. */
static ir_value *mask2(fixture *x, ir_value *pm, ir_value *qm, int r, int c) {
  const ir_type *t = tile2(x, ir_type_scalar(x->m, TK_I1), r, c);
  return binary(x, IR_AND, op1(x, IR_BROADCAST, t, pm), op1(x, IR_BROADCAST, t, qm));
}

static ir_value *masked_load(fixture *x, ir_value *p, ir_value *mask) {
  const ir_type *t = ir_type_like(x->m, p->type, p->type->elem->elem);
  ir_value *v[3] = {p, mask, ir_const_float(&x->b, t, 0)};
  return ir_build1(&x->b, IR_LOAD, t, 3, v);
}

/* The matmul sample as the front end and CSE leave it: any M, N, K, edges masked, the
 * row mask `rm[:, None] < M` and the column mask `rn[None, :] < N` shared by the K loop's
 * loads and the epilogue's store; every pointer and size a multiple of 16. */
static void build_masked_matmul(fixture *x, int bm, int bn, int bk) {
  const ir_type *ph = ir_type_ptr(x->m, ir_type_scalar(x->m, TK_F16));
  ir_value *a = ir_func_add_param(x->m, x->f, "a", ph);
  ir_value *b = ir_func_add_param(x->m, x->f, "b", ph);
  ir_value *c = ir_func_add_param(x->m, x->f, "c", ph);
  ir_value *msz = ir_func_add_param(x->m, x->f, "M", i32(x));
  ir_value *n = ir_func_add_param(x->m, x->f, "N", i32(x));
  ir_value *k = ir_func_add_param(x->m, x->f, "K", i32(x));
  for (int i = 0; i < 6; i++) ir_func_set_param_div(x->m, x->f, i, 16);
  ir_op *pm = ir_build(&x->b, IR_PROGRAM_ID, 0, NULL, 1, (const ir_type *[]){i32(x)});
  ir_op *pn = ir_build(&x->b, IR_PROGRAM_ID, 0, NULL, 1, (const ir_type *[]){i32(x)});
  pn->attr = 1;
  ir_value *row0 = binary(x, IR_MUL, pm->results[0], ir_const_int(&x->b, i32(x), bm));
  ir_value *col0 = binary(x, IR_MUL, pn->results[0], ir_const_int(&x->b, i32(x), bn));
  ir_value *rowm = below(x, range2(x, row0, bm, 1), msz);
  ir_value *colm = below(x, range2(x, col0, bn, 0), n);
  ir_value *a0 = binary(x, IR_MUL, row0, k);
  ir_value *acc = zeros(x, TK_F32, bm, bn);
  ir_value *lb = ir_const_int(&x->b, i32(x), 0), *step = ir_const_int(&x->b, i32(x), bk);
  ir_op *loop = ir_build_for(&x->b, lb, k, step, 1, &acc);
  ir_builder outer = x->b;
  x->b.block = loop->regions[0];
  ir_value *kk = loop->regions[0]->args[0];
  ir_value *amask = mask2(x, rowm, below(x, range2(x, kk, bk, 0), k), bm, bk);
  ir_value *ta = masked_load(x, block(x, a, bm, bk, k, binary(x, IR_ADD, a0, kk)), amask);
  ir_value *bmask = mask2(x, below(x, range2(x, kk, bk, 1), k), colm, bk, bn);
  ir_value *boff = binary(x, IR_ADD, binary(x, IR_MUL, kk, n), col0);
  ir_value *tb = masked_load(x, block(x, b, bk, bn, n, boff), bmask);
  ir_value *r = dot(x, ta, tb, loop->regions[0]->args[1]);
  ir_build(&x->b, IR_YIELD, 1, &r, 0, NULL);
  x->b = outer;
  ir_value *coff = binary(x, IR_ADD, binary(x, IR_MUL, row0, n), col0);
  ir_value *h = op1(x, IR_CAST, tile2(x, ir_type_scalar(x->m, TK_F16), bm, bn), loop->results[0]);
  ir_value *v[3] = {block(x, c, bm, bn, n, coff), h, mask2(x, rowm, colm, bm, bn)};
  ir_build(&x->b, IR_STORE, 3, v, 0, NULL);
  ir_build(&x->b, IR_RETURN, 0, NULL, 0, NULL);
}

/* ---- compiling ---- */


static void tile_it(fixture *x) {
  assert_true(ir_verify(x->m, &x->d));
  pass_tiling(x->m, x->f);
  assert_true(ir_verify(x->m, &x->d));
}

/* Tiles and emits x's module as PTX for arch; the text (caller frees). */
static char *emit(fixture *x, const char *arch) {
  tile_it(x);
  su_buf out = {0};
  if (!cg_emit(x->m, &(cg_options){arch, 3, NULL}, CG_PTX, &out, &x->d)) {
    su_buf text = {0};
    su_diags_render(&x->d, &text);
    fail_msg("the back end rejected the dot kernel:\n%s", su_buf_str(&text));
  }
  return out.data;
}



/* ---- layouts ---- */

static void test_mma_layout_choice(void **state) {
  (void)state;
  static const struct { int m, n, warps, wm, wn; } cases[] = {
      {128, 128, 4, 2, 2}, {128, 128, 8, 4, 2}, {64, 128, 4, 2, 2}, {16, 16, 4, 1, 4},
      {16, 256, 8, 1, 8},  {256, 16, 8, 8, 1},  {32, 32, 1, 1, 1},  {64, 16, 16, 4, 4}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ir_layout l;
    pass_tiling_mma(cases[i].m, cases[i].n, cases[i].warps, &l);
    assert_int_equal(l.kind, IR_LAYOUT_MMA);
    assert_int_equal(l.warps_per_cta[0], cases[i].wm);
    assert_int_equal(l.warps_per_cta[1], cases[i].wn);
    assert_int_equal(l.size_per_thread[1] * l.threads_per_warp[1], 8);
    /* whole 16-row instruction tiles per warp */
    assert_int_equal(cases[i].m % (16 * l.warps_per_cta[0]), 0);
  }
}

/* The tiling pass gives the dot, its accumulator and the loop's carried value the MMA
 * layout, and the layout survives a print / parse round trip. */
static void test_tiling_and_text(void **state) {
  (void)state;
  fixture x;
  begin(&x, 4);
  build_matmul(&x, 128, 128, 64);
  tile_it(&x);
  ir_op *loop = x.f->body->first;
  while (loop && loop->opc != IR_FOR) loop = loop->next;
  assert_non_null(loop);
  const ir_layout *l = loop->results[0]->type->layout;
  assert_non_null(l);
  assert_int_equal(l->kind, IR_LAYOUT_MMA);
  assert_ptr_equal(loop->regions[0]->args[1]->type->layout, l);
  assert_ptr_equal(loop->operands[3]->type->layout, l);
  assert_ptr_equal(loop->regions[0]->last->operands[0]->type->layout, l);
  su_buf text = {0}, again = {0};
  ir_print(&text, x.m);
  assert_non_null(strstr(su_buf_str(&text), "#mma<spt=[1,2], tpw=[8,4], wpc=[2,2], order=[1,0]>"));
  su_source *src = su_source_new(x.arena, "dot.tkir", text.data, text.len);
  ir_module *m2 = ir_parse(x.arena, src, &x.d);
  assert_non_null(m2);
  ir_print(&again, m2);
  assert_string_equal(su_buf_str(&text), su_buf_str(&again));
  su_buf_free(&text);
  su_buf_free(&again);
  end(&x);
}

/* ---- PTX ---- */

typedef struct {
  tk_dtype in;
  int m, n, k, warps;
  const char *mma;    /* the instruction */
  int per_warp_mmas;  /* (m / 16) (n / 8) (k / instruction K) over the warp grid */
  bool ldmatrix;
} dot_case;

static void check_case(const dot_case *dc) {
  static const char *const archs[] = {"sm_80", "sm_90", "sm_90a"};
  for (int i = 0; i < 3; i++) {
    fixture x;
    begin(&x, dc->warps);
    build_dot(&x, dc->in, dc->m, dc->n, dc->k);
    char *ptx = emit(&x, archs[i]);
    if (pc_count(ptx, dc->mma) != dc->per_warp_mmas)
      fail_msg("%d x '%s' expected, found %d:\n%s", dc->per_warp_mmas, dc->mma, pc_count(ptx, dc->mma), ptx);
    assert_int_equal(pc_count(ptx, "ldmatrix.sync.aligned.m8n8") > 0, dc->ldmatrix);
    assert_int_equal(pc_count(ptx, ".trans.") > 0, dc->ldmatrix);
    free(pc_ptxas(ptx, archs[i]));
    free(ptx);
    end(&x);
  }
}

static void test_f16(void **state) {
  (void)state;
  /* 2 x 2 warps of 64 x 64: 4 x 8 instruction tiles, 4 K steps */
  check_case(&(dot_case){TK_F16, 128, 128, 64, 4, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                         4 * 8 * 4, true});
  /* 8 warps: 4 x 2 of 32 x 64 */
  check_case(&(dot_case){TK_F16, 128, 128, 32, 8, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                         2 * 8 * 2, true});
}

static void test_bf16(void **state) {
  (void)state;
  check_case(&(dot_case){TK_BF16, 64, 32, 32, 4, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                         2 * 2 * 2, true});
}

static void test_tf32(void **state) {
  (void)state;
  check_case(&(dot_case){TK_F32, 32, 64, 16, 4, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
                         1 * 4 * 2, false});
}

static void test_s8(void **state) {
  (void)state;
  check_case(&(dot_case){TK_I8, 64, 64, 64, 4, "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32",
                         2 * 4 * 4, false});
}

/* A tile smaller than the warp grid: 4 warps on one 16 x 16 tile, 2 of them replicas. */
static void test_small_tile(void **state) {
  (void)state;
  check_case(&(dot_case){TK_F16, 16, 16, 16, 4, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                         1, true});
}

/* The matmul loop at 128x128x64 keeps its accumulator in registers without spilling. */
static void test_matmul_no_spills(void **state) {
  (void)state;
  static const int warps[] = {4, 8};
  for (int i = 0; i < 2; i++) {
    fixture x;
    begin(&x, warps[i]);
    build_matmul(&x, 128, 128, 64);
    char *ptx = emit(&x, "sm_90a");
    assert_int_equal(pc_count(ptx, "mma.sync.aligned.m16n8k16"), 128 * 128 * 64 / (16 * 8 * 16 * warps[i]));
    assert_int_equal(pc_count(ptx, "ld.global.v4.b32") > 0, true);    /* 16-byte loads */
    assert_int_equal(pc_count(ptx, "st.shared.v4.b32") > 0, true);    /* 16-byte staging */
    char *report = pc_ptxas(ptx, "sm_90a");
    if (!report) {
      printf("skipped: ptxas not installed, spills not checked\n");
    } else if (!strstr(report, " 0 bytes spill stores")) {
      fail_msg("%d warps: spills:\n%s", warps[i], report);
    }
    free(report);
    free(ptx);
    end(&x);
  }
}

/* With every size a multiple of 16, the masked loads of the K loop are uniform over each
 * thread's 8 f16s, so they stay 16 bytes wide (as do their shared-memory staging stores),
 * though their masks meet the epilogue's, which lives in the tensor cores' layout. */
static void test_masked_matmul_vectors(void **state) {
  (void)state;
  static const int warps[] = {4, 8};
  for (int i = 0; i < 2; i++) {
    fixture x;
    begin(&x, warps[i]);
    build_masked_matmul(&x, 128, 256, 64);
    char *ptx = emit(&x, "sm_90a");
    int vecs = (128 * 64 + 64 * 256) / (8 * 32 * warps[i]); /* 16-byte vectors a thread loads */
    assert_int_equal(pc_count(ptx, "ld.global.v4.b32"), vecs);
    assert_int_equal(pc_count(ptx, "ld.global.b32"), 0);
    assert_true(pc_count(ptx, "st.shared.v4") >= vecs);
    assert_int_equal(pc_count(ptx, "mma.sync.aligned.m16n8k16"), 128 * 256 * 64 / (16 * 8 * 16 * warps[i]));
    free(ptx);
    end(&x);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mma_layout_choice), cmocka_unit_test(test_tiling_and_text),
      cmocka_unit_test(test_f16),               cmocka_unit_test(test_bf16),
      cmocka_unit_test(test_tf32),              cmocka_unit_test(test_s8),
      cmocka_unit_test(test_small_tile),        cmocka_unit_test(test_matmul_no_spills),
      cmocka_unit_test(test_masked_matmul_vectors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
