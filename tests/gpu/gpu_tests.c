/*
 * gpu_tests — the CUDA backend checked against the interpreter, the reference semantics.
 *
 * Every case runs one kernel on both backends with the same fresh random inputs (the seed
 * is printed; TK_TEST_SEED replays it), outputs poisoned beforehand with the same bytes,
 * at several sizes including ragged ones, and compares every buffer afterwards: exactly
 * for integers, within a few ulps for floats (libdevice and libm, and tree and sequential
 * reductions, may differ in the last bits).
 *
 * Without a device, the device tests are reported as skipped (cmocka's skip()), never as
 * passes, and the program exits 77 (meson's "skipped") unless a host test failed; the
 * host-only tests (no-driver errors, PTX signatures) always run. With
 * TK_GPU_TESTS_SELFCHECK=1 and no device, a second interpreter context stands in for the
 * device, which checks the harness (not the GPU) anywhere (harness.c does both).
 * Run from the repository root (samples are read from $TK_SAMPLES_DIR, else ./samples).
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
#include <unistd.h>
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include "fake_cuda.h"
#include "harness.h"
#include "runtime/cache.h"
#include "runtime/ptx_sig.h"

/* ---- the cases ----------------------------------------------------------------------- */

/* What a kernel parameter is for. Buffers (IN, OUT, ZERO, TGT) have an element type and
 * a size; scalars take a value from the run's shape. */
typedef enum { IN, OUT, ZERO, TGT, S_N, S_ROWS, S_STRIDE, S_EPS, S_SCALE, S_NSCALE } role;
typedef enum { SZ_N, SZ_ROWS, SZ_ROWS2, SZ_MAT, SZ_16 } sizing;

typedef struct {
  role r;
  tk_dtype t;
  sizing z;
} param_spec;

typedef struct {
  const char *name;
  const char *file;   /* under the samples directory, or NULL: source below */
  const char *source;
  const char *kernel;
  bool per_row;       /* grid (rows): one program per row; else (cdiv(n, BLOCK)) */
  bool any_n;         /* a row kernel that loops over chunks (n may exceed BLOCK) */
  int block;          /* BLOCK, set with a define to keep the interpreter quick */
  int nparams;
  param_spec p[10];
  int rows_per_prog;  /* per_row with blocks of rows: grid (cdiv(rows, rows_per_prog)) */
  bool wide_rows;     /* also runs rows long enough for several of fusion's chunks */
} gpu_case;

static const char IOPS_TK[] =
  "kernel iops<BLOCK: i32 = 256>(x: *i32, y: *i32, z: *i32, n: i32) {\n"
  "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
  "    let m = offs < n;\n"
  "    let a = load(x + offs, m);\n"
  "    let b = load(y + offs, m, 1);\n"
  "    store(z + offs, ((a * 3 + b) ^ (a >> 2)) - minimum(a, b) + a / b + a % b, m);\n"
  "}\n";

static const char HIST_TK[] =
  "kernel hist<BLOCK: i32 = 256>(x: *i32, counts: *i32, n: i32) {\n"
  "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
  "    let m = offs < n;\n"
  "    atomic_add(counts + (load(x + offs, m) & 15), 1, m);\n"
  "}\n";

/* Scores scaled by a run-time scale: a positive one is specialized on (expfold takes the
 * max before the scale and folds it into exp2's fma), a negative one is not. */
static const char SCALED_TK[] =
  "kernel scaled_softmax<BLOCK: i32 = 1024>(x: *f32, y: *f32, stride: i64, n: i32, scale: f32) {\n"
  "    let row = program_id(0) as i64;\n"
  "    let c = arange(0, BLOCK);\n"
  "    let ok = c < n;\n"
  "    let s = where(ok, load(x + row * stride + c, ok, 0.0) * scale, -inf);\n"
  "    let p = exp(s - max(s, 0));\n"
  "    store(y + row * stride + c, p / sum(p, 0), ok);\n"
  "}\n";

static const char OTHER_TK[] =
  "kernel masked_other<BLOCK: i32 = 256>(x: *f32, y: *f32, n: i32) {\n"
  "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
  "    let v = load(x + offs, offs < n - 3, -1.5);\n"
  "    store(y + offs, exp(v) * 2.0 + sqrt(abs(v)), offs < n);\n"
  "}\n";

/* A wide argmax (8192 values over 4 warps: fused into a chunk loop carrying each lane's
 * best value and position) next to a narrow argmin of the same row. */
static const char ARGMAX_TK[] =
  "@launch(warps = 4)\n"
  "kernel argmax_rows<BLOCK: i32 = 8192>(x: *f32, out: *i32, stride: i64, n: i32) {\n"
  "    let row = program_id(0) as i64;\n"
  "    let c = arange(0, BLOCK);\n"
  "    let v = load(x + row * stride + c, c < n, -inf);\n"
  "    store(out + 2 * row, argmax(v, 0));\n"
  "    let s = arange(0, 128);\n"
  "    store(out + 2 * row + 1, argmin(load(x + row * stride + s, s < n, inf), 0));\n"
  "}\n";

/* cumsum over a wide row (8192 over 4 warps: a chunk loop carrying the running total),
 * f32 and i32; the f32 inputs are multiples of 2^-8, so every prefix is exact in any
 * order and the scans must agree bit for bit. */
static const char CUMSUM_TK[] =
  "@launch(warps = 4)\n"
  "kernel cumsum_rows<BLOCK: i32 = 8192>(x: *f32, xi: *i32, y: *f32, yi: *i32, stride: i64,\n"
  "                                       n: i32) {\n"
  "    let row = program_id(0) as i64;\n"
  "    let c = arange(0, BLOCK);\n"
  "    let m = c < n;\n"
  "    store(y + row * stride + c, cumsum(load(x + row * stride + c, m, 0.0), 0), m);\n"
  "    store(yi + row * stride + c, cumsum(load(xi + row * stride + c, m, 0), 0), m);\n"
  "}\n";

/* softmax over a 32768-wide row at 16 warps: the 4-CTA cluster keep with one chunk a CTA
 * (chunk loops that run once; the asynchronous fill of a one-slot buffer). */
static const char SOFTMAX16_TK[] =
  "@launch(warps = 16)\n"
  "kernel softmax16<BLOCK: i32 = 32768>(x: *f32, y: *f32, stride: i64, n: i32) {\n"
  "    let row = program_id(0) as i64;\n"
  "    let cols = arange(0, BLOCK);\n"
  "    let v = load(x + row * stride + cols, cols < n, -inf);\n"
  "    let e = exp(v - max(v, 0));\n"
  "    store(y + row * stride + cols, e / sum(e, 0), cols < n);\n"
  "}\n";

/* A [2, BLOCK] block of rows fused along its last axis: argmax and argmin per row (ties
 * and NaNs), softmax per row, a cumsum per row (one carried total each), and a sum and an
 * argmax per column (along axis 0: within each chunk), one row of them per program. */
static const char ROWS2D_TK[] =
  "@launch(warps = 8)\n"
  "kernel rows2d<BLOCK: i32 = 8192>(x: *f32, y: *f32, c: *f32, am: *i32, cs: *f32, ca: *i32,\n"
  "                                 stride: i64, n: i32, nrows: i32) {\n"
  "    let rows = program_id(0) * 2 + arange(0, 2);\n"
  "    let cols = arange(0, BLOCK);\n"
  "    let mask = rows[:, None] < nrows && cols[None, :] < n;\n"
  "    let offs = (rows as i64)[:, None] * stride + cols[None, :];\n"
  "    let v = load(x + offs, mask, -inf);\n"
  "    let w = where(v > 1.9, (v - v) / (v - v), floor(v));\n"
  "    let a = argmax(w, 1);\n"
  "    let b = argmin(where(mask, w, inf), 1);\n"
  "    let e = exp(v - max(v, 1)[:, None]);\n"
  "    store(y + offs, e / sum(e, 1)[:, None], mask);\n"
  "    store(c + offs, cumsum(where(mask, v, 0.0), 1), mask);\n"
  "    let po = (program_id(0) as i64) * stride + cols;\n"
  "    store(cs + po, sum(where(mask, v, 0.0), 0), cols < n);\n"
  "    store(ca + po, argmax(w, 0), cols < n);\n"
  "    store(am + rows * 2, a, rows < nrows);\n"
  "    store(am + rows * 2 + 1, b, rows < nrows);\n"
  "}\n";

/* Wide tiles inside a user loop and an if: each program takes two rows, fused in the
 * branch's body (softmax, and a cumsum in the normalizing loop). */
static const char LOOP_ROWS_TK[] =
  "@launch(warps = 4)\n"
  "kernel loop_rows<BLOCK: i32 = 8192>(x: *f32, y: *f32, z: *f32, stride: i64, n: i32,\n"
  "                                    nrows: i32) {\n"
  "    let cols = arange(0, BLOCK);\n"
  "    let mask = cols < n;\n"
  "    for j in range(0, 2) {\n"
  "        let row = program_id(0) * 2 + j;\n"
  "        if row < nrows {\n"
  "            let base = (row as i64) * stride;\n"
  "            let v = load(x + base + cols, mask, -inf);\n"
  "            let e = exp(v - max(v, 0));\n"
  "            store(y + base + cols, e / sum(e, 0), mask);\n"
  "            store(z + base + cols, cumsum(where(mask, v, 0.0), 0), mask);\n"
  "        }\n"
  "    }\n"
  "}\n";

#define F32 TK_F32
#define F16 TK_F16
static const gpu_case cases[] = {
  {"vadd", "vadd.tk", NULL, "vadd", false, false, 1024, 4,
   {{IN, F32, SZ_N}, {IN, F32, SZ_N}, {OUT, F32, SZ_N}, {S_N, TK_I32, 0}}, 0, false},
  {"coscos", "coscos.tk", NULL, "coscos", false, false, 4096, 3,
   {{IN, F32, SZ_N}, {OUT, F32, SZ_N}, {S_N, TK_I64, 0}}, 0, false},
  {"gelu_tanh", "gelu.tk", NULL, "gelu_tanh", false, false, 2048, 3,
   {{IN, F16, SZ_N}, {OUT, F16, SZ_N}, {S_N, TK_I32, 0}}, 0, false},
  {"gelu_erf", "gelu.tk", NULL, "gelu_erf", false, false, 2048, 3,
   {{IN, F16, SZ_N}, {OUT, F16, SZ_N}, {S_N, TK_I32, 0}}, 0, false},
  {"softmax", "softmax.tk", NULL, "softmax", true, false, 1024, 4,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}}, 0, false},
  {"softmax_online", "softmax_online.tk", NULL, "softmax_online", true, true, 512, 4,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}}, 0, false},
  {"row_sum_chunked", "row_sum_chunked.tk", NULL, "row_sum_chunked", true, true, 256, 4,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_ROWS}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}}, 0, false},
  {"layernorm", "layernorm.tk", NULL, "layernorm", true, false, 1024, 9,
   {{IN, F16, SZ_MAT}, {OUT, F16, SZ_MAT}, {IN, F16, SZ_N}, {IN, F16, SZ_N},
    {OUT, F32, SZ_ROWS}, {OUT, F32, SZ_ROWS}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0},
    {S_EPS, F32, 0}}, 0, false},
  {"rmsnorm", "rmsnorm.tk", NULL, "rmsnorm", true, false, 1024, 7,
   {{IN, F16, SZ_MAT}, {OUT, F16, SZ_MAT}, {IN, F16, SZ_N}, {OUT, F32, SZ_ROWS},
    {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}, {S_EPS, F32, 0}}, 0, false},
  {"cross_entropy_i64", "cross_entropy.tk", NULL, "cross_entropy_i64", true, false, 1024, 5,
   {{IN, F32, SZ_MAT}, {TGT, TK_I64, SZ_ROWS}, {OUT, F32, SZ_ROWS}, {S_STRIDE, TK_I64, 0},
    {S_N, TK_I32, 0}}, 0, false},
  {"cross_entropy_i32", "cross_entropy.tk", NULL, "cross_entropy_i32", true, false, 1024, 5,
   {{IN, F32, SZ_MAT}, {TGT, TK_I32, SZ_ROWS}, {OUT, F32, SZ_ROWS}, {S_STRIDE, TK_I64, 0},
    {S_N, TK_I32, 0}}, 0, false},
  {"iops", NULL, IOPS_TK, "iops", false, false, 256, 4,
   {{IN, TK_I32, SZ_N}, {IN, TK_I32, SZ_N}, {OUT, TK_I32, SZ_N}, {S_N, TK_I32, 0}}, 0, false},
  {"hist_atomic", NULL, HIST_TK, "hist", false, false, 256, 3,
   {{IN, TK_I32, SZ_N}, {ZERO, TK_I32, SZ_16}, {S_N, TK_I32, 0}}, 0, false},
  {"scaled_softmax_pos", NULL, SCALED_TK, "scaled_softmax", true, false, 1024, 5,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0},
    {S_SCALE, F32, 0}}, 0, false},
  {"scaled_softmax_neg", NULL, SCALED_TK, "scaled_softmax", true, false, 1024, 5,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0},
    {S_NSCALE, F32, 0}}, 0, false},
  {"masked_other", NULL, OTHER_TK, "masked_other", false, false, 256, 3,
   {{IN, F32, SZ_N}, {OUT, F32, SZ_N}, {S_N, TK_I32, 0}}, 0, false},
  {"argmax_rows", NULL, ARGMAX_TK, "argmax_rows", true, false, 8192, 4,
   {{IN, F32, SZ_MAT}, {OUT, TK_I32, SZ_ROWS2}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}}, 0, false},
  /* fusion beyond 1-D rows at the top level: blocks of rows, cumsum, loops and ifs */
  {"layernorm_rows", "layernorm_rows.tk", NULL, "layernorm_rows", true, false, 16384, 10,
   {{IN, F16, SZ_MAT}, {OUT, F16, SZ_MAT}, {IN, F16, SZ_N}, {IN, F16, SZ_N},
    {OUT, F32, SZ_ROWS}, {OUT, F32, SZ_ROWS}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0},
    {S_ROWS, TK_I32, 0}, {S_EPS, F32, 0}}, 2, true},
  {"softmax_rows", "softmax_rows.tk", NULL, "softmax_rows", true, false, 8192, 5,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0},
    {S_ROWS, TK_I32, 0}}, 4, true},
  {"cumsum_rows", NULL, CUMSUM_TK, "cumsum_rows", true, false, 8192, 6,
   {{IN, F32, SZ_MAT}, {IN, TK_I32, SZ_MAT}, {OUT, F32, SZ_MAT}, {OUT, TK_I32, SZ_MAT},
    {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}}, 0, true},
  {"rows2d", NULL, ROWS2D_TK, "rows2d", true, false, 4096, 9, /* -fno-fuse: 8192 needs 256 KB of scratch */
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {OUT, TK_I32, SZ_ROWS2},
    {OUT, F32, SZ_MAT}, {OUT, TK_I32, SZ_MAT}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0},
    {S_ROWS, TK_I32, 0}}, 2, true},
  /* the user's chunk loop carrying a wide accumulator: interchanged with fusion's */
  {"row_sum_chunked_wide", "row_sum_chunked.tk", NULL, "row_sum_chunked", true, true, 16384, 4,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_ROWS}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}}, 0, true},
  {"loop_rows", NULL, LOOP_ROWS_TK, "loop_rows", true, false, 8192, 6,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {S_STRIDE, TK_I64, 0},
    {S_N, TK_I32, 0}, {S_ROWS, TK_I32, 0}}, 2, true},
  /* one logical tile wider than registers (issue 10): fusion's chunk loops, x kept as the
   * cost model says (test_case_keep forces each choice) */
  {"softmax_wide", "softmax.tk", NULL, "softmax", true, false, 16384, 4,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}}, 0, true},
  {"cross_entropy_wide", "cross_entropy.tk", NULL, "cross_entropy_i32", true, false, 16384, 5,
   {{IN, F32, SZ_MAT}, {TGT, TK_I32, SZ_ROWS}, {OUT, F32, SZ_ROWS}, {S_STRIDE, TK_I64, 0},
    {S_N, TK_I32, 0}}, 0, true},
  {"rmsnorm_wide", "rmsnorm.tk", NULL, "rmsnorm", true, false, 16384, 7,
   {{IN, F16, SZ_MAT}, {OUT, F16, SZ_MAT}, {IN, F16, SZ_N}, {OUT, F32, SZ_ROWS},
    {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}, {S_EPS, F32, 0}}, 0, true},
  {"softmax_cluster_one_chunk", NULL, SOFTMAX16_TK, "softmax16", true, false, 32768, 4,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}}, 0, true},
  /* a 512 KB row: the cost model splits it over 16 CTAs (non-portable clusters) */
  {"softmax_huge", "softmax.tk", NULL, "softmax", true, false, 131072, 4,
   {{IN, F32, SZ_MAT}, {OUT, F32, SZ_MAT}, {S_STRIDE, TK_I64, 0}, {S_N, TK_I32, 0}}, 0, true},
};

/* The shapes every case runs at: 1-D kernels use n only; row kernels rows x n with the
 * row `stride` = n + pad elements apart (pad 0 keeps rows 16-byte aligned when n is a
 * multiple of 4; an odd pad tests unaligned row starts). n > BLOCK only for any_n. */
typedef struct {
  long n, rows, pad;
} shape;

/* Ragged sizes run the unspecialized variants, multiples of 16 the specialized ones. */
static const shape shapes_1d[] = {{1, 1, 0}, {1000, 1, 0}, {3 * 4096 + 17, 1, 0},
                                  {100003, 1, 0}, {16 * 1000, 1, 0}};
static const shape shapes_rows[] = {{1, 1, 0}, {1000, 7, 0}, {1024, 3, 0}, {777, 64, 3},
                                    {4, 5, 1}};
static const shape shapes_long_rows[] = {{3 * 512 + 5, 5, 0}, {4096, 2, 3}};
/* For wide_rows: rows over several chunks of a fused kernel, ragged ones included (cut
 * to BLOCK unless any_n). */
static const shape shapes_wide_rows[] = {{2 * 2048 + 5, 3, 1}, {8192 + 1, 5, 0}, {16384, 4, 0},
                                         {40000, 2, 1}};

/* ---- global test state --------------------------------------------------------------- */

typedef struct {
  gh_harness h;
  const char *samples;
  tk_fuse_keep keep; /* how fusion keeps, on both contexts (test_case_keep) */
} globals;
static globals G; /* the one fixture the whole program shares: contexts are expensive */

/* ---- element helpers ----------------------------------------------------------------- */

/* A random non-zero value of type t, stored at p. Floats lie in ±[1/8, 4). */
static void random_elem(tk_dtype t, void *p) {
  uint64_t r = gh_rng_next(&G.h);
  int sign = (int)(r & 1);
  switch (t) {
  case TK_F32: {
    /* Multiples of 2^-8 in [1/8, 4): a sum of up to 2^16 of them is exact in f32 whatever
     * the order, so a row sum on the GPU (tree order) and on the interpreter (sequential)
     * must agree exactly rather than to a tolerance that long rows would outgrow. */
    float f = (float)(32 + (int)((r >> 8) % 992)) / 256.0f;
    f = sign ? -f : f;
    memcpy(p, &f, 4);
    break;
  }
  case TK_F16: {
    uint16_t h = (uint16_t)(sign << 15 | (12 + (r >> 20) % 5) << 10 | ((r >> 30) & 1023));
    memcpy(p, &h, 2);
    break;
  }
  case TK_I32: {
    int32_t v = (int32_t)((r >> 8) % 2001) - 1000;
    v = v ? v : 7;
    memcpy(p, &v, 4);
    break;
  }
  case TK_I64: {
    int64_t v = (int64_t)((r >> 8) % 2001) - 1000;
    v = v ? v : 7;
    memcpy(p, &v, 8);
    break;
  }
  default: fail_msg("no random generator for dtype %d", (int)t);
  }
}

/* A class target: mostly in [0, n), sometimes the ignored index -100. */
static void random_target(tk_dtype t, long n, void *p) {
  uint64_t r = gh_rng_next(&G.h);
  int64_t v = r % 10 == 0 ? -100 : (int64_t)((r >> 8) % (uint64_t)n);
  if (t == TK_I64) {
    memcpy(p, &v, 8);
  } else {
    int32_t w = (int32_t)v;
    memcpy(p, &w, 4);
  }
}

/* Compares n elements; on the first mismatch fails naming the buffer and index. */
static void compare(const char *what, tk_dtype t, const void *gpu, const void *ref, long n) {
  size_t sz = gh_dtype_size(t);
  bool is_float = t == TK_F32 || t == TK_F64 || t == TK_F16 || t == TK_BF16;
  double rtol = t == TK_F16 ? 2e-3 : t == TK_BF16 ? 1.6e-2 : 2e-5;
  double atol = t == TK_F16 || t == TK_BF16 ? 1e-3 : 1e-6;
  for (long i = 0; i < n; i++) {
    const char *g = (const char *)gpu + i * sz, *r = (const char *)ref + i * sz;
    if (memcmp(g, r, sz) == 0) continue;
    if (is_float) {
      double a = gh_elem_value(t, g), b = gh_elem_value(t, r);
      if ((isnan(a) && isnan(b)) || fabs(a - b) <= atol + rtol * fabs(b)) continue;
      fail_msg("%s[%ld]: cuda %.9g, interpreter %.9g (TK_TEST_SEED=%llu replays it)", what, i, a, b,
               (unsigned long long)G.h.first_seed);
    }
    int64_t a = 0, b = 0;
    memcpy(&a, g, sz);
    memcpy(&b, r, sz);
    fail_msg("%s[%ld]: cuda %lld, interpreter %lld (bits)", what, i, (long long)a,
             (long long)b);
  }
}

/* ---- running one case ---------------------------------------------------------------- */

/* A sample is read from the samples directory, an embedded kernel from its text. */
static tk_kernel *compile_as(tk_context *ctx, const gpu_case *c, bool no_fuse) {
  gh_defines d = {0};
  gh_define_int(&d, "BLOCK", c->block);
  char path[512] = "";
  if (c->file) snprintf(path, sizeof path, "%s/%s", G.samples, c->file);
  gh_source src = {c->name, c->source, path, c->kernel};
  if (no_fuse) return gh_compile_nofuse(&G.h, ctx, &src, &d);
  tk_compile_options keep = {.fuse_keep = G.keep};
  return gh_compile_with(&G.h, ctx, &src, &d, &keep);
}

static tk_kernel *compile(tk_context *ctx, const gpu_case *c) { return compile_as(ctx, c, false); }

static long elems(sizing z, const shape *sh) {
  switch (z) {
  case SZ_N: return sh->n;
  case SZ_ROWS: return sh->rows;
  case SZ_ROWS2: return 2 * sh->rows;
  case SZ_MAT: return sh->rows * (sh->n + sh->pad);
  case SZ_16: return 16;
  }
  SU_UNREACHABLE();
}

static tk_arg scalar_arg(const param_spec *p, const shape *sh) {
  int64_t v = p->r == S_N ? sh->n : p->r == S_ROWS ? sh->rows : sh->n + sh->pad;
  if (p->r == S_EPS) return tk_arg_f32(1e-5f);
  if (p->r == S_SCALE || p->r == S_NSCALE) return tk_arg_f32(p->r == S_SCALE ? 0.37f : -0.37f);
  return p->t == TK_I64 ? tk_arg_i64(v) : tk_arg_i32((int32_t)v);
}

/* Runs kernel k (of ctx) on host buffers host[] (copied in, run, copied back). */
static void run_on(tk_context *ctx, tk_kernel *k, const gpu_case *c, const shape *sh,
                   void **host) {
  tk_arg args[10];
  tk_devptr dev[10] = {0};
  for (int i = 0; i < c->nparams; i++) {
    const param_spec *p = &c->p[i];
    if (p->r >= S_N) {
      args[i] = scalar_arg(p, sh);
      continue;
    }
    size_t bytes = (size_t)elems(p->z, sh) * gh_dtype_size(p->t);
    assert_int_equal(tk_malloc(ctx, &dev[i], bytes), TK_OK);
    assert_int_equal(tk_memcpy_htod(ctx, dev[i], host[i], bytes), TK_OK);
    args[i] = tk_arg_ptr(dev[i]);
  }
  unsigned grid = c->per_row && c->rows_per_prog ? (unsigned)gh_cdiv(sh->rows, c->rows_per_prog)
                 : c->per_row ? (unsigned)sh->rows
                              : (unsigned)((sh->n + c->block - 1) / c->block);
  tk_status s = tk_launch(k, (tk_grid){grid, 1, 1}, NULL, args, c->nparams);
  if (s == TK_OK) s = tk_synchronize(ctx);
  if (s != TK_OK)
    fail_msg("%s (n=%ld rows=%ld) on %s: %s: %s", c->name, sh->n, sh->rows,
             gh_ctx_name(&G.h, ctx), tk_status_name(s), tk_last_error(ctx));
  for (int i = 0; i < c->nparams; i++) {
    if (!dev[i]) continue;
    size_t bytes = (size_t)elems(c->p[i].z, sh) * gh_dtype_size(c->p[i].t);
    assert_int_equal(tk_memcpy_dtoh(ctx, host[i], dev[i], bytes), TK_OK);
    assert_int_equal(tk_free(ctx, dev[i]), TK_OK);
  }
}

static void run_shape(const gpu_case *c, tk_kernel *kc, tk_kernel *ki, const shape *sh) {
  void *ref[10] = {0}, *gpu[10] = {0};
  for (int i = 0; i < c->nparams; i++) {
    const param_spec *p = &c->p[i];
    if (p->r >= S_N) continue;
    long n = elems(p->z, sh);
    size_t sz = gh_dtype_size(p->t);
    ref[i] = malloc((size_t)n * sz);
    for (long j = 0; j < n; j++) {
      char *e = (char *)ref[i] + j * sz;
      if (p->r == IN) random_elem(p->t, e);
      else if (p->r == TGT) random_target(p->t, sh->n, e);
      else if (p->r == ZERO) memset(e, 0, sz);
      else memset(e, 0xcd, sz); /* poison: an unwritten output cannot pass by luck */
    }
    gpu[i] = malloc((size_t)n * sz);
    memcpy(gpu[i], ref[i], (size_t)n * sz);
  }
  run_on(G.h.cuda, kc, c, sh, gpu);
  run_on(G.h.interp, ki, c, sh, ref);
  for (int i = 0; i < c->nparams; i++) {
    if (!ref[i]) continue;
    char what[64];
    snprintf(what, sizeof what, "%s.%s", c->name, tk_kernel_param_name(ki, i));
    compare(what, c->p[i].t, gpu[i], ref[i], elems(c->p[i].z, sh));
    free(ref[i]);
    free(gpu[i]);
  }
}

static void run_case(const gpu_case *c, bool no_fuse) {
  if (!G.h.cuda) skip();
  tk_kernel *kc = compile_as(G.h.cuda, c, no_fuse), *ki = compile(G.h.interp, c);
  const shape *list = c->per_row ? shapes_rows : shapes_1d;
  size_t n = c->per_row ? sizeof shapes_rows / sizeof *shapes_rows
                        : sizeof shapes_1d / sizeof *shapes_1d;
  for (size_t i = 0; i < n; i++) {
    shape sh = list[i];
    if (c->per_row && sh.n > c->block) sh.n = c->block;
    run_shape(c, kc, ki, &sh);
  }
  if (c->any_n)
    for (size_t i = 0; i < sizeof shapes_long_rows / sizeof *shapes_long_rows; i++)
      run_shape(c, kc, ki, &shapes_long_rows[i]);
  if (c->wide_rows)
    for (size_t i = 0; i < sizeof shapes_wide_rows / sizeof *shapes_wide_rows; i++) {
      shape sh = shapes_wide_rows[i];
      if (!c->any_n && sh.n > c->block) sh.n = c->block;
      run_shape(c, kc, ki, &sh);
    }
}

static void test_case(void **state) {
  G.keep = TK_FUSE_KEEP_AUTO;
  run_case(*state, false);
}

/* The same case compiled -fno-fuse on the device (every op through global scratch
 * memory, a hidden argument the backend allocates) against the fused interpreter. */
static void test_case_nofuse(void **state) { run_case(*state, true); }

/* A wide case with fusion's keep forced (tkc -ffuse-keep=), on the device and on the
 * interpreter alike: recomputed, the online rewrite (within its bound, docs/language.md
 * "Precision"), and the shared-memory keep (the interpreter runs the recomputed IR; the
 * device stages each chunk and reads it back, passes/smemkeep.c). */
typedef struct {
  const char *name, *case_name;
  tk_fuse_keep keep;
} keep_test;
static const keep_test keep_tests[] = {
  {"softmax_wide keep=recompute", "softmax_wide", TK_FUSE_KEEP_RECOMPUTE},
  {"softmax_wide keep=online", "softmax_wide", TK_FUSE_KEEP_ONLINE},
  {"softmax_wide keep=smem", "softmax_wide", TK_FUSE_KEEP_SMEM},
  {"cross_entropy_wide keep=online", "cross_entropy_wide", TK_FUSE_KEEP_ONLINE},
  {"cross_entropy_wide keep=smem", "cross_entropy_wide", TK_FUSE_KEEP_SMEM},
  {"rmsnorm_wide keep=smem", "rmsnorm_wide", TK_FUSE_KEEP_SMEM},
  {"softmax_rows keep=online", "softmax_rows", TK_FUSE_KEEP_ONLINE},
  {"softmax_rows keep=smem", "softmax_rows", TK_FUSE_KEEP_SMEM},
  {"layernorm_rows keep=smem", "layernorm_rows", TK_FUSE_KEEP_SMEM},
  {"loop_rows keep=online", "loop_rows", TK_FUSE_KEEP_ONLINE},
  {"loop_rows keep=smem", "loop_rows", TK_FUSE_KEEP_SMEM},
  /* split over a thread-block cluster (sm_90; passes/clusterkeep.c): each CTA its share
   * of the row, the reductions combined across the cluster; 2-D rows and the user loop
   * cannot be split and fall back to the recomputed kernel */
  {"softmax_wide keep=cluster", "softmax_wide", TK_FUSE_KEEP_CLUSTER},
  {"cross_entropy_wide keep=cluster", "cross_entropy_wide", TK_FUSE_KEEP_CLUSTER},
  {"rmsnorm_wide keep=cluster", "rmsnorm_wide", TK_FUSE_KEEP_CLUSTER},
  {"softmax_rows keep=cluster", "softmax_rows", TK_FUSE_KEEP_CLUSTER},
  {"loop_rows keep=cluster", "loop_rows", TK_FUSE_KEEP_CLUSTER},
  {"softmax_huge keep=cluster", "softmax_huge", TK_FUSE_KEEP_CLUSTER},
};
enum { NKEEP = sizeof keep_tests / sizeof keep_tests[0] };

static void test_case_keep(void **state) {
  const keep_test *t = *state;
  const gpu_case *c = NULL;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    if (!strcmp(cases[i].name, t->case_name)) c = &cases[i];
  assert_non_null(c);
  G.keep = t->keep;
  run_case(c, false);
  G.keep = TK_FUSE_KEEP_AUTO;
}

/* ---- device tests of the backend itself ---------------------------------------------- */

/* Hand-written PTX (as another compiler would hand us): fill(p, n, v) sets p[0..n) = v. */
static const char FILL_PTX[] =
  ".version 8.0\n.target sm_80\n.address_size 64\n"
  "// a comment with .entry in it must not confuse the signature reader\n"
  ".visible .entry fill(\n"
  "  .param .u64 .ptr .global .align 4 fill_param_0,\n"
  "  .param .u32 fill_param_1,\n"
  "  .param .f32 fill_param_2\n"
  ")\n.maxntid 64, 1, 1\n{\n"
  "  .reg .b32 %r<6>; .reg .b64 %rd<4>; .reg .f32 %f1; .reg .pred %p1;\n"
  "  ld.param.u64 %rd1, [fill_param_0];\n  ld.param.u32 %r1, [fill_param_1];\n"
  "  ld.param.f32 %f1, [fill_param_2];\n"
  "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n"
  "  mad.lo.s32 %r5, %r2, %r3, %r4;\n  setp.ge.s32 %p1, %r5, %r1;\n  @%p1 bra DONE;\n"
  "  cvta.to.global.u64 %rd2, %rd1;\n  mul.wide.s32 %rd3, %r5, 4;\n"
  "  add.s64 %rd2, %rd2, %rd3;\n  st.global.f32 [%rd2], %f1;\n"
  "DONE:\n  ret;\n}\n";

static void test_aot_ptx(void **state) {
  (void)state;
  if (!gh_real_device(&G.h)) skip();
  tk_module *m;
  tk_kernel *k;
  assert_int_equal(tk_module_load_ptx(G.h.cuda, &m, FILL_PTX, strlen(FILL_PTX)), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, "fill", &k), TK_OK);
  assert_int_equal(tk_kernel_num_params(k), 3);
  assert_int_equal(tk_kernel_param_type(k, 0), TK_PTR);
  assert_int_equal(tk_kernel_num_threads(k), 64);
  enum { N = 1000 };
  float host[N + 1];
  for (int i = 0; i <= N; i++) host[i] = -1.0f;
  tk_devptr p;
  assert_int_equal(tk_malloc(G.h.cuda, &p, sizeof host), TK_OK);
  assert_int_equal(tk_memcpy_htod(G.h.cuda, p, host, sizeof host), TK_OK);
  tk_arg args[] = {tk_arg_ptr(p), tk_arg_i32(N), tk_arg_f32(2.5f)};
  assert_int_equal(tk_launch(k, (tk_grid){(N + 63) / 64, 1, 1}, NULL, args, 3), TK_OK);
  assert_int_equal(tk_memcpy_dtoh(G.h.cuda, host, p, sizeof host), TK_OK);
  for (int i = 0; i < N; i++) assert_true(host[i] == 2.5f);
  assert_true(host[N] == -1.0f); /* the one past the end was left alone */
  /* a wrong argument count is refused before the driver sees it */
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 2), TK_ERR_ARGS);
  tk_free(G.h.cuda, p);
  tk_module_destroy(m);
}

static void test_bad_ptx_reports_log(void **state) {
  (void)state;
  if (!gh_real_device(&G.h)) skip();
  static const char bad[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                            ".visible .entry k() { frobnicate.u32 %r1; ret; }\n";
  tk_module *m = NULL;
  assert_int_equal(tk_module_load_ptx(G.h.cuda, &m, bad, strlen(bad)), TK_ERR_DRIVER);
  const char *msg = tk_last_error(G.h.cuda);
  assert_non_null(strstr(msg, "rejected the PTX"));
  assert_non_null(strstr(msg, "line")); /* the JIT's log names the PTX line */
}

static const char ABI_TK[] =
  "kernel abi(out: *f64, a: i8, b: i16, c: i32, d: i64, e: u8, f: u16, g: u32, h: u64,\n"
  "           p: f16, q: bf16, r: f32, s: f64, t: bool) {\n"
  "    store(out + 0, a as f64); store(out + 1, b as f64); store(out + 2, c as f64);\n"
  "    store(out + 3, d as f64); store(out + 4, e as f64); store(out + 5, f as f64);\n"
  "    store(out + 6, g as f64); store(out + 7, h as f64); store(out + 8, p as f64);\n"
  "    store(out + 9, q as f64); store(out + 10, r as f64); store(out + 11, s);\n"
  "    store(out + 12, t as f64);\n"
  "}\n";

/* Every scalar parameter type reaches the kernel with its value: the launch packing. */
static void test_scalar_abi(void **state) {
  (void)state;
  if (!G.h.cuda) skip();
  tk_module *m;
  tk_kernel *k;
  tk_status s = tk_module_compile(G.h.cuda, &m, ABI_TK, strlen(ABI_TK), "abi.tk", NULL);
  if (s != TK_OK) fail_msg("%s", tk_last_error(G.h.cuda));
  assert_int_equal(tk_module_get_kernel(m, "abi", &k), TK_OK);
  tk_arg f16 = {TK_F16, {0}}, bf16 = {TK_BF16, {0}};
  f16.v.f = 1.5;
  bf16.v.f = -2.25;
  tk_arg args[] = {tk_arg_ptr(0), {TK_I8, {.i = -5}}, {TK_I16, {.i = -300}},
                   tk_arg_i32(-70000), tk_arg_i64(-(1ll << 40) - 3), {TK_U8, {.u = 200}},
                   {TK_U16, {.u = 60000}}, tk_arg_u32(4000000000u),
                   tk_arg_u64((1ull << 52) + 1), f16, bf16, tk_arg_f32(3.25f),
                   tk_arg_f64(-1e300), tk_arg_bool(1)};
  const double want[] = {-5, -300, -70000, (double)(-(1ll << 40) - 3), 200, 60000,
                         4000000000.0, (double)((1ull << 52) + 1), 1.5, -2.25, 3.25,
                         -1e300, 1};
  double host[13];
  tk_devptr p;
  assert_int_equal(tk_malloc(G.h.cuda, &p, sizeof host), TK_OK);
  args[0] = tk_arg_ptr(p);
  s = tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 14);
  if (s != TK_OK) fail_msg("%s", tk_last_error(G.h.cuda));
  assert_int_equal(tk_memcpy_dtoh(G.h.cuda, host, p, sizeof host), TK_OK);
  for (int i = 0; i < 13; i++)
    if (host[i] != want[i]) fail_msg("parameter %d: got %.17g, want %.17g", i + 1, host[i], want[i]);
  tk_free(G.h.cuda, p);
  tk_module_destroy(m);
}

/* The inode of the one cache entry in dir (0 if there is not exactly one). */
static ino_t entry_inode(const char *dir) {
  DIR *d = opendir(dir);
  ino_t ino = 0;
  int count = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (!strstr(e->d_name, ".ptx") || strstr(e->d_name, ".tmp")) continue;
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st) == 0) ino = st.st_ino;
    count++;
  }
  if (d) closedir(d);
  return count == 1 ? ino : 0;
}

/* The JIT cache on a real compile: the first compile stores, the second hits (the entry
 * is not rewritten), and a damaged entry is rebuilt (a new file replaces it). */
static void test_jit_cache(void **state) {
  (void)state;
  if (!gh_real_device(&G.h)) skip();
  char dir[] = "/tmp/tk-gpu-cache-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TK_CACHE_DIR", dir, 1); /* read when the context is created */
  tk_context *ctx;
  assert_int_equal(tk_context_create(&ctx, &(tk_context_options){TK_BACKEND_CUDA, 0}), TK_OK);
  unsetenv("TK_CACHE_DIR");
  compile(ctx, &cases[0]);
  ino_t first = entry_inode(dir);
  assert_true(first != 0);
  compile(ctx, &cases[0]);
  assert_true(entry_inode(dir) == first);
  char path[512];
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".ptx")) snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
  if (d) closedir(d);
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  fseek(fp, 130, SEEK_SET); /* inside the payload, past the 120-byte header */
  fputs("garbage", fp);
  fclose(fp);
  tk_kernel *k = compile(ctx, &cases[0]);
  assert_non_null(k);
  assert_true(entry_inode(dir) != 0);
  char back[8] = {0};
  fp = fopen(path, "rb");
  assert_non_null(fp);
  fseek(fp, 130, SEEK_SET);
  assert_int_equal(fread(back, 1, 7, fp), 7);
  fclose(fp);
  assert_string_not_equal(back, "garbage"); /* rewritten from a fresh compile */
  tk_context_destroy(ctx);
  remove(path);
  rmdir(dir);
}

/* ---- the backend's host side, against the fake driver (tests/gpu/fake_cuda.c) --------- */

/* A CUDA context on the fake driver ($TK_FAKE_LIBCUDA), with the cache in a fresh
 * directory; skips the test when the fake was not built or named. */
static tk_context *fake_context(void **lib, char *cachedir) {
  const char *path = getenv("TK_FAKE_LIBCUDA");
  if (!path || !*path) skip();
  *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(*lib);
  assert_non_null(mkdtemp(cachedir));
  setenv("TK_LIBCUDA", path, 1);
  setenv("TK_CACHE_DIR", cachedir, 1);
  tk_context *ctx = NULL;
  tk_status s = tk_context_create(&ctx, &(tk_context_options){TK_BACKEND_CUDA, 0});
  unsetenv("TK_LIBCUDA");
  unsetenv("TK_CACHE_DIR");
  if (s != TK_OK) fail_msg("fake context: %s", tk_last_error(NULL));
  return ctx;
}

static void fake_done(tk_context *ctx, void *lib, const char *cachedir) {
  tk_context_destroy(ctx);
  dlclose(lib);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cachedir);
  assert_int_equal(system(cmd), 0);
}

static const fake_launch *last_launch(void *lib) {
  const fake_launch *(*get)(void);
  void *sym = dlsym(lib, "fake_cuda_last_launch");
  assert_non_null(sym);
  memcpy(&get, &sym, sizeof sym);
  return get();
}

static const char VCOPY_TK[] =
    "kernel vcopy<BLOCK: i32 = 1024>(x: *f32, y: *f32, n: i32) {\n"
    "    let o = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    store(y + o, load(x + o, o < n, 0.0), o < n);\n"
    "}\n";

static void test_fake_no_device(void **state) {
  (void)state;
  const char *path = getenv("TK_FAKE_LIBCUDA");
  if (!path || !*path) skip();
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(lib);
  void (*set)(int);
  void *sym = dlsym(lib, "fake_cuda_set_devices");
  memcpy(&set, &sym, sizeof sym);
  set(0);
  setenv("TK_LIBCUDA", path, 1);
  tk_context *ctx = NULL;
  assert_int_equal(tk_context_create(&ctx, &(tk_context_options){TK_BACKEND_CUDA, 0}),
                   TK_ERR_NO_DEVICE);
  assert_non_null(strstr(tk_last_error(NULL), "no CUDA device 0 (the machine has none)"));
  /* no device: AUTO falls back to the interpreter */
  assert_int_equal(tk_context_create(&ctx, NULL), TK_OK);
  assert_int_equal(tk_context_backend(ctx), TK_BACKEND_INTERP);
  tk_context_destroy(ctx);
  set(1);
  /* a bad ordinal is an error, on AUTO too, with its message */
  assert_int_equal(tk_context_create(&ctx, &(tk_context_options){TK_BACKEND_CUDA, 3}),
                   TK_ERR_INVALID);
  assert_non_null(strstr(tk_last_error(NULL), "no CUDA device 3 (the machine has 1"));
  assert_int_equal(tk_context_create(&ctx, &(tk_context_options){TK_BACKEND_AUTO, 3}),
                   TK_ERR_INVALID);
  assert_null(ctx);
  assert_non_null(strstr(tk_last_error(NULL), "no CUDA device 3 (the machine has 1"));
  unsetenv("TK_LIBCUDA");
  dlclose(lib);
}

static void *fake_fn(void *lib, const char *name) {
  void *sym = dlsym(lib, name);
  assert_non_null(sym);
  return sym;
}

static void fake_call_int(void *lib, const char *name, int v) {
  void (*f)(int);
  void *sym = fake_fn(lib, name);
  memcpy(&f, &sym, sizeof sym);
  f(v);
}

static int fake_get_int(void *lib, const char *name) {
  int (*f)(void);
  void *sym = fake_fn(lib, name);
  memcpy(&f, &sym, sizeof sym);
  return f();
}

/* A driver that fails to start is an error with the driver's message, never a silent
 * fall back to the interpreter; and the driver library stays loaded once cuInit ran. */
static void test_fake_init_failure(void **state) {
  (void)state;
  const char *path = getenv("TK_FAKE_LIBCUDA");
  if (!path || !*path) skip();
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(lib);
  setenv("TK_LIBCUDA", path, 1);
  fake_call_int(lib, "fake_cuda_set_init", 999);
  tk_context *ctx = NULL;
  assert_int_equal(tk_context_create(&ctx, NULL), TK_ERR_DRIVER);
  assert_null(ctx);
  assert_non_null(strstr(tk_last_error(NULL), "the CUDA driver failed to start: CUDA_ERROR_UNKNOWN"));
  /* cuInit reports no device: AUTO falls back */
  fake_call_int(lib, "fake_cuda_set_init", 100);
  assert_int_equal(tk_context_create(&ctx, NULL), TK_OK);
  assert_int_equal(tk_context_backend(ctx), TK_BACKEND_INTERP);
  tk_context_destroy(ctx);
  fake_call_int(lib, "fake_cuda_reset", 0);
  assert_int_equal(tk_context_create(&ctx, &(tk_context_options){TK_BACKEND_CUDA, 0}), TK_OK);
  tk_context_destroy(ctx);
  unsetenv("TK_LIBCUDA");
  dlclose(lib);
  /* our handle is gone; libtk's must still be there */
  void *still = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(still);
  dlclose(still);
}

/* tk_context_destroy frees every buffer the context made, although the primary context
 * (held here by a second tk context, as PyTorch would hold it) lives on; a buffer of one
 * context is refused by another. */
static void test_fake_buffers_and_contexts(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  setenv("TK_LIBCUDA", getenv("TK_FAKE_LIBCUDA"), 1);
  tk_context *other = NULL;
  assert_int_equal(tk_context_create(&other, &(tk_context_options){TK_BACKEND_CUDA, 0}), TK_OK);
  unsetenv("TK_LIBCUDA");
  int live = fake_get_int(lib, "fake_cuda_live_allocs");
  tk_devptr p[3], q;
  for (int i = 0; i < 3; i++) assert_int_equal(tk_malloc(ctx, &p[i], 256), TK_OK);
  assert_int_equal(tk_malloc(other, &q, 64), TK_OK);
  assert_int_equal(tk_free(ctx, p[1]), TK_OK);
  assert_int_equal(tk_free(ctx, p[1]), TK_ERR_INVALID);
  assert_non_null(strstr(tk_last_error(ctx), "not an address returned by tk_malloc"));
  assert_int_equal(tk_free(ctx, q), TK_ERR_INVALID);
  assert_non_null(strstr(tk_last_error(ctx), "another tk context's"));
  char buf[16] = {0};
  assert_int_equal(tk_memcpy_htod(ctx, q + 8, buf, 8), TK_ERR_INVALID);
  assert_int_equal(tk_memcpy_dtoh(ctx, buf, q, 8), TK_ERR_INVALID);
  assert_int_equal(tk_memcpy_htod(ctx, p[2] + 8, buf, 8), TK_OK);
  tk_module *m;
  tk_kernel *k;
  assert_int_equal(tk_module_compile(ctx, &m, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", NULL), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, "vcopy", &k), TK_OK);
  tk_arg args[] = {tk_arg_ptr(p[0]), tk_arg_ptr(q), tk_arg_i32(16)};
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 3), TK_ERR_ARGS);
  assert_non_null(strstr(tk_last_error(ctx), "argument 1 of 'vcopy' ('y')"));
  assert_non_null(strstr(tk_last_error(ctx), "a buffer of another tk context"));
  args[1] = tk_arg_ptr(0x2000); /* not tk's (a PyTorch tensor, say): the caller's business */
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 3), TK_OK);
  assert_int_equal(fake_get_int(lib, "fake_cuda_live_allocs"), live + 3);
  tk_context_destroy(ctx);
  assert_int_equal(fake_get_int(lib, "fake_cuda_live_allocs"), live + 1);
  tk_context_destroy(other);
  assert_int_equal(fake_get_int(lib, "fake_cuda_live_allocs"), live);
  fake_done(NULL, lib, dir);
}

/* A sticky fault is reported as one, and every later call says the context is dead. */
static void test_fake_sticky_fault(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  tk_devptr p;
  assert_int_equal(tk_malloc(ctx, &p, 64), TK_OK);
  fake_call_int(lib, "fake_cuda_fault", 700);
  assert_int_equal(tk_synchronize(ctx), TK_ERR_RUNTIME);
  assert_non_null(strstr(tk_last_error(ctx), "a kernel faulted: CUDA_ERROR_ILLEGAL_ADDRESS"));
  assert_non_null(strstr(tk_last_error(ctx), "sticky"));
  char buf[8];
  assert_int_equal(tk_memcpy_dtoh(ctx, buf, p, 8), TK_ERR_RUNTIME);
  assert_non_null(strstr(tk_last_error(ctx), "the CUDA context is dead: a kernel faulted "
                                             "(CUDA_ERROR_ILLEGAL_ADDRESS"));
  tk_module *m;
  assert_int_equal(tk_module_compile(ctx, &m, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", NULL),
                   TK_ERR_RUNTIME);
  assert_non_null(strstr(tk_last_error(ctx), "the CUDA context is dead"));
  assert_int_equal(tk_malloc(ctx, &p, 64), TK_ERR_RUNTIME);
  fake_done(ctx, lib, dir); /* destroying a dead context is fine */
  fake_call_int(lib, "fake_cuda_reset", 0);
}

/* Each scalar type lands in its parameter slot with the bytes the PTX ABI wants. */
/* A -fno-fuse kernel takes its scratch as a hidden pointer after the parameters: the
 * backend allocates programs x bytes-per-program, keeps it for a launch that fits and
 * grows it for one that does not. */
static void test_fake_nofuse_scratch(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  static const char src[] =
      "kernel sm(x: *f32, y: *f32) {\n"
      "  let c = program_id(0) * 256 + arange(0, 256);\n"
      "  let v = exp(load(x + c));\n"
      "  store(y + c, v / sum(v, 0));\n"
      "}\n";
  tk_compile_options o = {.no_fuse = 1};
  tk_module *m;
  tk_kernel *k;
  if (tk_module_compile(ctx, &m, src, strlen(src), "sm.tk", &o) != TK_OK) fail_msg("%s", tk_last_error(ctx));
  assert_int_equal(tk_module_get_kernel(m, "sm", &k), TK_OK);
  assert_int_equal(tk_kernel_num_params(k), 2); /* the scratch is not the caller's */
  int live = fake_get_int(lib, "fake_cuda_live_allocs");
  tk_arg args[] = {tk_arg_ptr(0x1000), tk_arg_ptr(0x2000)};
  assert_int_equal(tk_launch(k, (tk_grid){4, 1, 1}, NULL, args, 2), TK_OK);
  uint64_t first = *(uint64_t *)last_launch(lib)->params[2];
  assert_true(first != 0);
  assert_int_equal(fake_get_int(lib, "fake_cuda_live_allocs"), live + 1);
  assert_int_equal(tk_launch(k, (tk_grid){2, 1, 1}, NULL, args, 2), TK_OK);
  assert_true(*(uint64_t *)last_launch(lib)->params[2] == first); /* fits: kept */
  assert_int_equal(tk_launch(k, (tk_grid){4000, 1, 1}, NULL, args, 2), TK_OK);
  assert_true(*(uint64_t *)last_launch(lib)->params[2] != 0);
  assert_int_equal(fake_get_int(lib, "fake_cuda_live_allocs"), live + 1); /* grown, not added */
  tk_module_destroy(m);
  fake_done(ctx, lib, dir);
}

static const fake_memory_calls *memory_calls(void *lib) {
  const fake_memory_calls *(*get)(void);
  void *sym = fake_fn(lib, "fake_cuda_last_alloc");
  memcpy(&get, &sym, sizeof sym);
  return get();
}

/* A kernel with workspace ops takes the context's workspace as its last hidden pointer
 * (after a persistent kernel's grid): allocated for the programs the launch runs (a
 * persistent kernel's resident grid, not the grid asked for), zeroed on the launch's
 * stream when allocated, kept as it is for a launch of the same kernel that fits, zeroed
 * on the launch's stream for another kernel, replaced by a larger zeroed one for a launch
 * that does not fit. */
static void test_fake_workspace(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  static const char src[] =
      "module \"ws.tk\"\n"
      "kernel @count(%o: ptr<i32>) warps(4) stages(1) {\n"
      "  %w = workspace {per_program = 64} : ptr<i32>\n"
      "  %one = const 1 : i32\n"
      "  %t = atomic add %w, %one : i32\n"
      "  store %o, %t\n"
      "  return\n"
      "}\n"
      "kernel @pcount(%o: ptr<i32>) warps(4) stages(1) per_sm(3) persistent {\n"
      "  %w = workspace {per_program = 32} : ptr<i32>\n"
      "  %one = const 1 : i32\n"
      "  %t = atomic add %w, %one : i32\n"
      "  store %o, %t\n"
      "  return\n"
      "}\n";
  tk_module *m;
  tk_kernel *k, *pk;
  if (tk_module_compile(ctx, &m, src, strlen(src), "ws.tkir", NULL) != TK_OK) fail_msg("%s", tk_last_error(ctx));
  assert_int_equal(tk_module_get_kernel(m, "count", &k), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, "pcount", &pk), TK_OK);
  assert_int_equal(tk_kernel_num_params(k), 1); /* the workspace is not the caller's */
  int live = fake_get_int(lib, "fake_cuda_live_allocs");
  void *stream = (void *)0x5150;
  tk_arg args[] = {tk_arg_ptr(0x1000)};
  /* persistent, 3 programs a "SM" (the fake has one): 3 programs launched, 3 x 32 bytes */
  assert_int_equal(tk_launch(pk, (tk_grid){10, 1, 1}, stream, args, 1), TK_OK);
  const fake_launch *l = last_launch(lib);
  assert_int_equal(l->grid[0], 3);
  assert_int_equal(*(uint32_t *)l->params[1], 10); /* the grid asked for */
  uint64_t ws = *(uint64_t *)l->params[4];
  const fake_memory_calls *mc = memory_calls(lib);
  assert_true(ws != 0 && mc->alloc == ws && mc->alloc_bytes == 3 * 32);
  assert_true(mc->memset == ws && mc->memset_bytes == 3 * 32 && mc->memset_value == 0);
  assert_ptr_equal(mc->memset_stream, stream);
  assert_int_equal(fake_get_int(lib, "fake_cuda_live_allocs"), live + 1);
  /* 4 programs of 64 bytes: a larger one, zeroed; the old one freed */
  int memsets = mc->memsets;
  assert_int_equal(tk_launch(k, (tk_grid){4, 1, 1}, stream, args, 1), TK_OK);
  ws = *(uint64_t *)last_launch(lib)->params[1];
  assert_true(ws != 0 && mc->alloc == ws && mc->alloc_bytes == 4 * 64);
  assert_true(mc->memset == ws && mc->memset_bytes == 4 * 64 && mc->memsets == memsets + 1);
  assert_int_equal(fake_get_int(lib, "fake_cuda_live_allocs"), live + 1);
  /* what a launch leaves there stays: fits, kept, not zeroed again */
  memset((void *)(uintptr_t)ws, 0x55, 4 * 64);
  assert_int_equal(tk_launch(k, (tk_grid){2, 2, 1}, stream, args, 1), TK_OK);
  assert_true(*(uint64_t *)last_launch(lib)->params[1] == ws);
  assert_int_equal(mc->memsets, memsets + 1);
  assert_int_equal(((unsigned char *)(uintptr_t)ws)[4 * 64 - 1], 0x55);
  /* another kernel: 3 x 32 fit, but what count left may lie where pcount keeps its
   * counters, so the whole buffer is zeroed on the launch's stream first */
  assert_int_equal(tk_launch(pk, (tk_grid){1000, 1, 1}, stream, args, 1), TK_OK);
  assert_true(*(uint64_t *)last_launch(lib)->params[4] == ws);
  assert_true(mc->memset == ws && mc->memset_bytes == 4 * 64 && mc->memsets == memsets + 2);
  assert_ptr_equal(mc->memset_stream, stream);
  assert_int_equal(tk_launch(pk, (tk_grid){1000, 1, 1}, stream, args, 1), TK_OK); /* its own: kept */
  assert_int_equal(mc->memsets, memsets + 2);
  assert_int_equal(tk_launch(k, (tk_grid){2, 2, 1}, stream, args, 1), TK_OK); /* back: zeroed */
  assert_int_equal(mc->memsets, memsets + 3);
  assert_int_equal(tk_launch(k, (tk_grid){2, 2, 2}, stream, args, 1), TK_OK);
  assert_true(mc->alloc_bytes == 8 * 64 && mc->memset_bytes == 8 * 64 && mc->memsets == memsets + 4);
  assert_int_equal(fake_get_int(lib, "fake_cuda_live_allocs"), live + 1); /* grown, not added */
  tk_module_destroy(m);
  tk_context_destroy(ctx);
  assert_int_equal(fake_get_int(lib, "fake_cuda_live_allocs"), live); /* freed with the context */
  fake_done(NULL, lib, dir);
}

static void test_fake_launch_packing(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  tk_module *m;
  tk_kernel *k;
  tk_status s = tk_module_compile(ctx, &m, ABI_TK, strlen(ABI_TK), "abi.tk", NULL);
  if (s != TK_OK) fail_msg("%s", tk_last_error(ctx));
  assert_int_equal(tk_module_get_kernel(m, "abi", &k), TK_OK);
  tk_arg f16 = {TK_F16, {0}}, bf16 = {TK_BF16, {0}};
  f16.v.f = 1.5;
  bf16.v.f = -2.25;
  tk_arg args[] = {tk_arg_ptr(0x1234567890ull), {TK_I8, {.i = -5}}, {TK_I16, {.i = -300}},
                   tk_arg_i32(-70000), tk_arg_i64(-(1ll << 40) - 3), {TK_U8, {.u = 200}},
                   {TK_U16, {.u = 60000}}, tk_arg_u32(4000000000u), tk_arg_u64(1ull << 63),
                   f16, bf16, tk_arg_f32(3.25f), tk_arg_f64(-1e300), tk_arg_bool(1)};
  assert_int_equal(tk_launch(k, (tk_grid){7, 0, 2}, NULL, args, 14), TK_OK);
  const fake_launch *l = last_launch(lib);
  assert_int_equal(l->grid[0], 7);
  assert_int_equal(l->grid[1], 1); /* 0 counts as 1 */
  assert_int_equal(l->grid[2], 2);
  assert_int_equal(l->block[0], 128); /* 4 warps by default */
  void **p = l->params;
  assert_true(*(uint64_t *)p[0] == 0x1234567890ull);
  assert_int_equal(*(int8_t *)p[1], -5);
  assert_int_equal(*(int16_t *)p[2], -300);
  assert_int_equal(*(int32_t *)p[3], -70000);
  assert_true(*(int64_t *)p[4] == -(1ll << 40) - 3);
  assert_int_equal(*(uint8_t *)p[5], 200);
  assert_int_equal(*(uint16_t *)p[6], 60000);
  assert_true(*(uint32_t *)p[7] == 4000000000u);
  assert_true(*(uint64_t *)p[8] == 1ull << 63);
  assert_int_equal(*(uint16_t *)p[9], 0x3e00);  /* 1.5 as f16 */
  assert_int_equal(*(uint16_t *)p[10], 0xc010); /* -2.25 as bf16 */
  assert_true(*(float *)p[11] == 3.25f);
  assert_true(*(double *)p[12] == -1e300);
  assert_int_equal(*(uint8_t *)p[13], 1);
  /* f16 rounding: to nearest even, overflow to inf, subnormals kept */
  const struct { double in; uint16_t bits; } halves[] = {
    {65504, 0x7bff}, {65520, 0x7c00}, {-1e9, 0xfc00}, {1.0 + 1.0 / 2048, 0x3c00},
    {1.0 + 3.0 / 2048, 0x3c02}, {5.960464477539063e-8, 0x0001}, {6.1e-5, 0x03ff}, {0, 0}};
  for (size_t i = 0; i < sizeof halves / sizeof *halves; i++) {
    args[9].v.f = halves[i].in;
    assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 14), TK_OK);
    if (*(uint16_t *)last_launch(lib)->params[9] != halves[i].bits)
      fail_msg("f16(%g) = 0x%04x, want 0x%04x", halves[i].in,
               *(uint16_t *)last_launch(lib)->params[9], halves[i].bits);
  }
  tk_module_destroy(m);
  fake_done(ctx, lib, dir);
}

/* `@launch(pdl = true)`: the kernel launches through cuLaunchKernelEx with programmatic
 * stream serialization allowed; the others through cuLaunchKernel, as before. */
static const char PDL_TK[] =
    "kernel first(x: *f32) { store(x + arange(0, 128), zeros<f32>(128)); }\n"
    "@launch(pdl = true)\n"
    "kernel second(x: *f32) { store(x + arange(0, 128), zeros<f32>(128) + 1.0); }\n";

static void test_fake_pdl(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  tk_module *m;
  tk_kernel *k1, *k2;
  tk_status s = tk_module_compile(ctx, &m, PDL_TK, strlen(PDL_TK), "pdl.tk", NULL);
  if (s != TK_OK) fail_msg("%s", tk_last_error(ctx));
  assert_int_equal(tk_module_get_kernel(m, "first", &k1), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, "second", &k2), TK_OK);
  tk_arg a = tk_arg_ptr(0x1000);
  assert_int_equal(tk_launch(k2, (tk_grid){3, 1, 1}, NULL, &a, 1), TK_OK);
  const fake_launch *l = last_launch(lib);
  assert_int_equal(l->pdl, 1);
  assert_int_equal(l->grid[0], 3);
  assert_int_equal(l->block[0], 128);
  assert_true(*(uint64_t *)l->params[0] == 0x1000);
  assert_int_equal(tk_launch(k1, (tk_grid){3, 1, 1}, NULL, &a, 1), TK_OK);
  assert_int_equal(last_launch(lib)->pdl, 0);
  tk_module_destroy(m);
  fake_done(ctx, lib, dir);
}

/* A 512 KB row at 4 warps: the cost model splits each program over 16 CTAs
 * (passes/clusterkeep.c), so the launch runs 16 times the grid's x, the function is
 * opted into the non-portable cluster size once, at load, and a grid whose CTAs would
 * not fit grid x is refused with a message instead of wrapping. */
static const char CLUSTER_TK[] =
    "@launch(warps = 4)\n"
    "kernel sm16(x: *f32, y: *f32, n: i32) {\n"
    "  let cols = arange(0, 131072);\n"
    "  let row = program_id(0) as i64;\n"
    "  let v = load(x + row * 131072 + cols, cols < n, -inf);\n"
    "  let e = exp(v - max(v, 0));\n"
    "  store(y + row * 131072 + cols, e / sum(e, 0), cols < n);\n"
    "}\n";
static void test_fake_cluster(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  tk_module *m;
  tk_kernel *k;
  int before = fake_get_int(lib, "fake_cuda_nonportable");
  tk_status s = tk_module_compile(ctx, &m, CLUSTER_TK, strlen(CLUSTER_TK), "cluster.tk", NULL);
  if (s != TK_OK) fail_msg("%s", tk_last_error(ctx));
  assert_int_equal(tk_module_get_kernel(m, "sm16", &k), TK_OK);
  tk_arg a[] = {tk_arg_ptr(0x1000), tk_arg_ptr(0x2000), tk_arg_i32(131072)};
  assert_int_equal(tk_launch(k, (tk_grid){3, 2, 1}, NULL, a, 3), TK_OK);
  const fake_launch *l = last_launch(lib);
  assert_int_equal(l->grid[0], 48);
  assert_int_equal(l->grid[1], 2);
  assert_int_equal(l->block[0], 128);
  assert_true(fake_get_int(lib, "fake_cuda_nonportable") > before);
  assert_int_equal(tk_launch(k, (tk_grid){0x7fffffffu / 16 + 1, 1, 1}, NULL, a, 3), TK_ERR_ARGS);
  assert_non_null(strstr(tk_last_error(ctx), "cluster"));
  assert_int_equal(tk_launch(k, (tk_grid){0x7fffffffu / 16, 1, 1}, NULL, a, 3), TK_OK);
  assert_int_equal(last_launch(lib)->grid[0], 0x7fffffffu / 16 * 16);
  tk_module_destroy(m);
  fake_done(ctx, lib, dir);
}

/* PTX the fake driver rejects, as the JIT rejects an unknown instruction. */
static const char BAD_PTX[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                              ".visible .entry k() { frobnicate.u32 %r1; ret; }\n";

/* A JIT failure reports the driver's log; AOT PTX takes its signature and block size
 * from the text; a compile goes through the cache. */
static void test_fake_ptx_paths(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  tk_module *m = NULL;
  assert_int_equal(tk_module_load_ptx(ctx, &m, BAD_PTX, strlen(BAD_PTX)), TK_ERR_DRIVER);
  assert_non_null(strstr(tk_last_error(ctx), "CUDA_ERROR_INVALID_PTX"));
  assert_non_null(strstr(tk_last_error(ctx), "line 4; error"));
  tk_kernel *k;
  assert_int_equal(tk_module_load_ptx(ctx, &m, FILL_PTX, strlen(FILL_PTX)), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, "fill", &k), TK_OK);
  assert_int_equal(tk_kernel_num_threads(k), 64);
  tk_arg args[] = {tk_arg_ptr(64), tk_arg_u32(10), tk_arg_f32(1)}; /* u32 for .u32 is fine */
  assert_int_equal(tk_launch(k, (tk_grid){2, 1, 1}, NULL, args, 3), TK_OK);
  assert_int_equal(last_launch(lib)->block[0], 64);
  args[2] = tk_arg_i32(1);
  assert_int_equal(tk_launch(k, (tk_grid){2, 1, 1}, NULL, args, 3), TK_ERR_ARGS);
  /* the JIT path: codegen once, then the cache */
  assert_int_equal(tk_module_compile(ctx, &m, ABI_TK, strlen(ABI_TK), "abi.tk", NULL), TK_OK);
  ino_t first = entry_inode(dir);
  assert_true(first != 0);
  assert_int_equal(tk_module_compile(ctx, &m, ABI_TK, strlen(ABI_TK), "abi.tk", NULL), TK_OK);
  assert_true(entry_inode(dir) == first);
  tk_compile_options nocache = {0};
  nocache.no_cache = 1;
  assert_int_equal(tk_module_compile(ctx, &m, ABI_TK, strlen(ABI_TK), "x.tk", &nocache), TK_OK);
  assert_true(entry_inode(dir) == first); /* nothing stored under the other name */
  fake_done(ctx, lib, dir);
}

static void *fake_sym(void *lib, const char *name) {
  void *sym = dlsym(lib, name);
  assert_non_null(sym);
  return sym;
}

static int fake_loads(void *lib) {
  int (*get)(void);
  void *sym = fake_sym(lib, "fake_cuda_loads");
  memcpy(&get, &sym, sizeof sym);
  return get();
}

static const char *fake_last_ptx(void *lib) {
  const char *(*get)(void);
  void *sym = fake_sym(lib, "fake_cuda_last_ptx");
  memcpy(&get, &sym, sizeof sym);
  return get();
}

static int cache_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".ptx") && !strstr(e->d_name, ".tmp");
  if (d) closedir(d);
  return n;
}


/* Kernel `name` of source text src (named `name`.tk, which the cache key holds), compiled
 * in ctx (the module lives with ctx). */
static tk_kernel *compiled(tk_context *ctx, const char *src, const char *name) {
  tk_module *m;
  tk_kernel *k;
  char file[64];
  snprintf(file, sizeof file, "%s.tk", name);
  assert_int_equal(tk_module_compile(ctx, &m, src, strlen(src), file, NULL), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, name, &k), TK_OK);
  return k;
}

/* Launches vcopy with x, y, n; returns the function the driver was asked to run. */
static void *launch_vcopy(void *lib, tk_kernel *k, tk_devptr x, tk_devptr y, int n) {
  tk_arg args[] = {tk_arg_ptr(x), tk_arg_ptr(y), tk_arg_i32(n)};
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 3), TK_OK);
  return last_launch(lib)->fn;
}

/* Specialization: the compile loads the variant for divisible sizes and aligned pointers
 * (vectorized through the mask); a ragged size or an unaligned pointer compiles its own
 * variant once, at its first launch, through the cache; launches pick by argument. */
static void test_fake_specialization(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  int loads = fake_loads(lib);
  tk_kernel *k = compiled(ctx, VCOPY_TK, "vcopy");
  assert_int_equal(fake_loads(lib), loads + 1);
  assert_non_null(strstr(fake_last_ptx(lib), "ld.global.v4.b32"));
  void *all = launch_vcopy(lib, k, 0x1000, 0x2000, 4096);
  assert_int_equal(fake_loads(lib), loads + 1); /* the eager variant: nothing to compile */
  void *ragged = launch_vcopy(lib, k, 0x1000, 0x2000, 1000);
  assert_int_equal(fake_loads(lib), loads + 2);
  assert_true(ragged != all);
  assert_null(strstr(fake_last_ptx(lib), "global.v4"));
  assert_non_null(strstr(fake_last_ptx(lib), "@%p"));
  assert_true(launch_vcopy(lib, k, 0x1000, 0x2000, 17) == ragged); /* same signature */
  assert_true(launch_vcopy(lib, k, 0x1000, 0x2000, 32) == all);
  void *unaligned = launch_vcopy(lib, k, 0x1004, 0x2000, 4096);
  assert_int_equal(fake_loads(lib), loads + 3);
  assert_true(unaligned != all && unaligned != ragged);
  assert_null(strstr(fake_last_ptx(lib), "ld.global.v4"));    /* through x: no */
  assert_non_null(strstr(fake_last_ptx(lib), "st.global.v4")); /* through y: yes */
  assert_int_equal(cache_entries(dir), 3);
  /* a second module of the same source finds every variant in the cache */
  tk_module *m2;
  tk_kernel *k2;
  assert_int_equal(tk_module_compile(ctx, &m2, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", NULL), TK_OK);
  assert_int_equal(tk_module_get_kernel(m2, "vcopy", &k2), TK_OK);
  launch_vcopy(lib, k2, 0x1000, 0x2000, 1000);
  assert_int_equal(cache_entries(dir), 3);
  assert_int_equal(fake_loads(lib), loads + 5);
  fake_done(ctx, lib, dir);
}

static int count_of(const char *text, const char *what) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
  return n;
}

/* f32 multiplies in PTX text (LLVM writes them mul.rn.f32, or mul.f32) */
static int f32_muls(const char *ptx) { return count_of(ptx, "mul.rn.f32") + count_of(ptx, "mul.f32"); }

static void *launch_scaled(void *lib, tk_kernel *k, float scale) {
  tk_arg args[] = {tk_arg_ptr(0x1000), tk_arg_ptr(0x2000), tk_arg_i64(1024), tk_arg_i32(1024),
                   tk_arg_f32(scale)};
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 5), TK_OK);
  return last_launch(lib)->fn;
}

/* Specialization on a float's sign: the variant loaded at compile time takes the scale
 * positive (expfold multiplies the row max, not each score, by it); zero, a negative
 * scale, NaN or infinity get the variant that assumes nothing, at their first launch. */
static void test_fake_scale_specialization(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  int loads = fake_loads(lib);
  tk_kernel *k = compiled(ctx, SCALED_TK, "scaled_softmax");
  assert_int_equal(fake_loads(lib), loads + 1);
  int pos_muls = f32_muls(fake_last_ptx(lib));
  void *pos = launch_scaled(lib, k, 0.125f);
  assert_int_equal(fake_loads(lib), loads + 1);
  assert_true(launch_scaled(lib, k, 3.0e38f) == pos);
  void *any = launch_scaled(lib, k, -0.125f);
  assert_int_equal(fake_loads(lib), loads + 2);
  assert_true(any != pos);
  int any_muls = f32_muls(fake_last_ptx(lib));
  assert_true(pos_muls < any_muls); /* a multiply per score in the second only */
  assert_true(launch_scaled(lib, k, 0.0f) == any);
  assert_true(launch_scaled(lib, k, -0.0f) == any);
  assert_true(launch_scaled(lib, k, NAN) == any);
  assert_true(launch_scaled(lib, k, INFINITY) == any);
  assert_true(launch_scaled(lib, k, 1e-45f) == pos);
  assert_int_equal(fake_loads(lib), loads + 2);
  fake_done(ctx, lib, dir);
}


/* tk_roofline on the card the driver names: a card with a TG_MACHINE row (the H100) gets
 * its own ceilings, any other the arch's row; an HBM-bound copy's prediction moves by the
 * ratio of the two bandwidths, and an explicit arch other than the context's ignores the
 * card. */
static void test_fake_roofline_card(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *row_ctx = fake_context(&lib, dir);
  void (*set_name)(const char *) = (void (*)(const char *))fake_sym(lib, "fake_cuda_set_name");
  set_name("NVIDIA H100 80GB HBM3");
  setenv("TK_LIBCUDA", getenv("TK_FAKE_LIBCUDA"), 1);
  tk_context *card_ctx = NULL;
  tk_status s = tk_context_create(&card_ctx, &(tk_context_options){TK_BACKEND_CUDA, 0});
  unsetenv("TK_LIBCUDA");
  set_name("fake");
  assert_int_equal(s, TK_OK);
  int n = 1 << 26;
  tk_arg args[] = {tk_arg_ptr(0x1000), tk_arg_ptr(0x2000), tk_arg_i32(n)};
  tk_grid g = {(unsigned)(n / 1024), 1, 1};
  tk_roofline_report row, card, other;
  assert_int_equal(tk_roofline(compiled(row_ctx, VCOPY_TK, "vcopy"), NULL, g, args, 3, &row), TK_OK);
  tk_kernel *k = compiled(card_ctx, VCOPY_TK, "vcopy");
  assert_int_equal(tk_roofline(k, NULL, g, args, 3, &card), TK_OK);
  assert_int_equal(tk_roofline(k, "sm_90", g, args, 3, &other), TK_OK);
  assert_int_equal(row.bound, TK_BOUND_HBM);
  assert_int_equal(card.bound, TK_BOUND_HBM);
  assert_true(card.hbm_bytes == row.hbm_bytes);
  /* 537 MB: 134 us at the H200 row's 4.0 TB/s, 192 us at the H100's 2.79 */
  assert_true(fabs(row.predicted_us - 2.0 * 4 * n / 4.0e12 * 1e6) < 0.5);
  assert_true(fabs(card.predicted_us / row.predicted_us - 4.0 / 2.79) < 1e-3);
  assert_true(fabs(other.predicted_us - row.predicted_us) < 1e-6);
  tk_context_destroy(card_ctx);
  fake_done(row_ctx, lib, dir);
}

/* tk_kernel_resources without ptxas (TK_PTXAS naming no file): the driver's numbers for
 * the variant that takes any arguments, compiled and loaded for the query, once, and the
 * very function a launch with such arguments then runs; the variant in use is untouched;
 * the dynamic shared memory and threads are what tk launches with; another arch than the
 * context's is TK_ERR_UNSUPPORTED saying why. */
static void test_fake_resources_from_driver(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  void (*set_attr)(int, int) = (void (*)(int, int))fake_sym(lib, "fake_cuda_set_func_attr");
  const fake_occupancy_query *(*query)(void) =
      (const fake_occupancy_query *(*)(void))fake_sym(lib, "fake_cuda_occupancy_query");
  set_attr(4, 40);     /* CU_FUNC_ATTRIBUTE_NUM_REGS */
  set_attr(3, 24);     /* LOCAL_SIZE_BYTES */
  set_attr(1, 1234);   /* SHARED_SIZE_BYTES */
  fake_call_int(lib, "fake_cuda_set_occupancy", 2);
  tk_module *m;
  tk_kernel *k;
  assert_int_equal(tk_module_compile(ctx, &m, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", NULL), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, "vcopy", &k), TK_OK);
  void *all = launch_vcopy(lib, k, 0x1000, 0x2000, 4096);
  int loads = fake_loads(lib);
  char *saved = getenv("TK_PTXAS") ? strdup(getenv("TK_PTXAS")) : NULL;
  setenv("TK_PTXAS", "/nonexistent/ptxas", 1);
  tk_resources r;
  memset(&r, 0x55, sizeof r);
  assert_int_equal(tk_kernel_resources(k, NULL, &r), TK_OK);
  assert_int_equal(r.source, TK_RES_DRIVER);
  assert_int_equal(r.regs, 40);
  assert_int_equal(r.stack, 24);
  assert_int_equal(r.spill_stores, -1); /* the driver cannot tell spills from the stack */
  assert_int_equal(r.spill_loads, -1);
  assert_int_equal(r.smem_static, 1234);
  assert_int_equal(r.smem_dynamic, 0); /* vcopy needs none */
  assert_int_equal(r.threads, tk_kernel_num_threads(k));
  assert_int_equal(r.blocks_per_sm, 2);
  /* 2 blocks of 4 warps over the 64 warps of an sm_90 SM (the target table) */
  assert_true(fabs(r.occupancy - 2.0 * 4 / 64) < 1e-12);
  assert_int_equal(query()->threads, r.threads);
  assert_int_equal(query()->dynamic_smem, 0);
  void *any = query()->fn;
  assert_true(any != all);
  assert_int_equal(fake_loads(lib), loads + 1); /* the variant for any arguments, loaded */
  /* asked again: nothing more to load */
  assert_int_equal(tk_kernel_resources(k, NULL, &r), TK_OK);
  assert_int_equal(fake_loads(lib), loads + 1);
  assert_true(query()->fn == any);
  /* the launches run what they ran, and unaligned, ragged arguments run the measured one */
  assert_true(launch_vcopy(lib, k, 0x1000, 0x2000, 4096) == all);
  assert_true(launch_vcopy(lib, k, 0x1004, 0x2004, 1001) == any);
  assert_int_equal(fake_loads(lib), loads + 1);
  /* only the context's arch can be asked of the driver */
  assert_int_equal(tk_kernel_resources(k, "sm_80", &r), TK_ERR_UNSUPPORTED);
  assert_non_null(strstr(tk_last_error(ctx), "has no ptxas"));
  assert_non_null(strstr(tk_last_error(ctx), "not sm_80"));

  /* the dynamic shared memory is the kernel's own, as launched */
  static const char TRANS_TK[] = "kernel t(x: *f32, y: *f32) {\n"
                                 "    let r = arange(0, 128);\n"
                                 "    let v = load(x + r[:, None] * 128 + r[None, :]);\n"
                                 "    store(y + r[:, None] * 128 + r[None, :], trans(v));\n"
                                 "}\n";
  tk_module *tm;
  tk_kernel *tp;
  assert_int_equal(tk_module_compile(ctx, &tm, TRANS_TK, strlen(TRANS_TK), "t.tk", NULL), TK_OK);
  assert_int_equal(tk_module_get_kernel(tm, "t", &tp), TK_OK);
  assert_int_equal(tk_kernel_resources(tp, NULL, &r), TK_OK);
  assert_int_equal(r.source, TK_RES_DRIVER);
  assert_true(r.smem_dynamic >= 128 * 128 * 4);
  assert_int_equal(query()->dynamic_smem, (size_t)r.smem_dynamic);
  assert_int_equal(query()->threads, r.threads);
  /* with ptxas, when this machine has it: the same dynamic shared memory and threads */
  if (saved) setenv("TK_PTXAS", saved, 1); else unsetenv("TK_PTXAS");
  tk_resources p;
  tk_status s = tk_kernel_resources(tp, NULL, &p);
  if (s == TK_OK && p.source == TK_RES_PTXAS) {
    assert_int_equal(p.smem_dynamic, r.smem_dynamic);
    assert_int_equal(p.threads, r.threads);
  } else {
    assert_int_equal(s, TK_OK); /* no ptxas here: the driver again */
    assert_int_equal(p.source, TK_RES_DRIVER);
  }
  /* a kernel loaded from PTX has no IR for ptxas: the driver measures it, ptxas or not */
  tk_module *pm;
  tk_kernel *pk;
  assert_int_equal(tk_module_load_ptx(ctx, &pm, FILL_PTX, strlen(FILL_PTX)), TK_OK);
  assert_int_equal(tk_module_get_kernel(pm, "fill", &pk), TK_OK);
  assert_int_equal(tk_kernel_resources(pk, NULL, &r), TK_OK);
  assert_int_equal(r.source, TK_RES_DRIVER);
  assert_int_equal(r.regs, 40);
  assert_int_equal(r.threads, tk_kernel_num_threads(pk));
  /* a dead context says so */
  fake_call_int(lib, "fake_cuda_fault", 700);
  assert_int_equal(tk_synchronize(ctx), TK_ERR_RUNTIME);
  setenv("TK_PTXAS", "/nonexistent/ptxas", 1);
  assert_int_equal(tk_kernel_resources(tp, NULL, &r), TK_ERR_RUNTIME);
  assert_non_null(strstr(tk_last_error(ctx), "context is dead"));
  if (saved) setenv("TK_PTXAS", saved, 1); else unsetenv("TK_PTXAS");
  free(saved);
  fake_call_int(lib, "fake_cuda_reset", 0);
  fake_done(ctx, lib, dir);
}

/* CUDA graphs: while the stream captures, a launch of a compiled variant goes through,
 * one that would compile is refused with a message saying to warm up first. */
static void test_fake_capture(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  void (*set_capturing)(int) = (void (*)(int))fake_sym(lib, "fake_cuda_set_capturing");
  tk_module *m;
  tk_kernel *k;
  assert_int_equal(tk_module_compile(ctx, &m, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", NULL), TK_OK);
  assert_int_equal(tk_module_get_kernel(m, "vcopy", &k), TK_OK);
  int loads = fake_loads(lib);
  set_capturing(1);
  launch_vcopy(lib, k, 0x1000, 0x2000, 4096); /* the eager variant */
  tk_arg args[] = {tk_arg_ptr(0x1000), tk_arg_ptr(0x2000), tk_arg_i32(1000)};
  assert_int_equal(tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 3), TK_ERR_INVALID);
  assert_non_null(strstr(tk_last_error(ctx), "capturing a CUDA graph"));
  assert_non_null(strstr(tk_last_error(ctx), "before capturing"));
  assert_int_equal(fake_loads(lib), loads);
  set_capturing(0);
  launch_vcopy(lib, k, 0x1000, 0x2000, 1000); /* warmed up outside the capture */
  set_capturing(1);
  launch_vcopy(lib, k, 0x1000, 0x2000, 1000);
  assert_int_equal(fake_loads(lib), loads + 1);
  set_capturing(0);
  fake_done(ctx, lib, dir);
}

static tk_grid vcopy_grid(void *user, const tk_kernel *k) {
  (void)user, (void)k;
  return (tk_grid){4, 1, 1};
}

/* tk_tune on the CUDA backend (the fake driver's events always say 1 ms): compiles in
 * parallel through the cache, times through events, keeps the winner on disk. */
static void test_fake_tune(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  tk_define b[3][1] = {{{"BLOCK", "128"}}, {{"BLOCK", "256"}}, {{"BLOCK", "512"}}};
  tk_tune_config cs[3] = {{b[0], 1, 0, 0}, {b[1], 1, 4, 0}, {b[2], 1, 0, 2}};
  tk_arg args[] = {tk_arg_ptr(0x1000), tk_arg_ptr(0x2000), tk_arg_i32(4096)};
  tk_tune_options t = {.key = "n=4096", .reps = 3, .jobs = 3};
  int best = -1;
  double times[3];
  tk_module *m = NULL;
  /* the parallel compiles' contexts find the driver and the cache as the first did */
  setenv("TK_LIBCUDA", getenv("TK_FAKE_LIBCUDA"), 1);
  setenv("TK_CACHE_DIR", dir, 1);
  int loads = fake_loads(lib);
  assert_int_equal(tk_tune(ctx, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", "vcopy", NULL, cs, 3,
                           vcopy_grid, NULL, NULL, args, 3, &t, &best, times, &m), TK_OK);
  unsetenv("TK_LIBCUDA");
  unsetenv("TK_CACHE_DIR");
  assert_int_equal(fake_loads(lib), loads + 6); /* each configuration by a worker, then here */
  assert_int_equal(best, 0); /* all equal: the first */
  for (int i = 0; i < 3; i++) assert_true(times[i] == 1.0);
  assert_int_equal(cache_entries(dir), 4); /* three modules' PTX and the winner */
  tk_module_destroy(m);
  loads = fake_loads(lib);
  assert_int_equal(tk_tune(ctx, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", "vcopy", NULL, cs, 3,
                           vcopy_grid, NULL, NULL, args, 3, &t, &best, times, &m), TK_OK);
  assert_int_equal(best, 0);
  assert_true(times[0] < 0 && times[1] < 0 && times[2] < 0);
  assert_int_equal(fake_loads(lib), loads + 1); /* the winner alone */
  tk_module_destroy(m);
  fake_done(ctx, lib, dir);
}

/* The key of vcopy's eager variant (every parameter specialized) as a compile in a fake
 * context computes it (sm_90a: the fake is a 9.0 device), by compiler id, or (id NULL)
 * as tk did before it keyed its compiler: tag, version and inputs only. */
static rt_cache_key vcopy_key(const rt_compiler_id *id) {
  rt_cache_key base;
  if (id) {
    base = rt_cache_key_compile_id(id, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", NULL, "sm_90a");
  } else {
    rt_key_builder b;
    rt_key_init(&b);
    rt_key_str(&b, "tk-jit-ptx");
    rt_key_str(&b, TK_VERSION);
    rt_key_field(&b, VCOPY_TK, strlen(VCOPY_TK));
    rt_key_str(&b, "vcopy.tk");
    rt_key_str(&b, "sm_90a");
    rt_key_int(&b, 3);
    rt_key_int(&b, 0);
    base = rt_key_final(&b);
  }
  return rt_cache_key_variant(&base, NULL, RT_SPEC_ALL);
}

/* Compiles vcopy in ctx; returns the PTX the driver was given. */
static const char *compile_vcopy(tk_context *ctx, void *lib) {
  tk_module *m;
  if (tk_module_compile(ctx, &m, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", NULL) != TK_OK)
    fail_msg("%s", tk_last_error(ctx));
  tk_module_destroy(m);
  return fake_last_ptx(lib);
}

/* A cache on dir as this process writes it (c, in a), and this process's compiler (id). */
static void open_cache(rt_cache *c, su_arena *a, const char *dir, rt_compiler_id *id) {
  rt_cache_open(c, a, dir);
  assert_non_null(c->dir);
  rt_compiler_id_current(id);
}

static const char PLANTED[] = "// planted PTX\n.version 8.0\n.target sm_90a\n";

/* A cache filled by other builds — another tk build, LLVM or libdevice, under the keys
 * they compute and naming themselves as writers, or the tk before compiler identities
 * were keyed — serves this build nothing; what this build stores, it serves. */
static void test_fake_cache_other_builds(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  su_arena *a = su_arena_new();
  rt_cache c;
  rt_compiler_id id;
  open_cache(&c, a, dir, &id);
  rt_compiler_id other[3] = {id, id, id};
  other[0].build = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  other[1].llvm[2] += 1;
  other[2].libdevice.b[0] ^= 0x80;
  for (int i = 0; i < 3; i++) {
    rt_cache theirs = c;
    theirs.writer = rt_compiler_writer(&other[i]);
    rt_cache_key k = vcopy_key(&other[i]);
    assert_true(rt_cache_put(&theirs, &k, PLANTED, sizeof PLANTED - 1));
  }
  rt_cache_key before = vcopy_key(NULL);
  assert_true(rt_cache_put(&c, &before, PLANTED, sizeof PLANTED - 1));
  /* another build's PTX under this build's own key */
  rt_cache theirs = c;
  theirs.writer = rt_compiler_writer(&other[0]);
  rt_cache_key ours = vcopy_key(&id);
  assert_true(rt_cache_put(&theirs, &ours, PLANTED, sizeof PLANTED - 1));
  const char *ptx = compile_vcopy(ctx, lib);
  assert_null(strstr(ptx, "planted"));
  assert_non_null(strstr(ptx, ".entry vcopy"));
  /* The control: this build's own entry under that key is what a compile loads. */
  assert_true(rt_cache_put(&c, &ours, PLANTED, sizeof PLANTED - 1));
  assert_non_null(strstr(compile_vcopy(ctx, lib), "planted"));
  su_arena_free(a);
  fake_done(ctx, lib, dir);
}

/* An entry that passes every check of the cache but that the driver rejects is evicted
 * and rebuilt, once: the compile succeeds and the cache then holds the good PTX. */
static void test_fake_cache_rejected_entry(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  tk_context *ctx = fake_context(&lib, dir);
  su_arena *a = su_arena_new();
  rt_cache c;
  rt_compiler_id id;
  open_cache(&c, a, dir, &id);
  rt_cache_key k = vcopy_key(&id);
  assert_true(rt_cache_put(&c, &k, BAD_PTX, strlen(BAD_PTX)));
  int loads = fake_loads(lib);
  const char *ptx = compile_vcopy(ctx, lib);
  assert_int_equal(fake_loads(lib), loads + 1);
  assert_null(strstr(ptx, "frobnicate"));
  su_buf out = {0};
  assert_true(rt_cache_get(&c, &k, &out));
  assert_null(strstr(su_buf_str(&out), "frobnicate"));
  assert_non_null(strstr(su_buf_str(&out), ".entry vcopy"));
  su_buf_free(&out);
  su_arena_free(a);
  fake_done(ctx, lib, dir);
}

/* The device's compute capability picks the arch from the target table: an Ampere part
 * other than 8.0 gets its own, a device older than every target is refused (and AUTO
 * falls back to the interpreter); an arch in the options overrides the device's. */
static void test_fake_arch_from_device(void **state) {
  (void)state;
  void *lib;
  char dir[] = "/tmp/tk-fake-cache-XXXXXX";
  const char *path = getenv("TK_FAKE_LIBCUDA");
  if (!path || !*path) skip();
  void *knobs = dlopen(path, RTLD_NOW | RTLD_LOCAL); /* held open: the knob must last */
  assert_non_null(knobs);
  void (*set_cc)(int, int);
  void *sym = fake_sym(knobs, "fake_cuda_set_cc");
  memcpy(&set_cc, &sym, sizeof sym);
  set_cc(8, 6);
  tk_context *ctx = fake_context(&lib, dir);
  tk_module *m;
  assert_int_equal(tk_module_compile(ctx, &m, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", NULL), TK_OK);
  assert_non_null(strstr(fake_last_ptx(lib), ".target sm_86"));
  tk_compile_options o = {.arch = "sm_80"};
  assert_int_equal(tk_module_compile(ctx, &m, VCOPY_TK, strlen(VCOPY_TK), "vcopy.tk", &o), TK_OK);
  assert_non_null(strstr(fake_last_ptx(lib), ".target sm_80"));
  set_cc(7, 5);
  setenv("TK_LIBCUDA", path, 1);
  tk_context *old = NULL;
  assert_int_equal(tk_context_create(&old, &(tk_context_options){TK_BACKEND_CUDA, 0}),
                   TK_ERR_UNSUPPORTED);
  assert_non_null(strstr(tk_last_error(NULL), "compute capability 7.5, older than every target"));
  /* a device is there: AUTO reports it rather than quietly interpreting */
  assert_int_equal(tk_context_create(&old, NULL), TK_ERR_UNSUPPORTED);
  assert_null(old);
  assert_non_null(strstr(tk_last_error(NULL), "compute capability 7.5, older than every target"));
  unsetenv("TK_LIBCUDA");
  set_cc(9, 0);
  fake_done(ctx, lib, dir);
  dlclose(knobs);
}

/* ---- host-only tests (run everywhere) ------------------------------------------------ */

static void test_no_driver_is_no_device(void **state) {
  (void)state;
  setenv("TK_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  tk_context *ctx = NULL;
  tk_status s = tk_context_create(&ctx, &(tk_context_options){TK_BACKEND_CUDA, 0});
  assert_int_equal(s, TK_ERR_NO_DEVICE);
  assert_null(ctx);
  assert_non_null(strstr(tk_last_error(NULL), "no CUDA device"));
  assert_non_null(strstr(tk_last_error(NULL), "libcuda"));
  /* AUTO falls back to the interpreter */
  s = tk_context_create(&ctx, NULL);
  assert_int_equal(s, TK_OK);
  assert_int_equal(tk_context_backend(ctx), TK_BACKEND_INTERP);
  tk_context_destroy(ctx);
  unsetenv("TK_LIBCUDA");
}

static void test_ptx_signatures(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  rt_ptx_entry *es;
  assert_int_equal(rt_ptx_entries(a, FILL_PTX, strlen(FILL_PTX), &es), 1);
  assert_string_equal(es[0].name, "fill");
  assert_int_equal(es[0].nparams, 3);
  assert_int_equal(es[0].params[0].type, TK_PTR);
  assert_int_equal(es[0].params[1].type, TK_I32);
  assert_int_equal(es[0].params[2].type, TK_F32);
  assert_string_equal(es[0].params[2].name, "fill_param_2");
  assert_int_equal(es[0].num_threads, 64);
  static const char two[] =
    ".entry a() /* .entry fake( */ { ret; }\n"
    ".visible .entry b(.param .s64 x, .param .f64 y, .param .b16 z)\n.reqntid 256\n{ ret; }\n"
    ".entry agg(.param .align 8 .b8 s[16]) { ret; }\n"
    ".entry half(.param .align 2 .b8 h[2], .param .u8 c) { ret; }\n";
  assert_int_equal(rt_ptx_entries(a, two, strlen(two), &es), 3); /* the aggregate is skipped */
  assert_string_equal(es[0].name, "a");
  assert_int_equal(es[0].nparams, 0);
  assert_int_equal(es[0].num_threads, 0);
  assert_int_equal(es[1].nparams, 3);
  assert_int_equal(es[1].params[0].type, TK_I64);
  assert_int_equal(es[1].params[1].type, TK_F64);
  assert_int_equal(es[1].params[2].type, TK_I16);
  assert_int_equal(es[1].num_threads, 256);
  assert_string_equal(es[2].name, "half");
  assert_int_equal(es[2].nparams, 2);
  assert_int_equal(es[2].params[0].type, TK_F16);
  assert_int_equal(es[2].params[1].type, TK_I8);
  /* garbage and truncations never crash and yield nothing or a prefix */
  for (size_t cut = 0; cut < strlen(FILL_PTX); cut += 7)
    assert_true(rt_ptx_entries(a, FILL_PTX, cut, &es) <= 1);
  char junk[4096];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(gh_rng_next(&G.h) & 0xff);
  assert_true(rt_ptx_entries(a, junk, sizeof junk, &es) >= 0);
  assert_int_equal(rt_ptx_entries(a, ".entry", 6, &es), 0);
  /* tk's own TMA kernels take their tensor maps as 128-byte aggregates, the hidden
   * arguments the .tk.abi line places after the user's (tk_module_load_ptx of tkc's PTX
   * found no kernel in them); an aggregate anywhere else still makes the entry unreadable */
  static const char tmapped[] =
      "// .tk.abi k threads=128 persistent=1 tmaps=1\n"
      "// .tk.tmap k 0 f16 base=%0 dims=%2,%3 strides=%3 box=64,64 swizzle=128\n"
      ".visible .entry k(.param .u64 .ptr .global .align 16 k_param_0, .param .align 64 .b8 k_param_1[128],\n"
      "  .param .u32 k_param_2, .param .u32 k_param_3, .param .u32 k_param_4) { ret; }\n"
      "// .tk.abi early threads=128 persistent=1 tmaps=1\n"
      "// .tk.tmap early 0 f16 base=%1 dims=%2,%3 strides=%3 box=64,64 swizzle=128\n"
      ".visible .entry early(.param .align 64 .b8 early_param_0[128], .param .u32 early_param_1,\n"
      "  .param .u32 early_param_2, .param .u32 early_param_3, .param .u32 early_param_4) { ret; }\n"
      ".visible .entry noabi(.param .align 64 .b8 noabi_param_0[128]) { ret; }\n";
  assert_int_equal(rt_ptx_entries(a, tmapped, strlen(tmapped), &es), 1);
  assert_string_equal(es[0].name, "k");
  assert_int_equal(es[0].nparams, 5);
  assert_int_equal(es[0].params[0].type, TK_PTR);
  assert_int_equal(es[0].params[1].type, TK_NDTYPE);
  su_arena_free(a);
}

int main(void) {
  gh_init(&G.h, "gpu_tests");
  G.samples = getenv("TK_SAMPLES_DIR") ? getenv("TK_SAMPLES_DIR") : "samples";

  const struct CMUnitTest host[] = {
    cmocka_unit_test(test_no_driver_is_no_device),
    cmocka_unit_test(test_ptx_signatures),
    cmocka_unit_test(test_fake_no_device),
    cmocka_unit_test(test_fake_init_failure),
    cmocka_unit_test(test_fake_buffers_and_contexts),
    cmocka_unit_test(test_fake_sticky_fault),
    cmocka_unit_test(test_fake_capture),
    cmocka_unit_test(test_fake_tune),
    cmocka_unit_test(test_fake_launch_packing),
    cmocka_unit_test(test_fake_pdl),
    cmocka_unit_test(test_fake_cluster),
    cmocka_unit_test(test_fake_nofuse_scratch),
    cmocka_unit_test(test_fake_workspace),
    cmocka_unit_test(test_fake_ptx_paths),
    cmocka_unit_test(test_fake_specialization),
    cmocka_unit_test(test_fake_scale_specialization),
    cmocka_unit_test(test_fake_resources_from_driver),
    cmocka_unit_test(test_fake_roofline_card),
    cmocka_unit_test(test_fake_cache_other_builds),
    cmocka_unit_test(test_fake_cache_rejected_entry),
    cmocka_unit_test(test_fake_arch_from_device),
  };
  enum { NCASES = sizeof cases / sizeof cases[0] };
  struct CMUnitTest dev[2 * NCASES + 4 + NKEEP] = {
    cmocka_unit_test(test_aot_ptx),
    cmocka_unit_test(test_bad_ptx_reports_log),
    cmocka_unit_test(test_scalar_abi),
    cmocka_unit_test(test_jit_cache),
  };
  static char nofuse_names[NCASES][64];
  for (int i = 0; i < NCASES; i++) {
    dev[4 + i] = (struct CMUnitTest){cases[i].name, test_case, NULL, NULL, (void *)&cases[i]};
    snprintf(nofuse_names[i], sizeof nofuse_names[i], "%s -fno-fuse", cases[i].name);
    dev[4 + NCASES + i] =
        (struct CMUnitTest){nofuse_names[i], test_case_nofuse, NULL, NULL, (void *)&cases[i]};
  }
  for (int i = 0; i < NKEEP; i++)
    dev[4 + 2 * NCASES + i] =
        (struct CMUnitTest){keep_tests[i].name, test_case_keep, NULL, NULL, (void *)&keep_tests[i]};
  return gh_run(&G.h, host, sizeof host / sizeof *host, dev, 2 * NCASES + 4 + NKEEP);
}
