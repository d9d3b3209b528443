/* Unit tests of the JIT's policy (runtime/jit.h), without a driver: which parameters carry
 * a signature bit, the signature and slots a launch's arguments give, the variant table,
 * and the PTX of a variant through the disk cache (compiled once, then found under the
 * variant's own key). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/jit.h"

static const char *const SRC =
    "kernel vcopy<BLOCK: i32 = 1024>(x: *f32, y: *f32, n: i32, s: f32, h: f16, on: i1, k: u64) {\n"
    "    let o = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    store(y + o, load(x + o, o < n, 0.0), o < n);\n"
    "}\n";

typedef struct {
  su_arena *a;
  ir_module *m;
  rt_kernel k;
  char dir[64];
  rt_cache cache;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->a = su_arena_new();
  su_diags d;
  su_diags_init(&d, f->a, stderr);
  drv_options o = {.opt_level = 3};
  f->m = drv_compile(f->a, su_source_new(f->a, "vcopy.tk", SRC, strlen(SRC)), &o, &d);
  if (!f->m) return -1;
  f->k.ir = f->m->funcs[0];
  f->k.sig = ir_func_signature(f->a, f->k.ir);
  strcpy(f->dir, "/tmp/tk-test-jit-XXXXXX");
  if (!mkdtemp(f->dir)) return -1;
  rt_cache_open(&f->cache, f->a, f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  if (system(cmd) != 0) return -1;
  su_arena_free(f->a);
  free(f);
  return 0;
}

static int entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

/* Bits go to the integer (not i1), pointer and f32/f64 parameters; a kernel without IR has
 * none. */
static void test_bits(void **state) {
  fixture *f = *state;
  rt_jit_kernel *jk = rt_jit_kernel_new(f->a, &f->k);
  assert_int_equal(jk->nparams, 7);
  assert_int_equal(jk->block, 128);
  assert_true(rt_jit_full_key(jk) == (1u << 0 | 1u << 1 | 1u << 2 | 1u << 3 | 1u << 6));
  for (int i = 0; i < 7; i++) assert_ptr_equal(jk->argv[i], &jk->slots[i]);
  rt_kernel aot = f->k;
  aot.ir = NULL;
  assert_true(rt_jit_full_key(rt_jit_kernel_new(f->a, &aot)) == 0);
}

/* The signature of a launch: a bit for each multiple of 16 and each positive finite
 * float; the slots hold the ABI's bytes. */
static void test_pack(void **state) {
  fixture *f = *state;
  rt_jit_kernel *jk = rt_jit_kernel_new(f->a, &f->k);
  tk_arg h = {TK_F16, {0}};
  h.v.f = 1.5;
  tk_arg args[] = {tk_arg_ptr(0x1000), tk_arg_ptr(0x2004), tk_arg_i32(4096), tk_arg_f32(2.5f),
                   h, tk_arg_bool(7), tk_arg_u64(48)};
  assert_true(rt_jit_pack(jk, args) == (1u << 0 | 1u << 2 | 1u << 3 | 1u << 6));
  assert_true(jk->slots[1] == 0x2004);
  float s;
  memcpy(&s, &jk->slots[3], 4);
  assert_true(s == 2.5f);
  assert_int_equal(jk->slots[4], 0x3e00);
  assert_int_equal(jk->slots[5], 1);
  args[2] = tk_arg_i32(-16); /* negative multiples count */
  args[6] = tk_arg_u64(17);
  args[3] = tk_arg_f32(1e-45f); /* the smallest subnormal is positive */
  assert_true(rt_jit_pack(jk, args) == (1u << 0 | 1u << 2 | 1u << 3));
  args[3] = tk_arg_f32(3.4028235e38f); /* the largest finite too */
  assert_true(rt_jit_pack(jk, args) == (1u << 0 | 1u << 2 | 1u << 3));
  /* zero (either sign), negative, infinite and NaN are not */
  static const float not_positive[] = {0.0f, -0.0f, -2.5f, INFINITY, -INFINITY, NAN};
  for (size_t i = 0; i < sizeof not_positive / sizeof *not_positive; i++) {
    args[3] = tk_arg_f32(not_positive[i]);
    assert_true(rt_jit_pack(jk, args) == (1u << 0 | 1u << 2));
  }
  tk_arg big = {TK_F32, {0}};
  big.v.f = 1e300; /* positive as a double, infinite as the f32 the kernel gets */
  args[3] = big;
  assert_true(rt_jit_pack(jk, args) == (1u << 0 | 1u << 2));
  args[0] = tk_arg_ptr(0x1008);
  args[2] = tk_arg_i32(1000);
  assert_true(rt_jit_pack(jk, args) == 0);
}

static void test_variants(void **state) {
  fixture *f = *state;
  rt_jit_kernel *jk = rt_jit_kernel_new(f->a, &f->k);
  assert_false(rt_jit_use(jk, 0));
  int a, b, c;
  rt_jit_add(f->a, jk, 7, &a, 0, NULL);
  rt_jit_add(f->a, jk, 0, &b, 0, NULL);
  rt_jit_add(f->a, jk, 5, &c, 65536, NULL); /* past the first growth */
  assert_true(jk->cur == 5 && jk->fn == &c && jk->shmem == 65536);
  assert_true(rt_jit_use(jk, 7));
  assert_true(jk->cur == 7 && jk->fn == &a && jk->shmem == 0);
  assert_true(rt_jit_use(jk, 0));
  assert_ptr_equal(jk->fn, &b);
  assert_false(rt_jit_use(jk, 1));
  assert_ptr_equal(jk->fn, &b); /* a miss changes nothing */
  assert_null(jk->hidden);
  assert_ptr_equal(jk->cur_argv, jk->argv);
}

/* A variant whose launch contract has tensor maps and a persistent grid gets its own
 * parameter array: the slots, then a map each, then the grid; its block is the
 * contract's; switching back to a plain variant restores the plain array. */
static void test_hidden_arguments(void **state) {
  fixture *f = *state;
  rt_jit_kernel *jk = rt_jit_kernel_new(f->a, &f->k);
  int a, b;
  cg_abi abi = {.threads = 384, .persistent = true, .warp_spec = true, .ntmaps = 2};
  rt_jit_add(f->a, jk, 3, &a, 1000, &abi);
  assert_non_null(jk->hidden);
  assert_int_equal(jk->block, 384);
  int n = jk->nparams;
  for (int i = 0; i < n; i++) assert_ptr_equal(jk->cur_argv[i], &jk->slots[i]);
  assert_ptr_equal(jk->cur_argv[n], &jk->hidden->maps[0]);
  assert_ptr_equal(jk->cur_argv[n + 1], &jk->hidden->maps[1]);
  for (int i = 0; i < 3; i++) assert_ptr_equal(jk->cur_argv[n + 2 + i], &jk->hidden->grid[i]);
  assert_true(((uintptr_t)&jk->hidden->maps[1]) % 64 == 0); /* CUtensorMap's alignment */
  unsigned plain = 32u * (unsigned)f->k.sig->num_warps;
  rt_jit_add(f->a, jk, 0, &b, 0, NULL);
  assert_null(jk->hidden);
  assert_ptr_equal(jk->cur_argv, jk->argv);
  assert_int_equal(jk->block, plain);
  assert_true(rt_jit_use(jk, 3));
  assert_int_equal(jk->block, 384);
  assert_non_null(jk->hidden);
}

/* Each variant is compiled once and stored under its own key; a second module of the same
 * source finds it; without a cache nothing is stored; a failure comes back as text. */
static void test_ptx_through_cache(void **state) {
  fixture *f = *state;
  rt_jit_module jm;
  drv_options d = {.opt_level = 3, .arch = "sm_90a"};
  rt_jit_module_init(&jm, f->a, NULL, &d, &f->cache, SRC, strlen(SRC), "vcopy.tk");
  assert_string_equal(jm.opts.arch, "sm_90a");
  assert_int_equal(jm.opts.opt_level, 3);
  su_buf all = {0}, why = {0};
  bool hit = true;
  assert_true(rt_jit_ptx(&jm, f->m, NULL, RT_SPEC_ALL, &all, &hit, &why));
  assert_false(hit);
  assert_non_null(strstr(su_buf_str(&all), "ld.global.v4"));
  assert_int_equal(entries(f->dir), 1);
  su_buf ragged = {0};
  assert_true(rt_jit_ptx(&jm, f->m, f->k.ir, 1u << 0 | 1u << 1, &ragged, &hit, &why));
  assert_null(strstr(su_buf_str(&ragged), "global.v4"));
  assert_int_equal(entries(f->dir), 2);
  su_buf again = {0};
  assert_true(rt_jit_ptx(&jm, f->m, NULL, RT_SPEC_ALL, &again, &hit, &why));
  assert_true(hit);
  assert_string_equal(su_buf_str(&again), su_buf_str(&all));
  assert_int_equal(entries(f->dir), 2);
  rt_jit_evict(&jm, NULL, RT_SPEC_ALL); /* as when the driver rejects the entry */
  assert_int_equal(entries(f->dir), 1);
  again.len = 0;
  assert_true(rt_jit_ptx(&jm, f->m, NULL, RT_SPEC_ALL, &again, &hit, &why));
  assert_false(hit);
  assert_string_equal(su_buf_str(&again), su_buf_str(&all));
  assert_int_equal(entries(f->dir), 2);

  rt_jit_module other;
  tk_compile_options o = {.opt_level = 2, .no_cache = 1};
  d.opt_level = 2;
  rt_jit_module_init(&other, f->a, &o, &d, &f->cache, SRC, strlen(SRC), "vcopy.tk");
  assert_null(other.cache);
  assert_int_equal(other.opts.opt_level, 2);
  again.len = 0;
  assert_true(rt_jit_ptx(&other, f->m, NULL, RT_SPEC_ALL, &again, &hit, &why));
  assert_int_equal(entries(f->dir), 2);

  o = (tk_compile_options){.arch = "sm_12"};
  d.arch = "sm_12";
  rt_jit_module_init(&other, f->a, &o, &d, NULL, SRC, strlen(SRC), "vcopy.tk");
  assert_string_equal(other.opts.arch, "sm_12");
  assert_false(rt_jit_ptx(&other, f->m, NULL, RT_SPEC_ALL, &again, &hit, &why));
  assert_non_null(strstr(su_buf_str(&why), "unknown GPU architecture 'sm_12'"));
  su_buf_free(&all);
  su_buf_free(&ragged);
  su_buf_free(&again);
  su_buf_free(&why);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_bits, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pack, setup, teardown),
      cmocka_unit_test_setup_teardown(test_hidden_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_variants, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ptx_through_cache, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
