/* Helpers the passes share. Constant arithmetic: integers are kept in int64_t in a
 * canonical form per dtype so that two equal constants have equal bits (CSE compares
 * bits) and folding can use plain 64-bit arithmetic followed by one wrap. Then the
 * target's features, and copying a value's pure computation (a slice). */
#include "pass_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pass_is_const(const ir_value *v) { return v->def && v->def->opc == IR_CONST; }

int64_t pass_int_wrap(tk_dtype d, int64_t v) {
  int bits = ir_dtype_bits(d);
  if (bits >= 64) return v;
  uint64_t mask = (UINT64_C(1) << bits) - 1;
  uint64_t u = (uint64_t)v & mask;
  if (ir_dtype_is_signed(d) && (u >> (bits - 1)) & 1) u |= ~mask;
  /* Converting an out-of-range uint64_t is implementation-defined in C11; do it by hand. */
  return u <= INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

double pass_float_round(tk_dtype d, double x) { return ir_dtype_round(d, x); }

int64_t pass_const_int(const ir_value *v) {
  SU_ASSERT(pass_is_const(v));
  return pass_int_wrap(ir_type_elem(v->type)->dtype, v->def->cval.i);
}

double pass_const_float(const ir_value *v) {
  SU_ASSERT(pass_is_const(v));
  return pass_float_round(ir_type_elem(v->type)->dtype, v->def->cval.f);
}

bool pass_const_eq(const ir_value *v, double k) {
  if (!pass_is_const(v)) return false;
  tk_dtype d = ir_type_elem(v->type)->dtype;
  if (ir_dtype_is_float(d)) {
    double x = pass_const_float(v);
    return x == k && signbit(x) == signbit(k);
  }
  if (!ir_dtype_is_int(d)) return false;
  return pass_const_int(v) == pass_int_wrap(d, (int64_t)k);
}

bool pass_const_all_ones(const ir_value *v) {
  if (!pass_is_const(v)) return false;
  tk_dtype d = ir_type_elem(v->type)->dtype;
  return ir_dtype_is_int(d) && pass_const_int(v) == pass_int_wrap(d, -1);
}

static ir_builder builder_before(ir_module *m, ir_op *op) {
  ir_builder b = {m, op->parent, op, op->loc};
  return b;
}

ir_value *pass_const_int_before(ir_module *m, ir_op *op, const ir_type *t, int64_t v) {
  ir_builder b = builder_before(m, op);
  return ir_const_int(&b, t, pass_int_wrap(ir_type_elem(t)->dtype, v));
}

ir_value *pass_const_float_before(ir_module *m, ir_op *op, const ir_type *t, double v) {
  ir_builder b = builder_before(m, op);
  return ir_const_float(&b, t, pass_float_round(ir_type_elem(t)->dtype, v));
}

void pass_replace_op(ir_func *f, ir_op *op, ir_value *v) {
  SU_ASSERT(op->nresults == 1 && op->results[0] != v);
  ir_replace_all_uses(f, op->results[0], v);
  ir_op_erase(op);
}

bool pass_has(const ir_module *m, pass_feature f) {
  static const unsigned bits[] = {
      [PASS_MMA] = TG_MMA_SYNC, [PASS_CP_ASYNC] = TG_CP_ASYNC, [PASS_WGMMA] = TG_WGMMA,
      [PASS_TMA] = TG_TMA};
  return tg_has(m->arch, bits[f]);
}

typedef struct {
  ir_opcode opc;
  ir_op **out;
  int n, cap;
} collector;

static void collect_one(ir_op *op, void *arg) {
  collector *c = arg;
  if (op->opc == c->opc && c->n < c->cap) c->out[c->n++] = op;
}

int pass_collect(ir_block *blk, ir_opcode opc, ir_op **out, int cap) {
  collector c = {opc, out, 0, cap};
  ir_walk(blk, collect_one, &c);
  return c.n;
}

ir_value *pass_spread(ir_module *m, ir_builder *b, ir_value *v, const ir_type *t) {
  if (v->type->kind != IR_TILE) return ir_build1(b, IR_SPLAT, t, 1, &v);
  int col[2] = {t->shape[0], 1};
  const ir_type *ct = ir_type_tile(m, v->type->elem, 2, col);
  if (t->layout) ct = ir_type_with_layout(m, ct, t->layout); /* after tiling: t's */
  ir_op *e = ir_build(b, IR_EXPAND_DIMS, 1, &v, 1, &ct);
  e->attr2 = 1;
  return ir_build1(b, IR_BROADCAST, t, 1, &e->results[0]);
}

bool pass_op_within(const ir_op *op, const ir_block *blk) {
  for (const ir_block *b = op->parent; b; b = b->parent ? b->parent->parent : NULL)
    if (b == blk) return true;
  return false;
}

static bool varies_at(const ir_func *f, const ir_value *v, int depth) {
  if (!v->def) return v->owner != f->body;
  if (depth > 32) return true;
  if (v->def->opc == IR_PROGRAM_ID || v->def->nregions) return true;
  for (int i = 0; i < v->def->noperands; i++)
    if (varies_at(f, v->def->operands[i], depth + 1)) return true;
  return false;
}

bool pass_varies(const ir_func *f, const ir_value *v) { return varies_at(f, v, 0); }

bool pass_loop_uniform(const ir_func *f, const ir_op *L) {
  if (L->opc != IR_FOR || L->noperands < 3) return false;
  for (int i = 0; i < 3; i++)
    if (pass_varies(f, L->operands[i])) return false;
  return true;
}

static void find_workspace(ir_op *op, void *arg) { *(bool *)arg |= op->opc == IR_WORKSPACE; }

bool pass_has_workspace(ir_func *f) {
  bool found = false;
  ir_walk(f->body, find_workspace, &found);
  return found;
}

static bool defined_within(const ir_value *v, const ir_block *region) {
  if (v->def) return pass_op_within(v->def, region);
  for (const ir_block *b = v->owner; b; b = b->parent ? b->parent->parent : NULL)
    if (b == region) return true;
  return false;
}

ir_value *pass_clone_slice(ir_module *m, ir_builder *b, const ir_block *region, ir_value *v,
                           ir_vmap *map) {
  ir_value *got = ir_vmap_get(map, v);
  if (got != v || !defined_within(v, region)) return got;
  ir_op *op = v->def;
  if (!op || !(ir_op_info(op->opc)->traits & IR_PURE) || op->nregions) return NULL;
  for (int i = 0; i < op->noperands; i++)
    if (!pass_clone_slice(m, b, region, op->operands[i], map)) return NULL;
  ir_op *c = ir_op_clone(m, op, map);
  ir_block_insert_before(b->before ? b->before->parent : b->block, c, b->before);
  return ir_vmap_get(map, v);
}

static bool names_pass(const char *list, const char *pass) {
  size_t n = strlen(pass);
  for (const char *s = list; *s;) {
    size_t len = strcspn(s, ",");
    if ((len == n && !memcmp(s, pass, n)) || (len == 3 && !memcmp(s, "all", 3))) return true;
    s += len;
    if (*s == ',') s++;
  }
  return false;
}

static void remark(const ir_module *m, const char *list, const char *flag, const char *pass,
                   ir_loc loc, const char *fmt, va_list ap) {
  if (!m->remarks || !list || !names_pass(list, pass)) return;
  /* the byte offset of line:col, so that the remark shows the source line and a caret */
  su_loc at = {m->src, UINT32_MAX, 0, loc.line, loc.col};
  if (m->src && loc.line > 0) {
    uint32_t line = 1;
    size_t i = 0;
    while (i < m->src->len && line < loc.line)
      if (m->src->text[i++] == '\n') line++;
    if (line == loc.line && loc.col > 0 && i + loc.col - 1 <= m->src->len) at.off = (uint32_t)(i + loc.col - 1);
  }
  char msg[768];
  vsnprintf(msg, sizeof msg, fmt, ap);
  su_remark(m->remarks, at, "%s: %s [%s=%s]", pass, msg, flag, pass);
}

void pass_remark_missed(const ir_module *m, const char *pass, ir_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  remark(m, m->remark_passes, "-Rpass-missed", pass, loc, fmt, ap);
  va_end(ap);
}

void pass_remark(const ir_module *m, const char *pass, ir_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  remark(m, m->remark_done_passes, "-Rpass", pass, loc, fmt, ap);
  va_end(ap);
}

int pass_param_index(const ir_func *f, const ir_value *v) {
  for (int i = 0; !v->def && i < f->body->nargs; i++)
    if (f->body->args[i] == v) return i;
  return -1;
}

int pass_count_uses(const ir_block *blk, const ir_value *v) {
  int n = 0;
  for (const ir_op *op = blk->first; op; op = op->next) {
    for (int i = 0; i < op->noperands; i++) n += op->operands[i] == v;
    for (int r = 0; r < op->nregions; r++) n += pass_count_uses(op->regions[r], v);
  }
  return n;
}

int64_t pass_smem_bytes(const ir_func *f) {
  int64_t n = 0;
  for (const ir_op *op = f->body->first; op; op = op->next)
    if (op->opc == IR_SMEM_ALLOC || op->opc == IR_MBAR_ALLOC) n += ir_smem_buffer_bytes(op->results[0]->type);
  return n + IR_SMEM_ALIGN; /* the area's own alignment */
}

const ir_type *pass_slots_type(ir_module *m, const ir_type *elem, int nslots, int rows, int cols, int swizzle) {
  ir_layout sl;
  memset(&sl, 0, sizeof sl);
  sl.kind = IR_LAYOUT_SHARED;
  sl.rank = 2;
  sl.order[0] = 1;
  sl.order[1] = 0;
  sl.swizzle = swizzle;
  int shape[3] = {nslots, rows, cols};
  return ir_type_smem(m, elem, 3, shape, ir_layout_intern(m, &sl));
}
