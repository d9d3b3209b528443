/* Unit tests of the fusion pass (fuse.c): kernels compiled from .tk through the pipeline
 * with and without fuse run on the interpreter over the same random inputs (ragged
 * lengths included) and must write the same memory; the fused IR has the expected
 * loops and no tile wider than a chunk; kernels outside the pass's class are unchanged.
 *
 * The kernels use one warp, so a tile is wide above 32 * 32 = 1024 values and a chunk
 * holds 32 * 16 = 512: small enough for the interpreter. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "interp/interp.h"
#include "passes/passes.h"
#include "sema/sema.h"
#include "tests/unit/pass_check.h"

enum { CHUNK = 512 };

static const char *const WITH = "canonicalize,licm,canonicalize,fuse,tiling";
static const char *const WITHOUT = "canonicalize,licm,canonicalize,tiling";
/* -fno-fuse's pipeline: every op's result through global scratch memory */
static const char *const MATERIALIZED = "canonicalize,licm,canonicalize,materialize,tiling";

/* The keep fuse is forced to (an ir_keep) in compile: each check runs every choice. */
static int g_keep = IR_KEEP_AUTO;

/* src with BLOCK bound to block, through the passes. */
static ir_module *compile(su_arena *a, const char *src, int block, const char *passes) {
  sema_define def = {"BLOCK", su_fmt(a, "%d", block)};
  return pk_compile_keep(a, src, &def, 1, passes, g_keep);
}

typedef struct {
  ir_opcode opc;
  int n;
  int64_t widest; /* the most elements of any tile value */
} census;

static void count_op(ir_op *op, void *ctx) {
  census *c = ctx;
  c->n += op->opc == c->opc;
  for (int i = 0; i < op->nresults; i++)
    if (op->results[i]->type->kind == IR_TILE && ir_type_numel(op->results[i]->type) > c->widest)
      c->widest = ir_type_numel(op->results[i]->type);
}

static census count(const ir_module *m, ir_opcode opc) {
  census c = {opc, 0, 0};
  for (int k = 0; k < m->nfuncs; k++) ir_walk(m->funcs[k]->body, count_op, &c);
  return c;
}

/* ---- running both versions ---------------------------------------------------------------- */

typedef enum { BUF_F32, BUF_I32, BUF_U32, BUF_I64, VAL_I32, VAL_I64, VAL_F32 } arg_kind;

/* A kernel argument: a buffer of n elements filled with random values in [lo, hi) (whole
 * numbers for integer buffers), or a scalar of value lo. */
typedef struct {
  arg_kind kind;
  int64_t n;
  double lo, hi;
} arg_spec;

enum { MAX_ARGS = 10 };

static int elem_bytes(arg_kind k) { return k == BUF_I64 ? 8 : 4; }

static void fill(void *p, const arg_spec *s, uint64_t *rng) {
  for (int64_t i = 0; i < s->n; i++) {
    double u = (double)pk_next_random(rng) / 9007199254740992.0; /* [0, 1) */
    double v = s->lo + u * (s->hi - s->lo);
    switch (s->kind) {
    case BUF_F32: ((float *)p)[i] = (float)v; break;
    case BUF_I32: ((int32_t *)p)[i] = (int32_t)floor(v); break;
    case BUF_U32: ((uint32_t *)p)[i] = (uint32_t)floor(v); break;
    case BUF_I64: ((int64_t *)p)[i] = (int64_t)floor(v); break;
    default: break;
    }
  }
}

typedef struct {
  ip_memory *mem;
  tk_devptr ptr[MAX_ARGS];
} run_result;

/* Runs the only kernel of m on grid over buffers filled from seed; returns the memory. */
static run_result run(const ir_module *m, const arg_spec *specs, int nargs, tk_grid grid,
                      uint64_t seed) {
  run_result r = {ip_memory_new(), {0}};
  tk_arg args[MAX_ARGS];
  su_buf err = {0};
  uint64_t rng = seed;
  for (int i = 0; i < nargs; i++) {
    const arg_spec *s = &specs[i];
    switch (s->kind) {
    case VAL_I32: args[i] = tk_arg_i32((int32_t)s->lo); break;
    case VAL_I64: args[i] = tk_arg_i64((int64_t)s->lo); break;
    case VAL_F32: args[i] = tk_arg_f32((float)s->lo); break;
    default: {
      size_t bytes = (size_t)s->n * (size_t)elem_bytes(s->kind);
      assert_true(ip_mem_alloc(r.mem, bytes, &r.ptr[i], &err));
      fill(ip_mem_host(r.mem, r.ptr[i], bytes, &err), s, &rng);
      args[i] = tk_arg_ptr(r.ptr[i]);
    }
    }
  }
  ip_status st = ip_launch(r.mem, m, m->funcs[0], grid, args, nargs, NULL, &err);
  if (st != IP_OK) fail_msg("launch failed: %s", su_buf_str(&err));
  su_buf_free(&err);
  return r;
}

/* Equal up to a relative 1e-4 (sums reassociated) or the absolute atol (for results that
 * cancel, as layernorm's (x - mean) * rstd * w + b). */
static bool close_enough(double a, double b, double atol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == b) return true;
  return fabs(a - b) <= atol + 1e-4 * fmax(fabs(a), fabs(b));
}

static double element(const void *p, arg_kind k, int64_t i) {
  switch (k) {
  case BUF_F32: return ((const float *)p)[i];
  case BUF_I32: return ((const int32_t *)p)[i];
  case BUF_U32: return ((const uint32_t *)p)[i];
  default: return (double)((const int64_t *)p)[i];
  }
}

/* Every buffer of a equals b's: floats within rounding (close_enough; bit for bit when
 * exact), integers exactly. */
static void compare_bufs(run_result *a, run_result *b, const arg_spec *specs, int nargs, double atol,
                         bool exact, const char *what) {
  su_buf err = {0};
  for (int i = 0; i < nargs; i++) {
    if (!a->ptr[i]) continue;
    size_t bytes = (size_t)specs[i].n * (size_t)elem_bytes(specs[i].kind);
    const void *pa = ip_mem_host(a->mem, a->ptr[i], bytes, &err);
    const void *pb = ip_mem_host(b->mem, b->ptr[i], bytes, &err);
    for (int64_t j = 0; j < specs[i].n; j++) {
      double x = element(pa, specs[i].kind, j), y = element(pb, specs[i].kind, j);
      bool ok = specs[i].kind == BUF_F32 && !exact ? close_enough(x, y, atol)
                : specs[i].kind == BUF_F32 ? memcmp(&((const float *)pa)[j], &((const float *)pb)[j], 4) == 0
                                           : x == y;
      if (!ok) fail_msg("%s: argument %d, element %lld: %.9g and %.9g", what, i, (long long)j, x, y);
    }
  }
  su_buf_free(&err);
}

/* The -fno-fuse build of src has scratch stores and, run over each argument list of
 * cases, writes what the build without fusion writes, bit for bit (the same ops on the
 * same values, through memory), and what the fused one writes within atol; for a kernel
 * that fuse leaves alone, atol < 0 skips the fused build. */
static void check_baseline(const char *src, int block, const arg_spec *cases, int ncases, int nargs,
                           tk_grid grid, double atol) {
  su_arena *a = su_arena_new();
  ir_module *mat = compile(a, src, block, MATERIALIZED);
  ir_module *plain = compile(a, src, block, WITHOUT);
  ir_module *fused = atol >= 0 ? compile(a, src, block, WITH) : NULL;
  assert_true(count(mat, IR_SCRATCH).n > 0);
  assert_int_equal(count(plain, IR_SCRATCH).n, 0);
  for (int k = 0; k < ncases; k++) {
    const arg_spec *c = cases + k * nargs;
    run_result r1 = run(mat, c, nargs, grid, 99u + (uint64_t)k);
    run_result r2 = run(plain, c, nargs, grid, 99u + (uint64_t)k);
    compare_bufs(&r1, &r2, c, nargs, 0, true, su_fmt(a, "-fno-fuse vs unfused, case %d", k));
    if (fused) {
      run_result r3 = run(fused, c, nargs, grid, 99u + (uint64_t)k);
      compare_bufs(&r1, &r3, c, nargs, atol, false, su_fmt(a, "-fno-fuse vs fused, case %d", k));
      ip_memory_free(r3.mem);
    }
    ip_memory_free(r1.mem);
    ip_memory_free(r2.mem);
  }
  su_arena_free(a);
}

/* Compiles src both ways, checks the fused one has `loops` loops more than the unfused
 * one (the user's own loops are in both) and no tile wider than a chunk, then runs both
 * over each argument list of cases (nargs each) and compares what they wrote: floats
 * within atol (see close_enough), or bit for bit when exact. For the keep g_keep. */
/* Runs m1 and m2 on each case (the same inputs: seed + case) and compares what they write. */
static void compare_runs(su_arena *a, ir_module *m1, ir_module *m2, const arg_spec *cases, int ncases, int nargs,
                         tk_grid grid, uint64_t seed, double atol, bool exact, const char *what) {
  for (int k = 0; k < ncases; k++) {
    run_result r1 = run(m1, cases + k * nargs, nargs, grid, seed + (uint64_t)k);
    run_result r2 = run(m2, cases + k * nargs, nargs, grid, seed + (uint64_t)k);
    compare_bufs(&r1, &r2, cases + k * nargs, nargs, atol, exact, su_fmt(a, "%s, case %d", what, k));
    ip_memory_free(r1.mem);
    ip_memory_free(r2.mem);
  }
}

static void check_kernel_keep(const char *src, int block, int loops, const arg_spec *cases, int ncases,
                              int nargs, tk_grid grid, double atol, bool exact) {
  su_arena *a = su_arena_new();
  ir_module *with = compile(a, src, block, WITH);
  ir_module *without = compile(a, src, block, WITHOUT);
  census c = count(with, IR_FOR);
  assert_int_equal(c.n - count(without, IR_FOR).n, loops);
  assert_true(c.widest <= CHUNK);
  compare_runs(a, with, without, cases, ncases, nargs, grid, 1234u, atol, exact, "fused vs unfused");
  su_arena_free(a);
  check_baseline(src, block, cases, ncases, nargs, grid, atol);
}

/* check_kernel_keep for each keep fuse can be forced to (recompute: `loops` loops; online:
 * `online` loops, its max/sum pairs fused; shared memory: `loops`, the IR being
 * recompute's until the target part stages the kept loads) and for the cost model's
 * choice (either count); a cluster, which the interpreter's target has not, falls back to
 * recompute's loops (the GPU tests run the split kernel against the interpreter). The online rewrite's results stay within atol plus the
 * relative 1e-4 of close_enough (docs/language.md, "Precision": its bound is far less). */
static void check_kernel_modes(const char *src, int block, int loops, int online, const arg_spec *cases,
                               int ncases, int nargs, tk_grid grid, double atol, bool exact) {
  const int keeps[] = {IR_KEEP_RECOMPUTE, IR_KEEP_ONLINE, IR_KEEP_SMEM, IR_KEEP_CLUSTER};
  for (int k = 0; k < (int)(sizeof keeps / sizeof *keeps); k++) {
    g_keep = keeps[k];
    check_kernel_keep(src, block, keeps[k] == IR_KEEP_ONLINE ? online : loops, cases, ncases, nargs,
                      grid, atol, exact);
  }
  g_keep = IR_KEEP_AUTO;
}

/* A kernel without max/sum pairs: every keep gives the same loops. */
static void check_kernel_ex(const char *src, int block, int loops, const arg_spec *cases, int ncases,
                            int nargs, tk_grid grid, double atol, bool exact) {
  check_kernel_modes(src, block, loops, loops, cases, ncases, nargs, grid, atol, exact);
}

static void check_kernel(const char *src, int block, int loops, const arg_spec *cases, int ncases,
                         int nargs, tk_grid grid, double atol) {
  check_kernel_ex(src, block, loops, cases, ncases, nargs, grid, atol, false);
}

/* ---- kernels in the class ------------------------------------------------------------------ */

static const char *const softmax =
    "@launch(warps = 1)\n"
    "kernel softmax<BLOCK: i32 = 1>(x: *f32, y: *f32, stride: i64, n: i32) {\n"
    "  let row = program_id(0) as i64;\n"
    "  let cols = arange(0, BLOCK);\n"
    "  let mask = cols < n;\n"
    "  let v = load(x + row * stride + cols, mask, -inf);\n"
    "  let e = exp(v - max(v, 0));\n"
    "  store(y + row * stride + cols, e / sum(e, 0), mask);\n"
    "}\n";

/* The softmax kernel's arguments (x, y, stride, n) for rows of ragged lengths around the
 * chunk size and up to the whole tile. */
enum { SM_ROWS = 3, SM_STRIDE = 4100, SM_NN = 9 };
static void softmax_cases(arg_spec cases[SM_NN][4]) {
  static const int ns[SM_NN] = {1, 5, 511, 512, 513, 1000, 2049, 4095, 4096};
  for (int k = 0; k < SM_NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, SM_ROWS * SM_STRIDE, -20, 20};
    cases[k][1] = (arg_spec){BUF_F32, SM_ROWS * SM_STRIDE, 0, 1};
    cases[k][2] = (arg_spec){VAL_I64, 0, SM_STRIDE, 0};
    cases[k][3] = (arg_spec){VAL_I32, 0, ns[k], 0};
  }
}

/* Three loops (max, sum of exp, normalize and store); rows of ragged lengths around the
 * chunk size and up to the whole tile. */
static void test_softmax(void **st) {
  (void)st;
  arg_spec cases[SM_NN][4];
  softmax_cases(cases);
  check_kernel_modes(softmax, 4096, 3, 2, &cases[0][0], SM_NN, 4, (tk_grid){SM_ROWS, 1, 1}, 1e-12, false);
}

/* Two loops (max, sum) around a scalar load of the target; a scalar store after them. */
/* The cross-entropy kernels' arguments (logits, targets, loss, stride, n) for ragged
 * row lengths, some rows' targets out of range (ignored). */
enum { CE_ROWS = 5, CE_STRIDE = 2048, CE_NN = 4 };
static void ce_cases(arg_spec cases[CE_NN][5]) {
  static const int ns[CE_NN] = {3, 600, 1500, 2048};
  for (int k = 0; k < CE_NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, CE_ROWS * CE_STRIDE, -8, 8};
    cases[k][1] = (arg_spec){BUF_I64, CE_ROWS, -2, ns[k]};
    cases[k][2] = (arg_spec){BUF_F32, CE_ROWS, 0, 1};
    cases[k][3] = (arg_spec){VAL_I64, 0, CE_STRIDE, 0};
    cases[k][4] = (arg_spec){VAL_I32, 0, ns[k], 0};
  }
}

static const char *const cross_entropy =
    "fn logsumexp(v) {\n"
    "  let m = max(v, 0);\n"
    "  return m + log(sum(exp(v - m), 0));\n"
    "}\n"
    "@launch(warps = 1)\n"
    "kernel ce<BLOCK: i32 = 1>(logits: *f32, targets: *i64, loss: *f32, stride: i64, n: i32) {\n"
    "  let row = program_id(0);\n"
    "  let xrow = logits + (row as i64) * stride;\n"
    "  let cols = arange(0, BLOCK);\n"
    "  let v = load(xrow + cols, cols < n, -inf);\n"
    "  let t = load(targets + row);\n"
    "  let valid = t >= 0 && t < n;\n"
    "  let xt = load(xrow + t, valid, 0.0);\n"
    "  store(loss + row, where(valid, logsumexp(v) - xt, 0.0));\n"
    "}\n";

static void test_cross_entropy(void **st) {
  (void)st;
  const char *src = cross_entropy;
  arg_spec cases[CE_NN][5];
  ce_cases(cases);
  check_kernel_modes(src, 2048, 2, 1, &cases[0][0], CE_NN, 5, (tk_grid){CE_ROWS, 1, 1}, 1e-6, false);
}

/* No reduction: one loop of loads and a store, offsets from program_id. */
static void test_vadd(void **st) {
  (void)st;
  const char *src = "@launch(warps = 1)\n"
                    "kernel vadd<BLOCK: i32 = 1>(x: *f32, y: *f32, z: *f32, n: i32) {\n"
                    "  let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
                    "  let mask = offs < n;\n"
                    "  store(z + offs, load(x + offs, mask) * 2.0 + load(y + offs, mask), mask);\n"
                    "}\n";
  enum { N = 5000 };
  arg_spec cases[4] = {{BUF_F32, N, -1, 1}, {BUF_F32, N, -1, 1}, {BUF_F32, N, 0, 1}, {VAL_I32, 0, N, 0}};
  check_kernel(src, 2048, 1, cases, 1, 4, (tk_grid){3, 1, 1}, 0);
}

/* Three loops; weight and bias are loaded only in the last, statistics stored after. */
static void test_layernorm(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel ln<BLOCK: i32 = 1>(x: *f32, y: *f32, w: *f32, b: *f32, mean: *f32, rstd: *f32,\n"
      "                      stride: i64, n: i32, eps: f32) {\n"
      "  let row = program_id(0);\n"
      "  let base = (row as i64) * stride;\n"
      "  let cols = arange(0, BLOCK);\n"
      "  let mask = cols < n;\n"
      "  let v = load(x + base + cols, mask, 0.0);\n"
      "  let wv = load(w + cols, mask);\n"
      "  let bv = load(b + cols, mask);\n"
      "  let mu = sum(v, 0) / (n as f32);\n"
      "  let d = where(mask, v - mu, 0.0);\n"
      "  let r = rsqrt(sum(d * d, 0) / (n as f32) + eps);\n"
      "  store(y + base + cols, d * r * wv + bv, mask);\n"
      "  store(mean + row, mu);\n"
      "  store(rstd + row, r);\n"
      "}\n";
  enum { ROWS = 2, STRIDE = 4096 };
  const int ns[] = {7, 1025, 4096};
  enum { NN = sizeof ns / sizeof *ns };
  arg_spec cases[NN][9];
  for (int k = 0; k < NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, ROWS * STRIDE, -3, 5};
    cases[k][1] = (arg_spec){BUF_F32, ROWS * STRIDE, 0, 1};
    cases[k][2] = (arg_spec){BUF_F32, STRIDE, 0.5, 1.5};
    cases[k][3] = (arg_spec){BUF_F32, STRIDE, -1, 1};
    cases[k][4] = (arg_spec){BUF_F32, ROWS, 0, 1};
    cases[k][5] = (arg_spec){BUF_F32, ROWS, 0, 1};
    cases[k][6] = (arg_spec){VAL_I64, 0, STRIDE, 0};
    cases[k][7] = (arg_spec){VAL_I32, 0, ns[k], 0};
    cases[k][8] = (arg_spec){VAL_F32, 0, 1e-5, 0};
  }
  check_kernel(src, 4096, 3, &cases[0][0], NN, 9, (tk_grid){ROWS, 1, 1}, 1e-5);
}

/* Integer sum (wrapping), signed max and min, unsigned min over an arange that does not
 * start at 0; a wide store in the same loop as the reductions. Exact comparison. */
static void test_integer_reductions(void **st) {
  (void)st;
  const char *src = "@launch(warps = 1)\n"
                    "kernel ints<BLOCK: i32 = 1>(a: *i32, u: *u32, y: *i32, out: *i32, uout: *u32, n: i32) {\n"
                    "  let idx = arange(16, 16 + BLOCK);\n"
                    "  let mask = idx < n;\n"
                    "  let v = load(a + idx, mask, 0);\n"
                    "  let w = load(u + idx, mask, 4294967295);\n"
                    "  let s = sum(v * 65537, 0);\n"
                    "  let hi = max(where(mask, v, -2147483648), 0);\n"
                    "  let lo = min(where(mask, v, 2147483647), 0);\n"
                    "  let ulo = min(w, 0);\n"
                    "  store(y + idx - 16, v * 3 + idx, mask);\n"
                    "  store(out, s);\n"
                    "  store(out + 1, hi);\n"
                    "  store(out + 2, lo);\n"
                    "  store(uout, ulo);\n"
                    "}\n";
  enum { N = 2048 + 16 };
  const int ns[] = {17, 700, N};
  enum { NN = sizeof ns / sizeof *ns };
  arg_spec cases[NN][6];
  for (int k = 0; k < NN; k++) {
    cases[k][0] = (arg_spec){BUF_I32, N, -2e9, 2e9};
    cases[k][1] = (arg_spec){BUF_U32, N, 1e5, 4e9};
    cases[k][2] = (arg_spec){BUF_I32, N, 0, 10};
    cases[k][3] = (arg_spec){BUF_I32, 3, 0, 10};
    cases[k][4] = (arg_spec){BUF_U32, 1, 0, 10};
    cases[k][5] = (arg_spec){VAL_I32, 0, ns[k], 0};
  }
  /* Four reductions and a store in one loop, closed by the first scalar store. */
  check_kernel(src, 2048, 1, &cases[0][0], NN, 6, (tk_grid){1, 1, 1}, 0);
}

/* argmax and argmin, float and integer: one loop carrying each lane's best value and its
 * position, combined after it. Integers in [0, 4) tie everywhere (the first occurrence must
 * win), masked lanes read the identity, and about one float in forty is a NaN (the first
 * NaN wins). Exact comparison: an index is an index. */
static void test_argmax_argmin(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, xi: *i32, out: *i32, n: i32) {\n"
      "  let c = arange(0, BLOCK);\n"
      "  let m = c < n;\n"
      "  let v = load(x + c, m, -inf);\n"
      "  let w = where(v > 1.9, (v - v) / (v - v), v);\n"
      "  let iv = load(xi + c, m, -5);\n"
      "  let a = argmax(v, 0);\n"
      "  let b = argmin(load(x + c, m, inf), 0);\n"
      "  let d = argmax(iv, 0);\n"
      "  let e = argmin(where(m, iv, 99), 0);\n"
      "  let f = argmax(w, 0);\n"
      "  let g = argmin(w, 0);\n"
      "  store(out, a);\n"
      "  store(out + 1, b);\n"
      "  store(out + 2, d);\n"
      "  store(out + 3, e);\n"
      "  store(out + 4, f);\n"
      "  store(out + 5, g);\n"
      "}\n";
  enum { N = 2048 };
  const int ns[] = {1, 37, 511, 513, 1500, N};
  const double his[] = {2, 2, 2, 2, 1.8, 2};
  enum { NN = sizeof ns / sizeof *ns };
  arg_spec cases[NN][4];
  for (int k = 0; k < NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, N, -2, his[k]};
    cases[k][1] = (arg_spec){BUF_I32, N, 0, 4};
    cases[k][2] = (arg_spec){BUF_I32, 6, 0, 1};
    cases[k][3] = (arg_spec){VAL_I32, 0, ns[k], 0};
  }
  check_kernel(src, N, 1, &cases[0][0], NN, 4, (tk_grid){1, 1, 1}, 0);
}

/* cumsum over a long row: each loop carries the running total, joined to a chunk's
 * first lane before its scan, so every prefix is summed in the unchunked order: bit for
 * bit. Masked loads, ragged lengths; a sum of the scan in the first loop, and a second
 * that recomputes the scan (its own carried total) next to an i32 scan (wrapping). */
static void test_cumsum(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, xi: *i32, y: *f32, yi: *i32, z: *f32, out: *f32, n: i32) {\n"
      "  let c = arange(0, BLOCK);\n"
      "  let m = c < n;\n"
      "  let v = load(x + c, m, 0.0);\n"
      "  let cs = cumsum(v, 0);\n"
      "  let t = sum(cs, 0) + 1.0;\n"
      "  store(y + c, cs, m);\n"
      "  store(yi + c, cumsum(load(xi + c, m, 7) * 65537, 0), m);\n"
      "  store(z + c, cs / t, m);\n"
      "  store(out, t);\n"
      "}\n";
  enum { N = 2048 };
  const int ns[] = {1, 300, 511, 512, 513, 1999, N};
  enum { NN = sizeof ns / sizeof *ns };
  arg_spec cases[NN][7];
  for (int k = 0; k < NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, N, -3, 5};
    cases[k][1] = (arg_spec){BUF_I32, N, -2e9, 2e9};
    cases[k][2] = (arg_spec){BUF_F32, N, 0, 1};
    cases[k][3] = (arg_spec){BUF_I32, N, 0, 1};
    cases[k][4] = (arg_spec){BUF_F32, N, 0, 1};
    cases[k][5] = (arg_spec){BUF_F32, 1, 0, 1};
    cases[k][6] = (arg_spec){VAL_I32, 0, ns[k], 0};
  }
  /* z divides by the reassociated sum: within rounding; the scans themselves exact. */
  check_kernel(src, N, 2, &cases[0][0], NN, 7, (tk_grid){1, 1, 1}, 1e-6);
  const char *exact =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32, n: i32) {\n"
      "  let c = arange(0, BLOCK);\n"
      "  store(y + c, cumsum(load(x + c, c < n, -0.0), 0), c < n);\n"
      "}\n";
  arg_spec ecases[3][3] = {{{BUF_F32, N, -1e3, 1e3}, {BUF_F32, N, 0, 1}, {VAL_I32, 0, 1, 0}},
                           {{BUF_F32, N, -1e3, 1e3}, {BUF_F32, N, 0, 1}, {VAL_I32, 0, 1537, 0}},
                           {{BUF_F32, N, 1e-3, 1e7}, {BUF_F32, N, 0, 1}, {VAL_I32, 0, N, 0}}};
  check_kernel_ex(exact, N, 1, &ecases[0][0], 3, 3, (tk_grid){1, 1, 1}, 0, true);
}

/* layernorm_rows: a [4, BLOCK] block of rows reduced along axis 1, the weight and bias
 * 1-D. Rows stay whole, the last axis is cut into chunks of 512 / 4 = 128; three loops.
 * Ragged row lengths and a last program whose rows are partly past nrows. */
static void test_rows_layernorm(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel ln<BLOCK: i32 = 1>(x: *f32, y: *f32, w: *f32, b: *f32, mean: *f32, rstd: *f32,\n"
      "                      stride: i64, n: i32, nrows: i32, eps: f32) {\n"
      "  let rows = program_id(0) * 4 + arange(0, 4);\n"
      "  let cols = arange(0, BLOCK);\n"
      "  let rmask = rows < nrows;\n"
      "  let cmask = cols < n;\n"
      "  let mask = rmask[:, None] && cmask[None, :];\n"
      "  let offs = (rows as i64)[:, None] * stride + cols[None, :];\n"
      "  let v = load(x + offs, mask, 0.0);\n"
      "  let mu = sum(v, 1) / (n as f32);\n"
      "  let d = where(mask, v - mu[:, None], 0.0);\n"
      "  let r = rsqrt(sum(d * d, 1) / (n as f32) + eps);\n"
      "  let wv = load(w + cols, cmask);\n"
      "  let bv = load(b + cols, cmask);\n"
      "  store(y + offs, d * r[:, None] * wv[None, :] + bv[None, :], mask);\n"
      "  store(mean + rows, mu, rmask);\n"
      "  store(rstd + rows, r, rmask);\n"
      "}\n";
  enum { NROWS = 7, STRIDE = 2048 };
  const int ns[] = {5, 127, 129, 1500, 2048};
  enum { NN = sizeof ns / sizeof *ns };
  arg_spec cases[NN][10];
  for (int k = 0; k < NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, 8 * STRIDE, -3, 5};
    cases[k][1] = (arg_spec){BUF_F32, 8 * STRIDE, 0, 1};
    cases[k][2] = (arg_spec){BUF_F32, STRIDE, 0.5, 1.5};
    cases[k][3] = (arg_spec){BUF_F32, STRIDE, -1, 1};
    cases[k][4] = (arg_spec){BUF_F32, 8, 0, 1};
    cases[k][5] = (arg_spec){BUF_F32, 8, 0, 1};
    cases[k][6] = (arg_spec){VAL_I64, 0, STRIDE, 0};
    cases[k][7] = (arg_spec){VAL_I32, 0, ns[k], 0};
    cases[k][8] = (arg_spec){VAL_I32, 0, NROWS, 0};
    cases[k][9] = (arg_spec){VAL_F32, 0, 1e-5, 0};
  }
  check_kernel(src, 2048, 3, &cases[0][0], NN, 10, (tk_grid){2, 1, 1}, 1e-5);
}

/* softmax_rows ([2, BLOCK], masked lanes read -inf), a 2-D argmax and argmin along axis 1
 * (ties and NaNs as the 1-D one) and a 2-D cumsum (one total per row): every reduction
 * along the last axis of a block of rows. */
static void test_rows_softmax_arg_scan(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32, c: *f32, am: *i32, stride: i64, n: i32, nrows: i32) {\n"
      "  let rows = program_id(0) * 2 + arange(0, 2);\n"
      "  let cols = arange(0, BLOCK);\n"
      "  let mask = rows[:, None] < nrows && cols[None, :] < n;\n"
      "  let offs = (rows as i64)[:, None] * stride + cols[None, :];\n"
      "  let v = load(x + offs, mask, -inf);\n"
      "  let w = where(v > 1.9, (v - v) / (v - v), floor(v));\n"
      "  let a = argmax(w, 1);\n"
      "  let b = argmin(where(mask, w, inf), 1);\n"
      "  let e = exp(v - max(v, 1)[:, None]);\n"
      "  store(y + offs, e / sum(e, 1)[:, None], mask);\n"
      "  store(c + offs, cumsum(where(mask, floor(v), 0.0), 1), mask);\n"
      "  store(am + rows * 2, a, rows < nrows);\n"
      "  store(am + rows * 2 + 1, b, rows < nrows);\n"
      "}\n";
  enum { NROWS = 3, STRIDE = 2048 };
  const int ns[] = {1, 255, 257, 2000, 2048};
  const double his[] = {2, 2, 1.8, 2, 1.8};
  enum { NN = sizeof ns / sizeof *ns };
  arg_spec cases[NN][7];
  for (int k = 0; k < NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, 4 * STRIDE, -2, his[k]};
    cases[k][1] = (arg_spec){BUF_F32, 4 * STRIDE, 0, 1};
    cases[k][2] = (arg_spec){BUF_F32, 4 * STRIDE, 0, 1};
    cases[k][3] = (arg_spec){BUF_I32, 8, 0, 1};
    cases[k][4] = (arg_spec){VAL_I64, 0, STRIDE, 0};
    cases[k][5] = (arg_spec){VAL_I32, 0, ns[k], 0};
    cases[k][6] = (arg_spec){VAL_I32, 0, NROWS, 0};
  }
  /* max and both argreduces; sum; normalize and scan */
  check_kernel_modes(src, 2048, 3, 2, &cases[0][0], NN, 7, (tk_grid){2, 1, 1}, 1e-6, false);
}

/* Reductions, argreduces and scans along the rows of a block (axis 0 of [4, BLOCK]): each
 * combines within a column, so within a chunk; next to a row sum along axis 1 that feeds
 * a second loop. Exact: the same additions in the same order. */
static void test_rows_column_ops(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, cs: *f32, cm: *i32, sc: *f32, d: *f32, n: i32) {\n"
      "  let r = arange(0, 4);\n"
      "  let c = arange(0, BLOCK);\n"
      "  let m = r[:, None] < 4 && c[None, :] < n;\n"
      "  let offs = r[:, None] * BLOCK + c[None, :];\n"
      "  let v = load(x + offs, m, 0.0);\n"
      "  let rs = sum(v, 1);\n"
      "  store(d + offs, v - rs[:, None], m);\n"
      "  store(cs + c, sum(v, 0) + max(v, 0), c < n);\n"
      "  store(cm + c, argmax(floor(v), 0), c < n);\n"
      "  store(sc + offs, cumsum(v, 0), m);\n"
      "}\n";
  enum { N = 2048 };
  const int ns[] = {1, 127, 129, 2000, N};
  enum { NN = sizeof ns / sizeof *ns };
  arg_spec cases[NN][6];
  for (int k = 0; k < NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, 4 * N, -3, 3};
    cases[k][1] = (arg_spec){BUF_F32, N, 0, 1};
    cases[k][2] = (arg_spec){BUF_I32, N, 0, 1};
    cases[k][3] = (arg_spec){BUF_F32, 4 * N, 0, 1};
    cases[k][4] = (arg_spec){BUF_F32, 4 * N, 0, 1};
    cases[k][5] = (arg_spec){VAL_I32, 0, ns[k], 0};
  }
  /* the row sums; the difference and the column ops in the second loop */
  check_kernel_ex(src, N, 2, &cases[0][0], NN, 6, (tk_grid){1, 1, 1}, 0, false);
}

/* A user loop carrying wide tiles lane by lane (row_sum_chunked's accumulator, a running
 * max, a [2, BLOCK] block): interchanged, the chunk loop outside running the user loop on
 * one chunk of what it carries; the result feeds a reduction and a store. Ragged row
 * lengths over several of the user's steps; exact (each lane adds in the same order, and
 * the final sum of a whole-number tile is exact). */
static void test_interchange(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, out: *f32, y: *f32, z: *f32, n: i32) {\n"
      "  var acc = zeros<f32>(BLOCK);\n"
      "  var hi = full<f32>(-inf, BLOCK);\n"
      "  var blk = zeros<f32>(2, BLOCK);\n"
      "  for start in range(0, n, BLOCK) {\n"
      "    let cols = start + arange(0, BLOCK);\n"
      "    let v = floor(load(x + cols, cols < n, 0.0));\n"
      "    acc += v;\n"
      "    hi = maximum(hi, where(cols < n, v, -inf));\n"
      "    blk = blk + v[None, :] * (arange(0, 2) + 1)[:, None];\n"
      "  }\n"
      "  let c = arange(0, BLOCK);\n"
      "  store(y + c, hi);\n"
      "  store(z + arange(0, 2)[:, None] * BLOCK + c[None, :], blk);\n"
      "  store(out, sum(acc, 0));\n"
      "}\n";
  enum { B = 2048, X = 4 * B };
  const int ns[] = {1, 700, 2048, 2049, 5000, X};
  enum { NN = sizeof ns / sizeof *ns };
  arg_spec cases[NN][5];
  for (int k = 0; k < NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, X, -50, 50};
    cases[k][1] = (arg_spec){BUF_F32, 1, 0, 1};
    cases[k][2] = (arg_spec){BUF_F32, B, 0, 1};
    cases[k][3] = (arg_spec){BUF_F32, 2 * B, 0, 1};
    cases[k][4] = (arg_spec){VAL_I32, 0, ns[k], 0};
  }
  /* one chunk loop for both stores and the sum, the copy of the user's loop inside it in
   * place of the original: one loop more */
  check_kernel_ex(src, B, 1, &cases[0][0], NN, 5, (tk_grid){1, 1, 1}, 0, true);
}

/* Wide tiles in the body of a user loop (softmax of each of m rows, the column arange
 * hoisted out by licm and rebuilt in the chunk loops) and in both branches of an if. */
static void test_in_loop_and_if(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32, z: *f32, stride: i64, n: i32, m: i32) {\n"
      "  let cols = arange(0, BLOCK);\n"
      "  let mask = cols < n;\n"
      "  for j in range(0, m) {\n"
      "    let base = (j as i64) * stride;\n"
      "    let v = load(x + base + cols, mask, -inf);\n"
      "    let e = exp(v - max(v, 0));\n"
      "    store(y + base + cols, e / sum(e, 0), mask);\n"
      "  }\n"
      "  if n > 700 {\n"
      "    store(z + cols, cumsum(load(x + cols, mask, 0.0), 0), mask);\n"
      "  } else {\n"
      "    let v = load(x + cols, mask, 0.0);\n"
      "    store(z + cols, v - sum(v, 0), mask);\n"
      "  }\n"
      "}\n";
  enum { STRIDE = 2048, M = 3 };
  const int ns[] = {3, 600, 1025, 2048};
  enum { NN = sizeof ns / sizeof *ns };
  arg_spec cases[NN][6];
  for (int k = 0; k < NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, M * STRIDE, -8, 8};
    cases[k][1] = (arg_spec){BUF_F32, M * STRIDE, 0, 1};
    cases[k][2] = (arg_spec){BUF_F32, STRIDE, 0, 1};
    cases[k][3] = (arg_spec){VAL_I64, 0, STRIDE, 0};
    cases[k][4] = (arg_spec){VAL_I32, 0, ns[k], 0};
    cases[k][5] = (arg_spec){VAL_I32, 0, k == 0 ? 0 : M, 0};
  }
  /* three in the user loop (two online), one in the then branch, two in the else branch */
  check_kernel_modes(src, 2048, 6, 5, &cases[0][0], NN, 6, (tk_grid){1, 1, 1}, 1e-6, false);
}

/* The online rewrite's forms: a scale on either side of (v - m), exp2, the log-sum-exp
 * (m + log(s)) stored per row, on 1-D rows and on a block of rows; rows entirely masked
 * (-inf: m = -inf, s NaN, as unfused), rows masked past a few lanes (lanes that only
 * ever see -inf), and rows holding +inf or NaN. */
static void test_online_forms(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, out: *f32, stride: i64, n: i32, t: f32) {\n"
      "  let row = program_id(0);\n"
      "  let cols = arange(0, BLOCK);\n"
      "  let v = load(x + (row as i64) * stride + cols, cols < n && cols < row * 700, -inf);\n"
      "  let bad = where(cols == 5 && row == 1, inf, where(cols == 9 && row == 2, (v - v) / (v - v), v));\n"
      "  let w = where(row == 1 || row == 2, bad, v);\n"
      "  let m = max(w, 0);\n"
      "  let lse = m + log(sum(exp(w - m), 0));\n"
      "  let s1 = sum(exp((w - m) * t), 0);\n"
      "  let s2 = sum(exp2(0.5 * (w - m)), 0);\n"
      "  store(out + row * 4, lse);\n"
      "  store(out + row * 4 + 1, s1);\n"
      "  store(out + row * 4 + 2, s2);\n"
      "  store(out + row * 4 + 3, m);\n"
      "}\n";
  enum { ROWS = 6, STRIDE = 4096 };
  const int ns[] = {1, 513, 1500, 4096};
  enum { NN = sizeof ns / sizeof *ns };
  arg_spec cases[NN][5];
  for (int k = 0; k < NN; k++) {
    cases[k][0] = (arg_spec){BUF_F32, ROWS * STRIDE, -30, 30};
    cases[k][1] = (arg_spec){BUF_F32, ROWS * 4, 0, 1};
    cases[k][2] = (arg_spec){VAL_I64, 0, STRIDE, 0};
    cases[k][3] = (arg_spec){VAL_I32, 0, ns[k], 0};
    cases[k][4] = (arg_spec){VAL_F32, 0, 0.7, 0};
  }
  /* recompute: the max, the sum the log needs, the two other sums; online: one loop */
  check_kernel_modes(src, 4096, 3, 1, &cases[0][0], NN, 5, (tk_grid){ROWS, 1, 1}, 1e-6, false);

  const char *rows =
      "@launch(warps = 1)\n"
      "kernel r<BLOCK: i32 = 1>(x: *f32, out: *f32, stride: i64, n: i32, t: f32) {\n"
      "  let rs = program_id(0) * 2 + arange(0, 2);\n"
      "  let cols = arange(0, BLOCK);\n"
      "  let mask = cols[None, :] < n && cols[None, :] < (rs * 900)[:, None];\n"
      "  let v = load(x + (rs as i64)[:, None] * stride + cols[None, :], mask, -inf);\n"
      "  let m = max(v, 1);\n"
      "  let lse = m + log(sum(exp(t * (v - m[:, None])), 1));\n"
      "  let s2 = sum(exp2(v - m[:, None]), 1);\n"
      "  store(out + rs * 2, lse);\n"
      "  store(out + rs * 2 + 1, s2);\n"
      "}\n";
  arg_spec rcases[NN][5];
  for (int k = 0; k < NN; k++) {
    rcases[k][0] = (arg_spec){BUF_F32, ROWS * STRIDE, -30, 30};
    rcases[k][1] = (arg_spec){BUF_F32, ROWS * 2, 0, 1};
    rcases[k][2] = (arg_spec){VAL_I64, 0, STRIDE, 0};
    rcases[k][3] = (arg_spec){VAL_I32, 0, ns[k] / 2, 0};
    rcases[k][4] = (arg_spec){VAL_F32, 0, 1.3, 0};
  }
  check_kernel_modes(rows, 2048, 3, 1, &rcases[0][0], NN, 5, (tk_grid){ROWS / 2, 1, 1}, 1e-6, false);
}

/* Sums the online rewrite must not take: exp(v - m) times another tile, the max of
 * another tile, exp of (v - m) plus a lane-varying term, a store between the max and the
 * sum (the sum's reload may not move above it), and a scale computed from the max. */
static void test_online_refused(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, z: *f32, out: *f32, n: i32) {\n"
      "  let cols = arange(0, BLOCK);\n"
      "  let v = load(x + cols, cols < n, -inf);\n"
      "  let u = load(z + cols, cols < n, 0.0);\n"
      "  let m = max(v, 0);\n"
      "  store(out, sum(exp(v - m) * u, 0));\n"
      "}\n";
  const char *other =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, z: *f32, out: *f32, n: i32) {\n"
      "  let cols = arange(0, BLOCK);\n"
      "  let v = load(x + cols, cols < n, -inf);\n"
      "  let u = load(z + cols, cols < n, -inf);\n"
      "  let m = max(u, 0);\n"
      "  store(out, sum(exp(v - m), 0) + sum(exp(v - m + u), 0));\n"
      "}\n";
  const char *stored =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, z: *f32, out: *f32, n: i32) {\n"
      "  let cols = arange(0, BLOCK);\n"
      "  let v = load(x + cols, cols < n, -inf);\n"
      "  let m = max(v, 0);\n"
      "  store(out + 1, m);\n"
      "  store(out, sum(exp((v - m) * m), 0));\n"
      "}\n";
  enum { N = 3000 };
  arg_spec cases[4] = {{BUF_F32, N, -5, 5}, {BUF_F32, N, -1, 1}, {BUF_F32, 2, 0, 1}, {VAL_I32, 0, 2500, 0}};
  /* two loops whatever the keep */
  check_kernel(src, 4096, 2, cases, 1, 4, (tk_grid){1, 1, 1}, 1e-6);
  check_kernel(other, 4096, 2, cases, 1, 4, (tk_grid){1, 1, 1}, 1e-6);
  (void)stored; /* a store of the max between: refused by the memory-order rule (no fuse) */
}

/* ---- kernels left alone -------------------------------------------------------------------- */

/* src compiles to the same IR with and without fuse. */
static void check_unchanged(const char *src, int block) {
  su_arena *a = su_arena_new();
  const char *with = pk_print(a, compile(a, src, block, WITH));
  const char *without = pk_print(a, compile(a, src, block, WITHOUT));
  assert_string_equal(with, without);
  su_arena_free(a);
}

static void test_unsupported_ops(void **st) {
  (void)st;
  /* An atomic on wide tiles: its old values have no chunked form. */
  check_unchanged("@launch(warps = 1)\n"
                  "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32) {\n"
                  "  let c = arange(0, BLOCK);\n"
                  "  store(x + c, atomic_add(y + c, load(x + c)));\n"
                  "}\n",
                  2048);
  /* A reshape of a block into one long row. */
  check_unchanged("@launch(warps = 1)\n"
                  "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32) {\n"
                  "  let r = arange(0, 2);\n"
                  "  let c = arange(0, BLOCK);\n"
                  "  store(y, sum(load(x + r[:, None] * BLOCK + c[None, :])));\n"
                  "}\n",
                  2048);
  /* The wide length along the first axis (a column of a tall block). */
  check_unchanged("@launch(warps = 1)\n"
                  "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32) {\n"
                  "  let r = arange(0, BLOCK);\n"
                  "  store(y + r, sum(load(x + r[:, None] * 2 + arange(0, 2)[None, :]), 1));\n"
                  "}\n",
                  2048);
  /* A wide tile carried by a user loop that also stores (interchanging the loops would
   * reorder its stores), or that reduces it along the wide axis (not lane by lane). */
  check_unchanged("@launch(warps = 1)\n"
                  "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32, n: i32) {\n"
                  "  let c = arange(0, BLOCK);\n"
                  "  var acc = zeros<f32>(BLOCK);\n"
                  "  for i in range(0, n) {\n"
                  "    acc = acc + load(x + i * BLOCK + c);\n"
                  "    store(y + i * BLOCK + c, acc);\n"
                  "  }\n"
                  "  store(y + c, acc);\n"
                  "}\n",
                  2048);
  check_unchanged("@launch(warps = 1)\n"
                  "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32, n: i32) {\n"
                  "  let c = arange(0, BLOCK);\n"
                  "  var acc = zeros<f32>(BLOCK);\n"
                  "  for i in range(0, n) {\n"
                  "    let v = load(x + i * BLOCK + c);\n"
                  "    acc = acc + v - max(v, 0);\n"
                  "  }\n"
                  "  store(y + c, acc);\n"
                  "}\n",
                  2048);
  /* A wide load outside the loop that uses it: a reload there would see its stores. */
  check_unchanged("@launch(warps = 1)\n"
                  "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32, n: i32) {\n"
                  "  let c = arange(0, BLOCK);\n"
                  "  let v = load(x + c);\n"
                  "  for i in range(0, n) {\n"
                  "    store(y + i * BLOCK + c, v * 2.0);\n"
                  "  }\n"
                  "}\n",
                  2048);
}

/* x would be reloaded after y was stored (y may alias x): not rewritten. */
static void test_reload_after_store(void **st) {
  (void)st;
  /* The scalar store of s closes the first loop; the max would reload v after it. */
  check_unchanged("@launch(warps = 1)\n"
                  "kernel k<BLOCK: i32 = 1>(x: *i32, out: *i32) {\n"
                  "  let v = load(x + arange(0, BLOCK));\n"
                  "  store(out, sum(v, 0));\n"
                  "  store(out + 1, max(v, 0));\n"
                  "}\n",
                  2048);
  check_unchanged("@launch(warps = 1)\n"
                  "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32, z: *f32) {\n"
                  "  let c = arange(0, BLOCK);\n"
                  "  let v = load(x + c);\n"
                  "  store(y + c, v);\n"
                  "  store(z + c, v / sum(v, 0));\n"
                  "}\n",
                  2048);
}

/* Tiles within the budget (32 values per thread) are not touched. */
static void test_small_tiles(void **st) {
  (void)st;
  check_unchanged(softmax, 1024);
}

/* -fno-fuse over what fuse leaves alone: a 2-D tile reduced along its last axis (the
 * layernorm_rows form), argmax, cumsum, an i1 tile of data, values made in a loop and in an
 * if; each run over ragged shapes against the unfused build, bit for bit. */
static void test_baseline_beyond_fusion(void **st) {
  (void)st;
  enum { R = 4, C = 48 };
  const char *rows =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32, s: *f32, n: i32) {\n"
      "  let r = program_id(0) * 4 + arange(0, 4);\n"
      "  let c = arange(0, BLOCK);\n"
      "  let m = c[None, :] < n;\n"
      "  let v = load(x + r[:, None] * BLOCK + c[None, :], m, 0.0);\n"
      "  let mu = sum(v, 1) / (n as f32);\n"
      "  let d = where(m, v - mu[:, None], 0.0);\n"
      "  store(y + r[:, None] * BLOCK + c[None, :], d * d, m);\n"
      "  store(s + r, mu);\n"
      "}\n";
  const int ns[] = {1, 17, 64};
  arg_spec rcases[3][4];
  for (int k = 0; k < 3; k++) {
    rcases[k][0] = (arg_spec){BUF_F32, 2 * R * 64, -4, 4};
    rcases[k][1] = (arg_spec){BUF_F32, 2 * R * 64, 0, 1};
    rcases[k][2] = (arg_spec){BUF_F32, 2 * R, 0, 1};
    rcases[k][3] = (arg_spec){VAL_I32, 0, ns[k], 0};
  }
  check_baseline(rows, 64, &rcases[0][0], 3, 4, (tk_grid){2, 1, 1}, -1);
  const char *scans =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32, i: *i32, n: i32) {\n"
      "  let c = arange(0, BLOCK);\n"
      "  let v = load(x + c, c < n, -inf);\n"
      "  let pos = v > 0.0;\n"
      "  store(y + c, cumsum(where(pos, v, 0.0), 0), c < n);\n"
      "  store(i, argmax(v, 0));\n"
      "  store(i + 1, sum(where(pos, 1, 0), 0));\n"
      "}\n";
  arg_spec scases[2][4] = {{{BUF_F32, C, -2, 2}, {BUF_F32, C, 0, 1}, {BUF_I32, 2, 0, 1}, {VAL_I32, 0, 13, 0}},
                           {{BUF_F32, C, -2, 2}, {BUF_F32, C, 0, 1}, {BUF_I32, 2, 0, 1}, {VAL_I32, 0, C, 0}}};
  check_baseline(scans, 64, &scases[0][0], 2, 4, (tk_grid){1, 1, 1}, -1);
  const char *control =
      "@launch(warps = 1)\n"
      "kernel k<BLOCK: i32 = 1>(x: *f32, y: *f32, n: i32) {\n"
      "  let c = arange(0, BLOCK);\n"
      "  var acc = zeros<f32>(BLOCK);\n"
      "  for j in range(0, n) {\n"
      "    let v = load(x + j * BLOCK + c);\n"
      "    acc = acc + exp(v * 0.5);\n"
      "  }\n"
      "  if n > 2 {\n"
      "    store(y + c, sqrt(acc) + 1.0);\n"
      "  } else {\n"
      "    store(y + c, acc * 2.0);\n"
      "  }\n"
      "}\n";
  arg_spec ccases[2][3] = {{{BUF_F32, 5 * 32, -1, 1}, {BUF_F32, 32, 0, 1}, {VAL_I32, 0, 2, 0}},
                           {{BUF_F32, 5 * 32, -1, 1}, {BUF_F32, 32, 0, 1}, {VAL_I32, 0, 5, 0}}};
  check_baseline(control, 32, &ccases[0][0], 2, 3, (tk_grid){1, 1, 1}, -1);
}

/* ---- the shared-memory keep as a GPU target stages it --------------------------------------- */

/* smemkeep's IR (sm_90a) holds GPU-level ops the interpreter rejects (docs/ir.md, "GPU
 * level"). To run it anyway, host_smem gives them their documented meaning in global
 * memory: each buffer becomes a part of the launch's scratch for each program; cp_async a
 * masked load whose masked-off lanes read zero (what cp.async's src-size 0 leaves in the
 * slot, codegen/emit_async.c) stored to the slot; smem_load and smem_store a load and a
 * store of the slot; the commit and the wait go (the copies are done at once). Slots of
 * rank 1 (the 1-D rows smemkeep fills with cp_async). */

typedef struct {
  ir_op *ops[64];
  int n;
} gpu_ops;

static void collect_gpu_op(ir_op *op, void *ctx) {
  gpu_ops *g = ctx;
  switch (op->opc) {
  case IR_SMEM_ALLOC: case IR_SMEM_LOAD: case IR_SMEM_STORE: case IR_CP_ASYNC:
  case IR_CP_ASYNC_COMMIT: case IR_CP_ASYNC_WAIT:
    assert_true(g->n < 64);
    g->ops[g->n++] = op;
    break;
  default: break;
  }
}

/* The addresses of slot `slot` of the buffer whose part starts at base, in layout like
 * (a rank-1 tile type: the slot's elements and their layout), built at b. */
static ir_value *slot_ptrs(ir_builder *b, ir_value *base, ir_value *slot, const ir_type *like) {
  ir_module *m = b->m;
  const ir_type *i32 = ir_type_scalar(m, TK_I32), *i64 = ir_type_scalar(m, TK_I64);
  assert_int_equal(like->rank, 1);
  ir_value *off = ir_binary(b, IR_MUL, ir_build1(b, IR_CAST, i64, 1, &slot),
                            ir_const_int(b, i64, like->shape[0]));
  ir_value *ab[2] = {base, off};
  ir_value *p = ir_build1(b, IR_ADDPTR, base->type, 2, ab);
  const ir_type *pt = ir_type_with_layout(m, ir_type_like(m, like, base->type), like->layout);
  const ir_type *it = ir_type_with_layout(m, ir_type_like(m, like, i32), like->layout);
  ir_op *ar = ir_build(b, IR_ARANGE, 0, NULL, 1, &it);
  ar->attr = 0;
  ar->attr2 = like->shape[0];
  ir_value *pa[2] = {ir_build1(b, IR_SPLAT, pt, 1, &p), ar->results[0]};
  return ir_build1(b, IR_ADDPTR, pt, 2, pa);
}

static void host_smem(ir_module *m) {
  ir_func *f = m->funcs[0];
  gpu_ops g = {.n = 0};
  ir_walk(f->body, collect_gpu_op, &g);
  const ir_type *i32 = ir_type_scalar(m, TK_I32), *i64 = ir_type_scalar(m, TK_I64);
  /* each buffer's offset in a program's part, and the part's bytes */
  int64_t offs[64] = {0}, bytes = 0;
  for (int i = 0; i < g.n; i++)
    if (g.ops[i]->opc == IR_SMEM_ALLOC) {
      offs[i] = bytes;
      bytes += (ir_smem_buffer_bytes(g.ops[i]->results[0]->type) + 15) / 16 * 16;
    }
  ir_value *bases[64] = {0};
  for (int i = 0; i < g.n; i++) {
    ir_op *op = g.ops[i];
    if (op->opc != IR_SMEM_ALLOC) continue;
    const ir_type *elem = ir_type_scalar(m, op->results[0]->type->dtype);
    const ir_type *ptr = ir_type_ptr(m, elem);
    ir_builder b = {m, op->parent, op, op->loc};
    ir_op *sc = ir_build(&b, IR_SCRATCH, 0, NULL, 1, &ptr);
    sc->attr = offs[i];
    sc->attr2 = bytes;
    ir_op *pid = ir_build(&b, IR_PROGRAM_ID, 0, NULL, 1, &i32);
    pid->attr = 0; /* the tests' grids are (rows, 1, 1) */
    ir_value *lin = ir_build1(&b, IR_CAST, i64, 1, &pid->results[0]);
    ir_value *per = ir_binary(&b, IR_MUL, lin, ir_const_int(&b, i64, bytes / ir_dtype_bytes(elem->dtype)));
    ir_value *ab[2] = {sc->results[0], per};
    bases[i] = ir_build1(&b, IR_ADDPTR, ptr, 2, ab);
  }
  for (int i = 0; i < g.n; i++) {
    ir_op *op = g.ops[i];
    if (op->opc == IR_SMEM_ALLOC) continue;
    ir_builder b = {m, op->parent, op, op->loc};
    ir_value *base = NULL;
    for (int j = 0; j < g.n; j++)
      if (op->noperands > 0 && g.ops[j]->opc == IR_SMEM_ALLOC && op->operands[0] == g.ops[j]->results[0])
        base = bases[j];
    switch (op->opc) {
    case IR_CP_ASYNC: {
      ir_value *src = op->operands[2];
      const ir_type *vt = ir_type_with_layout(m, ir_type_like(m, src->type, ir_type_scalar(m, base->type->elem->dtype)),
                                              src->type->layout);
      ir_value *ld[3] = {src, op->noperands > 3 ? op->operands[3] : NULL, NULL};
      if (ld[1]) ld[2] = ir_dtype_is_float(vt->dtype) ? ir_const_float(&b, vt, 0.0) : ir_const_int(&b, vt, 0);
      ir_value *v = ir_build1(&b, IR_LOAD, vt, ld[1] ? 3 : 1, ld);
      ir_value *st[2] = {slot_ptrs(&b, base, op->operands[1], vt), v};
      ir_build(&b, IR_STORE, 2, st, 0, NULL);
      break;
    }
    case IR_SMEM_LOAD: {
      ir_value *p = slot_ptrs(&b, base, op->operands[1], op->results[0]->type);
      ir_replace_all_uses(f, op->results[0], ir_build1(&b, IR_LOAD, op->results[0]->type, 1, &p));
      break;
    }
    case IR_SMEM_STORE: {
      ir_value *st[2] = {slot_ptrs(&b, base, op->operands[1], op->operands[2]->type), op->operands[2]};
      ir_build(&b, IR_STORE, 2, st, 0, NULL);
      break;
    }
    default: break;
    }
    ir_op_erase(op);
  }
  for (int i = 0; i < g.n; i++)
    if (g.ops[i]->opc == IR_SMEM_ALLOC) ir_op_erase(g.ops[i]);
}

/* src kept in shared memory on sm_90a (smemkeep, and unmask, which takes the edge masks
 * it leaves to the last chunk), its smem ops hosted, against src unfused on ragged rows:
 * what every loop reads back is what its load would have read, masked-off lanes
 * included (the load's `other`, not the zeros cp.async fills them with). The row must be
 * one smemkeep fills with cp_async (asserted: one cp_async, one load fewer). */
static void check_smem_keep(const char *src, int block, const arg_spec *cases, int ncases, int nargs,
                            tk_grid grid, double atol) {
  su_arena *a = su_arena_new();
  sema_define def = {"BLOCK", su_fmt(a, "%d", block)};
  ir_module *gpu = pk_compile_arch(a, src, &def, 1, "canonicalize,licm,canonicalize,fuse,tiling,smemkeep,unmask",
                                   IR_KEEP_SMEM, "sm_90a");
  ir_module *plain = compile(a, src, block, WITHOUT);
  assert_int_equal(count(gpu, IR_SMEM_ALLOC).n, 1);
  assert_int_equal(count(gpu, IR_CP_ASYNC).n, 1);
  assert_int_equal(count(gpu, IR_LOAD).n, count(plain, IR_LOAD).n - 1); /* the row's, once, by cp_async */
  host_smem(gpu);
  gpu->arch = NULL;
  assert_int_equal(count(gpu, IR_CP_ASYNC).n + count(gpu, IR_SMEM_LOAD).n, 0);
  compare_runs(a, gpu, plain, cases, ncases, nargs, grid, 777u, atol, false, "smem keep vs unfused");
  su_arena_free(a);
}

/* softmax and cross-entropy's row (masked lanes -inf) through the asynchronous fill: a
 * later loop reading zeros for a ragged row's masked lanes sums exp(0 - max) for each of
 * them (the H100's softmax_wide and cross_entropy_wide keep=smem failures). */
static void test_smem_keep_async(void **st) {
  (void)st;
  arg_spec cases[SM_NN][4];
  softmax_cases(cases);
  check_smem_keep(softmax, 4096, &cases[0][0], SM_NN, 4, (tk_grid){SM_ROWS, 1, 1}, 1e-12);
  const char *ce = cross_entropy;
  arg_spec ccases[CE_NN][5];
  ce_cases(ccases);
  check_smem_keep(ce, 2048, &ccases[0][0], CE_NN, 5, (tk_grid){CE_ROWS, 1, 1}, 1e-6);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_cross_entropy),
      cmocka_unit_test(test_vadd),
      cmocka_unit_test(test_layernorm),
      cmocka_unit_test(test_integer_reductions),
      cmocka_unit_test(test_argmax_argmin),
      cmocka_unit_test(test_cumsum),
      cmocka_unit_test(test_rows_layernorm),
      cmocka_unit_test(test_rows_softmax_arg_scan),
      cmocka_unit_test(test_in_loop_and_if),
      cmocka_unit_test(test_online_forms),
      cmocka_unit_test(test_online_refused),
      cmocka_unit_test(test_rows_column_ops),
      cmocka_unit_test(test_interchange),
      cmocka_unit_test(test_unsupported_ops),
      cmocka_unit_test(test_reload_after_store),
      cmocka_unit_test(test_small_tiles),
      cmocka_unit_test(test_baseline_beyond_fusion),
      cmocka_unit_test(test_smem_keep_async),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
