/* The roofline report (tkc --roofline): for every kernel, the bytes one program must move
 * and the arithmetic it must do, the bound that follows on the target, and the predicted
 * time for a grid.
 *
 * Counting rules (an estimate from the IR, not a simulation):
 *  - bytes: every load, store and atomic moves its tile's elements at their storage size;
 *    masks are ignored (an upper bound for ragged edges). A load whose address does not
 *    depend on the program id (a weight vector every program reads) is counted once for
 *    the whole grid: it comes from L2 after the first program. Otherwise nothing is
 *    assumed to hit a cache.
 *  - FLOPs: one per element of each float elementwise op (fma: two; a math function: one,
 *    it runs on the special-function units), one per element folded by a float reduction
 *    or scan, 2*M*N*K for dot (counted apart: it runs on tensor cores). Integer arithmetic
 *    is index math and is not counted.
 *  - loops: a `for` with constant bounds multiplies its body by its trip count; one with
 *    run-time bounds is counted once and reported, since its trip count is not known.
 *  - `if`: the larger branch.
 * The bound is max(bytes / bandwidth, FLOPs / FLOP rate, tensor FLOPs / tensor rate) with
 * the measured ceilings of the target's row of target/targets.def (docs/roofline.md says
 * where they come from). */
#include <stdio.h>
#include <stdlib.h>

#include "driver.h"

typedef struct {
  double bytes, flops, tc_flops;
  double shared_bytes; /* read by every program alike: moved once per grid */
  bool unknown_trips;  /* a loop with run-time bounds was counted once */
} cost;

/* Which values depend on the program id, indexed by value id (ir_number_values). */
typedef struct {
  bool *dep;
} pid_deps;

static bool is_float(const ir_type *t) { return ir_dtype_is_float(ir_type_elem(t)->dtype); }

static double elem_bytes(const ir_type *t) {
  const ir_type *e = ir_type_elem(t);
  return e->kind == IR_PTR ? 8 : ir_dtype_bytes(e->dtype);
}

static cost block_cost(const pid_deps *p, const ir_block *b);

/* Marks what depends on the program id in b (forward, in order; a loop's carried values
 * depend when their initial value does or when the body makes them, so the body is walked
 * twice to reach the fixed point of one carried dependence). */
static void mark_deps(pid_deps *p, const ir_block *b) {
  for (const ir_op *op = b->first; op; op = op->next) {
    bool d = op->opc == IR_PROGRAM_ID;
    for (int i = 0; i < op->noperands; i++) d |= p->dep[op->operands[i]->id];
    for (int r = 0; r < op->nregions; r++) {
      const ir_block *rb = op->regions[r];
      for (int pass = 0; pass < 2; pass++) {
        for (int a = 0; a < rb->nargs; a++) {
          bool ad = op->opc == IR_FOR && a > 0 ? p->dep[op->operands[2 + a]->id] : false;
          if (op->opc == IR_FOR && a == 0)
            ad = p->dep[op->operands[0]->id] || p->dep[op->operands[1]->id] ||
                 p->dep[op->operands[2]->id];
          if (op->opc == IR_FOR && a > 0 && rb->last && rb->last->opc == IR_YIELD)
            ad |= p->dep[rb->last->operands[a - 1]->id];
          p->dep[rb->args[a]->id] |= ad;
        }
        mark_deps(p, rb);
      }
      if (rb->last && rb->last->opc == IR_YIELD)
        for (int i = 0; i < rb->last->noperands; i++) d |= p->dep[rb->last->operands[i]->id];
    }
    for (int i = 0; i < op->nresults; i++) p->dep[op->results[i]->id] = d;
  }
}

static void add(cost *c, cost d, double times) {
  c->shared_bytes += d.shared_bytes * times;
  c->bytes += d.bytes * times;
  c->flops += d.flops * times;
  c->tc_flops += d.tc_flops * times;
  c->unknown_trips |= d.unknown_trips;
}

/* The trip count of a for op whose bounds and step are constants, or -1. */
static double trips(const ir_op *op) {
  int64_t v[3];
  for (int i = 0; i < 3; i++) {
    const ir_op *d = op->operands[i]->def;
    if (!d || d->opc != IR_CONST) return -1;
    v[i] = d->cval.i;
  }
  if (v[2] <= 0) return -1;
  return v[1] > v[0] ? (double)((v[1] - v[0] + v[2] - 1) / v[2]) : 0;
}

static cost op_cost(const pid_deps *p, const ir_op *op) {
  cost c = {0};
  const ir_opinfo *info = ir_op_info(op->opc);
  switch (op->opc) {
  case IR_LOAD:
    if (!p->dep[op->operands[0]->id]) {
      c.shared_bytes =
          (double)ir_type_numel(op->results[0]->type) * elem_bytes(op->results[0]->type);
      break;
    }
    /* fallthrough */
  case IR_ATOMIC:
  case IR_ATOMIC_CAS:
    c.bytes = (double)ir_type_numel(op->results[0]->type) * elem_bytes(op->results[0]->type);
    break;
  case IR_STORE:
    c.bytes = (double)ir_type_numel(op->operands[1]->type) * elem_bytes(op->operands[1]->type);
    break;
  case IR_DOT: {
    const ir_type *a = op->operands[0]->type, *b = op->operands[1]->type;
    c.tc_flops = 2.0 * a->shape[0] * a->shape[1] * b->shape[1];
    break;
  }
  case IR_REDUCE:
  case IR_ARGREDUCE:
  case IR_SCAN:
    if (is_float(op->operands[0]->type)) c.flops = (double)ir_type_numel(op->operands[0]->type);
    break;
  case IR_FOR: {
    double n = trips(op);
    cost body = block_cost(p, op->regions[0]);
    if (n < 0) body.unknown_trips = true;
    add(&c, body, n < 0 ? 1 : n);
    break;
  }
  case IR_IF: {
    cost t = block_cost(p, op->regions[0]), e = block_cost(p, op->regions[1]);
    add(&c, t.bytes + t.flops >= e.bytes + e.flops ? t : e, 1);
    break;
  }
  default:
    if ((info->traits & IR_ELEM) && op->nresults == 1 && op->opc != IR_CAST &&
        op->opc != IR_ADDPTR && op->opc != IR_SELECT && is_float(op->results[0]->type))
      c.flops = (double)ir_type_numel(op->results[0]->type) * (op->opc == IR_FMA ? 2 : 1);
    break;
  }
  return c;
}

static cost block_cost(const pid_deps *p, const ir_block *b) {
  cost c = {0};
  for (const ir_op *op = b->first; op; op = op->next) add(&c, op_cost(p, op), 1);
  return c;
}

/* Seconds as a short readable figure. */
static void print_time(FILE *out, double s) {
  if (s >= 1e-3)
    fprintf(out, "%.3g ms", s * 1e3);
  else
    fprintf(out, "%.3g us", s * 1e6);
}

void drv_roofline(FILE *out, const ir_module *m, const char *arch, const unsigned grid[3]) {
  SU_ASSERT(tg_has_ceilings(arch));
  const tg_arch *t = tg_find(arch);
  double programs = (double)grid[0] * grid[1] * grid[2];
  fprintf(out, "roofline on %s, %s: %.3g TB/s, %.3g TFLOP/s f32, %.3g TFLOP/s tensor\n",
          t->name, t->machine, t->hbm_bw / 1e12, t->f32_flops / 1e12, t->tc_flops / 1e12);
  for (int i = 0; i < m->nfuncs; i++) {
    ir_func *f = m->funcs[i];
    pid_deps p = {calloc((size_t)ir_number_values(f) + 1, sizeof(bool))};
    if (!p.dep) su_fatal("out of memory");
    mark_deps(&p, f->body);
    cost c = block_cost(&p, f->body);
    free(p.dep);
    /* Per-program figures; the shared bytes are spread over the grid for the bound. */
    double bytes = c.bytes + c.shared_bytes / programs;
    double tb = bytes / t->hbm_bw, tf = c.flops / t->f32_flops, tt = c.tc_flops / t->tc_flops;
    double bound = tb > tf ? (tb > tt ? tb : tt) : (tf > tt ? tf : tt);
    const char *what = bound == tb ? "memory" : bound == tf ? "compute (f32)" : "compute (tensor cores)";
    double intensity = bytes > 0 ? (c.flops + c.tc_flops) / bytes : 0;
    fprintf(out, "kernel %s (per program%s):\n", f->name,
            c.unknown_trips ? "; loops with run-time bounds counted once" : "");
    fprintf(out, "  moves %.6g bytes", c.bytes);
    if (c.shared_bytes > 0) fprintf(out, " (+ %.6g bytes all programs share)", c.shared_bytes);
    fprintf(out, ", %.6g FLOPs", c.flops);
    if (c.tc_flops > 0) fprintf(out, " + %.6g tensor FLOPs", c.tc_flops);
    fprintf(out, "; intensity %.3g FLOP/byte\n", intensity);
    fprintf(out, "  bound: %s", what);
    if (bound == 0) {
      fprintf(out, " (does no work)\n");
      continue;
    }
    fprintf(out, " (memory %.0f%%, f32 %.0f%%, tensor %.0f%% of the bound)\n", 100 * tb / bound,
            100 * tf / bound, 100 * tt / bound);
    fprintf(out, "  predicted for %u x %u x %u programs: ", grid[0], grid[1], grid[2]);
    print_time(out, bound * programs);
    fprintf(out, "\n");
  }
}
