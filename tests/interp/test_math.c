/* The math builtins and the random numbers of docs/language.md §6.4, §6.9 on the interpreter:
 * every case of tests/kernels/math_cases.h, at ragged sizes, against its C reference, bit
 * for bit (NaNs of any payload alike). The random cases also check the distribution a
 * little: rand in [0, 1) with the mean of a uniform, randn with the mean and variance of a
 * normal. At the largest size they are also held to Triton's numbers: the golden values of
 * tests/kernels/triton_random.golden, which tests/kernels/triton_random_ref.py (an
 * emulation of Triton 3.6's random module) writes and checks. TK_TEST_SEED in the
 * environment changes the inputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/kernels/math_cases.h"

static tk_context *ctx;
static uint64_t seed;

static int setup(void **state) {
  (void)state;
  const char *s = getenv("TK_TEST_SEED");
  seed = s ? strtoull(s, NULL, 0) : 0x2545f4914f6cdd1dull;
  tk_context_options o = {TK_BACKEND_INTERP, 0};
  return tk_context_create(&ctx, &o) == TK_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  tk_context_destroy(ctx);
  return 0;
}

static void ok(tk_status s) {
  if (s != TK_OK) fail_msg("%s: %s", tk_status_name(s), tk_last_error(ctx));
}

static tk_kernel *compile(tk_module **m, const mc_case *c) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", TK_KERNELS_DIR, c->file);
  tk_compile_options o = {.no_cache = 1};
  ok(tk_module_compile_file(ctx, m, path, &o));
  tk_kernel *k;
  ok(tk_module_get_kernel(*m, c->kernel, &k));
  return k;
}

/* Mean and variance of n floats. */
static void moments(const float *v, long n, double *mean, double *var) {
  double s = 0, s2 = 0;
  for (long i = 0; i < n; i++) s += v[i], s2 += (double)v[i] * v[i];
  *mean = s / n;
  *var = s2 / n - *mean * *mean;
}

static void check_distribution(const mc_case *c, long n, void *out[MC_MAX_OUTS]) {
  const float *u = out[1];
  for (long i = 0; i < n; i++)
    if (!(u[i] >= 0 && u[i] < 1)) fail_msg("%s: rand at %ld is %.9g, not in [0, 1)", c->name, i, u[i]);
  /* narrow offsets repeat every 256 values: too few distinct ones for the moments */
  if (n < 1000 || c->family == MC_NARROW) return;
  double mean, var;
  moments(u, n, &mean, &var);
  if (mean < 0.45 || mean > 0.55) fail_msg("%s: the mean of rand is %g", c->name, mean);
  if (c->nout < 3) return;
  moments(out[2], n, &mean, &var);
  if (mean < -0.1 || mean > 0.1 || var < 0.9 || var > 1.1)
    fail_msg("%s: randn has mean %g and variance %g", c->name, mean, var);
}

/* The interpreter's random outputs (n of them) against the golden rows of case c: randint
 * and rand's bits exactly, randn within the bound Triton's own GPU results are held to. */
static void check_golden(const mc_case *c, long n, void *out[MC_MAX_OUTS]) {
  const char *path = TK_KERNELS_DIR "/triton_random.golden";
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot read %s", path);
  char line[256], name[64], seed[32], base[32];
  bool in = false;
  int rows = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    if (sscanf(line, "case %63s %31s %31s", name, seed, base) == 3) {
      in = strcmp(name, c->name) == 0;
      if (in && (strtoull(seed, NULL, 10) != (uint64_t)c->seed ||
                 strtoull(base, NULL, 10) != (uint64_t)c->base))
        fail_msg("%s: the golden values are for seed %s and base %s", c->name, seed, base);
      continue;
    }
    if (!in) continue;
    long i;
    unsigned w, u;
    double g = 0;
    int k = sscanf(line, "%ld %x %x %lf", &i, &w, &u, &g);
    if (k != c->nout + 1 || i < 0 || i >= n) fail_msg("%s: bad golden row: %s", path, line);
    uint32_t gw = ((const uint32_t *)out[0])[i], gu;
    memcpy(&gu, (const float *)out[1] + i, sizeof gu);
    if (gw != w || gu != u)
      fail_msg("%s [%ld]: randint 0x%08x, rand bits 0x%08x; Triton's: 0x%08x, 0x%08x", c->name,
               i, gw, gu, w, u);
    if (c->nout > 2) {
      double gn = ((const float *)out[2])[i];
      if (!(fabs(gn - g) <= 1e-5)) fail_msg("%s [%ld]: randn %.9g; Triton's %.9g", c->name, i, gn, g);
    }
    rows++;
  }
  fclose(f);
  if (rows == 0) fail_msg("%s: no golden values in %s", c->name, path);
}

/* One test a case (*state): every size, every output, against the reference. */
static void test_case(void **state) {
  const mc_case *c = *state;
  static const long sizes[] = {1, MC_BLOCK + 1, 3000};
  tk_module *m;
  tk_kernel *k = compile(&m, c);
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    long n = sizes[s];
    void *in[2] = {NULL, NULL}, *got[MC_MAX_OUTS], *want[MC_MAX_OUTS];
    mc_inputs(c, n, seed, in);
    ok(mc_run(ctx, k, c, n, in, got));
    mc_reference(c, n, in, want);
    char msg[512];
    for (int o = 0; o < c->nout; o++)
      if (mc_compare(c, o, n, got[o], want[o], (mc_tol){0, 0}, in, msg, sizeof msg) >= 0)
        fail_msg("n = %ld: %s", n, msg);
    if (c->family >= MC_RANDOM32) check_distribution(c, n, got);
    if (c->family >= MC_RANDOM32 && s + 1 == sizeof sizes / sizeof *sizes) check_golden(c, n, got);
    for (int o = 0; o < c->nout; o++) free(got[o]), free(want[o]);
    free(in[0]);
    free(in[1]);
  }
  tk_module_destroy(m);
}

int main(void) {
  enum { MAX_CASES = 64 };
  struct CMUnitTest tests[MAX_CASES];
  if (mc_ncases > MAX_CASES) {
    fprintf(stderr, "test_math: raise MAX_CASES to %d\n", mc_ncases);
    return 1;
  }
  for (int i = 0; i < mc_ncases; i++)
    tests[i] = (struct CMUnitTest){.name = mc_cases[i].name, .test_func = test_case,
                                   .initial_state = (void *)&mc_cases[i]};
  return _cmocka_run_group_tests("interp_math", tests, (size_t)mc_ncases, setup, teardown);
}
