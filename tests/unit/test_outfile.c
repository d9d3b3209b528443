/* Unit tests for su_write_outputs (support/outfile.c): several outputs all or none, the
 * old files put back after a failed rename, modes, inputs recognized by inode, links.
 * tests/cli/outputs.sh covers the same module through tkc (devices, FIFOs, stdout). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../support/support.h"

typedef struct {
  char dir[64];
  char path[8][320];
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  strcpy(f->dir, "/tmp/tk-test-outfile-XXXXXX");
  if (!mkdtemp(f->dir)) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  int r = system(cmd);
  free(f);
  return r == 0 ? 0 : -1;
}

/* f->path[i] = DIR/name. */
static const char *at(fixture *f, int i, const char *name) {
  snprintf(f->path[i], sizeof f->path[i], "%s/%s", f->dir, name);
  return f->path[i];
}

static void put(const char *path, const char *text) {
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
}

static char *get(const char *path, char *buf, size_t n) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  size_t got = fread(buf, 1, n - 1, fp);
  buf[got] = '\0';
  fclose(fp);
  return buf;
}

/* How many names in dir start with '.' (temporaries), besides . and .. */
static int hidden(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d) closedir(d);
  return n;
}

static void test_all_replaced(void **state) {
  fixture *f = *state;
  put(at(f, 0, "a"), "old a");
  assert_int_equal(chmod(f->path[0], 0640), 0);
  struct stat before, after;
  assert_int_equal(stat(f->path[0], &before), 0);
  su_output outs[] = {{at(f, 0, "a"), "new a", 5}, {at(f, 1, "b"), "new b", 5}};
  su_buf err = {0};
  assert_true(su_write_outputs(outs, 2, NULL, 0, &err));
  char buf[64];
  assert_string_equal(get(f->path[0], buf, sizeof buf), "new a");
  assert_string_equal(get(f->path[1], buf, sizeof buf), "new b");
  assert_int_equal(stat(f->path[0], &after), 0);
  assert_true(after.st_ino != before.st_ino); /* replaced, not rewritten in place */
  assert_int_equal(after.st_mode & 0777, 0640);
  assert_int_equal(hidden(f->dir), 0);
  su_buf_free(&err);
}

/* The third output cannot be renamed (a directory is in the way): the first, which
 * existed, is put back (the very same file), the second, which did not, is gone. */
static void test_all_or_none(void **state) {
  fixture *f = *state;
  put(at(f, 0, "a"), "old a");
  assert_int_equal(mkdir(at(f, 2, "c"), 0755), 0);
  struct stat before, after;
  assert_int_equal(stat(f->path[0], &before), 0);
  su_output outs[] = {{f->path[0], "new a", 5}, {at(f, 1, "b"), "new b", 5},
                      {f->path[2], "new c", 5}};
  su_buf err = {0};
  assert_false(su_write_outputs(outs, 3, NULL, 0, &err));
  assert_non_null(strstr(su_buf_str(&err), "cannot write '"));
  assert_non_null(strstr(su_buf_str(&err), "/c': Is a directory"));
  char buf[64];
  assert_string_equal(get(f->path[0], buf, sizeof buf), "old a");
  assert_int_equal(stat(f->path[0], &after), 0);
  assert_true(after.st_ino == before.st_ino);
  assert_int_not_equal(access(f->path[1], F_OK), 0);
  assert_int_equal(hidden(f->dir), 0);
  su_buf_free(&err);
}

/* An input reached through a linked directory is still the input. */
static void test_input_by_inode(void **state) {
  fixture *f = *state;
  assert_int_equal(mkdir(at(f, 0, "src"), 0755), 0);
  put(at(f, 1, "src/k.tk"), "kernel");
  assert_int_equal(symlink("src", at(f, 2, "alias")), 0);
  const char *inputs[] = {f->path[1]};
  su_output out = {at(f, 3, "alias/k.tk"), "ptx", 3};
  su_buf err = {0};
  assert_false(su_write_outputs(&out, 1, inputs, 1, &err));
  assert_non_null(strstr(su_buf_str(&err), "it is the input file"));
  char buf[64];
  assert_string_equal(get(f->path[1], buf, sizeof buf), "kernel");
  su_buf_free(&err);
}

static void test_links(void **state) {
  fixture *f = *state;
  /* A relative link is resolved against its own directory, not the working one. */
  assert_int_equal(mkdir(at(f, 0, "d"), 0755), 0);
  assert_int_equal(symlink("../t", at(f, 1, "d/l")), 0);
  su_output out = {f->path[1], "through", 7};
  su_buf err = {0};
  assert_true(su_write_outputs(&out, 1, NULL, 0, &err));
  char buf[64];
  assert_string_equal(get(at(f, 2, "t"), buf, sizeof buf), "through");
  struct stat st;
  assert_int_equal(lstat(f->path[1], &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  /* A loop is an error, not a hang. */
  assert_int_equal(symlink("y", at(f, 3, "x")), 0);
  assert_int_equal(symlink("x", at(f, 4, "y")), 0);
  out.path = f->path[3];
  assert_false(su_write_outputs(&out, 1, NULL, 0, &err));
  assert_non_null(strstr(su_buf_str(&err), "symbolic links"));
  su_buf_free(&err);
}

/* A name near NAME_MAX still leaves room for its temporary's. */
static void test_long_name(void **state) {
  fixture *f = *state;
  char name[251];
  memset(name, 'n', 250);
  name[250] = '\0';
  su_output out = {at(f, 0, name), "x", 1};
  su_buf err = {0};
  assert_true(su_write_outputs(&out, 1, NULL, 0, &err));
  assert_int_equal(access(f->path[0], F_OK), 0);
  assert_int_equal(hidden(f->dir), 0);
  su_buf_free(&err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_all_replaced, setup, teardown),
    cmocka_unit_test_setup_teardown(test_all_or_none, setup, teardown),
    cmocka_unit_test_setup_teardown(test_input_by_inode, setup, teardown),
    cmocka_unit_test_setup_teardown(test_links, setup, teardown),
    cmocka_unit_test_setup_teardown(test_long_name, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
