/* The roofline (tkc --roofline, tk_roofline): for a kernel and a launch — its grid and, when
 * known, its argument values — the bytes it moves to and from HBM and L2, the arithmetic
 * it does, which ceiling of the target binds (HBM or L2 bandwidth, f32 or tensor-core
 * FLOP rate, the special-function units' rate, or the launch's overhead), the predicted
 * time and the fraction of each ceiling the kernel uses at that time.
 *
 * Counting rules (an estimate from the IR, not a simulation; docs/roofline.md):
 *  - bytes: every load, store and atomic moves its tile's elements at their storage size;
 *    masks are ignored (an upper bound at ragged edges). A load whose address depends on
 *    only some axes of the program id is read from HBM once per distinct value of those
 *    axes and from L2 by the other programs (a weight vector every program reads: once;
 *    a matmul's A row block: once per row of programs) — the launch order and a grouped
 *    tile order are assumed to keep that reuse in L2. A loop's induction variable depends
 *    on the program id through its start and step, not where it stops. A re-read — a load of a pointer parameter that an earlier top-level
 *    op of the same program already read (fusion's recomputation: softmax's second and
 *    third pass over x) hits L2 when what the programs resident at once re-read (the most
 *    one top-level op re-reads, times the programs resident: 2048 threads an SM) fits in
 *    L2; when it is F times larger, 1/F of it hits and the rest goes to HBM. Everything
 *    else is HBM.
 *  - FLOPs: one per element of each float elementwise op (fma: two; a math function one),
 *    one per element folded by a float reduction or scan, 2*M*N*K for dot (tensor cores).
 *    Integer arithmetic is index math and is not counted.
 *  - special functions: per element of each float elementwise op, the MUFU results its
 *    lowering costs (cg_math_mufu_per_elem: exp 1, tanh 2, log 0, `/` 1, ...), counted
 *    apart from the FLOPs because the MUFU does 16 a clock an SM against the FMA pipe's
 *    128: exp at attention's head dim 64 takes as long as the matrix products.
 *  - loops: a `for` multiplies its body by its trip count, computed from constants, the
 *    launch's argument values and the grid (the program id taken at the middle of the
 *    grid: the average program); a loop whose count does not follow from them is counted
 *    once and reported. Inside a loop the induction variable is taken at its middle value,
 *    so a triangular nest (causal attention) counts its average inner trip.
 *  - `if`: the larger branch.
 * The time is max(HBM bytes / HBM bandwidth, all bytes / L2 bandwidth, FLOPs / f32 rate,
 * tensor FLOPs / tensor rate, MUFU results / special-function rate, launch overhead), with
 * the ceilings of the target's row of target/targets.def. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* Per program. */
typedef struct {
  double hbm;
  double xprog;  /* loaded by other programs too: from L2 after the first (cross-program reuse) */
  double reread; /* loaded again by this program (recomputation): L2 if it fits */
  double flops, tc_flops;
  double mufu;   /* special-function (MUFU) results */
  bool unknown_trips;
} cost;

/* What is known of one value while counting. */
typedef struct {
  unsigned pid_dep; /* the program-id axes it depends on (bit per axis) */
  int state;     /* scalar integer value: 0 not evaluated, 1 known, 2 unknown */
  int64_t value;
} vinfo;

typedef struct {
  const ir_func *f;
  const unsigned *grid;
  const drv_rl_value *params;
  su_arena *a;
  su_map *info; /* ir_value* -> vinfo* */
  int top;      /* the index of the top-level op being counted */
  int *first_top;      /* per parameter: the top-level op that first read it, or -1 */
} counter;

static vinfo *info_of(counter *c, const ir_value *v) {
  vinfo *i = su_map_get(c->info, (const char *)&v, sizeof v);
  if (!i) {
    i = SU_NEW(c->a, vinfo);
    su_map_put(c->info, (const char *)&v, sizeof v, i);
  }
  return i;
}

static int param_index(const counter *c, const ir_value *v) {
  if (v->def || v->owner != c->f->body) return -1;
  return v->index;
}

/* ---- what depends on the program id ---------------------------------------------------- */

static void mark_deps(counter *c, const ir_block *b) {
  for (const ir_op *op = b->first; op; op = op->next) {
    unsigned d = op->opc == IR_PROGRAM_ID ? 1u << op->attr : 0;
    for (int i = 0; i < op->noperands; i++) d |= info_of(c, op->operands[i])->pid_dep;
    for (int r = 0; r < op->nregions; r++) {
      const ir_block *rb = op->regions[r];
      /* twice: a carried value depends when its initial value or the body makes it so */
      for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < rb->nargs; k++) {
          unsigned ad = 0;
          /* Not the upper bound: programs whose loops stop at different points visit
           * prefixes of one sequence of induction values (causal attention's key
           * blocks), so what they load at each value is the same bytes. */
          if (op->opc == IR_FOR && k == 0)
            ad = info_of(c, op->operands[0])->pid_dep | info_of(c, op->operands[2])->pid_dep;
          if (op->opc == IR_FOR && k > 0) {
            ad = info_of(c, op->operands[2 + k])->pid_dep;
            if (rb->last && rb->last->opc == IR_YIELD) ad |= info_of(c, rb->last->operands[k - 1])->pid_dep;
          }
          info_of(c, rb->args[k])->pid_dep |= ad;
        }
        mark_deps(c, rb);
      }
      if (rb->last && rb->last->opc == IR_YIELD)
        for (int i = 0; i < rb->last->noperands; i++) d |= info_of(c, rb->last->operands[i])->pid_dep;
    }
    for (int i = 0; i < op->nresults; i++) info_of(c, op->results[i])->pid_dep = d;
  }
}

/* ---- scalar values from the launch ------------------------------------------------------ */

static bool eval(counter *c, const ir_value *v, int64_t *out);

static bool eval2(counter *c, const ir_op *op, int64_t *a, int64_t *b) {
  return eval(c, op->operands[0], a) && eval(c, op->operands[1], b);
}

static bool eval_op(counter *c, const ir_op *op, int64_t *out) {
  int64_t a, b;
  switch (op->opc) {
  case IR_CONST:
    if (!ir_dtype_is_int(op->results[0]->type->dtype)) return false;
    *out = op->cval.i;
    return true;
  case IR_PROGRAM_ID: *out = (int64_t)(c->grid[op->attr] - 1) / 2; return true;
  case IR_NUM_PROGRAMS: case IR_GRID_SIZE: *out = c->grid[op->attr]; return true;
  case IR_CAST:
    return ir_dtype_is_int(op->operands[0]->type->dtype) && ir_dtype_is_int(op->results[0]->type->dtype) &&
           eval(c, op->operands[0], out);
  case IR_ADD: if (!eval2(c, op, &a, &b)) return false; *out = a + b; return true;
  case IR_SUB: if (!eval2(c, op, &a, &b)) return false; *out = a - b; return true;
  case IR_MUL: if (!eval2(c, op, &a, &b)) return false; *out = a * b; return true;
  case IR_MIN: if (!eval2(c, op, &a, &b)) return false; *out = a < b ? a : b; return true;
  case IR_MAX: if (!eval2(c, op, &a, &b)) return false; *out = a > b ? a : b; return true;
  case IR_DIV: if (!eval2(c, op, &a, &b) || !b) return false; *out = a / b; return true;
  case IR_REM: if (!eval2(c, op, &a, &b) || !b) return false; *out = a % b; return true;
  case IR_CDIV: if (!eval2(c, op, &a, &b) || b <= 0) return false; *out = (a + b - 1) / b; return true;
  case IR_SHL: if (!eval2(c, op, &a, &b) || b < 0 || b > 62) return false; *out = a << b; return true;
  case IR_SHR: if (!eval2(c, op, &a, &b) || b < 0 || b > 62) return false; *out = a >> b; return true;
  default: return false;
  }
}

/* The integer value of scalar v for the average program of the launch, if it follows. */
static bool eval(counter *c, const ir_value *v, int64_t *out) {
  if (v->type->kind != IR_SCALAR || !ir_dtype_is_int(v->type->dtype)) return false;
  vinfo *i = info_of(c, v);
  if (!i->state) {
    int64_t x = 0;
    bool ok;
    int p = param_index(c, v);
    if (p >= 0)
      ok = c->params && c->params[p].known, x = ok ? c->params[p].value : 0;
    else
      ok = v->def && eval_op(c, v->def, &x);
    i->state = ok ? 1 : 2;
    i->value = x;
  }
  *out = i->value;
  return i->state == 1;
}

/* ---- counting --------------------------------------------------------------------------- */

static bool is_float(const ir_type *t) { return ir_dtype_is_float(ir_type_elem(t)->dtype); }

static double elem_bytes(const ir_type *t) {
  const ir_type *e = ir_type_elem(t);
  return e->kind == IR_PTR ? 8 : ir_dtype_bytes(e->dtype);
}

static double tile_bytes(const ir_type *t) { return (double)ir_type_numel(t) * elem_bytes(t); }

static void add(cost *c, cost d, double times) {
  c->xprog += d.xprog * times;
  c->hbm += d.hbm * times;
  c->reread += d.reread * times;
  c->flops += d.flops * times;
  c->tc_flops += d.tc_flops * times;
  c->mufu += d.mufu * times;
  c->unknown_trips |= d.unknown_trips;
}

/* The pointer parameter an address comes from (through offsets, splats, shape ops and
 * carried pointers), or -1. */
static int root_param(const counter *c, const ir_value *v) {
  for (int depth = 0; depth < 64; depth++) {
    if (!v->def) {
      const ir_op *owner = v->owner ? v->owner->parent : NULL;
      if (!owner) return param_index(c, v);
      if (owner->opc != IR_FOR || v->index == 0) return -1;
      v = owner->operands[2 + v->index]; /* a carried pointer: where it starts */
      continue;
    }
    switch (v->def->opc) {
    case IR_ADDPTR: case IR_SPLAT: case IR_BROADCAST: case IR_EXPAND_DIMS: case IR_RESHAPE:
    case IR_TRANS: case IR_CONVERT_LAYOUT: case IR_SLICE:
      v = v->def->operands[0];
      break;
    case IR_SELECT: v = v->def->operands[1]; break;
    default: return -1;
    }
  }
  return -1;
}

static cost block_cost(counter *c, const ir_block *b);

/* The trip count of a for op, or -1 when it does not follow from what is known. */
static double trips(counter *c, const ir_op *op, int64_t *lb, int64_t *step) {
  int64_t ub;
  if (op->attr || !eval(c, op->operands[0], lb) || !eval(c, op->operands[1], &ub) ||
      !eval(c, op->operands[2], step) || *step <= 0)
    return -1;
  return ub > *lb ? (double)((ub - *lb + *step - 1) / *step) : 0;
}

/* The MUFU results one element of float elementwise op costs: codegen's table, with the
 * op's accuracy read as codegen reads it (attr 1 on an op that has the flag; `exp2`'s attr
 * is ftz, the same one ex2). */
static int mufu_per_elem(const ir_op *op) {
  bool accurate = op->attr == 1 && ir_op_has_accurate(op->opc);
  return cg_math_mufu_per_elem(op->opc, ir_type_elem(op->results[0]->type)->dtype, accurate);
}

static cost op_cost(counter *c, const ir_op *op) {
  cost k = {0};
  const ir_opinfo *info = ir_op_info(op->opc);
  switch (op->opc) {
  case IR_LOAD: {
    /* fuse's keep: a later loop's load of a value kept in shared memory (one CTA's, or
     * each CTA's share of a cluster) reads it there (smemkeep.c, clusterkeep.c) */
    if (op->nints == 2 && op->ints[1] == 1) break;
    double bytes = tile_bytes(op->results[0]->type);
    int p = root_param(c, op->operands[0]);
    if (p >= 0 && c->first_top[p] >= 0 && c->first_top[p] != c->top) {
      k.reread = bytes;
      break;
    }
    if (p >= 0 && c->first_top[p] < 0) c->first_top[p] = c->top;
    /* Programs that differ only along axes the address does not depend on read the same
     * bytes (a weight vector, a matmul's A row block): one of them from HBM, the others
     * from L2. */
    unsigned dep = info_of(c, op->operands[0])->pid_dep;
    double programs = (double)c->grid[0] * c->grid[1] * c->grid[2], distinct = 1;
    for (int a = 0; a < 3; a++)
      if (dep & (1u << a)) distinct *= c->grid[a];
    k.hbm = bytes * distinct / programs;
    k.xprog = bytes - k.hbm;
    break;
  }
  case IR_ATOMIC: case IR_ATOMIC_CAS: k.hbm = tile_bytes(op->results[0]->type); break;
  case IR_STORE: k.hbm = tile_bytes(op->operands[1]->type); break;
  case IR_DOT: {
    const ir_type *a = op->operands[0]->type, *b = op->operands[1]->type;
    k.tc_flops = 2.0 * a->shape[0] * a->shape[1] * b->shape[1];
    break;
  }
  case IR_REDUCE: case IR_ARGREDUCE: case IR_SCAN:
    if (is_float(op->operands[0]->type)) k.flops = (double)ir_type_numel(op->operands[0]->type);
    break;
  case IR_FOR: {
    int64_t lb = 0, step = 1;
    double n = trips(c, op, &lb, &step);
    /* the body as the middle iteration sees it */
    vinfo *iv = info_of(c, op->regions[0]->args[0]);
    iv->state = n > 0 ? 1 : 2;
    iv->value = n > 0 ? lb + (int64_t)((n - 1) / 2) * step : 0;
    cost body = block_cost(c, op->regions[0]);
    if (n < 0) body.unknown_trips = true;
    add(&k, body, n < 0 ? 1 : n);
    break;
  }
  case IR_IF: {
    cost t = block_cost(c, op->regions[0]), e = block_cost(c, op->regions[1]);
    add(&k, t.hbm + t.xprog + t.reread + t.flops >= e.hbm + e.xprog + e.reread + e.flops ? t : e, 1);
    break;
  }
  case IR_WARP_SPEC:
    add(&k, block_cost(c, op->regions[0]), 1);
    add(&k, block_cost(c, op->regions[1]), 1);
    break;
  default:
    if ((info->traits & IR_ELEM) && op->nresults == 1 && op->opc != IR_CAST &&
        op->opc != IR_ADDPTR && op->opc != IR_SELECT && is_float(op->results[0]->type)) {
      double n = (double)ir_type_numel(op->results[0]->type);
      k.flops = n * (op->opc == IR_FMA ? 2 : 1);
      k.mufu = n * mufu_per_elem(op);
    }
    break;
  }
  return k;
}

static cost block_cost(counter *c, const ir_block *b) {
  cost k = {0};
  for (const ir_op *op = b->first; op; op = op->next) add(&k, op_cost(c, op), 1);
  return k;
}

/* Per-program cost of f, top-level op by top-level op (what a re-read is relative to);
 * *live: the most one top-level op re-reads, what must stay in L2 between the passes. */
static cost kernel_cost(counter *c, double *live) {
  cost k = {0};
  c->top = 0;
  *live = 0;
  for (const ir_op *op = c->f->body->first; op; op = op->next, c->top++) {
    cost d = op_cost(c, op);
    add(&k, d, 1);
    if (d.reread > *live) *live = d.reread;
  }
  return k;
}

void drv_roofline_kernel(const ir_func *f, const tg_arch *t, const unsigned grid[3],
                         const drv_rl_value *params, drv_rl_result *out) {
  SU_ASSERT(t && tg_has_ceilings(t->name));
  memset(out, 0, sizeof *out);
  su_arena *a = su_arena_new();
  int np = f->body->nargs;
  counter c = {f, grid, params, a, su_map_new(a), 0, SU_NEW_ARRAY(a, int, np + 1)};
  for (int p = 0; p < np; p++) c.first_top[p] = -1;
  mark_deps(&c, f->body);
  double footprint;
  cost k = kernel_cost(&c, &footprint);
  double programs = (double)grid[0] * grid[1] * grid[2];
  /* Re-reads hit L2 when what the resident programs re-read fits in it. Resident: as the
   * thread and block limits of an SM allow (registers and shared memory ignored). */
  double per_sm = tg_resident_per_sm(t, 32 * (f->num_warps > 0 ? f->num_warps : 1), 0);
  double resident = programs < t->sms * per_sm ? programs : t->sms * per_sm;
  out->reread_footprint = footprint * resident;
  /* the share of the re-read data still in L2 when it is read again (tg_l2_hit: the rule
   * fusion's cost model uses too) */
  out->reread_hit = k.reread <= 0 ? 0 : tg_l2_hit(t, out->reread_footprint);
  out->hbm_bytes = (k.hbm + (1 - out->reread_hit) * k.reread) * programs;
  out->xprog_bytes = k.xprog * programs;
  out->l2_bytes = (k.xprog + out->reread_hit * k.reread) * programs;
  out->flops = k.flops * programs;
  out->tc_flops = k.tc_flops * programs;
  out->mufu = k.mufu * programs;
  out->unknown_trips = k.unknown_trips;
  out->t_hbm = out->hbm_bytes / t->hbm_bw;
  out->t_l2 = (out->hbm_bytes + out->l2_bytes) / t->l2_bw;
  out->t_f32 = out->flops / t->f32_flops;
  out->t_tensor = out->tc_flops / t->tc_flops;
  out->t_sfu = out->mufu / t->sfu_rate;
  out->t_launch = t->launch_s;
  const double ts[] = {out->t_hbm, out->t_l2, out->t_f32, out->t_tensor, out->t_sfu, out->t_launch};
  const drv_bound bs[] = {DRV_BOUND_HBM,    DRV_BOUND_L2,  DRV_BOUND_F32,
                          DRV_BOUND_TENSOR, DRV_BOUND_SFU, DRV_BOUND_LAUNCH};
  out->bound = DRV_BOUND_HBM;
  out->predicted_s = ts[0];
  for (int i = 1; i < (int)(sizeof ts / sizeof *ts); i++)
    if (ts[i] > out->predicted_s) {
      out->predicted_s = ts[i];
      out->bound = bs[i];
    }
  su_arena_free(a);
}

const char *drv_bound_name(drv_bound b) {
  switch (b) {
  case DRV_BOUND_HBM: return "memory (HBM bandwidth)";
  case DRV_BOUND_L2: return "memory (L2 bandwidth)";
  case DRV_BOUND_F32: return "compute (f32)";
  case DRV_BOUND_TENSOR: return "compute (tensor cores)";
  case DRV_BOUND_SFU: return "compute (special functions)";
  case DRV_BOUND_LAUNCH: return "overhead (the launch)";
  }
  return "?";
}

/* ---- --args -------------------------------------------------------------------------- */

bool drv_roofline_args(const ir_func *f, const char *list, drv_rl_value *out, bool *used,
                       su_buf *why) {
  for (int i = 0; i < f->body->nargs; i++) out[i] = (drv_rl_value){false, 0};
  for (const char *s = list ? list : ""; *s;) {
    size_t len = strcspn(s, ",");
    const char *eq = memchr(s, '=', len);
    if (!eq || eq == s || eq + 1 == s + len) {
      su_buf_printf(why, "'%.*s' is not NAME=INTEGER", (int)len, s);
      return false;
    }
    char *end;
    long long v = strtoll(eq + 1, &end, 0);
    if (end != s + len) {
      su_buf_printf(why, "'%.*s' is not NAME=INTEGER", (int)len, s);
      return false;
    }
    size_t n = (size_t)(eq - s);
    for (int i = 0; i < f->body->nargs; i++) {
      const char *name = f->param_names ? f->param_names[i] : NULL;
      const ir_type *t = f->body->args[i]->type;
      if (!name || strlen(name) != n || memcmp(name, s, n)) continue;
      if (t->kind != IR_SCALAR || !ir_dtype_is_int(t->dtype)) {
        su_buf_printf(why, "kernel '%s': parameter '%s' is not an integer", f->name, name);
        return false;
      }
      out[i] = (drv_rl_value){true, v};
      *used = true;
    }
    s += len;
    if (*s == ',') s++;
  }
  return true;
}

/* ---- the report ------------------------------------------------------------------------ */

/* Seconds as a short readable figure. */
static void print_time(FILE *out, double s) {
  if (s >= 1e-3)
    fprintf(out, "%.3g ms", s * 1e3);
  else
    fprintf(out, "%.3g us", s * 1e6);
}

static void print_bytes(FILE *out, double b) {
  if (b >= 1e9) fprintf(out, "%.3g GB", b / 1e9);
  else if (b >= 1e6) fprintf(out, "%.3g MB", b / 1e6);
  else fprintf(out, "%.6g bytes", b);
}

void drv_roofline(FILE *out, const ir_module *m, const tg_arch *t, const unsigned grid[3],
                  const drv_rl_value *const *params) {
  SU_ASSERT(t && tg_has_ceilings(t->name));
  fprintf(out, "roofline on %s, %s: HBM %.3g TB/s, L2 %.3g TB/s (%.3g MB), %.3g TFLOP/s f32, "
          "%.3g TFLOP/s tensor, %.3g T/s special functions, launch %.3g us\n", t->name, t->machine,
          t->hbm_bw / 1e12, t->l2_bw / 1e12, t->l2_bytes / 1e6, t->f32_flops / 1e12,
          t->tc_flops / 1e12, t->sfu_rate / 1e12, t->launch_s * 1e6);
  for (int i = 0; i < m->nfuncs; i++) {
    const ir_func *f = m->funcs[i];
    drv_rl_result r;
    drv_roofline_kernel(f, t, grid, params ? params[i] : NULL, &r);
    double programs = (double)grid[0] * grid[1] * grid[2];
    fprintf(out, "kernel %s, %u x %u x %u programs%s:\n", f->name, grid[0], grid[1], grid[2],
            r.unknown_trips ? " (a loop whose trip count the arguments do not give was counted "
                              "once: pass --args)" : "");
    fprintf(out, "  moves ");
    print_bytes(out, r.hbm_bytes);
    fprintf(out, " to and from HBM");
    if (r.l2_bytes > 0) {
      fprintf(out, ", ");
      print_bytes(out, r.l2_bytes);
      fprintf(out, " from L2 (");
      if (r.xprog_bytes > 0) {
        print_bytes(out, r.xprog_bytes);
        fprintf(out, " that other programs read too");
      }
      if (r.l2_bytes > r.xprog_bytes) {
        fprintf(out, "%s", r.xprog_bytes > 0 ? ", " : "");
        print_bytes(out, r.l2_bytes - r.xprog_bytes);
        fprintf(out, " re-read by the same program");
      }
      fprintf(out, ")");
    }
    fprintf(out, "; %.6g FLOPs", r.flops);
    if (r.tc_flops > 0) fprintf(out, " + %.6g tensor FLOPs", r.tc_flops);
    if (r.mufu > 0) fprintf(out, "; %.6g special functions (MUFU)", r.mufu);
    double bytes = r.hbm_bytes + r.l2_bytes;
    fprintf(out, "; intensity %.3g FLOP/byte\n", bytes > 0 ? (r.flops + r.tc_flops) / bytes : 0);
    if (r.reread_footprint > 0 && r.reread_hit < 1) {
      fprintf(out, "  re-reads: the programs resident at once re-read ");
      print_bytes(out, r.reread_footprint);
      fprintf(out, ", more than L2 holds: %.0f%% of them hit L2, the rest go to HBM\n",
              100 * r.reread_hit);
    }
    fprintf(out, "  per program: ");
    print_bytes(out, (r.hbm_bytes + r.l2_bytes) / programs);
    fprintf(out, ", %.6g FLOPs", (r.flops + r.tc_flops) / programs);
    if (r.mufu > 0) fprintf(out, ", %.6g special functions", r.mufu / programs);
    fprintf(out, "\n");
    fprintf(out, "  bound: %s\n  predicted: ", drv_bound_name(r.bound));
    print_time(out, r.predicted_s);
    double p = r.predicted_s;
    fprintf(out, "\n  achievable fraction of each ceiling at that time: HBM %.0f%%, L2 %.0f%%, "
            "f32 %.0f%%, tensor %.0f%%, special functions %.0f%%\n", 100 * r.t_hbm / p,
            100 * r.t_l2 / p, 100 * r.t_f32 / p, 100 * r.t_tensor / p, 100 * r.t_sfu / p);
  }
}
