/* Per-warpgroup TMA stores (sm_90a; docs/passes.md, "wgstore").
 *
 * tmastore's epilogue stages the tile in shared memory and copies it out: every consumer
 * writes its elements, a barrier of all consumers, one thread issues the copy, and before
 * the buffer (or a slab's slot) is written again, that thread waits for the copy and all
 * consumers wait for it at a barrier. Yet warpgroup w of n writes only its own rows, 64w
 * .. 64w + 63 of each #wgmma block (docs/ir.md), and those rows can go out as boxes of
 * their own. So each warpgroup does the sequence alone (the `wg` form of barrier,
 * tma_store and the bulk ops: its own named barrier, its first thread issuing its boxes
 * and waiting for its copies): no warpgroup waits for another in the epilogue, and the
 * first to finish its k loop starts its epilogue, and then its next tile, without the
 * other. Measured on the H100 (2026-12-07, same call, two rounds): matmul f16 4096^3
 * 185.0 -> 183.5 us, matmul+bias+gelu 197.4 -> 196.1 us.
 *
 * Making the warpgroups take turns at the epilogue as well (wg_turn, so that one's
 * epilogue would overlap the other's products) measured slower: 197.4 -> 211 us on the
 * gelu kernel. The ring holds 4 stages, ~1.4 us of one warpgroup's products, against ~2.4
 * us of one warpgroup's epilogue; the lag that would overlap them cannot outgrow the ring
 * (a stage is refilled only when both warpgroups have read it), so the turns mostly
 * serialize the two epilogues (docs/decisions.md, 2026-12-07).
 *
 * Applied to a warp_spec consumer region of 2 to 7 warpgroups whose only shared-memory
 * syncs are TMA-store sequences of #wgmma tiles whose rows split by warpgroup (whole 64n-
 * row blocks), through maps and buffers nothing else uses. */
#include "pass_util.h"

enum { WG_WARPS = 4, MIN_WGS = 2, MAX_WGS = 7, WG_ROWS = 64 };

typedef struct {
  const ir_func *f;
  int n;
  const char *why;
  ir_op *stores[32], *writes[64];
  int nstores, nwrites;
} scan;

static void check(ir_op *op, void *arg) {
  scan *s = arg;
  if (s->why && op->opc != IR_TMA_STORE) return;
  switch (op->opc) {
  case IR_SMEM_STORE: {
    const ir_layout *l = op->operands[2]->type->layout;
    if (!l || l->kind != IR_LAYOUT_WGMMA || l->warps_per_cta[0] != s->f->num_warps ||
        op->operands[0]->type->rank != 3 || op->operands[0]->type->shape[1] % (WG_ROWS * s->n))
      s->why = "a staged tile's rows do not split by warpgroup";
    else if (s->nwrites == 64) s->why = "too many staging stores";
    else s->writes[s->nwrites++] = op;
    return;
  }
  case IR_TMA_STORE:
    if (s->nstores < 32) s->stores[s->nstores++] = op;
    else if (!s->why) s->why = "too many copies";
    return;
  case IR_SMEM_LOAD: case IR_SMEM_ATOMIC: case IR_CP_ASYNC: case IR_CP_ASYNC_WAIT:
    s->why = "shared memory is used for more than the epilogue's copies";
    return;
  default: return;
  }
}

/* Each copy's map is used by copies only, and each buffer they read is written only by
 * the smem_stores check accepted (any other use would read rows another warpgroup owns). */
static const char *maps_and_buffers(const ir_func *f, const scan *s) {
  for (int i = 0; i < s->nstores; i++) {
    ir_value *map = s->stores[i]->operands[0], *buf = s->stores[i]->operands[1];
    int copies = 0;
    for (int j = 0; j < s->nstores; j++) copies += s->stores[j]->operands[0] == map;
    if (pass_count_uses(f->body, map) != copies) return "a copy's tensor map has other uses";
    if (buf->type->rank != 3 || map->def->nints < 2) return "a copy's slot is not 2-D";
  }
  for (int i = 0; i < s->nwrites; i++) {
    bool copied = false;
    for (int j = 0; j < s->nstores; j++) copied |= s->stores[j]->operands[1] == s->writes[i]->operands[0];
    if (!copied) return "a staged tile is read by something else than a copy";
  }
  return NULL;
}

static void mark(ir_op *op, void *arg) {
  (void)arg;
  if (op->opc == IR_BARRIER || op->opc == IR_TMA_STORE || op->opc == IR_BULK_COMMIT || op->opc == IR_BULK_WAIT)
    op->attr2 = 1;
}

bool pass_wgstore(ir_module *m, ir_func *f) {
  if (!pass_has(m, PASS_WGMMA) || !pass_has(m, PASS_TMA) || f->num_warps % WG_WARPS) return false;
  ir_op *ws = NULL;
  for (ir_op *op = f->body->first; op; op = op->next)
    if (op->opc == IR_WARP_SPEC) ws = op;
  if (!ws) return false;
  scan s = {.f = f, .n = f->num_warps / WG_WARPS};
  ir_walk(ws->regions[0], check, &s);
  if (!s.nstores) return false;
  if (!s.why && (s.n < MIN_WGS || s.n > MAX_WGS)) s.why = "it has not 2 to 7 consumer warpgroups";
  if (!s.why) s.why = maps_and_buffers(f, &s);
  if (s.why) {
    pass_remark_missed(m, "wgstore", f->loc, "kernel '%s': the warpgroups store together: %s", f->name, s.why);
    return false;
  }
  for (int i = 0; i < s.nstores; i++) {
    /* the slot's rows are the map's second-innermost dim */
    ir_op *map = s.stores[i]->operands[0]->def;
    int rows = map->nints - 2;
    if (map->ints[rows] == WG_ROWS) continue;
    int *box = SU_NEW_ARRAY(m->arena, int, map->nints);
    for (int k = 0; k < map->nints; k++) box[k] = map->ints[k];
    box[rows] = WG_ROWS;
    map->ints = box;
  }
  ir_walk(ws->regions[0], mark, NULL);
  return true;
}
