/* Materialization (-fno-fuse): the unfused baseline of design §5. Every op that computes
 * a tile of data writes its result to global scratch memory, and every consumer reads it
 * back, as a framework without a compiler runs one kernel per op with each result in a
 * tensor. The fusion pass (fuse.c) is what this takes away; the benchmark's fused /
 * -fno-fuse ratio is what fusion buys, measured (docs/passes.md, "materialize").
 *
 * What is materialized: the tile result (no layout yet, elements not pointers) of every
 * op that depends on memory — loads, atomics, elementwise ops, reductions along an axis,
 * scans, dot, join and gather — once something other than a store uses it. Index and
 * mask arithmetic (what depends only on arange, the program id and the parameters) stays
 * in registers: a framework has no such tensors. Views (splat, broadcast, expand_dims,
 * reshape, trans, slice) are not copies in a framework either and are left as they are;
 * so are scalars (a reduction to a scalar) and the values a loop carries. A store of a
 * value writes it where the program wants it and uses the value in registers: that is
 * the framework's last op writing its output.
 *
 * The scratch: each materialized value gets a 16-byte aligned part of one per-program
 * region of S bytes (S the sum of the parts, rounded up to 16); program p (linear, x
 * fastest) owns bytes [p S, (p + 1) S) of the launch's buffer, which the launcher
 * allocates (scratch op, docs/ir.md). i1 tiles are stored as i8. A value defined in a
 * loop reuses its part every iteration.
 *
 * Order: the threads of a program that store a tile are not those that read it back in
 * another layout, so a barrier follows each scratch store, and one precedes it inside a
 * loop (the previous iteration's reads of the part must be done). The interpreter runs a
 * program's tile ops one at a time, where a barrier is a no-op. Results are those of the
 * fused kernel bit for bit: the same ops on the same values, only stored and reloaded. */
#include "pass_util.h"

typedef struct {
  ir_module *m;
  ir_func *f;
  su_arena *a;
  bool *data;    /* value id -> depends on memory */
  int64_t *off;  /* value id -> byte offset of its part + 1 (0: not materialized) */
  int64_t bytes; /* S so far */
  ir_value **vals; /* the materialized values, in order */
  int nvals;
  ir_value *lin; /* the linear program id, i64, at the top of the kernel */
} mat;

/* ---- which values ------------------------------------------------------------------- */

static void mark_block(mat *s, ir_block *b);

static void mark_op(mat *s, ir_op *op) {
  bool d = op->opc == IR_LOAD || op->opc == IR_ATOMIC || op->opc == IR_ATOMIC_CAS;
  for (int i = 0; i < op->noperands; i++) d |= s->data[op->operands[i]->id];
  for (int r = 0; r < op->nregions; r++) {
    ir_block *rb = op->regions[r];
    /* twice: a carried value becomes data when the body makes it so */
    for (int pass = 0; pass < 2; pass++) {
      for (int k = 1; op->opc == IR_FOR && k < rb->nargs; k++) {
        bool ad = s->data[op->operands[2 + k]->id];
        if (rb->last && rb->last->opc == IR_YIELD) ad |= s->data[rb->last->operands[k - 1]->id];
        s->data[rb->args[k]->id] |= ad;
      }
      mark_block(s, rb);
    }
    if (rb->last && rb->last->opc == IR_YIELD)
      for (int i = 0; i < rb->last->noperands; i++) d |= s->data[rb->last->operands[i]->id];
  }
  for (int i = 0; i < op->nresults; i++) s->data[op->results[i]->id] = d;
}

static void mark_block(mat *s, ir_block *b) {
  for (ir_op *op = b->first; op; op = op->next) mark_op(s, op);
}

/* An op whose result a framework would hold in a tensor of its own. */
static bool computes(const ir_op *op) {
  switch (op->opc) {
  case IR_LOAD: case IR_ATOMIC: case IR_ATOMIC_CAS: case IR_REDUCE: case IR_ARGREDUCE:
  case IR_SCAN: case IR_DOT: case IR_JOIN: case IR_GATHER:
    return true;
  case IR_ADDPTR:
    return false;
  default:
    return (ir_op_info(op->opc)->traits & IR_ELEM) != 0;
  }
}

static bool storable(const ir_value *v) {
  const ir_type *t = v->type;
  return t->kind == IR_TILE && !t->layout && t->elem->kind == IR_SCALAR;
}

/* The dtype a value is stored as. */
static tk_dtype stored_dtype(const ir_type *t) {
  return t->dtype == TK_I1 ? TK_I8 : t->dtype;
}

typedef struct {
  mat *s;
  bool *used; /* value id -> has a use other than a store's value */
} use_scan;

static void scan_uses(ir_op *op, void *ctx) {
  use_scan *u = ctx;
  for (int k = 0; k < op->noperands; k++)
    if (!(op->opc == IR_STORE && k == 1)) u->used[op->operands[k]->id] = true;
}

static void choose(ir_op *op, void *ctx) {
  use_scan *u = ctx;
  mat *s = u->s;
  if (op->nresults != 1 || op->nregions || !computes(op)) return;
  ir_value *v = op->results[0];
  if (!storable(v) || !s->data[v->id] || !u->used[v->id]) return;
  int64_t n = ir_type_numel(v->type) * ir_dtype_bytes(stored_dtype(v->type));
  s->off[v->id] = s->bytes + 1;
  s->bytes += (n + 15) / 16 * 16;
  s->vals[s->nvals++] = v;
}

/* ---- rewriting ------------------------------------------------------------------------ */

/* (pid.z * np.y + pid.y) * np.x + pid.x as i64, at the top of the kernel. */
static ir_value *linear_pid(mat *s) {
  ir_builder b = {s->m, s->f->body, s->f->body->first, s->f->loc};
  const ir_type *i32 = ir_type_scalar(s->m, TK_I32), *i64 = ir_type_scalar(s->m, TK_I64);
  ir_value *lin = NULL;
  for (int axis = 2; axis >= 0; axis--) {
    ir_op *pid = ir_build(&b, IR_PROGRAM_ID, 0, NULL, 1, &i32);
    pid->attr = axis;
    ir_value *p = ir_build1(&b, IR_CAST, i64, 1, &pid->results[0]);
    if (!lin) {
      lin = p;
      continue;
    }
    ir_op *np = ir_build(&b, IR_NUM_PROGRAMS, 0, NULL, 1, &i32);
    np->attr = axis;
    ir_value *n = ir_build1(&b, IR_CAST, i64, 1, &np->results[0]);
    lin = ir_binary(&b, IR_ADD, ir_binary(&b, IR_MUL, lin, n), p);
  }
  return lin;
}

/* The row-major index of every element of a tile of type t (i32, t's shape). */
static ir_value *linear_index(ir_builder *b, const ir_type *t) {
  const ir_type *i32 = ir_type_scalar(b->m, TK_I32);
  const ir_type *full = ir_type_like(b->m, t, i32);
  ir_value *idx = NULL;
  int64_t stride = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    const ir_type *line = ir_type_tile(b->m, i32, 1, &t->shape[d]);
    ir_op *ar = ir_build(b, IR_ARANGE, 0, NULL, 1, &line);
    ar->attr = 0;
    ar->attr2 = t->shape[d];
    ir_value *x = ar->results[0];
    if (t->rank > 1) {
      int shape[IR_MAX_RANK];
      for (int k = 0; k < t->rank; k++) shape[k] = k == d ? t->shape[d] : 1;
      x = ir_build1(b, IR_RESHAPE, ir_type_tile(b->m, i32, t->rank, shape), 1, &x);
      if (ir_type_numel(t) != t->shape[d]) x = ir_build1(b, IR_BROADCAST, full, 1, &x);
    }
    if (stride != 1) x = ir_binary(b, IR_MUL, x, ir_const_int(b, full, stride));
    idx = idx ? ir_binary(b, IR_ADD, idx, x) : x;
    stride *= t->shape[d];
  }
  return idx;
}

/* The addresses of v's part for this program, built at b. */
static ir_value *part_ptrs(mat *s, ir_builder *b, const ir_value *v) {
  tk_dtype dt = stored_dtype(v->type);
  const ir_type *elem = ir_type_scalar(s->m, dt), *ptr = ir_type_ptr(s->m, elem);
  ir_op *sc = ir_build(b, IR_SCRATCH, 0, NULL, 1, &ptr);
  sc->attr = s->off[v->id] - 1;
  sc->attr2 = s->bytes;
  const ir_type *i64 = ir_type_scalar(s->m, TK_I64);
  ir_value *per = ir_binary(b, IR_MUL, s->lin, ir_const_int(b, i64, s->bytes / ir_dtype_bytes(dt)));
  ir_value *opnds[2] = {sc->results[0], per};
  ir_value *base = ir_build1(b, IR_ADDPTR, ptr, 2, opnds);
  const ir_type *ptrs = ir_type_like(s->m, v->type, ptr);
  opnds[0] = ir_build1(b, IR_SPLAT, ptrs, 1, &base);
  opnds[1] = linear_index(b, v->type);
  return ir_build1(b, IR_ADDPTR, ptrs, 2, opnds);
}

static bool in_loop(const ir_op *op) {
  for (const ir_block *b = op->parent; b && b->parent; b = b->parent->parent)
    if (b->parent->opc == IR_FOR) return true;
  return false;
}

/* After v's definition: (barrier,) store to its part, barrier. */
static void emit_store(mat *s, ir_value *v) {
  ir_op *def = v->def;
  ir_builder b = {s->m, def->parent, def->next, def->loc};
  if (in_loop(def)) ir_build(&b, IR_BARRIER, 0, NULL, 0, NULL);
  ir_value *x = v;
  if (v->type->dtype == TK_I1)
    x = ir_build1(&b, IR_CAST, ir_type_like(s->m, v->type, ir_type_scalar(s->m, TK_I8)), 1, &v);
  ir_value *opnds[2] = {part_ptrs(s, &b, v), x};
  ir_build(&b, IR_STORE, 2, opnds, 0, NULL);
  ir_build(&b, IR_BARRIER, 0, NULL, 0, NULL);
}

/* v read back from its part just before op. */
static ir_value *emit_reload(mat *s, ir_op *op, const ir_value *v) {
  ir_builder b = {s->m, op->parent, op, op->loc};
  ir_value *p = part_ptrs(s, &b, v);
  if (v->type->dtype != TK_I1) return ir_build1(&b, IR_LOAD, v->type, 1, &p);
  const ir_type *i8s = ir_type_like(s->m, v->type, ir_type_scalar(s->m, TK_I8));
  ir_value *x = ir_build1(&b, IR_LOAD, i8s, 1, &p);
  return ir_cmp_build(&b, IR_CMP_NE, x, ir_const_int(&b, i8s, 0));
}

typedef struct {
  ir_op *op;
  int k;
  ir_value *v; /* what operand k was when collected */
} use;

typedef struct {
  mat *s;
  use *uses;
  int nuses, cap;
} use_list;

static void collect(ir_op *op, void *ctx) {
  use_list *l = ctx;
  for (int k = 0; k < op->noperands; k++) {
    if ((op->opc == IR_STORE && k == 1) || !l->s->off[op->operands[k]->id]) continue;
    if (l->nuses == l->cap) {
      l->cap = l->cap ? 2 * l->cap : 64;
      use *n = SU_NEW_ARRAY(l->s->a, use, l->cap);
      for (int i = 0; i < l->nuses; i++) n[i] = l->uses[i];
      l->uses = n;
    }
    l->uses[l->nuses++] = (use){op, k, op->operands[k]};
  }
}

static void find_done(ir_op *op, void *ctx) {
  if (op->opc == IR_SCRATCH) *(bool *)ctx = true;
  for (int i = 0; i < op->nresults; i++)
    if (op->results[i]->type->kind == IR_TILE && op->results[i]->type->layout) *(bool *)ctx = true;
}

bool pass_materialize(ir_module *m, ir_func *f) {
  /* Tiled IR, or IR that has its scratch already, is past this point of the pipeline. */
  bool done = false;
  ir_walk(f->body, find_done, &done);
  if (done) return false;
  int nvalues = ir_number_values(f);
  mat s = {.m = m, .f = f, .a = su_arena_new()};
  s.data = SU_NEW_ARRAY(s.a, bool, nvalues + 1);
  s.off = SU_NEW_ARRAY(s.a, int64_t, nvalues + 1);
  s.vals = SU_NEW_ARRAY(s.a, ir_value *, nvalues + 1);
  mark_block(&s, f->body);
  use_scan u = {&s, SU_NEW_ARRAY(s.a, bool, nvalues + 1)};
  ir_walk(f->body, scan_uses, &u);
  ir_walk(f->body, choose, &u);
  bool changed = s.nvals > 0;
  if (changed) {
    s.bytes = s.bytes < 16 ? 16 : s.bytes;
    use_list l = {&s, NULL, 0, 0};
    ir_walk(f->body, collect, &l);
    s.lin = linear_pid(&s);
    for (int i = 0; i < s.nvals; i++) emit_store(&s, s.vals[i]);
    /* one reload per user op and value, however many operands it takes it in */
    for (int i = 0; i < l.nuses; i++) {
      use *x = &l.uses[i];
      ir_value *v = x->v;
      if (x->op->operands[x->k] != v) continue; /* replaced through an earlier operand */
      ir_value *r = emit_reload(&s, x->op, v);
      for (int k = x->k; k < x->op->noperands; k++)
        if (x->op->operands[k] == v && !(x->op->opc == IR_STORE && k == 1)) x->op->operands[k] = r;
    }
  }
  su_arena_free(s.a);
  return changed;
}
