/* sema/lower_random.c — rand, randn and randint, lowered to plain IR ops as Triton 3.6's
 * random.py has them: Philox4x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC 2011) with counter (offset's low word, its high word for 64-bit offsets else 0, 0,
 * 0) and key (seed low, seed high), whatever the offsets' width (Triton's Philox4x64 is
 * reachable from randint4x only through offsets it has already cut into u32 words), then
 * Triton's mapping to floats. Every op of the generator (umulhi, mul, xor, add, shr,
 * integer casts) is exact, so its words are the same bits on the interpreter, the GPU and
 * in Triton; rand adds one int-to-float conversion and one multiply, both correctly
 * rounded, so it is bit-exact too; randn goes through log, sqrt and cos and is as accurate
 * as they are (docs/language.md §6.9). tests/kernels/triton_random_ref.py emulates
 * Triton's module, and tests/interp/test_math.c holds this to its golden values. */
#include "sema_int.h"

static const uint32_t ROUND_A = 0xD2511F53, ROUND_B = 0xCD9E8D57; /* the multipliers */
static const uint32_t KEY_A = 0x9E3779B9, KEY_B = 0xBB67AE85; /* the Weyl sequence of keys */
/* the largest s with s * INT_MAX < 1 after rounding, as Triton's uint_to_uniform_float */
static const double SCALE = 4.6566127342e-10;

typedef struct {
  sema_lowerer *l;
  const ir_type *word;  /* u32, shaped like the offsets */
  const ir_type *sword; /* i32, the same shape */
} gen;

static ir_value *word_const(gen *g, const ir_type *t, uint64_t v) {
  return ir_const_int(&g->l->b, t, (int64_t)v);
}

static ir_value *bin(gen *g, ir_opcode opc, ir_value *x, ir_value *y) {
  return ir_binary(&g->l->b, opc, x, y);
}

/* Runs the rounds on counter c with key (k0, k1), u32 scalars, leaving the four words in
 * c; the key is raised after every round, the last one included, as Triton does. */
static void philox(gen *g, ir_value **c, ir_value *k0, ir_value *k1, int rounds) {
  const ir_type *ke = k0->type;
  ir_value *a = word_const(g, g->word, ROUND_A), *b = word_const(g, g->word, ROUND_B);
  for (int r = 0; r < rounds; r++) {
    ir_value *t0 = sema_lower_convert(g->l, k0, g->word), *t1 = sema_lower_convert(g->l, k1, g->word);
    ir_value *n0 = bin(g, IR_XOR, bin(g, IR_XOR, bin(g, IR_UMULHI, b, c[2]), c[1]), t0);
    ir_value *n2 = bin(g, IR_XOR, bin(g, IR_XOR, bin(g, IR_UMULHI, a, c[0]), c[3]), t1);
    ir_value *n1 = bin(g, IR_MUL, b, c[2]), *n3 = bin(g, IR_MUL, a, c[0]);
    c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
    k0 = bin(g, IR_ADD, k0, word_const(g, ke, KEY_A));
    k1 = bin(g, IR_ADD, k1, word_const(g, ke, KEY_B));
  }
}

/* A random word as an f32 in [0, 1): read as signed, folded onto [0, INT_MAX] by
 * complementing the negative ones (-x - 1 is ~x), converted, scaled. */
static ir_value *uniform(gen *g, ir_value *w) {
  sema_lowerer *l = g->l;
  ir_value *x = sema_lower_convert(l, w, g->sword);
  ir_value *neg = ir_cmp_build(&l->b, IR_CMP_LT, x, word_const(g, g->sword, 0));
  ir_value *ops[3] = {neg, ir_unary(&l->b, IR_NOT, x), x};
  x = ir_build1(&l->b, IR_SELECT, g->sword, 3, ops);
  const ir_type *ft = ir_type_like(l->m, g->word, ir_type_scalar(l->m, TK_F32));
  return bin(g, IR_MUL, sema_lower_convert(l, x, ft), ir_const_float(&l->b, ft, SCALE));
}

/* Box-Muller on two uniforms, the cosine half, as Triton's pair_uniform_to_normal: the
 * first uniform kept off 0 so that its log is finite. */
static ir_value *normal(gen *g, ir_value *u1, ir_value *u2) {
  ir_builder *b = &g->l->b;
  const ir_type *ft = u1->type;
  u1 = bin(g, IR_MAX, ir_const_float(b, ft, 1.0e-7), u1);
  ir_value *th = bin(g, IR_MUL, ir_const_float(b, ft, 6.283185307179586), u2);
  ir_value *r = ir_unary(b, IR_SQRT, bin(g, IR_MUL, ir_const_float(b, ft, -2.0), ir_unary(b, IR_LOG, u1)));
  return bin(g, IR_MUL, r, ir_unary(b, IR_COS, th));
}

ir_value *sema_lower_random(sema_lowerer *l, ast_node *e, sema_call *cl) {
  ast_node *off = cl->argv[1], *rounds = cl->argc > 2 ? cl->argv[2] : NULL;
  const ir_type *oe = sema_elem(off->sema_type), *u32 = ir_type_scalar(l->m, TK_U32);
  const ir_type *u64 = ir_type_scalar(l->m, TK_U64);
  gen g = {l, ir_type_like(l->m, e->sema_type, u32),
           ir_type_like(l->m, e->sema_type, ir_type_scalar(l->m, TK_I32))};
  /* the seed as a u64 (extended by its own signedness, as a cast is), its two words the
   * key; the offsets cast to u32 (extended or truncated, as Triton's offset.to(tl.uint32))
   * and, when 64-bit, their high word shifted down as the second counter word */
  ir_value *seed = sema_lower_as(l, cl->argv[0], u64);
  ir_value *o = sema_lower_as(l, off, ir_type_like(l->m, e->sema_type, oe));
  sema_lower_at(l, e);
  ir_value *c[4] = {sema_lower_convert(l, o, g.word), word_const(&g, g.word, 0)};
  c[2] = c[3] = c[1];
  if (ir_dtype_bits(oe->dtype) == 64)
    c[1] = sema_lower_convert(l, bin(&g, IR_SHR, o, word_const(&g, o->type, 32)), g.word);
  ir_value *k0 = sema_lower_convert(l, seed, u32);
  ir_value *k1 = sema_lower_convert(l, bin(&g, IR_SHR, seed, word_const(&g, u64, 32)), u32);
  philox(&g, c, k0, k1, rounds ? (int)rounds->sema_const.i : SEMA_PHILOX_ROUNDS);
  switch ((sema_random)cl->builtin->sub) {
  case SEMA_RANDINT: return c[0];
  case SEMA_RAND: return uniform(&g, c[0]);
  case SEMA_RANDN: return normal(&g, uniform(&g, c[0]), uniform(&g, c[1]));
  }
  SU_UNREACHABLE();
}
