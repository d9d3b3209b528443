/* cases.c — the table of sample cases, and compiling and running one of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples/check/job.h"

/* Defines keep the tiles small where the interpreter would otherwise spend its time on
 * masked lanes, and give even small sizes several programs (and ragged edges). The rows of
 * one-kernel cases leave the last field, kernel2, out (NULL), hence the pragma. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
const ck_case ck_cases[] = {
    {"vadd", "vadd.tk", "vadd", {{0}}, 0, CK_1D,
     {{{1}}, {{1000}}, {{1024}}, {{4097}}}, {{{1 << 20}}, {{1000003}}}, 0, ck_run_vadd},
    {"coscos", "coscos.tk", "coscos", {{"BLOCK", "512"}}, 1, CK_1D,
     {{{1}}, {{511}}, {{2048}}, {{3001}}}, {{{1 << 20}}, {{999999}}}, 0, ck_run_coscos},
    {"gelu_tanh", "gelu.tk", "gelu_tanh", {{"BLOCK", "256"}}, 1, CK_1D,
     {{{3}}, {{256}}, {{1000}}}, {{{1 << 20}}, {{100003}}}, 0, ck_run_gelu},
    {"gelu_erf", "gelu.tk", "gelu_erf", {{"BLOCK", "256"}}, 1, CK_1D,
     {{{3}}, {{256}}, {{1000}}}, {{{1 << 20}}, {{100003}}}, 1, ck_run_gelu},
    {"dropout", "dropout.tk", "dropout", {{"BLOCK", "256"}}, 1, CK_1D,
     {{{1}}, {{256}}, {{3001}}}, {{{1 << 20}}, {{1000003}}}, 0, ck_run_dropout},
    {"bincount", "bincount.tk", "bincount", {{"BLOCK", "512"}}, 1, CK_1D,
     {{{1}}, {{512}}, {{3001}}}, {{{1 << 20}}, {{1000003}}}, 0, ck_run_histogram},
    {"softmax", "softmax.tk", "softmax", {{0}}, 0, CK_ROWS,
     {{{4, 1024, 1024}}, {{7, 1000, 1003}}, {{3, 1, 1}}},
     {{{4096, 1024, 1024}}, {{1000, 777, 800}}}, 0, ck_run_softmax},
    {"softmax_rows", "softmax_rows.tk", "softmax_rows", {{"BLOCK", "1024"}, {"ROWS", "4"}}, 2,
     CK_ROWS, {{{4, 1024, 1024}}, {{7, 1000, 1003}}, {{3, 1, 1}}},
     {{{4096, 1024, 1024}}, {{1001, 777, 800}}}, 1, ck_run_softmax},
    {"softmax_online", "softmax_online.tk", "softmax_online", {{"BLOCK", "256"}}, 1, CK_ROWS,
     {{{2, 1000, 1000}}, {{3, 256, 300}}, {{1, 5, 5}}},
     {{{512, 8192, 8192}}, {{300, 5000, 5003}}}, 0, ck_run_softmax},
    {"row_sum_chunked", "row_sum_chunked.tk", "row_sum_chunked", {{"BLOCK", "128"}}, 1, CK_ROWS,
     {{{3, 1000, 1000}}, {{5, 128, 130}}, {{2, 1, 7}}, {{1, 4096, 4096}}},
     {{{1024, 4096, 4096}}, {{333, 10000, 10007}}}, 0, ck_run_row_sum},
    {"layernorm", "layernorm.tk", "layernorm", {{"BLOCK", "1024"}}, 1, CK_ROWS,
     {{{3, 1024, 1024}}, {{5, 700, 701}}, {{2, 2, 2}}},
     {{{4096, 1024, 1024}}, {{1000, 700, 701}}}, 0, ck_run_norm},
    {"layernorm_rows", "layernorm_rows.tk", "layernorm_rows", {{"BLOCK", "1024"}, {"ROWS", "2"}},
     2, CK_ROWS, {{{3, 1024, 1024}}, {{5, 700, 701}}, {{2, 2, 2}}},
     {{{4096, 1024, 1024}}, {{1001, 700, 701}}}, 3, ck_run_norm},
    {"layernorm_f32", "layernorm_f32.tk", "layernorm_f32", {{"BLOCK", "1024"}}, 1, CK_ROWS,
     {{{3, 1024, 1024}}, {{5, 700, 701}}, {{2, 2, 2}}},
     {{{4096, 1024, 1024}}, {{1000, 700, 701}}}, 2, ck_run_norm},
    {"rmsnorm", "rmsnorm.tk", "rmsnorm", {{"BLOCK", "1024"}}, 1, CK_ROWS,
     {{{3, 1024, 1024}}, {{4, 333, 400}}},
     {{{4096, 1024, 1024}}, {{999, 333, 400}}}, 1, ck_run_norm},
    {"cross_entropy_i32", "cross_entropy.tk", "cross_entropy_i32", {{"BLOCK", "512"}}, 1, CK_ROWS,
     {{{4, 500, 512}}, {{6, 512, 512}}, {{3, 10, 17}}},
     {{{4096, 512, 512}}, {{1000, 500, 509}}}, 0, ck_run_cross_entropy},
    {"cross_entropy_i64", "cross_entropy.tk", "cross_entropy_i64", {{"BLOCK", "512"}}, 1, CK_ROWS,
     {{{4, 500, 512}}, {{6, 512, 512}}, {{3, 10, 17}}},
     {{{4096, 512, 512}}, {{1000, 500, 509}}}, 1, ck_run_cross_entropy},
    {"transpose", "transpose.tk", "transpose", {{"BM", "32"}, {"BN", "16"}}, 2, CK_2D,
     {{{64, 64}}, {{100, 37}}, {{1, 5}}, {{33, 1}}},
     {{{2048, 1024}}, {{1000, 777}}}, 0, ck_run_transpose},
    {"matmul", "matmul.tk", "matmul", {{"BM", "32"}, {"BN", "32"}}, 2, CK_MNK,
     {{{64, 64, 64}}, {{70, 50, 33}}, {{16, 40, 100}}},
     {{{512, 512, 512}}, {{300, 200, 100}}}, 0, ck_run_matmul},
    /* the sample's own tiles: on sm_90a the warp-specialized TMA pipeline */
    {"matmul_128x256", "matmul.tk", "matmul", {{"BM", "128"}, {"BN", "256"}}, 2, CK_MNK,
     {{{128, 256, 64}}, {{150, 300, 100}}},
     {{{2048, 2048, 1024}}, {{1000, 700, 336}}}, 0, ck_run_matmul},
    /* K as one logical tile of KP columns (kloop cuts it into the loop above); K <= KP */
    {"matmul_logical", "matmul_logical.tk", "matmul_logical", {{"BM", "32"}, {"BN", "32"}, {"KP", "128"}}, 3,
     CK_MNK, {{{64, 64, 64}}, {{70, 50, 33}}, {{16, 40, 128}}, {{33, 17, 100}}},
     {{{512, 512, 128}}, {{300, 200, 100}}}, 0, ck_run_matmul},
    {"matmul_logical_128x256", "matmul_logical.tk", "matmul_logical",
     {{"BM", "128"}, {"BN", "256"}, {"KP", "1024"}}, 3, CK_MNK, {{{150, 300, 333}}, {{128, 256, 64}}},
     {{{2048, 2048, 1024}}, {{1000, 700, 1000}}, {{300, 200, 17}}}, 0, ck_run_matmul},
    {"matmul_bf16", "matmul.tk", "matmul_bf16", {{"BM", "128"}, {"BN", "256"}}, 2, CK_MNK,
     {{{128, 256, 64}}, {{70, 50, 33}}},
     {{{1024, 1024, 1024}}, {{300, 200, 112}}}, 1, ck_run_matmul},
    {"matmul_bias_gelu", "matmul_bias_gelu.tk", "matmul_bias_gelu", {{"BM", "128"}, {"BN", "256"}}, 2,
     CK_MNK, {{{128, 256, 64}}, {{70, 50, 33}}},
     {{{1024, 1024, 1024}}, {{300, 200, 112}}}, 2, ck_run_matmul},
    /* 3 stages (tmastore's staged store has room). On the GPU, ragged and more tiles
     * (16 x 9 = 144) than an H100/H200 has SMs (132), so some programs run two tiles, at a
     * long K (1040: 17 steps) and a short one (112: 2 steps). Kept as small as that
     * allows: the host's reference is exact */
    {"matmul_bias_gelu_s3", "matmul_bias_gelu.tk", "matmul_bias_gelu",
     {{"BM", "128"}, {"BN", "256"}, {"stages", "3"}}, 3, CK_MNK, {{{128, 256, 64}}, {{70, 50, 33}}},
     {{{1940, 2100, 1040}}, {{1940, 2100, 112}}}, 2, ck_run_matmul},
    /* e4m3 operands, B given N x K: on sm_90a wgmma's own fp8 form from the TMA ring */
    {"matmul_fp8", "matmul_fp8.tk", "matmul_fp8", {{"BM", "64"}, {"BN", "64"}, {"BK", "64"}}, 3, CK_MNK,
     {{{64, 64, 64}}, {{70, 50, 40}}},
     {{{512, 512, 512}}, {{300, 200, 100}}}, 0, ck_run_matmul_fp8},
    {"matmul_fp8_128x256", "matmul_fp8.tk", "matmul_fp8", {{"BM", "128"}, {"BN", "256"}}, 2, CK_MNK,
     {{{128, 256, 128}}, {{150, 300, 100}}},
     {{{2048, 2048, 1024}}, {{1000, 700, 336}}}, 0, ck_run_matmul_fp8},
    /* the sample's own tiles; S_q x S_k / B with 4 query heads on 2 key/value heads. On the
     * GPU, S_k of one key block and of two: rotate's loop runs no iteration, then one (the
     * release of V's slot in flight skipped, then taken after the loop) */
    {"attention", "attention.tk", "attention", {{"BM", "128"}, {"BN", "128"}, {"D", "64"}}, 3, CK_ATTN,
     {{{130, 200, 1}}, {{64, 64, 2}}, {{1, 129, 1}}},
     {{{1024, 1024, 2}}, {{1000, 1537, 1}}, {{333, 333, 3}}, {{100, 100, 1}}, {{200, 250, 1}}}, 0,
     ck_run_attention},
    {"attention_causal", "attention.tk", "attention",
     {{"BM", "128"}, {"BN", "128"}, {"D", "128"}, {"CAUSAL", "true"}}, 4, CK_ATTN,
     {{{200, 200, 1}}, {{130, 70, 1}}, {{64, 300, 1}}},
     {{{1024, 1024, 2}}, {{1000, 1537, 1}}, {{2049, 2049, 1}}}, 0, ck_run_attention},
    /* one consumer warpgroup a program, three an SM, the row max moved only past a slack
     * of 8: tkbench's fastest for short causal D64 rows (bench/RESULTS.md, fourteenth and
     * eighteenth sessions) */
    {"attention_causal_3sm", "attention.tk", "attention",
     {{"BM", "64"}, {"BN", "64"}, {"D", "64"}, {"CAUSAL", "true"}, {"warps", "4"}, {"programs_per_sm", "3"},
      {"SLACK", "8"}}, 7,
     CK_ATTN, {{{200, 200, 1}}, {{65, 130, 1}}},
     {{{1024, 1024, 2}}, {{1000, 1537, 1}}, {{2049, 2049, 1}}}, 0, ck_run_attention},
    /* four consumer warpgroups taking turns in a cycle (rotate): D64's BM 256 loop */
    {"attention_4wg", "attention.tk", "attention",
     {{"BM", "256"}, {"BN", "64"}, {"D", "64"}, {"warps", "16"}}, 4, CK_ATTN,
     {{{300, 200, 1}}, {{1, 65, 1}}},
     {{{1024, 1024, 2}}, {{1000, 1537, 1}}, {{333, 333, 3}}, {{64, 64, 1}}}, 0, ck_run_attention},
    /* stream-K (streamk = true, non-causal: persistent): on 132 SMs every tile of these
     * GPU shapes (144, 192, 256 tiles) lies in the split rounds, two pieces merged (m, O
     * and rowsum's l), the second shape's launch on the tickets the first reset. The
     * interpreter runs the target-independent IR (no persist, no stream-K): there these
     * are plain attention cases, the split is checked on the GPU only */
    {"attention_streamk", "attention.tk", "attention",
     {{"BM", "128"}, {"BN", "128"}, {"D", "128"}, {"streamk", "true"}}, 4, CK_ATTN, {{{130, 200, 1}}, {{1, 129, 2}}},
     {{{1100, 384, 4}}, {{2000, 200, 3}}, {{4000, 1000, 2}}}, 0, ck_run_attention},
    {"attention_streamk_4wg", "attention.tk", "attention",
     {{"T", "bf16"}, {"BM", "256"}, {"BN", "64"}, {"D", "64"}, {"warps", "16"}, {"streamk", "true"}}, 6, CK_ATTN,
     {{{300, 130, 1}}, {{64, 64, 2}}}, {{{2200, 384, 4}}, {{4000, 640, 3}}}, 1, ck_run_attention},
    /* after the four-warpgroup case on purpose: its workspace (163856 bytes a program) is
     * larger than this one's (81936), so this launch reuses it, zeroed because another
     * kernel left its O partials where this one keeps its tickets (2026-12-08: wrong
     * output before the runtime zeroed on a change of kernel) */
    {"attention_streamk_d64", "attention.tk", "attention",
     {{"BM", "128"}, {"BN", "128"}, {"D", "64"}, {"streamk", "true"}}, 4, CK_ATTN, {{{130, 200, 1}}, {{1, 129, 2}}},
     {{{1100, 384, 4}}, {{2000, 200, 3}}, {{4000, 1000, 2}}}, 0, ck_run_attention},
    {"attention_bf16", "attention.tk", "attention", {{"T", "bf16"}, {"BN", "64"}, {"D", "128"}}, 3,
     CK_ATTN, {{{130, 200, 1}}, {{1, 65, 2}}},
     {{{1024, 1024, 2}}, {{1000, 1537, 1}}, {{60, 60, 1}}, {{100, 120, 1}}}, 1, ck_run_attention},
    {"attention_bf16_causal", "attention.tk", "attention",
     {{"T", "bf16"}, {"D", "64"}, {"CAUSAL", "true"}}, 3, CK_ATTN, {{{200, 200, 1}}, {{130, 70, 1}}},
     {{{1024, 1024, 2}}, {{1000, 1537, 1}}}, 1, ck_run_attention},
    /* decode: split, then combine (one split: no combine); S_cap/B=sequences/splits asked for,
     * 8 query heads on 2 */
    {"attention_decode", "attention_decode.tk", "decode_split", {{0}}, 0, CK_DECODE,
     {{{300, 5, 3}}, {{64, 2, 1}}, {{130, 3, 4}}},
     {{{8192, 5, 16}}, {{131072, 2, 64}}, {{1000, 7, 5}}}, 0, ck_run_decode, "decode_combine"},
    /* a group of 3 on 2 key/value heads; small blocks, and more splits than one combine step */
    {"attention_decode_bf16", "attention_decode.tk", "decode_split",
     {{"T", "bf16"}, {"BN", "16"}, {"SB", "2"}}, 3, CK_DECODE,
     {{{200, 5, 7}}, {{33, 2, 2}}},
     {{{8192, 5, 40}}, {{4097, 3, 7}}}, 1, ck_run_decode, "decode_combine"},
    {"attention_decode_mha", "attention_decode.tk", "decode_split", {{"T", "bf16"}}, 1, CK_DECODE,
     {{{150, 5, 2}}, {{1, 1, 1}}},
     {{{32768, 5, 32}}, {{777, 2, 1}}}, 2, ck_run_decode, "decode_combine"},
};
#pragma GCC diagnostic pop
const int ck_ncases = (int)(sizeof ck_cases / sizeof *ck_cases);

const ck_case *ck_find(const char *name) {
  for (int i = 0; i < ck_ncases; i++)
    if (strcmp(ck_cases[i].name, name) == 0) return &ck_cases[i];
  return NULL;
}

tk_status ck_compile(tk_context *ctx, const char *dir, const ck_case *c, tk_module **module,
                     tk_kernel **kernel, tk_kernel **kernel2) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, c->file);
  tk_compile_options o = {.defines = c->defines, .ndefines = c->ndefines};
  *module = NULL;
  *kernel = NULL;
  if (kernel2) *kernel2 = NULL;
  tk_status s = tk_module_compile_file(ctx, module, path, &o);
  if (s == TK_OK) s = tk_module_get_kernel(*module, c->kernel, kernel);
  if (s == TK_OK && c->kernel2) {
    if (!kernel2) {
      fprintf(stderr, "ck_compile: internal error: case '%s' has two kernels\n", c->name);
      abort();
    }
    s = tk_module_get_kernel(*module, c->kernel2, kernel2);
  }
  if (s != TK_OK) {
    tk_module_destroy(*module);
    *module = NULL;
  }
  return s;
}

ck_result ck_run(tk_context *ctx, tk_kernel *k, tk_kernel *k2, const ck_case *c, uint64_t seed,
                 ck_size size) {
  ck_job job = {.ctx = ctx, .kernel = k, .kernel2 = k2, .c = c, .size = size, .rng = seed | 1};
  c->run(&job);
  for (int i = 0; i < job.nhost; i++) free(job.host[i]);
  /* A failed free after a fault is not the news; the fault is already recorded. */
  for (int i = 0; i < job.ndev; i++) tk_free(ctx, job.dev[i]);
  return job.res;
}

void ck_size_format(const ck_case *c, ck_size size, char *buf, size_t cap) {
  const long *d = size.d;
  switch (c->shape) {
  case CK_1D: snprintf(buf, cap, "%ld", d[0]); return;
  case CK_2D: snprintf(buf, cap, "%ldx%ld", d[0], d[1]); return;
  case CK_MNK: snprintf(buf, cap, "%ldx%ldx%ld", d[0], d[1], d[2]); return;
  case CK_ATTN: snprintf(buf, cap, "%ldx%ld/B=%ld", d[0], d[1], d[2]); return;
  case CK_DECODE: snprintf(buf, cap, "%ld/B=%ld/%ld", d[0], d[1], d[2]); return;
  case CK_ROWS:
    if (d[2] == d[1]) snprintf(buf, cap, "%ldx%ld", d[0], d[1]);
    else snprintf(buf, cap, "%ldx%ld/%ld", d[0], d[1], d[2]);
    return;
  }
  snprintf(buf, cap, "?");
}
