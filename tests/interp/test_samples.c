/* Every sample kernel of samples/check (the cases tk-samples runs), compiled and run
 * through the public API on the interpreter at the case's interpreter sizes, ragged ones
 * included, against its C reference; then the failures a user meets first (out-of-bounds
 * access, bad arguments, unknown kernel, compile error, division by zero, device_assert),
 * each with its status and message.
 *
 * TK_SAMPLES_DIR is set by meson; TK_TEST_SEED in the environment changes the inputs. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "include/tk.h"
#include "samples/check/cases.h"

static tk_context *ctx;
static uint64_t seed;

static int setup(void **state) {
  (void)state;
  const char *s = getenv("TK_TEST_SEED");
  seed = s ? strtoull(s, NULL, 0) : 0x9e3779b97f4a7c15ull;
  tk_context_options o = {TK_BACKEND_INTERP, 0};
  return tk_context_create(&ctx, &o) == TK_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  tk_context_destroy(ctx);
  return 0;
}

/* Fails the test with the API's message unless s is TK_OK. */
static void ok(tk_status s) {
  if (s != TK_OK) fail_msg("%s: %s", tk_status_name(s), tk_last_error(ctx));
}

/* ---- the samples ---------------------------------------------------------------------- */

/* One test a case (*state is the case): every interpreter size must match the reference. */
static void test_case(void **state) {
  const ck_case *c = *state;
  tk_module *m;
  tk_kernel *k, *k2;
  ok(ck_compile(ctx, TK_SAMPLES_DIR, c, &m, &k, &k2));
  int nsizes = 0;
  for (; nsizes < CK_MAX_SIZES && c->interp_sizes[nsizes].d[0]; nsizes++) {
    ck_result r = ck_run(ctx, k, k2, c, seed, c->interp_sizes[nsizes]);
    if (r.status != CK_OK) {
      char size[64];
      ck_size_format(c, c->interp_sizes[nsizes], size, sizeof size);
      tk_module_destroy(m);
      fail_msg("%s at %s: %s", c->name, size, r.msg);
    }
  }
  assert_true(nsizes >= 2);
  tk_module_destroy(m);
}

/* Every .tk file of samples/ has a case, so a new sample cannot go unchecked; every case
 * has at least two sizes on each backend. */
static void test_every_sample_has_a_case(void **state) {
  (void)state;
  DIR *d = opendir(TK_SAMPLES_DIR);
  assert_non_null(d);
  int nfiles = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 3, ".tk") != 0) continue;
    nfiles++;
    bool found = false;
    for (int j = 0; j < ck_ncases && !found; j++) found = strcmp(ck_cases[j].file, e->d_name) == 0;
    if (!found) {
      char name[256];
      snprintf(name, sizeof name, "%s", e->d_name); /* closedir frees the entry */
      closedir(d);
      fail_msg("no case in samples/check for samples/%s", name);
    }
  }
  closedir(d);
  assert_true(nfiles >= 11);
  for (int i = 0; i < ck_ncases; i++) {
    assert_true(ck_cases[i].gpu_sizes[1].d[0] > 0);
    assert_ptr_equal(ck_find(ck_cases[i].name), &ck_cases[i]);
  }
  assert_null(ck_find("no_such_case"));
}

/* A kernel that writes wrong values must be reported as a mismatch, with the element,
 * not as a pass: the checks can fail. vadd's case run on a kernel that subtracts. */
static void test_mismatch_is_reported(void **state) {
  (void)state;
  const char *src = "kernel vadd<BLOCK: i32 = 1024>(x: *f32, y: *f32, z: *f32, n: i32) {\n"
                    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
                    "    let m = offs < n;\n"
                    "    store(z + offs, load(x + offs, m) - load(y + offs, m), m);\n"
                    "}\n";
  tk_module *m;
  tk_kernel *k;
  ok(tk_module_compile(ctx, &m, src, strlen(src), "wrong.tk", NULL));
  ok(tk_module_get_kernel(m, "vadd", &k));
  ck_result r = ck_run(ctx, k, NULL, ck_find("vadd"), seed, (ck_size){{100}});
  assert_int_equal(r.status, CK_MISMATCH);
  assert_memory_equal(r.msg, "vadd[0]: got ", 13);
  /* A launch the API refuses (softmax's arguments for vadd) is an API error. */
  r = ck_run(ctx, k, NULL, ck_find("softmax"), seed, (ck_size){{2, 8, 8}});
  assert_int_equal(r.status, CK_API_ERROR);
  assert_int_equal(r.api, TK_ERR_ARGS);
  assert_non_null(strstr(r.msg, "tk_launch: TK_ERR_ARGS"));
  tk_module_destroy(m);
}

static void test_size_format(void **state) {
  (void)state;
  char buf[64];
  ck_size_format(ck_find("softmax"), (ck_size){{7, 1000, 1003}}, buf, sizeof buf);
  assert_string_equal(buf, "7x1000/1003");
  ck_size_format(ck_find("softmax"), (ck_size){{4, 1024, 1024}}, buf, sizeof buf);
  assert_string_equal(buf, "4x1024");
  ck_size_format(ck_find("matmul"), (ck_size){{70, 50, 33}}, buf, sizeof buf);
  assert_string_equal(buf, "70x50x33");
}

/* Compiles samples/vadd.tk and returns its kernel (the module lives as long as ctx). */
static tk_kernel *vadd_kernel(void) {
  tk_module *m;
  tk_kernel *k;
  ok(ck_compile(ctx, TK_SAMPLES_DIR, ck_find("vadd"), &m, &k, NULL));
  return k;
}

static tk_devptr upload(const void *host, size_t bytes) {
  tk_devptr p;
  ok(tk_malloc(ctx, &p, bytes));
  ok(tk_memcpy_htod(ctx, p, host, bytes));
  return p;
}

static void download(void *host, tk_devptr p, size_t bytes) {
  ok(tk_memcpy_dtoh(ctx, host, p, bytes));
  ok(tk_free(ctx, p));
}

/* ---- failures ------------------------------------------------------------------------- */

/* Compiles src (named name) and returns kernel kname. */
static tk_kernel *compile(const char *name, const char *src, const char *kname) {
  tk_module *m = NULL;
  ok(tk_module_compile(ctx, &m, src, strlen(src), name, NULL));
  tk_kernel *k = NULL;
  ok(tk_module_get_kernel(m, kname, &k));
  return k;
}

static void expect_error(tk_status got, tk_status want, const char *needle) {
  if (got != want)
    fail_msg("got %s, want %s: %s", tk_status_name(got), tk_status_name(want), tk_last_error(ctx));
  if (!strstr(tk_last_error(ctx), needle))
    fail_msg("message '%s' lacks '%s'", tk_last_error(ctx), needle);
}

static const char *unmasked_src =
    "// copies BLOCK elements per program, with no mask\n"
    "kernel copy<BLOCK: i32 = 64>(x: *f32, y: *f32) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let v = load(x + offs);\n"
    "    store(y + offs, v);\n"
    "}\n";

static void test_out_of_bounds(void **state) {
  (void)state;
  tk_kernel *k = compile("copy.tk", unmasked_src, "copy");
  float buf[511] = {0};
  tk_devptr dx = upload(buf, 100 * 4), dy = upload(buf, sizeof buf);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy)};
  expect_error(tk_launch(k, (tk_grid){2, 1, 1}, NULL, a, 2), TK_ERR_RUNTIME,
               "out-of-bounds load in kernel 'copy' at program (1, 0, 0): element offset 100 is "
               "past the end of a 400-byte buffer");
  assert_memory_equal(tk_last_error(ctx), "copy.tk:4:", 10);
  /* Reads in bounds, writes past the end of y in the last program. */
  tk_arg b[] = {tk_arg_ptr(dy), tk_arg_ptr(dx)};
  expect_error(tk_launch(k, (tk_grid){2, 1, 1}, NULL, b, 2), TK_ERR_RUNTIME,
               "out-of-bounds store in kernel 'copy' at program (1, 0, 0)");
  assert_memory_equal(tk_last_error(ctx), "copy.tk:5:", 10);
  ok(tk_free(ctx, dx));
  tk_arg c[] = {tk_arg_ptr(dx), tk_arg_ptr(dy)};
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, c, 2), TK_ERR_ARGS,
               "argument 0 of 'copy' ('x')");
  ok(tk_free(ctx, dy));
}

static void test_bad_launches(void **state) {
  (void)state;
  tk_kernel *k = vadd_kernel();
  float v[4] = {0};
  tk_devptr d = upload(v, sizeof v);
  tk_arg a[] = {tk_arg_ptr(d), tk_arg_ptr(d), tk_arg_ptr(d), tk_arg_f32(4)};
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 3), TK_ERR_ARGS,
               "kernel 'vadd' expects 4 arguments, got 3");
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 4), TK_ERR_ARGS,
               "argument 3 of 'vadd' ('n') has type i32, but an f32 was passed");
  a[3] = tk_arg_i32(4);
  a[0] = tk_arg_i32(0);
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 4), TK_ERR_ARGS,
               "argument 0 of 'vadd' ('x') has type *f32, but an i32 was passed");
  a[0] = tk_arg_ptr(d);
  a[3] = tk_arg_i64(5000000000);
  a[3].type = TK_I32;
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 4), TK_ERR_ARGS, "does not fit in i32");
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, NULL, 4), TK_ERR_INVALID, "args is NULL");
  ok(tk_free(ctx, d));
}

static void test_unknown_kernel(void **state) {
  (void)state;
  tk_module *m = NULL;
  char path[1024];
  snprintf(path, sizeof path, "%s/gelu.tk", TK_SAMPLES_DIR);
  ok(tk_module_compile_file(ctx, &m, path, NULL));
  tk_kernel *k = (tk_kernel *)&k;
  expect_error(tk_module_get_kernel(m, "gelu", &k), TK_ERR_NOT_FOUND,
               "no kernel 'gelu' in module");
  assert_non_null(strstr(tk_last_error(ctx), "'gelu_tanh', 'gelu_erf'"));
  assert_null(k);
  tk_module_destroy(m);
  expect_error(tk_module_compile_file(ctx, &m, "/nonexistent/x.tk", NULL), TK_ERR_IO,
               "cannot read '/nonexistent/x.tk'");
}

static void test_compile_error(void **state) {
  (void)state;
  const char *src = "kernel k(x: *f32) {\n    let v = load(x) + undefined_name;\n}\n";
  tk_module *m = (tk_module *)&m;
  expect_error(tk_module_compile(ctx, &m, src, strlen(src), "bad.tk", NULL), TK_ERR_COMPILE,
               "bad.tk:2:");
  assert_non_null(strstr(tk_last_error(ctx), "error:"));
  assert_non_null(strstr(tk_last_error(ctx), "undefined_name"));
  assert_null(m);
  tk_define d = {"NO_SUCH_PARAM", "3"};
  tk_compile_options o = {.defines = &d, .ndefines = 1};
  char path[1024];
  snprintf(path, sizeof path, "%s/vadd.tk", TK_SAMPLES_DIR);
  expect_error(tk_module_compile_file(ctx, &m, path, &o), TK_ERR_COMPILE, "NO_SUCH_PARAM");
}

static void test_division_by_zero(void **state) {
  (void)state;
  const char *src = "kernel div(q: *i32, a: i32, b: i32) {\n"
                    "    store(q, a / b);\n"
                    "}\n";
  tk_kernel *k = compile("div.tk", src, "div");
  int32_t q = 0;
  tk_devptr dq = upload(&q, 4);
  tk_arg a[] = {tk_arg_ptr(dq), tk_arg_i32(-7), tk_arg_i32(2)};
  ok(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 3));
  download(&q, dq, 4);
  assert_int_equal(q, -3);
  dq = upload(&q, 4);
  a[0] = tk_arg_ptr(dq), a[2] = tk_arg_i32(0);
  expect_error(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 3), TK_ERR_RUNTIME,
               "integer division by zero in kernel 'div' at program (0, 0, 0)");
  assert_memory_equal(tk_last_error(ctx), "div.tk:2:", 9);
  ok(tk_free(ctx, dq));
}

static void test_device_assert(void **state) {
  (void)state;
  const char *src = "kernel check(n: i32) {\n"
                    "    device_assert(program_id(0) < n, \"program id in range\");\n"
                    "}\n";
  tk_kernel *k = compile("check.tk", src, "check");
  tk_arg a[] = {tk_arg_i32(3)};
  ok(tk_launch(k, (tk_grid){3, 1, 1}, NULL, a, 1));
  expect_error(tk_launch(k, (tk_grid){5, 1, 1}, NULL, a, 1), TK_ERR_RUNTIME,
               "device_assert failed in kernel 'check' at program (3, 0, 0): program id in range");
}

int main(void) {
  const struct CMUnitTest fixed[] = {
      cmocka_unit_test(test_every_sample_has_a_case),
      cmocka_unit_test(test_mismatch_is_reported),
      cmocka_unit_test(test_size_format),
      cmocka_unit_test(test_out_of_bounds),
      cmocka_unit_test(test_bad_launches),
      cmocka_unit_test(test_unknown_kernel),
      cmocka_unit_test(test_compile_error),
      cmocka_unit_test(test_division_by_zero),
      cmocka_unit_test(test_device_assert),
  };
  enum { NFIXED = sizeof fixed / sizeof *fixed, MAX_CASES = 48 };
  struct CMUnitTest tests[MAX_CASES + NFIXED];
  size_t n = 0;
  /* The samples first, one test a case, named after it. */
  for (int i = 0; i < ck_ncases && i < MAX_CASES; i++)
    tests[n++] = (struct CMUnitTest){.name = ck_cases[i].name, .test_func = test_case,
                                     .initial_state = (void *)&ck_cases[i]};
  for (size_t i = 0; i < NFIXED; i++) tests[n++] = fixed[i];
  if (ck_ncases > MAX_CASES) {
    fprintf(stderr, "test_samples: raise MAX_CASES to %d\n", ck_ncases);
    return 1;
  }
  return _cmocka_run_group_tests("interp_samples", tests, n, setup, teardown);
}
