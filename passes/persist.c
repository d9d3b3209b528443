/* A persistent grid for dot kernels on sm_90a (docs/passes.md): the kernel runs on one
 * program per SM (the launch's choice, min(programs, SMs)) and loops over the programs it
 * was launched for, so that one tile's epilogue overlaps the next tile's loads (the
 * producer of a warp-specialized kernel runs ahead into it) and the grid pays its start
 * once per SM.
 *
 *   t = program_id(0); t < gx*gy*gz; t += num_programs(0):
 *     (x, y, z) = the t-th program in grouped order; the body with program_id(a) -> x, y,
 *     z and num_programs(a) -> gx, gy, gz (grid_size: the launched grid)
 *
 * Grouped order (Triton's): within each z, programs go GROUP rows of x at a time, all y
 * for them, then the next GROUP rows, so that programs running together share operand
 * tiles in L2. Every program still runs exactly once; programs of a launch are unordered,
 * so any order is the kernel's semantics.
 *
 * Applied when the target has wgmma, the kernel has a pipelined dot loop to overlap
 * (a dot in a for loop with stages >= 2) that every program runs the same number of times,
 * and `persistent` is not off; `@launch(persistent = true)` forces it (docs/language.md).
 * A loop whose trip count differs between programs (causal attention's, which grows with
 * the query block) is left to the hardware's block scheduler, which hands the next
 * program to whichever SM frees first: a static stride of programs gives each SM a fixed
 * share that can be ~10% heavier than the mean (measured: docs/decisions.md). */
#include "pass_util.h"

enum { GROUP = 8 };

typedef struct {
  const ir_func *f;
  bool found, ragged;
} seek;

static void find_dot_loop(ir_op *op, void *arg) {
  seek *s = arg;
  if (op->opc != IR_DOT || !op->parent->parent || op->parent->parent->opc != IR_FOR) return;
  s->found = true;
  if (!pass_loop_uniform(s->f, op->parent->parent)) s->ragged = true;
}

typedef struct {
  ir_func *f;
  ir_value *pid[3], *np[3];
} remap;

/* program_id and num_programs in the loop's body read the tile's; the loop's own header
 * (at the top level) reads the real ones. */
static void replace_ids(ir_op *op, void *arg) {
  remap *r = arg;
  if (op->opc != IR_PROGRAM_ID && op->opc != IR_NUM_PROGRAMS) return;
  if (op->parent == r->f->body || op->attr < 0 || op->attr > 2) return;
  pass_replace_op(r->f, op, op->opc == IR_PROGRAM_ID ? r->pid[op->attr] : r->np[op->attr]);
}

bool pass_persist(ir_module *m, ir_func *f) {
  if (f->persistent || f->persist < 0 || !pass_has(m, PASS_WGMMA)) return false;
  if (f->persist == 0) {
    seek s = {f, false, false};
    ir_walk(f->body, find_dot_loop, &s);
    if (!s.found || f->num_stages < 2) return false;
    if (s.ragged) {
      pass_remark_missed(m, "persist", f->loc,
                         "not persistent: the dot loop's trip count differs between programs, so "
                         "the hardware's scheduler balances them (@launch(persistent = true) forces it)");
      return false;
    }
  }
  const ir_type *i32 = ir_type_scalar(m, TK_I32);
  ir_op *ret = f->body->last;
  SU_ASSERT(ret && ret->opc == IR_RETURN);
  ir_op *first = f->body->first;
  ir_builder b = {m, f->body, first, f->loc};
  ir_value *g[3];
  for (int a = 0; a < 3; a++) {
    ir_op *op = ir_build(&b, IR_GRID_SIZE, 0, NULL, 1, &i32);
    op->attr = a;
    g[a] = op->results[0];
  }
  ir_value *per = ir_binary(&b, IR_MUL, g[0], g[1]);
  ir_value *total = ir_binary(&b, IR_MUL, per, g[2]);
  ir_op *pid = ir_build(&b, IR_PROGRAM_ID, 0, NULL, 1, &i32);
  ir_op *np = ir_build(&b, IR_NUM_PROGRAMS, 0, NULL, 1, &i32);
  pid->attr = np->attr = 0;
  ir_op *loop = ir_build_for(&b, pid->results[0], total, np->results[0], 0, NULL);
  ir_block *body = loop->regions[0];
  ir_value *t = body->args[0];
  t->name = "tile";
  /* the body: the kernel's ops, moved in */
  for (ir_op *op = first, *next; op != ret; op = next) {
    next = op->next;
    ir_op_erase(op); /* unlinks it */
    ir_block_insert_before(body, op, NULL);
  }
  ir_builder in = {m, body, body->first, f->loc};
  /* grouped order */
  ir_value *z = ir_binary(&in, IR_DIV, t, per);
  ir_value *u = ir_binary(&in, IR_REM, t, per);
  ir_value *grp = ir_const_int(&in, i32, GROUP);
  ir_value *width = ir_binary(&in, IR_MUL, grp, g[1]);
  ir_value *gid = ir_binary(&in, IR_DIV, u, width);
  ir_value *x0 = ir_binary(&in, IR_MUL, gid, grp);
  ir_value *rows = ir_binary(&in, IR_MIN, ir_binary(&in, IR_SUB, g[0], x0), grp);
  ir_value *w = ir_binary(&in, IR_REM, u, width);
  ir_value *x = ir_binary(&in, IR_ADD, x0, ir_binary(&in, IR_REM, w, rows));
  ir_value *y = ir_binary(&in, IR_DIV, w, rows);
  remap r = {f, {x, y, z}, {g[0], g[1], g[2]}};
  x->name = "pid_x";
  y->name = "pid_y";
  ir_walk(body, replace_ids, &r);
  ir_block_insert_before(body, ir_op_new(m, IR_YIELD, f->loc, 0, NULL, 0, NULL), NULL);
  f->persistent = true;
  return true;
}
