/* codegen/: kernels built with the IR builder, emitted as LLVM IR and PTX, checked for the
 * instructions that show the lowering did its job (vector accesses, entry, .maxntid, ...).
 * PTX needing libdevice is skipped, saying so, when libdevice is not installed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "codegen/cg.h"
#include "codegen/codegen.h"
#include "tests/unit/ptx_check.h"

/* ---- building IR ---- */

typedef struct {
  su_arena *arena;
  ir_module *m;
  ir_func *f;
  ir_builder b;
  su_diags d;
} fixture;

static void begin(fixture *x, const char *kernel) {
  x->arena = su_arena_new();
  x->m = ir_module_new(x->arena, "test.tk");
  x->f = ir_func_new(x->m, kernel, (ir_loc){1, 1});
  x->b = (ir_builder){x->m, x->f->body, NULL, {2, 5}};
  su_diags_init(&x->d, x->arena, NULL);
}

static void end(fixture *x) { su_arena_free(x->arena); }

static const ir_type *scalar(fixture *x, tk_dtype dt) { return ir_type_scalar(x->m, dt); }
static const ir_type *ptr(fixture *x, tk_dtype dt) { return ir_type_ptr(x->m, scalar(x, dt)); }
static const ir_type *tile(fixture *x, const ir_type *e, int n) {
  return ir_type_tile(x->m, e, 1, &n);
}
static ir_value *param(fixture *x, const char *name, const ir_type *t) {
  return ir_func_add_param(x->m, x->f, name, t);
}
static ir_value *op1(fixture *x, ir_opcode opc, const ir_type *t, ir_value *a) {
  return ir_build1(&x->b, opc, t, 1, &a);
}
static ir_value *op2(fixture *x, ir_opcode opc, ir_value *a, ir_value *b) {
  return ir_binary(&x->b, opc, a, b);
}
static ir_value *splat(fixture *x, ir_value *s, int n) {
  return op1(x, IR_SPLAT, tile(x, s->type, n), s);
}
static ir_value *arange(fixture *x, int n) {
  ir_op *op = ir_build(&x->b, IR_ARANGE, 0, NULL, 1,
                       (const ir_type *[]){tile(x, scalar(x, TK_I32), n)});
  op->attr = 0;
  op->attr2 = n;
  return op->results[0];
}
static ir_value *program_id(fixture *x) {
  return ir_build1(&x->b, IR_PROGRAM_ID, scalar(x, TK_I32), 0, NULL);
}
/* splat(base) + off, as a tile of pointers. */
static ir_value *addptr(fixture *x, ir_value *base, ir_value *off) {
  int n = off->type->shape[0];
  ir_value *pt = splat(x, base, n);
  ir_value *v[2] = {pt, off};
  return ir_build1(&x->b, IR_ADDPTR, pt->type, 2, v);
}
/* program_id(0) * n + arange(0, n) */
static ir_value *block_offsets(fixture *x, int n) {
  ir_value *start = op2(x, IR_MUL, program_id(x), ir_const_int(&x->b, scalar(x, TK_I32), n));
  return op2(x, IR_ADD, splat(x, start, n), arange(x, n));
}
static ir_value *load(fixture *x, ir_value *p, ir_value *mask) {
  ir_value *v[2] = {p, mask};
  const ir_type *t = ir_type_like(x->m, p->type, p->type->elem->elem);
  return ir_build1(&x->b, IR_LOAD, t, mask ? 2 : 1, v);
}
static void store(fixture *x, ir_value *p, ir_value *val, ir_value *mask) {
  ir_value *v[3] = {p, val, mask};
  ir_build(&x->b, IR_STORE, mask ? 3 : 2, v, 0, NULL);
}
static void ret(fixture *x) { ir_build(&x->b, IR_RETURN, 0, NULL, 0, NULL); }
/* Specializes the named parameters (NULL: every integer and pointer one) to multiples of
 * 16, as the JIT does for such arguments. */
static void specialize(fixture *x, const char *const *names) {
  for (int i = 0; i < x->f->body->nargs; i++) {
    const ir_type *t = x->f->body->args[i]->type;
    bool named = !names;
    for (const char *const *n = names; n && *n; n++) named |= !strcmp(*n, x->f->param_names[i]);
    if (named && (t->kind == IR_PTR || ir_dtype_is_int(t->dtype)))
      ir_func_set_param_div(x->m, x->f, i, 16);
  }
}

/* ---- emitting ---- */

static bool have_libdevice(void) {
  su_buf p = {0};
  cg_libdevice_path(NULL, &p);
  bool ok = access(su_buf_str(&p), R_OK) == 0;
  su_buf_free(&p);
  return ok;
}

/* When ptxas is installed, the PTX must assemble for its arch. */
static void assert_ptxas_accepts(const char *ptx, const char *arch) { free(pc_ptxas(ptx, arch)); }

/* Verifies x's module, emits it for arch, and returns the text (caller frees), or NULL
 * when emission failed. */
static char *emit(fixture *x, cg_format f, const char *arch) {
  assert_true(ir_verify(x->m, &x->d));
  cg_options o = {arch, 3, NULL};
  su_buf out = {0};
  bool ok = cg_emit(x->m, &o, f, &out, &x->d);
  if (!ok) {
    su_buf_free(&out);
    return NULL;
  }
  assert_int_equal(strlen(su_buf_str(&out)), out.len);
  if (f == CG_PTX) assert_ptxas_accepts(out.data, arch ? arch : "sm_90a");
  return out.data;
}

static void assert_has(const char *text, const char *needle) {
  if (!text) {
    fail_msg("no output where \"%s\" was expected", needle);
    return;
  }
  if (!strstr(text, needle)) fail_msg("expected \"%s\" in:\n%s", needle, text);
}

static void assert_lacks(const char *text, const char *needle) {
  if (!text) {
    fail_msg("no output");
    return;
  }
  if (strstr(text, needle)) fail_msg("did not expect \"%s\" in:\n%s", needle, text);
}

/* kernel add(x, y, z: *f32, n: i32): z[o] = x[o] + y[o] where o < n, 1024 per program */
static void build_add(fixture *x, bool masked) {
  begin(x, "add");
  ir_value *px = param(x, "x", ptr(x, TK_F32)), *py = param(x, "y", ptr(x, TK_F32));
  ir_value *pz = param(x, "z", ptr(x, TK_F32)), *n = param(x, "n", scalar(x, TK_I32));
  ir_value *o = block_offsets(x, 1024);
  ir_value *mask = masked ? ir_cmp_build(&x->b, IR_CMP_LT, o, splat(x, n, 1024)) : NULL;
  ir_value *sum = op2(x, IR_ADD, load(x, addptr(x, px, o), mask), load(x, addptr(x, py, o), mask));
  store(x, addptr(x, pz, o), sum, mask);
  ret(x);
}

static void test_unmasked_add_is_vectorized(void **state) {
  (void)state;
  fixture x;
  build_add(&x, false);
  specialize(&x, NULL);
  char *ll = emit(&x, CG_LLVM_IR, NULL);
  assert_non_null(ll);
  assert_has(ll, "define ptx_kernel void @add(ptr addrspace(1)");
  assert_has(ll, "align 16 %x");
  assert_has(ll, "i32 %n)");
  assert_has(ll, "\"maxntidx\", i32 128");
  free(ll);
  char *ptx = emit(&x, CG_PTX, NULL);
  assert_non_null(ptx);
  assert_has(ptx, ".target sm_90a");
  assert_has(ptx, ".entry add(");
  assert_has(ptx, ".maxntid 128, 1, 1");
  assert_has(ptx, "ld.global.v4.f32");
  assert_has(ptx, "st.global.v4.f32");
  assert_has(ptx, "%ctaid.x");
  assert_lacks(ptx, "ld.global.f32");
  free(ptx);
  end(&x);
}

/* Unspecialized pointers are aligned to their element only: no vector through them, for
 * LLVM either. */
static void test_unspecialized_pointers_are_not_vectorized(void **state) {
  (void)state;
  fixture x;
  build_add(&x, false);
  char *ll = emit(&x, CG_LLVM_IR, NULL);
  assert_has(ll, "align 4 %x");
  assert_lacks(ll, "align 16");
  free(ll);
  char *ptx = emit(&x, CG_PTX, NULL);
  assert_has(ptx, "ld.global.f32");
  assert_lacks(ptx, "ld.global.v");
  assert_lacks(ptx, "st.global.v");
  free(ptx);
  end(&x);
}

/* `o < n` with n of unknown divisibility (even with aligned pointers): each element is
 * its own predicated access, and nothing branches. */
static void test_masked_add_unspecialized_n(void **state) {
  (void)state;
  for (int aligned = 0; aligned < 2; aligned++) {
    fixture x;
    build_add(&x, true);
    if (aligned) specialize(&x, (const char *const[]){"x", "y", "z", NULL});
    char *ptx = emit(&x, CG_PTX, "sm_80");
    assert_non_null(ptx);
    assert_has(ptx, ".target sm_80");
    assert_lacks(ptx, "ld.global.v");
    assert_lacks(ptx, "st.global.v");
    assert_lacks(ptx, "bra");
    /* 1024 over 128 threads: 8 elements each, loaded twice and stored once */
    assert_int_equal(pc_count(ptx, "ld.global.b32"), 16);
    assert_int_equal(pc_count(ptx, "st.global.b32"), 8);
    assert_int_equal(pc_count(ptx, "@%p"), 24);
    free(ptx);
    end(&x);
  }
}

/* With n specialized too, `o < n` is constant over each vector: one predicated vector
 * access per group, no branch. */
static void test_masked_add_specialized_n(void **state) {
  (void)state;
  fixture x;
  build_add(&x, true);
  specialize(&x, NULL);
  char *ptx = emit(&x, CG_PTX, "sm_90a");
  assert_non_null(ptx);
  assert_int_equal(pc_count(ptx, "ld.global.v4.b32"), 4);
  assert_int_equal(pc_count(ptx, "st.global.v4.b32"), 2);
  assert_int_equal(pc_count(ptx, "@%p"), 6);
  assert_lacks(ptx, "ld.global.b32");
  assert_lacks(ptx, "bra");
  free(ptx);
  end(&x);
}

/* A mask uniform over each vector by construction (o < k * 64) predicates whole vectors
 * without any fact about k. */
static void test_uniform_mask_predicates_vectors(void **state) {
  (void)state;
  fixture x;
  begin(&x, "copy");
  ir_value *px = param(&x, "x", ptr(&x, TK_F32)), *py = param(&x, "y", ptr(&x, TK_F32));
  ir_value *k = param(&x, "k", scalar(&x, TK_I32));
  ir_value *n = op2(&x, IR_MUL, k, ir_const_int(&x.b, scalar(&x, TK_I32), 64));
  ir_value *o = block_offsets(&x, 512);
  ir_value *mask = ir_cmp_build(&x.b, IR_CMP_LT, o, splat(&x, n, 512));
  store(&x, addptr(&x, py, o), load(&x, addptr(&x, px, o), mask), mask);
  ret(&x);
  specialize(&x, (const char *const[]){"x", "y", NULL});
  char *ptx = emit(&x, CG_PTX, "sm_90");
  assert_non_null(ptx);
  assert_has(ptx, "ld.global.v4.b32");
  assert_has(ptx, "st.global.v4.b32");
  assert_lacks(ptx, "ld.global.b32");
  assert_lacks(ptx, "bra");
  free(ptx);
  end(&x);
}

/* A row base x + row * stride is aligned exactly when the facts say x and stride are:
 * vectors then, elements otherwise; never a run-time test. */
static void test_row_base_alignment_from_facts(void **state) {
  (void)state;
  for (int known = 0; known < 2; known++) {
    fixture x;
    begin(&x, "rows");
    ir_value *px = param(&x, "x", ptr(&x, TK_F32)), *py = param(&x, "y", ptr(&x, TK_F32));
    ir_value *stride = param(&x, "stride", scalar(&x, TK_I32));
    ir_value *row = op2(&x, IR_MUL, program_id(&x), stride);
    ir_value *v[2] = {px, row};
    ir_value *base = ir_build1(&x.b, IR_ADDPTR, px->type, 2, v);
    ir_value *p = addptr(&x, base, arange(&x, 1024));
    store(&x, addptr(&x, py, arange(&x, 1024)), load(&x, p, NULL), NULL);
    ret(&x);
    specialize(&x, known ? NULL : (const char *const[]){"x", "y", NULL});
    char *ptx = emit(&x, CG_PTX, NULL);
    assert_non_null(ptx);
    if (known) {
      assert_has(ptx, "ld.global.v4.f32");
      assert_lacks(ptx, "ld.global.f32");
    } else {
      assert_has(ptx, "ld.global.f32");
      assert_lacks(ptx, "ld.global.v");
    }
    assert_has(ptx, "st.global.v4.f32"); /* y + arange is aligned either way */
    assert_lacks(ptx, "st.global.f32");
    assert_lacks(ptx, "bra");
    free(ptx);
    end(&x);
  }
}

/* Byte and 16-bit elements under a ragged mask: predicated accesses of PTX's narrowest
 * registers, with `other` in the masked-off lanes. */
static void test_narrow_predicated_accesses(void **state) {
  (void)state;
  tk_dtype dts[] = {TK_I8, TK_F16, TK_F64};
  const char *ld[] = {"ld.global.u8", "ld.global.b16", "ld.global.v2.b32"};
  for (int i = 0; i < 3; i++) {
    fixture x;
    begin(&x, "narrow");
    ir_value *px = param(&x, "x", ptr(&x, dts[i])), *py = param(&x, "y", ptr(&x, dts[i]));
    ir_value *n = param(&x, "n", scalar(&x, TK_I32));
    ir_value *o = block_offsets(&x, 512);
    ir_value *mask = ir_cmp_build(&x.b, IR_CMP_LT, o, splat(&x, n, 512));
    store(&x, addptr(&x, py, o), load(&x, addptr(&x, px, o), mask), mask);
    ret(&x);
    char *ptx = emit(&x, CG_PTX, NULL);
    assert_non_null(ptx);
    assert_has(ptx, ld[i]);
    assert_lacks(ptx, "bra");
    free(ptx);
    end(&x);
  }
}

/* f16 in, f32 math, f16 out: 8 halves per thread move as one 128-bit access. */
static void test_f16_moves_128_bits(void **state) {
  (void)state;
  fixture x;
  begin(&x, "scale");
  ir_value *px = param(&x, "x", ptr(&x, TK_F16)), *py = param(&x, "y", ptr(&x, TK_F16));
  ir_value *o = block_offsets(&x, 2048);
  ir_value *v = load(&x, addptr(&x, px, o), NULL);
  const ir_type *tf = tile(&x, scalar(&x, TK_F32), 2048);
  ir_value *w = op1(&x, IR_CAST, tf, v);
  w = op2(&x, IR_MUL, w, ir_const_float(&x.b, tf, 2.5));
  store(&x, addptr(&x, py, o), op1(&x, IR_CAST, v->type, w), NULL);
  ret(&x);
  specialize(&x, NULL);
  char *ptx = emit(&x, CG_PTX, "sm_80");
  assert_non_null(ptx);
  assert_has(ptx, "ld.global.v4.b32");
  assert_has(ptx, "st.global.v4.b32");
  free(ptx);
  end(&x);
}

/* y = where(o < n, x * 2, 0), x loaded under the same mask (y stored unmasked, else LLVM
 * drops the selects): with n specialized the mask is constant over each group of 4
 * adjacent elements, so the compare is emitted once per group and serves the loads and
 * the selects alike. */
static void test_uniform_mask_computed_once_per_group(void **state) {
  (void)state;
  for (int known = 0; known < 2; known++) {
    fixture x;
    begin(&x, "relu_ish");
    ir_value *px = param(&x, "x", ptr(&x, TK_F32)), *py = param(&x, "y", ptr(&x, TK_F32));
    ir_value *n = param(&x, "n", scalar(&x, TK_I32));
    ir_value *o = block_offsets(&x, 1024);
    ir_value *mask = ir_cmp_build(&x.b, IR_CMP_LT, o, splat(&x, n, 1024));
    ir_value *v = load(&x, addptr(&x, px, o), mask);
    ir_value *twice = op2(&x, IR_MUL, v, ir_const_float(&x.b, v->type, 2.0));
    ir_value *sel[3] = {mask, twice, ir_const_float(&x.b, v->type, 0.0)};
    ir_value *y = ir_build1(&x.b, IR_SELECT, v->type, 3, sel);
    store(&x, addptr(&x, py, o), y, NULL);
    ret(&x);
    specialize(&x, known ? NULL : (const char *const[]){"x", "y", NULL});
    char *ll = emit(&x, CG_LLVM_IR, NULL);
    assert_non_null(ll);
    /* 8 elements per thread: 2 groups of 4 when n is a multiple of 16, else 8 */
    assert_int_equal(pc_count(ll, "icmp slt"), known ? 2 : 8);
    free(ll);
    char *ptx = emit(&x, CG_PTX, NULL);
    assert_non_null(ptx);
    assert_int_equal(pc_count(ptx, "selp.f32"), 8);
    if (known) assert_int_equal(pc_count(ptx, "setp.lt.s32"), 2);
    free(ptx);
    end(&x);
  }
}

/* f32 -> f16/bf16 of adjacent slots: one packed cvt per pair, ready for the vector store;
 * half arithmetic (here a f16 multiply) rounds its pairs the same way. */
static void test_half_rounding_in_pairs(void **state) {
  (void)state;
  const tk_dtype halves[2] = {TK_F16, TK_BF16};
  const char *packed[2] = {"cvt.rn.f16x2.f32", "cvt.rn.bf16x2.f32"};
  const char *scalar_cvt[2] = {"cvt.rn.f16.f32", "cvt.rn.bf16.f32"};
  for (int h = 0; h < 2; h++) {
    fixture x;
    begin(&x, "scale");
    ir_value *px = param(&x, "x", ptr(&x, TK_F32)), *py = param(&x, "y", ptr(&x, halves[h]));
    ir_value *o = block_offsets(&x, 2048);
    ir_value *v = load(&x, addptr(&x, px, o), NULL);
    const ir_type *th = tile(&x, scalar(&x, halves[h]), 2048);
    ir_value *w = op1(&x, IR_CAST, th, v);
    w = op2(&x, IR_MUL, w, ir_const_float(&x.b, th, 3.0));
    store(&x, addptr(&x, py, o), w, NULL);
    ret(&x);
    specialize(&x, NULL);
    char *ptx = emit(&x, CG_PTX, "sm_80");
    assert_non_null(ptx);
    /* 16 elements per thread, rounded twice (the cast, the multiply): 2 x 8 pairs */
    assert_int_equal(pc_count(ptx, packed[h]), 16);
    assert_lacks(ptx, scalar_cvt[h]);
    assert_has(ptx, "st.global.v4.b32");
    free(ptx);
    end(&x);
  }
}

/* Math (here the fast f32 forms) leaves no call and no unused libdevice behind. */
static void test_math_through_libdevice(void **state) {
  (void)state;
  fixture x;
  begin(&x, "coscos");
  ir_value *px = param(&x, "x", ptr(&x, TK_F32)), *py = param(&x, "y", ptr(&x, TK_F32));
  ir_value *o = block_offsets(&x, 1024);
  ir_value *v = load(&x, addptr(&x, px, o), NULL);
  v = ir_unary(&x.b, IR_COS, ir_unary(&x.b, IR_COS, v));
  store(&x, addptr(&x, py, o), ir_unary(&x.b, IR_EXP, v), NULL);
  ret(&x);
  if (!have_libdevice()) {
    print_message("skipped: libdevice not found (set TK_LIBDEVICE or CUDA_HOME)\n");
    end(&x);
    skip();
  }
  char *ll = emit(&x, CG_LLVM_IR, NULL);
  assert_non_null(ll);
  assert_lacks(ll, "@__nv_cosf");
  assert_lacks(ll, "@__nvvm_reflect");
  free(ll);
  char *ptx = emit(&x, CG_PTX, NULL);
  assert_non_null(ptx);
  assert_has(ptx, ".entry coscos(");
  assert_has(ptx, "ex2.approx");
  assert_lacks(ptx, ".func"); /* everything inlined, unused libdevice dropped */
  free(ptx);
  end(&x);
}

/* A missing libdevice is a reported error, not a crash. */
static void test_missing_libdevice_reported(void **state) {
  (void)state;
  fixture x;
  begin(&x, "k");
  ir_value *px = param(&x, "x", ptr(&x, TK_F32));
  ir_value *o = block_offsets(&x, 128);
  ir_value *p = addptr(&x, px, o);
  store(&x, p, ir_unary(&x.b, IR_LOG, load(&x, p, NULL)), NULL); /* f32 log: libdevice's */
  ret(&x);
  cg_options o2 = {"sm_90a", 3, "/nonexistent/libdevice.bc"};
  su_buf out = {0};
  assert_false(cg_emit(x.m, &o2, CG_PTX, &out, &x.d));
  assert_int_equal(x.d.nerrors, 1);
  assert_non_null(strstr(x.d.first->msg, "cannot read libdevice '/nonexistent/libdevice.bc'"));
  su_buf_free(&out);
  end(&x);
}

/* for k in range(0, n, 1): acc += x[k*256 + arange] — a tile carried around a loop; then
 * an if with a result. */
static void test_loop_carried_tile_and_if(void **state) {
  (void)state;
  fixture x;
  begin(&x, "rowsum");
  ir_value *px = param(&x, "x", ptr(&x, TK_F32)), *py = param(&x, "y", ptr(&x, TK_F32));
  ir_value *n = param(&x, "n", scalar(&x, TK_I32));
  const ir_type *i32 = scalar(&x, TK_I32), *tf = tile(&x, scalar(&x, TK_F32), 256);
  ir_value *acc0 = ir_const_float(&x.b, tf, 0.0);
  ir_op *loop = ir_build_for(&x.b, ir_const_int(&x.b, i32, 0), n, ir_const_int(&x.b, i32, 1), 1,
                             &acc0);
  ir_builder outer = x.b;
  x.b.block = loop->regions[0];
  ir_value *k = loop->regions[0]->args[0], *acc = loop->regions[0]->args[1];
  ir_value *base = op2(&x, IR_MUL, k, ir_const_int(&x.b, i32, 256));
  ir_value *o = op2(&x, IR_ADD, splat(&x, base, 256), arange(&x, 256));
  ir_value *next = op2(&x, IR_ADD, acc, load(&x, addptr(&x, px, o), NULL));
  ir_build(&x.b, IR_YIELD, 1, &next, 0, NULL);
  x.b = outer;
  ir_value *sum = loop->results[0];
  ir_value *pos = ir_cmp_build(&x.b, IR_CMP_GT, n, ir_const_int(&x.b, i32, 0));
  ir_op *iff = ir_build_if(&x.b, pos, 1, &tf);
  x.b.block = iff->regions[0];
  ir_value *twice = op2(&x, IR_ADD, sum, sum);
  ir_build(&x.b, IR_YIELD, 1, &twice, 0, NULL);
  x.b.block = iff->regions[1];
  ir_build(&x.b, IR_YIELD, 1, &sum, 0, NULL);
  x.b = outer;
  store(&x, addptr(&x, py, arange(&x, 256)), iff->results[0], NULL);
  ret(&x);
  specialize(&x, NULL);
  char *ptx = emit(&x, CG_PTX, NULL);
  assert_non_null(ptx);
  assert_has(ptx, "ld.global.v2.f32"); /* 256 over 128 threads: 2 per thread */
  assert_has(ptx, "bra");
  free(ptx);
  end(&x);
}

/* Tile atomics, masked; a scalar atomic is done once and broadcast. */
static void test_atomics(void **state) {
  (void)state;
  fixture x;
  begin(&x, "hist");
  ir_value *px = param(&x, "x", ptr(&x, TK_F32)), *pc = param(&x, "c", ptr(&x, TK_I32));
  ir_value *n = param(&x, "n", scalar(&x, TK_I32));
  ir_value *o = block_offsets(&x, 128);
  ir_value *mask = ir_cmp_build(&x.b, IR_CMP_LT, o, splat(&x, n, 128));
  ir_value *ones = ir_const_float(&x.b, tile(&x, scalar(&x, TK_F32), 128), 1.0);
  ir_value *v[3] = {addptr(&x, px, o), ones, mask};
  ir_op *a = ir_build(&x.b, IR_ATOMIC, 3, v, 1, (const ir_type *[]){ones->type});
  a->attr = IR_ATOM_ADD;
  ir_value *w[3] = {pc, ir_const_int(&x.b, scalar(&x, TK_I32), 0), n};
  ir_value *old = ir_build1(&x.b, IR_ATOMIC_CAS, scalar(&x, TK_I32), 3, w);
  store(&x, pc, old, NULL);
  ret(&x);
  char *ptx = emit(&x, CG_PTX, "sm_90a");
  assert_non_null(ptx);
  assert_has(ptx, ".global.add.f32");
  assert_has(ptx, "atom.global.cas.b32");
  assert_has(ptx, "bar.sync");
  free(ptx);
  end(&x);
}

/* Every dtype through arithmetic, comparisons, select, casts and min/max: it must all
 * select on every arch (bf16 on sm_80 included). */
static void test_every_dtype_compiles(void **state) {
  (void)state;
  static const tk_dtype dts[] = {TK_I8, TK_I16, TK_I32, TK_I64, TK_U8,  TK_U16,
                                 TK_U32, TK_U64, TK_F16, TK_BF16, TK_F32, TK_F64};
  static const char *arches[] = {"sm_80", "sm_90", "sm_90a"};
  for (size_t a = 0; a < 3; a++)
    for (size_t i = 0; i < sizeof dts / sizeof *dts; i++) {
      fixture x;
      begin(&x, "ops");
      ir_value *px = param(&x, "x", ptr(&x, dts[i])), *pb = param(&x, "b", ptr(&x, TK_I1));
      ir_value *o = block_offsets(&x, 512);
      ir_value *v = load(&x, addptr(&x, px, o), NULL);
      ir_value *s = op2(&x, IR_MUL, op2(&x, IR_ADD, v, v), op2(&x, IR_SUB, v, v));
      s = op2(&x, IR_MAX, op2(&x, IR_DIV, s, v), op2(&x, IR_MIN, v, s));
      s = op2(&x, IR_REM, s, v);
      ir_value *lt = ir_cmp_build(&x.b, IR_CMP_LT, s, v);
      ir_value *sel[3] = {lt, s, v};
      s = ir_build1(&x.b, IR_SELECT, v->type, 3, sel);
      const ir_type *t64 = tile(&x, scalar(&x, TK_F64), 512);
      s = op1(&x, IR_CAST, v->type, op1(&x, IR_CAST, t64, s));
      s = op1(&x, IR_CAST, v->type, op1(&x, IR_CAST, tile(&x, scalar(&x, TK_BF16), 512), s));
      s = op1(&x, IR_CAST, v->type, op1(&x, IR_CAST, tile(&x, scalar(&x, TK_I8), 512), s));
      store(&x, addptr(&x, px, o), s, NULL);
      store(&x, addptr(&x, pb, o), lt, NULL);
      ret(&x);
      char *ptx = emit(&x, CG_PTX, arches[a]);
      if (!ptx && !have_libdevice()) { /* float rem needs __nv_fmodf */
        end(&x);
        continue;
      }
      if (!ptx) fail_msg("dtype %s on %s failed", ir_dtype_name(dts[i]), arches[a]);
      assert_has(ptx, ".entry ops(");
      free(ptx);
      end(&x);
    }
}

static void test_unsupported_is_reported(void **state) {
  (void)state;
  fixture x;
  begin(&x, "printing");
  ir_value *px = param(&x, "x", ptr(&x, TK_F32));
  ir_op *pr = ir_build(&x.b, IR_PRINT, 1, &px, 0, NULL);
  pr->str = "x";
  ret(&x);
  su_buf out = {0};
  assert_false(cg_emit(x.m, NULL, CG_PTX, &out, &x.d));
  assert_int_equal(x.d.nerrors, 1);
  assert_string_equal(x.d.first->msg, "'print' is not supported yet by the GPU back end");
  assert_int_equal(x.d.first->loc.line, 2);
  assert_int_equal(x.d.first->loc.col, 5);
  assert_string_equal(x.d.first->loc.src->name, "test.tk");
  su_buf_free(&out);
  end(&x);
}

static void test_unknown_arch_is_reported(void **state) {
  (void)state;
  fixture x;
  build_add(&x, false);
  assert_null(emit(&x, CG_PTX, "sm_99"));
  assert_int_equal(x.d.nerrors, 1);
  assert_string_equal(x.d.first->msg, "unknown GPU architecture 'sm_99'");
  end(&x);
}

/* y[0] = reduce(x[0:n]) for several kinds, dtypes and sizes (64 elements: replicated
 * over 128 threads; 4096: 32 per thread). */
static void test_reductions(void **state) {
  (void)state;
  static const struct { ir_reduce_kind k; tk_dtype dt; int n; } cases[] = {
      {IR_RED_SUM, TK_F32, 4096}, {IR_RED_MAX, TK_I32, 64},  {IR_RED_MIN, TK_F16, 1024},
      {IR_RED_SUM, TK_I64, 256},  {IR_RED_MAX, TK_F64, 512}, {IR_RED_MIN, TK_U8, 128},
      {IR_RED_MAX, TK_BF16, 2048}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    fixture x;
    begin(&x, "red");
    ir_value *px = param(&x, "x", ptr(&x, cases[i].dt)), *py = param(&x, "y", ptr(&x, cases[i].dt));
    ir_value *v = load(&x, addptr(&x, px, arange(&x, cases[i].n)), NULL);
    ir_op *r = ir_build(&x.b, IR_REDUCE, 1, &v, 1, (const ir_type *[]){scalar(&x, cases[i].dt)});
    r->attr = cases[i].k;
    r->attr2 = 0;
    store(&x, py, r->results[0], NULL);
    ret(&x);
    char *ptx = emit(&x, CG_PTX, i % 2 ? "sm_80" : "sm_90a");
    assert_non_null(ptx);
    assert_has(ptx, "shfl.sync.bfly.b32");
    assert_has(ptx, "bar.sync");
    assert_has(ptx, ".shared");
    free(ptx);
    end(&x);
  }
}

static const char CUDA_H[] = "/usr/local/cuda/include/cuda.h";

/* Compiles --emit=c's my-kern.h and my-kern.c with -Wall -Wextra -Werror -pedantic against
 * the real cuda.h when it is installed (says so when it is not). */
static void assert_compiles(const char *hs, const char *cs) {
  if (access(CUDA_H, R_OK) != 0) {
    print_message("cuda.h not found: the generated C was not compiled\n");
    return;
  }
  char dir[] = "/tmp/tk-emitc-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[128], cmd[512];
  snprintf(path, sizeof path, "%s/my-kern.h", dir);
  FILE *f = fopen(path, "w");
  fputs(hs, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/my-kern.c", dir);
  f = fopen(path, "w");
  fputs(cs, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "cc -std=c11 -Wall -Wextra -Werror -pedantic -I/usr/local/cuda/include -c %s -o "
           "%s/my-kern.o && rm -r %s", path, dir, dir);
  assert_int_equal(system(cmd), 0);
}

/* --emit=c: typed launchers whose parameter names cannot clash with C, compilable with
 * -Wall -Wextra -Werror -pedantic against the real cuda.h when it is installed. */
static void test_emit_c(void **state) {
  (void)state;
  fixture x;
  build_add(&x, false);
  ir_func *g = ir_func_new(x.m, "odd", (ir_loc){9, 1});
  g->num_warps = 8;
  x.b = (ir_builder){x.m, g->body, NULL, {9, 1}};
  ir_func_add_param(x.m, g, "int", scalar(&x, TK_F16));
  ir_func_add_param(x.m, g, "stream", scalar(&x, TK_I1));
  ir_func_add_param(x.m, g, "int_", scalar(&x, TK_U64));
  ret(&x);
  su_buf h = {0}, c = {0};
  assert_true(cg_emit_c(x.m, ".version 8.0\n", "out/my-kern", &h, &c, &x.d));
  const char *hs = su_buf_str(&h), *cs = su_buf_str(&c);
  assert_has(hs, "CUresult my_kern_load(void);");
  assert_has(hs, "CUresult my_kern_add(unsigned gx, unsigned gy, unsigned gz, CUstream stream,\n"
                 "    CUdeviceptr x,\n    CUdeviceptr y,\n    CUdeviceptr z,\n    int32_t n);");
  assert_has(hs, "    uint16_t int_,\n    bool stream_,\n    uint64_t int__);");
  assert_has(hs, "grid of programs");
  assert_has(cs, "#include \"my-kern.h\"");
  assert_has(cs, "0x2e, 0x76, 0x65"); /* ".ve" */
  assert_has(cs, "cuLaunchKernel(my_kern_fn_add, gx, gy, gz, 128, 1, 1, 0, stream, args, NULL)");
  assert_has(cs, "void *args[] = {&int_, &stream_, &int__};");
  assert_compiles(hs, cs);
  su_buf_free(&h);
  su_buf_free(&c);
  end(&x);
}

/* A kernel whose contract names a scratch and a workspace: the launcher keeps one of each,
 * sizes the workspace by the programs it launches (a persistent kernel's resident grid),
 * zeroes it on the launch's stream when it allocates it, passes it last, frees it at
 * unload; the C compiles like any launcher's. */
static void test_emit_c_workspace(void **state) {
  (void)state;
  fixture x;
  build_add(&x, false);
  su_buf h = {0}, c = {0};
  assert_true(cg_emit_c(x.m, ".version 8.0\n// .tk.abi add threads=128 persistent=2 tmaps=0 scratch=32 "
                             "workspace=64\n", "out/my-kern", &h, &c, &x.d));
  const char *hs = su_buf_str(&h), *cs = su_buf_str(&c);
  assert_has(cs, "static CUdeviceptr my_kern_workspace_add;");
  assert_has(cs, "  if (my_kern_workspace_add) cuMemFree(my_kern_workspace_add);\n");
  assert_has(cs, "size_t ws_need = (size_t)(programs < resident ? programs : resident) * 64u;");
  assert_has(cs, "r = cuMemAlloc(&my_kern_workspace_add, ws_need);\n"
                 "      if (r == CUDA_SUCCESS) r = cuMemsetD8Async(my_kern_workspace_add, 0, ws_need, stream);");
  assert_has(cs, "void *args[] = {&x, &y, &z, &n, &grid_x, &grid_y, &grid_z, &my_kern_scratch_add, "
                 "&my_kern_workspace_add};");
  assert_compiles(hs, cs);
  su_buf_free(&h);
  su_buf_free(&c);
  end(&x);
}

/* kernel k(x, y: *dt): y[o] = f(x[o]) for each op in ops, chained; 256 per program. */
static void build_math(fixture *x, tk_dtype dt, const ir_opcode *ops, int nops) {
  begin(x, "k");
  ir_value *px = param(x, "x", ptr(x, dt)), *py = param(x, "y", ptr(x, dt));
  ir_value *o = block_offsets(x, 256);
  ir_value *v = load(x, addptr(x, px, o), NULL);
  for (int i = 0; i < nops; i++) v = ir_unary(&x->b, ops[i], v);
  store(x, addptr(x, py, o), v, NULL);
  ret(x);
}

/* Emits x's module with libdevice at path; NULL (reported) on failure. */
static char *emit_with_libdevice(fixture *x, cg_format f, const char *path) {
  assert_true(ir_verify(x->m, &x->d));
  cg_options o = {"sm_90a", 3, path};
  su_buf out = {0};
  if (!cg_emit(x->m, &o, f, &out, &x->d)) {
    su_buf_free(&out);
    return NULL;
  }
  if (f == CG_PTX) assert_ptxas_accepts(out.data, "sm_90a");
  return out.data;
}

/* f32 sin, cos, exp and exp2 are the hardware approximations, sqrt and floor exact LLVM
 * intrinsics: none needs libdevice, so a missing one does not matter. */
static void test_f32_math_is_approx(void **state) {
  (void)state;
  fixture x;
  static const ir_opcode ops[] = {IR_COS, IR_SIN, IR_EXP, IR_EXP2, IR_SQRT, IR_FLOOR};
  build_math(&x, TK_F32, ops, sizeof ops / sizeof *ops);
  char *ll = emit_with_libdevice(&x, CG_LLVM_IR, "/nonexistent/libdevice.bc");
  assert_lacks(ll, "__nv_");
  free(ll);
  char *ptx = emit_with_libdevice(&x, CG_PTX, "/nonexistent/libdevice.bc");
  assert_has(ptx, "cos.approx.f32");
  assert_has(ptx, "sin.approx.f32");
  assert_has(ptx, "ex2.approx.f32");
  assert_lacks(ptx, "ex2.approx.ftz"); /* subnormals kept, as in the rest of f32 */
  assert_has(ptx, "sqrt.rn.f32");
  assert_has(ptx, "cvt.rmi.f32.f32");
  assert_int_equal(x.d.nerrors, 0);
  free(ptx);
  end(&x);
}

/* exp(x) is 2^(x * log2(e)): the multiply by log2(e) must precede ex2. */
static void test_f32_exp_scales_by_log2e(void **state) {
  (void)state;
  fixture x;
  static const ir_opcode ops[] = {IR_EXP};
  build_math(&x, TK_F32, ops, 1);
  char *ll = emit_with_libdevice(&x, CG_LLVM_IR, "/nonexistent/libdevice.bc");
  assert_has(ll, "fmul float %");
  assert_has(ll, "0x3FF7154760000000"); /* log2(e) rounded to f32 */
  assert_has(ll, "@llvm.nvvm.ex2.approx.f(");
  free(ll);
  end(&x);
}

/* f64 cos and exp stay precise: libdevice's, linked and inlined; never the f32 .approx. */
static void test_f64_math_through_libdevice(void **state) {
  (void)state;
  fixture x;
  static const ir_opcode ops[] = {IR_COS, IR_EXP};
  build_math(&x, TK_F64, ops, 2);
  assert_null(emit_with_libdevice(&x, CG_PTX, "/nonexistent/libdevice.bc"));
  assert_int_equal(x.d.nerrors, 1);
  if (!have_libdevice()) {
    print_message("skipped: libdevice not found (set TK_LIBDEVICE or CUDA_HOME)\n");
    end(&x);
    skip();
  }
  char *ll = emit_with_libdevice(&x, CG_LLVM_IR, NULL);
  assert_lacks(ll, "@__nv_cos");
  assert_lacks(ll, "nvvm.cos.approx");
  free(ll);
  char *ptx = emit_with_libdevice(&x, CG_PTX, NULL);
  assert_has(ptx, ".entry k(");
  assert_has(ptx, "fma.rn.f64"); /* the polynomials */
  assert_lacks(ptx, "cos.approx");
  assert_lacks(ptx, "ex2.approx.f32");
  free(ptx);
  end(&x);
}

/* The MUFU instructions of the PTX of one element (128 elements, 128 threads): each of
 * these is one MUFU result after ptxas (div.rn, rcp.rn and sqrt.rn too: a MUFU seed and
 * Newton steps; docs/roofline.md). */
static int mufu_in_ptx(const char *ptx) {
  static const char *const MUFU[] = {"ex2.approx", "lg2.approx", "sin.approx", "cos.approx",
                                     "rsqrt.approx", "rcp.approx", "rcp.rn", "div.full",
                                     "div.rn", "div.approx", "sqrt.rn", "tanh.approx"};
  int n = pc_count(ptx, "sqrt.approx") - pc_count(ptx, "rsqrt.approx");
  for (size_t i = 0; i < sizeof MUFU / sizeof *MUFU; i++) n += pc_count(ptx, MUFU[i]);
  return n;
}

/* The fast f32 erfc's approximation, evaluated on the host with correctly rounded
 * division and exp2 (cg_erfc_model, the GPU's operations otherwise), holds the bound
 * docs/language.md states less the hardware's share (rcp.approx, ex2.approx: 4 ulps):
 * (12 + 3 x^2) ulps of erfc(x) over every f32 step of a dense sweep, and the edges exactly. */
static void test_erfc_model_within_its_bound(void **state) {
  (void)state;
  double worst = 0, at = 0;
  for (double x = -9.2; x <= 9.2; x += 3e-6) {
    float f = (float)x;
    double want = erfc((double)f), got = cg_erfc_model(f, 0, 0);
    int e;
    frexp(want, &e);
    double ulp = want < 0x1p-126 ? 0x1p-149 : ldexp(1.0, e - 24);
    double r = fabs(got - want) / ulp / (12 + 3 * (double)f * f);
    if (r > worst) worst = r, at = f;
  }
  if (worst > 1) fail_msg("erfc model: %.3f times its bound at x = %.9g", worst, at);
  assert_true(cg_erfc_model(0.0f, 0, 0) == 1.0f && cg_erfc_model(-0.0f, 0, 0) == 1.0f);
  assert_true(cg_erfc_model(INFINITY, 0, 0) == 0.0f && cg_erfc_model(-INFINITY, 0, 0) == 2.0f);
  assert_true(cg_erfc_model(100.0f, 0, 0) == 0.0f && cg_erfc_model(-100.0f, 0, 0) == 2.0f);
  assert_true(isnan(cg_erfc_model(NAN, 0, 0)));
  /* past |x| = 9.2 the result is subnormal, kept (not flushed) down to 10 */
  assert_true(cg_erfc_model(9.5f, 0, 0) > 0.0f && cg_erfc_model(9.5f, 0, 0) < 0x1p-126f);
}

/* With complement's factors folded in (erfc(in * x) * 2^out, the product not rounded):
 * (12 + 4 z^2) ulps of erfc(z) 2^out for the exact product z = in * x (the one more z^2
 * for the constant in * sqrt(log2(e) / 2), rounded once to f32 as sqrt(log2(e) / 2) is),
 * for the gelu's factors (in = -1/sqrt 2, out = -1) and others of either sign; the
 * edges scaled. */
static void test_erfc_model_scaled(void **state) {
  (void)state;
  static const struct {
    double in;
    int out;
  } F[] = {{-0.70710676908493042, -1}, {0.70710676908493042, 0}, {3.0, -2}, {-0.5, 3}, {1.0, 5}};
  for (size_t k = 0; k < sizeof F / sizeof *F; k++) {
    double worst = 0, at = 0;
    for (double z = -9.2; z <= 9.2; z += 3e-5) {
      float f = (float)(z / F[k].in);
      double zx = F[k].in * f, want = ldexp(erfc(zx), F[k].out), got = cg_erfc_model(f, F[k].in, F[k].out);
      int e;
      frexp(want, &e);
      double ulp = want < 0x1p-126 ? 0x1p-149 : ldexp(1.0, e - 24);
      double r = fabs(got - want) / ulp / (12 + 4 * zx * zx);
      if (r > worst) worst = r, at = f;
    }
    if (worst > 1) fail_msg("erfc model, in %g out %d: %.3f times its bound at x = %.9g", F[k].in, F[k].out, worst, at);
    float pos = F[k].in > 0 ? INFINITY : -INFINITY;
    /* erfc(0) = 1 exactly only unscaled: 2^out goes through the power (whose square root
     * is irrational for an odd out) */
    assert_true(fabs(cg_erfc_model(0.0f, F[k].in, F[k].out) - ldexp(1.0, F[k].out)) <= ldexp(12.0, F[k].out - 24));
    assert_true(cg_erfc_model(pos, F[k].in, F[k].out) == 0.0f);
    assert_true(cg_erfc_model(-pos, F[k].in, F[k].out) == ldexpf(2.0f, F[k].out));
    assert_true(isnan(cg_erfc_model(NAN, F[k].in, F[k].out)));
  }
}

/* The roofline's special-function counts (cg_math_mufu_per_elem) are what the lowering
 * emits: a lowering that changes without its row of the table fails here. */
static void test_mufu_table_matches_the_ptx(void **state) {
  (void)state;
  if (!have_libdevice()) {
    print_message("skipped: libdevice not found (set TK_LIBDEVICE or CUDA_HOME)\n");
    skip();
  }
  static const ir_opcode ops[] = {IR_EXP, IR_EXP2, IR_LOG, IR_LOG2, IR_SQRT, IR_RSQRT, IR_SIN,
                                  IR_COS, IR_TANH, IR_ERF, IR_ERFC, IR_SIGMOID, IR_LOG1P, IR_EXPM1,
                                  IR_POW, IR_FDIV, IR_DIV, IR_REM, IR_ABS, IR_FLOOR, IR_ADD};
  static const tk_dtype dts[] = {TK_F32, TK_F64};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    for (size_t j = 0; j < 2; j++)
      for (int accurate = 0; accurate < 2; accurate++) {
        if (accurate && (dts[j] != TK_F32 || !ir_op_has_accurate(ops[i]))) continue;
        fixture x;
        begin(&x, "k");
        ir_value *px = param(&x, "x", ptr(&x, dts[j])), *py = param(&x, "y", ptr(&x, dts[j]));
        ir_value *o = block_offsets(&x, 128);
        ir_value *a = load(&x, addptr(&x, px, o), NULL), *v;
        if (ir_op_info(ops[i])->noperands == 2)
          v = op2(&x, ops[i], a, load(&x, addptr(&x, py, o), NULL));
        else
          v = ir_unary(&x.b, ops[i], a);
        if (accurate) v->def->attr = 1;
        store(&x, addptr(&x, py, o), v, NULL);
        ret(&x);
        char *ptx = emit_with_libdevice(&x, CG_PTX, NULL);
        assert_non_null(ptx);
        /* __nv_fmodf has two paths, each with one (div.approx, or rcp.approx and a loop) */
        int paths = ops[i] == IR_REM && dts[j] == TK_F32 ? 2 : 1;
        int want = cg_math_mufu_per_elem(ops[i], dts[j], accurate) * paths, got = mufu_in_ptx(ptx);
        if (got != want)
          fail_msg("%s %s%s: %d MUFU instructions in the PTX, the table says %d", ir_op_info(ops[i])->name,
                   ir_dtype_name(dts[j]), accurate ? " accurate" : "", got, want);
        free(ptx);
        end(&x);
      }
}

/* A libdevice that is not bitcode is a reported error; LLVM must not exit the process. */
static void test_bad_libdevice_reported(void **state) {
  (void)state;
  char path[] = "/tmp/tk-libdevice-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "not bitcode", 11), 11);
  close(fd);
  fixture x;
  static const ir_opcode ops[] = {IR_TANH};
  build_math(&x, TK_F32, ops, 1);
  char *ptx = emit_with_libdevice(&x, CG_PTX, path);
  unlink(path);
  assert_null(ptx);
  assert_int_equal(x.d.nerrors, 1);
  assert_non_null(strstr(x.d.first->msg, "is not a valid libdevice bitcode file"));
  end(&x);
}

/* ---- several kernels: compiled apart, on threads, merged into one PTX module ---- */

/* A kernel writing f(x[0..n)) back in place: `f` is a unary op, dt f32 or f64. */
static void kernel_text(su_buf *b, const char *name, const char *f, const char *dt, int n,
                        int warps) {
  su_buf_printf(b,
                "kernel @%s(%%x: ptr<%s>) warps(%d) stages(1) {\n"
                "  %%o = arange {start = 0, end = %d} : tile<%dxi32>\n"
                "  %%px = splat %%x : tile<%dxptr<%s>>\n"
                "  %%p = addptr %%px, %%o : tile<%dxptr<%s>>\n"
                "  %%v = load %%p : tile<%dx%s>\n"
                "  %%s = %s : tile<%dx%s>\n"
                "  store %%p, %%s\n"
                "  return\n"
                "}\n",
                name, dt, warps, n, n, n, dt, n, dt, n, dt, f, n, dt);
}

/* Two kernels using f64 sin (libdevice's slow path stays a .func with its constant
 * tables, one copy per kernel) and two needing the dynamic shared buffer. */
static ir_module *four_kernels(su_arena *a, su_diags *d) {
  su_buf t = {0};
  su_buf_puts(&t, "module \"apart.tk\"\n");
  kernel_text(&t, "wave", "sin %v", "f64", 32, 1);
  kernel_text(&t, "wave2", "sin %v", "f64", 32, 1);
  kernel_text(&t, "scan1", "scan sum %v {axis = 0}", "f32", 16384, 4);
  kernel_text(&t, "scan2", "scan sum %v {axis = 0}", "f32", 16384, 4);
  su_source *src = su_source_new(a, "apart.tkir", su_buf_str(&t), t.len);
  su_buf_free(&t);
  ir_module *m = ir_parse(a, src, d);
  assert_non_null(m);
  assert_true(ir_verify(m, d));
  return m;
}

static char *emit_module(ir_module *m, cg_format f, const char *libdevice, su_diags *d) {
  cg_options o = {"sm_80", 3, libdevice};
  su_buf out = {0};
  if (!cg_emit(m, &o, f, &out, d)) {
    su_buf_free(&out);
    return NULL;
  }
  if (f == CG_PTX) assert_ptxas_accepts(out.data, "sm_80");
  return out.data;
}

static void assert_before(const char *text, const char *a, const char *b) {
  const char *pa = strstr(text, a), *pb = strstr(text, b);
  if (!pa || !pb || pa > pb) fail_msg("expected \"%s\" before \"%s\" in:\n%s", a, b, text);
}

static void test_kernels_apart_merge_into_one_module(void **state) {
  (void)state;
  if (!have_libdevice()) {
    print_message("skipped: libdevice not found (set TK_LIBDEVICE or CUDA_HOME)\n");
    skip();
  }
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  ir_module *m = four_kernels(a, &d);
  char *ptx = emit_module(m, CG_PTX, NULL, &d);
  assert_non_null(ptx);
  assert_int_equal(pc_count(ptx, ".version"), 1);
  assert_int_equal(pc_count(ptx, ".address_size"), 1);
  assert_before(ptx, ".entry wave(", ".entry wave2(");
  assert_before(ptx, ".entry wave2(", ".entry scan1(");
  assert_before(ptx, ".entry scan1(", ".entry scan2(");
  /* each kernel's copy of libdevice's table under its own name (ptxas above rejects a
   * symbol defined twice) */
  assert_int_equal(pc_count(ptx, ".b8 __cudart_i2opi_d$wave["), 1);
  assert_int_equal(pc_count(ptx, ".b8 __cudart_i2opi_d$wave2["), 1);
  assert_int_equal(pc_count(ptx, ".extern .shared .align 16 .b8 tk_dyn_smem[];"), 1);
  int bytes = -1;
  assert_true(cg_ptx_shared_bytes(ptx, "wave2", &bytes));
  assert_int_equal(bytes, 0);
  assert_true(cg_ptx_shared_bytes(ptx, "scan1", &bytes));
  assert_true(bytes > 48 * 1024);
  assert_true(cg_ptx_shared_bytes(ptx, "scan2", &bytes));
  assert_true(bytes > 48 * 1024);
  /* The same text whichever thread compiled what, and on the caller's thread alone. */
  char *again = emit_module(m, CG_PTX, NULL, &d);
  assert_string_equal(ptx, again);
  free(again);
  setenv("TK_CG_THREADS", "1", 1);
  char *alone = emit_module(m, CG_PTX, NULL, &d);
  unsetenv("TK_CG_THREADS");
  assert_string_equal(ptx, alone);
  free(alone);
  assert_int_equal(d.nerrors, 0);
  free(ptx);
  su_arena_free(a);
}

/* NVPTX numbers call sequences process-wide; the PTX must not show it: a kernel compiled
 * twice in one process gives the same text. */
static void test_ptx_depends_on_the_ir_alone(void **state) {
  (void)state;
  if (!have_libdevice()) {
    print_message("skipped: libdevice not found (set TK_LIBDEVICE or CUDA_HOME)\n");
    skip();
  }
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  su_buf t = {0};
  su_buf_puts(&t, "module \"one.tk\"\n");
  kernel_text(&t, "wave", "sin %v", "f64", 32, 1);
  su_source *src = su_source_new(a, "one.tkir", su_buf_str(&t), t.len);
  su_buf_free(&t);
  ir_module *m = ir_parse(a, src, &d);
  assert_non_null(m);
  char *first = emit_module(m, CG_PTX, NULL, &d);
  char *second = emit_module(m, CG_PTX, NULL, &d);
  assert_non_null(first);
  assert_has(first, "// callseq 0");
  assert_string_equal(first, second);
  free(first);
  free(second);
  su_arena_free(a);
}

/* --emit=llvm stays one module holding every kernel. */
static void test_llvm_ir_of_kernels_is_one_module(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  su_buf t = {0};
  su_buf_puts(&t, "module \"two.tk\"\n");
  kernel_text(&t, "neg1", "neg %v", "f32", 256, 4);
  kernel_text(&t, "neg2", "neg %v", "f32", 256, 4);
  su_source *src = su_source_new(a, "two.tkir", su_buf_str(&t), t.len);
  su_buf_free(&t);
  ir_module *m = ir_parse(a, src, &d);
  assert_non_null(m);
  char *ll = emit_module(m, CG_LLVM_IR, NULL, &d);
  assert_non_null(ll);
  assert_int_equal(pc_count(ll, "target triple"), 1);
  assert_before(ll, "@neg1(", "@neg2(");
  free(ll);
  su_arena_free(a);
}

/* Errors of kernels compiled apart come in kernel order; one that every kernel hits
 * alike (the missing libdevice) is reported once. */
static void test_errors_of_kernels_apart(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  ir_module *m = four_kernels(a, &d);
  assert_null(emit_module(m, CG_PTX, "/nonexistent/libdevice.bc", &d));
  assert_int_equal(d.nerrors, 1);
  assert_non_null(strstr(d.first->msg, "cannot read libdevice"));

  su_diags_init(&d, a, NULL);
  const char text[] = "module \"p.tk\"\n"
                      "kernel @k1(%x: ptr<f32>) warps(4) stages(1) {\n"
                      "  %v = load %x : f32 @2:7\n"
                      "  print %v {prefix = \"a\"} @2:3\n"
                      "  return\n"
                      "}\n"
                      "kernel @k2(%x: ptr<f32>) warps(4) stages(1) {\n"
                      "  %v = load %x : f32 @5:7\n"
                      "  %z = const 0.0 : f32 @5:9\n"
                      "  %c = cmp gt %v, %z : i1 @5:7\n"
                      "  assert %c {msg = \"b\"} @5:3\n"
                      "  return\n"
                      "}\n";
  su_source *src = su_source_new(a, "p.tkir", text, sizeof text - 1);
  m = ir_parse(a, src, &d);
  assert_non_null(m);
  assert_true(ir_verify(m, &d));
  assert_null(emit_module(m, CG_PTX, NULL, &d));
  assert_int_equal(d.nerrors, 2);
  const su_diag *first = d.first, *second = first->next->next;
  assert_int_equal(first->loc.line, 2);
  assert_non_null(strstr(first->msg, "'print'"));
  assert_int_equal(second->loc.line, 5);
  assert_non_null(strstr(second->msg, "'assert'"));
  su_arena_free(a);
}


/* LLVM's report_fatal_error, which would exit the process, unwinds to the thread's trap
 * through the handler target.c installs (issue 13: no compile takes the host down). The
 * module is the one LLVM used to die on: a symbol PTX cannot spell. */
static void test_llvm_fatal_error_unwinds(void **state) {
  (void)state;
  LLVMTargetMachineRef tm = cg_target_machine("sm_90", 3);
  LLVMContextRef llc = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("bad", llc);
  LLVMSetTarget(mod, "nvptx64-nvidia-cuda");
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(llc), NULL, 0, 0);
  LLVMValueRef fn = LLVMAddFunction(mod, "with space", fty);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(llc);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(llc, fn, "entry"));
  LLVMBuildRetVoid(b);
  su_trap t;
  volatile bool unwound = false;
  su_trap_push(&t);
  if (setjmp(t.jb)) {
    unwound = true;
    if (!strstr(t.msg, "LLVM error: Symbol name with unsupported characters"))
      fail_msg("unexpected message: %s", t.msg);
  } else {
    char *err = NULL;
    LLVMMemoryBufferRef mb = NULL;
    LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &mb);
    su_trap_clear(&t);
  }
  assert_true(unwound);
  assert_false(su_trap_active());
  /* what LLVM was doing is abandoned: the objects are leaked, not disposed */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_llvm_fatal_error_unwinds),
      cmocka_unit_test(test_unmasked_add_is_vectorized),
      cmocka_unit_test(test_unspecialized_pointers_are_not_vectorized),
      cmocka_unit_test(test_masked_add_unspecialized_n),
      cmocka_unit_test(test_masked_add_specialized_n),
      cmocka_unit_test(test_uniform_mask_predicates_vectors),
      cmocka_unit_test(test_row_base_alignment_from_facts),
      cmocka_unit_test(test_narrow_predicated_accesses),
      cmocka_unit_test(test_f16_moves_128_bits),
      cmocka_unit_test(test_uniform_mask_computed_once_per_group),
      cmocka_unit_test(test_half_rounding_in_pairs),
      cmocka_unit_test(test_math_through_libdevice),
      cmocka_unit_test(test_missing_libdevice_reported),
      cmocka_unit_test(test_loop_carried_tile_and_if),
      cmocka_unit_test(test_atomics),
      cmocka_unit_test(test_every_dtype_compiles),
      cmocka_unit_test(test_unsupported_is_reported),
      cmocka_unit_test(test_unknown_arch_is_reported),
      cmocka_unit_test(test_emit_c),
      cmocka_unit_test(test_emit_c_workspace),
      cmocka_unit_test(test_reductions),
      cmocka_unit_test(test_f32_math_is_approx),
      cmocka_unit_test(test_f32_exp_scales_by_log2e),
      cmocka_unit_test(test_f64_math_through_libdevice),
      cmocka_unit_test(test_erfc_model_within_its_bound),
      cmocka_unit_test(test_erfc_model_scaled),
      cmocka_unit_test(test_mufu_table_matches_the_ptx),
      cmocka_unit_test(test_bad_libdevice_reported),
      cmocka_unit_test(test_kernels_apart_merge_into_one_module),
      cmocka_unit_test(test_ptx_depends_on_the_ir_alone),
      cmocka_unit_test(test_llvm_ir_of_kernels_is_one_module),
      cmocka_unit_test(test_errors_of_kernels_apart),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
