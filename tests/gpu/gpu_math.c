/*
 * gpu_math — the math builtins and the random numbers of docs/language.md §6.4 and §6.9
 * on the CUDA backend, checked against the interpreter: every case of
 * tests/kernels/math_cases.h (math.tk and random.tk: each function on each dtype it
 * takes) on the same inputs,
 * special values and seeded random ones, at ragged sizes. Bit for bit where the language
 * promises it (round, rint, trunc, sqrt_rn, copysign, div_rn, fdiv with ieee_rounding,
 * isnan, isinf, isfinite, umulhi, cdiv, randint, rand), within the stated bound
 * elsewhere (pow, log1p, expm1 and fdiv in ulps, randn absolutely); the bounds are the
 * case table's.
 *
 * The host test compiles both files through the GPU back end (no device needed). Without
 * a device the device tests are skipped and the program exits 77; with
 * TK_GPU_TESTS_SELFCHECK=1 a second interpreter stands in for the device. The seed is
 * printed; TK_TEST_SEED replays it. With TK_GPU_MATH_DUMP=DIR the device's outputs of the
 * random cases at the largest size go to DIR/CASE.OUTPUT.bin, for tests/gpu/
 * triton_random.py to hold against Triton's tl.randint, tl.rand and tl.randn (and
 * tests/kernels/triton_random_ref.py compare DIR against its emulation of them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tests/kernels/math_cases.h"

static gh_harness H; /* the one fixture the whole program shares: contexts are expensive */

static void path_of(const mc_case *c, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%s", TK_KERNELS_DIR, c->file);
}

static tk_kernel *compile(tk_context *ctx, const mc_case *c) {
  char path[1024];
  path_of(c, path, sizeof path);
  gh_source src = {c->file, NULL, path, c->kernel};
  return gh_compile(&H, ctx, &src, NULL);
}

static void run(tk_context *ctx, tk_kernel *k, const mc_case *c, long n, void *const in[2],
                void *out[MC_MAX_OUTS]) {
  tk_status s = mc_run(ctx, k, c, n, in, out);
  if (s != TK_OK)
    fail_msg("%s (n = %ld) on %s: %s: %s", c->name, n, gh_ctx_name(&H, ctx), tk_status_name(s),
             tk_last_error(ctx));
}

static void dump(const mc_case *c, long n, void *const out[MC_MAX_OUTS]) {
  const char *dir = getenv("TK_GPU_MATH_DUMP");
  if (!dir || c->family < MC_RANDOM32) return;
  for (int o = 0; o < c->nout; o++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%d.bin", dir, c->name, o);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(out[o], mc_size(c->out[o]), (size_t)n, f) != (size_t)n)
      fail_msg("cannot write %s", path);
    fclose(f);
  }
}

static void test_case(void **state) {
  const mc_case *c = *state;
  if (!H.cuda) skip();
  static const long sizes[] = {1, 1000, 3 * 4096 + 17, 100003};
  tk_kernel *kc = compile(H.cuda, c), *ki = compile(H.interp, c);
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    long n = sizes[s];
    void *in[2] = {NULL, NULL}, *gpu[MC_MAX_OUTS], *ref[MC_MAX_OUTS];
    mc_inputs(c, n, gh_rng_next(&H), in);
    run(H.cuda, kc, c, n, in, gpu);
    run(H.interp, ki, c, n, in, ref);
    char msg[512];
    for (int o = 0; o < c->nout; o++)
      if (mc_compare(c, o, n, gpu[o], ref[o], c->gpu[o], in, msg, sizeof msg) >= 0)
        fail_msg("n = %ld: cuda against the interpreter: %s", n, msg);
    if (s + 1 == sizeof sizes / sizeof *sizes) dump(c, n, gpu);
    for (int o = 0; o < c->nout; o++) free(gpu[o]), free(ref[o]);
    free(in[0]);
    free(in[1]);
  }
}

/* ---- host-only: both files through the GPU back end ------------------------------------- */

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot read %s", path);
  su_buf b = {0};
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) su_buf_put(&b, chunk, n);
  fclose(f);
  su_buf_str(&b);
  return b.data;
}

static void test_files_compile_to_ptx(void **state) {
  (void)state;
  for (int i = 0; i < mc_ncases; i++) {
    const mc_case *c = &mc_cases[i];
    if (i > 0 && strcmp(c->file, mc_cases[i - 1].file) == 0) continue;
    char path[1024];
    path_of(c, path, sizeof path);
    char *text = read_text(path);
    su_buf ptx = {0};
    bool ok = gh_emit_ptx(c->file, text, NULL, &ptx);
    free(text);
    if (!ok) fail_msg("%s: the GPU back end rejected it (diagnostics above)", c->file);
    for (int j = 0; j < mc_ncases; j++)
      if (strcmp(mc_cases[j].file, c->file) == 0) {
        char entry[96];
        snprintf(entry, sizeof entry, ".entry %s(", mc_cases[j].kernel);
        if (!strstr(su_buf_str(&ptx), entry)) fail_msg("%s: no %s in the PTX", c->file, entry);
      }
    su_buf_free(&ptx);
  }
}

int main(void) {
  gh_init(&H, "gpu_math");
  enum { MAX_CASES = 64 };
  if (mc_ncases > MAX_CASES) {
    fprintf(stderr, "gpu_math: raise MAX_CASES to %d\n", mc_ncases);
    return 1;
  }
  const struct CMUnitTest host[] = {cmocka_unit_test(test_files_compile_to_ptx)};
  struct CMUnitTest dev[MAX_CASES];
  for (int i = 0; i < mc_ncases; i++)
    dev[i] = (struct CMUnitTest){mc_cases[i].name, test_case, NULL, NULL, (void *)&mc_cases[i]};
  return gh_run(&H, host, 1, dev, (size_t)mc_ncases);
}
