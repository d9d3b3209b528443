/* precision_kernels.h — the kernels of the precision tests (docs/language.md, "Precision"),
 * shared by the interpreter test (tests/interp/test_precision.c, against C computations of
 * what the reference says) and the GPU test (tests/gpu/gpu_precision.c, against the
 * interpreter within the stated bounds). */
#ifndef TK_TESTS_PRECISION_KERNELS_H
#define TK_TESTS_PRECISION_KERNELS_H

/* c = a @ b over a masked K loop (the matmul sample's), the accumulator carried, with the
 * input precision PREC appended to the dot call ("" for the compile option's). */
#define PK_MATMUL(NAME, PREC)                                                                 \
  "kernel " NAME "<BM: i32 = 32, BN: i32 = 32, BK: i32 = 32>(a: *f32, b: *f32, c: *f32,\n"    \
  "                                              M: i32, N: i32, K: i32) {\n"                \
  "    let rm = program_id(0) * BM + arange(0, BM);\n"                                       \
  "    let rn = program_id(1) * BN + arange(0, BN);\n"                                       \
  "    let rk = arange(0, BK);\n"                                                            \
  "    var acc = zeros<f32>(BM, BN);\n"                                                      \
  "    for k in range(0, K, BK) {\n"                                                         \
  "        let kk = k + rk;\n"                                                               \
  "        let ta = load(a + rm[:, None] * K + kk[None, :],\n"                               \
  "                      (rm[:, None] < M) && (kk[None, :] < K), 0.0);\n"                    \
  "        let tb = load(b + kk[:, None] * N + rn[None, :],\n"                               \
  "                      (kk[:, None] < K) && (rn[None, :] < N), 0.0);\n"                    \
  "        acc = dot(ta, tb, acc" PREC ");\n"                                               \
  "    }\n"                                                                                  \
  "    store(c + rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) && (rn[None, :] < N));\n" \
  "}\n"

static const char PK_DOT_DEFAULT[] = PK_MATMUL("mm", "");
static const char PK_DOT_IEEE[] = PK_MATMUL("mm", ", input_precision=\"ieee\"");
static const char PK_DOT_TF32[] = PK_MATMUL("mm", ", input_precision=\"tf32\"");
static const char PK_DOT_TF32X3[] = PK_MATMUL("mm", ", input_precision=\"tf32x3\"");

/* y0 = a * b + c, y1 = a * b - c, y2 = c - a * b: what -ffp-contract=fast contracts. */
static const char PK_CONTRACT[] =
    "kernel fmas<B: i32 = 128>(a: *f32, b: *f32, c: *f32, y: *f32, n: i32) {\n"
    "    let o = program_id(0) * B + arange(0, B);\n"
    "    let m = o < n;\n"
    "    let x = load(a + o, m, 0.0);\n"
    "    let w = load(b + o, m, 0.0);\n"
    "    let z = load(c + o, m, 0.0);\n"
    "    store(y + o, x * w + z, m);\n"
    "    store(y + n + o, x * w - z, m);\n"
    "    store(y + 2 * n + o, z - x * w, m);\n"
    "}\n";

/* sin, cos, exp, exp2 of x, accurate per call (y0..y3) and as the option says (y4..y7). */
static const char PK_MATH[] =
    "kernel trig<B: i32 = 128>(x: *f32, y: *f32, n: i32) {\n"
    "    let o = program_id(0) * B + arange(0, B);\n"
    "    let m = o < n;\n"
    "    let v = load(x + o, m, 0.0);\n"
    "    store(y + o, sin(v, accurate=true), m);\n"
    "    store(y + n + o, cos(v, accurate=true), m);\n"
    "    store(y + 2 * n + o, exp(v * 0.0001, accurate=true), m);\n"
    "    store(y + 3 * n + o, exp2(v * 0.0001, accurate=true), m);\n"
    "    store(y + 4 * n + o, sin(v), m);\n"
    "    store(y + 5 * n + o, cos(v), m);\n"
    "    store(y + 6 * n + o, exp(v * 0.0001), m);\n"
    "    store(y + 7 * n + o, exp2(v * 0.0001), m);\n"
    "}\n";

#endif
