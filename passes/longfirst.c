/* Programs with the longest loops start first (docs/passes.md, "longfirst").
 *
 * Causal attention's program x runs a loop of x + 1 key blocks: `hi = min(S_k, (x + 1) *
 * BM)`. The hardware hands out programs in launch order, x fastest, so the longest
 * programs of the last heads start last and run alone at the end: an idealized schedule
 * (equal blocks, programs taken in launch order) of B4 H32 S4096 at BM = 64 and three
 * programs an SM ends 6% after the balanced time, at BM = 128 and one an SM 4%. Handing
 * them out longest first (LPT, what FlashAttention-3's scheduler does for causal masks)
 * ends within 0.2% of it. So where a kernel's loop bound grows with program_id(a), the
 * launched block's linear index L (x fastest) is mapped to a program whose axis a counts
 * down as L grows, the other two axes fastest:
 *
 *     (p_f, p_s) = (L mod (n_f n_s)) as (fast, slow);  p_a = n_a - 1 - L / (n_f n_s)
 *
 * a bijection of the launched grid onto itself, so every program still runs once and
 * computes what it computed: the interpreter's results are the GPU's, whatever the order.
 * What the order may not change is a kernel whose programs wait for each other, so
 * kernels with atomics or while loops keep the launch order, as do persistent kernels
 * (persist orders their tiles) and clusters (a cluster's CTAs must stay adjacent in x).
 * "Grows" is read from the bound's expression: program_id(a) through add, sub of
 * something that does not grow, mul and shl by a positive constant, division by one, min,
 * max and widening casts; anything else, no reorder. A target pass: the interpreter runs
 * programs in any order anyway. */
#include "pass_util.h"

enum { GROWS = 1, FLAT = 0, SHRINKS = -1, UNKNOWN = 2 };

static int join(int x, int y) {
  if (x == UNKNOWN || y == UNKNOWN) return UNKNOWN;
  if (x == FLAT) return y;
  if (y == FLAT || x == y) return x;
  return UNKNOWN;
}

static int flip(int x) { return x == GROWS ? SHRINKS : x == SHRINKS ? GROWS : x; }

/* How v moves as program_id(axis) grows, the other program ids held. */
static int trend(const ir_value *v, int axis, int depth) {
  const ir_op *op = v->def;
  if (!op) return v->owner && !v->owner->parent ? FLAT : UNKNOWN; /* a kernel parameter */
  if (depth > 32 || op->nregions) return UNKNOWN;
  const ir_type *t = v->type;
  if (t->kind != IR_SCALAR || !ir_dtype_is_int(t->dtype)) return UNKNOWN;
  switch (op->opc) {
  case IR_PROGRAM_ID: return op->attr == axis ? GROWS : FLAT;
  case IR_CONST: case IR_NUM_PROGRAMS: return FLAT;
  case IR_ADD: case IR_MIN: case IR_MAX:
    return join(trend(op->operands[0], axis, depth + 1), trend(op->operands[1], axis, depth + 1));
  case IR_SUB:
    return join(trend(op->operands[0], axis, depth + 1), flip(trend(op->operands[1], axis, depth + 1)));
  case IR_MUL: case IR_SHL: case IR_DIV: {
    int k = op->opc == IR_MUL && pass_is_const(op->operands[0]) ? 0 : 1;
    const ir_value *c = op->operands[k];
    if (!pass_is_const(c) || pass_const_int(c) <= 0) return UNKNOWN;
    return trend(op->operands[1 - k], axis, depth + 1);
  }
  case IR_CAST: {
    const ir_type *from = op->operands[0]->type;
    if (from->kind != IR_SCALAR || !ir_dtype_is_int(from->dtype) ||
        ir_dtype_bits(from->dtype) > ir_dtype_bits(t->dtype))
      return UNKNOWN;
    return trend(op->operands[0], axis, depth + 1);
  }
  default: return UNKNOWN;
  }
}

typedef struct {
  int axis;     /* the first axis a loop bound grows with, -1 none */
  bool blocked; /* an op that may make programs wait for each other */
} scan_state;

static void scan(ir_op *op, void *arg) {
  scan_state *s = arg;
  if (op->opc == IR_ATOMIC || op->opc == IR_ATOMIC_CAS || (op->opc == IR_FOR && op->attr)) s->blocked = true;
  if (op->opc != IR_FOR || s->axis >= 0) return;
  for (int a = 0; a < 3; a++)
    if (trend(op->operands[0], a, 0) == FLAT && trend(op->operands[2], a, 0) == FLAT &&
        trend(op->operands[1], a, 0) == GROWS) {
      s->axis = a;
      return;
    }
}

typedef struct {
  ir_op **ops;
  int n, cap;
} pid_list;

/* Counts the program_id ops (ops NULL), or lists them. */
static void collect(ir_op *op, void *arg) {
  pid_list *l = arg;
  if (op->opc != IR_PROGRAM_ID) return;
  if (l->ops && l->n < l->cap) l->ops[l->n] = op;
  l->n++;
}

bool pass_longfirst(ir_module *m, ir_func *f) {
  if (f->persistent || f->cluster) return false;
  scan_state s = {-1, false};
  ir_walk(f->body, scan, &s);
  if (s.axis < 0) return false;
  if (s.blocked) {
    pass_remark_missed(m, "longfirst", f->loc,
                       "kernel '%s': a loop's length grows with program_id(%d), but the kernel has "
                       "atomics or while loops, so its programs keep the launch order",
                       f->name, s.axis);
    return false;
  }
  pid_list l = {NULL, 0, 0};
  ir_walk(f->body, collect, &l);
  l.cap = l.n, l.n = 0;
  l.ops = su_alloc(m->arena, (size_t)(l.cap ? l.cap : 1) * sizeof *l.ops);
  ir_walk(f->body, collect, &l);

  /* L = x + n_x (y + n_y z), in i64: a grid may hold more than 2^31 programs */
  ir_builder b = {m, f->body, f->body->first, f->loc};
  const ir_type *i32 = ir_type_scalar(m, TK_I32), *i64 = ir_type_scalar(m, TK_I64);
  ir_value *pid[3], *n[3];
  for (int a = 0; a < 3; a++) {
    ir_op *p = ir_build(&b, IR_PROGRAM_ID, 0, NULL, 1, &i32);
    p->attr = a;
    ir_op *q = ir_build(&b, IR_NUM_PROGRAMS, 0, NULL, 1, &i32);
    q->attr = a;
    pid[a] = ir_build1(&b, IR_CAST, i64, 1, &p->results[0]);
    n[a] = ir_build1(&b, IR_CAST, i64, 1, &q->results[0]);
  }
  ir_value *lin = ir_binary(&b, IR_ADD, pid[0], ir_binary(&b, IR_MUL, n[0], ir_binary(&b, IR_ADD, pid[1], ir_binary(&b, IR_MUL, n[1], pid[2]))));
  int fast = s.axis == 0 ? 1 : 0, slow = s.axis == 2 ? 1 : 2;
  ir_value *rest = ir_binary(&b, IR_MUL, n[fast], n[slow]);
  ir_value *major = ir_binary(&b, IR_DIV, lin, rest), *minor = ir_binary(&b, IR_REM, lin, rest);
  ir_value *one = ir_const_int(&b, i64, 1);
  ir_value *now[3];
  now[s.axis] = ir_binary(&b, IR_SUB, ir_binary(&b, IR_SUB, n[s.axis], one), major);
  now[fast] = ir_binary(&b, IR_REM, minor, n[fast]);
  now[slow] = ir_binary(&b, IR_DIV, minor, n[fast]);
  for (int a = 0; a < 3; a++) now[a] = ir_build1(&b, IR_CAST, i32, 1, &now[a]);
  for (int i = 0; i < l.n; i++) pass_replace_op(f, l.ops[i], now[l.ops[i]->attr]);
  pass_remark(m, "longfirst", f->loc,
              "kernel '%s': programs start longest first (a loop's length grows with program_id(%d))",
              f->name, s.axis);
  return true;
}
