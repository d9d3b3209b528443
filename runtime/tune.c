/*
 * tune.c — tk_tune, the autotuner: compile a kernel under each configuration, time each on
 * the device, keep the fastest, and remember it on disk.
 *
 * Design notes:
 *  - Parallel compiles go through the disk cache: worker threads, each with a context of
 *    its own (tk.h: a context is used by one thread at a time), compile every
 *    configuration, which stores its PTX; the caller's context then compiles each one
 *    again, hitting the cache, and times it. The PTX a worker stores is by construction
 *    what the caller's compile would make (the same call, the same key), so nothing here
 *    can put wrong code under a key. Without a usable cache, or on the interpreter (whose
 *    compile is only the front end), configurations are compiled one after another. The
 *    workers' contexts find the driver and the cache directory in the environment, as
 *    any context does.
 *  - Timing: warm-up launches (which also compile the specialization the arguments need),
 *    then the median of reps launches, each measured by the backend (time_launch: CUDA
 *    events, L2 flushed before each). A replacement clock (tk_tune_options.timer) stands
 *    in for the measurement in tests; the launches still run.
 *  - The winner is an entry of the compile cache (cache.h: atomic, checksummed, deleted
 *    when corrupt) under a key of its own: the source, name, kernel, base options, every
 *    configuration in order, the arguments' types and divisibility (what selects the
 *    code), the arch, the user's key and the compiler's identity. Its payload names the
 *    configuration's index and text, both checked on reading.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "runtime.h"

#define REQUIRE(ctx, cond, ...) \
  do { if (!(cond)) return rt_error((ctx), TK_ERR_INVALID, __VA_ARGS__); } while (0)

/* "BLOCK=128 warps=4" */
static char *config_text(su_arena *a, const tk_tune_config *c) {
  su_buf b = {0};
  for (int i = 0; i < c->ndefines; i++)
    su_buf_printf(&b, "%s%s=%s", i ? " " : "", c->defines[i].name, c->defines[i].value);
  if (c->warps) su_buf_printf(&b, "%swarps=%d", b.len ? " " : "", c->warps);
  if (c->stages) su_buf_printf(&b, "%sstages=%d", b.len ? " " : "", c->stages);
  char *s = su_strdup(a, b.len ? b.data : "(defaults)");
  su_buf_free(&b);
  return s;
}

/* The compile options of a configuration: base's, then its defines (the last define of
 * a name wins, as with -D). */
static tk_compile_options config_options(su_arena *a, const tk_compile_options *base,
                                         const tk_tune_config *c) {
  tk_compile_options o = base ? *base : (tk_compile_options){0};
  int nb = base ? base->ndefines : 0;
  int n = nb + c->ndefines + (c->warps ? 1 : 0) + (c->stages ? 1 : 0);
  tk_define *d = SU_NEW_ARRAY(a, tk_define, n ? n : 1);
  int k = 0;
  for (int i = 0; i < nb; i++) d[k++] = base->defines[i];
  for (int i = 0; i < c->ndefines; i++) d[k++] = c->defines[i];
  char num[16];
  if (c->warps) {
    snprintf(num, sizeof num, "%d", c->warps);
    d[k++] = (tk_define){"warps", su_strdup(a, num)};
  }
  if (c->stages) {
    snprintf(num, sizeof num, "%d", c->stages);
    d[k++] = (tk_define){"stages", su_strdup(a, num)};
  }
  o.defines = d;
  o.ndefines = k;
  return o;
}

static tk_status check_configs(rt_context *ctx, const tk_tune_config *configs, int n) {
  for (int i = 0; i < n; i++) {
    const tk_tune_config *c = &configs[i];
    REQUIRE(ctx, c->ndefines >= 0 && (c->ndefines == 0 || c->defines),
            "tk_tune: configuration %d has %d defines but no array", i, c->ndefines);
    for (int j = 0; j < c->ndefines; j++)
      REQUIRE(ctx, c->defines[j].name && c->defines[j].value,
              "tk_tune: define %d of configuration %d has a NULL name or value", j, i);
    REQUIRE(ctx, c->warps >= 0 && c->stages >= 0,
            "tk_tune: configuration %d has negative warps or stages", i);
  }
  return TK_OK;
}

/* ---- the winner on disk --------------------------------------------------------------- */

static rt_cache_key winner_key(const char *source, size_t len, const char *name,
                               const char *kernel, const tk_compile_options *base,
                               const char *const *texts, int n, const tk_arg *args, int nargs,
                               const char *arch, const char *key) {
  rt_compiler_id id;
  rt_compiler_id_current(&id);
  rt_cache_key compile = rt_cache_key_compile_id(&id, source, len, name, base, arch);
  rt_key_builder b;
  rt_key_init(&b);
  rt_key_str(&b, "tk-tune-winner-1");
  rt_key_field(&b, compile.b, sizeof compile.b);
  rt_key_str(&b, kernel);
  rt_key_int(&b, n);
  for (int i = 0; i < n; i++) rt_key_str(&b, texts[i]);
  rt_key_int(&b, nargs);
  for (int i = 0; i < nargs; i++) {
    rt_key_int(&b, args[i].type);
    /* divisibility by 16 picks the specialization, so it decides the timing too */
    bool div = (args[i].type == TK_PTR || ir_dtype_is_int(args[i].type)) && args[i].type != TK_I1 &&
               args[i].v.u % RT_SPEC_DIV == 0;
    rt_key_int(&b, div);
  }
  rt_key_str(&b, key);
  return rt_key_final(&b);
}

/* The cached winner's index, or -1 (a miss, or an entry that does not name one of these
 * configurations). */
static int cached_winner(const rt_cache *c, const rt_cache_key *k, const char *const *texts, int n) {
  su_buf b = {0};
  int w = -1;
  if (rt_cache_get(c, k, &b)) {
    const char *s = su_buf_str(&b);
    int idx = -1, off = 0;
    if (sscanf(s, "tk-tune 1 %d %n", &idx, &off) == 1 && idx >= 0 && idx < n &&
        strcmp(s + off, texts[idx]) == 0)
      w = idx;
  }
  su_buf_free(&b);
  return w;
}

static void store_winner(rt_cache *c, const rt_cache_key *k, int w, const char *text) {
  su_buf b = {0};
  su_buf_printf(&b, "tk-tune 1 %d %s", w, text);
  rt_cache_put(c, k, b.data, b.len);
  su_buf_free(&b);
}

/* Appends "KEY: CONFIG" to path (one write, O_APPEND: lines of concurrent tuners do not
 * interleave); a failure is reported, not fatal (the winner is still returned). */
static void record_winner(const char *path, const char *key, const char *text) {
  su_buf b = {0};
  su_buf_printf(&b, "%s: %s\n", *key ? key : "default", strcmp(text, "(defaults)") ? text : "");
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, b.data, b.len) != (ssize_t)b.len)
    fprintf(stderr, "tk tune: warning: cannot record the winner in '%s': %s\n", path, strerror(errno));
  if (fd >= 0) close(fd);
  su_buf_free(&b);
}

/* ---- parallel compiles ---------------------------------------------------------------- */

typedef struct {
  tk_backend kind;
  int device;
  const char *source, *name;
  size_t len;
  const tk_compile_options *opts;
  int n;
  atomic_int next;
} prewarm;

static void *prewarm_run(void *arg) {
  prewarm *p = arg;
  tk_context *c = NULL;
  tk_context_options o = {p->kind, p->device};
  if (tk_context_create(&c, &o) != TK_OK) return NULL;
  for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) {
    tk_module *m = NULL;
    /* a failure is the caller's to report, when it compiles the same again */
    if (tk_module_compile(c, &m, p->source, p->len, p->name, &p->opts[i]) == TK_OK)
      tk_module_destroy(m);
  }
  tk_context_destroy(c);
  return NULL;
}

/* Compiles every configuration on up to jobs threads, for the cache's sake. */
static void compile_in_parallel(rt_context *ctx, const char *source, size_t len,
                                const char *name, const tk_compile_options *opts, int n,
                                int jobs) {
  enum { MAX_JOBS = 16 };
  if (jobs > MAX_JOBS) jobs = MAX_JOBS;
  if (jobs > n) jobs = n;
  prewarm p = {ctx->kind, ctx->device, source, name, len, opts, n, 0};
  pthread_t t[MAX_JOBS];
  int started = 0;
  for (int i = 0; i < jobs; i++)
    if (pthread_create(&t[started], NULL, prewarm_run, &p) == 0) started++;
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
}

/* ---- timing --------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  bool on, tty;
  const char *kernel, *key;
  int n;
} progress;

/* The line for configuration i: rewritten in place on a terminal; elsewhere (a log) only
 * the outcomes (transient says it is not one). */
static void progress_show(const progress *p, int i, const char *text, const char *what,
                          double best_ms, const char *best_text, bool transient) {
  if (!p->on || (transient && !p->tty)) return;
  fprintf(stderr, "%stk tune %s%s%s%s: %d/%d %s: %s", p->tty ? "\r\033[K" : "", p->kernel,
          *p->key ? " [" : "", p->key, *p->key ? "]" : "", i + 1, p->n, text, what);
  if (best_text) fprintf(stderr, " (best %.4g ms: %s)", best_ms, best_text);
  fputs(p->tty ? "" : "\n", stderr);
  fflush(stderr);
}

/* Times kernel k of configuration i: *ms is the median of reps timed launches after
 * warmup ones. */
static tk_status time_config(rt_context *ctx, tk_kernel *h, int i, tk_tune_grid_fn grid,
                             void *grid_user, void *stream, const tk_arg *args, int nargs,
                             const tk_tune_options *t, int warmup, int reps, double *ms) {
  rt_kernel *k = rt_handle_get((uint64_t)(uintptr_t)h, RT_H_KERNEL);
  if (!k) return rt_error(ctx, TK_ERR_INVALID, "tk_tune: the compiled kernel has no live handle");
  tk_grid g = grid(grid_user, h);
  tk_status s = rt_check_args(ctx, k, args, nargs);
  for (int w = 0; s == TK_OK && w < warmup; w++) s = ctx->be->launch(ctx, k, g, stream, args, nargs);
  if (s == TK_OK) s = ctx->be->sync(ctx);
  double *v = calloc((size_t)reps, sizeof *v);
  if (!v) return rt_error(ctx, TK_ERR_MEMORY, "tk_tune: out of host memory");
  for (int r = 0; s == TK_OK && r < reps; r++) {
    s = ctx->be->time_launch(ctx, k, g, stream, args, nargs, !t->no_flush, &v[r]);
    if (s == TK_OK && t->timer) v[r] = t->timer(t->timer_user, i, r);
  }
  if (s == TK_OK) {
    qsort(v, (size_t)reps, sizeof *v, cmp_double);
    *ms = reps % 2 ? v[reps / 2] : 0.5 * (v[reps / 2 - 1] + v[reps / 2]);
  }
  free(v);
  return s;
}

/* ---- tk_tune -------------------------------------------------------------------------- */

/* Compiles configuration i on ctx and finds the kernel. */
static tk_status compile_config(tk_context *ctx, const char *source, size_t len, const char *name,
                                const char *kernel, const tk_compile_options *o, tk_module **m,
                                tk_kernel **k) {
  tk_status s = tk_module_compile(ctx, m, source, len, name, o);
  if (s == TK_OK) s = tk_module_get_kernel(*m, kernel, k);
  if (s != TK_OK && *m) {
    tk_module_destroy(*m);
    *m = NULL;
  }
  return s;
}

tk_status tk_tune(tk_context *h, const char *source, size_t len, const char *name,
                  const char *kernel, const tk_compile_options *base,
                  const tk_tune_config *configs, int nconfigs, tk_tune_grid_fn grid,
                  void *grid_user, void *stream, const tk_arg *args, int nargs,
                  const tk_tune_options *topts, int *best, double *times, tk_module **out) {
  rt_context *ctx = rt_handle_get((uint64_t)(uintptr_t)h, RT_H_CONTEXT);
  REQUIRE(NULL, ctx, "tk_tune: context is %s", h ? "not a live handle (destroyed, or never one)" : "NULL");
  REQUIRE(ctx, best && out, "tk_tune: %s is NULL", best ? "out" : "best");
  *out = NULL;
  *best = -1;
  REQUIRE(ctx, source || len == 0, "tk_tune: source is NULL");
  REQUIRE(ctx, kernel, "tk_tune: kernel is NULL");
  REQUIRE(ctx, configs && nconfigs > 0, "tk_tune: no configurations");
  REQUIRE(ctx, grid, "tk_tune: grid is NULL");
  REQUIRE(ctx, nargs >= 0 && (args || nargs == 0), "tk_tune: args is NULL but nargs is %d", nargs);
  REQUIRE(ctx, !base || base->ndefines == 0 || base->defines, "tk_tune: base options have defines but no array");
  tk_status s = check_configs(ctx, configs, nconfigs);
  if (s != TK_OK) return s;
  tk_tune_options t = topts ? *topts : (tk_tune_options){0};
  REQUIRE(ctx, t.warmup >= 0 && t.reps >= 0 && t.jobs >= 0, "tk_tune: negative warmup, reps or jobs");
  int warmup = t.warmup ? t.warmup : 2, reps = t.reps ? t.reps : 10;
  int jobs = t.jobs ? t.jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
  const char *key = t.key ? t.key : "";
  if (!name) name = "<source>";
  for (int i = 0; times && i < nconfigs; i++) times[i] = -1;

  su_arena *a = su_arena_new();
  const char **texts = SU_NEW_ARRAY(a, const char *, nconfigs);
  tk_compile_options *opts = SU_NEW_ARRAY(a, tk_compile_options, nconfigs);
  for (int i = 0; i < nconfigs; i++) {
    texts[i] = config_text(a, &configs[i]);
    opts[i] = config_options(a, base, &configs[i]);
  }
  const char *arch = base && base->arch ? base->arch : ctx->arch ? ctx->arch : "interp";
  rt_cache cache = {0};
  /* the winners go where the context's compiles go */
  if (!t.no_cache) rt_cache_open(&cache, a, ctx->cache_dir);
  rt_cache_key wk = winner_key(source, len, name, kernel, base, texts, nconfigs, args, nargs, arch, key);
  progress p = {t.progress != 0, isatty(2) != 0, kernel, key, nconfigs};

  int w = t.no_cache ? -1 : cached_winner(&cache, &wk, texts, nconfigs);
  if (w >= 0) {
    tk_kernel *k = NULL;
    s = compile_config(h, source, len, name, kernel, &opts[w], out, &k);
    if (s == TK_OK) {
      *best = w;
      if (t.record) record_winner(t.record, key, texts[w]);
      progress_show(&p, w, texts[w], "the cached winner", 0, NULL, false);
      if (p.on && p.tty) fputc('\n', stderr);
      su_arena_free(a);
      return TK_OK;
    }
    /* the winner no longer compiles (it did when it won): tune again */
  }

  if (ctx->kind == TK_BACKEND_CUDA && cache.dir && !(base && base->no_cache) && jobs > 1 && nconfigs > 1)
    compile_in_parallel(ctx, source, len, name, opts, nconfigs, jobs);

  double best_ms = INFINITY;
  tk_module *best_m = NULL;
  tk_status last = TK_OK;
  su_buf last_msg = {0};
  for (int i = 0; i < nconfigs; i++) {
    progress_show(&p, i, texts[i], "compiling", best_ms, best_m ? texts[*best] : NULL, true);
    tk_module *m = NULL;
    tk_kernel *k = NULL;
    double ms = 0;
    s = compile_config(h, source, len, name, kernel, &opts[i], &m, &k);
    if (s == TK_OK) {
      progress_show(&p, i, texts[i], "timing", best_ms, best_m ? texts[*best] : NULL, true);
      s = time_config(ctx, k, i, grid, grid_user, stream, args, nargs, &t, warmup, reps, &ms);
    }
    if (s != TK_OK) {
      last = s;
      last_msg.len = 0;
      su_buf_printf(&last_msg, "configuration %d (%s): %s", i, texts[i], tk_last_error(h));
      progress_show(&p, i, texts[i], "failed", best_ms, best_m ? texts[*best] : NULL, false);
      if (p.on && p.tty) fputc('\n', stderr);
      if (p.on) fprintf(stderr, "  %s\n", tk_last_error(h));
      tk_module_destroy(m);
      continue;
    }
    if (times) times[i] = ms;
    if (ms < best_ms) {
      tk_module_destroy(best_m);
      best_m = m;
      best_ms = ms;
      *best = i;
    } else {
      tk_module_destroy(m);
    }
    char what[48];
    snprintf(what, sizeof what, "%.4g ms", ms);
    progress_show(&p, i, texts[i], what, best_ms, texts[*best], false);
  }
  if (p.on && p.tty) fputc('\n', stderr);
  if (!best_m) {
    rt_error(ctx, last, "tk_tune: every configuration of '%s' failed; the last, %s", kernel,
             su_buf_str(&last_msg));
    su_buf_free(&last_msg);
    su_arena_free(a);
    return last;
  }
  su_buf_free(&last_msg);
  if (!t.no_cache) store_winner(&cache, &wk, *best, texts[*best]);
  if (t.record) record_winner(t.record, key, texts[*best]);
  *out = best_m;
  su_arena_free(a);
  return TK_OK;
}
