/* Unit tests of the public API's contract on the interpreter backend: every entry point
 * rejects bad input with a status and a message (never a crash), backend selection,
 * memory copies are bounds-checked, and kernels expose their signatures. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/tk.h"

static const char *vadd_src =
    "kernel vadd<BLOCK: i32 = 64>(x: *f32, y: *f16, out: *f32, n: i32, s: u64) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    let v = load(x + offs, mask) + load(y + offs, mask) as f32;\n"
    "    store(out + offs, v * (s as f32), mask);\n"
    "}\n";

static tk_context *interp(void) {
  tk_context *ctx = NULL;
  tk_context_options o = {TK_BACKEND_INTERP, 0};
  assert_int_equal(tk_context_create(&ctx, &o), TK_OK);
  assert_string_equal(tk_last_error(ctx), "");
  return ctx;
}

static void contains(const char *text, const char *needle) {
  if (!strstr(text, needle)) fail_msg("'%s' lacks '%s'", text, needle);
}

static void test_status_names(void **state) {
  (void)state;
  assert_string_equal(tk_status_name(TK_OK), "TK_OK");
  assert_string_equal(tk_status_name(TK_ERR_ARGS), "TK_ERR_ARGS");
  assert_string_equal(tk_status_name(TK_ERR_UNSUPPORTED), "TK_ERR_UNSUPPORTED");
  assert_string_equal(tk_status_name((tk_status)99), "TK_ERR_UNKNOWN");
}

static void test_context_creation(void **state) {
  (void)state;
  assert_int_equal(tk_context_create(NULL, NULL), TK_ERR_INVALID);
  contains(tk_last_error(NULL), "out is NULL");
  tk_context *ctx = (tk_context *)&ctx;
  tk_context_options bad = {(tk_backend)7, 0};
  assert_int_equal(tk_context_create(&ctx, &bad), TK_ERR_INVALID);
  assert_null(ctx);
  contains(tk_last_error(NULL), "unknown backend 7");

  /* TK_INTERPRET=1 makes AUTO pick the interpreter. */
  setenv("TK_INTERPRET", "1", 1);
  assert_int_equal(tk_context_create(&ctx, NULL), TK_OK);
  assert_int_equal(tk_context_backend(ctx), TK_BACKEND_INTERP);
  tk_context_destroy(ctx);
  unsetenv("TK_INTERPRET");

  ctx = interp();
  assert_int_equal(tk_context_backend(ctx), TK_BACKEND_INTERP);
  tk_context_destroy(ctx);
  tk_context_destroy(NULL);
  assert_int_equal(tk_context_backend(NULL), TK_BACKEND_AUTO);
}

static void test_null_handles(void **state) {
  (void)state;
  tk_devptr p = 1;
  assert_int_equal(tk_malloc(NULL, &p, 4), TK_ERR_INVALID);
  contains(tk_last_error(NULL), "tk_malloc: context is NULL");
  assert_int_equal(tk_free(NULL, 0), TK_ERR_INVALID);
  assert_int_equal(tk_memcpy_htod(NULL, 0, NULL, 4), TK_ERR_INVALID);
  assert_int_equal(tk_memcpy_dtoh(NULL, NULL, 0, 4), TK_ERR_INVALID);
  assert_int_equal(tk_synchronize(NULL), TK_ERR_INVALID);
  tk_module *m = NULL;
  assert_int_equal(tk_module_compile(NULL, &m, "", 0, NULL, NULL), TK_ERR_INVALID);
  assert_int_equal(tk_module_compile_file(NULL, &m, "x.tk", NULL), TK_ERR_INVALID);
  assert_int_equal(tk_module_load_ptx(NULL, &m, "x", 1), TK_ERR_INVALID);
  tk_kernel *k = NULL;
  assert_int_equal(tk_module_get_kernel(NULL, "k", &k), TK_ERR_INVALID);
  assert_int_equal(tk_launch(NULL, (tk_grid){1, 1, 1}, NULL, NULL, 0), TK_ERR_INVALID);
  contains(tk_last_error(NULL), "kernel is NULL");
  tk_module_destroy(NULL);
  assert_int_equal(tk_kernel_num_params(NULL), -1);
  assert_int_equal(tk_kernel_param_type(NULL, 0), TK_NDTYPE);
  assert_int_equal(tk_kernel_param_pointee(NULL, 0), TK_NDTYPE);
  assert_null(tk_kernel_param_name(NULL, 0));
  assert_int_equal(tk_kernel_num_threads(NULL), -1);

  tk_context *ctx = interp();
  assert_int_equal(tk_malloc(ctx, NULL, 4), TK_ERR_INVALID);
  assert_int_equal(tk_module_compile(ctx, NULL, "", 0, NULL, NULL), TK_ERR_INVALID);
  assert_int_equal(tk_module_compile(ctx, &m, NULL, 5, NULL, NULL), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "source is NULL");
  assert_int_equal(tk_module_compile_file(ctx, &m, NULL, NULL), TK_ERR_INVALID);
  tk_context_destroy(ctx);
}

static void test_memory(void **state) {
  (void)state;
  tk_context *ctx = interp();
  tk_devptr p = 0, q = 0;
  assert_int_equal(tk_malloc(ctx, &p, 0), TK_ERR_INVALID);
  assert_int_equal(tk_malloc(ctx, &p, 64), TK_OK);
  assert_int_equal(tk_malloc(ctx, &q, 16), TK_OK);
  assert_true(p != 0 && q != 0 && p != q);
  char in[64], out[64];
  for (int i = 0; i < 64; i++) in[i] = (char)i;
  assert_int_equal(tk_memcpy_htod(ctx, p, in, 64), TK_OK);
  assert_int_equal(tk_memcpy_dtoh(ctx, out, p + 8, 8), TK_OK);
  assert_memory_equal(out, in + 8, 8);
  assert_int_equal(tk_memcpy_htod(ctx, p + 60, in, 8), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "past the end of the 64-byte buffer");
  assert_int_equal(tk_memcpy_dtoh(ctx, out, q, 17), TK_ERR_INVALID);
  assert_int_equal(tk_memcpy_htod(ctx, p, NULL, 4), TK_ERR_INVALID);
  assert_int_equal(tk_memcpy_htod(ctx, 0, in, 4), TK_ERR_INVALID);
  assert_int_equal(tk_memcpy_htod(ctx, p, NULL, 0), TK_OK); /* nothing to copy */
  assert_int_equal(tk_free(ctx, p + 4), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "not an address returned by tk_malloc");
  assert_int_equal(tk_free(ctx, p), TK_OK);
  assert_int_equal(tk_free(ctx, p), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "already freed");
  assert_int_equal(tk_memcpy_dtoh(ctx, out, p, 4), TK_ERR_INVALID);
  assert_int_equal(tk_free(ctx, 0), TK_OK);
  assert_int_equal(tk_synchronize(ctx), TK_OK);
  tk_context_destroy(ctx); /* q is released with the context */
}

static void test_kernel_signature(void **state) {
  (void)state;
  tk_context *ctx = interp();
  tk_module *m = NULL;
  assert_int_equal(tk_module_compile(ctx, &m, vadd_src, strlen(vadd_src), "vadd.tk", NULL), TK_OK);
  tk_kernel *k = NULL;
  assert_int_equal(tk_module_get_kernel(m, "vadd", &k), TK_OK);
  assert_int_equal(tk_kernel_num_params(k), 5);
  assert_int_equal(tk_kernel_param_type(k, 0), TK_PTR);
  assert_int_equal(tk_kernel_param_pointee(k, 0), TK_F32);
  assert_int_equal(tk_kernel_param_pointee(k, 1), TK_F16);
  assert_int_equal(tk_kernel_param_type(k, 3), TK_I32);
  assert_int_equal(tk_kernel_param_pointee(k, 3), TK_NDTYPE);
  assert_int_equal(tk_kernel_param_type(k, 4), TK_U64);
  assert_string_equal(tk_kernel_param_name(k, 2), "out");
  assert_int_equal(tk_kernel_param_type(k, 5), TK_NDTYPE);
  assert_null(tk_kernel_param_name(k, -1));
  assert_int_equal(tk_kernel_num_threads(k), 128);

  assert_int_equal(tk_module_get_kernel(m, "nope", &k), TK_ERR_NOT_FOUND);
  assert_string_equal(tk_last_error(ctx), "no kernel 'nope' in module 'vadd.tk' (it has 'vadd')");
  assert_null(k);
  assert_int_equal(tk_module_get_kernel(m, NULL, &k), TK_ERR_INVALID);
  tk_module_destroy(m);
  tk_context_destroy(ctx);
}

/* A launch of the mixed-type kernel: f32 + f16 scaled by a u64, over a ragged n. */
static void test_launch_and_arguments(void **state) {
  (void)state;
  tk_context *ctx = interp();
  tk_define d = {"BLOCK", "32"};
  tk_compile_options o = {.defines = &d, .ndefines = 1};
  tk_module *m = NULL;
  assert_int_equal(tk_module_compile(ctx, &m, vadd_src, strlen(vadd_src), "vadd.tk", &o), TK_OK);
  tk_kernel *k = NULL;
  assert_int_equal(tk_module_get_kernel(m, "vadd", &k), TK_OK);
  enum { N = 77 };
  float x[N], out[N];
  _Float16 y[N];
  for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = (_Float16)(0.5 * i);
  tk_devptr dx, dy, dout;
  assert_int_equal(tk_malloc(ctx, &dx, sizeof x), TK_OK);
  assert_int_equal(tk_malloc(ctx, &dy, sizeof y), TK_OK);
  assert_int_equal(tk_malloc(ctx, &dout, sizeof out), TK_OK);
  assert_int_equal(tk_memcpy_htod(ctx, dx, x, sizeof x), TK_OK);
  assert_int_equal(tk_memcpy_htod(ctx, dy, y, sizeof y), TK_OK);
  tk_arg a[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_ptr(dout), tk_arg_i32(N), tk_arg_u64(3)};
  assert_int_equal(tk_launch(k, (tk_grid){3, 0, 0}, NULL, a, 5), TK_OK);
  assert_int_equal(tk_memcpy_dtoh(ctx, out, dout, sizeof out), TK_OK);
  for (int i = 0; i < N; i++) assert_true(out[i] == 3.0f * ((float)i + (float)y[i]));

  assert_int_equal(tk_launch(k, (tk_grid){3, 1, 1}, NULL, a, 4), TK_ERR_ARGS);
  assert_string_equal(tk_last_error(ctx), "kernel 'vadd' expects 5 arguments, got 4");
  a[4] = tk_arg_i64(3);
  assert_int_equal(tk_launch(k, (tk_grid){3, 1, 1}, NULL, a, 5), TK_ERR_ARGS);
  assert_string_equal(tk_last_error(ctx),
                      "argument 4 of 'vadd' ('s') has type u64, but an i64 was passed");
  a[4] = tk_arg_u64(3);
  /* an integer outside its type, at each edge (the check runs on every launch) */
  a[3] = (tk_arg){.type = TK_I32, .v.i = INT64_C(1) << 31};
  assert_int_equal(tk_launch(k, (tk_grid){3, 1, 1}, NULL, a, 5), TK_ERR_ARGS);
  assert_string_equal(tk_last_error(ctx),
                      "argument 3 of 'vadd' ('n') is 2147483648, which does not fit in i32");
  a[3].v.i = -(INT64_C(1) << 31) - 1;
  assert_int_equal(tk_launch(k, (tk_grid){3, 1, 1}, NULL, a, 5), TK_ERR_ARGS);
  a[3].v.i = -(INT64_C(1) << 31);
  assert_int_equal(tk_launch(k, (tk_grid){0, 1, 1}, NULL, a, 5), TK_OK);
  a[3] = tk_arg_i32(N);
  a[1] = tk_arg_ptr(dy + (UINT64_C(1) << 45));
  assert_int_equal(tk_launch(k, (tk_grid){3, 1, 1}, NULL, a, 5), TK_ERR_ARGS);
  contains(tk_last_error(ctx), "argument 1 of 'vadd' ('y') is 0x");
  a[1].type = (tk_dtype)42;
  assert_int_equal(tk_launch(k, (tk_grid){3, 1, 1}, NULL, a, 5), TK_ERR_ARGS);
  contains(tk_last_error(ctx), "('y') has an invalid type field (42)");
  assert_int_equal(tk_launch(k, (tk_grid){3, 1, 1}, NULL, a, -1), TK_ERR_INVALID);
  tk_context_destroy(ctx); /* the module and buffers go with it */
}

static void test_compile_failures(void **state) {
  (void)state;
  tk_context *ctx = interp();
  tk_module *m = NULL;
  const char *bad = "kernel k(x: *f32) {\n  store(x, 1.0)\n}\n";
  assert_int_equal(tk_module_compile(ctx, &m, bad, strlen(bad), "bad.tk", NULL), TK_ERR_COMPILE);
  contains(tk_last_error(ctx), "bad.tk:");
  contains(tk_last_error(ctx), "error:");
  assert_null(m);
  tk_compile_options o = {.opt_level = 9};
  assert_int_equal(tk_module_compile(ctx, &m, vadd_src, strlen(vadd_src), "v.tk", &o), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "opt_level 9");
  tk_compile_options nodefs = {.ndefines = 2};
  assert_int_equal(tk_module_compile(ctx, &m, vadd_src, strlen(vadd_src), "v.tk", &nodefs),
                   TK_ERR_INVALID);
  tk_define nulldef = {"BLOCK", NULL};
  tk_compile_options nd = {.defines = &nulldef, .ndefines = 1};
  assert_int_equal(tk_module_compile(ctx, &m, vadd_src, strlen(vadd_src), "v.tk", &nd), TK_ERR_INVALID);
  /* Garbage bytes are a compile error, not a crash. */
  char junk[256];
  for (int i = 0; i < 256; i++) junk[i] = (char)(i * 37 + 11);
  assert_int_equal(tk_module_compile(ctx, &m, junk, sizeof junk, "junk.tk", NULL), TK_ERR_COMPILE);
  assert_int_equal(tk_module_load_ptx(ctx, &m, ".version 8.0", 12), TK_ERR_UNSUPPORTED);
  contains(tk_last_error(ctx), "interpreter cannot run PTX");
  /* An empty source is a module with no kernels. */
  assert_int_equal(tk_module_compile(ctx, &m, "", 0, NULL, NULL), TK_OK);
  tk_kernel *k = NULL;
  assert_int_equal(tk_module_get_kernel(m, "k", &k), TK_ERR_NOT_FOUND);
  contains(tk_last_error(ctx), "it has no kernels");
  tk_context_destroy(ctx);
}

/* An arch is checked against the target table on every backend, before compiling. */
static void test_compile_arch(void **state) {
  (void)state;
  tk_context *ctx = interp();
  tk_module *m = NULL;
  tk_compile_options o = {.arch = "sm_75"};
  assert_int_equal(tk_module_compile(ctx, &m, vadd_src, strlen(vadd_src), "v.tk", &o), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "compile options: unknown arch 'sm_75' (expected one of sm_80, ");
  contains(tk_last_error(ctx), "sm_90a)");
  assert_null(m);
  o.arch = "sm_86";
  assert_int_equal(tk_module_compile(ctx, &m, vadd_src, strlen(vadd_src), "v.tk", &o), TK_OK);
  tk_context_destroy(ctx);
}

static void test_runtime_fault(void **state) {
  (void)state;
  tk_context *ctx = interp();
  const char *src = "kernel k(x: *i32, i: i32) {\n    store(x + i, 1);\n}\n";
  tk_module *m = NULL;
  assert_int_equal(tk_module_compile(ctx, &m, src, strlen(src), "k.tk", NULL), TK_OK);
  tk_kernel *k = NULL;
  assert_int_equal(tk_module_get_kernel(m, "k", &k), TK_OK);
  tk_devptr p;
  assert_int_equal(tk_malloc(ctx, &p, 16), TK_OK);
  tk_arg a[] = {tk_arg_ptr(p), tk_arg_i32(-1)};
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 2), TK_ERR_RUNTIME);
  contains(tk_last_error(ctx), "k.tk:2:");
  contains(tk_last_error(ctx), "out-of-bounds store in kernel 'k' at program (0, 0, 0): element "
                               "offset -1 is before the start of a 16-byte buffer");
  a[1] = tk_arg_i32(3);
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 2), TK_OK);
  int32_t v[4];
  assert_int_equal(tk_memcpy_dtoh(ctx, v, p, 16), TK_OK);
  assert_int_equal(v[3], 1);
  tk_context_destroy(ctx);
}


/* ---- handles (issue 13, item 5) ------------------------------------------------------ */

static const char *store_src =
    "kernel k(x: *i32, i: i64) {\n    store(x + i, 7);\n}\n";

/* A context with store_src compiled: *m, *k. */
static tk_context *with_kernel(tk_module **m, tk_kernel **k) {
  tk_context *ctx = interp();
  assert_int_equal(tk_module_compile(ctx, m, store_src, strlen(store_src), "s.tk", NULL), TK_OK);
  assert_int_equal(tk_module_get_kernel(*m, "k", k), TK_OK);
  return ctx;
}

/* Destroyed objects passed again are refused by name, never touched (ASan would see a
 * use-after-free here before handles were generation-counted). */
static void test_stale_handles(void **state) {
  (void)state;
  tk_module *m = NULL;
  tk_kernel *k = NULL;
  tk_context *ctx = with_kernel(&m, &k);
  tk_devptr p;
  assert_int_equal(tk_malloc(ctx, &p, 16), TK_OK);
  tk_arg a[] = {tk_arg_ptr(p), tk_arg_i64(0)};
  tk_module_destroy(m);
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 2), TK_ERR_INVALID);
  contains(tk_last_error(NULL), "tk_launch: kernel is not a live handle");
  assert_int_equal(tk_kernel_num_params(k), -1);
  assert_null(tk_kernel_param_name(k, 0));
  tk_kernel *k2 = NULL;
  assert_int_equal(tk_module_get_kernel(m, "k", &k2), TK_ERR_INVALID);
  contains(tk_last_error(NULL), "module is not a live handle");
  tk_module_destroy(m); /* again: ignored, with a message */
  contains(tk_last_error(NULL), "tk_module_destroy: the module is not a live handle");
  assert_int_equal(tk_malloc(ctx, &p, 16), TK_OK); /* the context is fine */

  /* a module that dies with its context */
  assert_int_equal(tk_module_compile(ctx, &m, store_src, strlen(store_src), "s.tk", NULL), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, "k", &k), TK_OK);
  tk_context_destroy(ctx);
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 2), TK_ERR_INVALID);
  assert_int_equal(tk_module_get_kernel(m, "k", &k2), TK_ERR_INVALID);
  assert_int_equal(tk_malloc(ctx, &p, 16), TK_ERR_INVALID);
  contains(tk_last_error(NULL), "tk_malloc: context is not a live handle");
  assert_int_equal(tk_free(ctx, p), TK_ERR_INVALID);
  assert_int_equal(tk_synchronize(ctx), TK_ERR_INVALID);
  assert_int_equal(tk_module_compile(ctx, &m, store_src, strlen(store_src), "s.tk", NULL),
                   TK_ERR_INVALID);
  contains(tk_last_error(ctx), "not a live handle");
  tk_context_destroy(ctx); /* twice: ignored */
  contains(tk_last_error(NULL), "tk_context_destroy: the context is not a live handle");
  /* a new context, even where the old one's memory was, is not reachable by the old handle */
  tk_context *ctx2 = interp();
  assert_true(ctx2 != ctx);
  assert_int_equal(tk_malloc(ctx, &p, 16), TK_ERR_INVALID);
  /* arbitrary values are not handles either */
  assert_int_equal(tk_malloc((tk_context *)&p, &p, 16), TK_ERR_INVALID);
  assert_int_equal(tk_launch((tk_kernel *)ctx2, (tk_grid){1, 1, 1}, NULL, a, 2), TK_ERR_INVALID);
  tk_context_destroy(ctx2);
}

/* A buffer of one context is refused by another, as a launch argument and in copies. */
static void test_buffer_of_another_context(void **state) {
  (void)state;
  tk_module *m = NULL;
  tk_kernel *k = NULL;
  tk_context *a = with_kernel(&m, &k), *b = interp();
  tk_devptr pa, pb;
  assert_int_equal(tk_malloc(a, &pa, 16), TK_OK);
  assert_int_equal(tk_malloc(b, &pb, 16), TK_OK);
  assert_true(pa != pb); /* the first buffer of each context */
  tk_arg args[] = {tk_arg_ptr(pb), tk_arg_i64(0)};
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 2), TK_ERR_ARGS);
  contains(tk_last_error(a), "another context's");
  int32_t v[4] = {0};
  assert_int_equal(tk_memcpy_htod(a, pb, v, 16), TK_ERR_INVALID);
  contains(tk_last_error(a), "another context's");
  assert_int_equal(tk_free(a, pb), TK_ERR_INVALID);
  assert_int_equal(tk_free(b, pb), TK_OK);
  tk_context_destroy(b);
  tk_context_destroy(a);
}

/* tk_kernel_resources: ptxas's numbers for the kernel on the arch asked for (any backend:
 * here the interpreter's context), or TK_ERR_UNSUPPORTED without ptxas; bad arguments and
 * a kernel over the arch's shared memory are reported. */
static void test_kernel_resources(void **state) {
  (void)state;
  tk_module *m = NULL;
  tk_kernel *k = NULL;
  tk_context *ctx = with_kernel(&m, &k);
  tk_resources r;
  assert_int_equal(tk_kernel_resources(k, "sm_75", &r), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "unknown arch 'sm_75'");
  assert_int_equal(tk_kernel_resources(k, NULL, NULL), TK_ERR_INVALID);
  tk_status s = tk_kernel_resources(k, "sm_90a", &r);
  const char *home = getenv("CUDA_HOME");
  char ptxas[512];
  snprintf(ptxas, sizeof ptxas, "%s/bin/ptxas", home && *home ? home : "/usr/local/cuda");
  if (getenv("TK_PTXAS") || access(ptxas, X_OK) != 0) {
    if (s == TK_ERR_UNSUPPORTED) contains(tk_last_error(ctx), "no ptxas");
  } else {
    assert_int_equal(s, TK_OK);
    assert_int_equal(r.source, TK_RES_PTXAS);
    assert_true(r.regs > 0 && r.regs <= 255);
    assert_int_equal(r.threads, tk_kernel_num_threads(k));
    assert_int_equal(r.spill_stores + r.spill_loads, 0);
    assert_true(r.blocks_per_sm >= 1 && r.occupancy > 0 && r.occupancy <= 1);
    static const char big[] = "kernel t(x: *f32, y: *f32) {\n"
                              "    let r = arange(0, 256);\n"
                              "    let c = arange(0, 128);\n"
                              "    let v = load(x + r[:, None] * 128 + c[None, :]);\n"
                              "    store(y + c[:, None] * 256 + r[None, :], trans(v));\n"
                              "}\n";
    tk_module *bm;
    tk_kernel *bk;
    assert_int_equal(tk_module_compile(ctx, &bm, big, strlen(big), "big.tk", NULL), TK_OK);
    assert_int_equal(tk_module_get_kernel(bm, "t", &bk), TK_OK);
    assert_int_equal(tk_kernel_resources(bk, "sm_90", &r), TK_OK);
    assert_int_equal(r.smem_dynamic, 131072);
    assert_int_equal(tk_kernel_resources(bk, "sm_86", &r), TK_ERR_COMPILE);
    contains(tk_last_error(ctx), "sm_86 allows at most 101376 per block");
  }
  /* ptxas hidden: the interpreter has no driver to fall back on, and says so */
  char *saved = getenv("TK_PTXAS") ? strdup(getenv("TK_PTXAS")) : NULL;
  setenv("TK_PTXAS", "/nonexistent/ptxas", 1);
  assert_int_equal(tk_kernel_resources(k, NULL, &r), TK_ERR_UNSUPPORTED);
  contains(tk_last_error(ctx), "has no ptxas");
  contains(tk_last_error(ctx), "the interp backend has no driver to ask");
  if (saved) setenv("TK_PTXAS", saved, 1); else unsetenv("TK_PTXAS");
  free(saved);
  tk_context_destroy(ctx);
}

/* The CUDA grid limits, on the interpreter too, before anything runs. */
static void test_grid_limits(void **state) {
  (void)state;
  tk_module *m = NULL;
  tk_kernel *k = NULL;
  tk_context *ctx = with_kernel(&m, &k);
  tk_devptr p;
  assert_int_equal(tk_malloc(ctx, &p, 16), TK_OK);
  tk_arg a[] = {tk_arg_ptr(p), tk_arg_i64(0)};
  assert_int_equal(tk_launch(k, (tk_grid){1u << 31, 1, 1}, NULL, a, 2), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "grid (2147483648, 1, 1) exceeds the CUDA limits");
  contains(tk_last_error(ctx), "x is 2147483648, more than 2^31 - 1");
  assert_int_equal(tk_launch(k, (tk_grid){1, 70000, 1}, NULL, a, 2), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "y is 70000, more than 65535");
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 65536}, NULL, a, 2), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "z is 65536, more than 65535");
  assert_int_equal(tk_launch(k, (tk_grid){(1u << 31) - 1, 1, 1}, NULL, a, 0), TK_ERR_ARGS); /* the grid passed */
  assert_int_equal(tk_launch(k, (tk_grid){1, 65535, 1}, NULL, a, 2), TK_OK);
  tk_context_destroy(ctx);
}

/* An offset that wraps 64 bits back into the buffer is a fault, not an access. */
static void test_pointer_offset_wrap(void **state) {
  (void)state;
  tk_module *m = NULL;
  tk_kernel *k = NULL;
  tk_context *ctx = with_kernel(&m, &k);
  tk_devptr p;
  assert_int_equal(tk_malloc(ctx, &p, 16), TK_OK);
  tk_arg a[] = {tk_arg_ptr(p), tk_arg_i64(INT64_C(1) << 62)}; /* * 4 bytes = 2^64 */
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 2), TK_ERR_RUNTIME);
  contains(tk_last_error(ctx), "pointer-overflow store");
  a[1] = tk_arg_i64(-(INT64_C(1) << 62) + 1);
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 2), TK_ERR_RUNTIME);
  int32_t v[4];
  assert_int_equal(tk_memcpy_dtoh(ctx, v, p, 16), TK_OK);
  for (int i = 0; i < 4; i++) assert_int_equal(v[i], 0);
  tk_context_destroy(ctx);
}

/* Allocation ids are reused (after a quarantine), so a long-lived context does not run
 * out of them; a recently freed buffer is still caught as freed. */
static void test_allocation_ids_reused(void **state) {
  (void)state;
  tk_context *ctx = interp();
  enum { N = 20000 };
  tk_devptr seen_max = 0, first = 0;
  for (int i = 0; i < N; i++) {
    tk_devptr p;
    assert_int_equal(tk_malloc(ctx, &p, 8), TK_OK);
    if (!first) first = p;
    if (p > seen_max) seen_max = p;
    assert_int_equal(tk_free(ctx, p), TK_OK);
  }
  /* ids are contiguous from the first: at most the quarantine's worth were in use */
  assert_true((seen_max - first) >> 38 <= 1025);
  tk_devptr p, q;
  assert_int_equal(tk_malloc(ctx, &p, 8), TK_OK);
  assert_int_equal(tk_free(ctx, p), TK_OK);
  assert_int_equal(tk_malloc(ctx, &q, 8), TK_OK);
  assert_true(q != p);
  assert_int_equal(tk_memcpy_htod(ctx, p, &q, 8), TK_ERR_INVALID);
  tk_context_destroy(ctx);
}


/* ---- compiles never take the host down (issue 13, item 3) --------------------------- */

/* Memory running out inside the compiler is TK_ERR_MEMORY with a message, and the context
 * compiles again afterwards: run in a child process whose address space is capped just
 * above what it has, so that the compile of a large file cannot fit. (Not under ASan,
 * whose shadow memory needs the address space the cap takes away.) */
static void test_out_of_memory_is_an_error(void **state) {
  (void)state;
#if defined(__SANITIZE_ADDRESS__)
  skip();
#else
  tk_context *ctx = interp();
  size_t cap = 64u << 20, len = 0;
  char *src = malloc(cap);
  assert_non_null(src);
  for (int i = 0; len + 64 < cap; i++)
    len += (size_t)snprintf(src + len, cap - len, "kernel k%d(x: *f32) { store(x, 1.0); }\n", i);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* what the process maps now, from /proc/self/statm (pages), plus 256 MB */
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1) _exit(2);
    fclose(f);
    struct rlimit rl = {(rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (256u << 20), RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
    tk_module *m = NULL;
    tk_status s = tk_module_compile(ctx, &m, src, len, "big.tk", NULL);
    if (s != TK_ERR_MEMORY) _exit(4);
    if (!strstr(tk_last_error(ctx), "out of memory")) _exit(5);
    const char *ok = "kernel k(x: *f32) { store(x, 1.0); }\n";
    if (tk_module_compile(ctx, &m, ok, strlen(ok), "ok.tk", NULL) != TK_OK) _exit(6);
    _exit(0);
  }
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (!WIFEXITED(st)) fail_msg("the compile killed the process (signal %d)", WTERMSIG(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  free(src);
  tk_context_destroy(ctx);
#endif
}

/* The compile-time work budget is TK_COMPILE_BUDGET's for libtk. */
static void test_compile_budget_env(void **state) {
  (void)state;
  tk_context *ctx = interp();
  const char *src = "kernel k(x: *i32) {\n    var s = 0;\n    for i in static_range(0, 64) { s = s + i; }\n"
                    "    store(x, s);\n}\n";
  tk_module *m = NULL;
  setenv("TK_COMPILE_BUDGET", "10", 1);
  assert_int_equal(tk_module_compile(ctx, &m, src, strlen(src), "b.tk", NULL), TK_ERR_COMPILE);
  contains(tk_last_error(ctx), "b.tk:3:14: error: compile-time work budget exhausted");
  setenv("TK_COMPILE_BUDGET", "ten", 1);
  assert_int_equal(tk_module_compile(ctx, &m, src, strlen(src), "b.tk", NULL), TK_ERR_INVALID);
  unsetenv("TK_COMPILE_BUDGET");
  assert_int_equal(tk_module_compile(ctx, &m, src, strlen(src), "b.tk", NULL), TK_OK);
  tk_context_destroy(ctx);
}


/* An i32 offset that wraps is reported as such on the interpreter, not only as an
 * access out of bounds (issue 13, item 7). */
static void test_wrapped_offset_reported(void **state) {
  (void)state;
  tk_context *ctx = interp();
  const char *src = "kernel k<BLOCK: i32 = 16>(x: *f32, y: *f32, stride: i32) {\n"
                    "    let row = program_id(0) + 2;\n"
                    "    let cols = arange(0, BLOCK);\n"
                    "    store(y + cols, load(x + row * stride + cols));\n"
                    "}\n";
  tk_module *m = NULL;
  assert_int_equal(tk_module_compile(ctx, &m, src, strlen(src), "w.tk", NULL), TK_OK);
  tk_kernel *k = NULL;
  assert_int_equal(tk_module_get_kernel(m, "k", &k), TK_OK);
  tk_devptr x, y;
  assert_int_equal(tk_malloc(ctx, &x, 64), TK_OK);
  assert_int_equal(tk_malloc(ctx, &y, 64), TK_OK);
  tk_arg a[] = {tk_arg_ptr(x), tk_arg_ptr(y), tk_arg_i32(1 << 30)}; /* 2 * 2^30 wraps */
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 3), TK_ERR_RUNTIME);
  contains(tk_last_error(ctx), "out-of-bounds load");
  contains(tk_last_error(ctx), "the offset wrapped around: the mul at w.tk:4:30 computed "
                               "2147483648, which does not fit i32 (it gave -2147483648)");
  a[2] = tk_arg_i32(1 << 20); /* out of bounds without wrapping: said plainly */
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 3), TK_ERR_RUNTIME);
  assert_null(strstr(tk_last_error(ctx), "wrapped"));
  tk_context_destroy(ctx);
}


/* The same for a launch on the interpreter: with no memory left for its values, the
 * launch fails with an internal error (TK_ERR_MEMORY or TK_ERR_RUNTIME), not the process. */
static void test_interpreter_out_of_memory_is_an_error(void **state) {
  (void)state;
#if defined(__SANITIZE_ADDRESS__)
  skip();
#else
  tk_context *ctx = interp();
  const char *src = "kernel big(x: *f32) {\n"
                    "    let i = arange(0, 1048576);\n"
                    "    let a = load(x + i, i < 0, 1.0);\n"
                    "    let b = a * 2.0 + a;\n"
                    "    store(x + i, b * a - b, i < 0);\n"
                    "}\n";
  tk_module *m = NULL;
  assert_int_equal(tk_module_compile(ctx, &m, src, strlen(src), "big.tk", NULL), TK_OK);
  tk_kernel *k = NULL;
  assert_int_equal(tk_module_get_kernel(m, "big", &k), TK_OK);
  tk_devptr x;
  assert_int_equal(tk_malloc(ctx, &x, 64), TK_OK);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("TK_INTERPRET_THREADS", "1", 1);
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1) _exit(2);
    fclose(f);
    struct rlimit rl = {(rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE), RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
    tk_arg a[] = {tk_arg_ptr(x)};
    tk_status ls = tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 1);
    if (ls != TK_ERR_RUNTIME && ls != TK_ERR_MEMORY) {
      fprintf(stderr, "launch: %s: %s\n", tk_status_name(ls), tk_last_error(ctx));
      _exit(4);
    }
    if (!strstr(tk_last_error(ctx), "internal error in the interpreter") ||
        !strstr(tk_last_error(ctx), "out of memory")) {
      fprintf(stderr, "launch: %s\n", tk_last_error(ctx));
      _exit(5);
    }
    _exit(0);
  }
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (!WIFEXITED(st)) fail_msg("the launch killed the process (signal %d)", WTERMSIG(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  tk_context_destroy(ctx);
#endif
}

/* tk_roofline counts a run-time loop by the trip count its arguments give, and the
 * prediction follows the target table's ceilings. */
static void test_roofline(void **state) {
  (void)state;
  tk_context *ctx = interp();
  static const char src[] =
      "kernel rowsum(x: *f32, y: *f32, n: i32) {\n"
      "  var acc = zeros<f32>(1024);\n"
      "  for c in range(0, n, 1024) {\n"
      "    acc = acc + load(x + (program_id(0) as i64) * (n as i64) + c + arange(0, 1024));\n"
      "  }\n"
      "  store(y + program_id(0), sum(acc, 0));\n"
      "}\n";
  tk_module *m = NULL;
  assert_int_equal(tk_module_compile(ctx, &m, src, strlen(src), "rowsum.tk", NULL), TK_OK);
  tk_kernel *k = NULL;
  assert_int_equal(tk_module_get_kernel(m, "rowsum", &k), TK_OK);
  tk_arg a[] = {tk_arg_ptr(0), tk_arg_ptr(0), tk_arg_i32(1 << 20)};
  tk_roofline_report r;
  assert_int_equal(tk_roofline(k, NULL, (tk_grid){4096, 1, 1}, a, 3, &r), TK_OK);
  /* 4096 rows of 2^20 f32 read once (1024 trips of 4 KB), 4 bytes stored per row */
  assert_true(r.hbm_bytes == 4096.0 * (4.0 * (1 << 20) + 4));
  assert_int_equal(r.bound, TK_BOUND_HBM);
  assert_false(r.trips_unknown);
  assert_true(fabs(r.predicted_us - r.hbm_bytes / 4.0e12 * 1e6) < 1e-6);
  assert_true(fabs(r.fraction_hbm - 1.0) < 1e-12 && r.fraction_f32 < 0.1);
  /* a short row is a launch's worth of work */
  a[2] = tk_arg_i32(1024);
  assert_int_equal(tk_roofline(k, "sm_90a", (tk_grid){1, 1, 1}, a, 3, &r), TK_OK);
  assert_int_equal(r.bound, TK_BOUND_LAUNCH);
  assert_true(r.predicted_us == 3.0);
  assert_int_equal(tk_roofline(k, "sm_86", (tk_grid){1, 1, 1}, a, 3, &r), TK_ERR_INVALID);
  contains(tk_last_error(ctx), "no ceilings for 'sm_86'");
  assert_int_equal(tk_roofline(k, NULL, (tk_grid){1, 1, 1}, a, 2, &r), TK_ERR_ARGS);
  tk_context_destroy(ctx);
}

/* A kernel of transcendentals over data read once is bound by the special-function units:
 * sin, exp and cos are one MUFU result an element each, tanh two (ex2 and rcp), log none
 * (codegen/math.c's table); a copy of the same data is bound by HBM, with no MUFU work. */
static void test_roofline_special_functions(void **state) {
  (void)state;
  tk_context *ctx = interp();
  static const char src[] =
      "kernel transc(x: *f16, y: *f16) {\n"
      "  let offs = program_id(0) * 1024 + arange(0, 1024);\n"
      "  let v = load(x + offs) as f32;\n"
      "  store(y + offs, (exp(sin(v)) + cos(v) * tanh(v) + log(v * v + 1.0)) as f16);\n"
      "}\n"
      "kernel copy(x: *f16, y: *f16) {\n"
      "  let offs = program_id(0) * 1024 + arange(0, 1024);\n"
      "  store(y + offs, load(x + offs));\n"
      "}\n";
  tk_module *m = NULL;
  assert_int_equal(tk_module_compile(ctx, &m, src, strlen(src), "sfu.tk", NULL), TK_OK);
  tk_kernel *kt = NULL, *kc = NULL;
  assert_int_equal(tk_module_get_kernel(m, "transc", &kt), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, "copy", &kc), TK_OK);
  tk_arg a[] = {tk_arg_ptr(0), tk_arg_ptr(0)};
  tk_roofline_report r;
  assert_int_equal(tk_roofline(kt, "sm_90a", (tk_grid){8192, 1, 1}, a, 2, &r), TK_OK);
  double elems = 8192.0 * 1024, rate = 16 * 132 * 1.98e9; /* sm_90a: 16 a clock an SM */
  assert_true(r.sfu_ops == 5 * elems);
  assert_int_equal(r.bound, TK_BOUND_SFU);
  assert_string_equal(r.bound_name, "compute (special functions)");
  assert_true(fabs(r.predicted_us - r.sfu_ops / rate * 1e6) < 1e-6);
  assert_true(fabs(r.fraction_sfu - 1.0) < 1e-12 && r.fraction_hbm < 1.0);
  assert_int_equal(tk_roofline(kc, "sm_90a", (tk_grid){8192, 1, 1}, a, 2, &r), TK_OK);
  assert_true(r.sfu_ops == 0 && r.fraction_sfu == 0);
  assert_int_equal(r.bound, TK_BOUND_HBM);
  tk_context_destroy(ctx);
}

/* A dot over a logical K (samples/matmul_logical.tk's form) is counted as the loop kloop
 * makes of it, from the launch's K: the same report as the loop written by hand. */
static void test_roofline_logical_k(void **state) {
  (void)state;
  tk_context *ctx = interp();
  static const char src[] =
      "kernel looped(a: *f16, b: *f16, c: *f16, M: i32, N: i32, K: i32) {\n"
      "  let rm = program_id(0) * 128 + arange(0, 128);\n"
      "  let rn = program_id(1) * 128 + arange(0, 128);\n"
      "  var acc = zeros<f32>(128, 128);\n"
      "  for k in range(0, K, 64) {\n"
      "    let kk = k + arange(0, 64);\n"
      "    let ta = load(a + (rm[:, None] as i64) * K + kk[None, :], (rm[:, None] < M) && (kk[None, :] < K), 0.0);\n"
      "    let tb = load(b + (kk[:, None] as i64) * N + rn[None, :], (kk[:, None] < K) && (rn[None, :] < N), 0.0);\n"
      "    acc = dot(ta, tb, acc);\n"
      "  }\n"
      "  store(c + (rm[:, None] as i64) * N + rn[None, :], acc as f16, (rm[:, None] < M) && (rn[None, :] < N));\n"
      "}\n"
      "kernel logical(a: *f16, b: *f16, c: *f16, M: i32, N: i32, K: i32) {\n"
      "  let rm = program_id(0) * 128 + arange(0, 128);\n"
      "  let rn = program_id(1) * 128 + arange(0, 128);\n"
      "  let kk = arange(0, 2048);\n"
      "  let ta = load(a + (rm[:, None] as i64) * K + kk[None, :], (rm[:, None] < M) && (kk[None, :] < K), 0.0);\n"
      "  let tb = load(b + (kk[:, None] as i64) * N + rn[None, :], (kk[:, None] < K) && (rn[None, :] < N), 0.0);\n"
      "  store(c + (rm[:, None] as i64) * N + rn[None, :], dot(ta, tb) as f16, (rm[:, None] < M) && (rn[None, :] < N));\n"
      "}\n";
  tk_module *m = NULL;
  assert_int_equal(tk_module_compile(ctx, &m, src, strlen(src), "mm.tk", NULL), TK_OK);
  tk_kernel *kl = NULL, *kg = NULL;
  assert_int_equal(tk_module_get_kernel(m, "looped", &kl), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, "logical", &kg), TK_OK);
  tk_arg a[] = {tk_arg_ptr(0), tk_arg_ptr(0), tk_arg_ptr(0), tk_arg_i32(2048), tk_arg_i32(2048), tk_arg_i32(1000)};
  tk_roofline_report rl, rg;
  assert_int_equal(tk_roofline(kl, "sm_90a", (tk_grid){16, 16, 1}, a, 6, &rl), TK_OK);
  assert_int_equal(tk_roofline(kg, "sm_90a", (tk_grid){16, 16, 1}, a, 6, &rg), TK_OK);
  assert_false(rl.trips_unknown || rg.trips_unknown);
  /* 16 steps of 64 to K = 1000 (the last masked, and counted whole), not the tile's 2048 */
  assert_true(rg.tensor_flops == 2.0 * 2048 * 2048 * 1024);
  assert_true(rl.tensor_flops == rg.tensor_flops && rl.hbm_bytes == rg.hbm_bytes && rl.l2_bytes == rg.l2_bytes);
  assert_true(rl.predicted_us == rg.predicted_us && rl.bound == rg.bound);
  tk_context_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_names),
      cmocka_unit_test(test_context_creation),
      cmocka_unit_test(test_null_handles),
      cmocka_unit_test(test_memory),
      cmocka_unit_test(test_kernel_signature),
      cmocka_unit_test(test_launch_and_arguments),
      cmocka_unit_test(test_roofline),
      cmocka_unit_test(test_roofline_logical_k),
      cmocka_unit_test(test_roofline_special_functions),
      cmocka_unit_test(test_compile_failures),
      cmocka_unit_test(test_compile_arch),
      cmocka_unit_test(test_runtime_fault),
      cmocka_unit_test(test_stale_handles),
      cmocka_unit_test(test_buffer_of_another_context),
      cmocka_unit_test(test_grid_limits),
      cmocka_unit_test(test_pointer_offset_wrap),
      cmocka_unit_test(test_allocation_ids_reused),
      cmocka_unit_test(test_out_of_memory_is_an_error),
      cmocka_unit_test(test_interpreter_out_of_memory_is_an_error),
      cmocka_unit_test(test_compile_budget_env),
      cmocka_unit_test(test_wrapped_offset_reported),
      /* last: its compilations leave the heap larger, which the out-of-memory test's
       * address-space limit (set from the process's current size) would then not reach */
      cmocka_unit_test(test_kernel_resources),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
