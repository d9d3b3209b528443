/* tilek._tilek.tune: tk_tune from Python. The arguments are converted once against the
 * signature of a kernel compiled with the base options (all configurations share the
 * parameters); the grid and the replacement clock are Python callables, called back from
 * tk_tune, whose exceptions stop nothing in C but are re-raised when it returns. */
#include <string.h>

#include "tilek.h"

typedef struct {
  PyObject *grid;   /* int, tuple or callable(meta) */
  PyObject *timer;  /* callable(config, rep) -> ms, or NULL */
  PyObject *error;  /* the first exception a callback raised (a strong reference) */
  PyObject *etype, *etb;
} callbacks;

static void keep_error(callbacks *cb) {
  if (cb->error) {
    PyErr_Clear();
    return;
  }
  PyErr_Fetch(&cb->etype, &cb->error, &cb->etb);
  if (!cb->error) cb->error = Py_NewRef(Py_None);
}

/* The kernel's compile-time parameters as a dict (its meta). */
static PyObject *meta_of(const tk_kernel *k) {
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < tk_kernel_num_cparams(k); i++) {
    const char *name;
    tk_arg v;
    if (tk_kernel_cparam(k, i, &name, &v) != TK_OK) continue;
    PyObject *val = v.type == TK_F64      ? PyFloat_FromDouble(v.v.f)
                    : v.type == TK_NDTYPE ? PyUnicode_FromString(tp_dtype_name((tk_dtype)v.v.i))
                                          : PyLong_FromLongLong(v.v.i);
    if (!val || PyDict_SetItemString(d, name, val) < 0) Py_CLEAR(d);
    Py_XDECREF(val);
  }
  return d;
}

static long grid_dim(PyObject *o, bool *ok) {
  long v = PyLong_AsLong(o);
  if (v == -1 && PyErr_Occurred()) *ok = false;
  return v;
}

static tk_grid grid_cb(void *user, const tk_kernel *k) {
  callbacks *cb = user;
  tk_grid g = {1, 1, 1};
  PyObject *r = NULL;
  if (PyCallable_Check(cb->grid)) {
    PyObject *meta = meta_of(k);
    r = meta ? PyObject_CallOneArg(cb->grid, meta) : NULL;
    Py_XDECREF(meta);
  } else {
    r = Py_NewRef(cb->grid);
  }
  bool ok = r != NULL;
  if (ok && PyLong_Check(r)) {
    g.x = (unsigned)grid_dim(r, &ok);
  } else if (ok && PyTuple_Check(r) && PyTuple_GET_SIZE(r) >= 1 && PyTuple_GET_SIZE(r) <= 3) {
    unsigned *d[3] = {&g.x, &g.y, &g.z};
    for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(r); i++)
      *d[i] = (unsigned)grid_dim(PyTuple_GET_ITEM(r, i), &ok);
  } else if (ok) {
    PyErr_SetString(PyExc_TypeError, "tune: the grid must be an int or a tuple of 1 to 3 ints (or a callable returning one)");
    ok = false;
  }
  Py_XDECREF(r);
  if (!ok) keep_error(cb);
  return g;
}

static double timer_cb(void *user, int config, int rep) {
  callbacks *cb = user;
  PyObject *r = PyObject_CallFunction(cb->timer, "ii", config, rep);
  double ms = r ? PyFloat_AsDouble(r) : -1;
  Py_XDECREF(r);
  if (!r || (ms == -1 && PyErr_Occurred())) {
    keep_error(cb);
    return 0;
  }
  return ms;
}

/* A sequence of (name, value) string pairs into defines held by the Python strings. */
static int defines_of(PyObject *seq, tk_define **out, int *n) {
  PyObject *fast = PySequence_Fast(seq, "defines must be a sequence of (name, value) pairs");
  if (!fast) return -1;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
  tk_define *d = PyMem_Calloc(len ? (size_t)len : 1, sizeof *d);
  if (!d) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject *p = PySequence_Fast_GET_ITEM(fast, i);
    if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 2 ||
        !(d[i].name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(p, 0))) ||
        !(d[i].value = PyUnicode_AsUTF8(PyTuple_GET_ITEM(p, 1)))) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "defines must be (name, value) string pairs");
      PyMem_Free(d);
      Py_DECREF(fast);
      return -1;
    }
  }
  *out = d;
  *n = (int)len;
  Py_DECREF(fast); /* the strings live in the caller's lists, which outlive the call */
  return 0;
}

/* tune(kernel, source, name, base_defines, opt_level, arch, no_cache, configs, grid, args,
 *      key, warmup, reps, jobs, progress, no_tune_cache, no_flush, timer, stream, record,
 *      dot_precision, accurate_math, fp_contract, no_fuse)
 * configs: a list of (defines, warps, stages); the last four are compile()'s numerics, the
 * same for every configuration. Returns (Module, best, times). */
PyObject *tp_tune(PyObject *unused, PyObject *a) {
  (void)unused;
  tp_kernel *k;
  const char *source, *name, *arch, *key, *record;
  Py_ssize_t len;
  PyObject *base_defs, *configs, *grid, *args, *timer, *stream_obj;
  int opt_level, no_cache, warmup, reps, jobs, progress, no_tune_cache, no_flush;
  int dot_precision, accurate_math, fp_contract, no_fuse;
  if (!PyArg_ParseTuple(a, "O!s#sOizpOOO!siiiippOOzippp", &tp_kernel_type, &k, &source, &len, &name,
                        &base_defs, &opt_level, &arch, &no_cache, &configs, &grid, &PyTuple_Type,
                        &args, &key, &warmup, &reps, &jobs, &progress, &no_tune_cache, &no_flush,
                        &timer, &stream_obj, &record, &dot_precision, &accurate_math,
                        &fp_contract, &no_fuse))
    return NULL;
  PyObject *cfgs = PySequence_Fast(configs, "configs must be a sequence");
  if (!cfgs) return NULL;
  Py_ssize_t nc = PySequence_Fast_GET_SIZE(cfgs);
  tk_tune_config *tc = PyMem_Calloc(nc ? (size_t)nc : 1, sizeof *tc);
  double *times = PyMem_Calloc(nc ? (size_t)nc : 1, sizeof *times);
  tk_define *bd = NULL;
  int nbd = 0;
  PyObject *result = NULL;
  tp_args A;
  bool prepared = false;
  callbacks cb = {grid, timer != Py_None ? timer : NULL, NULL, NULL, NULL};
  if (!tc || !times) {
    PyErr_NoMemory();
    goto done;
  }
  if (defines_of(base_defs, &bd, &nbd) < 0) goto done;
  for (Py_ssize_t i = 0; i < nc; i++) {
    PyObject *c = PySequence_Fast_GET_ITEM(cfgs, i);
    PyObject *defs;
    if (!PyArg_ParseTuple(c, "Oii", &defs, &tc[i].warps, &tc[i].stages) ||
        defines_of(defs, (tk_define **)&tc[i].defines, &tc[i].ndefines) < 0)
      goto done;
  }
  if (tp_args_prepare(k, PySequence_Fast_ITEMS(args), PyTuple_GET_SIZE(args), &A) < 0) goto done;
  prepared = true;
  tp_context *ctx = k->module->ctx;
  void *stream = NULL;
  if (ctx->backend == TK_BACKEND_CUDA ? tp_resolve_stream(k, stream_obj, &stream) < 0
                                      : tp_args_upload(&A) < 0)
    goto done;
  tk_compile_options base = {.defines = bd, .ndefines = nbd, .opt_level = opt_level,
                             .arch = arch, .no_cache = no_cache,
                             .dot_precision = (tk_dot_precision)dot_precision,
                             .accurate_math = accurate_math, .fp_contract = fp_contract,
                             .no_fuse = no_fuse};
  tk_tune_options t = {.key = key, .warmup = warmup, .reps = reps, .jobs = jobs,
                       .progress = progress, .no_cache = no_tune_cache, .no_flush = no_flush,
                       .timer = cb.timer ? timer_cb : NULL, .timer_user = &cb,
                       .record = record};
  int best = -1;
  tk_module *mod = NULL;
  tk_status s = tk_tune(ctx->ctx, source, (size_t)len, name, tk_kernel_name(k->k), &base, tc,
                        (int)nc, grid_cb, &cb, stream, A.args, A.n, &t, &best, times, &mod);
  if (cb.error) { /* a callback's exception wins over what it caused */
    tk_module_destroy(mod);
    PyErr_Restore(cb.etype, cb.error, cb.etb);
    cb.error = NULL;
    goto done;
  }
  if (s != TK_OK) {
    tp_raise(ctx->ctx, s, "tune");
    goto done;
  }
  prepared = false;
  if (tp_args_finish(&A, true) < 0) {
    tk_module_destroy(mod);
    goto done;
  }
  tp_module *m = PyObject_New(tp_module, &tp_module_type);
  if (!m) {
    tk_module_destroy(mod);
    goto done;
  }
  Py_INCREF(ctx);
  m->ctx = ctx;
  m->mod = mod;
  PyObject *tl = PyList_New(nc);
  for (Py_ssize_t i = 0; tl && i < nc; i++) {
    PyObject *v = times[i] < 0 ? Py_NewRef(Py_None) : PyFloat_FromDouble(times[i]);
    if (!v) Py_CLEAR(tl);
    else PyList_SET_ITEM(tl, i, v);
  }
  result = tl ? Py_BuildValue("(NiN)", (PyObject *)m, best, tl) : NULL;
  if (!tl) Py_DECREF(m);
done:
  if (prepared) tp_args_finish(&A, false);
  if (cb.error) {
    Py_XDECREF(cb.etype);
    Py_XDECREF(cb.error);
    Py_XDECREF(cb.etb);
  }
  for (Py_ssize_t i = 0; tc && i < nc; i++) PyMem_Free((void *)tc[i].defines);
  PyMem_Free(tc);
  PyMem_Free(times);
  PyMem_Free(bd);
  Py_DECREF(cfgs);
  return result;
}
