/*
 * driver/ — runs the compiler's stages in order for tkc and libtk: source → AST → checked
 * AST → Tile IR (or .tkir text → Tile IR) → optimized IR → LLVM IR / PTX.
 *
 * Contract:
 *  - Every stage reports user errors to the diagnostics and returns false/NULL; the caller
 *    prints or renders them. No stage exits the process.
 *  - A source whose name ends in ".tkir" is read as textual IR; anything else as .tk.
 * Prefix: drv_.
 */
#ifndef TK_DRIVER_H
#define TK_DRIVER_H

#include "../ir/ir.h"
#include "../parser/ast.h"
#include "../sema/sema.h"

typedef struct {
  const sema_define *defines;
  int ndefines;
  int opt_level;            /* 0..3 */
  const char *arch;         /* sm_80, sm_90, sm_90a (default) */
  bool verify_each;         /* verify the IR after every pass */
  bool print_after_all;
  const char *print_after;  /* comma-separated pass names, or NULL */
  const char *only_passes;  /* comma-separated: run exactly these passes, or NULL */
  bool time_passes;
  FILE *log;                /* where --print-after / --time-passes write (stderr if NULL) */
} drv_options;

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
 * no arch): tiling and the GPU-level lowering, per its kernels' parameter facts. The
 * runtime calls it on a fresh copy per specialization (ir_func_clone). */
bool drv_lower(ir_module *m, const char *arch, const drv_options *o, su_diags *d);

/* Writes the roofline report of every kernel of m (after passes) for target arch (sm_80,
 * sm_90, sm_90a; NULL: sm_90a): per-program bytes and FLOPs, the bound they imply on the
 * target's measured ceilings, and the predicted time for grid[0] x grid[1] x grid[2]
 * programs. See roofline.c for the counting rules. */
void drv_roofline(FILE *out, const ir_module *m, const char *arch, const unsigned grid[3]);

#endif
