/* Unit tests of the target table (target/targets.def through target.h): lookups, the
 * features the Hopper paths ask for, shared-memory limits, the device mapping from a
 * compute capability, and that every row is consistent with itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "target/target.h"

static void test_find(void **state) {
  (void)state;
  assert_non_null(tg_find("sm_80"));
  assert_string_equal(tg_find("sm_90a")->name, "sm_90a");
  assert_non_null(tg_find(TG_DEFAULT_ARCH));
  assert_null(tg_find(NULL)); /* no target: target-independent IR */
  assert_null(tg_find("sm_75"));
  assert_null(tg_find("sm_90a "));
  assert_null(tg_find(""));
  su_buf b = {0};
  tg_names(&b, ", ");
  assert_string_equal(su_buf_str(&b), "sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a");
  su_buf_free(&b);
}

static void test_features(void **state) {
  (void)state;
  static const char *const all[] = {"sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"};
  for (int i = 0; i < 6; i++) {
    assert_true(tg_has(all[i], TG_MMA_SYNC | TG_CP_ASYNC));
    bool hopper = !strncmp(all[i], "sm_90", 5);
    assert_int_equal(tg_has(all[i], TG_TMA), hopper);
    assert_int_equal(tg_has(all[i], TG_CLUSTERS), hopper);
    assert_int_equal(tg_has(all[i], TG_WGMMA), !strcmp(all[i], "sm_90a"));
    assert_int_equal(tg_has(all[i], TG_SETMAXNREG), !strcmp(all[i], "sm_90a"));
  }
  assert_true(tg_has("sm_90a", TG_WGMMA | TG_TMA | TG_SETMAXNREG));
  assert_false(tg_has("sm_90", TG_WGMMA | TG_TMA)); /* every bit of the mask */
  assert_false(tg_has("sm_75", TG_MMA_SYNC));
  assert_false(tg_has(NULL, TG_MMA_SYNC));
  assert_int_equal(tg_smem_max(NULL), 0);
}

static void test_shared_memory(void **state) {
  (void)state;
  assert_int_equal(tg_smem_static("sm_80"), 48 * 1024);
  assert_int_equal(tg_smem_max("sm_80"), 163 * 1024);
  assert_int_equal(tg_smem_max("sm_86"), 99 * 1024);
  assert_int_equal(tg_smem_max("sm_89"), 99 * 1024);
  assert_int_equal(tg_smem_max("sm_90a"), 227 * 1024);
  assert_int_equal(tg_smem_sm("sm_90"), 228 * 1024);
  assert_int_equal(tg_smem_max("sm_12"), 0);
  assert_int_equal(tg_smem_static("sm_12"), 0);
}

static void test_for_cc(void **state) {
  (void)state;
  static const struct { int major, minor; const char *want; } cases[] = {
      {9, 0, "sm_90a"}, {9, 1, "sm_90"},  {10, 0, "sm_90"}, {12, 0, "sm_90"},
      {8, 0, "sm_80"},  {8, 6, "sm_86"},  {8, 7, "sm_87"},  {8, 9, "sm_89"},
      {8, 8, "sm_87"},  {7, 5, NULL},     {0, 0, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const tg_arch *t = tg_for_cc(cases[i].major, cases[i].minor);
    if (!cases[i].want) {
      assert_null(t);
      continue;
    }
    if (!t || strcmp(t->name, cases[i].want))
      fail_msg("cc %d.%d: %s, want %s", cases[i].major, cases[i].minor, t ? t->name : "none",
               cases[i].want);
  }
}

/* Each row agrees with its name and with the hardware's ordering of the limits. */
static void test_rows_consistent(void **state) {
  (void)state;
  int n;
  const tg_arch *rows = tg_archs(&n);
  assert_int_equal(n, 6);
  for (int i = 0; i < n; i++) {
    const tg_arch *t = &rows[i];
    char name[16];
    snprintf(name, sizeof name, "sm_%d%s", t->cc, t->specific ? "a" : "");
    assert_string_equal(t->name, name);
    assert_ptr_equal(tg_find(t->name), t);
    assert_true(t->ptx >= 80); /* the oldest PTX that knows sm_90a */
    assert_true(t->smem_static <= t->smem_block && t->smem_block <= t->smem_sm);
    assert_int_equal(t->smem_static, 48 * 1024);
    assert_int_equal(t->regs_thread, 255);
    assert_true(t->regs_sm >= 32 * 1024);
    bool ceilings = t->hbm_bw > 0 && t->f32_flops > 0 && t->tc_flops > 0 && t->sfu_rate > 0 &&
                    t->l2_bytes > 0 && t->l2_bw > t->hbm_bw && t->launch_s > 0;
    assert_int_equal(tg_has_ceilings(t->name), ceilings);
    assert_int_equal(ceilings, t->machine[0] != '\0');
    assert_int_equal(ceilings, t->sms > 0);
    if (ceilings) assert_true(t->tc_flops > t->f32_flops);
    /* 16 MUFU results a clock an SM against 256 f32 FLOPs (128 FMA): the same clock, a
     * boost clock between 1 and 2.5 GHz */
    if (ceilings) {
      double clock = t->sfu_rate / (16.0 * t->sms);
      assert_true(clock > 1e9 && clock < 2.5e9);
      assert_true(t->f32_flops <= 256 * t->sms * clock * 1.0001);
    }
    for (int j = 0; j < i; j++) assert_true(strcmp(rows[j].name, t->name) != 0);
  }
  assert_true(tg_has_ceilings("sm_90a") && tg_has_ceilings("sm_80"));
  assert_false(tg_has_ceilings("sm_86"));
  assert_true(tg_find("sm_90a")->hbm_bw == 4.0e12);
  assert_true(tg_find("sm_90a")->tc_flops == 990e12);
  assert_true(tg_find("sm_90a")->launch_s == 3e-6);
  assert_true(tg_find("sm_90a")->l2_bytes == 50e6);
  assert_true(tg_find("sm_90a")->f32_flops == 65e12);
  assert_int_equal(tg_find("sm_90a")->sms, 132);
  assert_true(tg_find("sm_90a")->sfu_rate == 16 * 132 * 1.98e9);
  assert_true(tg_find("sm_80")->sfu_rate == 16 * 108 * 1.41e9);
}

/* A card the table has measured (by the driver's name) gets its own ceilings on the rows
 * of its compute capability, and only the ceilings; any other card, or none, the row's. */
static void test_machine_ceilings(void **state) {
  (void)state;
  tg_arch buf;
  const tg_arch *row = tg_find("sm_90a");
  const tg_arch *h100 = tg_on_device("sm_90a", "NVIDIA H100 80GB HBM3", &buf);
  assert_ptr_equal(h100, &buf);
  assert_true(h100->hbm_bw > 2e12 && h100->hbm_bw < row->hbm_bw);
  assert_string_equal(h100->name, "sm_90a");
  assert_int_equal(h100->features, row->features);
  assert_int_equal(h100->smem_block, row->smem_block);
  assert_true(tg_has_ceilings(h100->name) && h100->l2_bw > 0 && h100->launch_s > 0);
  assert_string_equal(h100->machine, "NVIDIA H100 80GB HBM3");
  tg_arch buf90;
  assert_true(tg_on_device("sm_90", "NVIDIA H100 80GB HBM3", &buf90)->hbm_bw == h100->hbm_bw);
  assert_ptr_equal(tg_on_device("sm_90a", "NVIDIA H200", &buf), row);
  assert_ptr_equal(tg_on_device("sm_90a", NULL, &buf), row);
  assert_ptr_equal(tg_on_device("sm_80", "NVIDIA H100 80GB HBM3", &buf), tg_find("sm_80"));
  assert_null(tg_on_device("sm_99", "NVIDIA H100 80GB HBM3", &buf));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_find),
      cmocka_unit_test(test_features),
      cmocka_unit_test(test_shared_memory),
      cmocka_unit_test(test_for_cc),
      cmocka_unit_test(test_rows_consistent),
      cmocka_unit_test(test_machine_ceilings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
