/* tk_tune on the interpreter with a fake clock: it keeps the fastest configuration by
 * the median of its timed launches, returns it compiled (and working), remembers it on
 * disk per key so a second call times nothing, survives a corrupted cache, skips
 * configurations that fail, and reports bad arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "include/tk.h"

static const char *src =
    "kernel twice<BLOCK: i32 = 64>(x: *f32, n: i32) {\n"
    "    let o = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    store(x + o, load(x + o, o < n) * 2.0, o < n);\n"
    "}\n";

static char cache_dir[] = "/tmp/tk-tune-test-XXXXXX";

/* The fake clock: fake[config][rep] ms; counts its calls. */
static double fake[8][5];
static int timer_calls;
static double fake_timer(void *user, int config, int rep) {
  (void)user;
  timer_calls++;
  return fake[config][rep];
}

static tk_grid grid_of(void *user, const tk_kernel *k) {
  int n = *(int *)user;
  const char *name;
  tk_arg v;
  for (int i = 0; i < tk_kernel_num_cparams(k); i++)
    if (tk_kernel_cparam(k, i, &name, &v) == TK_OK && strcmp(name, "BLOCK") == 0)
      return (tk_grid){(unsigned)((n + v.v.i - 1) / v.v.i), 1, 1};
  return (tk_grid){1, 1, 1};
}

typedef struct {
  tk_context *ctx;
  tk_devptr x;
  int n;
  tk_arg args[2];
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  tk_context_options o = {TK_BACKEND_INTERP, 0};
  if (tk_context_create(&f->ctx, &o) != TK_OK) return -1;
  f->n = 1000;
  if (tk_malloc(f->ctx, &f->x, sizeof(float) * (size_t)f->n) != TK_OK) return -1;
  f->args[0] = tk_arg_ptr(f->x);
  f->args[1] = tk_arg_i32(f->n);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  tk_context_destroy(f->ctx);
  free(f);
  return 0;
}

static tk_define blocks[4][1] = {{{"BLOCK", "32"}}, {{"BLOCK", "64"}}, {{"BLOCK", "128"}}, {{"BLOCK", "256"}}};
static const tk_tune_config configs[4] = {
  {blocks[0], 1, 0, 0}, {blocks[1], 1, 2, 0}, {blocks[2], 1, 0, 0}, {blocks[3], 1, 8, 0},
};

static tk_status tune(fixture *f, const char *key, int *best, double *times, tk_module **m) {
  tk_tune_options t = {.key = key, .warmup = 1, .reps = 3, .timer = fake_timer};
  return tk_tune(f->ctx, src, strlen(src), "twice.tk", "twice", NULL, configs, 4, grid_of,
                 &f->n, NULL, f->args, 2, &t, best, times, m);
}

static void set_fake(const double (*v)[3], int n) {
  memset(fake, 0, sizeof fake);
  for (int i = 0; i < n; i++)
    for (int r = 0; r < 3; r++) fake[i][r] = v[i][r];
}

/* The median decides: config 0 has one slow outlier, config 2 is steadily fastest. */
static void test_picks_the_fastest_median(void **state) {
  fixture *f = *state;
  const double v[4][3] = {{9, 1, 1}, {3, 3, 3}, {0.5, 90, 0.6}, {2, 2, 2}};
  set_fake(v, 4);
  timer_calls = 0;
  int best = -1;
  double times[4];
  tk_module *m = NULL;
  assert_int_equal(tune(f, "n=1000 a", &best, times, &m), TK_OK);
  assert_int_equal(best, 2);
  assert_int_equal(timer_calls, 12);
  assert_true(times[0] == 1 && times[1] == 3 && times[2] == 0.6 && times[3] == 2);
  /* the module is the winner's: BLOCK=128, and it runs */
  tk_kernel *k = NULL;
  assert_int_equal(tk_module_get_kernel(m, "twice", &k), TK_OK);
  const char *name;
  tk_arg v0;
  assert_int_equal(tk_kernel_cparam(k, 0, &name, &v0), TK_OK);
  assert_string_equal(name, "BLOCK");
  assert_int_equal(v0.v.i, 128);
  float host[1000];
  for (int i = 0; i < 1000; i++) host[i] = (float)i;
  assert_int_equal(tk_memcpy_htod(f->ctx, f->x, host, sizeof host), TK_OK);
  assert_int_equal(tk_launch(k, grid_of(&f->n, k), NULL, f->args, 2), TK_OK);
  assert_int_equal(tk_memcpy_dtoh(f->ctx, host, f->x, sizeof host), TK_OK);
  for (int i = 0; i < 1000; i++) assert_true(host[i] == 2.0f * (float)i);
  tk_module_destroy(m);
}

/* The second call with the same key times nothing (the winner is on disk); another key
 * tunes again. */
static void test_winner_is_cached_per_key(void **state) {
  fixture *f = *state;
  const double v[4][3] = {{4, 4, 4}, {1, 1, 1}, {3, 3, 3}, {2, 2, 2}};
  set_fake(v, 4);
  int best = -1;
  tk_module *m = NULL;
  timer_calls = 0;
  assert_int_equal(tune(f, "n=1000 b", &best, NULL, &m), TK_OK);
  assert_int_equal(best, 1);
  assert_int_equal(timer_calls, 12);
  tk_module_destroy(m);
  /* a different clock now: a re-tune would pick config 3 */
  const double w[4][3] = {{4, 4, 4}, {5, 5, 5}, {3, 3, 3}, {2, 2, 2}};
  set_fake(w, 4);
  timer_calls = 0;
  double times[4];
  assert_int_equal(tune(f, "n=1000 b", &best, times, &m), TK_OK);
  assert_int_equal(best, 1);
  assert_int_equal(timer_calls, 0);
  assert_true(times[1] < 0); /* not timed */
  tk_module_destroy(m);
  assert_int_equal(tune(f, "n=1000 c", &best, NULL, &m), TK_OK);
  assert_int_equal(best, 3);
  assert_int_equal(timer_calls, 12);
  tk_module_destroy(m);
}

/* Garbage in every cache file: the entries are rejected and deleted, and tuning runs
 * again with the same result. */
static void test_corrupt_cache_is_a_miss(void **state) {
  fixture *f = *state;
  const double v[4][3] = {{4, 4, 4}, {1, 1, 1}, {3, 3, 3}, {2, 2, 2}};
  set_fake(v, 4);
  int best = -1;
  tk_module *m = NULL;
  assert_int_equal(tune(f, "n=1000 d", &best, NULL, &m), TK_OK);
  tk_module_destroy(m);
  DIR *d = opendir(cache_dir);
  assert_non_null(d);
  int corrupted = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
    FILE *fp = fopen(path, "r+b");
    if (!fp) continue;
    fseek(fp, 40, SEEK_SET);
    fputs("garbage garbage garbage", fp);
    fclose(fp);
    corrupted++;
  }
  closedir(d);
  assert_true(corrupted > 0);
  timer_calls = 0;
  assert_int_equal(tune(f, "n=1000 d", &best, NULL, &m), TK_OK);
  assert_int_equal(best, 1);
  assert_int_equal(timer_calls, 12);
  tk_module_destroy(m);
}

/* A configuration that does not compile is skipped; if all fail, the last failure is
 * the status, with a message naming it. */
static void test_failing_configs(void **state) {
  fixture *f = *state;
  tk_define bad[1] = {{"BLOCK", "48"}}; /* arange needs a power of two */
  tk_define nope[1] = {{"NOPE", "1"}};
  tk_tune_config cs[3] = {{bad, 1, 0, 0}, {blocks[1], 1, 0, 0}, {nope, 1, 0, 0}};
  const double v[3][3] = {{1, 1, 1}, {2, 2, 2}, {1, 1, 1}};
  set_fake(v, 3);
  tk_tune_options t = {.key = "e", .reps = 3, .timer = fake_timer, .no_cache = 1};
  int best = -1;
  double times[3];
  tk_module *m = NULL;
  assert_int_equal(tk_tune(f->ctx, src, strlen(src), "twice.tk", "twice", NULL, cs, 3, grid_of,
                           &f->n, NULL, f->args, 2, &t, &best, times, &m), TK_OK);
  assert_int_equal(best, 1);
  assert_true(times[0] < 0 && times[2] < 0);
  tk_module_destroy(m);
  tk_tune_config all_bad[2] = {{bad, 1, 0, 0}, {nope, 1, 0, 0}};
  assert_int_equal(tk_tune(f->ctx, src, strlen(src), "twice.tk", "twice", NULL, all_bad, 2,
                           grid_of, &f->n, NULL, f->args, 2, &t, &best, NULL, &m), TK_ERR_COMPILE);
  assert_null(m);
  assert_non_null(strstr(tk_last_error(f->ctx), "every configuration of 'twice' failed"));
  assert_non_null(strstr(tk_last_error(f->ctx), "NOPE=1"));
}

static void test_bad_arguments(void **state) {
  fixture *f = *state;
  int best;
  tk_module *m;
  tk_tune_options t = {.timer = fake_timer, .no_cache = 1};
  assert_int_equal(tk_tune(f->ctx, src, strlen(src), "t", "twice", NULL, configs, 0, grid_of,
                           &f->n, NULL, f->args, 2, &t, &best, NULL, &m), TK_ERR_INVALID);
  assert_int_equal(tk_tune(f->ctx, src, strlen(src), "t", "twice", NULL, configs, 4, NULL,
                           &f->n, NULL, f->args, 2, &t, &best, NULL, &m), TK_ERR_INVALID);
  assert_int_equal(tk_tune(f->ctx, src, strlen(src), "t", "nope", NULL, configs, 4, grid_of,
                           &f->n, NULL, f->args, 2, &t, &best, NULL, &m), TK_ERR_NOT_FOUND);
  /* wrong launch arguments fail every configuration */
  tk_arg wrong[2] = {tk_arg_ptr(f->x), tk_arg_f32(1)};
  assert_int_equal(tk_tune(f->ctx, src, strlen(src), "t", "twice", NULL, configs, 4, grid_of,
                           &f->n, NULL, wrong, 2, &t, &best, NULL, &m), TK_ERR_ARGS);
  assert_int_equal(tk_tune(NULL, src, strlen(src), "t", "twice", NULL, configs, 4, grid_of,
                           &f->n, NULL, f->args, 2, &t, &best, NULL, &m), TK_ERR_INVALID);
}

/* The real clock and the progress line: a smoke run (the interpreter's wall clock). */
static void test_real_clock_with_progress(void **state) {
  fixture *f = *state;
  tk_tune_options t = {.key = "f", .reps = 1, .warmup = 1, .progress = 1, .no_cache = 1};
  int best = -1;
  double times[4];
  tk_module *m = NULL;
  assert_int_equal(tk_tune(f->ctx, src, strlen(src), "twice.tk", "twice", NULL, configs, 4,
                           grid_of, &f->n, NULL, f->args, 2, &t, &best, times, &m), TK_OK);
  assert_true(best >= 0 && best < 4);
  for (int i = 0; i < 4; i++) assert_true(times[i] >= 0);
  tk_module_destroy(m);
}

int main(void) {
  if (!mkdtemp(cache_dir)) return 1;
  setenv("TK_CACHE_DIR", cache_dir, 1);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_picks_the_fastest_median),
    cmocka_unit_test(test_winner_is_cached_per_key),
    cmocka_unit_test(test_corrupt_cache_is_a_miss),
    cmocka_unit_test(test_failing_configs),
    cmocka_unit_test(test_bad_arguments),
    cmocka_unit_test(test_real_clock_with_progress),
  };
  int rc = cmocka_run_group_tests(tests, setup, teardown);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
  if (system(cmd) != 0) rc = rc ? rc : 1;
  return rc;
}
