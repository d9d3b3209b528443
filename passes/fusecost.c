/* Fusion's keep-or-recompute cost model (docs/passes.md, "Keep or recompute"). A wide
 * value two chunk loops need (softmax's row x) can be kept in registers, in shared
 * memory, in the distributed shared memory of a cluster, recomputed (reloaded), or — for
 * a max and a sum of exponentials — not needed twice at all (the online rewrite). Each
 * option is costed per program in seconds of the machine's throughput, on the target's
 * row of targets.def, with the roofline's rules (target.h: tg_l2_hit, tg_resident_per_sm):
 *
 *   bytes   the first read from HBM; each re-read from L2 for the share that stays there
 *           (the proportional rule, over what the resident programs re-read) and from
 *           HBM for the rest; t = HBM / hbm_bw + L2 / l2_bw (the re-read waits for
 *           the reduction before it, so it does not hide under the first read).
 *           The program's other wide traffic (its stores, the loads read once) is
 *           charged to every option at HBM speed: it moves the same bytes under each, but
 *           the occupancy rule below slows it alike (a keep that leaves one program per
 *           SM halves the speed of the output's write too).
 *   flops   the online rewrite's extra work per element (a second exp, the rescale and
 *           its selects) at f32_flops.
 *   occupancy  a keep in shared memory takes kept + reserve bytes per program (reserve:
 *           the 1024-byte alignment of the buffers and the two halves of the largest
 *           exchange scratch the chunk loops take, codegen/smem.c, as fuse sizes it),
 *           which limits the programs an SM holds.
 *           Under 2 resident programs per SM, one program's loads are not overlapped with
 *           another's reductions and its barriers: the time is divided by r / 2 (one
 *           program: half the bandwidth). The rule is the simplest one that makes the
 *           model prefer recomputation from L2 over a keep that leaves one block per SM,
 *           which is what hand-written kernels measure on Hopper (one CTA per SM reaches
 *           about half of HBM bandwidth on a streaming kernel).
 *   cluster the program split over a cluster of C CTAs (2, 4, 8 or 16, where the kernel is
 *           in the class fuse can split and its length divides): each CTA reads its
 *           share once and keeps it in its shared memory (share + reserve bytes per
 *           CTA, and a slot per CTA and a barrier for each reduction's exchange, which
 *           limits the CTAs an SM holds by the occupancy rule); only the
 *           reductions' scalars cross the cluster. Of the sizes that fit, the smallest
 *           C with the fewest seconds and the most CTAs an SM up to four wins (fewer
 *           CTAs to wait for at each barrier, enough to overlap one's barriers with
 *           another's loads).
 *   registers only when the values fit the register budget (never for a tile fuse cuts:
 *           that is why it cuts it).
 *
 * The cheapest available option wins; a tie within 1% goes to the earlier of
 * registers, recompute, online, shared memory, cluster (exact before reassociated, no
 * shared memory before some, one CTA before several). */
#include "pass_util.h"

#include "../target/target.h"

#include <math.h>

static const char *const names[PASS_NKEEP] = {"registers", "recompute", "online", "smem", "cluster"};

const char *pass_keep_name(pass_keep k) { return names[k]; }

/* Seconds of the machine per program for `hbm` and `l2` bytes and `flops`, with r
 * programs resident per SM (the latency rule above). */
static double seconds(const tg_arch *t, double hbm, double l2, double flops, int r) {
  /* a re-read from L2 follows the reduction that needs it inside the program, so it adds
   * to the HBM stream rather than hiding under it (measured on the H200: rmsnorm f16 at
   * 16384 recomputed from L2 84.6 us, kept in shared memory 72.9 us, 2026-12-02) */
  double s = hbm / t->hbm_bw + l2 / t->l2_bw;
  if (flops / t->f32_flops > s) s = flops / t->f32_flops;
  return r < 2 ? s * 2.0 / r : s;
}

/* Re-reads of `bytes` per program, `times` each, by programs of `threads` threads with
 * smem bytes each: the HBM and L2 shares by the proportional rule. */
static void rereads(const tg_arch *t, double bytes, int times, int threads, double smem, double *hbm,
                    double *l2) {
  double resident = (double)t->sms * tg_resident_per_sm(t, threads, smem);
  double hit = tg_l2_hit(t, bytes * resident);
  *l2 = hit * bytes * times;
  *hbm = (1 - hit) * bytes * times;
}

void pass_keep_choose(pass_keep_cost *c) {
  const char *arch = c->arch && tg_has_ceilings(c->arch) ? c->arch : TG_DEFAULT_ARCH;
  const tg_arch *t = tg_find(arch);
  double b = (double)c->kept_bytes, reserve = 1024.0 + 2.0 * (double)c->scratch_bytes;
  double o = (double)c->other_bytes;
  for (int k = 0; k < PASS_NKEEP; k++) c->avail[k] = false, c->seconds[k] = INFINITY;

  /* registers: the values each thread would hold across the loops */
  c->hbm[PASS_KEEP_REGISTERS] = b;
  c->l2[PASS_KEEP_REGISTERS] = 0;
  if (c->values_per_thread <= c->register_budget) {
    c->avail[PASS_KEEP_REGISTERS] = true;
    c->seconds[PASS_KEEP_REGISTERS] = seconds(t, b + o, 0, 0, tg_resident_per_sm(t, c->threads, 0));
  }

  double h, l;
  rereads(t, b, c->reads_recompute - 1, c->threads, 0, &h, &l);
  c->hbm[PASS_KEEP_RECOMPUTE] = b + h;
  c->l2[PASS_KEEP_RECOMPUTE] = l;
  c->avail[PASS_KEEP_RECOMPUTE] = true;
  c->seconds[PASS_KEEP_RECOMPUTE] = seconds(t, b + h + o, l, 0, tg_resident_per_sm(t, c->threads, 0));

  c->hbm[PASS_KEEP_ONLINE] = c->l2[PASS_KEEP_ONLINE] = 0;
  if (c->reads_online > 0) {
    rereads(t, b, c->reads_online - 1, c->threads, 0, &h, &l);
    c->hbm[PASS_KEEP_ONLINE] = b + h;
    c->l2[PASS_KEEP_ONLINE] = l;
    c->avail[PASS_KEEP_ONLINE] = true;
    c->seconds[PASS_KEEP_ONLINE] =
        seconds(t, b + h + o, l, (double)c->online_flops, tg_resident_per_sm(t, c->threads, 0));
  }

  /* shared memory: read once; the chunks come back at shared-memory speed (not charged) */
  c->smem_bytes = b + reserve;
  c->hbm[PASS_KEEP_SMEM] = b;
  c->l2[PASS_KEEP_SMEM] = 0;
  if (c->smem_bytes <= t->smem_block) {
    c->avail[PASS_KEEP_SMEM] = true;
    c->resident_smem = tg_resident_per_sm(t, c->threads, c->smem_bytes);
    c->seconds[PASS_KEEP_SMEM] = seconds(t, b + o, 0, 0, c->resident_smem);
  }

  /* a cluster: each CTA keeps its share; nothing is re-read */
  c->hbm[PASS_KEEP_CLUSTER] = b;
  c->l2[PASS_KEEP_CLUSTER] = 0;
  c->cluster_ctas = 0;
  int most = t->features & TG_CLUSTER16 ? 16 : t->features & TG_CLUSTERS ? 8 : 0;
  for (int n = 2; n <= most; n *= 2) {
    if (!(c->cluster_sizes & n)) continue;
    /* each reduction's exchange: a slot per CTA (at most 8 bytes) and its mbarrier
     * (codegen/emit_cluster.c), static shared memory beside the reserve */
    double share = b / n + reserve + c->reductions * (8.0 * n + 8.0);
    if (share > t->smem_block) continue;
    int r = tg_resident_per_sm(t, c->threads, share);
    double sec = seconds(t, b + o, 0, 0, r);
    /* a larger cluster only where it is faster or holds more CTAs an SM, up to four
     * (measured on the H200, 2026-12-04, with the first, pulling exchange: softmax f32
     * 4096x32768 in 2-CTA clusters of two CTAs an SM 335 us, 4-CTA clusters of four
     * 301 us, 8-CTA 314 us; with the pushing one the sizes are within a few percent but
     * for 1024x131072, where 16 beats 8 by 3%: bench/RESULTS.md) */
    int held = r < 4 ? r : 4, best_held = c->resident_cluster < 4 ? c->resident_cluster : 4;
    if (c->cluster_ctas && sec >= c->seconds[PASS_KEEP_CLUSTER] * 0.99 && held <= best_held) continue;
    c->cluster_ctas = n;
    c->cluster_bytes = share;
    c->resident_cluster = r;
    c->seconds[PASS_KEEP_CLUSTER] = sec;
    c->avail[PASS_KEEP_CLUSTER] = true;
  }

  int best = -1;
  for (int k = 0; k < PASS_NKEEP; k++)
    if (c->avail[k] && (best < 0 || c->seconds[k] < c->seconds[best] * 0.99)) best = k;
  c->best = (pass_keep)best;
  c->arch_used = arch;
}
