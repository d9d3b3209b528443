/* The launch contract codegen writes after the PTX (codegen.h, cg_abi) and reads back:
 * a warp-specialized persistent kernel with two tensor maps, a plain kernel, PTX from
 * elsewhere, malformed notes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "codegen/codegen.h"

static const char WS[] =
    "module \"abi.tk\"\n"
    "kernel @ws(%a: ptr<f16> {div = 16}, %b: ptr<f16> {div = 16}, %M: i32, %N: i32, %K: i32 {div = 16}) "
    "warps(8) stages(2) persistent {\n"
    "  %big = const 2147483647 : i32\n"
    "  %ta = tensor_map %a, %M, %K, %K {box = [128, 64], swizzle = 128} : tmap\n"
    "  %tb = tensor_map %b, %big, %K, %N, %N, %N {box = [1, 64, 64], swizzle = 128} : tmap\n"
    "  %A = smem_alloc : smem<2x128x64xf16, #shared<swizzle=128, order=[1,0]>>\n"
    "  %full = mbar_alloc {count = 1} : mbar<2>\n"
    "  warp_spec {producer_warps = 4, regs = [232, 40]} {\n"
    "    %z = const 0 : i32\n"
    "    mbar_wait %full, %z, %z\n"
    "    yield\n"
    "  } {\n"
    "    %z2 = const 0 : i32\n"
    "    mbar_expect %full, %z2 {bytes = 16384}\n"
    "    tma_load %ta, %A, %z2, %full, %z2, %z2, %z2\n"
    "    yield\n"
    "  }\n"
    "  return\n"
    "}\n"
    "kernel @plain(%x: ptr<f32>) warps(4) stages(1) {\n"
    "  return\n"
    "}\n";

static char *ptx_of(su_arena *a, const char *text) {
  su_source *src = su_source_new(a, "abi.tkir", text, strlen(text));
  su_diags d;
  su_diags_init(&d, a, stderr);
  ir_module *m = ir_parse(a, src, &d);
  assert_non_null(m);
  assert_true(ir_verify(m, &d));
  su_buf out = {0};
  cg_options o = {"sm_90a", 3, NULL};
  assert_true(cg_emit(m, &o, CG_PTX, &out, &d));
  char *s = su_strdup(a, su_buf_str(&out));
  su_buf_free(&out);
  return s;
}

static void test_round_trip(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  char *ptx = ptx_of(a, WS);
  cg_abi abi;
  assert_true(cg_ptx_abi(ptx, "ws", &abi));
  assert_int_equal(abi.threads, 384); /* 8 warps and the 4 producers */
  assert_true(abi.persistent);
  assert_int_equal(abi.ntmaps, 2);
  const cg_tmap *t = &abi.tmaps[0];
  assert_int_equal(t->dtype, TK_F16);
  assert_int_equal(t->rank, 2);
  assert_int_equal(t->base, 0);
  assert_int_equal(t->dims[0].param, 2);  /* %M */
  assert_int_equal(t->dims[1].param, 4);  /* %K */
  assert_int_equal(t->strides[0].param, 4);
  assert_int_equal(t->box[0], 128);
  assert_int_equal(t->box[1], 64);
  assert_int_equal(t->swizzle, 128);
  t = &abi.tmaps[1];
  assert_int_equal(t->rank, 3);
  assert_int_equal(t->base, 1);
  assert_int_equal(t->dims[0].param, -1); /* a constant extent */
  assert_true(t->dims[0].value == 2147483647);
  assert_int_equal(t->strides[0].param, 3);
  assert_int_equal(t->strides[1].param, 3);
  assert_int_equal(t->box[0], 1);
  /* the hidden arguments follow the parameters in the entry */
  assert_non_null(strstr(ptx, ".param .align 64 .b8 ws_param_5[128]"));
  assert_non_null(strstr(ptx, ".param .align 64 .b8 ws_param_6[128]"));
  assert_non_null(strstr(ptx, ".param .u32 ws_param_9"));
  assert_non_null(strstr(ptx, "cvta.param"));
  /* a kernel that needs nothing hidden says so */
  assert_true(cg_ptx_abi(ptx, "plain", &abi));
  assert_int_equal(abi.threads, 128);
  assert_false(abi.persistent);
  assert_int_equal(abi.ntmaps, 0);
  su_arena_free(a);
}

/* -fno-fuse's scratch: one hidden global pointer after the parameters, the bytes per
 * program in the note. */
static void test_scratch(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  char *ptx = ptx_of(a, "module \"abi.tk\"\n"
                        "kernel @s(%x: ptr<f32>) warps(4) stages(1) {\n"
                        "  %p = scratch {offset = 32, per_program = 4112} : ptr<f32>\n"
                        "  %v = load %x : f32\n"
                        "  store %p, %v\n"
                        "  return\n"
                        "}\n");
  cg_abi abi;
  assert_true(cg_ptx_abi(ptx, "s", &abi));
  assert_true(abi.scratch == 4112);
  assert_non_null(strstr(ptx, ".param .u64 s_param_1"));
  assert_non_null(strstr(ptx, "scratch=4112"));
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0\n", "k", &abi));
  assert_true(abi.scratch == 0);
  assert_false(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 scratch=17\n", "k", &abi));
  su_arena_free(a);
}

/* The workspace: one hidden global pointer after everything else (a persistent kernel's
 * grid, the scratch), the bytes per launched program in the note after the scratch's. */
static void test_workspace(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  char *ptx = ptx_of(a, "module \"abi.tk\"\n"
                        "kernel @w(%x: ptr<f32>) warps(4) stages(1) persistent {\n"
                        "  %p = scratch {offset = 0, per_program = 32} : ptr<f32>\n"
                        "  %c = workspace {per_program = 64} : ptr<i32>\n"
                        "  %v = load %x : f32\n"
                        "  store %p, %v\n"
                        "  %one = const 1 : i32\n"
                        "  %t = atomic add %c, %one : i32\n"
                        "  return\n"
                        "}\n");
  cg_abi abi;
  assert_true(cg_ptx_abi(ptx, "w", &abi));
  assert_true(abi.workspace == 64 && abi.scratch == 32 && abi.persistent == 1);
  assert_int_equal(cg_abi_hidden(&abi), 5); /* the grid's three, the scratch, the workspace */
  assert_non_null(strstr(ptx, "// .tk.abi w threads=128 persistent=1 tmaps=0 scratch=32 workspace=64\n"));
  assert_non_null(strstr(ptx, ".param .u64 w_param_4,\n"));  /* the scratch */
  assert_non_null(strstr(ptx, ".param .u64 w_param_5\n"));   /* the workspace, last */
  assert_null(strstr(ptx, "w_param_6"));
  /* the note alone, with and without the scratch, and malformed sizes */
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=2 tmaps=0 workspace=4096 pdl\n", "k", &abi));
  assert_true(abi.workspace == 4096 && abi.scratch == 0 && abi.pdl);
  assert_int_equal(cg_abi_hidden(&abi), 4);
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0\n// .tk.abi j threads=64 "
                         "persistent=0 tmaps=0 workspace=16\n", "k", &abi));
  assert_true(abi.workspace == 0); /* the next kernel's line is not k's */
  assert_false(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 workspace=24\n", "k", &abi));
  assert_false(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 workspace=0\n", "k", &abi));
  assert_false(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 scratch=16 workspace=x\n", "k", &abi));
  su_arena_free(a);
}

/* pdl: a word of its own at the end of the kernel's line, after the scratch if any. */
static void test_pdl(void **state) {
  (void)state;
  cg_abi abi;
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 pdl\n", "k", &abi));
  assert_true(abi.pdl);
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 scratch=32 pdl\n", "k", &abi));
  assert_true(abi.pdl && abi.scratch == 32);
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0\n// .tk.abi j threads=64 "
                         "persistent=0 tmaps=0 pdl\n", "k", &abi));
  assert_false(abi.pdl); /* the next kernel's line is not k's */
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 pdlx\n", "k", &abi));
  assert_false(abi.pdl);
}

/* cluster=C: the program is C CTAs along x (2, 4, 8 or 16), last on the line; a kernel without
 * the word is one CTA a program. */
static void test_cluster(void **state) {
  (void)state;
  cg_abi abi;
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 cluster=4\n", "k", &abi));
  assert_int_equal(abi.cluster, 4);
  assert_true(cg_ptx_abi("// .tk.abi k threads=256 persistent=0 tmaps=0 scratch=32 pdl cluster=8\n", "k",
                         &abi));
  assert_true(abi.cluster == 8 && abi.pdl && abi.scratch == 32);
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0\n// .tk.abi j threads=64 "
                         "persistent=0 tmaps=0 cluster=2\n", "k", &abi));
  assert_int_equal(abi.cluster, 0); /* the next kernel's line is not k's */
  assert_false(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 cluster=3\n", "k", &abi));
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 cluster=16\n", "k", &abi));
  assert_int_equal(abi.cluster, 16); /* non-portable: the loader opts the function in */
  assert_false(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 cluster=32\n", "k", &abi));
  assert_false(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=0 cluster=\n", "k", &abi));
}

static void test_other_ptx_and_bad_notes(void **state) {
  (void)state;
  cg_abi abi;
  assert_true(cg_ptx_abi(".visible .entry k() { ret; }", "k", &abi));
  assert_int_equal(abi.threads, 0); /* unknown: PTX from elsewhere */
  assert_false(cg_ptx_abi("// .tk.abi k threads=99999 persistent=0 tmaps=0\n", "k", &abi));
  /* persistent=N: a grid of N programs per SM (@launch(programs_per_sm = N)) */
  assert_true(cg_ptx_abi("// .tk.abi k threads=256 persistent=2 tmaps=0\n", "k", &abi));
  assert_int_equal(abi.persistent, 2);
  assert_false(cg_ptx_abi("// .tk.abi k threads=256 persistent=65 tmaps=0\n", "k", &abi));
  assert_false(cg_ptx_abi("// .tk.abi k threads=256 persistent=-1 tmaps=0\n", "k", &abi));
  assert_false(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=1\n", "k", &abi));
  assert_false(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=1\n"
                          "// .tk.tmap k 0 f16 base=%0 dims=%1 strides= box=999 swizzle=0\n", "k", &abi));
  assert_true(cg_ptx_abi("// .tk.abi k threads=128 persistent=0 tmaps=1\n"
                         "// .tk.tmap k 0 f32 base=%0 dims=%1 strides= box=32 swizzle=0\n", "k", &abi));
  assert_int_equal(abi.tmaps[0].box[0], 32);
  /* another kernel's notes are not this one's */
  assert_true(cg_ptx_abi("// .tk.abi kk threads=384 persistent=1 tmaps=0\n", "k", &abi));
  assert_int_equal(abi.threads, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_scratch),
      cmocka_unit_test(test_workspace),
      cmocka_unit_test(test_pdl),
      cmocka_unit_test(test_cluster),
      cmocka_unit_test(test_other_ptx_and_bad_notes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
