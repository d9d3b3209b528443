/* Common subexpression elimination over pure ops, with a scoped hash table: walking in
 * pre-order, an op already computed by an equal op in the same block or an enclosing one
 * is replaced by it. A region is a scope: what it computes is forgotten when it ends, so
 * a value from inside a loop body or an if branch is never reused outside it (it may not
 * have been computed), while one from outside is reused inside.
 *
 * Two ops are equal when opcode, operands (either order for commutative ops), result
 * types and every attribute (attr, attr2, constant bits, ints, str) are. Uses are
 * rewritten as the walk meets them (a use always comes after its def in pre-order), so
 * the pass is linear rather than one whole-function rewrite per hit. */
#include "pass_util.h"

#include <string.h>

typedef struct entry {
  ir_op *op;
  uint64_t hash;
  struct entry *next; /* older entry in the same bucket */
} entry;

typedef struct {
  su_arena *scratch;
  entry **buckets;
  uint64_t mask;
  entry **stack; /* entries in insertion order; a scope ends by popping back to a mark */
  int nstack;
  ir_value **repl; /* by value id: the value that replaces it, or NULL */
  int nvalues;
  bool changed;
} cse_ctx;

static bool cse_candidate(const ir_op *op) {
  return (ir_op_info(op->opc)->traits & IR_PURE) && op->nregions == 0 && op->nresults > 0;
}

static uint64_t hash_ptr(const void *p) {
  uintptr_t u = (uintptr_t)p;
  return su_hash(SU_HASH_INIT, &u, sizeof u);
}

static uint64_t hash_op(const ir_op *op) {
  uint64_t h = SU_HASH_INIT;
  int64_t head[4] = {op->opc, op->attr, op->attr2, op->cval.i};
  h = su_hash(h, head, sizeof head);
  for (int i = 0; i < op->nresults; i++) h = su_hash(h, &op->results[i]->type, sizeof(void *));
  if (op->nints) h = su_hash(h, op->ints, sizeof *op->ints * (size_t)op->nints);
  if (op->str) h = su_hash(h, op->str, strlen(op->str));
  /* Commutative operands are summed so that both orders hash alike. */
  uint64_t opnds = 0;
  bool commut = ir_op_info(op->opc)->traits & IR_COMMUT;
  for (int i = 0; i < op->noperands; i++)
    opnds = commut ? opnds + hash_ptr(op->operands[i]) : opnds * 31 + hash_ptr(op->operands[i]);
  return su_hash(h, &opnds, sizeof opnds);
}

static bool same_operands(const ir_op *a, const ir_op *b) {
  if (a->noperands != b->noperands) return false;
  bool in_order = true;
  for (int i = 0; i < a->noperands; i++) in_order = in_order && a->operands[i] == b->operands[i];
  if (in_order) return true;
  return (ir_op_info(a->opc)->traits & IR_COMMUT) && a->noperands == 2 &&
         a->operands[0] == b->operands[1] && a->operands[1] == b->operands[0];
}

static bool same_op(const ir_op *a, const ir_op *b) {
  if (a->opc != b->opc || a->attr != b->attr || a->attr2 != b->attr2 || a->cval.i != b->cval.i ||
      a->nresults != b->nresults || a->nints != b->nints)
    return false;
  for (int i = 0; i < a->nresults; i++)
    if (a->results[i]->type != b->results[i]->type) return false;
  if (a->nints && memcmp(a->ints, b->ints, sizeof *a->ints * (size_t)a->nints)) return false;
  if ((a->str == NULL) != (b->str == NULL) || (a->str && strcmp(a->str, b->str))) return false;
  return same_operands(a, b);
}

static void cse_block(cse_ctx *c, ir_block *blk);

/* Rewrites op's operands through the replacement map, then either finds an equal op in
 * scope (and retires op) or records op. */
static void cse_op(cse_ctx *c, ir_op *op) {
  for (int i = 0; i < op->noperands; i++) {
    SU_ASSERT(op->operands[i]->id >= 0 && op->operands[i]->id < c->nvalues);
    ir_value *r = c->repl[op->operands[i]->id];
    if (r) op->operands[i] = r;
  }
  for (int r = 0; r < op->nregions; r++) cse_block(c, op->regions[r]);
  if (!cse_candidate(op)) return;
  uint64_t h = hash_op(op);
  entry **bucket = &c->buckets[h & c->mask];
  for (entry *e = *bucket; e; e = e->next) {
    if (e->hash != h || !same_op(e->op, op)) continue;
    for (int i = 0; i < op->nresults; i++) c->repl[op->results[i]->id] = e->op->results[i];
    ir_op_erase(op);
    c->changed = true;
    return;
  }
  entry *e = SU_NEW(c->scratch, entry);
  e->op = op;
  e->hash = h;
  e->next = *bucket;
  *bucket = e;
  c->stack[c->nstack++] = e;
}

static void cse_block(cse_ctx *c, ir_block *blk) {
  int mark = c->nstack;
  ir_op *next;
  for (ir_op *op = blk->first; op; op = next) {
    next = op->next;
    cse_op(c, op);
  }
  /* Scopes nest, so the newest entry of a bucket is always the one to drop. */
  while (c->nstack > mark) {
    entry *e = c->stack[--c->nstack];
    c->buckets[e->hash & c->mask] = e->next;
  }
}

static void count_op(ir_op *op, void *ctx) {
  (void)op;
  ++*(int *)ctx;
}

bool pass_cse(ir_module *m, ir_func *f) {
  (void)m;
  int nops = 0;
  ir_walk(f->body, count_op, &nops);
  int nvalues = ir_number_values(f);
  uint64_t nbuckets = 16;
  while (nbuckets < 2 * (uint64_t)nops) nbuckets *= 2;
  cse_ctx c = {0};
  c.scratch = su_arena_new();
  c.buckets = SU_NEW_ARRAY(c.scratch, entry *, nbuckets);
  c.mask = nbuckets - 1;
  c.stack = SU_NEW_ARRAY(c.scratch, entry *, nops + 1);
  c.repl = SU_NEW_ARRAY(c.scratch, ir_value *, nvalues + 1);
  c.nvalues = nvalues;
  cse_block(&c, f->body);
  su_arena_free(c.scratch);
  return c.changed;
}
