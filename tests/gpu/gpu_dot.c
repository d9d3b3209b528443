/*
 * gpu_dot — dot on the CUDA backend (tensor cores), checked against the interpreter.
 *
 * One kernel template: the matmul sample's masked K loop, c = a @ b (+ the loop-carried
 * accumulator), the accumulator stored as is (f32, or i32 for i8). Cases cover f16, bf16,
 * f32 (tf32 on the GPU), i8 and the fp8 types (through f16); tiles from the smallest dot (16x16x16, smaller than the
 * 4-warp grid: replicated warps) to 128x256x64; 1 to 8 warps; stages 1 to 5, so every
 * lowering of docs/passes.md runs: mma.sync staged or from a cp.async ring, wgmma staged,
 * from a cp.async ring or a TMA ring, single stream or warp-specialized, persistent or
 * not. Each runs on ragged matrices: M, N, K not multiples of the tile (masked edges, K
 * tails, TMA's zero fill), several programs along each axis, sizes not multiples of 8
 * (per-element, unvectorized accesses, the cp.async variant of a TMA kernel: the launch
 * picks it by the arguments), K smaller than one step, and, for the persistent cases,
 * more tiles than SMs (and a shape whose last rounds are stream-K pieces). The logical-K form (no loop; kloop makes it) runs the same
 * pipelines.
 *
 * Data are small multiples of 1/8 (floats) or small integers (i8): exact in f16, bf16
 * and tf32, every product exact and every sum of at most 512 of them exact in f32, so the
 * GPU must match the interpreter whatever the order of its additions; the comparison
 * keeps a tolerance of 1e-6 relative all the same (tf32 rounding, 2^-11 relative per input,
 * would need about 1e-3 on general data).
 *
 * The host test compiles every case through the GPU back end (no device needed). Without
 * a device the device tests are skipped and the program exits 77; with
 * TK_GPU_TESTS_SELFCHECK=1 a second interpreter stands in for the device, which checks
 * this harness (not the GPU) anywhere. The seed is printed; TK_TEST_SEED replays it.
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

#include "harness.h"
#include "ir/ir.h"

/* %s: the kernel name, the input and the accumulator types, the value of masked-off
 * lanes of a and b. */
static const char MATMUL_TK[] =
  "kernel %s<BM: i32 = 64, BN: i32 = 64, BK: i32 = 32>(a: *%s, b: *%s, c: *%s,\n"
  "                                                  M: i32, N: i32, K: i32) {\n"
  "    let rm = program_id(0) * BM + arange(0, BM);\n"
  "    let rn = program_id(1) * BN + arange(0, BN);\n"
  "    let rk = arange(0, BK);\n"
  "    var acc = zeros<%s>(BM, BN);\n"
  "    for k in range(0, K, BK) {\n"
  "        let kk = k + rk;\n"
  "        let ta = load(a + rm[:, None] * K + kk[None, :],\n"
  "                      (rm[:, None] < M) && (kk[None, :] < K), %s);\n"
  "        let tb = load(b + kk[:, None] * N + rn[None, :],\n"
  "                      (kk[:, None] < K) && (rn[None, :] < N), %s);\n"
  "        acc = dot(ta, tb, acc);\n"
  "    }\n"
  "    store(c + rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) && (rn[None, :] < N));\n"
  "}\n";

/* The same product with b stored transposed ([N, K], "nt"), a stored transposed ([K, M],
 * "tn"), and batched over program_id(2) with the batch strides as arguments ("batch"). */
static const char MATMUL_NT_TK[] =
  "kernel %s<BM: i32 = 64, BN: i32 = 64, BK: i32 = 32>(a: *%s, b: *%s, c: *%s,\n"
  "                                                  M: i32, N: i32, K: i32) {\n"
  "    let rm = program_id(0) * BM + arange(0, BM);\n"
  "    let rn = program_id(1) * BN + arange(0, BN);\n"
  "    let rk = arange(0, BK);\n"
  "    var acc = zeros<%s>(BM, BN);\n"
  "    for k in range(0, K, BK) {\n"
  "        let kk = k + rk;\n"
  "        let ta = load(a + rm[:, None] * K + kk[None, :],\n"
  "                      (rm[:, None] < M) && (kk[None, :] < K), %s);\n"
  "        let tb = load(b + rn[None, :] * K + kk[:, None],\n"
  "                      (kk[:, None] < K) && (rn[None, :] < N), %s);\n"
  "        acc = dot(ta, tb, acc);\n"
  "    }\n"
  "    store(c + rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) && (rn[None, :] < N));\n"
  "}\n";

/* b as [N, K] rows, transposed in the product (Triton's `tl.dot(a, tl.trans(b))`, how
 * 8-bit products must read it on wgmma: both operands K-major) */
static const char MATMUL_KT_TK[] =
  "kernel %s<BM: i32 = 64, BN: i32 = 64, BK: i32 = 32>(a: *%s, b: *%s, c: *%s,\n"
  "                                                  M: i32, N: i32, K: i32) {\n"
  "    let rm = program_id(0) * BM + arange(0, BM);\n"
  "    let rn = program_id(1) * BN + arange(0, BN);\n"
  "    let rk = arange(0, BK);\n"
  "    var acc = zeros<%s>(BM, BN);\n"
  "    for k in range(0, K, BK) {\n"
  "        let kk = k + rk;\n"
  "        let ta = load(a + rm[:, None] * K + kk[None, :],\n"
  "                      (rm[:, None] < M) && (kk[None, :] < K), %s);\n"
  "        let tb = load(b + rn[:, None] * K + kk[None, :],\n"
  "                      (rn[:, None] < N) && (kk[None, :] < K), %s);\n"
  "        acc = dot(ta, trans(tb), acc%s);\n"
  "    }\n"
  "    store(c + rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) && (rn[None, :] < N));\n"
  "}\n";

static const char MATMUL_TN_TK[] =
  "kernel %s<BM: i32 = 64, BN: i32 = 64, BK: i32 = 32>(a: *%s, b: *%s, c: *%s,\n"
  "                                                  M: i32, N: i32, K: i32) {\n"
  "    let rm = program_id(0) * BM + arange(0, BM);\n"
  "    let rn = program_id(1) * BN + arange(0, BN);\n"
  "    let rk = arange(0, BK);\n"
  "    var acc = zeros<%s>(BM, BN);\n"
  "    for k in range(0, K, BK) {\n"
  "        let kk = k + rk;\n"
  "        let ta = load(a + rm[:, None] + kk[None, :] * M,\n"
  "                      (rm[:, None] < M) && (kk[None, :] < K), %s);\n"
  "        let tb = load(b + kk[:, None] * N + rn[None, :],\n"
  "                      (kk[:, None] < K) && (rn[None, :] < N), %s);\n"
  "        acc = dot(ta, tb, acc);\n"
  "    }\n"
  "    store(c + rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) && (rn[None, :] < N));\n"
  "}\n";

static const char MATMUL_BATCH_TK[] =
  "kernel %s<BM: i32 = 64, BN: i32 = 64, BK: i32 = 32>(a: *%s, b: *%s, c: *%s,\n"
  "        M: i32, N: i32, K: i32, sa: i32, sb: i32, sc: i32) {\n"
  "    let z = program_id(2);\n"
  "    let rm = program_id(0) * BM + arange(0, BM);\n"
  "    let rn = program_id(1) * BN + arange(0, BN);\n"
  "    let rk = arange(0, BK);\n"
  "    var acc = zeros<%s>(BM, BN);\n"
  "    for k in range(0, K, BK) {\n"
  "        let kk = k + rk;\n"
  "        let ta = load(a + z * sa + rm[:, None] * K + kk[None, :],\n"
  "                      (rm[:, None] < M) && (kk[None, :] < K), %s);\n"
  "        let tb = load(b + z * sb + kk[:, None] * N + rn[None, :],\n"
  "                      (kk[:, None] < K) && (rn[None, :] < N), %s);\n"
  "        acc = dot(ta, tb, acc);\n"
  "    }\n"
  "    store(c + z * sc + rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) && (rn[None, :] < N));\n"
  "}\n";

/* The product with K as one logical tile (samples/matmul_logical.tk): no loop in the
 * source, BK is the whole K (at least the shapes' K); kloop makes it the loop above. */
static const char MATMUL_LOGICAL_TK[] =
  "kernel %s<BM: i32 = 64, BN: i32 = 64, BK: i32 = 256>(a: *%s, b: *%s, c: *%s,\n"
  "                                                   M: i32, N: i32, K: i32) {\n"
  "    let rm = program_id(0) * BM + arange(0, BM);\n"
  "    let rn = program_id(1) * BN + arange(0, BN);\n"
  "    let kk = arange(0, BK);\n"
  "    let acc = zeros<%s>(BM, BN);\n"
  "    let ta = load(a + rm[:, None] * K + kk[None, :],\n"
  "                  (rm[:, None] < M) && (kk[None, :] < K), %s);\n"
  "    let tb = load(b + kk[:, None] * N + rn[None, :],\n"
  "                  (kk[:, None] < K) && (rn[None, :] < N), %s);\n"
  "    store(c + rm[:, None] * N + rn[None, :], dot(ta, tb, acc), (rm[:, None] < M) && (rn[None, :] < N));\n"
  "}\n";

enum { MAX_CASES = 58, SOURCE_CAP = 2048, BATCH = 3 };

/* how a and b are stored, and whether the product is batched */
typedef enum { NN, NT, TN, BATCHED, LOGICAL, KT } form;

/* warp_specialize and persistent: the compiler's choice, or forced off */
typedef enum { AUTO, OFF } choice;

typedef struct {
  char name[48];
  char source[SOURCE_CAP];
  tk_dtype in, acc;
  tk_dtype in_b; /* b's element type: in, or the other fp8 type (a mixed product) */
  bool ieee;     /* input_precision = "ieee": an fp8 product keeps f16's f32 sums */
  int bm, bn, bk, warps, stages;
  choice ws, persist;
  int per_sm; /* @launch(programs_per_sm); 0: unset */
  form form;
  bool big; /* also the shape with more tiles than SMs */
} dot_case;

typedef struct {
  long m, n, k;
} shape;

/* {300, 272, 208}: M ragged, N and K multiples of 16 (the TMA variant, zero-filled K
 * tail); {40, 48, 16}: K under one step */
static const shape shapes[] = {{1, 1, 1},     {37, 50, 70},    {130, 100, 33}, {64, 64, 64},
                               {200, 17, 129}, {256, 256, 256}, {300, 272, 208}, {40, 48, 16}};
static const shape big_shape = {1536, 1664, 96};
/* more tiles than 132 SMs and not a multiple of them at 128x256 (144: one round and 12)
 * and 128x128 (288): the big warp-specialized persistent cases (streamk = true) run their
 * last rounds as stream-K pieces (docs/passes.md), after big_shape's launch on the same
 * workspace */
static const shape big_streamk = {2304, 2048, 200};

typedef struct {
  gh_harness h;
  dot_case cases[MAX_CASES];
  int ncases;
} globals;
static globals G; /* the one fixture the whole program shares: contexts are expensive */

static const char *dtype_name(tk_dtype t) {
  switch (t) {
  case TK_F16: return "f16";
  case TK_BF16: return "bf16";
  case TK_F32: return "f32";
  case TK_I8: return "i8";
  case TK_I32: return "i32";
  case TK_F8E4M3: return "f8e4m3";
  case TK_F8E5M2: return "f8e5m2";
  default: return "?";
  }
}

static void add_case_ps(tk_dtype in, int bm, int bn, int bk, int warps, int stages, choice ws,
                        choice persist, bool big, form fm, int per_sm) {
  SU_ASSERT(G.ncases < MAX_CASES);
  dot_case *c = &G.cases[G.ncases++];
  memset(c, 0, sizeof *c);
  c->in = c->in_b = in;
  c->acc = in == TK_I8 ? TK_I32 : TK_F32;
  c->bm = bm;
  c->bn = bn;
  c->bk = bk;
  c->warps = warps;
  c->stages = stages;
  c->ws = ws;
  c->persist = persist;
  c->big = big;
  c->form = fm;
  c->per_sm = per_sm;
  static const char *const forms[] = {"", "_nt", "_tn", "_batch", "_logical", "_kt"};
  char name[sizeof c->name];
  char ps[8] = "";
  if (per_sm) snprintf(ps, sizeof ps, "_ps%d", per_sm);
  snprintf(name, sizeof name, "dot_%s_%dx%dx%d_w%d_s%d%s%s%s%s", dtype_name(in), bm, bn, bk, warps, stages,
           ws == OFF ? "_nows" : "", persist == OFF ? "_nopers" : "", ps, forms[fm]);
  memcpy(c->name, name, sizeof name);
  const char *t = dtype_name(in), *u = dtype_name(c->acc), *zero = in == TK_I8 ? "0" : "0.0";
  const char *tmpl = fm == NT        ? MATMUL_NT_TK
                     : fm == TN      ? MATMUL_TN_TK
                     : fm == BATCHED ? MATMUL_BATCH_TK
                     : fm == LOGICAL ? MATMUL_LOGICAL_TK
                     : fm == KT      ? MATMUL_KT_TK
                                     : MATMUL_TK;
  /* the last argument is read by MATMUL_KT_TK only */
  int n = snprintf(c->source, sizeof c->source, tmpl, name, t, t, u, u, zero, zero, "");
  SU_ASSERT(n > 0 && n < SOURCE_CAP);
}

static void add_case_form(tk_dtype in, int bm, int bn, int bk, int warps, int stages, choice ws,
                          choice persist, bool big, form fm) {
  add_case_ps(in, bm, bn, bk, warps, stages, ws, persist, big, fm, 0);
}

/* An fp8 KT case with b of type in_b (a mixed e4m3 x e5m2 product when it differs) and,
 * when ieee, input_precision = "ieee" (the f16 product instead of wgmma's fp8 forms). */
static void add_case_kt8(tk_dtype in, tk_dtype in_b, bool ieee, int bm, int bn, int bk, int warps,
                         int stages) {
  add_case_form(in, bm, bn, bk, warps, stages, AUTO, AUTO, false, KT);
  dot_case *c = &G.cases[G.ncases - 1];
  c->in_b = in_b;
  c->ieee = ieee;
  char name[sizeof c->name];
  int n = snprintf(name, sizeof name, "%s%s%s", c->name, in_b != in ? "_b_e5m2" : "", ieee ? "_ieee" : "");
  SU_ASSERT(n > 0 && n < (int)sizeof name);
  memcpy(c->name, name, sizeof name);
  n = snprintf(c->source, sizeof c->source, MATMUL_KT_TK, name, dtype_name(in), dtype_name(in_b), "f32", "f32",
               "0.0", "0.0", ieee ? ", input_precision = \"ieee\"" : "");
  SU_ASSERT(n > 0 && n < SOURCE_CAP);
}

static void add_case_full(tk_dtype in, int bm, int bn, int bk, int warps, int stages, choice ws,
                          choice persist, bool big) {
  add_case_form(in, bm, bn, bk, warps, stages, ws, persist, big, NN);
}

static void add_case(tk_dtype in, int bm, int bn, int bk, int warps) {
  add_case_full(in, bm, bn, bk, warps, 1, AUTO, AUTO, false);
}

static void make_cases(void) {
  /* the pipelines: sm_90a's wgmma (TMA or cp.async by the arguments), mma.sync otherwise */
  add_case_full(TK_F16, 128, 256, 64, 8, 3, AUTO, AUTO, true);  /* warp-specialized, persistent */
  add_case_full(TK_F16, 128, 128, 64, 8, 4, AUTO, OFF, false);  /* warp-specialized */
  add_case_full(TK_F16, 128, 128, 64, 8, 2, OFF, OFF, false);   /* single stream */
  add_case_full(TK_F16, 128, 128, 64, 8, 5, OFF, AUTO, true);   /* persistent, single stream */
  add_case_full(TK_BF16, 128, 128, 32, 8, 3, AUTO, AUTO, false);
  add_case_full(TK_F16, 64, 64, 32, 4, 3, AUTO, AUTO, false);   /* one consumer warpgroup */
  /* two programs per SM: registers capped for two CTAs, a grid of 2 x SMs */
  add_case_ps(TK_F16, 128, 128, 64, 4, 2, AUTO, AUTO, true, NN, 2);
  add_case_ps(TK_BF16, 64, 64, 64, 4, 2, AUTO, OFF, false, NN, 3);
  add_case_full(TK_F16, 128, 64, 16, 4, 2, AUTO, AUTO, false);  /* 32-byte swizzle, 2 rows per warp */
  add_case_full(TK_F16, 64, 64, 32, 2, 3, AUTO, AUTO, false);   /* mma.sync from a cp.async ring */
  add_case_full(TK_F32, 64, 64, 32, 4, 3, AUTO, AUTO, false);   /* tf32 on mma.sync, from a ring */
  add_case_full(TK_I8, 64, 64, 64, 4, 2, AUTO, AUTO, false);
  add_case_full(TK_F16, 128, 128, 64, 8, 1, AUTO, AUTO, false); /* wgmma, staged */
  /* column-major operands (cp.async rings: the contiguous dim is not the tile's last) and
   * batched products (a 3-D tensor map: the batch offset is a dim of box 1) */
  add_case_form(TK_F16, 128, 128, 64, 8, 3, AUTO, AUTO, false, NT);
  add_case_form(TK_F16, 128, 128, 64, 8, 3, AUTO, AUTO, false, TN);
  add_case_form(TK_BF16, 64, 64, 32, 4, 2, AUTO, AUTO, false, NT);
  add_case_form(TK_F16, 128, 128, 64, 8, 3, AUTO, AUTO, false, BATCHED);
  /* s8 on wgmma (both operands K-major): a TMA ring warp-specialized and persistent, a
   * cp.async-free staged product, one warpgroup; f16 the same way for comparison */
  add_case_form(TK_I8, 128, 128, 64, 8, 3, AUTO, AUTO, true, KT);
  add_case_form(TK_I8, 64, 128, 128, 4, 1, AUTO, AUTO, false, KT);
  add_case_form(TK_I8, 64, 64, 32, 4, 2, OFF, OFF, false, KT);
  add_case_form(TK_F16, 128, 128, 64, 8, 3, AUTO, AUTO, false, KT);
  /* fp8 on wgmma's own e4m3/e5m2 forms (fp8dot): ring, staged */
  add_case_form(TK_F8E4M3, 128, 128, 128, 8, 3, AUTO, AUTO, true, KT);
  add_case_form(TK_F8E5M2, 128, 256, 64, 8, 2, AUTO, AUTO, false, KT);
  add_case_form(TK_F8E4M3, 64, 64, 32, 4, 1, AUTO, AUTO, false, KT);
  /* mixed e4m3 x e5m2 on wgmma's mixed form; "ieee": the f16 product's f32 sums */
  add_case_kt8(TK_F8E4M3, TK_F8E5M2, false, 128, 128, 128, 8, 3);
  add_case_kt8(TK_F8E4M3, TK_F8E4M3, true, 128, 128, 64, 8, 3);
  add_case_form(TK_F16, 64, 64, 32, 4, 2, OFF, OFF, false, BATCHED);
  /* K as one logical tile of 256 (every shape's K fits): the sample's configuration and the
   * others' pipelines, each dtype with its own step (f16/bf16 64, tf32 32, i8 128) */
  add_case_form(TK_F16, 128, 256, 256, 8, 4, AUTO, AUTO, true, LOGICAL);
  add_case_form(TK_F16, 128, 128, 256, 8, 3, OFF, OFF, false, LOGICAL);
  add_case_form(TK_BF16, 64, 64, 256, 4, 2, AUTO, AUTO, false, LOGICAL);
  add_case_form(TK_F32, 64, 64, 256, 4, 3, AUTO, AUTO, false, LOGICAL);
  add_case_form(TK_I8, 64, 64, 256, 4, 2, AUTO, AUTO, false, LOGICAL);
  add_case_form(TK_F16, 64, 64, 256, 4, 1, AUTO, AUTO, false, LOGICAL);
  add_case(TK_F16, 128, 128, 64, 4);
  add_case(TK_F16, 128, 128, 64, 8);
  add_case(TK_F16, 64, 64, 32, 4);
  add_case(TK_F16, 16, 16, 16, 4); /* smaller than the warp grid */
  add_case(TK_F16, 32, 64, 16, 2);
  add_case(TK_F16, 64, 32, 128, 1);
  add_case(TK_F16, 16, 128, 32, 8);
  add_case(TK_BF16, 64, 128, 32, 4);
  add_case(TK_BF16, 32, 32, 16, 4);
  add_case(TK_F32, 64, 64, 32, 4);
  add_case(TK_F32, 16, 32, 16, 8);
  add_case(TK_I8, 64, 64, 64, 4);
  add_case(TK_I8, 16, 16, 32, 2);
  /* fp8: converted to f16 after the load, then f16's tensor-core path */
  add_case_full(TK_F8E4M3, 128, 128, 64, 8, 3, AUTO, AUTO, false);
  add_case_form(TK_F8E5M2, 64, 64, 32, 4, 2, AUTO, AUTO, false, NT);
  add_case(TK_F8E4M3, 64, 64, 32, 4);
  add_case(TK_F8E5M2, 32, 32, 16, 2);
}

/* ---- data ---- */

/* One random input element at p: k / 8 with k in [-16, 16], or an integer in [-8, 8]. */
static void random_elem(tk_dtype t, void *p) {
  int k = (int)(gh_rng_next(&G.h) % 33) - 16;
  if (t == TK_I8) {
    int8_t i = (int8_t)(k / 2);
    memcpy(p, &i, 1);
  } else if (t == TK_F32) {
    float f = (float)k / 8;
    memcpy(p, &f, 4);
  } else if (ir_dtype_is_fp8(t)) { /* exact in f8e4m3; f8e5m2 rounds some to 3 bits */
    *(uint8_t *)p = ir_fp8_bits(t, (double)k / 8);
  } else {
    /* multiples of 1/8 in [-2, 2]: exact in f16 and bf16 */
    float v = (float)k / 8;
    uint16_t h = t == TK_BF16 ? gh_float_to_bf16(v) : gh_float_to_half(v);
    memcpy(p, &h, 2);
  }
}

/* Outputs start as this in every byte: 0x7f7f7f7f is no result here (3.4e38 as f32). */
enum { POISON = 0x7f };

/* Compares n accumulators; on the first mismatch fails naming the element. The harness's
 * own check: the interpreter wrote every element, so two untouched buffers never pass. */
static void compare(const char *what, tk_dtype t, const void *gpu, const void *ref, long n,
                    long cols) {
  static const unsigned char poison[4] = {POISON, POISON, POISON, POISON};
  for (long i = 0; i < n; i++) {
    if (memcmp((const char *)ref + 4 * i, poison, 4) == 0)
      fail_msg("%s [%ld]: the interpreter left it unwritten", what, i);
    if (t == TK_I32) {
      int32_t a, b;
      memcpy(&a, (const char *)gpu + 4 * i, 4);
      memcpy(&b, (const char *)ref + 4 * i, 4);
      if (a != b)
        fail_msg("%s [%ld, %ld]: cuda %d, interpreter %d (TK_TEST_SEED=%llu)", what, i / cols,
                 i % cols, a, b, (unsigned long long)G.h.first_seed);
      continue;
    }
    float a, b;
    memcpy(&a, (const char *)gpu + 4 * i, 4);
    memcpy(&b, (const char *)ref + 4 * i, 4);
    if (!(fabsf(a - b) <= 1e-6f * fabsf(b)))
      fail_msg("%s [%ld, %ld]: cuda %.9g, interpreter %.9g (TK_TEST_SEED=%llu)", what, i / cols,
               i % cols, a, b, (unsigned long long)G.h.first_seed);
  }
}

/* ---- running one case ---- */

static gh_defines defines_of(const dot_case *c) {
  gh_defines d = {0};
  gh_define_int(&d, "BM", c->bm);
  gh_define_int(&d, "BN", c->bn);
  gh_define_int(&d, "BK", c->bk);
  gh_define_int(&d, "warps", c->warps);
  gh_define_int(&d, "stages", c->stages);
  if (c->ws == OFF) gh_define_str(&d, "warp_specialize", "false");
  if (c->persist == OFF) gh_define_str(&d, "persistent", "false");
  if (c->per_sm) gh_define_int(&d, "programs_per_sm", c->per_sm);
  /* stream-K is opt-in (slower where measured, docs/decisions.md): the big warp-specialized
   * persistent cases ask for it, so that big_streamk runs its pieces */
  if (c->big && c->ws != OFF && c->persist != OFF) gh_define_str(&d, "streamk", "true");
  return d;
}

static tk_kernel *compile(tk_context *ctx, const dot_case *c) {
  gh_defines d = defines_of(c);
  return gh_compile(&G.h, ctx, &(gh_source){c->name, c->source, NULL, c->name}, &d);
}

static long batches(const dot_case *c) { return c->form == BATCHED ? BATCH : 1; }

static void run_on(tk_context *ctx, tk_kernel *k, const dot_case *c, const shape *sh,
                   const void *a, const void *b, void *out) {
  size_t in = gh_dtype_size(c->in), nb = (size_t)batches(c);
  size_t bytes[3] = {nb * (size_t)(sh->m * sh->k) * in, nb * (size_t)(sh->k * sh->n) * in,
                     nb * (size_t)(sh->m * sh->n) * 4};
  const void *host[3] = {a, b, out};
  tk_devptr dev[3] = {0};
  tk_arg args[9];
  for (int i = 0; i < 3; i++) {
    assert_int_equal(tk_malloc(ctx, &dev[i], bytes[i]), TK_OK);
    assert_int_equal(tk_memcpy_htod(ctx, dev[i], host[i], bytes[i]), TK_OK);
    args[i] = tk_arg_ptr(dev[i]);
  }
  args[3] = tk_arg_i32((int32_t)sh->m);
  args[4] = tk_arg_i32((int32_t)sh->n);
  args[5] = tk_arg_i32((int32_t)sh->k);
  args[6] = tk_arg_i32((int32_t)(sh->m * sh->k));
  args[7] = tk_arg_i32((int32_t)(sh->k * sh->n));
  args[8] = tk_arg_i32((int32_t)(sh->m * sh->n));
  tk_grid grid = {(unsigned)gh_cdiv(sh->m, c->bm), (unsigned)gh_cdiv(sh->n, c->bn), (unsigned)batches(c)};
  tk_status s = tk_launch(k, grid, NULL, args, c->form == BATCHED ? 9 : 6);
  if (s == TK_OK) s = tk_synchronize(ctx);
  if (s != TK_OK)
    fail_msg("%s (%ldx%ldx%ld) on %s: %s: %s", c->name, sh->m, sh->n, sh->k,
             gh_ctx_name(&G.h, ctx), tk_status_name(s), tk_last_error(ctx));
  assert_int_equal(tk_memcpy_dtoh(ctx, out, dev[2], bytes[2]), TK_OK);
  for (int i = 0; i < 3; i++) assert_int_equal(tk_free(ctx, dev[i]), TK_OK);
}

static void run_shape(const dot_case *c, tk_kernel *kc, tk_kernel *ki, const shape *sh) {
  size_t sz = gh_dtype_size(c->in);
  long nb = batches(c);
  char *a = malloc((size_t)(nb * sh->m * sh->k) * sz), *b = malloc((size_t)(nb * sh->k * sh->n) * sz);
  for (long i = 0; i < nb * sh->m * sh->k; i++) random_elem(c->in, a + i * (long)sz);
  for (long i = 0; i < nb * sh->k * sh->n; i++) random_elem(c->in_b, b + i * (long)sz);
  size_t out_bytes = (size_t)(nb * sh->m * sh->n) * 4;
  void *gpu = malloc(out_bytes), *ref = malloc(out_bytes);
  memset(gpu, POISON, out_bytes);
  memset(ref, POISON, out_bytes);
  run_on(G.h.cuda, kc, c, sh, a, b, gpu);
  run_on(G.h.interp, ki, c, sh, a, b, ref);
  char what[96];
  snprintf(what, sizeof what, "%s (M=%ld N=%ld K=%ld)", c->name, sh->m, sh->n, sh->k);
  compare(what, c->acc, gpu, ref, nb * sh->m * sh->n, sh->n);
  free(a);
  free(b);
  free(gpu);
  free(ref);
}

static void test_case(void **state) {
  const dot_case *c = *state;
  if (!G.h.cuda) skip();
  tk_kernel *kc = compile(G.h.cuda, c), *ki = compile(G.h.interp, c);
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) run_shape(c, kc, ki, &shapes[i]);
  if (c->big) run_shape(c, kc, ki, &big_shape);
  if (c->big) run_shape(c, kc, ki, &big_streamk);
}

/* ---- host-only: every case through the GPU back end ---- */

static void test_all_compile_to_ptx(void **state) {
  (void)state;
  for (int i = 0; i < G.ncases; i++) {
    const dot_case *c = &G.cases[i];
    gh_defines d = defines_of(c);
    su_buf ptx = {0};
    bool ok = gh_emit_ptx(c->name, c->source, &d, &ptx);
    /* the default target, sm_90a, runs f16 and bf16 on wgmma, the rest on mma.sync */
    bool has_mma = ok && (strstr(su_buf_str(&ptx), "mma.sync.aligned.m16n8k") != NULL ||
                          strstr(su_buf_str(&ptx), "wgmma.mma_async.sync.aligned.m64n") != NULL);
    /* a logical K is pipelined only once kloop has made it a loop */
    bool piped = ok && strstr(su_buf_str(&ptx), "cp.async") != NULL;
    const char *form8 = c->ieee                 ? NULL
                        : c->in == TK_I8        ? ".s32.s8.s8"
                        : c->in_b == TK_F8E5M2 && c->in == TK_F8E4M3 ? ".f32.e4m3.e5m2"
                        : c->in == TK_F8E4M3    ? ".f32.e4m3.e4m3"
                        : c->in == TK_F8E5M2    ? ".f32.e5m2.e5m2"
                                                : NULL;
    /* any of wgmma's e4m3-A forms, which "ieee" must stay off */
    bool any_e4m3 = ok && strstr(su_buf_str(&ptx), ".f32.e4m3.") != NULL;
    bool wgmma8 = ok && form8 && strstr(su_buf_str(&ptx), form8) != NULL && strstr(su_buf_str(&ptx), "wgmma") != NULL;
    su_buf_free(&ptx);
    if (!ok) fail_msg("%s: the GPU back end rejected it (diagnostics above)", c->name);
    if (!has_mma) fail_msg("%s: no tensor-core instruction in the PTX", c->name);
    if (c->form == KT && form8 && !wgmma8)
      fail_msg("%s: an 8-bit product with K-major operands is not on wgmma's %s", c->name, form8);
    if (c->ieee && any_e4m3)
      fail_msg("%s: input_precision \"ieee\" on fp8 still ran wgmma's fp8 form", c->name);
    if (c->form == LOGICAL && c->stages >= 2 && !piped)
      fail_msg("%s: the logical K was not pipelined (no cp.async in the PTX)", c->name);
  }
}

int main(void) {
  gh_init(&G.h, "gpu_dot");
  make_cases();

  const struct CMUnitTest host[] = {cmocka_unit_test(test_all_compile_to_ptx)};
  struct CMUnitTest dev[MAX_CASES];
  for (int i = 0; i < G.ncases; i++)
    dev[i] = (struct CMUnitTest){G.cases[i].name, test_case, NULL, NULL, &G.cases[i]};
  return gh_run(&G.h, host, 1, dev, (size_t)G.ncases);
}
