/* Unit tests for support/: arena, vectors, buffers, string map, diagnostics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../support/support.h"

static void test_arena_zeroed_and_aligned(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  for (int i = 1; i < 2000; i += 37) {
    unsigned char *p = su_alloc(a, (size_t)i);
    assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
    for (int j = 0; j < i; j++) assert_int_equal(p[j], 0);
    memset(p, 0xab, (size_t)i);
  }
  /* A request larger than a chunk still works and leaves the arena usable. */
  char *big = su_alloc(a, 1 << 20);
  big[(1 << 20) - 1] = 1;
  char *s = su_strdup(a, "tile");
  assert_string_equal(s, "tile");
  assert_string_equal(su_fmt(a, "%s<%d>", "x", 3), "x<3>");
  assert_true(su_arena_used(a) > (1 << 20));
  su_arena_free(a);
}

static void test_vec_and_buf(void **state) {
  (void)state;
  su_vec v = {0};
  int xs[100];
  for (int i = 0; i < 100; i++) su_vec_push(&v, &xs[i]);
  assert_int_equal(v.len, 100);
  assert_ptr_equal(v.data[57], &xs[57]);
  su_vec_free(&v);
  assert_int_equal(v.len, 0);

  su_buf b = {0};
  assert_string_equal(su_buf_str(&b), "");
  for (int i = 0; i < 1000; i++) su_buf_printf(&b, "%d,", i % 10);
  assert_int_equal(b.len, 2000);
  assert_memory_equal(su_buf_str(&b), "0,1,2,", 6);
  su_buf_free(&b);
}

static void test_map_and_intern(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  su_map *m = su_map_new(a);
  char key[32];
  for (int i = 0; i < 1000; i++) {
    int n = snprintf(key, sizeof key, "k%d", i);
    su_map_put(m, key, (size_t)n, (void *)(intptr_t)(i + 1));
  }
  assert_int_equal(su_map_len(m), 1000);
  assert_int_equal((intptr_t)su_map_get(m, "k777", 4), 778);
  assert_null(su_map_get(m, "k1000", 5));
  su_map_put(m, "k5", 2, (void *)(intptr_t)42);
  assert_int_equal((intptr_t)su_map_get(m, "k5", 2), 42);
  assert_int_equal(su_map_len(m), 1000);

  su_map *names = su_map_new(a);
  char buf1[] = "softmax", buf2[] = "softmax";
  const char *x = su_intern(names, buf1, 7), *y = su_intern(names, buf2, 7);
  assert_ptr_equal(x, y);
  assert_ptr_not_equal(x, su_intern(names, "soft", 4));
  su_arena_free(a);
}

static void test_diag_caret(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  const char *text = "kernel k() {\n\tlet x = y + 1;\n}\n";
  su_source *src = su_source_new(a, "t.tk", text, strlen(text));
  su_diags d;
  su_diags_init(&d, a, NULL);
  su_loc l = {src, 22, 1, 2, 10}; /* the 'y' */
  su_error(&d, l, "use of undeclared name '%s'", "y");
  su_loc decl = {src, 0, 6, 1, 1};
  su_note(&d, decl, "in kernel 'k'");
  assert_int_equal(d.nerrors, 1);
  su_buf b = {0};
  su_diags_render(&d, &b);
  const char *want =
      "t.tk:2:10: error: use of undeclared name 'y'\n"
      " 2 | \tlet x = y + 1;\n"
      "   | \t        ^\n"
      "t.tk:1:1: note: in kernel 'k'\n"
      " 1 | kernel k() {\n"
      "   | ^~~~~~\n";
  assert_string_equal(su_buf_str(&b), want);
  su_buf_free(&b);
  su_arena_free(a);
}

static void test_diag_long_line_and_binary(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  size_t n = 100000;
  char *text = su_alloc(a, n + 1);
  memset(text, 'a', n);
  text[10] = '\x01';
  su_source *src = su_source_new(a, "big.tk", text, n);
  su_diags d;
  su_diags_init(&d, a, NULL);
  su_loc l = {src, 50000, 10, 1, 50001};
  su_error(&d, l, "identifier is too long");
  su_buf b = {0};
  su_diags_render(&d, &b);
  /* The shown window stays short whatever the line's length. */
  assert_true(b.len < 600);
  assert_non_null(strstr(su_buf_str(&b), "big.tk:1:50001: error: identifier is too long"));
  su_buf_free(&b);
  su_arena_free(a);
}

static void test_diag_max_errors(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  d.max_errors = 3;
  su_loc none = {0};
  for (int i = 0; i < 10; i++) su_error(&d, none, "e%d", i);
  assert_int_equal(d.nerrors, 10);
  int kept = 0;
  for (su_diag *g = d.first; g; g = g->next) kept++;
  assert_int_equal(kept, 3);
  su_arena_free(a);
}


/* An internal error unwinds to the innermost trap with its message; without one it would
 * abort. Out of memory is marked as such. */
static volatile int fail_at_bottom = 1;

static int trapped_depth(int n) {
  if (n == 0) {
    if (fail_at_bottom) su_fatal("deep failure %d", 7);
    return 0;
  }
  return trapped_depth(n - 1) + 1;
}

static void test_trap(void **state) {
  (void)state;
  assert_false(su_trap_active());
  su_trap outer;
  volatile int reached = 0;
  su_trap_push(&outer);
  if (setjmp(outer.jb)) {
    assert_non_null(strstr(outer.msg, "assertion failed: 1 + 1 == 3"));
  } else {
    su_trap inner;
    su_trap_push(&inner);
    if (setjmp(inner.jb)) {
      assert_non_null(strstr(inner.msg, "deep failure 7 (at "));
      assert_false(inner.oom);
      reached = 1;
    } else {
      reached = trapped_depth(50);
      su_trap_clear(&inner);
    }
    assert_true(su_trap_active()); /* the outer one is still set */
    SU_ASSERT(1 + 1 == 3);
    su_trap_clear(&outer);
    fail_msg("the assertion did not unwind");
  }
  assert_int_equal(reached, 1);
  assert_false(su_trap_active());
  su_trap t;
  su_trap_push(&t);
  if (setjmp(t.jb)) {
    assert_true(t.oom);
    assert_non_null(strstr(t.msg, "out of memory (123 bytes)"));
  } else {
    su_oom(123);
  }
  assert_false(su_trap_active());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arena_zeroed_and_aligned),
      cmocka_unit_test(test_vec_and_buf),
      cmocka_unit_test(test_map_and_intern),
      cmocka_unit_test(test_diag_caret),
      cmocka_unit_test(test_diag_long_line_and_binary),
      cmocka_unit_test(test_diag_max_errors),
      cmocka_unit_test(test_trap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
