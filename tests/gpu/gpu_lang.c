/*
 * gpu_lang — the language forms of docs/language.md that are more than one op (dtype
 * parameters, helpers returning tuples, ...) on the CUDA backend, checked against the
 * interpreter: each case's kernel on the same inputs, its outputs compared exactly or
 * within the case's relative tolerance (for exp and sums whose order the GPU chooses).
 * tests/interp/test_lang.c holds the interpreter to C references of the same forms.
 *
 * A case is a kernel and its buffers: inputs (filled with small multiples of 1/8, which
 * every float type holds exactly, or small integers: [-8, 8) signed, [0, 8) unsigned, which
 * index an axis of 8 or more), then outputs (zeroed), then the
 * i32 scalars; it runs on a grid along x. The host test compiles every case through the
 * GPU back end (no device needed). Without a device the device tests are skipped and the
 * program exits 77; with TK_GPU_TESTS_SELFCHECK=1 a second interpreter stands in for the
 * device. The seed is printed; TK_TEST_SEED replays it.
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
#include "tests/kernels/lang_kernels.h"

static gh_harness H; /* the one fixture the whole program shares: contexts are expensive */

enum { LC_MAX_BUFS = 5, LC_MAX_SCALARS = 3, LC_MAX_DEFS = 4 };

typedef struct {
  tk_dtype t;
  long n; /* elements */
} lc_buf;

typedef struct {
  const char *name, *kernel, *text;
  const char *defs[2 * LC_MAX_DEFS + 1]; /* NAME, VALUE pairs, NULL-terminated */
  lc_buf in[LC_MAX_BUFS], out[LC_MAX_BUFS];
  int nin, nout;
  int scalars[LC_MAX_SCALARS];
  int nscalars;
  unsigned grid;
  double rtol; /* 0: bit for bit */
} lc_case;

/* ---- the kernels ------------------------------------------------------------------------ */


static const char ONLINE[] =
    "fn step(m, l, x) {\n"
    "    let m2 = maximum(m, max(x, 0));\n"
    "    return (m2, l * exp(m - m2) + sum(exp(x - m2), 0));\n"
    "}\n"
    "kernel online<B: i32 = 32>(x: *f32, out: *f32, n: i32) {\n"
    "    let row = program_id(0);\n"
    "    var (m, l) = (-inf, 0.0);\n"
    "    for i in range(0, n, B) {\n"
    "        let o = i + arange(0, B);\n"
    "        (m, l) = step(m, l, load(x + row * n + o, o < n, -inf));\n"
    "    }\n"
    "    var a = m;\n"
    "    var b = l;\n"
    "    (a, b) = (b, a);\n"
    "    store(out + row * 2, a);\n"
    "    store(out + row * 2 + 1, b);\n"
    "}\n";




static const char JOINS[] =
    "kernel k(x: *f32, y: *f32) {\n"
    "    let r = arange(0, 8);\n"
    "    let a = load(x + r[:, None] * 4 + arange(0, 4)[None, :]);\n"
    "    let b = a * 10.0;\n"
    "    let j = join(a, b);\n"
    "    let (p, q) = split(j);\n"
    "    store(y + arange(0, 64), reshape(j, 64));\n"
    "    store(y + 64 + arange(0, 64), reshape(interleave(a, q), 64));\n"
    "    store(y + 128 + arange(0, 64), reshape(cat(p, b), 64));\n"
    "    store(y + 192 + arange(0, 16), cat(r, r * 2) as f32);\n"
    "}\n"
;

static const char GATHER[] =
    "kernel k(x: *f32, idx: *i32, y: *f32) {\n"
    "    let r = arange(0, 8);\n"
    "    let c = arange(0, 16);\n"
    "    let t = load(x + r[:, None] * 16 + c[None, :]);\n"
    "    let i = load(idx + r[:, None] * 4 + arange(0, 4)[None, :]);\n"
    "    let g = gather(t, i, 1);\n"
    "    store(y + r[:, None] * 4 + arange(0, 4)[None, :], g);\n"
    "    let i0 = load(idx + 32 + arange(0, 2)[:, None] * 16 + c[None, :]);\n"
    "    store(y + 32 + arange(0, 2)[:, None] * 16 + c[None, :], gather(t, i0, 0));\n"
    "}\n"
;

static const char SORT[] =
    "kernel k(x: *f32, y: *f32) {\n"
    "    let r = arange(0, 4);\n"
    "    let c = arange(0, 16);\n"
    "    let t = load(x + r[:, None] * 16 + c[None, :]);\n"
    "    store(y + r[:, None] * 16 + c[None, :], sort(t));\n"
    "    store(y + 64 + r[:, None] * 16 + c[None, :], sort(t, descending = true));\n"
    "    store(y + 128 + r[:, None] * 4 + arange(0, 4)[None, :], topk(t, 4));\n"
    "    let v = load(x + arange(0, 8));\n"
    "    store(y + 144 + arange(0, 8), sort(v));\n"
    "}\n"
;

/* Found by tkdiff on the H200 (docs/decisions.md, "The differential tester: bugs fixed"):
 * the axis facts took a constant (or scalar) shifted by a per-element amount for a
 * constant, and a narrowing cast for a run of consecutive numbers, so one slot's value
 * served a whole group. */
static const char AXIS[] =
    "kernel axis(x: *i32, out: *i32, n: i32) {\n"
    "    let offs = arange(0, 512);\n"
    "    let v = load(x + offs);\n"
    "    store(out + offs, 7 << (v & 31));\n"
    "    store(out + 512 + offs, n << (offs & 31));\n"
    "    store(out + 1024 + offs, where((offs as i8) < 0, 1, 2));\n"
    "}\n";

/* Atomics on a tile that 4 warps replicate: the old values must be the owner's (one
 * atomic per element) in every replica, which cumsum reads across threads (tkdiff seeds
 * 29257, 1014194). */
static const char ATOMICS[] =
    "@launch(warps = 4)\n"
    "kernel atomics(p: *i32, q: *i32, out: *i32) {\n"
    "    let offs = arange(0, 1)[:, None] * 16 + arange(0, 16)[None, :];\n"
    "    store(out + offs, cumsum(atomic_xchg(p + offs, offs + 100), 1));\n"
    "    store(out + 16 + offs, cumsum(atomic_cas(q + offs, load(q + offs), offs), 1));\n"
    "    store(out + 32 + offs, cumsum(atomic_add(p + offs, 1, offs % 3 == 0), 1));\n"
    "    let two = arange(0, 1)[:, None] * 2 + arange(0, 2)[None, :];\n"
    "    store(out + 48 + two, cumsum(atomic_cas(q + 16 + two, load(q + 16 + two), two + 7), 1));\n"
    "}\n";

/* The last program to take a ticket (atomic_add's default acq_rel, at the program level)
 * sums every program's part: each part's stores, by all 128 threads of its program, must
 * be visible to it; it resets the counter for the next launch. 300 programs on every SM. */
static const char LAST[] =
    "@launch(warps = 4)\n"
    "kernel last(x: *f32, parts: *f32, count: *i32, out: *f32) {\n"
    "    let pid = program_id(0);\n"
    "    let offs = arange(0, 256);\n"
    "    store(parts + pid * 256 + offs, load(x + pid * 256 + offs) * 2.0);\n"
    "    if atomic_add(count, 1) == num_programs(0) - 1 {\n"
    "        var s = zeros<f32>(256);\n"
    "        for p in range(0, num_programs(0)) { s = s + load(parts + p * 256 + offs); }\n"
    "        store(out + offs, s);\n"
    "        store(count, 0);\n"
    "    }\n"
    "}\n";

/* Shifts by every amount from -8 to 55 on 8 to 64 bits (an amount of the width or more,
 * read as unsigned, gives 0 or the sign) and INT_MIN / -1, INT_MIN % -1: the language's
 * definitions, which LLVM leaves poison or undefined. */
static const char SHIFTS[] =
    "kernel shifts(x: *i32, out: *i32, o64: *i64, o8: *i8, o16: *i16) {\n"
    "    let offs = arange(0, 64);\n"
    "    let a = load(x + offs) * 12345677 + 1;\n"
    "    let s = offs - 8;\n"
    "    store(out + offs, a << s);\n"
    "    store(out + 64 + offs, a >> s);\n"
    "    store(out + 128 + offs, ((a as u32) >> (s as u32)) as i32);\n"
    "    let m = where(offs % 4 == 0, 1 << 31, a);\n"
    "    let d = where(offs % 3 == 0, -1, (s & 7) + 1);\n"
    "    store(out + 192 + offs, m / d);\n"
    "    store(out + 256 + offs, m % d);\n"
    "    store(o64 + offs, ((a as i64) << (s as i64)) + ((a as i64) >> (s as i64)));\n"
    "    store(o8 + offs, ((a as i8) << (s as i8)) ^ ((a as i8) >> (s as i8)));\n"
    "    store(o16 + offs, ((a as u16) << (s as u16)) as i16 ^ ((a as i16) >> (s as i16)));\n"
    "}\n";

/* Negation and abs of the most negative i8 and i16 (they wrap to themselves; x = 0 of
 * the inputs in [-8, 8) makes them at run time), seen through a shift, a widening and a
 * compare: ptxas took them for +128 and +32768 (seed
 * 38040; codegen/ptx_fixup.c). */
static const char NARROW_NEG[] =
    "kernel narrow_neg(x: *i32, o16: *i16, out: *i32) {\n"
    "    let offs = arange(0, 256);\n"
    "    let v = ((load(x + offs) + 8) * 4096) as i16;\n"
    "    let b = ((load(x + offs) + 8) * 16) as i8;\n"
    "    store(o16 + offs, (-v) >> 8);\n"
    "    store(o16 + 256 + offs, abs(v) >> 8);\n"
    "    store(o16 + 512 + offs, (-b) as i16);\n"
    "    store(out + offs, (-v) as i32 + where(abs(b) < 0, 1000, 0));\n"
    "    store(out + 256 + offs, 65536 - (-(offs as u8 as i8)) as u16 as i32);\n"
    "}\n";

/* Negated loads into min/max chains and reductions: ptxas folded the negations into its
 * three-input VIMNMX3 and dropped some (seeds 1009134, 1012222, 1009129;
 * codegen/ptx_fixup.c). */
static const char NEG_MINMAX[] =
    "@launch(warps = 2)\n"
    "kernel neg_minmax(x: *i32, y: *i32, out: *i32, o64: *i64) {\n"
    "    let rows = arange(0, 4);\n"
    "    let cols = arange(0, 32);\n"
    "    let offs = rows[:, None] * 32 + cols[None, :];\n"
    "    let v = load(x + offs) * 1000 + offs;\n"
    "    let w = load(y + offs);\n"
    "    store(out + rows, max(-v, 1));\n"
    "    store(out + 4 + offs, minimum(w as u8 as i32, -v));\n"
    "    store(out + 132 + offs, clamp(w, offs, minimum(w as u8 as i32, -v)));\n"
    "    store(o64 + rows, min(-(v as i64) * 4000000000, 1));\n"
    "}\n";

/* The form of seed 1012222 that ptxas 13.0 miscompiles (9 of the 16 negations left in
 * its SASS before the fix). */
static const char NEG_MAX[] =
    "@launch(warps = 2)\n"
    "kernel neg_max(z: *i16, out: *i32) {\n"
    "    let pid = program_id(0);\n"
    "    let rows = arange(0, 4);\n"
    "    let cols = arange(0, 32);\n"
    "    let offs = pid * 128 + rows[:, None] * 32 + cols[None, :];\n"
    "    let t = maximum(load(z + offs) as i32, 0);\n"
    "    store(out + pid * 4 + rows[:, None], expand_dims(max((-t), 1), 1));\n"
    "}\n";

/* The negation of a sum into an unsigned max reduction (tkdiff seed 3003365): ptxas fed
 * some elements' plain sums to VIMNMX3.U32 until codegen/ptx_fixup.c spelled -x as ~x + 1. */
static const char NEG_UMAX[] =
    "kernel neg_umax(out: *u32) {\n"
    "    let pid = program_id(0);\n"
    "    let rows = arange(0, 32);\n"
    "    let cols = arange(0, 32);\n"
    "    let offs = pid * 1024 + rows[:, None] * 32 + cols[None, :];\n"
    "    store(out + pid * 32 + rows[:, None], ~max(-(offs as u32), 1)[:, None]);\n"
    "}\n";

/* u16 negations into a packed min reduction (tkdiff seed 5119731: sub.u16 0, x before
 * min.u16x2 came out as x; ptx_fixup.c writes not + add 1). */
static const char NEG_UMIN16[] =
    "kernel neg_umin16(x: *u16, out: *u16) {\n"
    "    let rows = arange(0, 32);\n"
    "    let t2 = max(maximum(load(x + rows[:, None] * 32 + arange(0, 32)[None, :]), 6), 0);\n"
    "    store(out + arange(0, 32), -t2);\n"
    "    store(out + 32 + arange(0, 1), full<u16>(min(-t2), 1));\n"
    "}\n";

/* Relayouts in both arms of an if after one before it (tkdiff seed 5122301: the else arm
 * reused the scratch half the op before the if was still being read from). */
static const char IF_RELAYOUT[] =
    "@launch(warps = 8)\n"
    "kernel if_relayout(x: *i32, out: *i32, s: i32) {\n"
    "    let rows = arange(0, 32);\n"
    "    let offs = rows[:, None] * 32 + arange(0, 32)[None, :];\n"
    "    var t = broadcast_to(-load(x + arange(0, 32)), 32, 32);\n"
    "    if s > 0 {\n"
    "        t = t + broadcast_to(load(x + rows)[:, None], 32, 32);\n"
    "    } else {\n"
    "        t = t + broadcast_to((rows * 96)[:, None], 32, 32);\n"
    "    }\n"
    "    store(out + offs, t);\n"
    "}\n";

/* -0.0 is the identity of a float sum (tkdiff seeds 3007322, 3017373): a reduction of
 * -0.0 values is -0.0 in registers, across warps, over an axis of one, and in fuse's
 * chunk loop over a long row; copysign makes the sign visible. */
static const char NEG_ZERO[] =
    "kernel neg_zero(x: *f32, out: *f32) {\n"
    "    let rows = arange(0, 4);\n"
    "    let v = load(x + rows[:, None] * 2 + arange(0, 2)[None, :]);\n"
    "    store(out + rows, copysign(1.5, sum(copysign(0.0, -abs(v)), 1)));\n"
    "    store(out + 4 + rows, copysign(1.5, sum(copysign(0.0, v), 1)));\n"
    "    let one = load(x + rows[:, None] + arange(0, 1)[None, :]);\n"
    "    store(out + 8 + rows, copysign(1.5, sum(copysign(0.0, -abs(one)), 1)));\n"
    "    let w = load(x + arange(0, 65536) % 8);\n"
    "    store(out + 12 + arange(0, 1), full(copysign(1.5, sum(copysign(0.0, -abs(w)), 0)), 1));\n"
    "    store(out + 13 + arange(0, 1), full(copysign(1.5, sum(copysign(0.0, w), 0)), 1));\n"
    "}\n";

/* Wide integers and f64 into bf16, rounded once (tkdiff seed 3005140): through
 * f32 to nearest twice, 2^24 + 2^16 + 1 became 2^24 instead of 2^24 + 2^17. */
static const char BF16_ROUND[] =
    "kernel bf16_round(x: *i32, out: *bf16) {\n"
    "    let offs = arange(0, 64);\n"
    "    let a = (16842752 + (load(x + offs) & 1)) * (1 + offs % 4);\n"
    "    store(out + offs, a as bf16);\n"
    "    store(out + 64 + offs, (-a) as bf16);\n"
    "    store(out + 128 + offs, (a as u32) as bf16);\n"
    "    store(out + 192 + offs, ((a as i64) << 30) as bf16);\n"
    "    store(out + 256 + offs, ((a as u64) << 39) as bf16);\n"
    "    store(out + 320 + offs, (a as f64) as bf16);\n"
    "    store(out + 384 + offs, (a + load(x + offs) * 40000) as bf16);\n"
    "}\n";

/* An i8 dot in a cp.async ring whose b rows give each thread two bytes, less than
 * cp.async copies (tkdiff seed 3005720 and 12 others: the synchronous fallback copied the
 * first byte of each pair only). */
static const char I8_RING[] =
    "@launch(warps = 4, stages = 3)\n"
    "kernel i8_ring(a: *i8, b: *i8, out: *i32, n: i32) {\n"
    "    let pid = program_id(0);\n"
    "    let rows = arange(0, 32);\n"
    "    let cols = arange(0, 16);\n"
    "    var acc = zeros<i32>(32, 16);\n"
    "    for kk in range(0, n) {\n"
    "        let ta = load(a + pid * 1536 + rows[:, None] * 48 + (kk * 16 + arange(0, 16))[None, :]);\n"
    "        let tb = load(b + (kk * 16 + arange(0, 16))[:, None] * 16 + cols[None, :]);\n"
    "        acc = dot(ta, tb, acc);\n"
    "    }\n"
    "    store(out + pid * 512 + rows[:, None] * 16 + cols[None, :], acc);\n"
    "}\n";

/* sitofp from i1, which instcombine forms and LLVM 19 selects as +1.0 for true (tkdiff
 * seed 5001717); and an i1 tile's relayout, whose bytes the SLP vectorizer read as a
 * <16 x i8> at byte 7 (seed 5005542: a misaligned-address fault). codegen/llvm_fixup.c. */
static const char I1_FORMS[] =
    "@launch(warps = 1)\n"
    "kernel i1_forms(b: *i1, x: *f32, out: *f32, cnt: *i32, s0: i32, s4: i32) {\n"
    "    let rows = arange(0, 16);\n"
    "    let t0 = arange(0, 1) - (load(b + rows[:, None]) / (rows[:, None] + 1));\n"
    "    store(out + rows[:, None], t0 * load(x + arange(0, 1)));\n"
    "    let r32 = arange(0, 32);\n"
    "    let offs = r32[:, None] * 32 + arange(0, 32)[None, :];\n"
    "    let t1 = ((s0 > 5) | (load(x + offs, offs < s0) == s4)) as i32;\n"
    "    store(cnt + r32[:, None], sum(t1, 1)[:, None]);\n"
    "}\n";

/* clamp is minimum(maximum(x, lo), hi) on every backend: lo > hi gives hi, a NaN
 * operand gives NaN (compared as NaN or not: its bits are the backend's), -0 is below +0,
 * and integers clamp in their common type (i8 with i32 and u8: i32). */
static const char CLAMPS[] =
    "kernel clamps(x: *f32, y: *i32, out: *f32, oi: *i32, o64: *i64) {\n"
    "    let offs = arange(0, 64);\n"
    "    let v = load(x + offs);\n"
    "    let q = v / v;\n"
    "    store(out + offs, clamp(v, 1.0, -1.0));\n"
    "    let c1 = clamp(q, -0.5, 0.5);\n"
    "    let c2 = clamp(v, q, 2.0);\n"
    "    store(out + 64 + offs, where(isnan(c1), 7.0, c1));\n"
    "    store(out + 128 + offs, clamp(v * 0.0, -0.0, 0.0));\n"
    "    store(out + 192 + offs, where(isnan(c2), 7.0, c2));\n"
    "    let w = load(y + offs);\n"
    "    store(oi + offs, clamp(w as i8, offs - 32, minimum((w * 37) as u8, -w * 1000000)));\n"
    "    store(o64 + offs, clamp((w as i64) * 3000000000, w, -(offs as i64) * 5000000000));\n"
    "}\n";

/* skipscale (docs/passes.md): a loop's rescale of a wgmma accumulator by a row factor runs
 * only in warps where some factor is not 1. Rows with rm % 64 >= 20 have factor 1: warps 2
 * and 3 of each warpgroup (rows 32..63 of its 64) skip, warp 0 multiplies every row, warp 1
 * multiplies its rows 16..19 and its rows of factor 1 alike. Two K steps keep every value
 * a multiple of 2^-9 below 2^13, so the sums are exact in any order: bit for bit. */
static const char RESCALE[] =
    "@launch(warps = 8, stages = 2)\n"
    "kernel rescale<BM: i32 = 128, BN: i32 = 128, BK: i32 = 64>(\n"
    "        a: *f16, b: *f16, r: *f32, c: *f32, M: i32, N: i32, K: i32) {\n"
    "    let rm = program_id(0) * BM + arange(0, BM);\n"
    "    let rn = arange(0, BN);\n"
    "    var acc = zeros<f32>(BM, BN);\n"
    "    for k in range(0, K, BK) {\n"
    "        let kk = k + arange(0, BK);\n"
    "        let ta = load(a + rm[:, None] * K + kk[None, :]);\n"
    "        let tb = load(b + kk[:, None] * N + rn[None, :]);\n"
    "        let f = where(rm % 64 < 20, load(r + (k / BK) * M + rm), 1.0);\n"
    "        acc = dot(ta, tb, acc * f[:, None]);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc);\n"
    "}\n";

#define BUF(t, n) {t, n}

static const lc_case CASES[] = {
    {"dtype_f16", "scale", SCALE, {"T", "f16", NULL}, {BUF(TK_F16, 1000)}, {BUF(TK_F16, 1000)},
     1, 1, {1000}, 1, 16, 0},
    {"dtype_bf16", "scale", SCALE, {"T", "bf16", NULL}, {BUF(TK_BF16, 1000)}, {BUF(TK_BF16, 1000)},
     1, 1, {1000}, 1, 16, 0},
    {"dtype_f32_acc_f64", "scale", SCALE, {"T", "f32", "ACC", "f64", NULL}, {BUF(TK_F32, 1000)},
     {BUF(TK_F32, 1000)}, 1, 1, {1000}, 1, 16, 0},
    {"tuple_online_softmax", "online", ONLINE, {NULL}, {BUF(TK_F32, 5 * 300)}, {BUF(TK_F32, 10)},
     1, 1, {300}, 1, 5, 1e-5},
    {"early_exit", "rows", EXIT, {NULL}, {BUF(TK_F32, 6 * 20)}, {BUF(TK_F32, 6 * 20)},
     1, 1, {20, 6}, 2, 9, 0},
    {"while_break_continue", "loops", LOOPS, {NULL}, {{0}}, {BUF(TK_I32, 4 * 40)}, 0, 1, {12}, 1,
     40, 0},
    {"slices_permute", "slices", SLICES, {NULL}, {BUF(TK_F32, 16 * 64)}, {BUF(TK_F32, 912)}, 1, 1,
     {0}, 0, 1, 0},
    {"join_split_cat", "k", JOINS, {NULL}, {BUF(TK_F32, 32)}, {BUF(TK_F32, 208)}, 1, 1, {0}, 0, 1, 0},
    {"gather", "k", GATHER, {NULL}, {BUF(TK_F32, 128), BUF(TK_U32, 64)}, {BUF(TK_F32, 64)}, 2, 1, {0},
     0, 1, 0},
    {"sort_topk", "k", SORT, {NULL}, {BUF(TK_F32, 64)}, {BUF(TK_F32, 152)}, 1, 1, {0}, 0, 1, 0},
    {"histogram", "hist", HIST, {NULL}, {BUF(TK_I32, 1024), BUF(TK_U8, 1024)},
     {BUF(TK_I32, 8 + 16 + 4 + 32 + 1024)}, 2, 1, {1000}, 1, 4, 0},
    {"load_store_hints", "hints", HINTS, {NULL}, {BUF(TK_F32, 300)}, {BUF(TK_F32, 1200)}, 1, 1,
     {300}, 1, 3, 0},
    {"atomic_replicas", "atomics", ATOMICS, {NULL}, {BUF(TK_I32, 16), BUF(TK_I32, 18)},
     {BUF(TK_I32, 50)}, 2, 1, {0}, 0, 1, 0},
    {"atomic_last_program", "last", LAST, {NULL}, {BUF(TK_F32, 300 * 256)},
     {BUF(TK_F32, 300 * 256), BUF(TK_I32, 1), BUF(TK_F32, 256)}, 1, 3, {0}, 0, 300, 0},
    {"shift_amounts_int_min_div", "shifts", SHIFTS, {NULL}, {BUF(TK_I32, 64)},
     {BUF(TK_I32, 320), BUF(TK_I64, 64), BUF(TK_I8, 64), BUF(TK_I16, 64)}, 1, 4, {0}, 0, 1, 0},
    {"narrow_neg_abs_min", "narrow_neg", NARROW_NEG, {NULL}, {BUF(TK_I32, 256)},
     {BUF(TK_I16, 768), BUF(TK_I32, 512)}, 1, 2, {0}, 0, 1, 0},
    {"neg_into_min_max", "neg_minmax", NEG_MINMAX, {NULL}, {BUF(TK_I32, 128), BUF(TK_I32, 128)},
     {BUF(TK_I32, 260), BUF(TK_I64, 4)}, 2, 2, {0}, 0, 1, 0},
    {"neg_into_max_reduction", "neg_max", NEG_MAX, {NULL}, {BUF(TK_I16, 256)}, {BUF(TK_I32, 8)},
     1, 1, {0}, 0, 2, 0},
    {"clamp_edges", "clamps", CLAMPS, {NULL}, {BUF(TK_F32, 64), BUF(TK_I32, 64)},
     {BUF(TK_F32, 256), BUF(TK_I32, 64), BUF(TK_I64, 64)}, 2, 3, {0}, 0, 1, 0},
    {"neg_into_umax_reduction", "neg_umax", NEG_UMAX, {NULL}, {{0}}, {BUF(TK_U32, 64)}, 0, 1, {0}, 0,
     2, 0},
    {"neg_into_u16_min_reduction", "neg_umin16", NEG_UMIN16, {NULL}, {BUF(TK_U16, 1024)},
     {BUF(TK_U16, 33)}, 1, 1, {0}, 0, 1, 0},
    {"relayout_in_if_arms", "if_relayout", IF_RELAYOUT, {NULL}, {BUF(TK_I32, 32)}, {BUF(TK_I32, 1024)},
     1, 1, {0}, 1, 1, 0},
    {"batched_dot", "bdot", BDOT, {NULL},
     {BUF(TK_F16, 2048), BUF(TK_F16, 2048), BUF(TK_F32, 4096), BUF(TK_I8, 4096), BUF(TK_I8, 4096)},
     {BUF(TK_F32, 4096), BUF(TK_I32, 4096)}, 5, 2, {0}, 0, 1, 0},
    {"f16_accumulator", "f16acc", F16ACC, {NULL}, {BUF(TK_F16, 512), BUF(TK_F16, 512), BUF(TK_F16, 1024)},
     {BUF(TK_F16, 1024)}, 3, 1, {0}, 0, 1, 0},
    {"negative_zero_sums", "neg_zero", NEG_ZERO, {NULL}, {BUF(TK_F32, 8)}, {BUF(TK_F32, 14)}, 1, 1,
     {0}, 0, 1, 0},
    {"bf16_rounded_once", "bf16_round", BF16_ROUND, {NULL}, {BUF(TK_I32, 64)}, {BUF(TK_BF16, 448)},
     1, 1, {0}, 0, 1, 0},
    {"i8_dot_narrow_ring", "i8_ring", I8_RING, {NULL}, {BUF(TK_I8, 3 * 1536), BUF(TK_I8, 768)},
     {BUF(TK_I32, 3 * 512)}, 2, 1, {3}, 1, 3, 0},
    {"i1_sitofp_and_relayout", "i1_forms", I1_FORMS, {NULL}, {BUF(TK_I1, 16), BUF(TK_F32, 1024)},
     {BUF(TK_F32, 16), BUF(TK_I32, 32)}, 2, 2, {700, 0}, 2, 1, 0},
    {"skipscale_rows", "rescale", RESCALE, {NULL},
     {BUF(TK_F16, 256 * 128), BUF(TK_F16, 128 * 128), BUF(TK_F32, 2 * 256)}, {BUF(TK_F32, 256 * 128)},
     3, 1, {256, 128, 128}, 3, 2, 0},
    {"axis_shift_narrow", "axis", AXIS, {NULL}, {BUF(TK_I32, 512)}, {BUF(TK_I32, 1536)}, 1, 1,
     {5}, 1, 1, 0},
};
enum { NCASES = sizeof CASES / sizeof CASES[0] };

/* ---- running a case ----------------------------------------------------------------------- */

static gh_defines defines_of(const lc_case *c) {
  gh_defines d = {0};
  for (int i = 0; c->defs[2 * i]; i++) gh_define_str(&d, c->defs[2 * i], c->defs[2 * i + 1]);
  return d;
}

/* Small multiples of 1/8 in [-4, 4) for floats, [-8, 8) for signed and [0, 16) for
 * unsigned integers. */
static void fill(tk_dtype t, long n, unsigned char *p) {
  size_t sz = gh_dtype_size(t);
  for (long i = 0; i < n; i++) {
    uint64_t r = gh_rng_next(&H);
    int k = (int)(r % 64) - 32;
    unsigned char *e = p + (size_t)i * sz;
    switch (t) {
    case TK_F32: { float f = (float)k / 8; memcpy(e, &f, 4); break; }
    case TK_F64: { double f = (double)k / 8; memcpy(e, &f, 8); break; }
    case TK_F16: { uint16_t h = gh_float_to_half((float)k / 8); memcpy(e, &h, 2); break; }
    case TK_BF16: { uint16_t h = gh_float_to_bf16((float)k / 8); memcpy(e, &h, 2); break; }
    case TK_F8E4M3: case TK_F8E5M2: *e = ir_fp8_bits(t, (double)k / 8); break; /* rounded */
    default: {
      bool sgn = t == TK_I8 || t == TK_I16 || t == TK_I32 || t == TK_I64;
      int64_t v = sgn ? (int64_t)(r % 16) - 8 : (int64_t)(r % 8);
      memcpy(e, &v, sz); /* little-endian: the low bytes */
    }
    }
  }
}

/* Runs c on ctx over the inputs in[] and returns its outputs (malloc'd) in out[]. */
static void run(tk_context *ctx, const lc_case *c, void *const in[], void *out[]) {
  gh_defines d = defines_of(c);
  gh_source src = {c->name, c->text, NULL, c->kernel};
  tk_kernel *k = gh_compile(&H, ctx, &src, &d);
  tk_arg args[2 * LC_MAX_BUFS + LC_MAX_SCALARS];
  tk_devptr bufs[2 * LC_MAX_BUFS];
  int na = 0;
  for (int i = 0; i < c->nin + c->nout; i++) {
    const lc_buf *b = i < c->nin ? &c->in[i] : &c->out[i - c->nin];
    size_t bytes = (size_t)b->n * gh_dtype_size(b->t);
    if (tk_malloc(ctx, &bufs[i], bytes) != TK_OK) fail_msg("tk_malloc: %s", tk_last_error(ctx));
    void *init = i < c->nin ? in[i] : calloc(1, bytes);
    if (tk_memcpy_htod(ctx, bufs[i], init, bytes) != TK_OK) fail_msg("htod: %s", tk_last_error(ctx));
    if (i >= c->nin) free(init);
    args[na++] = tk_arg_ptr(bufs[i]);
  }
  for (int i = 0; i < c->nscalars; i++) args[na++] = tk_arg_i32(c->scalars[i]);
  tk_status s = tk_launch(k, (tk_grid){c->grid, 1, 1}, NULL, args, na);
  if (s != TK_OK)
    fail_msg("%s on %s: %s: %s", c->name, gh_ctx_name(&H, ctx), tk_status_name(s), tk_last_error(ctx));
  for (int o = 0; o < c->nout; o++) {
    size_t bytes = (size_t)c->out[o].n * gh_dtype_size(c->out[o].t);
    out[o] = malloc(bytes);
    if (tk_memcpy_dtoh(ctx, out[o], bufs[c->nin + o], bytes) != TK_OK)
      fail_msg("dtoh: %s", tk_last_error(ctx));
  }
  for (int i = 0; i < c->nin + c->nout; i++) tk_free(ctx, bufs[i]);
}

static bool is_float(tk_dtype t) { return t == TK_F16 || t == TK_BF16 || t == TK_F32 || t == TK_F64 || ir_dtype_is_fp8(t); }

static void test_case(void **state) {
  const lc_case *c = *state;
  if (!H.cuda) skip();
  void *in[LC_MAX_BUFS], *gpu[LC_MAX_BUFS], *ref[LC_MAX_BUFS];
  for (int i = 0; i < c->nin; i++) {
    in[i] = malloc((size_t)c->in[i].n * gh_dtype_size(c->in[i].t));
    fill(c->in[i].t, c->in[i].n, in[i]);
  }
  run(H.cuda, c, in, gpu);
  run(H.interp, c, in, ref);
  for (int o = 0; o < c->nout; o++) {
    tk_dtype t = c->out[o].t;
    size_t sz = gh_dtype_size(t);
    for (long j = 0; j < c->out[o].n; j++) {
      const unsigned char *g = (unsigned char *)gpu[o] + j * sz, *r = (unsigned char *)ref[o] + j * sz;
      if (!memcmp(g, r, sz)) continue;
      if (is_float(t) && c->rtol > 0) {
        double gv = gh_elem_value(t, g), rv = gh_elem_value(t, r);
        if (fabs(gv - rv) <= c->rtol * fmax(fabs(rv), 1e-30)) continue;
        fail_msg("%s: output %d [%ld]: cuda %.9g, interpreter %.9g", c->name, o, j, gv, rv);
      }
      uint64_t gb = 0, rb = 0;
      memcpy(&gb, g, sz);
      memcpy(&rb, r, sz);
      fail_msg("%s: output %d [%ld]: cuda 0x%llx, interpreter 0x%llx", c->name, o, j,
               (unsigned long long)gb, (unsigned long long)rb);
    }
  }
  for (int i = 0; i < c->nin; i++) free(in[i]);
  for (int o = 0; o < c->nout; o++) free(gpu[o]), free(ref[o]);
}


/* ---- fp8 conversions on each target ------------------------------------------------------ */

/* F8CVT's inputs: around every midpoint between neighbouring values of both fp8 types (the
 * midpoint and the floats either side), the specials and the edges of saturation, their
 * negations; f64 inputs just past the ties, i32 ones across e5m2's range and beyond. */
static void f8_inputs(float *x, double *xd, int32_t *xi) {
  int n = 0;
  for (int t = 0; t < 2; t++) {
    tk_dtype d = t ? TK_F8E5M2 : TK_F8E4M3;
    for (int i = 0; i < (t ? 0x7b : 0x7e); i++) {
      float mid = (float)((ir_fp8_value(d, (uint8_t)i) + ir_fp8_value(d, (uint8_t)(i + 1))) / 2);
      x[n++] = mid;
      x[n++] = nextafterf(mid, INFINITY);
      x[n++] = nextafterf(mid, 0);
    }
  }
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 448, 449, 464, 465, 480,
                           57344, 61439, 61440, 65504, 1e10f, 3.4e38f, 0x1p-10f, 0x1p-17f,
                           0x1p-18f, 0x1p-30f, 0x1p-140f, 1, -1};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++) x[n++] = special[i];
  for (int i = 0; n < 1024; i++) x[n++] = -x[i];
  for (int i = 0; i < 1024; i++) {
    xd[i] = (double)x[i] * (1 + 0x1p-40);
    xi[i] = i < 512 ? i - 256 : (i - 512) * 137 - 30000;
  }
  xi[1020] = 61439, xi[1021] = 61440, xi[1022] = INT32_MIN, xi[1023] = INT32_MAX;
}

typedef struct {
  uint8_t o4[3328], o5[3328];
  float r32[512];
  uint16_t r16[512];
  int32_t ri[512];
} f8_out;

/* F8CVT compiled for arch (NULL: the context's) on ctx. */
static void f8_run(tk_context *ctx, const char *arch, f8_out *out) {
  static float x[1024];
  static double xd[1024];
  static int32_t xi[1024];
  static uint8_t bytes[256];
  f8_inputs(x, xd, xi);
  for (int i = 0; i < 256; i++) bytes[i] = (uint8_t)i;
  tk_compile_options o = {.arch = arch};
  gh_source src = {"fp8_conversions", F8CVT, NULL, "f8cvt"};
  tk_kernel *k = gh_compile_with(&H, ctx, &src, NULL, &o);
  const void *in[5] = {x, xd, xi, bytes, bytes};
  size_t in_bytes[5] = {sizeof x, sizeof xd, sizeof xi, 256, 256};
  void *outs[5] = {out->o4, out->o5, out->r32, out->r16, out->ri};
  size_t out_bytes[5] = {sizeof out->o4, sizeof out->o5, sizeof out->r32, sizeof out->r16, sizeof out->ri};
  tk_devptr d[10];
  tk_arg args[10];
  for (int i = 0; i < 10; i++) {
    size_t n = i < 5 ? in_bytes[i] : out_bytes[i - 5];
    if (tk_malloc(ctx, &d[i], n) != TK_OK) fail_msg("tk_malloc: %s", tk_last_error(ctx));
    if (i < 5 && tk_memcpy_htod(ctx, d[i], in[i], n) != TK_OK) fail_msg("htod: %s", tk_last_error(ctx));
    args[i] = tk_arg_ptr(d[i]);
  }
  tk_status s = tk_launch(k, (tk_grid){1, 1, 1}, NULL, args, 10);
  if (s != TK_OK) fail_msg("f8cvt on %s: %s: %s", gh_ctx_name(&H, ctx), tk_status_name(s), tk_last_error(ctx));
  for (int i = 0; i < 5; i++)
    if (tk_memcpy_dtoh(ctx, outs[i], d[5 + i], out_bytes[i]) != TK_OK) fail_msg("dtoh: %s", tk_last_error(ctx));
  for (int i = 0; i < 10; i++) tk_free(ctx, d[i]);
}

/* Two floats alike: the same bits, or both NaN (a NaN's bits are each backend's own when
 * it is converted to a wider type). */
static bool same_float(double g, double r, uint32_t gb, uint32_t rb) { return gb == rb || (isnan(g) && isnan(r)); }

/* F8CVT on the device, compiled for the arch in *state (the PTX cvt on sm_90 and later, the
 * integer ops on sm_80 and sm_89, all run on this device), against the interpreter: every
 * fp8 byte exactly, the wider results exactly but for NaN bits. */
static void test_fp8_conversions(void **state) {
  const char *arch = *(const char *const *)*state;
  if (!H.cuda) skip();
  static f8_out g, r;
  f8_run(H.cuda, arch, &g);
  f8_run(H.interp, NULL, &r);
  for (int i = 0; i < 3328; i++)
    if (g.o4[i] != r.o4[i] || g.o5[i] != r.o5[i])
      fail_msg("%s: fp8 byte %d: cuda 0x%02x 0x%02x, interpreter 0x%02x 0x%02x", arch ? arch : "native",
               i, g.o4[i], g.o5[i], r.o4[i], r.o5[i]);
  for (int i = 0; i < 512; i++) {
    uint32_t gb, rb;
    memcpy(&gb, &g.r32[i], 4);
    memcpy(&rb, &r.r32[i], 4);
    bool ok = same_float(g.r32[i], r.r32[i], gb, rb) &&
              same_float(gh_half_to_float(g.r16[i]), gh_half_to_float(r.r16[i]), g.r16[i], r.r16[i]) &&
              g.ri[i] == r.ri[i];
    if (!ok)
      fail_msg("%s: byte 0x%02x of %s: cuda %g 0x%04x %d, interpreter %g 0x%04x %d", arch ? arch : "native",
               i % 256, i < 256 ? "f8e4m3" : "f8e5m2", g.r32[i], g.r16[i], g.ri[i], r.r32[i], r.r16[i], r.ri[i]);
  }
}

static const char *const FP8_ARCHS[] = {NULL, "sm_80", "sm_89", "sm_90"};
static const char *const FP8_NAMES[] = {"fp8_conversions_native", "fp8_conversions_sm_80",
                                        "fp8_conversions_sm_89", "fp8_conversions_sm_90"};
enum { NFP8 = 4 };

/* ---- host-only: every case through the GPU back end --------------------------------------- */

static void test_cases_compile_to_ptx(void **state) {
  (void)state;
  for (int i = 0; i < NCASES; i++) {
    const lc_case *c = &CASES[i];
    gh_defines d = defines_of(c);
    su_buf ptx = {0};
    if (!gh_emit_ptx(c->name, c->text, &d, &ptx))
      fail_msg("%s: the GPU back end rejected it (diagnostics above)", c->name);
    char entry[96];
    snprintf(entry, sizeof entry, ".entry %s(", c->kernel);
    if (!strstr(su_buf_str(&ptx), entry)) fail_msg("%s: no %s in the PTX", c->name, entry);
    su_buf_free(&ptx);
  }
}

int main(void) {
  gh_init(&H, "gpu_lang");
  const struct CMUnitTest host[] = {cmocka_unit_test(test_cases_compile_to_ptx)};
  struct CMUnitTest dev[NCASES + NFP8];
  for (int i = 0; i < NCASES; i++)
    dev[i] = (struct CMUnitTest){CASES[i].name, test_case, NULL, NULL, (void *)&CASES[i]};
  for (int i = 0; i < NFP8; i++)
    dev[NCASES + i] = (struct CMUnitTest){FP8_NAMES[i], test_fp8_conversions, NULL, NULL, (void *)&FP8_ARCHS[i]};
  return gh_run(&H, host, 1, dev, NCASES + NFP8);
}
