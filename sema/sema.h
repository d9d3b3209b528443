/*
 * sema/ — the checker and the lowering of a checked AST to Tile IR.
 *
 * Contract:
 *  - sema_check resolves names, infers the type and tile shape of every expression,
 *    checks broadcasting, masks, pointer arithmetic, reduction axes and dot shapes,
 *    evaluates compile-time expressions and binds each kernel's compile-time parameters
 *    (from -D style defines, else from their defaults). It reports every error it finds
 *    (located, with notes) and returns false if there was any. Results are written into
 *    the AST's sema_* fields; helper calls and static_range loops are expanded into
 *    per-instance clones that sema_lower follows.
 *  - sema_lower turns a file that sema_check accepted into an ir_module: one ir_func per
 *    kernel, helpers inlined, compile-time loops unrolled, constants substituted,
 *    broadcasts/splats/casts explicit. It is an internal error to lower a file that
 *    failed checking.
 *  - Defines that name no compile-time parameter of any kernel are reported as errors
 *    (location-less), so typos in -D are not silently ignored.
 * Prefix: sema_.
 */
#ifndef TK_SEMA_H
#define TK_SEMA_H

#include "../ir/ir.h"
#include "../parser/ast.h"

typedef struct {
  const char *name;
  const char *value; /* text of a literal: integer, float, true/false */
} sema_define;

typedef struct {
  const sema_define *defines;
  int ndefines;
  /* The compile-time work a file may ask for: helper calls inlined plus static_range
   * iterations unrolled, over the whole file (0: SEMA_DEFAULT_BUDGET). Past it, a located
   * error naming the call chain, instead of a compile that exhausts the host. */
  int64_t budget;
  /* The numerics a call does not name (docs/language.md, "Precision"): f32 dot's input
   * precision (ir_dot_precision; 0 is tf32), and accurate f32 sin, cos, exp, exp2 and
   * sigmoid on the GPU (tkc -fmath=accurate). */
  int dot_precision;
  bool accurate_math;
} sema_options;

enum { SEMA_DEFAULT_BUDGET = 100000 };

/* Checks f; the module m provides type interning (sema types are ir types). */
bool sema_check(su_arena *a, ast_file *f, ir_module *m, const sema_options *opt, su_diags *d);
/* Lowers a checked file into m (which sema_check used). */
void sema_lower(ast_file *f, ir_module *m);

#endif
