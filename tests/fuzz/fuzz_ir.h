/* The pipeline the .tkir fuzz targets share: parse, verify, optimize, lower for the
 * target (each pass verified after), and, with codegen, emit PTX. A diagnostic that says
 * the compiler is at fault ("compiler bug", "internal compiler error") traps, so that
 * libFuzzer keeps the input. Header-only: each target is one translation unit. */
#ifndef TK_FUZZ_IR_H
#define TK_FUZZ_IR_H

#include <stdio.h>
#include <string.h>

#include "../../driver/driver.h"

static inline void fuzz_ir_check(const su_diags *d) {
  su_buf b = {0};
  su_diags_render(d, &b);
  const char *t = su_buf_str(&b);
  if (strstr(t, "compiler bug") || strstr(t, "internal compiler error")) {
    fprintf(stderr, "%s", t);
    __builtin_trap();
  }
  su_buf_free(&b);
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
