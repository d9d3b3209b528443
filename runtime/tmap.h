/*
 * runtime/tmap.h — private to runtime/: the hidden arguments a lowered kernel takes
 * (codegen.h's cg_abi): TMA tensor maps built from the launch's argument values, and a
 * persistent kernel's launched grid, the -fno-fuse scratch buffer, the workspace ops' buffer.
 * Built once per argument set and reused while the values they depend on do not change, so
 * a launch of the same shapes costs a compare.
 * Prefix: rt_hidden_.
 */
#ifndef TK_RUNTIME_TMAP_H
#define TK_RUNTIME_TMAP_H

#include "../codegen/codegen.h"
#include "cuda.h"

/* A CUtensorMap: 128 opaque bytes, 64-aligned. */
typedef struct {
  _Alignas(64) uint64_t opaque[16];
} rt_tensor_map;

/* The hidden arguments of one kernel variant, ready to be pointed at from argv. */
typedef struct {
  cg_abi abi;
  rt_tensor_map maps[CG_MAX_TMAPS];
  uint32_t grid[3];            /* a persistent kernel's launched grid */
  uint64_t scratch;            /* the context's scratch buffer (CUdeviceptr), for abi.scratch */
  uint64_t workspace;          /* the context's workspace buffer (CUdeviceptr), for abi.workspace */
  uint64_t layout;             /* with abi.workspace: this variant's id, unique in the process
                                * (rt_jit_add), which the context's workspace remembers */
  int64_t last[CG_MAX_TMAPS][1 + 2 * IR_MAX_RANK]; /* the values the maps were built from */
  bool built;
} rt_hidden;

/* Builds (or keeps, when the arguments it reads are those of the last build) every map of
 * h->abi from the launch's raw argument slots (slot[i]: parameter i's value as the launch
 * packs it) of a kernel with signature sig. False (why filled) when the driver rejects a
 * map: an alignment or stride the specialization should have excluded. */
bool rt_hidden_build(const rt_cuda_api *cu, rt_hidden *h, const uint64_t *slot,
                     const ir_signature *sig, su_buf *why);

#endif
