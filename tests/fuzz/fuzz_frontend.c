/* libFuzzer target: any bytes through lexer → parser → checker → lowering → verifier.
 * A crash, a sanitizer report or an internal error (abort) is a bug. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../ir/ir.h"
#include "../../parser/ast.h"
#include "../../sema/sema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  d.max_errors = 50;
  su_source *src = su_source_new(a, "fuzz.tk", (const char *)data, size);
  su_map *names = su_map_new(a);
  ast_file *f = ast_parse(a, src, &d, names);
  if (!d.nerrors) {
    ir_module *m = ir_module_new(a, src->name);
    sema_options so = {0};
    if (sema_check(a, f, m, &so, &d)) {
      sema_lower(f, m);
      su_diags vd;
      su_diags_init(&vd, a, stderr);
      if (!ir_verify(m, &vd)) su_fatal("lowering produced invalid IR");
    }
  }
  /* Rendering exercises the caret printer on whatever locations were reported. */
  su_buf b = {0};
  su_diags_render(&d, &b);
  su_buf_free(&b);
  su_arena_free(a);
  return 0;
}
