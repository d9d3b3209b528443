/* Unit tests of the persist pass on the interpreter: a dot kernel compiled with and without
 * persist (for sm_90a, whose target the pass needs) runs over the same random inputs, the
 * persistent one as the GPU launches it (min(programs, SMs) programs looping over the
 * grid: TK_INTERPRET_SMS sets the SM count), and both must write the same memory bit for
 * bit: every tile exactly once, with its own program ids, whatever the SM count (one, a
 * few that do not divide the tile count, more than the tiles), ragged edges in M, N and K,
 * grids of fewer and more rows than persist's GROUP of 8, and a batch dim on axis 2.
 * Stream-K (persist then streamk) the same way, on small integers (whose sums are exact in
 * any order, as the pieces' reassociated K sums are not for other values), launched twice
 * on one memory: the second launch finds the tickets reset by the first. */
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

static const char *const WITH = "canonicalize,licm,canonicalize,persist";
static const char *const WITHOUT = "canonicalize,licm,canonicalize";
static const char *const STREAMK = "canonicalize,licm,canonicalize,persist,streamk";
/* streamk = true forces stream-K on MM (its f32 operands, of unknown alignment, are no
 * TMA copies: the default would leave it plain persist) */
static const sema_define FORCE_SK[] = {{"streamk", "true"}};
static int nforce; /* 1: compile with FORCE_SK */

/* c[z] = a[z] (M x K) @ b[z] (K x N), 16 x 16 tiles, program_id(2) the batch */
static const char MM[] =
    "@launch(warps = 4, stages = 2)\n"
    "kernel mm(a: *f32, b: *f32, c: *f32, M: i32, N: i32, K: i32) {\n"
    "    let z = program_id(2) as i64;\n"
    "    let rm = program_id(0) * 16 + arange(0, 16);\n"
    "    let rn = program_id(1) * 16 + arange(0, 16);\n"
    "    let m = M as i64;\n"
    "    let n = N as i64;\n"
    "    let kd = K as i64;\n"
    "    var acc = zeros<f32>(16, 16);\n"
    "    for k in range(0, K, 16) {\n"
    "        let kk = k + arange(0, 16);\n"
    "        let ta = load(a + z * m * kd + (rm as i64)[:, None] * kd + kk[None, :], (rm[:, None] < M) && (kk[None, :] < K), 0.0);\n"
    "        let tb = load(b + z * kd * n + (kk as i64)[:, None] * n + rn[None, :], (kk[:, None] < K) && (rn[None, :] < N), 0.0);\n"
    "        acc = dot(ta, tb, acc, input_precision = \"ieee\");\n"
    "    }\n"
    "    store(c + z * m * n + (rm as i64)[:, None] * n + rn[None, :], acc, (rm[:, None] < M) && (rn[None, :] < N));\n"
    "}\n";

static bool persistent(const ir_module *m) { return m->funcs[0]->persistent; }

static bool integers; /* inputs small integers instead of fractions */
static int launches = 1; /* on one memory; c is poisoned before each */

/* Runs mm for M x N x K with `batch` batches, a and b random, c poisoned; returns c. */
static float *run(su_arena *a, const ir_module *m, int M, int N, int K, int batch) {
  ip_memory *mem = ip_memory_new();
  su_buf err = {0};
  size_t na = (size_t)batch * M * K, nb = (size_t)batch * K * N, nc = (size_t)batch * M * N;
  tk_devptr da, db, dc;
  assert_true(ip_mem_alloc(mem, na * 4 + 4, &da, &err));
  assert_true(ip_mem_alloc(mem, nb * 4 + 4, &db, &err));
  assert_true(ip_mem_alloc(mem, nc * 4 + 4, &dc, &err));
  float *ha = ip_mem_host(mem, da, na * 4, &err), *hb = ip_mem_host(mem, db, nb * 4, &err);
  float *hc = ip_mem_host(mem, dc, nc * 4, &err);
  uint32_t s = 2024u + (uint32_t)(M * 131 + N * 7 + K);
  for (size_t i = 0; i < na; i++) {
    s = s * 1664525u + 1013904223u;
    ha[i] = integers ? (float)((int)((s >> 8) % 9) - 4) : (float)(s >> 8) / (float)(1u << 24) - 0.5f;
  }
  for (size_t i = 0; i < nb; i++) {
    s = s * 1664525u + 1013904223u;
    hb[i] = integers ? (float)((int)((s >> 8) % 9) - 4) : (float)(s >> 8) / (float)(1u << 24) - 0.5f;
  }
  tk_arg args[6] = {tk_arg_ptr(da), tk_arg_ptr(db), tk_arg_ptr(dc), tk_arg_i32(M), tk_arg_i32(N), tk_arg_i32(K)};
  tk_grid grid = {(uint32_t)((M + 15) / 16), (uint32_t)((N + 15) / 16), (uint32_t)batch};
  for (int l = 0; l < launches; l++) {
    memset(hc, 0xff, nc * 4); /* NaN: a tile no program wrote stays NaN and fails the compare */
    if (ip_launch(mem, m, m->funcs[0], grid, args, 6, NULL, &err) != IP_OK) fail_msg("launch failed: %s", su_buf_str(&err));
    hc = ip_mem_host(mem, dc, nc * 4, &err);
  }
  float *out = SU_NEW_ARRAY(a, float, nc ? nc : 1);
  memcpy(out, ip_mem_host(mem, dc, nc * 4, &err), nc * 4);
  su_buf_free(&err);
  ip_memory_free(mem);
  return out;
}

typedef struct {
  int M, N, K, batch;
} shape;

static void check_with(const char *passes, const shape *sh, int nsh, const char *const *sms, int nsms) {
  su_arena *a = su_arena_new();
  ir_module *with = pk_compile_arch(a, MM, FORCE_SK, nforce, passes, IR_KEEP_AUTO, "sm_90a");
  ir_module *without = pk_compile_arch(a, MM, NULL, 0, WITHOUT, IR_KEEP_AUTO, "sm_90a");
  assert_true(persistent(with));
  assert_false(persistent(without));
  for (int i = 0; i < nsh; i++) {
    float *want = run(a, without, sh[i].M, sh[i].N, sh[i].K, sh[i].batch);
    size_t n = (size_t)sh[i].batch * sh[i].M * sh[i].N;
    for (int j = 0; j < nsms; j++) {
      setenv("TK_INTERPRET_SMS", sms[j], 1);
      float *got = run(a, with, sh[i].M, sh[i].N, sh[i].K, sh[i].batch);
      if (memcmp(got, want, n * 4))
        fail_msg("%dx%dx%d (batch %d) on %s SMs: the persistent kernel wrote other values", sh[i].M, sh[i].N,
                 sh[i].K, sh[i].batch, sms[j]);
    }
    unsetenv("TK_INTERPRET_SMS");
  }
  su_arena_free(a);
}

static void check(const shape *sh, int nsh, const char *const *sms, int nsms) {
  check_with(WITH, sh, nsh, sms, nsms);
}

static const char *const SMS[] = {"1", "3", "7", "132", "1000"};

/* grids of 3 x 5 (fewer rows than a group), 20 x 2 (two groups and a partial one), one
 * tile; ragged M, N and K, and K smaller than one step */
static void tiles_once(void **state) {
  (void)state;
  const shape sh[] = {{40, 70, 33, 1}, {320, 30, 16, 1}, {16, 16, 5, 1}, {130, 17, 48, 1}};
  check(sh, 4, SMS, 5);
}

/* a batch on axis 2: the tile index runs over it outermost */
static void batched(void **state) {
  (void)state;
  const shape sh[] = {{35, 50, 20, 3}, {16, 130, 32, 2}};
  check(sh, 2, SMS, 5);
}

/* without TK_INTERPRET_SMS: 132 programs, fewer than these 160 tiles */
static void default_sms(void **state) {
  (void)state;
  const shape sh[] = {{160, 256, 16, 1}};
  static const char *const none[] = {"0"}; /* not positive: the default */
  check(sh, 1, none, 1);
}

static void count_workspace(ir_op *op, void *arg) { *(int *)arg += op->opc == IR_WORKSPACE; }

/* Stream-K: tile counts with a last round of at least half the programs (15 tiles on 7 SMs:
 * 1 over 2 rounds, so the last round and one more are split) and less, K of 1 to 9 steps
 * (fewer than 2: plain persist), ragged; every launch twice on one memory. */
static void streamk(void **state) {
  (void)state;
  su_arena *a = su_arena_new();
  int nws = 0;
  ir_walk(pk_compile_arch(a, MM, NULL, 0, STREAMK, IR_KEEP_AUTO, "sm_90a")->funcs[0]->body, count_workspace, &nws);
  assert_int_equal(nws, 0);
  ir_walk(pk_compile_arch(a, MM, FORCE_SK, 1, STREAMK, IR_KEEP_AUTO, "sm_90a")->funcs[0]->body, count_workspace, &nws);
  assert_int_equal(nws, 2);
  su_arena_free(a);
  integers = true;
  launches = 2;
  nforce = 1;
  const shape sh[] = {{40, 70, 33, 1}, {320, 30, 144, 1}, {16, 16, 5, 1}, {130, 17, 48, 1}, {35, 50, 20, 3},
                      {96, 80, 130, 2}, {200, 40, 16, 1}};
  static const char *const sms[] = {"1", "2", "3", "4", "5", "7", "9", "13", "132"};
  check_with(STREAMK, sh, 7, sms, 9);
  integers = false;
  launches = 1;
  nforce = 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(tiles_once), cmocka_unit_test(batched),
                                     cmocka_unit_test(default_sms), cmocka_unit_test(streamk)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
