/*
 * gpu_shapes — reductions, scans and shape operations of 2-D and 3-D tiles on the CUDA
 * backend, checked against the interpreter (the reference semantics).
 *
 * Every reduction kind (sum, max, min, argmax, argmin, cumsum) runs over each axis of a
 * masked 2-D tile, and sum/max/min over the whole tile, in f32, f16 and i32; a few over
 * the middle axis of a 3-D tile; then trans, reshape, broadcast_to/expand_dims/[:, None],
 * a layout conversion (row sums used along the columns) and tiles whose shared-memory
 * scratch exceeds the 48 KB of static shared memory. Each case runs on ragged matrices
 * (M and N not multiples of the tile, several programs along each axis, rows `stride`
 * elements apart) and on two kinds of data: wide (few ties) and small integers (many ties,
 * so argmax/argmin must agree on which index wins: the first). Float data are multiples
 * of 2^-10 (f32) or 2^-8 (f16), so every sum here is exact whatever the order of the
 * additions; the comparison keeps a tolerance all the same (rel 1e-5 + abs 1e-5 for f32,
 * f16 rounding for f16); integers and indices compare exactly.
 *
 * The host test compiles every case through the GPU back end (no device needed), so a
 * construct the back end rejects shows up anywhere; with TK_GPU_SHAPES_PTX_DIR set it
 * also writes each case's PTX there (for ptxas). Without a device the device tests are
 * skipped and the program exits 77; with TK_GPU_TESTS_SELFCHECK=1 a second interpreter
 * stands in for the device, which checks this harness (not the GPU) anywhere.
 * The seed is printed; TK_TEST_SEED replays it.
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

#include "codegen/codegen.h"
#include "harness.h"

/* ---- kernel templates ------------------------------------------------------------------
 * $NAME placeholders are filled per case (expand() below): $K the kernel name, $T the
 * input and $U the output element type, $O the value of masked-off lanes (the identity
 * of the reduction), $OP the reduction, $AX its axis, $HEAD the common 2-D preamble. */

static const char HEAD_2D[] =
  "    let rm = program_id(0) * BM + arange(0, BM);\n"
  "    let rn = program_id(1) * BN + arange(0, BN);\n"
  "    let mask = (rm[:, None] < M) && (rn[None, :] < N);\n"
  "    let t = load(x + rm[:, None] * stride + rn[None, :], mask, $O);\n";

static const char REDUCE_2D[] =
  "kernel $K<BM: i32 = 32, BN: i32 = 64>(x: *$T, out: *$U, M: i32, N: i32, stride: i32) {\n"
  "$HEAD"
  "    $STORE\n"
  "}\n";

/* The result of each program: along its rows, columns, or one value. */
static const char STORE_AXIS1[] = "store(out + program_id(1) * M + rm, $OP(t, 1), rm < M);";
static const char STORE_AXIS0[] = "store(out + program_id(0) * N + rn, $OP(t, 0), rn < N);";
static const char STORE_ALL[] =
  "store(out + program_id(0) * num_programs(1) + program_id(1), $OP(t));";
static const char STORE_SCAN[] =
  "store(out + rm[:, None] * stride + rn[None, :], cumsum(t, $AX), mask);";

/* P planes of M x N, the planes M * stride elements apart; a [BP, BM, BN] tile per program
 * reduced (or scanned) over its middle axis. */
static const char REDUCE_3D[] =
  "@launch(warps = 8)\n"
  "kernel $K<BP: i32 = 2, BM: i32 = 16, BN: i32 = 32>(x: *$T, out: *$U, P: i32, M: i32,\n"
  "                                                  N: i32, stride: i32) {\n"
  "    let rp = program_id(0) * BP + arange(0, BP);\n"
  "    let rm = program_id(1) * BM + arange(0, BM);\n"
  "    let rn = program_id(2) * BN + arange(0, BN);\n"
  "    let at = (rp[:, None, None] * M + rm[None, :, None]) * stride + rn[None, None, :];\n"
  "    let mask = (rp[:, None, None] < P) && (rm[None, :, None] < M) && (rn[None, None, :] < N);\n"
  "    let t = load(x + at, mask, $O);\n"
  "    $STORE\n"
  "}\n";

static const char STORE_3D[] =
  "store(out + (program_id(1) * P + rp[:, None]) * N + rn[None, :], $OP(t, 1),\n"
  "          (rp[:, None] < P) && (rn[None, :] < N));";
static const char STORE_3D_SCAN[] = "store(out + at, cumsum(t, 1), mask);";

static const char TRANS_TK[] =
  "kernel $K<BM: i32 = 32, BN: i32 = 64>(x: *$T, out: *$T, M: i32, N: i32, stride: i32) {\n"
  "$HEAD"
  "    store(out + rn[:, None] * M + rm[None, :], trans(t), trans(mask));\n"
  "}\n";

/* Rows 2i and 2i+1 of the tile added (a reshape splitting the row axis), and the whole
 * tile flattened row-major into one block of out2 per program. */
static const char RESHAPE_TK[] =
  "kernel $K<BM: i32 = 32, BN: i32 = 64>(x: *$T, out: *$U, out2: *$T, M: i32, N: i32,\n"
  "                                     stride: i32) {\n"
  "$HEAD"
  "    let pairs = sum(reshape(t, BM / 2, 2, BN), 1);\n"
  "    let rh = program_id(0) * (BM / 2) + arange(0, BM / 2);\n"
  "    store(out + rh[:, None] * stride + rn[None, :], pairs,\n"
  "          (rh[:, None] * 2 < M) && (rn[None, :] < N));\n"
  "    let tile = program_id(0) * num_programs(1) + program_id(1);\n"
  "    store(out2 + tile * (BM * BN) + arange(0, BM * BN), reshape(t, BM * BN));\n"
  "}\n";

/* The first column and the first row of x, spread over the tile four ways. */
static const char BCAST_TK[] =
  "kernel $K<BM: i32 = 32, BN: i32 = 64>(x: *$T, out: *$T, M: i32, N: i32, stride: i32) {\n"
  "$HEAD"
  "    let col0 = load(x + rm * stride, rm < M, 0);\n"
  "    let row0 = load(x + rn, rn < N, 0);\n"
  "    let y = t * broadcast_to(col0[:, None], BM, BN) + expand_dims(row0, 0)\n"
  "          - expand_dims(col0, 1) + broadcast_to(row0, BM, BN);\n"
  "    store(out + rm[:, None] * stride + rn[None, :], y, mask);\n"
  "}\n";

/* Row sums used along the columns and column maxima along the rows: both results of a
 * reduction must change layout to meet the tile again. */
static const char CONVERT_TK[] =
  "kernel $K<BM: i32 = 64, BN: i32 = 64>(x: *$T, out: *$T, M: i32, N: i32, stride: i32) {\n"
  "    static_assert(BM == BN, \"the row sums are added along the columns\");\n"
  "$HEAD"
  "    let row_sums = sum(t, 1);\n"
  "    let col_max = max(t, 0);\n"
  "    store(out + rm[:, None] * stride + rn[None, :], t + row_sums[None, :] - col_max[:, None],\n"
  "          mask);\n"
  "}\n";

/* ---- the cases ------------------------------------------------------------------------ */

/* How many elements an output has and which of them the kernel writes (see out_elems). */
typedef enum {
  OUT_ROWS,   /* cdiv(N, BN) x M: one value per row per program column */
  OUT_COLS,   /* cdiv(M, BM) x N */
  OUT_PROGS,  /* one value per program */
  OUT_MAT,    /* like x: planes x M rows, `stride` apart; columns >= N untouched */
  OUT_HALF,   /* cdiv(M, 2) rows, `stride` apart; columns >= N untouched */
  OUT_TMAT,   /* N x M, x transposed */
  OUT_TILES,  /* BM x BN per program */
  OUT_3D      /* cdiv(M, BM) x P x N */
} out_kind;

enum { MAX_OUTS = 2, MAX_CASES = 80, SOURCE_CAP = 2048 };

typedef struct {
  char name[32];
  char source[SOURCE_CAP];
  tk_dtype in;
  int nout;
  tk_dtype out[MAX_OUTS];
  out_kind okind[MAX_OUTS];
  int bp, bm, bn;  /* tile sizes; bp > 0: a 3-D kernel over P planes */
  int warps;       /* 0: the kernel's own */
  bool big_smem;   /* its scratch needs dynamic shared memory (> 48 KB) */
} shape_case;

typedef struct {
  long p, m, n, pad;  /* P planes (3-D cases only) of M x N, rows N + pad apart */
} shape;

static const shape shapes[] = {{1, 1, 1, 0},   {3, 37, 50, 3},  {2, 100, 130, 0},
                               {4, 64, 128, 0}, {1, 5, 200, 1}, {3, 257, 129, 1}};

/* Wide data have few ties; small integers have many. */
typedef enum { DATA_WIDE, DATA_TIES } data_kind;

typedef struct {
  gh_harness h;
  shape_case cases[MAX_CASES];
  int ncases;
} globals;
static globals G; /* the one fixture the whole program shares: contexts are expensive */

static const char *dtype_name(tk_dtype t) {
  return t == TK_F32 ? "f32" : t == TK_F16 ? "f16" : t == TK_I32 ? "i32" : "?";
}

static bool is_float(tk_dtype t) { return t == TK_F32 || t == TK_F16; }

/* Appends tmpl to b with each $NAME replaced by its value in keys/vals (values may hold
 * placeholders themselves). An unknown name is a bug in the table. */
static void expand(su_buf *b, const char *tmpl, const char *const *keys,
                   const char *const *vals, int n) {
  for (const char *p = tmpl; *p;) {
    if (*p != '$') {
      su_buf_put(b, p++, 1);
      continue;
    }
    size_t len = 0;
    while (p[1 + len] >= 'A' && p[1 + len] <= 'Z') len++;
    int i = 0;
    while (i < n && (strlen(keys[i]) != len || strncmp(keys[i], p + 1, len) != 0)) i++;
    if (i == n) su_fatal("gpu_shapes: unknown placeholder in template: %.*s", (int)len + 1, p);
    expand(b, vals[i], keys, vals, n);
    p += 1 + len;
  }
}

/* Adds a case whose source is tmpl expanded for op, axis ("" when unused), types in/out
 * and the identity `other`. */
static shape_case *add_case(const char *name, const char *tmpl, const char *store,
                            const char *op, const char *axis, tk_dtype in, tk_dtype out,
                            const char *other) {
  SU_ASSERT(G.ncases < MAX_CASES);
  shape_case *c = &G.cases[G.ncases++];
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  const char *keys[] = {"K", "T", "U", "O", "OP", "AX", "HEAD", "STORE"};
  const char *vals[] = {name, dtype_name(in), dtype_name(out), other, op, axis, HEAD_2D,
                        store ? store : ""};
  su_buf b = {0};
  expand(&b, tmpl, keys, vals, 8);
  SU_ASSERT(b.len < SOURCE_CAP);
  memcpy(c->source, su_buf_str(&b), b.len + 1);
  su_buf_free(&b);
  c->in = in;
  c->nout = 1;
  c->out[0] = out;
  c->bm = 32;
  c->bn = 64;
  return c;
}

/* The value masked-off lanes take: the identity of op over type t. */
static const char *identity(const char *op, tk_dtype t) {
  bool up = strcmp(op, "max") == 0 || strcmp(op, "argmax") == 0;
  bool down = strcmp(op, "min") == 0 || strcmp(op, "argmin") == 0;
  if (up) return is_float(t) ? "-inf" : "-100000";
  if (down) return is_float(t) ? "inf" : "100000";
  return "0";
}

static void make_cases(void) {
  static const char *const ops[] = {"sum", "max", "min", "argmax", "argmin", "cumsum"};
  static const tk_dtype types[] = {TK_F32, TK_F16, TK_I32};
  static const int warps[] = {4, 1, 2, 8};
  char name[32];
  int nth = 0;
  for (int ti = 0; ti < 3; ti++) {
    tk_dtype t = types[ti];
    for (int oi = 0; oi < 6; oi++) {
      const char *op = ops[oi];
      bool arg = op[0] == 'a', scan = op[0] == 'c', sums = scan || op[0] == 's';
      /* sums of f16 (prefix sums too) accumulate in f32; arg reductions give i32 */
      tk_dtype u = arg ? TK_I32 : t == TK_F16 && sums ? TK_F32 : t;
      for (int ax = 0; ax < 3; ax++) { /* 2: the whole tile */
        if (ax == 2 && (arg || scan)) continue;
        const char *axname = ax == 0 ? "0" : ax == 1 ? "1" : "all";
        snprintf(name, sizeof name, "%s_ax%s_%s", op, axname, dtype_name(t));
        const char *store = scan ? STORE_SCAN : ax == 0 ? STORE_AXIS0
                          : ax == 1 ? STORE_AXIS1 : STORE_ALL;
        shape_case *c = add_case(name, REDUCE_2D, store, op, axname, t, u, identity(op, t));
        c->okind[0] = scan ? OUT_MAT : ax == 0 ? OUT_COLS : ax == 1 ? OUT_ROWS : OUT_PROGS;
        c->warps = warps[nth++ % 4]; /* vary the thread layouts over the cases */
      }
    }
  }
  static const struct { const char *op; tk_dtype t; } mid[] = {
    {"sum", TK_F32}, {"max", TK_F16}, {"min", TK_I32}, {"argmax", TK_F32},
    {"argmin", TK_I32}, {"cumsum", TK_F32}};
  for (int i = 0; i < 6; i++) {
    const char *op = mid[i].op;
    bool scan = op[0] == 'c';
    tk_dtype u = op[0] == 'a' ? TK_I32 : mid[i].t;
    snprintf(name, sizeof name, "%s_3d_mid_%s", op, dtype_name(mid[i].t));
    shape_case *c = add_case(name, REDUCE_3D, scan ? STORE_3D_SCAN : STORE_3D, op, "1",
                             mid[i].t, u, identity(op, mid[i].t));
    c->okind[0] = scan ? OUT_MAT : OUT_3D;
    c->bp = 2;
    c->bm = 16;
    c->bn = 32;
  }
  add_case("trans_f32", TRANS_TK, NULL, "", "", TK_F32, TK_F32, "0")->okind[0] = OUT_TMAT;
  add_case("trans_f16", TRANS_TK, NULL, "", "", TK_F16, TK_F16, "0")->okind[0] = OUT_TMAT;
  static const tk_dtype reshaped[] = {TK_F32, TK_I32};
  for (int i = 0; i < 2; i++) {
    snprintf(name, sizeof name, "reshape_%s", dtype_name(reshaped[i]));
    shape_case *c = add_case(name, RESHAPE_TK, NULL, "", "", reshaped[i], reshaped[i], "0");
    c->nout = 2;
    c->okind[0] = OUT_HALF;
    c->out[1] = reshaped[i];
    c->okind[1] = OUT_TILES;
  }
  add_case("broadcast_f32", BCAST_TK, NULL, "", "", TK_F32, TK_F32, "0")->okind[0] = OUT_MAT;
  add_case("broadcast_f16", BCAST_TK, NULL, "", "", TK_F16, TK_F16, "0")->okind[0] = OUT_MAT;
  static const tk_dtype converted[] = {TK_F32, TK_I32};
  for (int i = 0; i < 2; i++) {
    snprintf(name, sizeof name, "convert_%s", dtype_name(converted[i]));
    shape_case *c = add_case(name, CONVERT_TK, NULL, "", "", converted[i], converted[i], "0");
    c->okind[0] = OUT_MAT;
    c->bm = c->bn = 64;
  }
  /* a 128 x 128 f32 or 128 x 256 f16 tile is 64 KB: trans exchanges it (and its mask)
   * through shared memory */
  static const struct { const char *name; tk_dtype t; int bn; } big[] = {
    {"trans_big_f32", TK_F32, 128}, {"trans_big_f16", TK_F16, 256}};
  for (int i = 0; i < 2; i++) {
    shape_case *c = add_case(big[i].name, TRANS_TK, NULL, "", "", big[i].t, big[i].t, "0");
    c->okind[0] = OUT_TMAT;
    c->bm = 128;
    c->bn = big[i].bn;
    c->warps = 8;
    c->big_smem = true;
  }
  /* the conversions of convert_f32 on a larger tile, with more warps */
  shape_case *c = add_case("convert_128_f32", CONVERT_TK, NULL, "", "", TK_F32, TK_F32, "0");
  c->okind[0] = OUT_MAT;
  c->bm = c->bn = 128;
  c->warps = 8;
}

/* ---- data and comparison -------------------------------------------------------------- */

/* One random element of type t at p: wide values are multiples of 2^-10 (f32) or 2^-8
 * (f16) in ±[1/8, 4), or integers in [-1000, 1000]; tied values are integers in [-4, 4]. */
static void random_elem(tk_dtype t, data_kind k, void *p) {
  uint64_t r = gh_rng_next(&G.h);
  int sign = (r & 1) ? -1 : 1;
  double v;
  if (k == DATA_TIES) v = (double)((int)((r >> 8) % 9) - 4);
  else if (t == TK_I32) v = (double)((int)((r >> 8) % 2001) - 1000);
  else if (t == TK_F32) v = sign * (double)(128 + (r >> 8) % 3968) / 1024;
  else v = sign * (double)(32 + (r >> 8) % 992) / 256;
  if (t == TK_F32) {
    float f = (float)v;
    memcpy(p, &f, 4);
  } else if (t == TK_F16) {
    uint16_t h = gh_float_to_half((float)v);
    memcpy(p, &h, 2);
  } else {
    int32_t i = (int32_t)v;
    memcpy(p, &i, 4);
  }
}

/* Unwritten outputs keep this: NaN for floats (no result here is NaN), an impossible
 * value for integers. */
static int poison_byte(tk_dtype t) { return is_float(t) ? 0xff : 0xcd; }

/* Compares n elements; on the first mismatch fails naming the buffer and index. */
static void compare(const char *what, tk_dtype t, const void *gpu, const void *ref, long n) {
  size_t sz = gh_dtype_size(t);
  double rtol = t == TK_F16 ? 2e-3 : 1e-5, atol = t == TK_F16 ? 1e-3 : 1e-5;
  for (long i = 0; i < n; i++) {
    const char *g = (const char *)gpu + i * sz, *r = (const char *)ref + i * sz;
    if (memcmp(g, r, sz) == 0) continue;
    if (is_float(t)) {
      double a = gh_elem_value(t, g), b = gh_elem_value(t, r);
      if (!isnan(a) && !isnan(b) && fabs(a - b) <= atol + rtol * fabs(b)) continue;
      fail_msg("%s[%ld]: cuda %.9g, interpreter %.9g%s (TK_TEST_SEED=%llu)", what, i, a, b,
               isnan(a) || isnan(b) ? " (NaN: not written)" : "",
               (unsigned long long)G.h.first_seed);
    }
    int32_t a, b;
    memcpy(&a, g, 4);
    memcpy(&b, r, 4);
    fail_msg("%s[%ld]: cuda %d, interpreter %d (TK_TEST_SEED=%llu)", what, i, a, b,
             (unsigned long long)G.h.first_seed);
  }
}

/* ---- running one case ----------------------------------------------------------------- */

static long out_elems(const shape_case *c, out_kind k, const shape *sh) {
  long gm = gh_cdiv(sh->m, c->bm), gn = gh_cdiv(sh->n, c->bn), stride = sh->n + sh->pad;
  long planes = c->bp ? sh->p : 1;
  switch (k) {
  case OUT_ROWS: return gn * sh->m;
  case OUT_COLS: return gm * sh->n;
  case OUT_PROGS: return gm * gn;
  case OUT_MAT: return planes * sh->m * stride;
  case OUT_HALF: return gh_cdiv(sh->m, 2) * stride;
  case OUT_TMAT: return sh->n * sh->m;
  case OUT_TILES: return gm * gn * c->bm * c->bn;
  case OUT_3D: return gm * sh->p * sh->n;
  }
  SU_UNREACHABLE();
}

/* Whether the kernel writes element i of an output of kind k (the padding between rows
 * it must leave alone). */
static bool written(out_kind k, const shape *sh, long i) {
  return (k != OUT_MAT && k != OUT_HALF) || i % (sh->n + sh->pad) < sh->n;
}

/* The defines a case compiles with: its tile sizes, and warps when it sets them. */
static gh_defines defines_of(const shape_case *c) {
  static const char *const names[] = {"BM", "BN", "BP", "warps"};
  const int values[] = {c->bm, c->bn, c->bp, c->warps};
  gh_defines d = {0};
  for (int i = 0; i < 4; i++)
    if (values[i] != 0) /* no BP in a 2-D kernel; warps 0: the kernel's own */
      gh_define_int(&d, names[i], values[i]);
  return d;
}

static tk_kernel *compile(tk_context *ctx, const shape_case *c) {
  gh_defines d = defines_of(c);
  return gh_compile(&G.h, ctx, &(gh_source){c->name, c->source, NULL, c->name}, &d);
}

/* Runs k (of ctx) on x and the outputs (copied in, run, copied back). */
static void run_on(tk_context *ctx, tk_kernel *k, const shape_case *c, const shape *sh,
                   const void *x, void **outs) {
  size_t bytes[1 + MAX_OUTS];
  const void *host[1 + MAX_OUTS] = {x};
  tk_devptr dev[1 + MAX_OUTS] = {0};
  tk_arg args[1 + MAX_OUTS + 4];
  long planes = c->bp ? sh->p : 1, stride = sh->n + sh->pad;
  bytes[0] = (size_t)(planes * sh->m * stride) * gh_dtype_size(c->in);
  for (int i = 0; i < c->nout; i++) {
    bytes[1 + i] = (size_t)out_elems(c, c->okind[i], sh) * gh_dtype_size(c->out[i]);
    host[1 + i] = outs[i];
  }
  int nargs = 0;
  for (int i = 0; i <= c->nout; i++) {
    assert_int_equal(tk_malloc(ctx, &dev[i], bytes[i]), TK_OK);
    assert_int_equal(tk_memcpy_htod(ctx, dev[i], host[i], bytes[i]), TK_OK);
    args[nargs++] = tk_arg_ptr(dev[i]);
  }
  if (c->bp) args[nargs++] = tk_arg_i32((int32_t)sh->p);
  args[nargs++] = tk_arg_i32((int32_t)sh->m);
  args[nargs++] = tk_arg_i32((int32_t)sh->n);
  args[nargs++] = tk_arg_i32((int32_t)stride);
  unsigned gm = (unsigned)gh_cdiv(sh->m, c->bm), gn = (unsigned)gh_cdiv(sh->n, c->bn);
  tk_grid grid =
    c->bp ? (tk_grid){(unsigned)gh_cdiv(sh->p, c->bp), gm, gn} : (tk_grid){gm, gn, 1};
  tk_status s = tk_launch(k, grid, NULL, args, nargs);
  if (s == TK_OK) s = tk_synchronize(ctx);
  if (s != TK_OK)
    fail_msg("%s (%ldx%ldx%ld) on %s: %s: %s", c->name, sh->p, sh->m, sh->n,
             gh_ctx_name(&G.h, ctx), tk_status_name(s), tk_last_error(ctx));
  for (int i = 0; i < c->nout; i++)
    assert_int_equal(tk_memcpy_dtoh(ctx, outs[i], dev[1 + i], bytes[1 + i]), TK_OK);
  for (int i = 0; i <= c->nout; i++) assert_int_equal(tk_free(ctx, dev[i]), TK_OK);
}

static void run_shape(const shape_case *c, tk_kernel *kc, tk_kernel *ki, const shape *sh,
                      data_kind data) {
  long planes = c->bp ? sh->p : 1, nx = planes * sh->m * (sh->n + sh->pad);
  char *x = malloc((size_t)nx * gh_dtype_size(c->in));
  for (long i = 0; i < nx; i++) random_elem(c->in, data, x + i * (long)gh_dtype_size(c->in));
  void *ref[MAX_OUTS], *gpu[MAX_OUTS];
  for (int i = 0; i < c->nout; i++) {
    size_t bytes = (size_t)out_elems(c, c->okind[i], sh) * gh_dtype_size(c->out[i]);
    ref[i] = malloc(bytes);
    gpu[i] = malloc(bytes);
    memset(ref[i], poison_byte(c->out[i]), bytes);
    memset(gpu[i], poison_byte(c->out[i]), bytes);
  }
  run_on(G.h.cuda, kc, c, sh, x, gpu);
  run_on(G.h.interp, ki, c, sh, x, ref);
  for (int i = 0; i < c->nout; i++) {
    long n = out_elems(c, c->okind[i], sh);
    size_t sz = gh_dtype_size(c->out[i]);
    unsigned char poison[4];
    memset(poison, poison_byte(c->out[i]), sizeof poison);
    /* The harness's own check: the reference wrote every element the layout says it
     * writes, so a comparison can never pass on two untouched buffers. */
    for (long j = 0; j < n; j++)
      if (written(c->okind[i], sh, j) && memcmp((char *)ref[i] + j * (long)sz, poison, sz) == 0)
        fail_msg("%s: the interpreter left output %d [%ld] unwritten (%ldx%ldx%ld)", c->name,
                 i, j, sh->p, sh->m, sh->n);
    char what[96];
    snprintf(what, sizeof what, "%s.%s (%ldx%ldx%ld/%ld, %s data)", c->name,
             tk_kernel_param_name(ki, 1 + i), sh->p, sh->m, sh->n, sh->n + sh->pad,
             data == DATA_TIES ? "tied" : "wide");
    compare(what, c->out[i], gpu[i], ref[i], n);
    free(ref[i]);
    free(gpu[i]);
  }
  free(x);
}

static void test_case(void **state) {
  const shape_case *c = *state;
  if (!G.h.cuda) skip();
  tk_kernel *kc = compile(G.h.cuda, c), *ki = compile(G.h.interp, c);
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    run_shape(c, kc, ki, &shapes[i], DATA_WIDE);
    run_shape(c, kc, ki, &shapes[i], DATA_TIES);
  }
}

/* ---- host-only: every case through the GPU back end ------------------------------------ */

/* Writes dir/NAME.ptx and dir/NAME.tk, the source headed by the tkc command that
 * compiles it as the test does (to reproduce a failure outside the test). */
static void dump(const char *dir, const shape_case *c, const char *ptx) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.ptx", dir, c->name);
  FILE *f = fopen(path, "w");
  if (!f) fail_msg("cannot write %s", path);
  fputs(ptx, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/%s.tk", dir, c->name);
  f = fopen(path, "w");
  if (!f) fail_msg("cannot write %s", path);
  gh_defines d = defines_of(c);
  fprintf(f, "// tkc %s.tk --emit=ptx", c->name);
  for (int i = 0; i < d.n; i++) fprintf(f, " -D %s=%s", d.name[i], d.value[i]);
  fprintf(f, "\n%s", c->source);
  fclose(f);
}

static void test_all_compile_to_ptx(void **state) {
  (void)state;
  const char *dir = getenv("TK_GPU_SHAPES_PTX_DIR");
  for (int i = 0; i < G.ncases; i++) {
    const shape_case *c = &G.cases[i];
    gh_defines d = defines_of(c);
    su_buf ptx = {0};
    if (!gh_emit_ptx(c->name, c->source, &d, &ptx))
      fail_msg("%s: the GPU back end rejected it (diagnostics above)", c->name);
    int smem = -1;
    assert_true(cg_ptx_shared_bytes(su_buf_str(&ptx), c->name, &smem));
    /* the big cases exist to exercise dynamic shared memory; the others stay static */
    if (c->big_smem != (smem > 49152))
      fail_msg("%s: %d bytes of dynamic shared memory, expected %s 48 KB", c->name, smem,
               c->big_smem ? "above" : "none or at most");
    if (dir) dump(dir, c, su_buf_str(&ptx));
    su_buf_free(&ptx);
  }
}

int main(void) {
  gh_init(&G.h, "gpu_shapes");
  make_cases();

  const struct CMUnitTest host[] = {cmocka_unit_test(test_all_compile_to_ptx)};
  struct CMUnitTest dev[MAX_CASES];
  for (int i = 0; i < G.ncases; i++)
    dev[i] = (struct CMUnitTest){G.cases[i].name, test_case, NULL, NULL, &G.cases[i]};
  return gh_run(&G.h, host, 1, dev, (size_t)G.ncases);
}
