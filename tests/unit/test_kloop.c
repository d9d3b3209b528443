/* Unit tests of kloop (passes/kloop.c): kernels whose dot reads K as one logical tile,
 * compiled from .tk with and without the pass, run on the interpreter over the same random
 * inputs at ragged M, N, K (not multiples of the tiles or of the step, K below one step,
 * K = KP) and must write the same memory bit for bit (the interpreter's dot sums k in
 * order, which the loop keeps); tf32x3 within its reassociation. The rewritten IR has the
 * loop and no tile with the whole K; kernels outside the pattern compile to the same IR. */
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

static const char *const WITH = "canonicalize,kloop,licm,canonicalize";
static const char *const WITHOUT = "canonicalize,licm,canonicalize";

typedef struct {
  ir_opcode opc;
  int n;
  int widest_k; /* the longest axis of any tile: KP unless the dot was cut */
} census;

static void count_op(ir_op *op, void *ctx) {
  census *c = ctx;
  c->n += op->opc == c->opc;
  for (int i = 0; i < op->nresults; i++) {
    const ir_type *t = op->results[i]->type;
    for (int d = 0; t->kind == IR_TILE && d < t->rank; d++)
      if (t->shape[d] > c->widest_k) c->widest_k = t->shape[d];
  }
}

static census count(const ir_module *m, ir_opcode opc) {
  census c = {opc, 0, 0};
  for (int k = 0; k < m->nfuncs; k++) ir_walk(m->funcs[k]->body, count_op, &c);
  return c;
}

/* ---- running a kernel ---------------------------------------------------------------- */

typedef enum { BUF_F32, BUF_F16, BUF_I8, BUF_I32, VAL_I32 } arg_kind;

typedef struct {
  arg_kind kind;
  int64_t n; /* elements of a buffer; a scalar's value */
} arg_spec;

enum { MAX_ARGS = 8 };

static int elem_bytes(arg_kind k) { return k == BUF_F16 ? 2 : k == BUF_I8 ? 1 : 4; }

static void fill(void *p, const arg_spec *s, uint64_t *rng) {
  for (int64_t i = 0; i < s->n; i++) {
    double u = (double)pk_next_random(rng) / 9007199254740992.0; /* [0, 1) */
    switch (s->kind) {
    case BUF_F32: ((float *)p)[i] = (float)(2 * u - 1); break;
    case BUF_F16: {
      _Float16 h = (_Float16)(2 * u - 1);
      memcpy((char *)p + 2 * i, &h, 2);
      break;
    }
    case BUF_I8: ((int8_t *)p)[i] = (int8_t)floor(u * 256 - 128); break;
    case BUF_I32: ((int32_t *)p)[i] = (int32_t)floor(u * 2000 - 1000); break;
    default: break;
    }
  }
}

typedef struct {
  ip_memory *mem;
  tk_devptr ptr[MAX_ARGS];
} run_result;

static run_result run(const ir_module *m, const arg_spec *specs, int nargs, tk_grid grid, uint64_t seed) {
  run_result r = {ip_memory_new(), {0}};
  tk_arg args[MAX_ARGS];
  su_buf err = {0};
  uint64_t rng = seed;
  for (int i = 0; i < nargs; i++) {
    const arg_spec *s = &specs[i];
    if (s->kind == VAL_I32) {
      args[i] = tk_arg_i32((int32_t)s->n);
      continue;
    }
    size_t bytes = (size_t)s->n * (size_t)elem_bytes(s->kind);
    assert_true(ip_mem_alloc(r.mem, bytes, &r.ptr[i], &err));
    fill(ip_mem_host(r.mem, r.ptr[i], bytes, &err), s, &rng);
    args[i] = tk_arg_ptr(r.ptr[i]);
  }
  ip_status st = ip_launch(r.mem, m, m->funcs[0], grid, args, nargs, NULL, &err);
  if (st != IP_OK) fail_msg("launch failed: %s", su_buf_str(&err));
  su_buf_free(&err);
  return r;
}

/* Every buffer the same: bit for bit, or (rtol > 0, f32) within rtol of the larger. */
static void compare(run_result *a, run_result *b, const arg_spec *specs, int nargs, double rtol,
                    const char *what) {
  su_buf err = {0};
  for (int i = 0; i < nargs; i++) {
    if (!a->ptr[i]) continue;
    size_t bytes = (size_t)specs[i].n * (size_t)elem_bytes(specs[i].kind);
    const char *pa = ip_mem_host(a->mem, a->ptr[i], bytes, &err);
    const char *pb = ip_mem_host(b->mem, b->ptr[i], bytes, &err);
    int eb = elem_bytes(specs[i].kind);
    for (int64_t j = 0; j < specs[i].n; j++) {
      if (!memcmp(pa + j * eb, pb + j * eb, (size_t)eb)) continue;
      if (rtol > 0 && specs[i].kind == BUF_F32) {
        float x, y;
        memcpy(&x, pa + j * eb, 4);
        memcpy(&y, pb + j * eb, 4);
        if (fabs(x - y) <= rtol * fmax(fabs(x), fabs(y)) + 1e-6) continue;
      }
      fail_msg("%s: argument %d, element %lld differs", what, i, (long long)j);
    }
  }
  su_buf_free(&err);
}

/* src (defines defs) compiled with and without kloop: `loops` more for ops with it and no
 * tile axis as long as KP; then both run over each argument list of cases (nargs each) on
 * grid and compared. */
static void check_kernel(const char *src, const sema_define *defs, int ndefs, int kp, int loops,
                         const arg_spec *cases, int ncases, int nargs, tk_grid grid, double rtol) {
  su_arena *a = su_arena_new();
  ir_module *with = pk_compile(a, src, defs, ndefs, WITH);
  ir_module *without = pk_compile(a, src, defs, ndefs, WITHOUT);
  assert_int_equal(count(with, IR_FOR).n - count(without, IR_FOR).n, loops);
  assert_true(count(without, IR_FOR).widest_k >= kp);
  assert_true(count(with, IR_FOR).widest_k < kp);
  for (int k = 0; k < ncases; k++) {
    const arg_spec *c = cases + k * nargs;
    run_result r1 = run(with, c, nargs, grid, 77u + (uint64_t)k);
    run_result r2 = run(without, c, nargs, grid, 77u + (uint64_t)k);
    compare(&r1, &r2, c, nargs, rtol, su_fmt(a, "kloop vs whole K, case %d", k));
    ip_memory_free(r1.mem);
    ip_memory_free(r2.mem);
  }
  su_arena_free(a);
}

/* The sample's form for element type T and accumulator ACC (f32: written, else the
 * dot's default), masked on M, N and K; BM = BN = 16, KP compile-time. */
static const char *const matmul =
    "@launch(warps = 1)\n"
    "kernel mm<T: dtype = f32, KP: i32 = 128>(a: *T, b: *T, c: *f32, M: i32, N: i32, K: i32) {\n"
    "  let rm = program_id(0) * 16 + arange(0, 16);\n"
    "  let rn = program_id(1) * 16 + arange(0, 16);\n"
    "  let kk = arange(0, KP);\n"
    "  let ta = load(a + (rm[:, None] as i64) * K + kk[None, :], (rm[:, None] < M) && (kk[None, :] < K), 0);\n"
    "  let tb = load(b + (kk[:, None] as i64) * N + rn[None, :], (kk[:, None] < K) && (rn[None, :] < N), 0);\n"
    "  let acc = load(c + (rm[:, None] as i64) * N + rn[None, :], (rm[:, None] < M) && (rn[None, :] < N), 0.0);\n"
    "  store(c + (rm[:, None] as i64) * N + rn[None, :], dot(ta, tb, acc),\n"
    "        (rm[:, None] < M) && (rn[None, :] < N));\n"
    "}\n";

/* M x N x K cases for a KP-column kernel on a 3 x 3 grid of 16 x 16 tiles. */
static void mnk_cases(arg_spec *out, arg_kind elem, int kp) {
  const int mnk[][3] = {{48, 48, kp}, {33, 40, kp - 1}, {17, 47, 5}, {48, 17, kp / 2 + 3}, {1, 1, 1}};
  for (int k = 0; k < 5; k++) {
    int M = mnk[k][0], N = mnk[k][1], K = mnk[k][2];
    arg_spec *c = out + 6 * k;
    c[0] = (arg_spec){elem, (int64_t)M * K};
    c[1] = (arg_spec){elem, (int64_t)K * N};
    c[2] = (arg_spec){BUF_F32, (int64_t)M * N};
    c[3] = (arg_spec){VAL_I32, M};
    c[4] = (arg_spec){VAL_I32, N};
    c[5] = (arg_spec){VAL_I32, K};
  }
}

/* f32 (tf32 and ieee precision) and f16 operands: bit for bit. */
static void test_matmul(void **st) {
  (void)st;
  arg_spec cases[5][6];
  mnk_cases(&cases[0][0], BUF_F32, 128);
  sema_define f32[] = {{"T", "f32"}, {"KP", "128"}};
  check_kernel(matmul, f32, 2, 128, 1, &cases[0][0], 5, 6, (tk_grid){3, 3, 1}, 0);
  mnk_cases(&cases[0][0], BUF_F16, 256);
  sema_define f16[] = {{"T", "f16"}, {"KP", "256"}};
  check_kernel(matmul, f16, 2, 256, 1, &cases[0][0], 5, 6, (tk_grid){3, 3, 1}, 0);
}

/* N as long as KP: CSE makes arange(0, BN) and arange(0, KP) one value, which is then
 * both the K index (traced, rebuilt on a step) and rn (read whole, by an op copied into the
 * loop). The copy took the step's arange: invalid IR (gpu_dot's 128 x 256 x 256 case on the
 * H200, 2026-12-02). */
static const char *const matmul_wide_n =
    "@launch(warps = 1)\n"
    "kernel mm<KP: i32 = 64>(a: *f32, b: *f32, c: *f32, M: i32, N: i32, K: i32) {\n"
    "  let rm = program_id(0) * 16 + arange(0, 16);\n"
    "  let rn = program_id(1) * KP + arange(0, KP);\n"
    "  let kk = arange(0, KP);\n"
    "  let ta = load(a + rm[:, None] * K + kk[None, :], (rm[:, None] < M) && (kk[None, :] < K), 0.0);\n"
    "  let tb = load(b + kk[:, None] * N + rn[None, :], (kk[:, None] < K) && (rn[None, :] < N), 0.0);\n"
    "  store(c + rm[:, None] * N + rn[None, :], dot(ta, tb), (rm[:, None] < M) && (rn[None, :] < N));\n"
    "}\n";

static void test_n_as_long_as_k(void **st) {
  (void)st;
  su_arena *a = su_arena_new();
  sema_define d[] = {{"KP", "64"}};
  ir_module *with = pk_compile(a, matmul_wide_n, d, 1, WITH);
  ir_module *without = pk_compile(a, matmul_wide_n, d, 1, WITHOUT);
  assert_int_equal(count(with, IR_FOR).n - count(without, IR_FOR).n, 1);
  const int mnk[][3] = {{48, 128, 64}, {33, 100, 63}, {17, 65, 5}};
  for (int k = 0; k < 3; k++) {
    int M = mnk[k][0], N = mnk[k][1], K = mnk[k][2];
    arg_spec c[6] = {{BUF_F32, (int64_t)M * K}, {BUF_F32, (int64_t)K * N}, {BUF_F32, (int64_t)M * N},
                     {VAL_I32, M}, {VAL_I32, N}, {VAL_I32, K}};
    run_result r1 = run(with, c, 6, (tk_grid){3, 2, 1}, 91u + (uint64_t)k);
    run_result r2 = run(without, c, 6, (tk_grid){3, 2, 1}, 91u + (uint64_t)k);
    compare(&r1, &r2, c, 6, 0, su_fmt(a, "kloop vs whole K, N = KP, case %d", k));
    ip_memory_free(r1.mem);
    ip_memory_free(r2.mem);
  }
  su_arena_free(a);
}

/* b's column index is arange(0, KP) itself: CSE makes rn[None, :] of b and kk[None, :] of a
 * one [1, KP] value, traced as a's K axis; b's broadcast of it, which stretches b's K axis
 * from 1, rebuilt it on a step: invalid IR (tkdiff seeds 6066533, 6073331, 6081717 and
 * 6097259, generator 6, on the H200, 2026-12-02). */
static const char *const matmul_k_row_is_n_row =
    "@launch(warps = 1)\n"
    "kernel mm<KP: i32 = 64>(a: *f32, b: *f32, c: *f32, M: i32, N: i32, K: i32) {\n"
    "  let rm = program_id(0) * 16 + arange(0, 16);\n"
    "  let rn = arange(0, KP);\n"
    "  let kk = arange(0, KP);\n"
    "  let ta = load(a + rm[:, None] * K + kk[None, :], (rm[:, None] < M) && (kk[None, :] < K), 0.0);\n"
    "  let tb = load(b + kk[:, None] * N + rn[None, :], (kk[:, None] < K) && (rn[None, :] < N), 0.0);\n"
    "  store(c + rm[:, None] * N + rn[None, :], dot(ta, tb), (rm[:, None] < M) && (rn[None, :] < N));\n"
    "}\n";

static void test_k_row_is_n_row(void **st) {
  (void)st;
  su_arena *a = su_arena_new();
  sema_define d[] = {{"KP", "64"}};
  ir_module *with = pk_compile(a, matmul_k_row_is_n_row, d, 1, WITH);
  ir_module *without = pk_compile(a, matmul_k_row_is_n_row, d, 1, WITHOUT);
  assert_int_equal(count(with, IR_FOR).n - count(without, IR_FOR).n, 1);
  const int mnk[][3] = {{48, 64, 64}, {33, 50, 63}, {17, 64, 5}};
  for (int k = 0; k < 3; k++) {
    int M = mnk[k][0], N = mnk[k][1], K = mnk[k][2];
    arg_spec c[6] = {{BUF_F32, (int64_t)M * K}, {BUF_F32, (int64_t)K * N}, {BUF_F32, (int64_t)M * N},
                     {VAL_I32, M}, {VAL_I32, N}, {VAL_I32, K}};
    run_result r1 = run(with, c, 6, (tk_grid){3, 1, 1}, 97u + (uint64_t)k);
    run_result r2 = run(without, c, 6, (tk_grid){3, 1, 1}, 97u + (uint64_t)k);
    compare(&r1, &r2, c, 6, 0, su_fmt(a, "kloop vs whole K, b's columns = K's index, case %d", k));
    ip_memory_free(r1.mem);
    ip_memory_free(r2.mem);
  }
  su_arena_free(a);
}

/* The precisions of an f32 dot: ieee and tf32 bit for bit, tf32x3 within reassociation. */
static void test_precision(void **st) {
  (void)st;
  su_arena *a = su_arena_new();
  arg_spec cases[5][6];
  mnk_cases(&cases[0][0], BUF_F32, 128);
  sema_define f32[] = {{"T", "f32"}, {"KP", "128"}};
  const char *precs[] = {"ieee", "tf32x3"};
  for (int p = 0; p < 2; p++) {
    char *src = su_strdup(a, matmul);
    char *at = strstr(src, "dot(ta, tb, acc)");
    src = su_fmt(a, "%.*sdot(ta, tb, acc, input_precision = \"%s\")%s", (int)(at - src), src, precs[p],
                 at + strlen("dot(ta, tb, acc)"));
    check_kernel(src, f32, 2, 128, 1, &cases[0][0], 5, 6, (tk_grid){3, 3, 1}, p ? 1e-5 : 0);
  }
  su_arena_free(a);
}

/* i8 operands into i32 (no acc: from zero), BK = 128, K = 512: four steps. */
static void test_int8(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel mm(a: *i8, b: *i8, c: *i32, M: i32, N: i32, K: i32) {\n"
      "  let rm = program_id(0) * 16 + arange(0, 16);\n"
      "  let rn = program_id(1) * 16 + arange(0, 16);\n"
      "  let kk = arange(0, 512);\n"
      "  let ta = load(a + (rm[:, None] as i64) * K + kk[None, :], (rm[:, None] < M) && (kk[None, :] < K), 0);\n"
      "  let tb = load(b + (kk[:, None] as i64) * N + rn[None, :], (kk[:, None] < K) && (rn[None, :] < N), 0);\n"
      "  store(c + (rm[:, None] as i64) * N + rn[None, :], dot(ta, tb), (rm[:, None] < M) && (rn[None, :] < N));\n"
      "}\n";
  const int ks[] = {512, 300, 129, 7};
  arg_spec cases[4][6];
  for (int k = 0; k < 4; k++)
    memcpy(cases[k], (arg_spec[6]){{BUF_I8, 20 * ks[k]}, {BUF_I8, ks[k] * 30}, {BUF_I32, 20 * 30},
                                   {VAL_I32, 20}, {VAL_I32, 30}, {VAL_I32, ks[k]}},
           sizeof cases[k]);
  check_kernel(src, NULL, 0, 512, 1, &cases[0][0], 4, 6, (tk_grid){2, 2, 1}, 0);
}

/* An f16 accumulator (summed in f32, rounded once per call): carried in f32 by the loop and
 * rounded after it; a K known at compile time (no mask on K; the loop runs to KP); a dot
 * inside an if. */
static void test_forms(void **st) {
  (void)st;
  const char *acc16 =
      "@launch(warps = 1)\n"
      "kernel mm(a: *f16, b: *f16, c: *f16, n: i32) {\n"
      "  let r = arange(0, 16);\n"
      "  let kk = arange(0, 256);\n"
      "  let acc = load(c + r[:, None] * 16 + r[None, :]);\n"
      "  if n > 0 {\n"
      "    let ta = load(a + r[:, None] * 256 + kk[None, :]);\n"
      "    let tb = load(b + kk[:, None] * 16 + r[None, :]);\n"
      "    store(c + r[:, None] * 16 + r[None, :], dot(ta, tb, acc));\n"
      "  }\n"
      "}\n";
  arg_spec cases[2][4] = {{{BUF_F16, 16 * 256}, {BUF_F16, 256 * 16}, {BUF_F16, 256}, {VAL_I32, 1}},
                          {{BUF_F16, 16 * 256}, {BUF_F16, 256 * 16}, {BUF_F16, 256}, {VAL_I32, 0}}};
  check_kernel(acc16, NULL, 0, 256, 1, &cases[0][0], 2, 4, (tk_grid){1, 1, 1}, 0);
  su_arena *a = su_arena_new();
  ir_module *m = pk_compile(a, acc16, NULL, 0, WITH);
  assert_non_null(strstr(pk_print(a, m), "const 256 : i32")); /* the bound: KP, no min */
  assert_null(strstr(pk_print(a, m), " min "));
  su_arena_free(a);
}

/* Only one load masked on K: the loop runs to KP (the other load's tail is read), and the
 * results stay those of the whole tile. */
static void test_one_bound(void **st) {
  (void)st;
  const char *src =
      "@launch(warps = 1)\n"
      "kernel mm(a: *f32, b: *f32, c: *f32, K: i32) {\n"
      "  let r = arange(0, 16);\n"
      "  let kk = arange(0, 128);\n"
      "  let ta = load(a + r[:, None] * 128 + kk[None, :], kk[None, :] < K, 0.0);\n"
      "  let tb = load(b + kk[:, None] * 16 + r[None, :]);\n"
      "  store(c + r[:, None] * 16 + r[None, :], dot(ta, tb));\n"
      "}\n";
  arg_spec cases[2][4] = {{{BUF_F32, 16 * 128}, {BUF_F32, 128 * 16}, {BUF_F32, 256}, {VAL_I32, 50}},
                          {{BUF_F32, 16 * 128}, {BUF_F32, 128 * 16}, {BUF_F32, 256}, {VAL_I32, 128}}};
  check_kernel(src, NULL, 0, 128, 1, &cases[0][0], 2, 4, (tk_grid){1, 1, 1}, 0);
  su_arena *a = su_arena_new();
  assert_null(strstr(pk_print(a, pk_compile(a, src, NULL, 0, WITH)), " min "));
  su_arena_free(a);
}

/* Outside the pattern: the IR is the same with and without the pass. */
static void test_unchanged(void **st) {
  (void)st;
  const char *const srcs[] = {
      /* a load with another user */
      "@launch(warps = 1)\n"
      "kernel k(a: *f32, b: *f32, c: *f32) {\n"
      "  let r = arange(0, 16); let kk = arange(0, 128);\n"
      "  let ta = load(a + r[:, None] * 128 + kk[None, :]);\n"
      "  store(c + r[:, None] * 16 + r[None, :], dot(ta, load(b + kk[:, None] * 16 + r[None, :])));\n"
      "  store(a + r[:, None] * 128 + kk[None, :], ta + 1.0);\n"
      "}\n",
      /* a store between the loads and the dot */
      "@launch(warps = 1)\n"
      "kernel k(a: *f32, b: *f32, c: *f32) {\n"
      "  let r = arange(0, 16); let kk = arange(0, 128);\n"
      "  let ta = load(a + r[:, None] * 128 + kk[None, :]);\n"
      "  let tb = load(b + kk[:, None] * 16 + r[None, :]);\n"
      "  store(a + r[:, None] * 128 + kk[None, :], zeros<f32>(16, 128));\n"
      "  store(c + r[:, None] * 16 + r[None, :], dot(ta, tb));\n"
      "}\n",
      /* a gathered K index */
      "@launch(warps = 1)\n"
      "kernel k(a: *f32, b: *f32, c: *f32, idx: *i32) {\n"
      "  let r = arange(0, 16); let kk = load(idx + arange(0, 128));\n"
      "  let ta = load(a + r[:, None] * 128 + kk[None, :]);\n"
      "  let tb = load(b + kk[:, None] * 16 + r[None, :]);\n"
      "  store(c + r[:, None] * 16 + r[None, :], dot(ta, tb));\n"
      "}\n",
      /* loads outside the if of the dot (moving them in would skip them) */
      "@launch(warps = 1)\n"
      "kernel k(a: *f32, b: *f32, c: *f32, n: i32) {\n"
      "  let r = arange(0, 16); let kk = arange(0, 128);\n"
      "  let ta = load(a + r[:, None] * 128 + kk[None, :]);\n"
      "  let tb = load(b + kk[:, None] * 16 + r[None, :]);\n"
      "  if n > 0 { store(c + r[:, None] * 16 + r[None, :], dot(ta, tb)); }\n"
      "}\n",
      /* a computed operand */
      "@launch(warps = 1)\n"
      "kernel k(a: *f32, b: *f32, c: *f32) {\n"
      "  let r = arange(0, 16); let kk = arange(0, 128);\n"
      "  let ta = exp(load(a + r[:, None] * 128 + kk[None, :]));\n"
      "  let tb = load(b + kk[:, None] * 16 + r[None, :]);\n"
      "  store(c + r[:, None] * 16 + r[None, :], dot(ta, tb));\n"
      "}\n",
      /* K of one step (f32: 32) */
      "@launch(warps = 1)\n"
      "kernel k(a: *f32, b: *f32, c: *f32) {\n"
      "  let r = arange(0, 16); let kk = arange(0, 32);\n"
      "  store(c + r[:, None] * 16 + r[None, :], dot(load(a + r[:, None] * 32 + kk[None, :]),\n"
      "                                             load(b + kk[:, None] * 16 + r[None, :])));\n"
      "}\n",
      /* a dot in a loop: the user chose K's tile */
      "@launch(warps = 1)\n"
      "kernel k(a: *f32, b: *f32, c: *f32, n: i32) {\n"
      "  let r = arange(0, 16); let kk = arange(0, 128);\n"
      "  var acc = zeros<f32>(16, 16);\n"
      "  for i in range(0, n) {\n"
      "    acc = dot(load(a + i * 2048 + r[:, None] * 128 + kk[None, :]), load(b + kk[:, None] * 16 + r[None, :]), acc);\n"
      "  }\n"
      "  store(c + r[:, None] * 16 + r[None, :], acc);\n"
      "}\n",
  };
  for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) {
    su_arena *a = su_arena_new();
    const char *x = pk_print(a, pk_compile(a, srcs[i], NULL, 0, WITH));
    const char *y = pk_print(a, pk_compile(a, srcs[i], NULL, 0, WITHOUT));
    if (strcmp(x, y)) fail_msg("kernel %zu changed by kloop:\n%s", i, x);
    su_arena_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul),   cmocka_unit_test(test_precision), cmocka_unit_test(test_int8),
      cmocka_unit_test(test_forms),    cmocka_unit_test(test_one_bound), cmocka_unit_test(test_unchanged), cmocka_unit_test(test_n_as_long_as_k),
      cmocka_unit_test(test_k_row_is_n_row),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
