/*
 * tkbench.h — what tkbench's parts share (bench/tkbench.c: the harness, elementwise, rows
 * and matmul workloads; bench/tkbench_attn.c: attention; bench/tkbench_decode.c: decode
 * attention; bench/tkbench_hist.c: bincount; bench/tkbench_mm8.c: fp8 matmul). Prefix tb_.
 */
#ifndef TB_TKBENCH_H
#define TB_TKBENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "include/tk.h"
#include "runtime/cuda.h"

typedef struct {
  rt_cuda_api cu;
  tk_context *ctx;
  const char *samples;
  const char *tkc;
  int runs;          /* timed runs per workload (median taken) */
  int fuse_keep;     /* tk_fuse_keep for every row kernel's compile (--fuse-keep) */
  tk_devptr flush;   /* scratch buffer written before every timed run to evict L2 */
  size_t flush_bytes;
  uint64_t rng;
  const char *configs; /* --configs: the indices of the sweeps' configurations to try, as
                          ",1,4,"; NULL: all of them */
} bench;

/* Prints one figure: "tk <TAB> workload <TAB> value <TAB> unit <TAB> note", the note
 * on one line (its tabs and newlines printed as spaces). */
void tb_emit(const char *workload, double value, const char *unit, const char *note);
/* The next value of b's xorshift generator. */
uint64_t tb_rng_next(bench *b);
/* The median of b->runs timed launches (CUDA events, L2 flushed before each, after five
 * warm-up launches), in microseconds; NAN on a failure. */
double tb_time_launches(bench *b, tk_kernel *k, tk_grid g, const tk_arg *args, int n);

/* One launch of a sequence. */
typedef struct {
  tk_kernel *k;
  tk_grid g;
  const tk_arg *args;
  int n;
} tb_launch;
/* As tb_time_launches, for the nl launches of l issued back to back on one stream: the
 * events enclose the whole sequence (a kernel and the one that consumes its output). */
double tb_time_sequence(bench *b, const tb_launch *l, int nl);
/* The roofline's predicted time in us (tk_roofline on the device's arch) of the nl launches
 * of l run one after the other, NaN when it cannot say; *bound names the bound of the
 * longest of them. */
double tb_predict(bench *b, const tb_launch *l, int nl, const char **bound);
/* Prints "WORKLOAD roofline" (the predicted us, its bound as the note) and "WORKLOAD % of
 * bound" (predicted / measured: 100% is the bound reached). Nothing when either is NaN. */
void tb_emit_roofline(const char *workload, double predicted, const char *bound, double measured);
/* Whether configuration i of a workload's sweep is to be tried (--configs). */
bool tb_config_wanted(const bench *b, int i);
/* f16 and bf16 bits to and from f32 (round to nearest even). */
uint16_t tb_f32_to_f16(float f);
float tb_f16_to_f32(uint16_t u);
uint16_t tb_f32_to_bf16(float f);
float tb_bf16_to_f32(uint16_t h);

/* The attention workloads whose names contain `only` (all when NULL). */
void tb_attention(bench *b, const char *only);
/* The decode attention workloads whose names contain `only` (all when NULL). */
void tb_decode(bench *b, const char *only);
/* The fp8 matmul workloads (samples/matmul_fp8.tk) whose names contain `only` (all when NULL). */
void tb_matmul_fp8(bench *b, const char *only);
/* The bincount workloads (samples/bincount.tk) whose names contain `only` (all when NULL). */
void tb_bincount(bench *b, const char *only);

#endif
