/* Running the programs of a grid, on one thread or several. Programs are handed out one
 * at a time in grid order (x fastest, then y, then z) and each runs on its own copy of the
 * execution state: its slots, its scratch arena, its error and print buffers.
 *
 * What stays as it is with one thread: device_print lines come out in program order (a
 * program's lines are kept until every program before it has written its own; a window
 * of WINDOW programs past the oldest unwritten one bounds what is kept), and a fault is
 * the one the first faulting program in grid order reports, with the lines of the
 * programs before it and its own up to the fault. Programs after that one stop being
 * handed out, but some may have run already: their stores stay in memory. Memory written
 * by one program and read or written by another in the same launch is a race, as on the
 * GPU (ip_launch runs kernels with atomics on one thread, in order). */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_THREADS = 256, WINDOW = 64, DEFAULT_SMS = 132 };

int ip_thread_count(uint64_t programs) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  const char *env = getenv("TK_INTERPRET_THREADS");
  long asked = env ? strtol(env, NULL, 10) : 0;
  if (asked > 0) n = asked;
  if (n < 1) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  return (uint64_t)n > programs ? (int)programs : (int)n;
}

uint64_t ip_persistent_programs(void) {
  const char *env = getenv("TK_INTERPRET_SMS");
  long n = env ? strtol(env, NULL, 10) : 0;
  return n > 0 && n <= (1L << 20) ? (uint64_t)n : DEFAULT_SMS;
}

static void set_pid(ip_exec *x, uint64_t p) {
  x->pid[0] = (unsigned)(p % x->nprog[0]);
  p /= x->nprog[0];
  x->pid[1] = (unsigned)(p % x->nprog[1]);
  x->pid[2] = (unsigned)(p / x->nprog[1]);
}

typedef struct {
  const ip_code *body;
  uint64_t total;
  atomic_uint_fast64_t next; /* the next program to hand out */
  pthread_mutex_t lock;      /* guards what follows */
  pthread_cond_t moved;      /* flushed or fault moved */
  uint64_t flushed;          /* programs below this have written their lines */
  uint64_t fault;            /* the first faulting program so far; total if none */
  su_buf *err;               /* its message */
  su_buf lines[WINDOW];      /* the lines of program p in lines[p % WINDOW] until flushed */
  bool done[WINDOW];
  FILE *out;
} pool;

typedef struct {
  pool *pool;
  ip_exec x;
  su_buf print, err;
  pthread_t tid;
  bool started;
} worker;

/* Records program p's end (its lines, its fault if ok is false) and writes out every
 * line that is now in order. Called with the lock held. */
static void finish(pool *pl, worker *w, uint64_t p, bool ok) {
  if (!ok && p < pl->fault) {
    pl->fault = p;
    pl->err->len = 0;
    su_buf_put(pl->err, w->err.data, w->err.len);
  }
  su_buf t = pl->lines[p % WINDOW];
  pl->lines[p % WINDOW] = w->print;
  w->print = t;
  w->print.len = 0;
  pl->done[p % WINDOW] = true;
  while (pl->flushed < pl->total && pl->flushed <= pl->fault && pl->done[pl->flushed % WINDOW]) {
    su_buf *b = &pl->lines[pl->flushed % WINDOW];
    if (b->len) fwrite(b->data, 1, b->len, pl->out);
    b->len = 0;
    pl->done[pl->flushed % WINDOW] = false;
    pl->flushed++;
  }
  pthread_cond_broadcast(&pl->moved);
}

/* Runs one program; an internal error of the interpreter (memory running out for a
 * program's values, an assertion) fails the launch with its message instead of aborting
 * the host process. */
static bool run_program(ip_exec *x, const ip_code *body) {
  su_trap trap;
  su_trap_push(&trap);
  if (setjmp(trap.jb)) {
    x->err->len = 0;
    su_buf_printf(x->err, "internal error in the interpreter at program (%u, %u, %u)%s: %s",
                  x->pid[0], x->pid[1], x->pid[2], trap.oom ? " (out of memory)" : "", trap.msg);
    return false;
  }
  bool ok = ip_run_block(x, body, NULL);
  su_trap_clear(&trap);
  return ok;
}

static void *work(void *arg) {
  worker *w = arg;
  pool *pl = w->pool;
  ip_mark start = ip_scratch_mark(w->x.scratch);
  for (;;) {
    uint64_t p = atomic_fetch_add(&pl->next, 1);
    if (p >= pl->total) break;
    pthread_mutex_lock(&pl->lock);
    while (p >= pl->flushed + WINDOW && p < pl->fault) pthread_cond_wait(&pl->moved, &pl->lock);
    bool stop = p > pl->fault;
    pthread_mutex_unlock(&pl->lock);
    if (stop) break; /* and every later program too */
    set_pid(&w->x, p);
    bool ok = run_program(&w->x, pl->body);
    ip_scratch_release(w->x.scratch, start);
    pthread_mutex_lock(&pl->lock);
    finish(pl, w, p, ok);
    pthread_mutex_unlock(&pl->lock);
  }
  return NULL;
}

/* One thread: programs in order on x itself, lines straight to the stream. */
static ip_status run_in_order(ip_exec *x, const ip_code *body, uint64_t total) {
  ip_mark start = ip_scratch_mark(x->scratch);
  for (uint64_t p = 0; p < total; p++) {
    set_pid(x, p);
    bool ok = run_program(x, body);
    ip_scratch_release(x->scratch, start);
    if (!ok) return IP_FAULT;
  }
  return IP_OK;
}

ip_status ip_run_grid(ip_exec *x, const ip_code *body, uint64_t total, int threads) {
  if (threads <= 1) return run_in_order(x, body, total);
  pool pl = {.body = body, .total = total, .fault = total, .err = x->err, .out = x->out};
  atomic_init(&pl.next, 0);
  pthread_mutex_init(&pl.lock, NULL);
  pthread_cond_init(&pl.moved, NULL);
  worker *ws = calloc((size_t)threads, sizeof *ws);
  ip_val *slots = calloc((size_t)threads * (size_t)x->nslots + 1, sizeof *slots);
  if (!ws || !slots) {
    free(ws), free(slots);
    x->err->len = 0;
    su_buf_printf(x->err, "out of host memory for the interpreter's %d threads", threads);
    return IP_FAULT;
  }
  for (int t = 0; t < threads; t++) {
    worker *w = &ws[t];
    w->pool = &pl;
    w->x = *x;
    w->x.slots = slots + (size_t)t * (size_t)x->nslots;
    for (int i = 0; i < x->nslots; i++) w->x.slots[i] = x->slots[i]; /* the bound arguments */
    w->x.scratch = ip_scratch_new();
    w->x.err = &w->err;
    w->x.print = &w->print;
  }
  /* The caller's thread is worker 0; a thread that cannot start leaves its share to the
   * others. */
  for (int t = 1; t < threads; t++)
    ws[t].started = pthread_create(&ws[t].tid, NULL, work, &ws[t]) == 0;
  work(&ws[0]);
  for (int t = 1; t < threads; t++)
    if (ws[t].started) pthread_join(ws[t].tid, NULL);
  for (int t = 0; t < threads; t++) {
    ip_scratch_free(ws[t].x.scratch);
    su_buf_free(&ws[t].print);
    su_buf_free(&ws[t].err);
  }
  for (int i = 0; i < WINDOW; i++) su_buf_free(&pl.lines[i]);
  pthread_cond_destroy(&pl.moved);
  pthread_mutex_destroy(&pl.lock);
  free(slots), free(ws);
  return pl.fault < total ? IP_FAULT : IP_OK;
}
