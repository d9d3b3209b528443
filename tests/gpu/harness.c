/*
 * The GPU test programs' shared harness (see harness.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "driver/driver.h"
#include "harness.h"

/* ---- run: seed, contexts, exit status -------------------------------------------------- */

void gh_init(gh_harness *h, const char *prog) {
  memset(h, 0, sizeof *h);
  h->prog = prog;
  const char *seed = getenv("TK_TEST_SEED");
  h->seed = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
  h->first_seed = h->seed;
  printf("%s: seed %llu (TK_TEST_SEED=%llu replays it)\n", prog, (unsigned long long)h->seed,
         (unsigned long long)h->seed);
}

/* Creates h's contexts (see gh_run); false when not even the reference interpreter can be
 * created. */
static bool open_contexts(gh_harness *h) {
  if (tk_context_create(&h->cuda, &(tk_context_options){TK_BACKEND_CUDA, 0}) != TK_OK) {
    printf("skipped: no CUDA device\n  (%s)\n", tk_last_error(NULL));
    h->cuda = NULL;
    /* Checks the harness itself (the case tables, the embedded kernels) on a machine
     * without a GPU, by comparing the interpreter with a second interpreter. */
    const char *self = getenv("TK_GPU_TESTS_SELFCHECK");
    if (self && *self && strcmp(self, "0") != 0) {
      printf("TK_GPU_TESTS_SELFCHECK: the interpreter stands in for the device\n");
      if (tk_context_create(&h->cuda, &(tk_context_options){TK_BACKEND_INTERP, 0}) != TK_OK)
        h->cuda = NULL;
    }
  }
  if (tk_context_create(&h->interp, &(tk_context_options){TK_BACKEND_INTERP, 0}) != TK_OK) {
    fprintf(stderr, "%s: no interpreter context: %s\n", h->prog, tk_last_error(NULL));
    tk_context_destroy(h->cuda);
    h->cuda = h->interp = NULL;
    return false;
  }
  return true;
}

bool gh_real_device(const gh_harness *h) {
  return h->cuda && tk_context_backend(h->cuda) == TK_BACKEND_CUDA;
}

int gh_run(gh_harness *h, const struct CMUnitTest *host, size_t nhost,
           const struct CMUnitTest *dev, size_t ndev) {
  int failed = _cmocka_run_group_tests("host", host, nhost, NULL, NULL);
  if (!open_contexts(h)) return 1;
  /* TK_GPU_FILTER=PATTERN runs only the device cases it names (cmocka's wildcards) */
  const char *only = getenv("TK_GPU_FILTER");
  if (only && *only) cmocka_set_test_filter(only);
  failed += _cmocka_run_group_tests("device", dev, ndev, NULL, NULL);
  bool device = gh_real_device(h);
  tk_context_destroy(h->cuda);
  tk_context_destroy(h->interp);
  h->cuda = h->interp = NULL;
  /* 77 is the exit status meson (and automake) read as "skipped": without a device the
   * device tests did not run, whatever the self-check showed */
  return failed ? 1 : device ? 0 : 77;
}

uint64_t gh_rng_next(gh_harness *h) {
  uint64_t z = (h->seed += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- compiling a case ------------------------------------------------------------------ */

const char *gh_ctx_name(const gh_harness *h, const tk_context *ctx) {
  return ctx == h->cuda ? "cuda" : "interpreter";
}

void gh_define_int(gh_defines *d, const char *name, int v) {
  SU_ASSERT(d->n < GH_MAX_DEFINES);
  d->name[d->n] = name;
  snprintf(d->value[d->n], sizeof d->value[d->n], "%d", v);
  d->n++;
}

void gh_define_str(gh_defines *d, const char *name, const char *v) {
  SU_ASSERT(d->n < GH_MAX_DEFINES);
  d->name[d->n] = name;
  snprintf(d->value[d->n], sizeof d->value[d->n], "%s", v);
  d->n++;
}

static tk_kernel *compile_with(const gh_harness *h, tk_context *ctx, const gh_source *src,
                               const gh_defines *d, const tk_compile_options *numerics,
                               int no_fuse) {
  tk_define defs[GH_MAX_DEFINES];
  int n = d ? d->n : 0;
  for (int i = 0; i < n; i++) defs[i] = (tk_define){d->name[i], d->value[i]};
  tk_compile_options o = {.defines = defs, .ndefines = n, .opt_level = 3, .no_fuse = no_fuse};
  if (numerics) {
    o.dot_precision = numerics->dot_precision;
    o.accurate_math = numerics->accurate_math;
    o.fp_contract = numerics->fp_contract;
    o.arch = numerics->arch;
    o.fuse_keep = numerics->fuse_keep;
  }
  tk_module *m = NULL;
  tk_status s = src->text
                  ? tk_module_compile(ctx, &m, src->text, strlen(src->text), src->name, &o)
                  : tk_module_compile_file(ctx, &m, src->path, &o);
  if (s != TK_OK)
    fail_msg("%s: compiling on %s: %s\n%s", src->name, gh_ctx_name(h, ctx), tk_status_name(s),
             tk_last_error(ctx));
  tk_kernel *k = NULL;
  if (tk_module_get_kernel(m, src->kernel, &k) != TK_OK) fail_msg("%s", tk_last_error(ctx));
  return k;
}

tk_kernel *gh_compile(const gh_harness *h, tk_context *ctx, const gh_source *src,
                      const gh_defines *d) {
  return compile_with(h, ctx, src, d, NULL, 0);
}

tk_kernel *gh_compile_with(const gh_harness *h, tk_context *ctx, const gh_source *src,
                           const gh_defines *d, const tk_compile_options *numerics) {
  return compile_with(h, ctx, src, d, numerics, 0);
}

tk_kernel *gh_compile_nofuse(const gh_harness *h, tk_context *ctx, const gh_source *src,
                             const gh_defines *d) {
  return compile_with(h, ctx, src, d, NULL, 1);
}

bool gh_emit_ptx(const char *name, const char *text, const gh_defines *d, su_buf *ptx) {
  su_arena *a = su_arena_new();
  su_diags diags;
  su_diags_init(&diags, a, NULL);
  sema_define defs[GH_MAX_DEFINES];
  int n = d ? d->n : 0;
  for (int i = 0; i < n; i++) defs[i] = (sema_define){d->name[i], d->value[i]};
  drv_options o = {.defines = defs, .ndefines = n, .opt_level = 3, .arch = "sm_90a"};
  su_source *src = su_source_new(a, name, text, strlen(text));
  ir_module *m = drv_compile(a, src, &o, &diags);
  bool ok = m && drv_codegen(m, &o, CG_PTX, ptx, &diags) && !diags.nerrors;
  if (!ok) {
    su_buf msg = {0};
    su_diags_render(&diags, &msg);
    fprintf(stderr, "%s:\n%s\n%s", name, text, su_buf_str(&msg));
    su_buf_free(&msg);
  }
  su_arena_free(a);
  return ok;
}

/* ---- elements -------------------------------------------------------------------------- */

size_t gh_dtype_size(tk_dtype t) {
  switch (t) {
  case TK_I1: case TK_I8: case TK_U8: case TK_F8E4M3: case TK_F8E5M2: return 1;
  case TK_I16: case TK_U16: case TK_F16: case TK_BF16: return 2;
  case TK_I32: case TK_U32: case TK_F32: return 4;
  default: return 8;
  }
}

float gh_half_to_float(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? ldexpf((float)m, -24)
          : e == 31 ? (m ? NAN : INFINITY)
                    : ldexpf((float)(m | 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}

uint16_t gh_float_to_half(float f) {
  uint16_t sign = f < 0 ? 0x8000 : 0;
  f = fabsf(f);
  if (f == 0) return sign;
  int e;
  float m = frexpf(f, &e); /* f = m * 2^e, m in [0.5, 1) */
  return (uint16_t)(sign | (e + 14) << 10 | ((int)ldexpf(m, 11) & 1023));
}

float gh_bf16_to_float(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t gh_float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

double gh_elem_value(tk_dtype t, const void *p) {
  switch (t) {
  case TK_F32: { float f; memcpy(&f, p, 4); return f; }
  case TK_F64: { double f; memcpy(&f, p, 8); return f; }
  case TK_F16: { uint16_t h; memcpy(&h, p, 2); return gh_half_to_float(h); }
  case TK_BF16: { uint16_t h; memcpy(&h, p, 2); return gh_bf16_to_float(h); }
  case TK_F8E4M3: case TK_F8E5M2: return ir_fp8_value(t, *(const uint8_t *)p);
  default: SU_UNREACHABLE();
  }
}

long gh_cdiv(long a, long b) { return (a + b - 1) / b; }
