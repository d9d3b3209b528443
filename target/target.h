/*
 * target/ — what tk compiles for, as plain data every stage may read: the GPU
 * architectures (one table, targets.def: PTX version, compute capability, features,
 * shared-memory and register limits, measured ceilings) and the defaults a compilation
 * takes when told nothing.
 *
 * Contract:
 *  - targets.def is the one list of architectures and the one place each fact about one
 *    is written; tkc's --arch and --help, libtk's arch checks and device mapping, codegen,
 *    the roofline and the passes read it through this header.
 *  - These defaults are decided here and nowhere else.
 *  - Nothing here knows about CUDA or LLVM. The queries take an arch name ("sm_90a"), as
 *    ir_module.arch and the options carry it; for NULL (no target: target-independent IR)
 *    or a name not in the table, tg_find is NULL, tg_has false and the limits 0.
 * Prefix: tg_ / TG_.
 */
#ifndef TK_TARGET_H
#define TK_TARGET_H

#include <stdbool.h>

#include "../support/support.h"

/* -O level of tkc and of libtk when the options leave it 0. */
#define TG_DEFAULT_OPT_LEVEL 3
/* The architecture tkc compiles for without --arch (libtk picks the device's). */
#define TG_DEFAULT_ARCH "sm_90a"
/* The launch attributes of a kernel without @launch(warps = …, stages = …). */
#define TG_DEFAULT_WARPS 4
#define TG_DEFAULT_STAGES 1

/* Facts every architecture of the table shares (a column once one differs): threads per
 * warp, the widest global-memory access in bytes, and the shared memory the system
 * reserves per resident block (sm_80 and later; CUDA C++ Programming Guide). */
enum { TG_WARP = 32, TG_VEC_BYTES = 16, TG_SMEM_RESERVED = 1024 };

/* What an architecture has. */
enum {
  TG_MMA_SYNC = 1 << 0,   /* mma.sync m16n8k{8,16,32} (f16, bf16, tf32, i8) and ldmatrix */
  TG_CP_ASYNC = 1 << 1,   /* cp.async global → shared */
  TG_TMA = 1 << 2,        /* cp.async.bulk(.tensor): the Tensor Memory Accelerator */
  TG_CLUSTERS = 1 << 3,   /* thread-block clusters, distributed shared memory */
  TG_WGMMA = 1 << 4,      /* wgmma.mma_async (sm_90a only) */
  TG_SETMAXNREG = 1 << 5, /* setmaxnreg (sm_90a only) */
  TG_GRIDDEP = 1 << 7,    /* griddepcontrol: programmatic dependent launch (sm_90 and later) */
  TG_CLUSTER16 = 1 << 8,  /* clusters of 16 CTAs, beyond the portable 8 (the launch opts in:
                           * CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) */
  TG_FP8_CVT = 1 << 6,    /* cvt between f32 / f16x2 and e4m3x2 / e5m2x2: sm_90 and later
                           * (sm_89 has it from PTX ISA 8.1; its row emits 8.0, so it
                           * converts in integer ops, to the same bits) */
};

/* One row of targets.def. */
typedef struct {
  const char *name;
  int cc;         /* compute capability, major * 10 + minor */
  bool specific;  /* arch-specific ("a"): runs on exactly cc */
  int ptx;        /* PTX ISA version emitted, major * 10 + minor */
  unsigned features;
  int smem_static, smem_block, smem_sm; /* bytes */
  int regs_sm, regs_thread;
  int threads_sm, blocks_sm; /* resident per SM */
  int sms;        /* of `machine`; 0: none */
  double hbm_bw, f32_flops, tc_flops; /* bytes/s, FLOP/s; 0: unknown */
  double sfu_rate;                    /* special-function (MUFU) results/s; 0: unknown */
  double l2_bytes, l2_bw;             /* bytes, bytes/s; 0: unknown */
  double launch_s;                    /* the least a launch costs, seconds */
  const char *machine;
} tg_arch;

/* The row named name, or NULL when the table has none (or name is NULL). */
const tg_arch *tg_find(const char *name);
/* The rows, in table order (*n of them). */
const tg_arch *tg_archs(int *n);
/* The architecture to compile for on a device of compute capability major.minor: the
 * newest row it runs (an arch-specific row only on its exact cc, preferred there), or
 * NULL when the device is older than every row. */
const tg_arch *tg_for_cc(int major, int minor);
/* Whether arch has every feature in the mask. */
bool tg_has(const char *arch, unsigned features);
/* Shared memory: static (what a kernel gets without asking), the most one block may
 * have, and per SM; bytes. */
int tg_smem_static(const char *arch);
int tg_smem_max(const char *arch);
int tg_smem_sm(const char *arch);
/* The most shared memory one program may have when programs_per_sm of them share an SM
 * (`@launch(programs_per_sm)`; 0 or 1: the block limit). */
int tg_smem_program(const char *arch, int programs_per_sm);
/* Whether arch has measured (or datasheet) ceilings for the roofline. */
bool tg_has_ceilings(const char *arch);
/* arch's row with the ceilings of the card the driver names device (cuDeviceGetName) when
 * a TG_MACHINE row of arch's compute capability names a prefix of it: a copy in *buf;
 * else arch's own row (device NULL, or a card the table does not know). NULL when arch
 * is not in the table. */
const tg_arch *tg_on_device(const char *arch, const char *device, tg_arch *buf);
/* Appends the names of the cards with TG_MACHINE rows for arch's compute capability to b,
 * separated by sep (nothing when there are none). */
void tg_machine_names(su_buf *b, const char *arch, const char *sep);
/* ---- the cost rules the roofline and fusion's cost model share (docs/roofline.md) ---- */
/* Programs of `threads` threads and smem_bytes of shared memory each that one SM holds at
 * once: the thread, block and shared-memory limits of t (registers ignored); at least 1. */
int tg_resident_per_sm(const tg_arch *t, int threads, double smem_bytes);
/* The share of re-read bytes that still hit L2 when the programs resident at once re-read
 * `footprint` bytes in all: 1 when it fits in t's L2, else L2 / footprint (LRU over a
 * window larger than the cache keeps about that much of it); 0 when footprint is 0. */
double tg_l2_hit(const tg_arch *t, double footprint);
/* Appends the table's names to b, separated by sep ("sm_80, sm_86, ..."). */
void tg_names(su_buf *b, const char *sep);

#endif
