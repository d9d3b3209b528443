/* Unit tests of the longfirst pass on the interpreter: a kernel whose loop grows with a
 * program id runs with and without the pass over grids of several shapes, and both must
 * write the same memory (each program writes its own ids, its loop's result and the grid's
 * size at the index its ids name, so a map of the grid that were not a bijection would
 * leave a poisoned word or write one twice); the rewrite is made where a bound grows
 * with axis 0 or 1, and not where the bound is flat, where it depends on data, or where
 * the kernel has an atomic (whose programs may wait for each other). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/interp.h"
#include "passes/passes.h"
#include "sema/sema.h"
#include "tests/unit/pass_check.h"

static const char *const WITH = "canonicalize,longfirst";
static const char *const WITHOUT = "canonicalize";

/* program (x, y, z) loops (x + 1) * 2 times (GROW0) or y + 3 times (GROW1) */
#define KERNEL(NAME, BOUND)                                                                       \
  "kernel " NAME "(out: *i32) {\n"                                                                \
  "    let x = program_id(0);\n"                                                                  \
  "    let y = program_id(1);\n"                                                                  \
  "    let z = program_id(2);\n"                                                                  \
  "    var s = 0;\n"                                                                              \
  "    for i in range(0, " BOUND ", 1) {\n"                                                       \
  "        s = s + i * (y + 1) + z;\n"                                                            \
  "    }\n"                                                                                       \
  "    let idx = (z * num_programs(1) + y) * num_programs(0) + x;\n"                              \
  "    let o = arange(0, 4);\n"                                                                   \
  "    let v = where(o == 0, s, where(o == 1, x * 10000 + y * 100 + z, num_programs(0) * 10000 + " \
  "num_programs(1) * 100 + num_programs(2)));\n"                                                  \
  "    store(out + idx * 4 + o, v, o < 3);\n"                                                     \
  "}\n"

static const char GROW0[] = KERNEL("grow0", "(x + 1) * 2");
static const char GROW1[] = KERNEL("grow1", "minimum(y + 3, 50)");
static const char FLAT[] = KERNEL("flat", "7");
static const char DATA[] =
    "kernel data(out: *i32) {\n"
    "    let x = program_id(0);\n"
    "    var s = 0;\n"
    "    for i in range(0, load(out + x) % 5, 1) { s = s + i; }\n"
    "    store(out + x, s);\n"
    "}\n";
static const char ATOMIC[] =
    "kernel counted(out: *i32) {\n"
    "    let x = program_id(0);\n"
    "    var s = 0;\n"
    "    for i in range(0, x + 1, 1) { s = s + i; }\n"
    "    atomic_add(out, s);\n"
    "}\n";

static void count_nprog(ir_op *op, void *arg) { *(int *)arg += op->opc == IR_NUM_PROGRAMS; }

static int num_programs_ops(const ir_module *m) {
  int n = 0;
  ir_walk(m->funcs[0]->body, count_nprog, &n);
  return n;
}

/* Runs m's kernel on grid g over a poisoned buffer; returns its words. */
static int32_t *run(su_arena *a, const ir_module *m, tk_grid g) {
  ip_memory *mem = ip_memory_new();
  su_buf err = {0};
  size_t n = (size_t)g.x * g.y * g.z * 4;
  tk_devptr d;
  assert_true(ip_mem_alloc(mem, n * 4, &d, &err));
  memset(ip_mem_host(mem, d, n * 4, &err), 0xa5, n * 4);
  tk_arg args[1] = {tk_arg_ptr(d)};
  if (ip_launch(mem, m, m->funcs[0], g, args, 1, NULL, &err) != IP_OK) fail_msg("launch failed: %s", su_buf_str(&err));
  int32_t *out = SU_NEW_ARRAY(a, int32_t, n);
  memcpy(out, ip_mem_host(mem, d, n * 4, &err), n * 4);
  su_buf_free(&err);
  ip_memory_free(mem);
  return out;
}

static void same_results(const char *src) {
  su_arena *a = su_arena_new();
  ir_module *with = pk_compile_arch(a, src, NULL, 0, WITH, IR_KEEP_AUTO, "sm_90a");
  ir_module *without = pk_compile_arch(a, src, NULL, 0, WITHOUT, IR_KEEP_AUTO, "sm_90a");
  assert_true(num_programs_ops(with) > num_programs_ops(without)); /* rewritten */
  const tk_grid grids[] = {{1, 1, 1}, {5, 3, 2}, {7, 1, 4}, {1, 6, 1}, {13, 2, 3}, {64, 4, 2}};
  for (size_t i = 0; i < sizeof grids / sizeof *grids; i++) {
    tk_grid g = grids[i];
    size_t n = (size_t)g.x * g.y * g.z * 4;
    int32_t *want = run(a, without, g), *got = run(a, with, g);
    if (memcmp(got, want, n * 4)) fail_msg("grid %ux%ux%u: longfirst's programs wrote other values", g.x, g.y, g.z);
  }
  su_arena_free(a);
}

static void grows_with_x(void **state) {
  (void)state;
  same_results(GROW0);
}

static void grows_with_y(void **state) {
  (void)state;
  same_results(GROW1);
}

static void left_alone(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  const char *const srcs[] = {FLAT, DATA, ATOMIC};
  for (int i = 0; i < 3; i++) {
    ir_module *with = pk_compile_arch(a, srcs[i], NULL, 0, WITH, IR_KEEP_AUTO, "sm_90a");
    ir_module *without = pk_compile_arch(a, srcs[i], NULL, 0, WITHOUT, IR_KEEP_AUTO, "sm_90a");
    assert_string_equal(pk_print(a, with), pk_print(a, without));
  }
  su_arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(grows_with_x), cmocka_unit_test(grows_with_y),
                                     cmocka_unit_test(left_alone)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
