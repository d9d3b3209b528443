/* Unit tests of driver/, the one compile path: source to optimized IR (errors reported,
 * never a module), code generation for the options' target, and both forms of
 * specialization — tkc's lists by name and the JIT's variants by signature bits, each
 * lowered for its target on a copy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "driver/driver.h"

static const char *const SRC =
    "kernel scale<BLOCK: i32 = 1024>(x: *f32, y: *f32, n: i32, k: i64, s: f32, on: i1) {\n"
    "    let o = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    store(y + o, load(x + o, o < n, 0.0) * s, o < n);\n"
    "}\n"
    "kernel other(x: *f16, n: i32) {\n"
    "    store(x + arange(0, 16), zeros<f16>(16), arange(0, 16) < n);\n"
    "}\n";

typedef struct {
  su_arena *a;
  su_diags d;
  ir_module *m;
} fx;

static void compile(fx *x, const char *src) {
  x->a = su_arena_new();
  su_diags_init(&x->d, x->a, NULL);
  drv_options o = {.opt_level = 3};
  su_source *s = su_source_new(x->a, "t.tk", src, strlen(src));
  x->m = drv_compile(x->a, s, &o, &x->d);
}

/* The facts of kernel k's parameters, as "1,16,+,...": a divisibility, or + for one known
 * positive. */
static const char *facts(fx *x, const ir_module *m, int k) {
  su_buf b = {0};
  for (int i = 0; i < m->funcs[k]->body->nargs; i++)
    if (ir_param_pos(m->funcs[k], i))
      su_buf_printf(&b, "%s+", i ? "," : "");
    else
      su_buf_printf(&b, "%s%d", i ? "," : "", ir_param_div(m->funcs[k], i));
  const char *s = su_strdup(x->a, su_buf_str(&b));
  su_buf_free(&b);
  return s;
}

static void test_compile_reports_errors(void **state) {
  (void)state;
  fx x;
  compile(&x, SRC);
  assert_non_null(x.m);
  assert_int_equal(x.m->nfuncs, 2);
  assert_int_equal(x.d.nerrors, 0);
  su_arena_free(x.a);
  compile(&x, "kernel k(x: *f32) {\n  store(x, 1.0)\n}\n");
  assert_null(x.m);
  assert_true(x.d.nerrors > 0);
  su_arena_free(x.a);
}

static void test_specialize_list(void **state) {
  (void)state;
  fx x;
  compile(&x, SRC);
  su_buf why = {0};
  assert_true(drv_specialize_list(x.m, "n,x:32", x.a, &why));
  assert_string_equal(facts(&x, x.m, 0), "32,1,16,1,1,1");
  assert_string_equal(facts(&x, x.m, 1), "32,16");
  assert_true(drv_specialize_list(x.m, "s:pos", x.a, &why));
  assert_string_equal(facts(&x, x.m, 0), "32,1,16,1,+,1");
  assert_true(drv_specialize_list(x.m, "all", x.a, &why));
  assert_string_equal(facts(&x, x.m, 0), "16,16,16,16,+,1"); /* never i1 */
  su_arena_free(x.a);
  compile(&x, SRC); /* a bare name: whichever fact its type takes */
  assert_true(drv_specialize_list(x.m, "s,k", x.a, &why));
  assert_string_equal(facts(&x, x.m, 0), "1,1,1,16,+,1");
  static const struct { const char *list, *why; } bad[] = {
      {"on", "no kernel has an integer, pointer, f32 or f64 parameter 'on'"},
      {"n:pos", "no kernel has an f32 or f64 parameter 'n'"},
      {"s:16", "no kernel has an integer or pointer parameter 's'"},
      {"n:12", "'n:12' needs a power of two or 'pos' after ':'"},
      {"n:0", "'n:0' needs a power of two or 'pos' after ':'"},
      {"n:", "'n:' needs a power of two or 'pos' after ':'"},
      {":4", "':4' has no parameter name"},
      {"n,nope:2", "no kernel has an integer or pointer parameter 'nope'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why.len = 0;
    assert_false(drv_specialize_list(x.m, bad[i].list, x.a, &why));
    assert_string_equal(su_buf_str(&why), bad[i].why);
  }
  su_buf_free(&why);
  su_arena_free(x.a);
}

static void note_layout(ir_op *op, void *ctx) {
  for (int i = 0; i < op->nresults; i++) *(int *)ctx += op->results[i]->type->layout != NULL;
}

/* How many op results of m have a thread layout (the tiling pass ran). */
static int layouts(const ir_module *m) {
  int n = 0;
  for (int k = 0; k < m->nfuncs; k++) ir_walk(m->funcs[k]->body, note_layout, &n);
  return n;
}

/* A variant is a copy with the signature's facts — deep and lowered for the arch
 * (drv_variant), or shallow (drv_specialize) — and the module it came from keeps its
 * facts and stays target-independent. */
static void test_variants(void **state) {
  (void)state;
  fx x;
  compile(&x, SRC);
  assert_null(x.m->arch);
  assert_int_equal(layouts(x.m), 0);
  ir_func_set_param_div(x.m, x.m->funcs[0], 1, 4); /* a fact the bits leave alone */
  drv_options o = {.opt_level = 3, .arch = "sm_90a", .verify_each = true};
  ir_module *all = drv_variant(x.m, NULL, UINT64_MAX, &o, &x.d);
  assert_non_null(all);
  assert_int_equal(all->nfuncs, 2);
  assert_string_equal(all->arch, "sm_90a");
  assert_true(layouts(all) > 0);
  assert_string_equal(facts(&x, all, 0), "16,16,16,16,+,1");
  assert_string_equal(facts(&x, all, 1), "16,16");
  assert_true(all->funcs[0]->body != x.m->funcs[0]->body);
  ir_module *some = drv_variant(x.m, NULL, 1u << 0 | 1u << 3 | 1u << 4, &o, &x.d);
  assert_string_equal(facts(&x, some, 0), "16,4,1,16,+,1");
  ir_module *one = drv_variant(x.m, x.m->funcs[1], 2, &o, &x.d);
  assert_int_equal(one->nfuncs, 1);
  assert_string_equal(one->funcs[0]->name, "other");
  assert_string_equal(facts(&x, one, 0), "1,16");
  assert_string_equal(facts(&x, x.m, 0), "1,4,1,1,1,1");
  assert_string_equal(facts(&x, x.m, 1), "1,1");
  assert_null(x.m->arch);
  assert_int_equal(layouts(x.m), 0);
  assert_true(ir_verify(x.m, &x.d) && ir_verify(all, &x.d) && ir_verify(one, &x.d));
  /* the unlowered variant the JIT generates today: the same facts on a shallow copy */
  ir_module *flat = drv_specialize(x.a, x.m, NULL, 1u << 0 | 1u << 3 | 1u << 4);
  assert_string_equal(facts(&x, flat, 0), "16,4,1,16,+,1");
  assert_ptr_equal(flat->funcs[0]->body, x.m->funcs[0]->body);
  assert_null(flat->arch);
  ir_module *flat1 = drv_specialize(x.a, x.m, x.m->funcs[1], 2);
  assert_int_equal(flat1->nfuncs, 1);
  assert_string_equal(facts(&x, flat1, 0), "1,16");
  assert_string_equal(facts(&x, x.m, 0), "1,4,1,1,1,1");
  su_arena_free(x.a);
}

/* Code generation follows the options: the arch, and the variant's facts. */
static void test_codegen(void **state) {
  (void)state;
  fx x;
  compile(&x, SRC);
  su_buf ptx = {0};
  drv_options o = {.opt_level = 3, .arch = "sm_80"};
  assert_true(drv_codegen(x.m, &o, CG_PTX, &ptx, &x.d));
  assert_non_null(strstr(su_buf_str(&ptx), ".target sm_80"));
  assert_null(strstr(su_buf_str(&ptx), "ld.global.v4"));
  ptx.len = 0;
  o.arch = "sm_90a";
  assert_true(drv_codegen(drv_variant(x.m, NULL, UINT64_MAX, &o, &x.d), &o, CG_PTX, &ptx, &x.d));
  assert_non_null(strstr(su_buf_str(&ptx), ".target sm_90a"));
  assert_non_null(strstr(su_buf_str(&ptx), "ld.global.v4"));
  ptx.len = 0;
  assert_true(drv_codegen(x.m, &o, CG_LLVM_IR, &ptx, &x.d));
  assert_non_null(strstr(su_buf_str(&ptx), "nvptx64-nvidia-cuda"));
  o.arch = "sm_12";
  assert_false(drv_codegen(x.m, &o, CG_PTX, &ptx, &x.d));
  assert_non_null(strstr(x.d.first->msg, "unknown GPU architecture 'sm_12'"));
  su_buf_free(&ptx);
  su_arena_free(x.a);
}

/* The defaults come from target.h, whoever asks: the driver's options, a kernel without
 * launch attributes, codegen without an arch. */
static void test_defaults(void **state) {
  (void)state;
  drv_options o;
  memset(&o, 0xff, sizeof o);
  drv_options_init(&o);
  assert_int_equal(o.opt_level, TG_DEFAULT_OPT_LEVEL);
  assert_string_equal(o.arch, TG_DEFAULT_ARCH);
  assert_int_equal(o.ndefines, 0);
  assert_null(o.defines);
  assert_null(o.only_passes);
#ifdef NDEBUG
  assert_false(o.verify_each);
#else
  assert_true(o.verify_each);
#endif
  fx x;
  compile(&x, SRC);
  assert_int_equal(x.m->funcs[0]->num_warps, TG_DEFAULT_WARPS);
  assert_int_equal(x.m->funcs[0]->num_stages, TG_DEFAULT_STAGES);
  su_buf ptx = {0};
  o.arch = NULL;
  assert_true(drv_codegen(x.m, &o, CG_PTX, &ptx, &x.d));
  assert_non_null(strstr(su_buf_str(&ptx), ".target " TG_DEFAULT_ARCH));
  su_buf_free(&ptx);
  su_arena_free(x.a);
}

/* Codegen checks a kernel's shared memory against what a block may have on the target: a
 * 256x128 f32 transpose stages 128 KB, more than sm_86's 99 KB (an error located at the
 * transpose, with a note naming the tile), less than sm_90's 227 KB. */
static void test_target_limits(void **state) {
  (void)state;
  static const char *const src = "kernel t(x: *f32, y: *f32) {\n"
                                 "    let r = arange(0, 256);\n"
                                 "    let c = arange(0, 128);\n"
                                 "    let v = load(x + r[:, None] * 128 + c[None, :]);\n"
                                 "    store(y + c[:, None] * 256 + r[None, :], trans(v));\n"
                                 "}\n";
  int bytes = 0;
  for (int i = 0; i < 2; i++) {
    fx x;
    compile(&x, src);
    assert_non_null(x.m);
    drv_options o = {.opt_level = 3, .arch = i ? "sm_86" : "sm_90"};
    assert_true(drv_lower(x.m, o.arch, &o, &x.d));
    su_buf ptx = {0};
    if (!i) {
      assert_true(drv_codegen(x.m, &o, CG_PTX, &ptx, &x.d));
      assert_true(cg_ptx_shared_bytes(su_buf_str(&ptx), "t", &bytes));
      assert_true(bytes > tg_smem_max("sm_86") && bytes <= tg_smem_max("sm_90"));
    } else {
      assert_false(drv_codegen(x.m, &o, CG_PTX, &ptx, &x.d)); /* a located error */
      assert_int_equal(x.d.nerrors, 1);
      char want[160];
      snprintf(want, sizeof want,
               "kernel 't' needs %d bytes of shared memory; sm_86 allows at most %d per block "
               "(target/targets.def)", bytes, 99 * 1024);
      assert_non_null(x.d.first);
      assert_int_equal(x.d.first->sev, SU_ERROR);
      assert_string_equal(x.d.first->msg, want);
      assert_int_equal(x.d.first->loc.line, 5); /* the trans that needs it */
      assert_non_null(x.d.first->next);
      assert_string_equal(x.d.first->next->msg,
                          "131072 bytes of it are for this 'convert_layout' of tile<128x256xf32>");
    }
    su_buf_free(&ptx);
    su_arena_free(x.a);
  }
}


/* ---- scale (issue 13, item 3): name lookup and IR construction are linear ---------- */

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Sanitizers slow everything down alike; the bounds are for a plain build. */
#if defined(__SANITIZE_ADDRESS__)
enum { SLOWDOWN = 4 };
#else
enum { SLOWDOWN = 1 };
#endif

/* The front end (parse, check, lower, verify) of src, named name; its time in *secs, the
 * arena's bytes in *bytes. */
static bool front_end(const char *name, const char *src, size_t len, double *secs, size_t *bytes) {
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, stderr);
  drv_options o;
  drv_options_init(&o);
  o.verify_each = false;
  double t0 = seconds();
  ir_module *m = drv_frontend(a, su_source_new(a, name, src, len), &o, &d);
  *secs = seconds() - t0;
  *bytes = su_arena_used(a);
  su_arena_free(a);
  return m != NULL;
}

static void test_scale(void **state) {
  (void)state;
  enum { KERNELS = 100000, PARAMS = 10000 };
  su_buf b = {0};
  for (int i = 0; i < KERNELS; i++) su_buf_printf(&b, "kernel k%d(x: *f32) { store(x, 1.0); }\n", i);
  double secs;
  size_t bytes;
  assert_true(front_end("many.tk", b.data, b.len, &secs, &bytes));
  if (secs > 5.0 * SLOWDOWN) fail_msg("%d kernels took %.2f s to check", KERNELS, secs);
  /* the same as textual IR */
  b.len = 0;
  su_buf_puts(&b, "module \"many.tk\"\n");
  for (int i = 0; i < KERNELS; i++)
    su_buf_printf(&b, "kernel @k%d(%%0: ptr<f32>) warps(4) stages(2) @1:1 {\n  return @1:1\n}\n", i);
  assert_true(front_end("many.tkir", b.data, b.len, &secs, &bytes));
  if (secs > 5.0 * SLOWDOWN) fail_msg("%d kernels of IR took %.2f s to parse", KERNELS, secs);
  /* one kernel with 10 000 parameters */
  b.len = 0;
  su_buf_puts(&b, "kernel k(x: *f32");
  for (int i = 0; i < PARAMS; i++) su_buf_printf(&b, ", p%d: f32", i);
  su_buf_printf(&b, ") { store(x, p0 + p%d); }\n", PARAMS - 1);
  assert_true(front_end("params.tk", b.data, b.len, &secs, &bytes));
  if (bytes > (size_t)100 << 20) fail_msg("%d parameters took %zu MB", PARAMS, bytes >> 20);
  if (secs > 5.0 * SLOWDOWN) fail_msg("%d parameters took %.2f s", PARAMS, secs);
  su_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compile_reports_errors),
      cmocka_unit_test(test_specialize_list),
      cmocka_unit_test(test_variants),
      cmocka_unit_test(test_codegen),
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_target_limits),
      cmocka_unit_test(test_scale),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
