/* The target table (targets.def) and its queries. */
#include "target.h"

#include <string.h>

static const tg_arch table[] = {
#define TG_ROW(name, cc, specific, ptx, features, smem_static, smem_block, smem_sm, regs_sm,  \
               regs_thread, threads_sm, blocks_sm, sms, hbm_bw, f32_flops, tc_flops, sfu_rate,  \
               l2_bytes, l2_bw, launch_s, machine)                                           \
  {#name, cc, specific, ptx, features, smem_static, smem_block, smem_sm, regs_sm, regs_thread, \
   threads_sm, blocks_sm, sms, hbm_bw, f32_flops, tc_flops, sfu_rate, l2_bytes, l2_bw, launch_s, \
   machine},
#include "targets.def"
#undef TG_ROW
};
enum { NARCHS = sizeof table / sizeof *table };

const tg_arch *tg_find(const char *name) {
  for (int i = 0; name && i < NARCHS; i++)
    if (!strcmp(name, table[i].name)) return &table[i];
  return NULL;
}

const tg_arch *tg_archs(int *n) {
  *n = NARCHS;
  return table;
}

const tg_arch *tg_for_cc(int major, int minor) {
  int cc = major * 10 + minor;
  const tg_arch *best = NULL;
  for (int i = 0; i < NARCHS; i++) {
    const tg_arch *t = &table[i];
    if (t->cc > cc || (t->specific && t->cc != cc)) continue;
    if (!best || t->cc > best->cc || (t->cc == best->cc && t->specific)) best = t;
  }
  return best;
}

bool tg_has(const char *arch, unsigned features) {
  const tg_arch *t = tg_find(arch);
  return t && (t->features & features) == features;
}

int tg_smem_static(const char *arch) {
  const tg_arch *t = tg_find(arch);
  return t ? t->smem_static : 0;
}

int tg_smem_max(const char *arch) {
  const tg_arch *t = tg_find(arch);
  return t ? t->smem_block : 0;
}

int tg_smem_program(const char *arch, int programs_per_sm) {
  int limit = tg_smem_max(arch);
  if (programs_per_sm > 1) {
    int share = tg_smem_sm(arch) / programs_per_sm - TG_SMEM_RESERVED;
    if (share < limit) limit = share;
  }
  return limit;
}

int tg_smem_sm(const char *arch) {
  const tg_arch *t = tg_find(arch);
  return t ? t->smem_sm : 0;
}

bool tg_has_ceilings(const char *arch) {
  const tg_arch *t = tg_find(arch);
  return t && t->hbm_bw > 0 && t->f32_flops > 0 && t->tc_flops > 0 && t->sfu_rate > 0 && t->l2_bytes > 0 &&
         t->l2_bw > 0 && t->launch_s > 0;
}

typedef struct {
  int cc;
  const char *device;
  int sms;
  double hbm_bw, f32_flops, tc_flops, sfu_rate, l2_bytes, l2_bw, launch_s;
} machine;

static const machine machines[] = {
#define TG_MACHINE(cc, device, sms, hbm_bw, f32_flops, tc_flops, sfu_rate, l2_bytes, l2_bw,    \
                   launch_s)                                                                  \
  {cc, device, sms, hbm_bw, f32_flops, tc_flops, sfu_rate, l2_bytes, l2_bw, launch_s},
#define TG_ROW(...)
#include "targets.def"
#undef TG_ROW
#undef TG_MACHINE
};

const tg_arch *tg_on_device(const char *arch, const char *device, tg_arch *buf) {
  const tg_arch *t = tg_find(arch);
  for (size_t i = 0; t && device && i < sizeof machines / sizeof *machines; i++) {
    const machine *m = &machines[i];
    if (m->cc != t->cc || strncmp(device, m->device, strlen(m->device))) continue;
    *buf = *t;
    buf->sms = m->sms;
    buf->hbm_bw = m->hbm_bw;
    buf->f32_flops = m->f32_flops;
    buf->tc_flops = m->tc_flops;
    buf->sfu_rate = m->sfu_rate;
    buf->l2_bytes = m->l2_bytes;
    buf->l2_bw = m->l2_bw;
    buf->launch_s = m->launch_s;
    buf->machine = m->device;
    return buf;
  }
  return t;
}

void tg_machine_names(su_buf *b, const char *arch, const char *sep) {
  const tg_arch *t = tg_find(arch);
  int n = 0;
  for (size_t i = 0; t && i < sizeof machines / sizeof *machines; i++)
    if (machines[i].cc == t->cc) su_buf_printf(b, "%s%s", n++ ? sep : "", machines[i].device);
}

void tg_names(su_buf *b, const char *sep) {
  for (int i = 0; i < NARCHS; i++) su_buf_printf(b, "%s%s", i ? sep : "", table[i].name);
}

int tg_resident_per_sm(const tg_arch *t, int threads, double smem_bytes) {
  int n = threads > 0 ? t->threads_sm / threads : 1;
  if (n > t->blocks_sm) n = t->blocks_sm;
  if (smem_bytes > 0 && n > t->smem_sm / smem_bytes) n = (int)(t->smem_sm / smem_bytes);
  return n < 1 ? 1 : n;
}

double tg_l2_hit(const tg_arch *t, double footprint) {
  if (footprint <= 0) return 0;
  return footprint <= t->l2_bytes ? 1 : t->l2_bytes / footprint;
}
