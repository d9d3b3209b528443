/* Unit tests for the on-disk compile cache (runtime/cache.h): the key, and the store's
 * behaviour on miss, hit, corrupt, truncated and foreign entries and unusable directories. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cache.h"

/* A fresh temporary cache directory per test. */
typedef struct {
  su_arena *a;
  char dir[64];
  rt_cache c;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->a = su_arena_new();
  strcpy(f->dir, "/tmp/tk-test-cache-XXXXXX");
  if (!mkdtemp(f->dir)) return -1;
  rt_cache_open(&f->c, f->a, f->dir);
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

static rt_cache_key key_of(const char *s) { return rt_key_digest(s, strlen(s)); }

static char *read_file(const char *path, long *len) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  *len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *p = malloc((size_t)*len + 1);
  size_t got = fread(p, 1, (size_t)*len, fp);
  fclose(fp);
  assert_int_equal(got, (size_t)*len);
  return p;
}

static void write_file(const char *path, const char *p, long len) {
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(p, 1, (size_t)len, fp), (size_t)len);
  fclose(fp);
}

static void test_sha256_vectors(void **state) {
  (void)state;
  char hex[65];
  rt_cache_key k = rt_key_digest("abc", 3);
  rt_cache_key_hex(&k, hex);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  k = rt_key_digest("", 0);
  rt_cache_key_hex(&k, hex);
  assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  /* two blocks, and the incremental path split at an odd place */
  const char *s = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  rt_key_builder b;
  rt_key_init(&b);
  rt_key_bytes(&b, s, 5);
  rt_key_bytes(&b, s + 5, strlen(s) - 5);
  k = rt_key_final(&b);
  rt_cache_key_hex(&k, hex);
  assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_key_covers_every_input(void **state) {
  (void)state;
  const char *src = "kernel k(x: *f32) {}";
  size_t n = strlen(src);
  tk_define d1[] = {{"BLOCK", "1024"}}, d2[] = {{"BLOCK", "2048"}};
  tk_compile_options o = {0}, o1 = {d1, 1, 0, NULL, 0}, o2 = {d2, 1, 0, NULL, 0};
  rt_cache_key base = rt_cache_key_compile(src, n, "k.tk", &o, "sm_90a");
  rt_cache_key same = rt_cache_key_compile(src, n, "k.tk", NULL, "sm_90a");
  assert_memory_equal(base.b, same.b, 32); /* NULL options are the zeroed defaults */
  tk_compile_options o3 = {0};
  o3.opt_level = 3;
  same = rt_cache_key_compile(src, n, "k.tk", &o3, "sm_90a");
  assert_memory_equal(base.b, same.b, 32); /* opt_level 0 means -O3 */
  rt_cache_key other[] = {
    rt_cache_key_compile(src, n - 1, "k.tk", &o, "sm_90a"),
    rt_cache_key_compile(src, n, "j.tk", &o, "sm_90a"),
    rt_cache_key_compile(src, n, "k.tk", &o, "sm_80"),
    rt_cache_key_compile(src, n, "k.tk", &o1, "sm_90a"),
    rt_cache_key_compile(src, n, "k.tk", &o2, "sm_90a"),
  };
  o.opt_level = 1;
  rt_cache_key o1key = rt_cache_key_compile(src, n, "k.tk", &o, "sm_90a");
  assert_memory_not_equal(base.b, o1key.b, 32);
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    assert_memory_not_equal(base.b, other[i].b, 32);
    for (size_t j = 0; j < i; j++) assert_memory_not_equal(other[i].b, other[j].b, 32);
  }
}

static void test_fields_are_framed(void **state) {
  (void)state;
  rt_key_builder a, b;
  rt_key_init(&a);
  rt_key_str(&a, "ab");
  rt_key_str(&a, "c");
  rt_key_init(&b);
  rt_key_str(&b, "a");
  rt_key_str(&b, "bc");
  rt_cache_key ka = rt_key_final(&a), kb = rt_key_final(&b);
  assert_memory_not_equal(ka.b, kb.b, 32);
  rt_key_init(&a);
  rt_key_str(&a, NULL);
  rt_key_init(&b);
  rt_key_str(&b, "");
  ka = rt_key_final(&a);
  kb = rt_key_final(&b);
  assert_memory_not_equal(ka.b, kb.b, 32);
}

static void test_miss_store_hit(void **state) {
  fixture *f = *state;
  rt_cache_key k = key_of("one");
  su_buf out = {0};
  assert_false(rt_cache_get(&f->c, &k, &out));
  assert_int_equal(out.len, 0);
  const char ptx[] = "// ptx\n.version 8.5\n";
  assert_true(rt_cache_put(&f->c, &k, ptx, sizeof ptx));
  assert_true(rt_cache_get(&f->c, &k, &out));
  assert_int_equal(out.len, sizeof ptx);
  assert_memory_equal(out.data, ptx, sizeof ptx);
  /* another key still misses; an overwrite replaces */
  rt_cache_key k2 = key_of("two");
  assert_false(rt_cache_get(&f->c, &k2, &out));
  assert_true(rt_cache_put(&f->c, &k, "new", 3));
  su_buf_free(&out);
  assert_true(rt_cache_get(&f->c, &k, &out));
  assert_int_equal(out.len, 3);
  assert_memory_equal(out.data, "new", 3);
  su_buf_free(&out);
  /* no temporary file is left behind */
  char cmd[160];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep -q tmp", f->dir);
  assert_int_not_equal(system(cmd), 0);
}

static void test_empty_payload(void **state) {
  fixture *f = *state;
  rt_cache_key k = key_of("empty");
  su_buf out = {0};
  assert_true(rt_cache_put(&f->c, &k, "", 0));
  assert_true(rt_cache_get(&f->c, &k, &out));
  assert_int_equal(out.len, 0);
  su_buf_free(&out);
}

/* Damages the stored entry of k with fn, then checks it misses and is gone. */
static void expect_rejected(fixture *f, void (*damage)(char *p, long *len)) {
  rt_cache_key k = key_of("victim");
  const char payload[] = "0123456789abcdef0123456789abcdef";
  assert_true(rt_cache_put(&f->c, &k, payload, sizeof payload - 1));
  char *path = rt_cache_entry_path(&f->c, f->a, &k);
  long len = 0;
  char *p = read_file(path, &len);
  assert_non_null(p);
  damage(p, &len);
  write_file(path, p, len);
  free(p);
  su_buf out = {0};
  assert_false(rt_cache_get(&f->c, &k, &out));
  assert_int_equal(out.len, 0);
  assert_int_not_equal(access(path, F_OK), 0); /* deleted, so the recompile rewrites it */
  assert_true(rt_cache_put(&f->c, &k, payload, sizeof payload - 1));
  assert_true(rt_cache_get(&f->c, &k, &out));
  su_buf_free(&out);
}

static void flip_payload_bit(char *p, long *len) { p[*len - 3] ^= 0x10; }
static void truncate_payload(char *p, long *len) { (void)p; *len -= 5; }
static void truncate_header(char *p, long *len) { (void)p; *len = 20; }
static void bad_magic(char *p, long *len) { (void)len; p[0] = 'X'; }
static void bad_version(char *p, long *len) { (void)len; p[8] = 99; }
static void bad_key(char *p, long *len) { (void)len; p[30] ^= 1; }
static void longer_claim(char *p, long *len) { (void)len; p[16] += 1; }

static void test_corrupt_entry_misses(void **state) { expect_rejected(*state, flip_payload_bit); }
static void test_truncated_entry_misses(void **state) { expect_rejected(*state, truncate_payload); }
static void test_truncated_header_misses(void **state) { expect_rejected(*state, truncate_header); }
static void test_bad_magic_misses(void **state) { expect_rejected(*state, bad_magic); }
static void test_bad_version_misses(void **state) { expect_rejected(*state, bad_version); }
static void test_foreign_key_misses(void **state) { expect_rejected(*state, bad_key); }
static void test_wrong_length_misses(void **state) { expect_rejected(*state, longer_claim); }

static void test_unwritable_dir_is_harmless(void **state) {
  fixture *f = *state;
  /* A directory under a regular file can never be created, even by root. */
  char file[96], dir[128];
  snprintf(file, sizeof file, "%s/plain", f->dir);
  write_file(file, "x", 1);
  snprintf(dir, sizeof dir, "%s/sub", file);
  rt_cache c;
  rt_cache_open(&c, f->a, dir);
  assert_null(c.dir);
  rt_cache_key k = key_of("k");
  su_buf out = {0};
  assert_false(rt_cache_put(&c, &k, "data", 4));
  assert_false(rt_cache_get(&c, &k, &out));
  assert_null(rt_cache_entry_path(&c, f->a, &k));
  /* A directory that exists but loses its write permission later: stores fail quietly
   * (skipped as root, whom permissions do not stop). */
  if (geteuid() != 0) {
    assert_int_equal(chmod(f->dir, 0500), 0);
    assert_false(rt_cache_put(&f->c, &k, "data", 4));
    assert_false(rt_cache_get(&f->c, &k, &out));
    assert_int_equal(chmod(f->dir, 0700), 0);
  }
}

static void test_directory_from_environment(void **state) {
  fixture *f = *state;
  char want[128];
  rt_cache c;
  snprintf(want, sizeof want, "%s/env/a/b", f->dir);
  setenv("TK_CACHE_DIR", want, 1);
  setenv("XDG_CACHE_HOME", "/nonexistent-xdg", 1);
  rt_cache_open(&c, f->a, NULL);
  assert_non_null(c.dir);
  assert_string_equal(c.dir, want); /* created with its parents */
  unsetenv("TK_CACHE_DIR");
  snprintf(want, sizeof want, "%s/xdg", f->dir);
  setenv("XDG_CACHE_HOME", want, 1);
  rt_cache_open(&c, f->a, NULL);
  assert_non_null(c.dir);
  assert_string_equal(c.dir, su_fmt(f->a, "%s/tk", want));
  unsetenv("XDG_CACHE_HOME");
  char *home = getenv("HOME") ? su_strdup(f->a, getenv("HOME")) : NULL;
  setenv("HOME", f->dir, 1);
  rt_cache_open(&c, f->a, NULL);
  assert_non_null(c.dir);
  assert_string_equal(c.dir, su_fmt(f->a, "%s/.cache/tk", f->dir));
  if (home) setenv("HOME", home, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sha256_vectors),
    cmocka_unit_test(test_key_covers_every_input),
    cmocka_unit_test(test_fields_are_framed),
    cmocka_unit_test_setup_teardown(test_miss_store_hit, setup, teardown),
    cmocka_unit_test_setup_teardown(test_empty_payload, setup, teardown),
    cmocka_unit_test_setup_teardown(test_corrupt_entry_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_truncated_entry_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_truncated_header_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_magic_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_version_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_foreign_key_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_wrong_length_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_unwritable_dir_is_harmless, setup, teardown),
    cmocka_unit_test_setup_teardown(test_directory_from_environment, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
