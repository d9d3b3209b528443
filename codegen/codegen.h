/*
 * codegen/ — the GPU back end: Tile IR → LLVM IR (through the LLVM 19 C API) → libdevice
 * linked in → optimized → PTX; and the host code of `tkc --emit=c`.
 *
 * Contract:
 *  - Input is a module that passed ir_verify. Each kernel becomes one PTX entry of the same
 *    name (calling convention PTX_Kernel, `.maxntid` = 32 * num_warps); several kernels
 *    share one module.
 *  - Lowering model (Triton's): every tile value is held, per thread, as the LLVM scalars
 *    of the elements that thread owns under the tile's layout. 1-D tiles use a blocked
 *    layout: `vec` contiguous elements per thread (16 bytes of the narrowest element the
 *    kernel moves through memory, fewer when the tile is small), 32 threads per warp,
 *    num_warps warps, repeated to cover the tile. A tile with fewer elements than threads
 *    is replicated; stores and atomics are issued by one owner per element only.
 *  - Kernel ABI: parameters in order, each by value at its dtype's storage size (i1 as one
 *    byte holding 0 or 1, f16/bf16 as 16-bit patterns, pointers as 64-bit global
 *    addresses). What is assumed of the arguments is exactly the kernel's parameter facts
 *    (ir_func.param_div: a pointer aligned to D bytes, an integer a multiple of D); a
 *    pointer without one is assumed aligned to its element only. (Before specialization
 *    existed, every pointer was assumed 16-byte aligned: no longer.) An argument that
 *    breaks a fact is undefined behaviour.
 *  - Memory accesses are vectorized (up to 16 bytes) only where the facts prove the
 *    addresses contiguous and aligned; nothing is tested at run time. A masked access is
 *    predicated without a branch: one predicated vector access when the mask is provably
 *    constant over the vector (e.g. `offs < n` with n a known multiple of 16), else one
 *    predicated access per element (`@p ld.global.b32`), as Triton does. Masked-off
 *    lanes are never touched; a load yields `other` there.
 *  - Atomics are relaxed (monotonic) at GPU scope, like CUDA's atomicAdd. A scalar atomic
 *    is performed once per program (by thread 0) and its old value broadcast.
 *  - Tiles of any rank follow the thread layouts in their types (the tiling pass's); a
 *    tile without one gets the tiling pass's default for its shape. Values move between
 *    layouts (convert_layout, trans, broadcast, expand_dims, reshape) in registers when
 *    every thread already holds what it needs, else through shared memory.
 *  - Shared memory: one scratch buffer per kernel, static when it needs at most 48 KB,
 *    else the module's dynamic buffer `tk_dyn_smem`, whose size the launcher must pass
 *    (and allow with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES): see
 *    cg_ptx_shared_bytes.
 *  - dot runs on the tensor cores (mma.sync, sm_80+; emit_dot.c): f16 and bf16 exact
 *    products summed in f32, i8 → i32; f32 inputs as the op's input precision says
 *    (docs/language.md, "Precision"): tf32 (Triton's default) rounds them to tf32
 *    (cvt.rna), tf32x3 is three tf32 products of their big and small parts, ieee runs on
 *    the FMA units: each product and sum rounded to f32, k in order (the interpreter's
 *    result, bit for bit).
 *  - Not supported yet (reported through su_error, located at the op): device_print,
 *    device_assert. The interpreter runs them.
 *  - Math accuracy (as Triton's): f32 sin and cos are PTX sin/cos.approx.f32 (absolute
 *    error about 2^-21 on [-pi, pi], growing outside it: no exact range reduction); f32
 *    exp2 is ex2.approx.f32 (2 ulp) and exp(x) is ex2.approx.f32(x * log2(e)) (2 ulp plus
 *    about 1.2 |x| ulp from rounding the product). Marked accurate (the op's attr: sin(x,
 *    accurate=true), tkc -fmath=accurate), f32 sin, cos, exp, exp2 and sigmoid's exp are
 *    libdevice's __nv_sinf, __nv_cosf, __nv_expf, __nv_exp2f (2 ulp over the full range,
 *    with Payne-Hanek reduction for sin and cos). sqrt (sqrt.rn: correctly rounded),
 *    floor, ceil, rint (cvt.rni), trunc (cvt.rzi) and copysign are exact at any
 *    precision; fdiv is div.full.f32 on f32 (2 ulp over the full range) and div.rn on
 *    f64; umulhi is mul.hi.u16/u32/u64 and cdiv a truncating division plus the carry,
 *    both exact. The rest is libdevice's, without ftz: every other f64 function, and f32
 *    log, log2, rsqrt, tanh, erf, log1p and expm1 (1 ulp), pow (4 ulp; f64 2) and %; only
 *    the routines used are linked. f32 erfc is a polynomial of 1 / (1 + |x|/2) inside one
 *    ex2.approx (cg_erfc_model; within (16 + 3 x^2) ulps), libdevice's __nv_erfcf when
 *    accurate; an erfc's folded factors (in, out) go into the fast lowering's constants. f16/bf16 math computes in f32 and rounds once.
 *  - Nothing here keeps global mutable state other than LLVM's one-time target
 *    registration; the scratch ids of the module's values are renumbered.
 * Prefix: cg_ / CG_.
 */
#ifndef TK_CODEGEN_H
#define TK_CODEGEN_H

#include "../ir/ir.h"
#include "../support/support.h"

typedef enum { CG_LLVM_IR, CG_PTX } cg_format;

typedef struct {
  const char *arch;       /* a row of target/targets.def; NULL: TG_DEFAULT_ARCH */
  int opt_level;          /* 0..3 */
  const char *libdevice;  /* path; NULL: $TK_LIBDEVICE, else $CUDA_HOME or /usr/local/cuda
                             + /nvvm/libdevice/libdevice.10.bc */
} cg_options;

/* Emits every kernel of m into one module, as LLVM IR text (after optimization) or PTX,
 * appended NUL-terminated to out. libdevice is linked only when a kernel needs a math
 * function. User-facing failures (unsupported construct, unknown arch, missing libdevice)
 * are reported to d and return false.
 * PTX of several kernels is compiled one LLVM module per kernel, on up to
 * min(kernels, cores, 8) threads ($TK_CG_THREADS lowers the cap; 1: none), then merged:
 * each kernel keeps its own copy of the libdevice routines and tables not inlined, named
 * NAME$KERNEL. The text is the same whatever the threads did, and in IR order; errors
 * come in kernel order, one that several kernels hit alike (e.g. a missing libdevice)
 * once. LLVM IR stays one module holding every kernel. Calls on distinct modules may run
 * on several threads at once (one module's value ids are renumbered). */
bool cg_emit(const ir_module *m, const cg_options *o, cg_format f, su_buf *out, su_diags *d);

/* The dynamic shared memory, in bytes, that `kernel` of PTX made by cg_emit needs at
 * launch (0: none, its scratch is static), read from the "// .tk.shared KERNEL BYTES"
 * line cg_emit appends per kernel. False when ptx has no line for kernel. */
bool cg_ptx_shared_bytes(const char *ptx, const char *kernel, int *bytes);

/* ---- the launch contract of a kernel beyond its parameters (abi.c) ----
 * Hidden arguments follow the kernel's parameters: first one CUtensorMap (128 bytes, by
 * value) per tensor map, then, for a persistent kernel, the launched grid (3 x i32), then,
 * for a kernel with scratch ops (-fno-fuse), a global pointer to `scratch` bytes per
 * program of the launch (programs x scratch, 16-byte aligned, contents unspecified), then,
 * for a kernel with workspace ops, a global pointer to `workspace` bytes per program the
 * launch runs (a persistent kernel's launched grid, else the grid; 16-byte aligned), zero
 * when first allocated and kept from launch to launch: the kernel leaves it as it found
 * it (counters reset), and a launch that needs more gets a new zeroed buffer. The
 * launcher builds each map with cuTensorMapEncodeTiled from the argument values the
 * description names, allocates the scratch and the workspace, launches `threads` threads
 * per CTA, and a persistent kernel on min(programs, SMs x `persistent`) CTAs of its own. */
enum { CG_MAX_TMAPS = 8, CG_TMAP_BYTES = 128, CG_TMAP_ALIGN = 64 };

/* A dim or stride of a tensor map: parameter `param`'s value when param >= 0, else
 * `value`. */
typedef struct {
  int param;
  int64_t value;
} cg_abi_arg;

typedef struct {
  tk_dtype dtype;
  int rank;
  int base;                          /* the pointer parameter */
  cg_abi_arg dims[IR_MAX_RANK];      /* outermost first, in elements */
  cg_abi_arg strides[IR_MAX_RANK];   /* of dims 0..rank-2, in elements (the last is 1) */
  int box[IR_MAX_RANK];              /* outermost first */
  int swizzle;                       /* 0, 32, 64, 128 bytes */
} cg_tmap;

typedef struct {
  int threads;       /* per CTA */
  int persistent;    /* a persistent kernel's programs per SM (its grid); 0: not persistent */
  bool warp_spec;
  bool pdl;          /* launched as a programmatic dependent launch (`@launch(pdl = true)`) */
  int cluster;       /* CTAs per program (a cluster along x: the launch's grid x times this); 0: one */
  int ntmaps;
  cg_tmap tmaps[CG_MAX_TMAPS];
  int64_t scratch;   /* bytes of global scratch per program; 0: none */
  int64_t workspace; /* bytes of persistent workspace per launched program; 0: none */
} cg_abi;

/* How many hidden arguments follow the kernel's own parameters under abi (see above). */
int cg_abi_hidden(const cg_abi *abi);

/* The launch contract of kernel f (lowered IR) compiled for arch. */
void cg_abi_of(const ir_func *f, const char *arch, cg_abi *out);
/* The same, read back from the "// .tk.abi" and "// .tk.tmap" lines cg_emit appends to
 * PTX; a kernel with no line (PTX from elsewhere) gets threads = 0 (unknown), nothing
 * hidden. False when a line is malformed. */
bool cg_ptx_abi(const char *ptx, const char *kernel, cg_abi *out);

/* Writes NAME.h and NAME.c for --emit=c: the PTX embedded as a byte array, NAME_load /
 * NAME_unload, and one typed launch function NAME_KERNEL(gx, gy, gz, stream, params...)
 * per kernel (CUDA driver API, no tk runtime needed), compilable with -Wall -Werror.
 * basename is made into a C identifier for the prefix. Returns false (reported) when a
 * parameter type cannot be expressed. */
bool cg_emit_c(const ir_module *m, const char *ptx, const char *basename, su_buf *h_out,
               su_buf *c_out, su_diags *d);

/* --emit=c of a tuned module (tkc --tune): n configurations of the same source, module
 * ms[j] compiled (PTX ptxs[j]) with configuration text configs[j] ("BLOCK=128 warps=4"),
 * the winner for key keys[j]. NAME.h declares NAME_load/NAME_unload, NAME_config(key),
 * NAME_cparam(key, name) and one launcher NAME_KERNEL(key, gx, gy, gz, stream, params...)
 * per kernel that launches key's configuration. False (reported) when the configurations
 * do not define the same kernels with the same parameters. */
bool cg_emit_c_tuned(const ir_module *const *ms, const char *const *ptxs, const char *const *keys,
                     const char *const *configs, int n, const char *basename, su_buf *h_out,
                     su_buf *c_out, su_diags *d);

/* How many special-function (MUFU: ex2, lg2, rsqrt, rcp, sin, cos) results one element
 * of the elementwise op opc of dtype dt costs as codegen lowers it (accurate: the op is
 * marked accurate, its attr 1 where ir_op_has_accurate): exp 1, tanh 2, log 0, ... (the
 * table in math.c, counted on ptxas's output; an op that is no math, or an integer, 0).
 * The roofline's special-function ceiling reads it; it changes with the lowering. */
int cg_math_mufu_per_elem(ir_opcode opc, tk_dtype dt, bool accurate);

/* The GPU's fast f32 erfc(in * x) * 2^out (in = 0 meaning 1; the product not rounded:
 * its factors are in the constants) evaluated on the host with the same coefficients and
 * operations (a correctly rounded division and exp2f where the GPU has rcp.approx and
 * ex2.approx), for the tests that hold the approximation to its stated bound. */
float cg_erfc_model(float x, double in, int out);

/* Appends the libdevice path o selects (see cg_options) to out, NUL-terminated. */
void cg_libdevice_path(const cg_options *o, su_buf *out);

#endif
