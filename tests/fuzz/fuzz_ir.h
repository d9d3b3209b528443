/* The pipeline the .tkir fuzz targets share: parse, verify, optimize, lower for the
 * target (each pass verified after), and, with codegen, emit PTX. A diagnostic that says
 * the compiler is at fault (one that starts "internal compiler error" or "the IR is
 * invalid after pass") traps, so that libFuzzer keeps the input. Header-only: each target is one translation unit. */
#ifndef TK_FUZZ_IR_H
#define TK_FUZZ_IR_H

#include <stdio.h>
#include <string.h>

#include "../../driver/driver.h"

static inline void fuzz_ir_check(const su_diags *d) {
  /* by the message's start: the rest of a message may quote the input */
  for (const su_diag *g = d->first; g; g = g->next)
    if (!strncmp(g->msg, "internal compiler error", 23) ||
        !strncmp(g->msg, "the IR is invalid after pass", 28)) {
      su_buf b = {0};
      su_diags_render(d, &b);
      fprintf(stderr, "%s", su_buf_str(&b));
      __builtin_trap();
    }
}

static inline void fuzz_ir_run(const uint8_t *data, size_t size, bool codegen) {
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  d.max_errors = 50;
  su_source *src = su_source_new(a, "fuzz.tkir", (const char *)data, size);
  drv_options o;
  drv_options_init(&o);
  o.verify_each = true;
  o.opt_level = 3;
  o.arch = NULL;
  ir_module *m = drv_frontend(a, src, &o, &d);
  if (m && !d.nerrors && drv_optimize(m, &o, &d) && !d.nerrors &&
      drv_lower(m, "sm_90a", &o, &d) && !d.nerrors && codegen) {
    su_buf ptx = {0};
    o.arch = "sm_90a";
    drv_codegen(m, &o, CG_PTX, &ptx, &d);
    su_buf_free(&ptx);
  }
  fuzz_ir_check(&d);
  su_arena_free(a);
}

#endif
