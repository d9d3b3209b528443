/* Compiling units on several threads. Once the target is registered (target.c does that
 * under pthread_once), LLVM shares nothing unsynchronized between contexts (NVPTX's
 * process-wide call-sequence counter is atomic; ptx_merge.c hides its numbers), so units
 * in their own contexts need no locking; what they share (the IR module, the options,
 * the source) is only read. The threads take units in index order from a shared counter, and every
 * result lands in its unit, so nothing a caller sees depends on which thread ran what. */
#include "cg.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A few threads already take a two-kernel module from sequential to the slowest kernel's
 * time; more would mostly add LLVM contexts that stay idle. */
enum { MAX_THREADS = 8 };
/* Explicit, not the inherited RLIMIT_STACK: O3 and instruction selection recurse deeply
 * on large unrolled kernels, and a sanitized build uses more stack per frame. */
static const size_t STACK_BYTES = (size_t)16 << 20;

typedef struct {
  cg_unit *units;
  int n;
  atomic_int next;
} work;

static void *run_units(void *arg) {
  work *w = arg;
  for (int i; (i = atomic_fetch_add(&w->next, 1)) < w->n;) cg_compile_unit(&w->units[i]);
  return NULL;
}

/* min(n, cores, MAX_THREADS), or less as $TK_CG_THREADS says (1: all on the caller's
 * thread), to measure the gain or rule threads out when debugging: the output is the
 * same whatever the count. */
static int thread_count(int n) {
  long cap = sysconf(_SC_NPROCESSORS_ONLN);
  const char *env = getenv("TK_CG_THREADS");
  int asked = env ? atoi(env) : 0;
  if (asked > 0 && (cap <= 0 || asked < cap)) cap = asked;
  int t = n < MAX_THREADS ? n : MAX_THREADS;
  return cap > 0 && cap < t ? (int)cap : t;
}

static bool same_report(const su_diag *a, const su_diag *b) {
  return a->sev == b->sev && a->loc.src == b->loc.src && a->loc.off == b->loc.off &&
         a->loc.line == b->loc.line && a->loc.col == b->loc.col && !strcmp(a->msg, b->msg);
}

/* Whether an error like g was already replayed from one of units[0..k). */
static bool reported_before(const cg_unit *units, int k, const su_diag *g) {
  for (int i = 0; i < k; i++)
    for (const su_diag *h = units[i].diags->first; h; h = h->next)
      if (same_report(g, h)) return true;
  return false;
}

/* Replays unit k's reports into d; an error already reported drops with its notes. */
static void replay(const cg_unit *units, int k, su_diags *d) {
  bool dropping = false;
  for (const su_diag *g = units[k].diags->first; g; g = g->next) {
    if (g->sev != SU_NOTE) dropping = reported_before(units, k, g);
    if (dropping) continue;
    switch (g->sev) {
    case SU_ERROR: su_error(d, g->loc, "%s", g->msg); break;
    case SU_WARNING: su_warning(d, g->loc, "%s", g->msg); break;
    case SU_NOTE: su_note(d, g->loc, "%s", g->msg); break;
    case SU_REMARK: su_remark(d, g->loc, "%s", g->msg); break;
    }
  }
}

void cg_compile_units(cg_unit *units, int n, su_diags *d) {
  work w = {units, n, 0};
  pthread_t threads[MAX_THREADS];
  int started = 0;
  int want = thread_count(n);
  if (want > 1) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK_BYTES);
    /* The caller's thread is one of them; a thread that cannot start leaves its share to
     * the others. */
    while (started < want - 1 && pthread_create(&threads[started], &attr, run_units, &w) == 0)
      started++;
    pthread_attr_destroy(&attr);
  }
  run_units(&w);
  for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
  for (int k = 0; k < n; k++) replay(units, k, d);
}
