/* histogram lowering (GPU targets, after tiling; at -O0 too, since codegen only reads the
 * lowered form): `%h = histogram %x[, %m] : tile<B x i32>` becomes a program's counts in
 * shared memory, built with shared-memory atomics, then read back as a tile:
 *
 *   %buf = smem_alloc : smem<1xBxi32, #shared<swizzle=0, order=[0]>>   (kernel top)
 *   barrier                                  (a loop's last iteration's reads are done)
 *   smem_store %buf, %c0, (const 0 : tile<B x i32>)
 *   barrier
 *   %u  = cast %x : unsigned of x's width (i8, i16 first widened to i32, as `as` does)
 *   %in = cmp lt %u, B  [and %m]             one compare: negatives read as huge
 *   smem_atomic add %buf, %c0, (cast %u : i32), (const 1), %in
 *   barrier
 *   %h  = smem_load %buf, %c0 : tile<B x i32>
 *
 * So each element costs one shared atomic (contended only among the program's own
 * threads, which is what makes it fast: 0.05x torch.bincount through global atomics), and
 * `atomic_add(hist + arange(0, B), h)` then costs one global atomic per bin and program
 * (each bin's owner issues it, codegen/emit_memory.c). Values outside [0, B) and masked-off
 * elements are not counted, as on the interpreter (interp/reduce.c). */
#include "pass_util.h"

/* t's tile with element d, in t's layout (none before tiling). */
static const ir_type *like(ir_module *m, const ir_type *t, tk_dtype d) {
  return ir_type_with_layout(m, ir_type_like(m, t, ir_type_scalar(m, d)), t->layout);
}

/* The unsigned type of x's width, narrow ones widened to 32 bits (the index arithmetic's). */
static tk_dtype index_dtype(tk_dtype d) {
  return ir_dtype_bits(d) == 64 ? TK_U64 : TK_U32;
}

static void lower(ir_module *m, ir_func *f, ir_op *op) {
  ir_value *x = op->operands[0], *mask = op->noperands > 1 ? op->operands[1] : NULL;
  const ir_type *rt = op->results[0]->type;
  int bins = rt->shape[0];
  ir_layout sl = {0};
  sl.kind = IR_LAYOUT_SHARED;
  sl.rank = 1;
  int shape[2] = {1, bins};
  ir_builder top = {m, f->body, f->body->first, op->loc};
  const ir_type *bt = ir_type_smem(m, ir_type_scalar(m, TK_I32), 2, shape, ir_layout_intern(m, &sl));
  ir_value *buf = ir_build1(&top, IR_SMEM_ALLOC, bt, 0, NULL);

  ir_builder b = {m, op->parent, op, op->loc};
  ir_value *slot = ir_const_int(&b, ir_type_scalar(m, TK_I32), 0);
  /* Always: in a loop (the user's, or persist's tile loop, made later) the last
   * iteration's smem_load must be done before the counts are zeroed again; at the top of a
   * kernel it costs one bar.sync per program. */
  ir_build(&b, IR_BARRIER, 0, NULL, 0, NULL);
  ir_value *zeros[3] = {buf, slot, ir_const_int(&b, rt, 0)};
  ir_build(&b, IR_SMEM_STORE, 3, zeros, 0, NULL);
  ir_build(&b, IR_BARRIER, 0, NULL, 0, NULL);

  const ir_type *xt = x->type;
  tk_dtype ud = index_dtype(xt->dtype);
  ir_value *u = x;
  if (ir_dtype_bits(xt->dtype) < 32 && ir_dtype_is_signed(xt->dtype))
    u = ir_build1(&b, IR_CAST, like(m, xt, TK_I32), 1, &u); /* sign-extend before reading unsigned */
  if (u->type->dtype != ud) u = ir_build1(&b, IR_CAST, like(m, xt, ud), 1, &u);
  ir_value *cmp[2] = {u, ir_const_int(&b, u->type, bins)};
  const ir_type *it = like(m, xt, TK_I1);
  ir_op *lt = ir_build(&b, IR_CMP, 2, cmp, 1, &it); /* ir_cmp_build would drop the layout */
  lt->attr = IR_CMP_LT;
  ir_value *in = lt->results[0];
  if (mask && mask->type != it) /* tiling gives it x's layout; a .tkir may not */
    mask = ir_build1(&b, IR_CONVERT_LAYOUT, it, 1, &mask);
  if (mask) in = ir_binary(&b, IR_AND, in, mask);
  ir_value *idx = u->type->dtype == TK_I32 ? u : ir_build1(&b, IR_CAST, like(m, xt, TK_I32), 1, &u);
  ir_value *atom[5] = {buf, slot, idx, ir_const_int(&b, like(m, xt, TK_I32), 1), in};
  ir_op *add = ir_build(&b, IR_SMEM_ATOMIC, 5, atom, 0, NULL);
  add->attr = IR_ATOM_ADD;
  ir_build(&b, IR_BARRIER, 0, NULL, 0, NULL);
  ir_value *load[2] = {buf, slot};
  ir_value *h = ir_build1(&b, IR_SMEM_LOAD, rt, 2, load);
  pass_replace_op(f, op, h);
}

static void collect(ir_op *op, void *ctx) {
  ir_op ***at = ctx;
  if (op->opc == IR_HISTOGRAM) *(*at)++ = op;
}

static void count(ir_op *op, void *ctx) {
  if (op->opc == IR_HISTOGRAM) ++*(int *)ctx;
}

bool pass_histogram(ir_module *m, ir_func *f) {
  if (!m->arch) return false; /* the interpreter runs histogram as it is */
  int n = 0;
  ir_walk(f->body, count, &n);
  if (!n) return false;
  su_arena *a = su_arena_new();
  ir_op **ops = SU_NEW_ARRAY(a, ir_op *, n), **at = ops;
  ir_walk(f->body, collect, &at);
  for (int i = 0; i < n; i++) lower(m, f, ops[i]);
  su_arena_free(a);
  return true;
}
