/* job.c — the harness of one run: a seeded generator, buffers the job owns, API calls
 * whose first failure is recorded and stops the rest, and comparisons. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/check/job.h"

/* Records the first failure; later ones are consequences of it. */
static void fail(ck_job *job, ck_status st, tk_status api, const char *fmt, ...) {
  if (job->failed) return;
  job->failed = true;
  job->res.status = st;
  job->res.api = api;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(job->res.msg, sizeof job->res.msg, fmt, ap);
  va_end(ap);
}

/* Records an API failure with the context's message. */
static bool api_ok(ck_job *job, tk_status s, const char *call) {
  if (s == TK_OK) return true;
  fail(job, CK_API_ERROR, s, "%s: %s: %s", call, tk_status_name(s), tk_last_error(job->ctx));
  return false;
}

/* xorshift64: small, and the same sequence on every platform for a given seed. */
double ck_uniform(ck_job *job, double lo, double hi) {
  uint64_t x = job->rng;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  job->rng = x;
  return lo + (hi - lo) * (double)(x >> 11) / 9007199254740992.0;
}

void *ck_host(ck_job *job, size_t n, size_t elem) {
  if (job->failed) return NULL;
  if (job->nhost == CK_MAX_BUFFERS) {
    fail(job, CK_API_ERROR, TK_ERR_MEMORY, "too many host buffers in one run");
    return NULL;
  }
  void *p = calloc(n ? n : 1, elem);
  if (!p) {
    fail(job, CK_API_ERROR, TK_ERR_MEMORY, "out of host memory (%zu elements)", n);
    return NULL;
  }
  return job->host[job->nhost++] = p;
}

float *ck_random_f32(ck_job *job, size_t n, double lo, double hi) {
  float *v = ck_host(job, n, sizeof *v);
  for (size_t i = 0; v && i < n; i++) v[i] = (float)ck_uniform(job, lo, hi);
  return v;
}

_Float16 *ck_random_f16(ck_job *job, size_t n, double lo, double hi) {
  _Float16 *v = ck_host(job, n, sizeof *v);
  for (size_t i = 0; v && i < n; i++) v[i] = (_Float16)ck_uniform(job, lo, hi);
  return v;
}

tk_devptr ck_upload(ck_job *job, const void *host, size_t bytes) {
  if (job->failed) return 0;
  if (job->ndev == CK_MAX_BUFFERS) {
    fail(job, CK_API_ERROR, TK_ERR_MEMORY, "too many device buffers in one run");
    return 0;
  }
  tk_devptr p = 0;
  if (!api_ok(job, tk_malloc(job->ctx, &p, bytes), "tk_malloc")) return 0;
  job->dev[job->ndev++] = p;
  api_ok(job, tk_memcpy_htod(job->ctx, p, host, bytes), "tk_memcpy_htod");
  return p;
}

void ck_download(ck_job *job, void *host, tk_devptr p, size_t bytes) {
  if (!job->failed) api_ok(job, tk_memcpy_dtoh(job->ctx, host, p, bytes), "tk_memcpy_dtoh");
}

void ck_launch(ck_job *job, tk_grid grid, const tk_arg *args, int nargs) {
  ck_launch_kernel(job, job->kernel, grid, args, nargs);
}

void ck_launch_kernel(ck_job *job, tk_kernel *k, tk_grid grid, const tk_arg *args, int nargs) {
  if (!job->failed) api_ok(job, tk_launch(k, grid, NULL, args, nargs), "tk_launch");
}

bool ck_close(ck_job *job, const char *what, size_t i, double got, double want, double rtol,
              double atol) {
  if (job->failed) return false;
  double err = fabs(got - want);
  /* Written so that a NaN on either side fails. */
  if (err <= atol + rtol * fabs(want)) {
    if (err > job->res.max_err) job->res.max_err = err;
    return true;
  }
  fail(job, CK_MISMATCH, TK_OK, "%s[%zu]: got %.9g, want %.9g", what, i, got, want);
  return false;
}

float ck_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t ck_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

uint16_t *ck_random_half(ck_job *job, size_t n, bool bf, double lo, double hi) {
  uint16_t *v = ck_host(job, n, 2);
  for (size_t i = 0; v && i < n; i++) {
    float x = (float)ck_uniform(job, lo, hi);
    if (bf) {
      v[i] = ck_f32_to_bf16(x);
    } else {
      _Float16 h = (_Float16)x;
      memcpy(&v[i], &h, 2);
    }
  }
  return v;
}

double ck_half_val(const uint16_t *p, size_t i, bool bf) {
  if (bf) return ck_bf16_to_f32(p[i]);
  _Float16 h;
  memcpy(&h, &p[i], 2);
  return h;
}
