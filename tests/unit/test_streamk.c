/* Unit tests of stream-K on the online softmax (passes/streamk.c, SCALED and MAX values)
 * on the interpreter: an attention kernel compiled with persist alone and with persist
 * then streamk (for sm_90a, whose target the passes need) runs over the same random
 * inputs, the persistent ones as the GPU launches them (TK_INTERPRET_SMS programs looping
 * over the grid), and O and the log-sum-exp must agree to f32 rounding: a tile cut in two
 * pieces is the two pieces' (m, l, O) merged with e^(m - M) factors, exact in real
 * arithmetic (where P is rounded to f16, the pieces round it against other maxima: within
 * f16's unit roundoff). Tile counts and SM counts are chosen so that the last rounds split (and, for
 * one key block, do not), the keys ragged, with and without the slack on the running max,
 * with rowsum's form of l (the sum of P as rounded to f16), each launched twice on one
 * memory: the second finds the tickets reset by the first. A loop whose rescaled sum adds
 * a term that is not e^(-m') times the loop's inputs, or mixes rows, is left alone. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/interp.h"
#include "passes/passes.h"
#include "sema/sema.h"
#include "tests/unit/pass_check.h"

static const char *const PERSIST = "canonicalize,licm,canonicalize,persist";
static const char *const STREAMK = "canonicalize,licm,canonicalize,persist,streamk";

/* one head per program_id(1), 16 query rows a program, keys in blocks of 16, D = 16; SL:
 * the slack on the running max (0: none); F16: l sums P as rounded to f16, as the sample */
static const char ATTN[] =
    "@launch(warps = 4, stages = 2, streamk = true)\n"
    "kernel attn<SL: i32 = 0, F16: bool = false>(q: *f32, k: *f32, v: *f32, o: *f32, lse: *f32, S: i32, scale: f32) {\n"
    "    let base = (program_id(1) as i64) * (S as i64) * 16;\n"
    "    let rm = program_id(0) * 16 + arange(0, 16);\n"
    "    let rd = arange(0, 16);\n"
    "    let tq = load(q + base + (rm as i64)[:, None] * 16 + rd[None, :], rm[:, None] < S, 0.0);\n"
    "    var m = full(-inf, 16);\n"
    "    var l = zeros<f32>(16);\n"
    "    var acc = zeros<f32>(16, 16);\n"
    "    for start in range(0, S, 16) {\n"
    "        let rn = start + arange(0, 16);\n"
    "        let tk = load(k + base + (rn as i64)[:, None] * 16 + rd[None, :], rn[:, None] < S, 0.0);\n"
    "        let s = where(rn[None, :] < S, dot(tq, trans(tk), input_precision = \"ieee\") * scale, -inf);\n"
    "        let mx = max(s, 1);\n"
    "        var m_new = maximum(m, mx);\n"
    "        if SL > 0 {\n"
    "            m_new = where(mx > m + (SL as f32), mx, m);\n"
    "        }\n"
    "        var p = exp(s - m_new[:, None]);\n"
    "        if F16 {\n"
    "            p = (p as f16) as f32;\n"
    "        }\n"
    "        let alpha = exp(m - m_new);\n"
    "        l = l * alpha + sum(p, 1);\n"
    "        let tv = load(v + base + (rn as i64)[:, None] * 16 + rd[None, :], rn[:, None] < S, 0.0);\n"
    "        acc = dot(p, tv, acc * alpha[:, None], input_precision = \"ieee\");\n"
    "        m = m_new;\n"
    "    }\n"
    "    store(o + base + (rm as i64)[:, None] * 16 + rd[None, :], acc / l[:, None], rm[:, None] < S);\n"
    "    store(lse + (program_id(1) as i64) * (S as i64) + (rm as i64), m + log(l), rm < S);\n"
    "}\n";

static void count_workspace(ir_op *op, void *arg) { *(int *)arg += op->opc == IR_WORKSPACE; }

static int count_workspace_ops(const ir_module *m) {
  int n = 0;
  ir_walk(m->funcs[0]->body, count_workspace, &n);
  return n;
}

/* Runs attn for S keys and H heads twice on one memory, O and the LSE poisoned before
 * each launch; returns O then the LSE (H*S*16 + H*S floats). */
static float *run(su_arena *a, const ir_module *m, int S, int H) {
  ip_memory *mem = ip_memory_new();
  su_buf err = {0};
  size_t nx = (size_t)H * S * 16, nl = (size_t)H * S;
  tk_devptr d[5];
  float *h[5];
  for (int i = 0; i < 5; i++) {
    assert_true(ip_mem_alloc(mem, (i == 4 ? nl : nx) * 4 + 4, &d[i], &err));
    h[i] = ip_mem_host(mem, d[i], (i == 4 ? nl : nx) * 4, &err);
  }
  uint64_t st = 99u + (uint64_t)S * 7 + (uint64_t)H;
  for (int i = 0; i < 3; i++)
    for (size_t j = 0; j < nx; j++) h[i][j] = (float)(pk_next_random(&st) >> 29) / (float)(1u << 24) * 4.0f - 2.0f;
  tk_arg args[7] = {tk_arg_ptr(d[0]), tk_arg_ptr(d[1]), tk_arg_ptr(d[2]), tk_arg_ptr(d[3]),
                    tk_arg_ptr(d[4]), tk_arg_i32(S), tk_arg_f32(0.25f)};
  tk_grid grid = {(uint32_t)((S + 15) / 16), (uint32_t)H, 1};
  for (int l = 0; l < 2; l++) {
    memset(ip_mem_host(mem, d[3], nx * 4, &err), 0xff, nx * 4);
    memset(ip_mem_host(mem, d[4], nl * 4, &err), 0xff, nl * 4);
    if (ip_launch(mem, m, m->funcs[0], grid, args, 7, NULL, &err) != IP_OK) fail_msg("launch failed: %s", su_buf_str(&err));
  }
  float *out = SU_NEW_ARRAY(a, float, nx + nl);
  memcpy(out, ip_mem_host(mem, d[3], nx * 4, &err), nx * 4);
  memcpy(out + nx, ip_mem_host(mem, d[4], nl * 4, &err), nl * 4);
  su_buf_free(&err);
  ip_memory_free(mem);
  return out;
}

static void check(const sema_define *defs, int ndefs, float tol) {
  su_arena *a = su_arena_new();
  ir_module *plain = pk_compile_arch(a, ATTN, defs, ndefs, PERSIST, IR_KEEP_AUTO, "sm_90a");
  ir_module *sk = pk_compile_arch(a, ATTN, defs, ndefs, STREAMK, IR_KEEP_AUTO, "sm_90a");
  assert_true(plain->funcs[0]->persistent);
  assert_int_equal(count_workspace_ops(plain), 0);
  assert_int_equal(count_workspace_ops(sk), 2);
  /* {S, H}: 7 key blocks x 7 tiles of 3 heads, 3 x 5, 1 block (no split), 16 x 2 */
  static const int shapes[][2] = {{100, 3}, {40, 5}, {16, 4}, {256, 2}};
  static const char *const sms[] = {"1", "2", "4", "5", "8", "13", "132"};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    int S = shapes[i][0], H = shapes[i][1];
    size_t n = (size_t)H * S * 17;
    setenv("TK_INTERPRET_SMS", "3", 1);
    float *want = run(a, plain, S, H);
    for (size_t j = 0; j < sizeof sms / sizeof *sms; j++) {
      setenv("TK_INTERPRET_SMS", sms[j], 1);
      float *got = run(a, sk, S, H);
      for (size_t e = 0; e < n; e++)
        if (!(fabsf(got[e] - want[e]) <= tol + tol * fabsf(want[e])))
          fail_msg("S %d, H %d on %s SMs: element %zu is %.9g, persist alone wrote %.9g", S, H, sms[j], e,
                   (double)got[e], (double)want[e]);
    }
  }
  unsetenv("TK_INTERPRET_SMS");
  su_arena_free(a);
}

static void online_softmax(void **state) {
  (void)state;
  check(NULL, 0, 1e-5f);
}

static void with_slack(void **state) {
  (void)state;
  static const sema_define d[] = {{"SL", "3"}};
  check(d, 1, 1e-5f);
}

static void rounded_weights(void **state) {
  (void)state;
  static const sema_define d[] = {{"F16", "true"}};
  /* P rounded to f16 against another running max: T's unit roundoff on each weight */
  check(d, 1, 2e-3f);
}

/* Loops whose merge would be wrong, each a one-edit variant of ATTN: l * alpha + 1.0 is
 * not e^(-m') times anything; P's column sums (sum(p, 0)) and P transposed into P V mix
 * rows, whose factors e^(-m'_i) differ (BM = BN makes the types agree). */
static void not_homogeneous(void **state) {
  (void)state;
  static const char *const edits[][2] = {
      {"sum(p, 1)", "1.0"}, {"sum(p, 1)", "sum(p, 0)"}, {"dot(p, tv,", "dot(trans(p), tv,"}};
  for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
    const char *at = strstr(ATTN, edits[i][0]);
    assert_non_null(at);
    char src[sizeof ATTN + 32];
    snprintf(src, sizeof src, "%.*s%s%s", (int)(at - ATTN), ATTN, edits[i][1], at + strlen(edits[i][0]));
    su_arena *a = su_arena_new();
    if (count_workspace_ops(pk_compile_arch(a, src, NULL, 0, STREAMK, IR_KEEP_AUTO, "sm_90a")))
      fail_msg("split with \"%s\" for \"%s\"", edits[i][1], edits[i][0]);
    su_arena_free(a);
  }
}

/* A second product summed from zeros (SUM) that reads the running max: a piece's sum
 * depends on the max its own steps found, so the pieces' sums do not add up. */
static void sum_reads_carried(void **state) {
  (void)state;
  char src[sizeof ATTN + 256];
  const char *decl = strstr(ATTN, "    for start"), *upd = strstr(ATTN, "        m = m_new;"), *out = strstr(ATTN, "acc / l[:, None]");
  assert_true(decl && upd && out && decl < upd && upd < out);
  snprintf(src, sizeof src, "%.*s    var acc2 = zeros<f32>(16, 16);\n%.*s"
           "        acc2 = dot(s - m[:, None], tv, acc2, input_precision = \"ieee\");\n%.*sacc2 + %s",
           (int)(decl - ATTN), ATTN, (int)(upd - decl), decl, (int)(out - upd), upd, out);
  su_arena *a = su_arena_new();
  ir_module *m = pk_compile_arch(a, src, NULL, 0, STREAMK, IR_KEEP_AUTO, "sm_90a");
  assert_true(m->funcs[0]->persistent);
  assert_int_equal(count_workspace_ops(m), 0);
  su_arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(online_softmax), cmocka_unit_test(with_slack),
                                     cmocka_unit_test(rounded_weights), cmocka_unit_test(not_homogeneous),
                                     cmocka_unit_test(sum_reads_carried)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
