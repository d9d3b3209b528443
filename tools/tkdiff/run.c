/* The executions of a kernel and their comparison: the interpreter through libtk (the
 * reference), the interpreter on the unoptimized IR (bit for bit), the CUDA backend
 * through libtk (within the buffers' tolerances), and PTX for sm_90a assembled by ptxas
 * (batched: one module of many kernels per ptxas run, each kernel alone again when a
 * batch fails, to name the seed). */
#include "tkdiff.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver/driver.h"
#include "interp/interp.h"
#include "interp/internal.h" /* ip_typed_loops: the scalar rules alone */
#include "ir/ir.h"
#include "passes/passes.h"

enum { MAX_BATCH = 256 };

struct td_runner {
  td_run_options o;
  tk_context *interp, *cuda;
  su_buf batch;                 /* the sources of the pending kernels */
  uint64_t seeds[MAX_BATCH];
  uint64_t keys[MAX_BATCH];     /* the JIT's signature of each kernel's launch (divisibility, positivity) */
  char *names[MAX_BATCH];
  char *srcs[MAX_BATCH];
  int nbatch;
};

td_runner *td_runner_new(td_run_options *o) {
  td_runner *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->o = *o;
  if (r->o.ptx_batch <= 0) r->o.ptx_batch = 32;
  if (r->o.ptx_batch > MAX_BATCH) r->o.ptx_batch = MAX_BATCH;
  tk_context_options io = {.backend = TK_BACKEND_INTERP};
  if (tk_context_create(&r->interp, &io) != TK_OK) {
    fprintf(stderr, "tkdiff: cannot create the interpreter: %s\n", tk_last_error(NULL));
    free(r);
    return NULL;
  }
  if (o->gpu) {
    tk_context_options co = {.backend = TK_BACKEND_CUDA};
    if (tk_context_create(&r->cuda, &co) != TK_OK) {
      fprintf(stderr, "tkdiff: no CUDA device (%s): the GPU comparison is skipped\n",
              tk_last_error(NULL));
      r->cuda = NULL;
      o->gpu = r->o.gpu = false;
    }
  }
  return r;
}

/* A fault leaves the CUDA context dead (sticky): the next kernels get a new one rather
 * than all failing with it (seed 5005542's misaligned access rejected the 17 kernels of
 * its job after it). Without a device any more, the GPU comparison stops. */
static void restart_cuda(td_runner *r) {
  tk_context_destroy(r->cuda);
  tk_context_options co = {.backend = TK_BACKEND_CUDA};
  if (tk_context_create(&r->cuda, &co) != TK_OK) {
    fprintf(stderr, "tkdiff: the CUDA context could not be made again (%s): the GPU comparison stops\n",
            tk_last_error(NULL));
    r->cuda = NULL;
  }
}

void td_runner_free(td_runner *r) {
  if (!r) return;
  for (int i = 0; i < r->nbatch; i++) free(r->srcs[i]), free(r->names[i]);
  su_buf_free(&r->batch);
  tk_context_destroy(r->cuda);
  tk_context_destroy(r->interp);
  free(r);
}

bool td_runner_has_gpu(const td_runner *r) { return r->cuda != NULL; }

int td_runner_pending(const td_runner *r) { return r->nbatch; }

static size_t buf_bytes(const td_buf *b) { return b->n * (size_t)ir_dtype_bytes(b->dt); }

/* Output contents of one execution: one host array per buffer (inputs too, unused). */
typedef struct {
  void *host[TD_MAX_BUFS];
} outputs;

static void outputs_free(outputs *o) {
  for (int i = 0; i < TD_MAX_BUFS; i++) free(o->host[i]);
}

/* Runs k through the public API on ctx; false with the reason in detail. kind is set to
 * what failed. */
static bool run_api(tk_context *ctx, const td_kernel *k, outputs *out, su_buf *detail,
                    td_result *kind, const char *who) {
  tk_compile_options co = {.no_cache = 1};
  tk_module *m = NULL;
  tk_kernel *kr = NULL;
  tk_devptr dev[TD_MAX_BUFS] = {0};
  tk_arg args[TD_MAX_PARAMS];
  bool ok = false;
  if (tk_module_compile(ctx, &m, k->src.data, k->src.len, "gen.tk", &co) != TK_OK) {
    su_buf_printf(detail, "%s rejected the kernel:\n%s\n", who, tk_last_error(ctx));
    *kind = TD_REJECTED;
    return false;
  }
  if (tk_module_get_kernel(m, k->name, &kr) != TK_OK) {
    su_buf_printf(detail, "%s: %s\n", who, tk_last_error(ctx));
    *kind = TD_REJECTED;
    goto done;
  }
  for (int i = 0; i < k->nbufs; i++) {
    size_t n = buf_bytes(&k->bufs[i]);
    out->host[i] = malloc(n);
    if (!out->host[i] || tk_malloc(ctx, &dev[i], n) != TK_OK) {
      su_buf_printf(detail, "%s: allocation failed: %s\n", who, tk_last_error(ctx));
      *kind = TD_RUNTIME;
      goto done;
    }
    td_fill(k, i, out->host[i]);
    if (tk_memcpy_htod(ctx, dev[i], out->host[i], n) != TK_OK) {
      su_buf_printf(detail, "%s: copy failed: %s\n", who, tk_last_error(ctx));
      *kind = TD_RUNTIME;
      goto done;
    }
  }
  for (int i = 0; i < k->nparams; i++)
    args[i] = k->params[i].is_ptr ? tk_arg_ptr(dev[k->params[i].buf]) : k->params[i].arg;
  if (tk_launch(kr, k->grid, NULL, args, k->nparams) != TK_OK || tk_synchronize(ctx) != TK_OK) {
    su_buf_printf(detail, "%s: the launch failed: %s\n", who, tk_last_error(ctx));
    *kind = TD_RUNTIME;
    goto done;
  }
  for (int i = 0; i < k->nbufs; i++) {
    if (!k->bufs[i].out) continue;
    if (tk_memcpy_dtoh(ctx, out->host[i], dev[i], buf_bytes(&k->bufs[i])) != TK_OK) {
      su_buf_printf(detail, "%s: copy back failed: %s\n", who, tk_last_error(ctx));
      *kind = TD_RUNTIME;
      goto done;
    }
  }
  ok = true;
done:
  for (int i = 0; i < k->nbufs; i++)
    if (dev[i]) tk_free(ctx, dev[i]);
  tk_module_destroy(m);
  return ok;
}

/* The kernel on the interpreter through the internal driver, at opt level opt: from its
 * source, or (roundtrip) from the text of its IR optimized at -O3, printed and parsed
 * back as .tkir, or (persist) its IR with the persist pass run for sm_90a after the
 * target-independent ones (*applied: whether the pass made the kernel persistent; when
 * it did not, nothing runs), launched as the GPU launches a persistent kernel
 * (TD_PERSIST_SMS_TEXT programs looping over the grid). */
static bool run_internal_as(const td_kernel *k, int opt, bool roundtrip, bool persist, bool *applied,
                            outputs *out, su_buf *detail, td_result *kind) {
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  drv_options o;
  drv_options_init(&o);
  o.arch = NULL;
  o.opt_level = opt;
  const char *what = roundtrip ? "the -O3 IR printed and parsed back"
                     : persist ? "the -O3 IR after persist"
                     : opt == 0 ? "the driver at -O0" : "the interpreter's scalar rules";
  su_source *src = su_source_new(a, "gen.tk", k->src.data, k->src.len);
  ir_module *m = NULL;
  su_buf text = {0};
  if (roundtrip) {
    drv_options o3 = o;
    o3.opt_level = 3;
    ir_module *m3 = drv_compile(a, src, &o3, &d);
    if (m3) {
      ir_print(&text, m3);
      src = su_source_new(a, "gen.tkir", su_buf_str(&text), text.len);
      m = drv_compile(a, src, &o, &d);
    }
  } else {
    m = drv_compile(a, src, &o, &d);
  }
  if (m && persist) {
    /* persist alone, on the interpreter's IR: the first part chose what it chose without a
     * target, so only the program ids can differ from the reference run */
    m->arch = "sm_90a";
    pass_options po = {.opt_level = 3, .verify_each = true, .only = "persist"};
    if (!pass_run(m, &po, &d) || !ir_verify(m, &d)) m = NULL;
    ir_func *pf = m ? ir_module_find(m, k->name) : NULL;
    *applied = pf && pf->persistent;
    if (m && !*applied) {
      su_arena_free(a);
      return true;
    }
    setenv("TK_INTERPRET_SMS", TD_PERSIST_SMS_TEXT, 1);
  }
  ip_memory *mem = NULL;
  bool ok = false;
  if (!m) {
    su_buf msg = {0};
    su_diags_render(&d, &msg);
    su_buf_printf(detail, "%s: rejected:\n%s", what, su_buf_str(&msg));
    if (roundtrip) su_buf_printf(detail, "the IR:\n%s", su_buf_str(&text));
    su_buf_free(&msg);
    *kind = TD_REJECTED;
    goto done;
  }
  mem = ip_memory_new();
  tk_devptr dev[TD_MAX_BUFS] = {0};
  tk_arg args[TD_MAX_PARAMS];
  su_buf err = {0};
  for (int i = 0; i < k->nbufs; i++) {
    size_t n = buf_bytes(&k->bufs[i]);
    out->host[i] = malloc(n);
    void *h;
    if (!out->host[i] || !ip_mem_alloc(mem, n, &dev[i], &err) || !(h = ip_mem_host(mem, dev[i], n, &err))) {
      su_buf_printf(detail, "%s: allocation failed: %s\n", what, su_buf_str(&err));
      *kind = TD_RUNTIME;
      su_buf_free(&err);
      goto done;
    }
    td_fill(k, i, h);
  }
  for (int i = 0; i < k->nparams; i++)
    args[i] = k->params[i].is_ptr ? tk_arg_ptr(dev[k->params[i].buf]) : k->params[i].arg;
  ir_func *f = ir_module_find(m, k->name);
  if (!f || ip_launch(mem, m, f, k->grid, args, k->nparams, stdout, &err) != IP_OK) {
    su_buf_printf(detail, "%s: the launch failed: %s\n", what, f ? su_buf_str(&err) : "no kernel");
    *kind = TD_RUNTIME;
    su_buf_free(&err);
    goto done;
  }
  su_buf_free(&err);
  for (int i = 0; i < k->nbufs; i++)
    if (k->bufs[i].out) memcpy(out->host[i], ip_mem_host(mem, dev[i], buf_bytes(&k->bufs[i]), NULL), buf_bytes(&k->bufs[i]));
  ok = true;
done:
  if (persist) unsetenv("TK_INTERPRET_SMS");
  su_buf_free(&text);
  ip_memory_free(mem);
  su_arena_free(a);
  return ok;
}

static bool run_internal(const td_kernel *k, int opt, bool roundtrip, outputs *out, su_buf *detail,
                         td_result *kind) {
  return run_internal_as(k, opt, roundtrip, false, NULL, out, detail, kind);
}

/* The self-check: changes one element of the first output buffer of o (its last byte's
 * low bit, which changes an integer, a float's value, or an i1 from 0 to 1); false if
 * there is none. */
static bool inject(const td_kernel *k, outputs *o) {
  for (int i = 0; i < k->nbufs; i++) {
    if (!k->bufs[i].out) continue;
    size_t w = (size_t)ir_dtype_bytes(k->bufs[i].dt), n = k->bufs[i].n;
    unsigned char *p = (unsigned char *)o->host[i] + (n / 2) * w;
    /* the low mantissa bit (little-endian: the first byte); for i1 the value itself; a
     * NaN, which would stay one, becomes zero */
    bool nan = false;
    switch (k->bufs[i].dt) {
    case TK_F16: { uint16_t h; memcpy(&h, p, 2); nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff); break; }
    case TK_BF16: { uint16_t h; memcpy(&h, p, 2); nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f); break; }
    case TK_F32: { float f; memcpy(&f, p, 4); nan = f != f; break; }
    case TK_F64: { double f; memcpy(&f, p, 8); nan = f != f; break; }
    default: break;
    }
    if (nan) memset(p, 0, w);
    else p[0] ^= 1;
    return true;
  }
  return false;
}

/* Compares every output buffer of got against ref; false with the differences. */
static bool compare_all(const td_kernel *k, const outputs *ref, const outputs *got, double tol,
                        const char *what, su_buf *detail) {
  bool ok = true;
  for (int i = 0; i < k->nbufs; i++) {
    if (!k->bufs[i].out) continue;
    su_buf why = {0};
    size_t n = td_compare(k, i, ref->host[i], got->host[i], tol, &why);
    if (n) {
      su_buf_printf(detail, "%s: %zu of %zu elements of %s (%s) differ%s%s:\n%s", what, n, k->bufs[i].n,
                    k->bufs[i].name, ir_dtype_name(k->bufs[i].dt), k->bufs[i].why ? "; tolerance from " : "",
                    k->bufs[i].why ? k->bufs[i].why : "", su_buf_str(&why));
      ok = false;
    }
    su_buf_free(&why);
  }
  return ok;
}

/* A divisibility signature the JIT compiles k for (runtime/jit.c), chosen by the seed so
 * that a replay makes the same PTX: half the kernels get the full signature (every integer
 * and pointer parameter a multiple of 16: the variant the CUDA backend compiles when the
 * module is compiled), a quarter that of their launch (bit i for a pointer, since device
 * allocations are aligned far beyond 16, or an integer that is a multiple of 16), a
 * quarter none (tkc's default). */
/* Whether a float argument is what the JIT's positivity bit means: 0 < x < inf as the
 * parameter's type holds it. */
static bool positive(tk_dtype t, double v) {
  if (t == TK_F32) return (float)v > 0 && (float)v < HUGE_VALF;
  return v > 0 && v < HUGE_VAL;
}

static uint64_t launch_key(const td_kernel *k) {
  uint64_t key = 0;
  int how = (int)(k->seed % 4);
  if (how == 3) return 0;
  for (int i = 0; i < k->nparams && i < 64; i++) {
    const td_param *p = &k->params[i];
    bool flt = !p->is_ptr && (p->arg.type == TK_F32 || p->arg.type == TK_F64);
    bool spec = p->is_ptr || (ir_dtype_is_int(p->arg.type) && p->arg.type != TK_I1 &&
                              (how < 2 || (p->arg.v.u & 15) == 0)) ||
                (flt && (how < 2 || positive(p->arg.type, p->arg.v.f)));
    if (spec) key |= UINT64_C(1) << i;
  }
  return key;
}

td_result td_run(td_runner *r, const td_kernel *k, bool ptx, su_buf *detail) {
  outputs ref = {0}, o0 = {0}, gpu = {0}, rt = {0}, sc = {0}, ps = {0};
  td_result res = TD_PASS;
  if (!run_api(r->interp, k, &ref, detail, &res, "the interpreter")) goto done;
  if (r->o.o0) {
    if (!run_internal(k, 0, false, &o0, detail, &res)) goto done;
    if (r->o.inject && inject(k, &o0)) su_buf_puts(detail, "(a fault was injected into -O0's output)\n");
    if (!compare_all(k, &ref, &o0, 0, "-O0 against -O3 (interpreter, bit for bit)", detail)) {
      res = TD_MISMATCH;
      goto done;
    }
  }
  if (r->o.scalar) {
    ip_typed_loops = false;
    bool ran = run_internal(k, 3, false, &sc, detail, &res);
    ip_typed_loops = true;
    if (!ran) goto done;
    if (!compare_all(k, &ref, &sc, 0, "the scalar rules against the typed loops (interpreter, bit for bit)", detail)) {
      res = TD_MISMATCH;
      goto done;
    }
  }
  if (r->o.roundtrip) {
    if (!run_internal(k, 0, true, &rt, detail, &res)) goto done;
    if (!compare_all(k, &ref, &rt, 0, "the -O3 IR through its text (interpreter, bit for bit)", detail)) {
      res = TD_MISMATCH;
      goto done;
    }
  }
  if (r->o.persist) {
    bool applied = false;
    if (!run_internal_as(k, 3, false, true, &applied, &ps, detail, &res)) goto done;
    if (applied && !compare_all(k, &ref, &ps, 0, "the -O3 IR after persist, a persistent launch (interpreter, bit for bit)", detail)) {
      res = TD_MISMATCH;
      goto done;
    }
  }
  if (r->cuda) {
    if (!run_api(r->cuda, k, &gpu, detail, &res, "the CUDA backend")) {
      if (res == TD_RUNTIME) restart_cuda(r);
      goto done;
    }
    if (!compare_all(k, &ref, &gpu, -1, "GPU against the interpreter", detail)) {
      res = TD_MISMATCH;
      goto done;
    }
  }
  if (r->o.ptx && ptx && r->nbatch < MAX_BATCH) {
    su_buf_printf(&r->batch, "%s\n", k->src.data);
    r->seeds[r->nbatch] = k->seed;
    r->keys[r->nbatch] = launch_key(k);
    r->names[r->nbatch] = strdup(k->name);
    r->srcs[r->nbatch] = strdup(k->src.data);
    r->nbatch++;
  }
done:
  outputs_free(&ref);
  outputs_free(&o0);
  outputs_free(&gpu);
  outputs_free(&rt);
  outputs_free(&sc);
  outputs_free(&ps);
  return res;
}

/* PTX of source text for sm_90a through the GPU back end, as the JIT makes it: compiled
 * without a target, each kernel's parameters given the facts of its launch
 * (names[i], keys[i]: drv_variant's), then lowered for the target and generated. False
 * with the diagnostics. */
static bool emit_ptx(const char *text, char **names, const uint64_t *keys, int n, su_buf *ptx, su_buf *why) {
  su_arena *a = su_arena_new();
  su_diags d;
  su_diags_init(&d, a, NULL);
  drv_options o;
  drv_options_init(&o);
  o.arch = NULL;
  su_source *src = su_source_new(a, "gen.tk", text, strlen(text));
  ir_module *m = drv_compile(a, src, &o, &d);
  o.arch = "sm_90a";
  if (m)
    for (int i = 0; i < n; i++) {
      ir_func *f = ir_module_find(m, names[i]);
      for (int p = 0; f && p < f->body->nargs && p < 64; p++) {
        const ir_type *t = f->body->args[p]->type;
        if (!(keys[i] >> p & 1)) continue;
        if (ir_param_can_divide(t)) ir_func_set_param_div(m, f, p, DRV_SPEC_DIV);
        else if (ir_param_can_be_positive(t)) ir_func_set_param_pos(m, f, p, true);
      }
    }
  bool ok = m && drv_lower(m, o.arch, &o, &d) && drv_codegen(m, &o, CG_PTX, ptx, &d) && !d.nerrors;
  if (!ok) {
    su_buf msg = {0};
    su_diags_render(&d, &msg);
    su_buf_printf(why, "the GPU back end rejected it:\n%s", su_buf_str(&msg));
    su_buf_free(&msg);
  }
  su_arena_free(a);
  return ok;
}

/* ptxas -arch=sm_90a on the text; false with its output. */
static bool assemble(const char *ptxas, const su_buf *ptx, su_buf *why) {
  const char *dir = getenv("TMPDIR");
  char in[4096], log[4096];
  snprintf(in, sizeof in, "%s/tkdiff-XXXXXX.ptx", dir && *dir ? dir : "/tmp");
  snprintf(log, sizeof log, "%s/tkdiff-XXXXXX.log", dir && *dir ? dir : "/tmp");
  int fi = mkstemps(in, 4), fl = mkstemps(log, 4);
  if (fi < 0 || fl < 0) {
    su_buf_printf(why, "cannot make a temporary file: %s\n", strerror(errno));
    if (fi >= 0) close(fi), unlink(in);
    if (fl >= 0) close(fl), unlink(log);
    return false;
  }
  bool ok = write(fi, ptx->data, ptx->len) == (ssize_t)ptx->len;
  close(fi);
  if (ok) {
    pid_t pid = fork();
    if (pid == 0) {
      dup2(fl, 1);
      dup2(fl, 2);
      execl(ptxas, ptxas, "-arch=sm_90a", "-o", "/dev/null", in, (char *)NULL);
      _exit(127);
    }
    int st = 0;
    ok = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) {
      char b[4096];
      ssize_t n = pread(fl, b, sizeof b - 1, 0);
      b[n > 0 ? n : 0] = 0;
      su_buf_printf(why, "ptxas -arch=sm_90a failed (status %d):\n%s", WIFEXITED(st) ? WEXITSTATUS(st) : -1, b);
    }
  } else {
    su_buf_printf(why, "cannot write %s\n", in);
  }
  close(fl);
  unlink(in);
  unlink(log);
  return ok;
}

int td_runner_flush(td_runner *r, su_buf *failed, uint64_t *seeds, int max_seeds, int *nknown) {
  int nfail = 0;
  *nknown = 0;
  if (!r->nbatch) return 0;
  su_buf ptx = {0}, why = {0};
  bool ok = emit_ptx(su_buf_str(&r->batch), r->names, r->keys, r->nbatch, &ptx, &why) &&
            (!r->o.ptxas || assemble(r->o.ptxas, &ptx, &why));
  su_buf_free(&ptx);
  su_buf_free(&why);
  if (!ok) { /* find the kernels that fail alone */
    for (int i = 0; i < r->nbatch; i++) {
      su_buf p = {0}, w = {0};
      if (!emit_ptx(r->srcs[i], &r->names[i], &r->keys[i], 1, &p, &w) ||
          (r->o.ptxas && !assemble(r->o.ptxas, &p, &w))) {
        const td_known *kn = td_known_match(su_buf_str(&w));
        if (kn) {
          su_buf_printf(failed, "KNOWN %s: seed %llu\n", kn->id, (unsigned long long)r->seeds[i]);
          (*nknown)++;
          su_buf_free(&p);
          su_buf_free(&w);
          continue;
        }
        su_buf_printf(failed, "seed %llu: %s\n", (unsigned long long)r->seeds[i], su_buf_str(&w));
        if (nfail < max_seeds) seeds[nfail] = r->seeds[i];
        nfail++;
      }
      su_buf_free(&p);
      su_buf_free(&w);
    }
    if (!nfail && !*nknown) {
      su_buf_printf(failed, "a batch of %d kernels fails together but none alone (seeds %llu..)\n",
                    r->nbatch, (unsigned long long)r->seeds[0]);
      if (max_seeds > 0) seeds[0] = r->seeds[0];
      nfail = 1;
    }
  }
  for (int i = 0; i < r->nbatch; i++) free(r->srcs[i]), free(r->names[i]);
  r->nbatch = 0;
  su_buf_free(&r->batch);
  return nfail;
}
