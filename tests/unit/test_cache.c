/* Unit tests for the on-disk compile cache (runtime/cache.h): the key and the compiler
 * identity in it, and the store's behaviour on miss, hit, corrupt, truncated, foreign and
 * other builds' entries, links and FIFOs in its place, untrusted and unusable directories,
 * orphan temporaries and its size bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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
  tk_compile_options o = {0}, o1 = {.defines = d1, .ndefines = 1}, o2 = {.defines = d2, .ndefines = 1};
  tk_compile_options p1 = {.dot_precision = TK_DOT_IEEE}, p2 = {.dot_precision = TK_DOT_TF32X3};
  tk_compile_options am = {.accurate_math = 1}, fc = {.fp_contract = 1};
  rt_cache_key base = rt_cache_key_compile(src, n, "k.tk", &o, "sm_90a");
  rt_cache_key same = rt_cache_key_compile(src, n, "k.tk", NULL, "sm_90a");
  assert_memory_equal(base.b, same.b, 32); /* NULL options are the zeroed defaults */
  tk_compile_options o3 = {0};
  o3.opt_level = 3;
  same = rt_cache_key_compile(src, n, "k.tk", &o3, "sm_90a");
  assert_memory_equal(base.b, same.b, 32); /* opt_level 0 means -O3 */
  tk_compile_options tf = {.dot_precision = TK_DOT_TF32};
  same = rt_cache_key_compile(src, n, "k.tk", &tf, "sm_90a");
  assert_memory_equal(base.b, same.b, 32); /* the default precision is tf32 */
  rt_cache_key other[] = {
    rt_cache_key_compile(src, n - 1, "k.tk", &o, "sm_90a"),
    rt_cache_key_compile(src, n, "j.tk", &o, "sm_90a"),
    rt_cache_key_compile(src, n, "k.tk", &o, "sm_80"),
    rt_cache_key_compile(src, n, "k.tk", &o1, "sm_90a"),
    rt_cache_key_compile(src, n, "k.tk", &o2, "sm_90a"),
    rt_cache_key_compile(src, n, "k.tk", &p1, "sm_90a"),
    rt_cache_key_compile(src, n, "k.tk", &p2, "sm_90a"),
    rt_cache_key_compile(src, n, "k.tk", &am, "sm_90a"),
    rt_cache_key_compile(src, n, "k.tk", &fc, "sm_90a"),
  };
  o.no_fuse = 1;
  rt_cache_key nofuse = rt_cache_key_compile(src, n, "k.tk", &o, "sm_90a");
  assert_memory_not_equal(base.b, nofuse.b, 32);
  o.no_fuse = 0;
  o.opt_level = 1;
  rt_cache_key o1key = rt_cache_key_compile(src, n, "k.tk", &o, "sm_90a");
  assert_memory_not_equal(base.b, o1key.b, 32);
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    assert_memory_not_equal(base.b, other[i].b, 32);
    for (size_t j = 0; j < i; j++) assert_memory_not_equal(other[i].b, other[j].b, 32);
  }
}

/* Every field of the compiler's identity is in the key: an entry of another build, LLVM
 * or libdevice is looked up under another name. */
static void test_key_covers_the_compiler(void **state) {
  (void)state;
  const char *src = "kernel k(x: *f32) {}";
  size_t n = strlen(src);
  rt_compiler_id id;
  rt_compiler_id_current(&id);
  assert_int_equal(strlen(id.build), 64);
  assert_int_equal(id.llvm[0], 19); /* what meson checked at configure time */
  rt_cache_key cur = rt_cache_key_compile_id(&id, src, n, "k.tk", NULL, "sm_90a");
  rt_cache_key same = rt_cache_key_compile(src, n, "k.tk", NULL, "sm_90a");
  assert_memory_equal(cur.b, same.b, 32); /* rt_cache_key_compile is by this process's */
  rt_compiler_id other[7];
  for (int i = 0; i < 7; i++) other[i] = id;
  char build[65];
  snprintf(build, sizeof build, "%s", id.build);
  build[0] = build[0] == '0' ? '1' : '0';
  other[0].build = build;
  other[1].llvm[0]++;
  other[2].llvm[1]++;
  other[3].llvm[2]++;
  other[4].libdevice.b[31] ^= 1;
  other[5].has_libdevice = !id.has_libdevice;
  other[6].build = "";
  for (int i = 0; i < 7; i++) {
    rt_cache_key k = rt_cache_key_compile_id(&other[i], src, n, "k.tk", NULL, "sm_90a");
    if (!memcmp(k.b, cur.b, 32)) fail_msg("identity field %d is not in the key", i);
  }
  /* The writer an entry names: build and LLVM, not libdevice (which only the key holds). */
  rt_cache_key w = rt_compiler_writer(&id);
  for (int i = 0; i < 4; i++) {
    rt_cache_key wo = rt_compiler_writer(&other[i]);
    assert_memory_not_equal(w.b, wo.b, 32);
  }
  rt_cache_key w4 = rt_compiler_writer(&other[4]);
  assert_memory_equal(w.b, w4.b, 32);
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
static void other_writer(char *p, long *len) { (void)len; p[70] ^= 1; }
static void longer_claim(char *p, long *len) { (void)len; p[16] += 1; }

static void test_corrupt_entry_misses(void **state) { expect_rejected(*state, flip_payload_bit); }
static void test_truncated_entry_misses(void **state) { expect_rejected(*state, truncate_payload); }
static void test_truncated_header_misses(void **state) { expect_rejected(*state, truncate_header); }
static void test_bad_magic_misses(void **state) { expect_rejected(*state, bad_magic); }
static void test_bad_version_misses(void **state) { expect_rejected(*state, bad_version); }
static void test_foreign_key_misses(void **state) { expect_rejected(*state, bad_key); }
static void test_other_writer_misses(void **state) { expect_rejected(*state, other_writer); }
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

/* A cache filled by another build: its entries, under the keys it computes and naming
 * itself as their writer, or under this build's keys, are never served to this build. The
 * key tk used before its compiler identity was keyed (tag, version, inputs) is one such
 * build: that cache made a newer tk load an older matmul's PTX. */
static void test_other_builds_entries_are_not_served(void **state) {
  fixture *f = *state;
  const char *src = "kernel k(x: *f32) {}";
  size_t n = strlen(src);
  rt_compiler_id id, old;
  rt_compiler_id_current(&id);
  old = id;
  old.build = "0000000000000000000000000000000000000000000000000000000000000000";
  rt_cache theirs = f->c;
  theirs.writer = rt_compiler_writer(&old);
  rt_cache_key ours = rt_cache_key_compile(src, n, "k.tk", NULL, "sm_90a");
  rt_cache_key keys[3];
  keys[0] = rt_cache_key_compile_id(&old, src, n, "k.tk", NULL, "sm_90a");
  keys[1] = ours;
  rt_key_builder b; /* the key before this build: no compiler identity but the version */
  rt_key_init(&b);
  rt_key_str(&b, "tk-jit-ptx");
  rt_key_str(&b, TK_VERSION);
  rt_key_field(&b, src, n);
  rt_key_str(&b, "k.tk");
  rt_key_str(&b, "sm_90a");
  rt_key_int(&b, 3);
  rt_key_int(&b, 0);
  keys[2] = rt_key_final(&b);
  for (int i = 0; i < 3; i++) assert_true(rt_cache_put(&theirs, &keys[i], "// old ptx", 10));
  su_buf out = {0};
  assert_false(rt_cache_get(&f->c, &ours, &out));
  assert_int_equal(out.len, 0);
  /* and this build's own entry is served, to that build no more than to this one */
  assert_true(rt_cache_put(&f->c, &ours, "// new ptx", 10));
  assert_false(rt_cache_get(&theirs, &ours, &out));
  assert_true(rt_cache_put(&f->c, &ours, "// new ptx", 10));
  assert_true(rt_cache_get(&f->c, &ours, &out));
  assert_memory_equal(out.data, "// new ptx", 10);
  su_buf_free(&out);
}

/* A link or a FIFO where an entry should be is no entry: not followed, not blocked on,
 * deleted (the link itself, not its target). */
static void test_links_and_fifos_are_not_entries(void **state) {
  fixture *f = *state;
  rt_cache_key k = key_of("linked");
  char other[64];
  strcpy(other, "/tmp/tk-test-cache-XXXXXX");
  assert_non_null(mkdtemp(other));
  rt_cache elsewhere;
  rt_cache_open(&elsewhere, f->a, other);
  assert_true(rt_cache_put(&elsewhere, &k, "ptx", 3)); /* a valid entry for k */
  char *target = rt_cache_entry_path(&elsewhere, f->a, &k);
  char *path = rt_cache_entry_path(&f->c, f->a, &k);
  assert_int_equal(symlink(target, path), 0);
  su_buf out = {0};
  assert_false(rt_cache_get(&f->c, &k, &out));
  struct stat st;
  assert_int_not_equal(lstat(path, &st), 0);
  assert_int_equal(access(target, F_OK), 0);
  assert_true(rt_cache_get(&elsewhere, &k, &out)); /* the target was left alone */
  su_buf_free(&out);
  assert_int_equal(mkfifo(path, 0600), 0); /* no writer: a blocking open would hang */
  assert_false(rt_cache_get(&f->c, &k, &out));
  assert_int_not_equal(lstat(path, &st), 0);
  assert_true(rt_cache_put(&f->c, &k, "ptx", 3));
  assert_true(rt_cache_get(&f->c, &k, &out));
  su_buf_free(&out);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", other);
  assert_int_equal(system(cmd), 0);
}

/* Runs fn with stderr going to a file; returns what it printed (in a). */
static char *stderr_of(fixture *f, void (*fn)(fixture *)) {
  char path[96];
  snprintf(path, sizeof path, "%s/stderr", f->dir);
  fflush(stderr);
  int saved = dup(2);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
  fn(f);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  long len = 0;
  char *text = read_file(path, &len);
  char *copy = su_strndup(f->a, text, (size_t)len);
  free(text);
  unlink(path);
  return copy;
}

static int count(const char *text, const char *what) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, what)); p++) n++;
  return n;
}

/* Directories others can write to, or that are not ours: not used. */
static void open_untrusted(fixture *f) {
  char dir[128];
  rt_cache c;
  snprintf(dir, sizeof dir, "%s/shared", f->dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(chmod(dir, 0777), 0);
  rt_cache_open(&c, f->a, dir);
  assert_null(c.dir);
  assert_int_equal(chmod(dir, 0770), 0); /* group-writable is no better */
  rt_cache_open(&c, f->a, dir);
  assert_null(c.dir);
  assert_int_equal(chmod(dir, 0755), 0); /* others may read and list: fine */
  rt_cache_open(&c, f->a, dir);
  assert_non_null(c.dir);
  if (geteuid() == 0) { /* someone else's: root can make one */
    assert_int_equal(chown(dir, 65534, 65534), 0);
    rt_cache_open(&c, f->a, dir);
  } else {
    rt_cache_open(&c, f->a, "/");
  }
  assert_null(c.dir);
  rt_cache_key k = key_of("k");
  assert_false(rt_cache_put(&c, &k, "x", 1));
}

static void test_untrusted_dir_is_not_used(void **state) {
  fixture *f = *state;
  char *err = stderr_of(f, open_untrusted);
  /* one clear warning for the process, however many contexts come after */
  assert_int_equal(count(err, "tk: warning: not using the compile cache"), 1);
  assert_non_null(strstr(err, "others can write to it (mode 777)"));
}

static void test_dir_created_private(void **state) {
  fixture *f = *state;
  char dir[128], sub[160];
  snprintf(dir, sizeof dir, "%s/new", f->dir);
  snprintf(sub, sizeof sub, "%s/cache", dir);
  rt_cache c;
  rt_cache_open(&c, f->a, sub);
  assert_non_null(c.dir);
  struct stat st;
  assert_int_equal(stat(dir, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  assert_int_equal(stat(sub, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  rt_cache_key k = key_of("k");
  assert_true(rt_cache_put(&c, &k, "x", 1));
  assert_int_equal(stat(rt_cache_entry_path(&c, f->a, &k), &st), 0);
  assert_int_equal(st.st_mode & 077, 0);
}

/* Sets path's mtime to `ago` seconds before now. */
static void age(const char *path, long ago) {
  struct timespec t[2];
  clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= ago;
  t[1] = t[0];
  assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* The first store sweeps temporaries a dead writer left (old ones only: a fresh one may
 * be a live writer's), and never touches a file not named like the cache's own. */
static void test_orphan_temporaries_swept(void **state) {
  fixture *f = *state;
  rt_cache_key k = key_of("k");
  char hex[65], old[160], fresh[160], mine[160], other[160];
  rt_cache_key_hex(&k, hex);
  snprintf(old, sizeof old, "%s/%s.ptx.tmp.Ab3dEf", f->dir, hex);
  snprintf(fresh, sizeof fresh, "%s/%s.ptx.tmp.xYz123", f->dir, hex);
  snprintf(mine, sizeof mine, "%s/notes.ptx.tmp.abcdef", f->dir);
  snprintf(other, sizeof other, "%s/README", f->dir);
  const char *all[] = {old, fresh, mine, other};
  for (int i = 0; i < 4; i++) {
    write_file(all[i], "x", 1);
    if (i != 1) age(all[i], 3600);
  }
  rt_cache_key k2 = key_of("other");
  assert_true(rt_cache_put(&f->c, &k2, "y", 1));
  assert_int_not_equal(access(old, F_OK), 0);
  assert_int_equal(access(fresh, F_OK), 0);
  assert_int_equal(access(mine, F_OK), 0);
  assert_int_equal(access(other, F_OK), 0);
}

static void test_size_bound(void **state) {
  fixture *f = *state;
  static const struct { const char *v; uint64_t want; } sizes[] = {
    {"1000", 1000}, {"64K", 64 << 10}, {"2m", 2 << 20}, {"3G", 3ull << 30}, {"0", 0},
    {"", 1ull << 30}};
  rt_cache c;
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    setenv("TK_CACHE_MAX_BYTES", sizes[i].v, 1);
    rt_cache_open(&c, f->a, f->dir);
    assert_true(c.max_bytes == sizes[i].want);
  }
  unsetenv("TK_CACHE_MAX_BYTES");
  rt_cache_open(&c, f->a, f->dir);
  assert_true(c.max_bytes == 1ull << 30); /* the default: 1 GiB */
  /* Three entries of 400 bytes under a bound of 1000: the third store deletes the least
   * recently used down to 800, and a hit counts as a use. */
  setenv("TK_CACHE_MAX_BYTES", "1000", 1);
  rt_cache_open(&c, f->a, f->dir);
  unsetenv("TK_CACHE_MAX_BYTES");
  char payload[400 - 120];
  memset(payload, 'p', sizeof payload);
  rt_cache_key k1 = key_of("one"), k2 = key_of("two"), k3 = key_of("three");
  assert_true(rt_cache_put(&c, &k1, payload, sizeof payload));
  assert_true(rt_cache_put(&c, &k2, payload, sizeof payload));
  age(rt_cache_entry_path(&c, f->a, &k1), 300);
  age(rt_cache_entry_path(&c, f->a, &k2), 200);
  su_buf out = {0};
  assert_true(rt_cache_get(&c, &k1, &out)); /* one is now the most recently used */
  assert_true(rt_cache_put(&c, &k3, payload, sizeof payload));
  assert_true(rt_cache_get(&c, &k1, &out));
  assert_false(rt_cache_get(&c, &k2, &out));
  assert_true(rt_cache_get(&c, &k3, &out));
  assert_true(c.bytes == 800);
  su_buf_free(&out);
}

/* A bound that is no size: the default, and one warning. */
static void open_bad_size(fixture *f) {
  rt_cache c;
  setenv("TK_CACHE_MAX_BYTES", "lots", 1);
  for (int i = 0; i < 2; i++) {
    rt_cache_open(&c, f->a, f->dir);
    assert_true(c.max_bytes == 1ull << 30);
  }
  setenv("TK_CACHE_MAX_BYTES", "-5", 1);
  rt_cache_open(&c, f->a, f->dir);
  assert_true(c.max_bytes == 1ull << 30);
  unsetenv("TK_CACHE_MAX_BYTES");
}

static void test_bad_size_warns_once(void **state) {
  fixture *f = *state;
  char *err = stderr_of(f, open_bad_size);
  assert_int_equal(count(err, "tk: warning: TK_CACHE_MAX_BYTES='lots' is not a size"), 1);
  assert_int_equal(count(err, "warning"), 1);
}

static void test_evict(void **state) {
  fixture *f = *state;
  rt_cache_key k = key_of("k");
  su_buf out = {0};
  assert_true(rt_cache_put(&f->c, &k, "ptx", 3));
  rt_cache_evict(&f->c, &k);
  assert_false(rt_cache_get(&f->c, &k, &out));
  rt_cache_evict(&f->c, &k); /* twice is harmless */
  su_buf_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sha256_vectors),
    cmocka_unit_test(test_key_covers_every_input),
    cmocka_unit_test(test_key_covers_the_compiler),
    cmocka_unit_test(test_fields_are_framed),
    cmocka_unit_test_setup_teardown(test_miss_store_hit, setup, teardown),
    cmocka_unit_test_setup_teardown(test_empty_payload, setup, teardown),
    cmocka_unit_test_setup_teardown(test_corrupt_entry_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_truncated_entry_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_truncated_header_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_magic_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_version_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_foreign_key_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_other_writer_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_other_builds_entries_are_not_served, setup, teardown),
    cmocka_unit_test_setup_teardown(test_links_and_fifos_are_not_entries, setup, teardown),
    cmocka_unit_test_setup_teardown(test_untrusted_dir_is_not_used, setup, teardown),
    cmocka_unit_test_setup_teardown(test_dir_created_private, setup, teardown),
    cmocka_unit_test_setup_teardown(test_orphan_temporaries_swept, setup, teardown),
    cmocka_unit_test_setup_teardown(test_size_bound, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_size_warns_once, setup, teardown),
    cmocka_unit_test_setup_teardown(test_evict, setup, teardown),
    cmocka_unit_test_setup_teardown(test_wrong_length_misses, setup, teardown),
    cmocka_unit_test_setup_teardown(test_unwritable_dir_is_harmless, setup, teardown),
    cmocka_unit_test_setup_teardown(test_directory_from_environment, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
