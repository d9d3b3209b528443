/*
 * runtime/jit.h — libtk's JIT policy, apart from the CUDA driver calls (backend_cuda.c):
 * what a module's variants are compiled with, which parameters a kernel is specialized
 * on, the divisibility signature of a launch's arguments (computed while they are packed
 * into the kernel's parameter slots), the variants compiled so far, and the PTX of a new
 * one, from the disk cache or from driver/.
 *
 * Contract:
 *  - Nothing here knows about CUDA: a variant's function is the backend's handle, opaque.
 *  - A signature has bit i set when parameter i (< 64) is specializable (ir_sig_param) and
 *    its argument a multiple of DRV_SPEC_DIV (a pointer: its address), or for an f32 or
 *    f64, positive and finite. A kernel without IR (AOT PTX) has no bits: one variant,
 *    signature 0.
 *  - The variant with every bit set (sizes multiple of 16, aligned allocations, positive
 *    scales) is the one
 *    compiled for the whole module at load; any other, for its kernel alone, on the first
 *    launch with that signature, each under its own cache key (rt_cache_key_variant).
 * Prefix: rt_jit_.
 */
#ifndef TK_RUNTIME_JIT_H
#define TK_RUNTIME_JIT_H

#include "../driver/driver.h"
#include "cache.h"
#include "runtime.h"
#include "tmap.h"

/* What every variant of a module is compiled with, fixed when it is loaded. */
typedef struct {
  drv_options opts;      /* the target (resolved), opt level and pass checks */
  rt_cache_key base;     /* rt_cache_key_compile of the source; variant keys extend it */
  rt_cache *cache;       /* NULL: compile every variant, store none */
} rt_jit_module;

/* Fixes jm for a module compiled from source (len bytes, named name) with the API's opts
 * (NULL allowed; they make the cache key), resolved into the driver options o (its arch
 * set); cache NULL, or opts asking for no cache, disables the cache. */
void rt_jit_module_init(rt_jit_module *jm, su_arena *a, const tk_compile_options *opts,
                        const drv_options *o, rt_cache *cache, const char *source,
                        size_t len, const char *name);
/* The PTX of m's variant for signature key, of the kernel `only` alone (NULL: every
 * kernel, key RT_SPEC_ALL; m optimized without a target): from the cache (*hit), else
 * specialized and compiled through the driver (drv_specialize, drv_codegen: the copy
 * lives in m's arena), then stored. Appended to ptx without its NUL (su_buf_str terminates it).
 * False with the rendered diagnostics in why. */
bool rt_jit_ptx(const rt_jit_module *jm, ir_module *m, const ir_func *only, uint64_t key,
                su_buf *ptx, bool *hit, su_buf *why);
/* Deletes the cache entry of that variant: the driver rejected its PTX, so the next
 * rt_jit_ptx compiles it again. */
void rt_jit_evict(const rt_jit_module *jm, const ir_func *only, uint64_t key);

/* One compiled variant of a kernel. A lowered variant may take hidden arguments after
 * the parameters (codegen.h, cg_abi): then `hidden` holds them and argv points at the
 * parameter slots followed by them. */
typedef struct {
  uint64_t key;
  void *fn;       /* the backend's function handle */
  unsigned shmem; /* dynamic shared memory bytes it needs at launch */
  unsigned block; /* threads per program */
  rt_hidden *hidden; /* NULL: no hidden arguments */
  void **argv;
  bool pdl;          /* launched as a programmatic dependent launch (cg_abi.pdl) */
  unsigned cluster;  /* CTAs per program along x (cg_abi.cluster); 0: one */
} rt_jit_variant;

/* A kernel's launch state: its parameter slots, the signature bit of each parameter, the
 * variants loaded so far and the one in use (cur, fn, shmem: read on every launch). */
typedef struct {
  uint64_t cur;
  void *fn;
  unsigned shmem;
  unsigned block; /* threads per program, of the variant in use */
  unsigned base_block; /* 32 * warps: a variant's when its PTX states none */
  rt_hidden *hidden; /* of the variant in use (NULL: none) */
  void **cur_argv;   /* of the variant in use: argv, or one with the hidden arguments */
  bool pdl;          /* of the variant in use */
  unsigned cluster;  /* of the variant in use */
  int nparams;
  uint8_t *kinds;  /* how each argument is stored into its slot */
  uint64_t *bits;  /* per parameter: its bit in the signature, 0 when it has none */
  uint64_t *slots; /* one 8-byte slot per parameter */
  void **argv;     /* argv[i] == &slots[i]: the driver's parameter array */
  rt_jit_variant *variants;
  int nvariants, capvariants;
} rt_jit_kernel;

/* k's launch state, in a (no variant yet). */
rt_jit_kernel *rt_jit_kernel_new(su_arena *a, const rt_kernel *k);
/* The signature with every bit k has set. */
uint64_t rt_jit_full_key(const rt_jit_kernel *jk);
/* Stores each argument (checked against the signature by the caller) into its slot as
 * the kernel ABI wants it (integers and pointers as their bits, i1 as 0/1, floats
 * converted to the parameter's type, f16/bf16 rounded to nearest even), and returns the
 * arguments' divisibility signature: one AND and compare per argument, no branch. */
uint64_t rt_jit_pack(rt_jit_kernel *jk, const tk_arg *args);
/* Makes the recorded variant for key the one in use; false when none is recorded. */
bool rt_jit_use(rt_jit_kernel *jk, uint64_t key);
/* Records a new variant (in a) whose launch contract is abi (NULL: none, as for PTX from
 * elsewhere) and makes it the one in use. */
void rt_jit_add(su_arena *a, rt_jit_kernel *jk, uint64_t key, void *fn, unsigned shmem,
                const cg_abi *abi);

#endif
