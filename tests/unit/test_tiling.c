/* Tiling: the layout arithmetic codegen relies on, checked on the host for every thread
 * (each element owned exactly once, slices and their slot mapping, the lanes a shuffle
 * pairs), the tiling pass on parsed IR, and N-D kernels through codegen to PTX. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codegen/cg.h"
#include "tests/unit/ptx_check.h"
#include "passes/passes.h"

/* ---- layouts on the host ---- */

typedef struct {
  int rank, shape[IR_MAX_RANK];
} shape_case;

static const shape_case shapes[] = {
    {1, {1024}}, {1, {64}}, {1, {8192}}, {1, {2}},  {2, {16, 64}}, {2, {64, 64}},
    {2, {4, 4096}}, {2, {2, 1024}}, {2, {64, 1}}, {2, {1, 64}}, {2, {128, 2}}, {3, {2, 4, 8}}, {3, {8, 16, 32}},
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };
static const int vecs[] = {1, 4, 8};
static const int warps[] = {1, 4, 8, 16};

typedef struct {
  su_arena *arena;
  ir_module *m;
} world;

static world world_new(void) {
  world w;
  w.arena = su_arena_new();
  w.m = ir_module_new(w.arena, "t.tk");
  return w;
}

static const ir_type *f32_tile(world *w, const shape_case *s) {
  return ir_type_tile(w->m, ir_type_scalar(w->m, TK_F32), s->rank, s->shape);
}

/* Every element of l's tile is held by some thread as a non-replica exactly once, and
 * every slot names an element of the tile. */
static void assert_owned_once(const cg_layout *l) {
  int *seen = calloc((size_t)l->numel, sizeof(int));
  for (int t = 0; t < l->threads; t++)
    for (int j = 0; j < l->per; j++) {
      bool own;
      int64_t e = cg_layout_elem_at(l, t, j, &own);
      assert_true(e >= 0 && e < l->numel);
      if (own) seen[e]++;
    }
  for (int e = 0; e < l->numel; e++) assert_int_equal(seen[e], 1);
  free(seen);
}

static void test_default_layouts_own_each_element_once(void **state) {
  (void)state;
  world w = world_new();
  for (int s = 0; s < NSHAPES; s++)
    for (size_t v = 0; v < sizeof vecs / sizeof *vecs; v++)
      for (size_t k = 0; k < sizeof warps / sizeof *warps; k++) {
        cg_layout l;
        int threads = 32 * warps[k];
        assert_true(cg_layout_resolve(NULL, f32_tile(&w, &shapes[s]), threads, vecs[v], &l));
        assert_owned_once(&l);
        /* A thread's vector runs along the last dim. */
        assert_int_equal(l.fast, l.rank - 1);
      }
  su_arena_free(w.arena);
}

static void test_default_layout_choices(void **state) {
  (void)state;
  ir_layout l;
  pass_tiling_blocked(1, (int[]){1024}, 4, 8, &l);
  assert_int_equal(l.size_per_thread[0], 4);
  assert_int_equal(l.threads_per_warp[0], 32);
  assert_int_equal(l.warps_per_cta[0], 8);
  /* Rows of 4096 with 4 rows: warps go down the rows first, then along them. */
  pass_tiling_blocked(2, (int[]){4, 4096}, 4, 8, &l);
  assert_int_equal(l.size_per_thread[1], 4);
  assert_int_equal(l.threads_per_warp[1], 32);
  assert_int_equal(l.warps_per_cta[0], 4);
  assert_int_equal(l.warps_per_cta[1], 2);
  /* One row: every warp along it. */
  pass_tiling_blocked(2, (int[]){1, 4096}, 4, 8, &l);
  assert_int_equal(l.warps_per_cta[1], 8);
  /* Small tiles spread before vectorizing. */
  pass_tiling_blocked(1, (int[]){128}, 4, 4, &l);
  assert_int_equal(l.size_per_thread[0], 1);
}

/* The slices of a layout own each element once, resolve from IR alike, and map their
 * slots to the parent's as emit_reduce.c assumes. */
static void test_slices(void **state) {
  (void)state;
  world w = world_new();
  for (int s = 0; s < NSHAPES; s++) {
    if (shapes[s].rank < 2) continue;
    for (size_t k = 0; k < sizeof warps / sizeof *warps; k++) {
      int threads = 32 * warps[k];
      const ir_type *t = f32_tile(&w, &shapes[s]);
      ir_layout base;
      pass_tiling_blocked(t->rank, t->shape, 4, warps[k], &base);
      const ir_layout *b = ir_layout_intern(w.m, &base);
      cg_layout l;
      assert_true(cg_layout_resolve(b, t, threads, 4, &l));
      for (int axis = 0; axis < t->rank; axis++) {
        cg_layout sl = cg_layout_slice(&l, axis);
        assert_owned_once(&sl);
        int rshape[IR_MAX_RANK], n = 0;
        for (int i = 0; i < t->rank; i++)
          if (i != axis) rshape[n++] = t->shape[i];
        ir_layout sk = {.kind = IR_LAYOUT_SLICE, .parent = b, .slice_dim = axis};
        const ir_type *rt = ir_type_tile(w.m, t->elem, n, rshape);
        cg_layout viair;
        assert_true(cg_layout_resolve(ir_layout_intern(w.m, &sk), rt, threads, 4, &viair));
        assert_true(cg_layout_same(&sl, &viair));
        for (int th = 0; th < threads; th += 7)
          for (int js = 0; js < sl.per; js++)
            for (int ka = 0; ka < l.ext[axis]; ka++) {
              int j = cg_layout_slice_slot(&l, &sl, axis, js, ka);
              assert_true(j >= 0 && j < l.per);
              for (int i = 0, r = 0; i < t->rank; i++) {
                if (i == axis) continue;
                assert_int_equal(cg_layout_coord_at(&l, th, j, i, NULL),
                                 cg_layout_coord_at(&sl, th, js, r++, NULL));
              }
            }
      }
    }
  }
  su_arena_free(w.arena);
}

/* The butterfly partners of a reduction along dim d differ only along d. */
static void test_shuffle_partners(void **state) {
  (void)state;
  world w = world_new();
  const shape_case *s = &shapes[4]; /* 16 x 64 */
  cg_layout l;
  assert_true(cg_layout_resolve(NULL, f32_tile(&w, s), 128, 4, &l));
  for (int axis = 0; axis < 2; axis++) {
    int d = l.base[axis];
    for (int m = 1; m < l.tpw[d]; m *= 2)
      for (int t = 0; t < 128; t++) {
        int u = t ^ (m * l.lstride[d]);
        assert_true(u / 32 == t / 32);
        for (int j = 0; j < l.per; j++)
          assert_int_equal(cg_layout_coord_at(&l, t, j, 1 - axis, NULL),
                           cg_layout_coord_at(&l, u, j, 1 - axis, NULL));
      }
  }
  su_arena_free(w.arena);
}

static void test_bad_layouts_rejected(void **state) {
  (void)state;
  world w = world_new();
  ir_layout bad = {.kind = IR_LAYOUT_BLOCKED, .rank = 1, .size_per_thread = {1},
                   .threads_per_warp = {16}, .warps_per_cta = {4}, .order = {0}};
  cg_layout l;
  const ir_type *t = f32_tile(&w, &shapes[0]);
  assert_false(cg_layout_resolve(ir_layout_intern(w.m, &bad), t, 128, 4, &l)); /* 16 lanes */
  bad.threads_per_warp[0] = 32;
  assert_true(cg_layout_resolve(ir_layout_intern(w.m, &bad), t, 128, 4, &l));
  assert_false(cg_layout_resolve(ir_layout_intern(w.m, &bad), t, 256, 4, &l)); /* 4 != 8 warps */
  su_arena_free(w.arena);
}

/* ---- the pass and codegen on parsed IR ---- */

typedef struct {
  su_arena *arena;
  su_diags d;
  ir_module *m;
} parsed;

static parsed parse(const char *text) {
  parsed p;
  p.arena = su_arena_new();
  su_diags_init(&p.d, p.arena, NULL);
  su_source *src = su_source_new(p.arena, "t.tkir", text, strlen(text));
  p.m = ir_parse(p.arena, src, &p.d);
  assert_non_null(p.m);
  return p;
}

static const char rows_kernel[] =
    "module \"t.tk\"\n"
    "kernel @rows(%x: ptr<f32> {div = 16}, %y: ptr<f32>, %z: ptr<i32>, %s: ptr<f32>) warps(4) stages(1) {\n"
    "  %r = arange {start = 0, end = 16} : tile<16xi32>\n"
    "  %c = arange {start = 0, end = 64} : tile<64xi32>\n"
    "  %r2 = expand_dims %r {axis = 1} : tile<16x1xi32>\n"
    "  %k = const 64 : tile<16x1xi32>\n"
    "  %ro = mul %r2, %k : tile<16x1xi32>\n"
    "  %rb = broadcast %ro : tile<16x64xi32>\n"
    "  %c2 = expand_dims %c {axis = 0} : tile<1x64xi32>\n"
    "  %cb = broadcast %c2 : tile<16x64xi32>\n"
    "  %off = add %rb, %cb : tile<16x64xi32>\n"
    "  %px = splat %x : tile<16x64xptr<f32>>\n"
    "  %p = addptr %px, %off : tile<16x64xptr<f32>>\n"
    "  %t = load %p : tile<16x64xf32>\n"
    "  %m = reduce max %t {axis = 1} : tile<16xf32>\n"
    "  %cs = reduce sum %t {axis = 0} : tile<64xf32>\n"
    "  %am = argreduce max %t {axis = 1} : tile<16xi32>\n"
    "  %sc = scan sum %t {axis = 1} : tile<16x64xf32>\n"
    "  %tt = trans %sc {perm = [1, 0]} : tile<64x16xf32>\n"
    "  %back = trans %tt {perm = [1, 0]} : tile<16x64xf32>\n"
    "  %py = splat %y : tile<16xptr<f32>>\n"
    "  %q = addptr %py, %r : tile<16xptr<f32>>\n"
    "  store %q, %m\n"
    "  %pz = splat %z : tile<16xptr<i32>>\n"
    "  %qz = addptr %pz, %r : tile<16xptr<i32>>\n"
    "  store %qz, %am\n"
    "  %ps = splat %s : tile<64xptr<f32>>\n"
    "  %qs = addptr %ps, %c : tile<64xptr<f32>>\n"
    "  store %qs, %cs\n"
    "  store %p, %back\n"
    "  return\n"
    "}\n";


static void test_pass_gives_every_tile_a_layout(void **state) {
  (void)state;
  parsed p = parse(rows_kernel);
  ir_func *f = p.m->funcs[0];
  assert_true(pass_tiling(p.m, f));
  assert_true(ir_verify(p.m, &p.d));
  su_buf b = {0};
  ir_print(&b, p.m);
  const char *text = su_buf_str(&b);
  /* Every tile type now carries a layout. */
  assert_int_equal(pc_count(text, "tile<"), pc_count(text, ", #"));
  /* The row reduction stays a slice, expanded back for free. */
  assert_non_null(strstr(text, "{axis = 1} : tile<16xf32, #slice<dim=1, parent=#blocked<spt=[1,4]"));
  /* A second run has nothing to do. */
  assert_false(pass_tiling(p.m, f));
  su_buf_free(&b);
  su_arena_free(p.arena);
}

static void emit(parsed *p, su_buf *out) {
  cg_options o = {.arch = "sm_90a", .opt_level = 3};
  bool ok = cg_emit(p->m, &o, CG_PTX, out, &p->d);
  if (!ok) {
    su_buf msg = {0};
    su_diags_render(&p->d, &msg);
    fprintf(stderr, "%s", su_buf_str(&msg));
    su_buf_free(&msg);
  }
  assert_true(ok);
}

static void test_nd_kernel_to_ptx(void **state) {
  (void)state;
  for (int tiled = 0; tiled < 2; tiled++) { /* the fallback for untiled IR too */
    parsed p = parse(rows_kernel);
    if (tiled) pass_tiling(p.m, p.m->funcs[0]);
    su_buf out = {0};
    emit(&p, &out);
    const char *ptx = su_buf_str(&out);
    assert_non_null(strstr(ptx, ".entry rows"));
    assert_non_null(strstr(ptx, "shfl.sync.bfly"));
    assert_non_null(strstr(ptx, "bar.sync"));
    assert_non_null(strstr(ptx, "ld.global.v4.f32"));
    int bytes = -1;
    assert_true(cg_ptx_shared_bytes(ptx, "rows", &bytes));
    assert_int_equal(bytes, 0); /* static: small */
    assert_false(cg_ptx_shared_bytes(ptx, "nope", &bytes));
    su_buf_free(&out);
    su_arena_free(p.arena);
  }
}

/* Row and column statistics are stored from their reductions' slices, which replicate
 * each element across the threads of the reduced dim: only its owner may write it, so
 * every scalar store is predicated (the 2-D tile's own store is whole vectors). */
static void test_replicated_stores_have_one_writer(void **state) {
  (void)state;
  parsed p = parse(rows_kernel);
  pass_tiling(p.m, p.m->funcs[0]);
  su_buf b = {0};
  ir_print(&b, p.m);
  assert_null(strstr(su_buf_str(&b), "convert_layout"));
  assert_non_null(strstr(su_buf_str(&b), "tile<16xptr<f32>, #slice<dim=1,"));
  assert_non_null(strstr(su_buf_str(&b), "tile<64xptr<f32>, #slice<dim=0,"));
  su_buf out = {0};
  emit(&p, &out);
  int scalar_stores = 0;
  for (const char *l = su_buf_str(&out); l; l = strchr(l, '\n')) {
    l++;
    const char *st = strstr(l, "st.global.");
    const char *eol = strchr(l, '\n');
    if (!st || (eol && st > eol) || strncmp(st, "st.global.v", 11) == 0) continue;
    scalar_stores++;
    const char *at = strchr(l, '@');
    assert_true(at && at < st);
  }
  assert_true(scalar_stores >= 3);
  su_buf_free(&b);
  su_buf_free(&out);
  su_arena_free(p.arena);
}

/* A conversion of a 128 x 128 f32 tile needs 64 KB: the dynamic buffer, announced. */
static void test_big_conversion_uses_dynamic_smem(void **state) {
  (void)state;
  parsed p = parse("module \"t.tk\"\n"
                   "kernel @big(%x: ptr<f32>) warps(8) stages(1) {\n"
                   "  %v = const 1.0 : tile<128x128xf32>\n"
                   "  %o = const 0 : tile<128x128xi32>\n"
                   "  %px = splat %x : tile<128x128xptr<f32>>\n"
                   "  %p = addptr %px, %o : tile<128x128xptr<f32>>\n"
                   "  %t = trans %v {perm = [1, 0]} : tile<128x128xf32>\n"
                   "  %w = convert_layout %t : tile<128x128xf32, #blocked<spt=[1,4], tpw=[1,32], wpc=[8,1], order=[1,0]>>\n"
                   "  %c = convert_layout %w : tile<128x128xf32, #blocked<spt=[4,1], tpw=[32,1], wpc=[1,8], order=[0,1]>>\n"
                   "  %s = reduce sum %c {axis = 0} : tile<128xf32>\n"
                   "  %r = reduce sum %s {axis = 0} : f32\n"
                   "  store %x, %r\n"
                   "  return\n"
                   "}\n");
  pass_tiling(p.m, p.m->funcs[0]);
  assert_true(ir_verify(p.m, &p.d));
  su_buf out = {0};
  emit(&p, &out);
  const char *ptx = su_buf_str(&out);
  int bytes = 0;
  assert_true(cg_ptx_shared_bytes(ptx, "big", &bytes));
  assert_true(bytes >= 128 * 128 * 4);
  assert_non_null(strstr(ptx, ".extern .shared .align 16 .b8 tk_dyn_smem[]"));
  su_buf_free(&out);
  su_arena_free(p.arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_layouts_own_each_element_once),
      cmocka_unit_test(test_default_layout_choices),
      cmocka_unit_test(test_slices),
      cmocka_unit_test(test_shuffle_partners),
      cmocka_unit_test(test_bad_layouts_rejected),
      cmocka_unit_test(test_pass_gives_every_tile_a_layout),
      cmocka_unit_test(test_nd_kernel_to_ptx),
      cmocka_unit_test(test_replicated_stores_have_one_writer),
      cmocka_unit_test(test_big_conversion_uses_dynamic_smem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
