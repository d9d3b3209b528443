/* Turns a kernel into slot-numbered code once per launch, so that running an op reads
 * its operands by index instead of looking values up. */
#include "internal.h"

typedef struct {
  su_arena *a;
  su_map *slots; /* ir_value* (as key bytes) -> slot + 1 */
  int n;
} prep;

static int define(prep *p, const ir_value *v) {
  su_map_put(p->slots, (const char *)&v, sizeof v, (void *)(intptr_t)(++p->n));
  return p->n - 1;
}

/* A value used before it is defined is a malformed IR the verifier should have
 * rejected: an internal error, not a user one. */
static int use(prep *p, const ir_value *v) {
  intptr_t s = (intptr_t)su_map_get(p->slots, (const char *)&v, sizeof v);
  if (s == 0) su_fatal("interpreter: a value is used before its definition");
  return (int)s - 1;
}

static void prepare_block(prep *p, const ir_block *b, ip_code *c) {
  c->nargs = b->nargs;
  c->args = SU_NEW_ARRAY(p->a, int, b->nargs);
  for (int i = 0; i < b->nargs; i++) c->args[i] = define(p, b->args[i]);
  for (const ir_op *op = b->first; op; op = op->next) c->ninsts++;
  c->insts = SU_NEW_ARRAY(p->a, ip_inst, c->ninsts);
  int k = 0;
  for (const ir_op *op = b->first; op; op = op->next) {
    ip_inst *in = &c->insts[k++];
    in->op = op;
    in->in = SU_NEW_ARRAY(p->a, int, op->noperands);
    for (int i = 0; i < op->noperands; i++) in->in[i] = use(p, op->operands[i]);
    in->regions = SU_NEW_ARRAY(p->a, ip_code, op->nregions);
    for (int i = 0; i < op->nregions; i++) prepare_block(p, op->regions[i], &in->regions[i]);
    in->out = SU_NEW_ARRAY(p->a, int, op->nresults);
    for (int i = 0; i < op->nresults; i++) in->out[i] = define(p, op->results[i]);
  }
}

ip_code *ip_prepare(su_arena *a, const ir_func *f, int *nslots, const su_map **slot_of) {
  prep p = {a, su_map_new(a), 0};
  ip_code *c = SU_NEW(a, ip_code);
  prepare_block(&p, f->body, c);
  *nslots = p.n;
  if (slot_of) *slot_of = p.slots;
  return c;
}
