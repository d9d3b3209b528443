/*
 * pass_check.h — what the pass tests share: a .tk source parsed, checked, lowered and run
 * through a named list of passes (the IR verified after each), so that a test can compare
 * a pipeline with and without the pass under test on the interpreter. Header-only, for
 * inclusion after <cmocka.h> in one test program each.
 * Prefix: pk_.
 */
#ifndef TK_TESTS_PASS_CHECK_H
#define TK_TESTS_PASS_CHECK_H

#include <stdint.h>
#include <string.h>

#include "passes/passes.h"
#include "sema/sema.h"

/* src compiled with the ndefs compile-time parameters defs, then the passes `passes` (a
 * --passes list) at -O3 with fuse keeping as `keep` says (an ir_keep), for the GPU
 * architecture arch (NULL: none, the interpreter's IR; the target passes read it, as
 * tkc --arch sets it); fails the test on any diagnostic. */
static inline ir_module *pk_compile_arch(su_arena *a, const char *src, const sema_define *defs,
                                         int ndefs, const char *passes, int keep, const char *arch) {
  su_diags d;
  su_diags_init(&d, a, stderr);
  su_source *s = su_source_new(a, "t.tk", src, strlen(src));
  ast_file *f = ast_parse(a, s, &d, su_map_new(a));
  assert_int_equal(d.nerrors, 0);
  ir_module *m = ir_module_new(a, "t.tk");
  sema_options o = {.defines = defs, .ndefines = ndefs};
  assert_true(sema_check(a, f, m, &o, &d));
  sema_lower(f, m);
  m->arch = arch;
  pass_options po = {.opt_level = 3, .verify_each = true, .only = passes, .fuse_keep = keep};
  assert_true(pass_run(m, &po, &d));
  assert_true(ir_verify(m, &d));
  return m;
}

/* The same for no target. */
static inline ir_module *pk_compile_keep(su_arena *a, const char *src, const sema_define *defs,
                                         int ndefs, const char *passes, int keep) {
  return pk_compile_arch(a, src, defs, ndefs, passes, keep, NULL);
}

/* The same with fuse's cost model deciding. */
static inline ir_module *pk_compile(su_arena *a, const char *src, const sema_define *defs, int ndefs,
                                    const char *passes) {
  return pk_compile_keep(a, src, defs, ndefs, passes, IR_KEEP_AUTO);
}

/* m as the IR printer writes it, in a. */
static inline char *pk_print(su_arena *a, const ir_module *m) {
  su_buf b = {0};
  ir_print(&b, m);
  char *s = su_strdup(a, su_buf_str(&b));
  su_buf_free(&b);
  return s;
}

/* The next number of a reproducible stream (a 64-bit LCG's high bits) for test inputs. */
static inline uint64_t pk_next_random(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return *state >> 11;
}

#endif
