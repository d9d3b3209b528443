/*
 * job.h — the harness the run functions of cases_*.c are written against (internal to
 * samples/check). A job is one run of one case at one size. Its first failure, of an API
 * call or of a comparison, is sticky: later uploads, launches and comparisons do nothing,
 * so a run function reads as a straight line and checks ck_failed only before it compares.
 * Host and device buffers are owned by the job and freed by ck_run.
 */
#ifndef CK_JOB_H
#define CK_JOB_H

#include "samples/check/cases.h"

enum { CK_MAX_BUFFERS = 16 };

struct ck_job {
  tk_context *ctx;
  tk_kernel *kernel;
  tk_kernel *kernel2; /* the case's kernel2, or NULL */
  const ck_case *c;
  ck_size size;
  uint64_t rng;
  ck_result res;
  bool failed;
  void *host[CK_MAX_BUFFERS];
  int nhost;
  tk_devptr dev[CK_MAX_BUFFERS];
  int ndev;
};

/* Tolerances, |got - want| <= atol + rtol * |want| against a double reference. f32
 * results of plain arithmetic and sequential or tree sums; f32 results of exp, log, cos,
 * sin, tanh, erf, loose enough for the GPU's hardware approximations (cos/sin within
 * 2^-20.9 absolute on [-pi, pi], ex2 within 2^-22 relative); f16 results, rounded once
 * more to 11 bits. */
#define CK_F32_RTOL 2e-5
#define CK_F32_ATOL 1e-6
#define CK_APPROX_RTOL 2e-5
#define CK_APPROX_ATOL 2e-5
#define CK_F16_RTOL 2e-3
#define CK_F16_ATOL 1e-3

/* True once an API call or a comparison of job has failed. */
static inline bool ck_failed(const ck_job *job) { return job->failed; }

/* A uniform double in [lo, hi) from the job's generator. */
double ck_uniform(ck_job *job, double lo, double hi);

/* n zeroed host elements of elem bytes, owned by the job; NULL only after a failure (an
 * allocation failure is one). */
void *ck_host(ck_job *job, size_t n, size_t elem);
/* n uniform values in [lo, hi), owned by the job. */
float *ck_random_f32(ck_job *job, size_t n, double lo, double hi);
_Float16 *ck_random_f16(ck_job *job, size_t n, double lo, double hi);

/* A device copy of bytes at host, owned by the job (0 after a failure). */
tk_devptr ck_upload(ck_job *job, const void *host, size_t bytes);
/* Copies bytes of p back to host. */
void ck_download(ck_job *job, void *host, tk_devptr p, size_t bytes);
/* Launches the job's kernel. */
void ck_launch(ck_job *job, tk_grid grid, const tk_arg *args, int nargs);
/* Launches k (the job's kernel2, say), after whatever the job launched before. */
void ck_launch_kernel(ck_job *job, tk_kernel *k, tk_grid grid, const tk_arg *args, int nargs);

/* Checks got against want; on a mismatch records "what[i]: got .., want .." and returns
 * false. Also tracks the largest error seen. */
bool ck_close(ck_job *job, const char *what, size_t i, double got, double want, double rtol,
              double atol);

/* bf16 as the top half of an f32, and an f32 rounded to it (to nearest, ties to even). */
float ck_bf16_to_f32(uint16_t h);
uint16_t ck_f32_to_bf16(float f);

/* n random 16-bit values in [lo, hi), bf16 when bf, else f16 (owned by the job), and
 * element i of such an array as a double. */
uint16_t *ck_random_half(ck_job *job, size_t n, bool bf, double lo, double hi);
double ck_half_val(const uint16_t *p, size_t i, bool bf);

/* ceil(a / b) as a grid dimension. */
static inline unsigned ck_cdiv(long a, long b) { return (unsigned)((a + b - 1) / b); }

/* The run functions, one per group of samples (cases_*.c). */
void ck_run_vadd(ck_job *job);
void ck_run_coscos(ck_job *job);
void ck_run_gelu(ck_job *job);
void ck_run_dropout(ck_job *job);
void ck_run_histogram(ck_job *job);
void ck_run_softmax(ck_job *job);
void ck_run_row_sum(ck_job *job);
void ck_run_norm(ck_job *job);
void ck_run_cross_entropy(ck_job *job);
void ck_run_transpose(ck_job *job);
void ck_run_matmul(ck_job *job);
void ck_run_matmul_fp8(ck_job *job);
void ck_run_attention(ck_job *job);
void ck_run_decode(ck_job *job);

#endif
