/* The stage sequence shared by tkc and libtk. */
#include "driver.h"

#include <string.h>

#include "../passes/passes.h"

void drv_options_init(drv_options *o) {
  memset(o, 0, sizeof *o);
  o->opt_level = TG_DEFAULT_OPT_LEVEL;
  o->arch = TG_DEFAULT_ARCH;
#ifndef NDEBUG
  o->verify_each = true; /* debug builds check the IR after every pass */
#endif
}

bool drv_is_ir_source(const su_source *src) {
  size_t n = strlen(src->name);
  return n >= 5 && strcmp(src->name + n - 5, ".tkir") == 0;
}

ast_file *drv_parse(su_arena *a, const su_source *src, su_map *names, su_diags *d) {
  return ast_parse(a, src, d, names);
}

ir_module *drv_frontend(su_arena *a, const su_source *src, const drv_options *o, su_diags *d) {
  if (drv_is_ir_source(src)) {
    ir_module *m = ir_parse(a, src, d);
    if (!m || d->nerrors) return NULL;
    m->src = src;
    return ir_verify(m, d) ? m : NULL;
  }
  su_map *names = su_map_new(a);
  int nerr0 = d->nerrors;
  ast_file *f = drv_parse(a, src, names, d);
  if (!f->checkable) return NULL;
  bool parsed = d->nerrors == nerr0; /* else only habits, reported: check for the rest */
  ir_module *m = ir_module_new(a, src->name);
  m->src = src;
  sema_options so = {.defines = o ? o->defines : NULL, .ndefines = o ? o->ndefines : 0,
                     .budget = o ? o->budget : 0, .dot_precision = o ? o->dot_precision : 0,
                     .accurate_math = o && o->accurate_math};
  if (!sema_check(a, f, m, &so, d) || !parsed) return NULL;
  sema_lower(f, m);
  /* Lowering a checked file must give valid IR; anything else is our bug, not the user's,
   * reported as such (the verifier's findings as notes) rather than by aborting. */
  su_diags vd;
  su_diags_init(&vd, a, NULL);
  if (!ir_verify(m, &vd)) {
    su_buf why = {0};
    su_diags_render(&vd, &why);
    su_loc loc = {src, UINT32_MAX, 0, 0, 0};
    su_error(d, loc, "internal compiler error: lowering produced invalid IR (a compiler bug; "
             "please report it with the input):\n%s", su_buf_str(&why));
    su_buf_free(&why);
    return NULL;
  }
  return m;
}

static pass_options pass_opts(const drv_options *o) {
  pass_options po = {
      .opt_level = o->opt_level,
      .verify_each = o->verify_each,
      .print_after_all = o->print_after_all,
      .print_after = o->print_after,
      .only = o->only_passes,
      .time_passes = o->time_passes,
      .no_fuse = o->no_fuse,
      .fuse_keep = o->fuse_keep,
      .log = o->log,
      .fp_contract = o->fp_contract,
  };
  return po;
}

bool drv_optimize(ir_module *m, const drv_options *o, su_diags *d) {
  m->arch = o->arch;
  pass_options po = pass_opts(o);
  po.remarks = o->remark_missed || o->remark_done ? d : NULL;
  po.remark_passes = o->remark_missed;
  po.remark_done_passes = o->remark_done;
  return pass_run(m, &po, d);
}

bool drv_lower(ir_module *m, const char *arch, const drv_options *o, su_diags *d) {
  m->arch = arch;
  pass_options po = pass_opts(o);
  po.target_only = true;
  po.only = NULL;
  return pass_run(m, &po, d);
}

ir_module *drv_compile(su_arena *a, const su_source *src, const drv_options *o, su_diags *d) {
  ir_module *m = drv_frontend(a, src, o, d);
  if (!m || d->nerrors || !drv_optimize(m, o, d) || d->nerrors) return NULL;
  return m;
}

bool drv_codegen(const ir_module *m, const drv_options *o, cg_format f, su_buf *out, su_diags *d) {
  cg_options co = {.arch = o->arch, .opt_level = o->opt_level, .libdevice = NULL};
  return cg_emit(m, &co, f, out, d);
}
