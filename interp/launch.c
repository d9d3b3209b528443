/* The launch loop: binds the arguments, then runs the kernel body once per program id,
 * resetting the scratch arena between programs. */
#include "internal.h"

#include <stdarg.h>
#include <string.h>

tk_dtype ip_elem_dtype(const ir_type *t) {
  return ir_type_elem(t)->dtype;
}

ip_val ip_val_new(ip_exec *x, const ir_type *t) {
  ip_val v = ip_val_out(x, t);
  memset(v.e, 0, sizeof(ip_elem) * (size_t)v.n);
  return v;
}

ip_val ip_val_out(ip_exec *x, const ir_type *t) {
  ip_val v = {t, ir_type_numel(t), NULL};
  v.e = ip_scratch_take(x->scratch, sizeof(ip_elem) * (size_t)v.n);
  return v;
}

bool ip_fail(ip_exec *x, const ir_op *op, const char *what, const char *fmt, ...) {
  const char *file = x->m->source_name ? x->m->source_name : "<kernel>";
  x->err->len = 0;
  su_buf_printf(x->err, "%s:%u:%u: %s in kernel '%s' at program (%u, %u, %u): ", file,
                op->loc.line, op->loc.col, what, x->f->name, x->pid[0], x->pid[1], x->pid[2]);
  va_list ap;
  va_start(ap, fmt);
  su_buf_vprintf(x->err, fmt, ap);
  va_end(ap);
  return false;
}

/* The canonical value of a launch argument for a parameter of type t; false if a
 * pointer does not belong to mem. */
static bool bind_arg(ip_exec *x, const ir_type *t, tk_arg a, ip_val *out) {
  ip_val v = ip_val_new(x, t);
  tk_dtype dt = t->dtype;
  if (t->kind == IR_PTR) {
    if (!ip_mem_valid_arg(x->mem, a.v.p)) return false;
    int64_t off;
    ip_mem_split(a.v.p, &v.e[0].buf, &off);
    v.e[0].i = off;
  } else if (ir_dtype_is_float(dt)) {
    v.e[0].f = ip_round(dt, a.v.f);
  } else {
    v.e[0] = ip_int(dt, a.v.u);
  }
  *out = v;
  return true;
}

static ip_status bind_args(ip_exec *x, const ip_code *body, const tk_arg *args, int nargs) {
  const ir_block *params = x->f->body;
  if (nargs != params->nargs) {
    su_buf_printf(x->err, "kernel '%s' expects %d arguments, got %d", x->f->name, params->nargs,
                  nargs);
    return IP_BAD_ARGS;
  }
  for (int i = 0; i < nargs; i++) {
    const ir_type *t = params->args[i]->type;
    const char *name = x->f->param_names ? x->f->param_names[i] : "?";
    if (args[i].type != t->dtype) {
      tk_dtype got = args[i].type;
      const char *gname = (unsigned)got < TK_NDTYPE ? ir_dtype_name(got) : "invalid-typed value";
      su_buf_printf(x->err, "argument %d of '%s' ('%s') has type ", i, x->f->name, name);
      if (t->kind == IR_PTR)
        su_buf_printf(x->err, "*%s", ir_dtype_name(t->elem->dtype));
      else
        su_buf_puts(x->err, ir_dtype_name(t->dtype));
      su_buf_printf(x->err, ", but %s %s was passed",
                    gname[0] == 'i' || gname[0] == 'f' ? "an" : "a", got == TK_PTR ? "pointer" : gname);
      return IP_BAD_ARGS;
    }
    if (!bind_arg(x, t, args[i], &x->slots[body->args[i]])) {
      su_buf_printf(x->err, "argument %d of '%s' ('%s') is 0x%llx, which is not an address "
                    "in a live buffer from tk_malloc%s", i, x->f->name, name,
                    (unsigned long long)args[i].v.p,
                    ip_mem_foreign(x->mem, args[i].v.p) ? " on this context (it is another "
                                                          "context's)" : "");
      return IP_BAD_ARGS;
    }
  }
  return IP_OK;
}

/* True if the code has an atomic anywhere (regions included). */
static bool has_atomics(const ip_code *c) {
  for (int i = 0; i < c->ninsts; i++) {
    const ip_inst *in = &c->insts[i];
    if (in->op->opc == IR_ATOMIC || in->op->opc == IR_ATOMIC_CAS) return true;
    for (int r = 0; r < in->op->nregions; r++)
      if (has_atomics(&in->regions[r])) return true;
  }
  return false;
}

typedef struct {
  ir_opcode opc;
  int64_t per; /* its per_program bytes; 0: the kernel has no such op */
} per_program;

static void find_per_program(ir_op *op, void *ctx) {
  per_program *p = ctx;
  if (op->opc == p->opc) p->per = op->attr2;
}

/* The per_program bytes of the kernel's `opc` op (scratch, workspace), 0 when it has
 * none, and in *bytes their total for `programs` programs; false when the total is past
 * the address space. */
static bool program_bytes(const ip_exec *x, ir_opcode opc, uint64_t programs, uint64_t *per, size_t *bytes) {
  per_program want = {opc, 0};
  ir_walk(x->f->body, find_per_program, &want);
  *per = (uint64_t)want.per;
  *bytes = 0;
  if (!*per) return true;
  if (programs > UINT64_MAX / *per || programs * *per > SIZE_MAX) return false;
  *bytes = (size_t)(programs * *per);
  return true;
}

/* The launch's error for a buffer of `what` memory it could not have (why: the
 * allocator's reason, may be empty; freed). */
static ip_status buffer_failed(ip_exec *x, const char *what, uint64_t programs, uint64_t per, su_buf *why) {
  su_buf_printf(x->err, "kernel '%s': cannot allocate %llu x %llu bytes of %s memory%s%s", x->f->name,
                (unsigned long long)programs, (unsigned long long)per, what, why->len ? ": " : "",
                su_buf_str(why));
  su_buf_free(why);
  return IP_FAULT;
}

/* The global scratch of a kernel with scratch ops: a fresh zeroed allocation per launch
 * (what a program reads before writing is then defined, if useless). */
static ip_status alloc_scratch(ip_exec *x, uint64_t programs) {
  uint64_t per;
  size_t bytes;
  su_buf why = {0};
  tk_devptr p;
  bool ok = program_bytes(x, IR_SCRATCH, programs, &per, &bytes);
  if (ok && !per) return IP_OK;
  if (!ok || !ip_mem_alloc(x->mem, bytes, &p, &why)) return buffer_failed(x, "scratch", programs, per, &why);
  int64_t off;
  ip_mem_split(p, &x->gscratch, &off);
  return IP_OK;
}

/* The memory's workspace, for a kernel with workspace ops: zero when first made and kept
 * from launch to launch of one kernel (the GPU's contract: the kernel resets its
 * counters), zeroed again when another kernel used it last. */
static ip_status find_or_grow_workspace(ip_exec *x, uint64_t programs) {
  uint64_t per;
  size_t bytes;
  su_buf why = {0};
  bool ok = program_bytes(x, IR_WORKSPACE, programs, &per, &bytes);
  if (ok && !per) return IP_OK;
  if (!ok || !ip_mem_workspace(x->mem, bytes, x->f->uid, &x->gworkspace, &why))
    return buffer_failed(x, "workspace", programs, per, &why);
  return IP_OK;
}

ip_status ip_launch(ip_memory *mem, const ir_module *m, const ir_func *f, tk_grid grid,
                    const tk_arg *args, int nargs, FILE *out, su_buf *err) {
  err->len = 0;
  su_arena *a = su_arena_new();
  int nslots = 0;
  const su_map *slot_of = NULL;
  ip_code *body = ip_prepare(a, f, &nslots, &slot_of);
  ip_exec x = {.mem = mem, .m = m, .f = f, .scratch = ip_scratch_new(), .out = out ? out : stdout,
               .err = err, .nslots = nslots, .slot_of = slot_of};
  x.slots = SU_NEW_ARRAY(a, ip_val, nslots);
  x.grid[0] = x.nprog[0] = grid.x ? grid.x : 1;
  x.grid[1] = x.nprog[1] = grid.y ? grid.y : 1;
  x.grid[2] = x.nprog[2] = grid.z ? grid.z : 1;
  if (f->persistent) {
    /* as the GPU's launch runs it: min(programs, SMs) programs along x, which loop over
     * the grid (grid_size); the "SMs" are ip_persistent_programs() */
    uint64_t all = (uint64_t)x.grid[0] * x.grid[1] * x.grid[2], p = ip_persistent_programs();
    x.nprog[0] = (unsigned)(all < p ? all : p);
    x.nprog[1] = x.nprog[2] = 1;
  }
  ip_status st = bind_args(&x, body, args, nargs);
  if (st == IP_OK) {
    /* per program of the grid asked for, as the runtime sizes it (a persistent kernel's
     * programs index it by the tile they run) */
    uint64_t total = (uint64_t)x.grid[0] * x.grid[1] * x.grid[2];
    st = alloc_scratch(&x, total);
  }
  /* per program launched (a persistent kernel's programs index it by their own id) */
  if (st == IP_OK) st = find_or_grow_workspace(&x, (uint64_t)x.nprog[0] * x.nprog[1] * x.nprog[2]);
  if (st == IP_OK) {
    uint64_t total = (uint64_t)x.nprog[0] * x.nprog[1] * x.nprog[2];
    /* Atomics keep their sequential meaning: such a kernel runs its programs in order. */
    int threads = has_atomics(body) ? 1 : ip_thread_count(total);
    st = ip_run_grid(&x, body, total, threads);
  }
  if (x.gscratch) {
    su_buf why = {0};
    if (!ip_mem_free(mem, ip_mem_join(x.gscratch, 0), &why)) su_fatal("interpreter: %s", su_buf_str(&why));
    su_buf_free(&why);
  }
  ip_scratch_free(x.scratch);
  su_arena_free(a);
  return st;
}
