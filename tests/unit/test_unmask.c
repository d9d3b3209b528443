/* Unit tests of the unmask pass: kernels whose loop selects on an edge mask, compiled
 * with and without unmask, run on the interpreter over the same random inputs for ragged
 * lengths (one element past a block, a block short, zero, exact multiples) and several
 * programs, and must write the same memory bit for bit (the then branch yields exactly
 * what the select would on a block the test calls full). The rewritten kernel has its
 * `if likely`; a kernel outside the class keeps its select. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "interp/interp.h"
#include "passes/passes.h"
#include "sema/sema.h"
#include "tests/unit/pass_check.h"

static const char *const WITH = "canonicalize,licm,canonicalize,tiling,unmask";
static const char *const WITHOUT = "canonicalize,licm,canonicalize,tiling";

static ir_module *compile(su_arena *a, const char *src, const char *passes) {
  return pk_compile(a, src, NULL, 0, passes);
}

static void count_likely(ir_op *op, void *ctx) {
  *(int *)ctx += op->opc == IR_IF && op->attr == 1;
}

static int likely_ifs(const ir_module *m) {
  int n = 0;
  ir_walk(m->funcs[0]->body, count_likely, &n);
  return n;
}

enum { X_LEN = 4096, Y_LEN = 4096 };

/* Runs the kernel (x: *f32, y: *f32, n: i32) with x random and y zeroed; returns y. */
static float *run(su_arena *a, const ir_module *m, int n, int programs) {
  ip_memory *mem = ip_memory_new();
  su_buf err = {0};
  tk_devptr x, y;
  assert_true(ip_mem_alloc(mem, X_LEN * 4, &x, &err));
  assert_true(ip_mem_alloc(mem, Y_LEN * 4, &y, &err));
  float *hx = ip_mem_host(mem, x, X_LEN * 4, &err), *hy = ip_mem_host(mem, y, Y_LEN * 4, &err);
  uint32_t s = 12345u;
  for (int i = 0; i < X_LEN; i++) {
    s = s * 1664525u + 1013904223u;
    hx[i] = (float)(s >> 8) / (float)(1u << 24) - 0.5f;
  }
  memset(hy, 0, Y_LEN * 4);
  tk_arg args[3] = {tk_arg_ptr(x), tk_arg_ptr(y), tk_arg_i32(n)};
  tk_grid grid = {(uint32_t)programs, 1, 1};
  if (ip_launch(mem, m, m->funcs[0], grid, args, 3, NULL, &err) != IP_OK) fail_msg("launch failed: %s", su_buf_str(&err));
  float *out = SU_NEW_ARRAY(a, float, Y_LEN);
  memcpy(out, ip_mem_host(mem, y, Y_LEN * 4, &err), Y_LEN * 4);
  su_buf_free(&err);
  ip_memory_free(mem);
  return out;
}

static void check(const char *src, int want_ifs, const int *ns, int nn, int programs) {
  su_arena *a = su_arena_new();
  ir_module *with = compile(a, src, WITH), *without = compile(a, src, WITHOUT);
  assert_int_equal(likely_ifs(with), want_ifs);
  assert_int_equal(likely_ifs(without), 0);
  for (int i = 0; i < nn; i++) {
    float *p = run(a, with, ns[i], programs), *q = run(a, without, ns[i], programs);
    if (memcmp(p, q, Y_LEN * 4)) fail_msg("n = %d: unmask changed the result", ns[i]);
  }
  su_arena_free(a);
}

static const int NS[] = {0, 1, 15, 16, 17, 63, 64, 65, 100, 127, 128, 129, 200, 255};
enum { NNS = sizeof NS / sizeof NS[0] };

/* the ragged end of a row: where(rn < n, ...) */
static void edge(void **state) {
  (void)state;
  check("@launch(warps = 1)\n"
        "kernel k(x: *f32, y: *f32, n: i32) {\n"
        "    var acc = zeros<f32>(16);\n"
        "    for start in range(0, n, 16) {\n"
        "        let rn = start + arange(0, 16);\n"
        "        acc += where(rn < n, load(x + rn, rn < n, 7.0), -1.0);\n"
        "    }\n"
        "    store(y + arange(0, 16), acc);\n"
        "}\n",
        1, NS, NNS, 1);
}

/* causal: keys up to this program's rows, the diagonal block masked (rn <= rm), with the
 * key bound too; 4 programs of 16 rows */
static void causal(void **state) {
  (void)state;
  check("@launch(warps = 1)\n"
        "kernel k(x: *f32, y: *f32, n: i32) {\n"
        "    let rm = program_id(0) * 16 + arange(0, 16);\n"
        "    var acc = zeros<f32>(16, 16);\n"
        "    for start in range(0, minimum(n, (program_id(0) + 1) * 16), 16) {\n"
        "        let rn = start + arange(0, 16);\n"
        "        let v = load(x + (rm[:, None] * 16 + rn[None, :]) % 4096, rn[None, :] < n, 0.0);\n"
        "        acc += where(rn[None, :] < n && rn[None, :] <= rm[:, None], v, 0.5);\n"
        "    }\n"
        "    store(y + rm[:, None] * 16 + arange(0, 16)[None, :], acc);\n"
        "}\n",
        1, NS, NNS, 4);
}

/* the other compares and a difference: rn - 3 > lo and rn >= 5, from a start that is not
 * a multiple of the block */
static void lower_bounds(void **state) {
  (void)state;
  check("@launch(warps = 1)\n"
        "kernel k(x: *f32, y: *f32, n: i32) {\n"
        "    var acc = zeros<f32>(16);\n"
        "    for start in range(-20, n, 16) {\n"
        "        let rn = start + arange(0, 16);\n"
        "        let lo = n / 4;\n"
        "        acc += where(rn - 3 > lo && rn >= 5 && 200 > rn, load(x + (rn + 32), rn < n, 0.0), 2.0);\n"
        "    }\n"
        "    store(y + arange(0, 16), acc);\n"
        "}\n",
        1, NS, NNS, 1);
}

/* an equality is no range fact: the select stays */
static void equality_stays(void **state) {
  (void)state;
  check("@launch(warps = 1)\n"
        "kernel k(x: *f32, y: *f32, n: i32) {\n"
        "    var acc = zeros<f32>(16);\n"
        "    for start in range(0, n, 16) {\n"
        "        let rn = start + arange(0, 16);\n"
        "        acc += where(rn == n - 1, load(x + rn, rn < n, 0.0), 1.0);\n"
        "    }\n"
        "    store(y + arange(0, 16), acc);\n"
        "}\n",
        0, NS, NNS, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(edge),
      cmocka_unit_test(causal),
      cmocka_unit_test(lower_bounds),
      cmocka_unit_test(equality_stays),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
