/*
 * driver/ — runs the compiler's stages in order for tkc and libtk: source → AST → checked
 * AST → Tile IR (or .tkir text → Tile IR) → optimized IR → specialized IR → LLVM IR / PTX.
 * It is the one compile path: tkc, libtk's JIT and the test harnesses call it, and none
 * of them calls the stages (sema, passes, codegen) on its own.
 *
 * Contract:
 *  - Every stage reports user errors to the diagnostics and returns false/NULL; the caller
 *    prints or renders them. No stage exits the process.
 *  - A source whose name ends in ".tkir" is read as textual IR; anything else as .tk.
 *  - Specialization (parameter facts: ir_func.param_div) changes what the target part of
 *    the pipeline (drv_lower) and codegen may assume, never what the target-independent
 *    part does: it is applied before drv_lower (or a drv_optimize with an arch).
 * Prefix: drv_.
 */
#ifndef TK_DRIVER_H
#define TK_DRIVER_H

#include "../codegen/codegen.h"
#include "../ir/ir.h"
#include "../parser/ast.h"
#include "../sema/sema.h"

typedef struct {
  const sema_define *defines;
  int ndefines;
  int opt_level;            /* 0..3 */
  const char *arch;         /* the target, a row of target/targets.def; NULL: none (the
                               passes stay target-independent; codegen assumes
                               TG_DEFAULT_ARCH) */
  bool verify_each;         /* verify the IR after every pass */
  bool print_after_all;
  const char *print_after;  /* comma-separated pass names, or NULL */
  const char *only_passes;  /* comma-separated: run exactly these passes, or NULL */
  bool time_passes;
  FILE *log;                /* where --print-after / --time-passes write (stderr if NULL) */
  int64_t budget;           /* sema_options.budget: compile-time work (0: the default) */
  /* Numerics (docs/language.md, "Precision"): f32 dot's input precision where a call names
   * none (ir_dot_precision; 0 is tf32), accurate f32 sin/cos/exp/exp2 on the GPU, and
   * contraction of a * b + c into fma (off by default). */
  int dot_precision;
  bool accurate_math;
  bool fp_contract;
  const char *remark_missed; /* -Rpass-missed=LIST: passes (comma-separated, or "all")
                               that report to drv_optimize's diagnostics, as remarks, what
                               they leave unchanged; NULL: none */
  bool no_fuse;             /* -fno-fuse: materialize every op's result (the unfused
                               baseline) instead of fusing (pass_options.no_fuse) */
  int fuse_keep;            /* -ffuse-keep=: an ir_keep (0: fuse's cost model decides) */
  const char *remark_done;  /* -Rpass=LIST: passes that also say what they did (fuse's keep
                               choice and its estimates); NULL: none */
} drv_options;

/* Sets o to the defaults (target.h): no defines, TG_DEFAULT_OPT_LEVEL, TG_DEFAULT_ARCH,
 * no pass tracing, the IR verified after every pass in debug builds (NDEBUG unset). */
void drv_options_init(drv_options *o);
/* True if the source is textual IR (by name). */
bool drv_is_ir_source(const su_source *src);
/* Parses src (.tk) into an AST; NULL only if nothing could be parsed is never the case:
 * returns the tree and leaves errors in d. */
ast_file *drv_parse(su_arena *a, const su_source *src, su_map *names, su_diags *d);
/* Parses and checks a .tk source, then lowers it: the unoptimized module, or NULL on any
 * error. For a .tkir source, parses and verifies the IR instead. */
ir_module *drv_frontend(su_arena *a, const su_source *src, const drv_options *o, su_diags *d);
/* Runs the pass pipeline (per o) over m for target o->arch: with an arch, the whole
 * pipeline down to the GPU level; with none, the target-independent part (what the
 * interpreter runs, and what drv_lower takes). False if a pass left invalid IR or an
 * option named an unknown pass. */
bool drv_optimize(ir_module *m, const drv_options *o, su_diags *d);
/* Runs the target part of the pipeline for arch over m (optimized by drv_optimize with
 * no arch): tiling and the GPU-level lowering, per its kernels' parameter facts.
 * drv_variant calls it on a fresh copy per specialization (ir_func_clone). */
bool drv_lower(ir_module *m, const char *arch, const drv_options *o, su_diags *d);
/* drv_frontend then drv_optimize: the optimized module, or NULL on any error. */
ir_module *drv_compile(su_arena *a, const su_source *src, const drv_options *o, su_diags *d);
/* Generates code for every kernel of m (optimized, specialized as wanted) for o's arch and
 * opt level: LLVM IR or PTX appended to out, NUL-terminated (see cg_emit). False after
 * reporting to d (an unknown arch, a construct codegen cannot lower, no libdevice). */
bool drv_codegen(const ir_module *m, const drv_options *o, cg_format f, su_buf *out, su_diags *d);

/* ---- specialization (Triton's, on divisibility) ---------------------------------------- */

/* tkc --specialize=LIST: LIST is "all" (every integer and pointer parameter of every
 * kernel is a multiple of DRV_SPEC_DIV, every f32 and f64 one positive and finite: the
 * facts of the JIT's load-time variant) or NAME[:D|:pos],... (each parameter called NAME,
 * in every kernel having one: an integer or pointer a multiple of D, a power of two,
 * default DRV_SPEC_DIV, for a pointer its address in bytes; an f32 or f64, with no
 * suffix or ":pos", positive and finite). Sets m's parameter facts; false with the reason
 * in why (m then partly specialized) for an item with no name, a suffix that is neither a
 * power of two nor "pos", or a name no parameter of a fitting type has. */
bool drv_specialize_list(ir_module *m, const char *list, su_arena *a, su_buf *why);
/* The JIT's variant for a signature: a shallow copy of m (sharing its bodies, allocated
 * in a) holding only `only` (NULL: every kernel), each kernel's specializable parameter
 * i < 64 given its fact when bit i of bits is set (an integer or pointer a multiple of
 * DRV_SPEC_DIV, a float positive), the others keeping their facts. What libtk generates today: m as optimized
 * without a target, not lowered (see drv_variant). */
ir_module *drv_specialize(su_arena *a, const ir_module *m, const ir_func *only, uint64_t bits);
/* The same variant made ready for the target: deep copies (ir_func_clone, in m's arena)
 * with those facts, lowered for o->arch (drv_lower: tiling, and the tensor-core paths
 * whose TMA and cp.async choices read the facts). m itself is left as it was (what the
 * interpreter runs). NULL after reporting to d when a pass leaves invalid IR. The JIT is
 * to call it once the runtime honours the launch contract such code may need (hidden
 * tensor maps, a persistent grid, producer warps: codegen.h, cg_abi); until then its
 * variants are drv_specialize's. */
ir_module *drv_variant(ir_module *m, const ir_func *only, uint64_t bits, const drv_options *o,
                       su_diags *d);
enum { DRV_SPEC_DIV = 16 };

/* ---- the roofline (roofline.c, docs/roofline.md) -------------------------------------- */

/* A launch argument as the roofline reads it: an integer parameter's value, when known. */
typedef struct {
  bool known;
  int64_t value;
} drv_rl_value;

/* In tk_bound's order (runtime/api.c checks it): a new bound is appended. */
typedef enum {
  DRV_BOUND_HBM, DRV_BOUND_L2, DRV_BOUND_F32, DRV_BOUND_TENSOR, DRV_BOUND_LAUNCH, DRV_BOUND_SFU
} drv_bound;

/* A kernel's roofline for one launch; bytes and FLOPs of the whole grid, times in seconds. */
typedef struct {
  double hbm_bytes, l2_bytes, flops, tc_flops;
  double mufu;             /* special-function (MUFU) results: ex2, rcp, sin, ... */
  double xprog_bytes;      /* of l2_bytes: what other programs read too (reuse across programs) */
  double reread_footprint; /* what the programs resident at once re-read (bytes) */
  double reread_hit;       /* the share of re-reads charged to L2 (1: it fits; else L2 / it) */
  double t_hbm, t_l2, t_f32, t_tensor, t_sfu, t_launch; /* each ceiling's time for the work */
  double predicted_s;      /* the largest of them */
  drv_bound bound;         /* which one */
  bool unknown_trips;      /* a loop's trip count did not follow: counted once */
} drv_rl_result;

/* The roofline of kernel f (the IR after the target-independent passes) launched on
 * grid[0] x grid[1] x grid[2] programs with the integer arguments params (one per
 * parameter, NULL: none known) on target t, a row with ceilings (tg_has_ceilings; the
 * runtime passes tg_on_device's, with the card's own). See roofline.c for the counting
 * rules. */
void drv_roofline_kernel(const ir_func *f, const tg_arch *t, const unsigned grid[3],
                         const drv_rl_value *params, drv_rl_result *out);
/* "memory (HBM bandwidth)", "compute (tensor cores)", "compute (special functions)",
 * "overhead (the launch)", ... */
const char *drv_bound_name(drv_bound b);
/* Reads tkc's --args list "NAME=INTEGER,..." into out (one per parameter of f) for the
 * parameters of f so named, setting *used when one is; false with the reason in why for a
 * malformed item or a name f has on a parameter that is not an integer. */
bool drv_roofline_args(const ir_func *f, const char *list, drv_rl_value *out, bool *used,
                       su_buf *why);
/* Writes the roofline report of every kernel of m on target t (a row with ceilings, or
 * tg_on_device's copy with a card's) and grid: bytes to HBM and L2, FLOPs,
 * special-function results, the bound, the predicted time and the fraction of each
 * ceiling used then. params[i]: kernel i's arguments (drv_roofline_args), or params NULL. */
void drv_roofline(FILE *out, const ir_module *m, const tg_arch *t, const unsigned grid[3],
                  const drv_rl_value *const *params);

/* ---- resources (resources.c; docs/language.md, "Resources") ---------------------------- */

/* What one kernel of a PTX module costs on its target. */
typedef struct {
  const char *kernel;
  int regs;                      /* per thread */
  int spill_stores, spill_loads; /* bytes */
  int stack;                     /* bytes of stack frame per thread */
  int smem_static, smem_dynamic; /* bytes per block */
  int threads;                   /* per block */
  int blocks_sm;                 /* resident blocks per SM these allow */
  double occupancy;              /* resident warps over the SM's most, 0..1 */
  const char *limiter;           /* what bounds blocks_sm: "registers", "shared memory",
                                    "threads", "blocks per SM" */
} drv_resources;

/* Spills past this many bytes (ptxas's spill stores plus spill loads) are a -Wspill
 * warning by default (-Wspill=N sets another): a few words kept in local memory around a
 * loop (a pointer, a bound) sit in L1 and are tens of bytes, while tiles that overflow the
 * register file spill hundreds (the unspecialized samples/matmul.tk: 140 + 140). */
enum { DRV_SPILL_WARN_BYTES = 64 };

/* The ptxas to run: $TK_PTXAS, else $CUDA_HOME/bin/ptxas, else /usr/local/cuda/bin/ptxas;
 * NULL when it is not there (or not executable). */
const char *drv_ptxas_path(void);
/* Runs ptxas -v for arch on ptx (tkc's or libtk's PTX, with its .tk.shared and .tk.abi
 * notes) and returns one entry per kernel in *out (*n of them, in a): ptxas's registers,
 * spills, stack and static shared memory, the notes' dynamic shared memory and threads,
 * and the occupancy (drv_occupancy). False with the reason in why when there is no ptxas
 * or it fails. */
bool drv_ptxas_resources(su_arena *a, const char *ptx, const char *arch, drv_resources **out, int *n,
                         su_buf *why);
/* Fills r's blocks_sm, occupancy and limiter from its regs, shared memory and threads and
 * the SM of arch (target/targets.def; the granularities of CUDA's occupancy calculator). */
void drv_occupancy(const char *arch, drv_resources *r);

#endif
