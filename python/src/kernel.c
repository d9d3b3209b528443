/* Kernel objects (a tk_kernel with its signature read once) and Launch objects, what
 * `kernel[grid]` returns: calling one converts the arguments and launches. */
#include "tilek.h" /* first: Python.h sets the feature macros */

#include <stddef.h>
#include <time.h>

static const char *const dtype_names[] = {
  [TK_I1] = "i1", [TK_I8] = "i8", [TK_I16] = "i16", [TK_I32] = "i32", [TK_I64] = "i64",
  [TK_U8] = "u8", [TK_U16] = "u16", [TK_U32] = "u32", [TK_U64] = "u64",
  [TK_F16] = "f16", [TK_BF16] = "bf16", [TK_F32] = "f32", [TK_F64] = "f64", [TK_PTR] = "ptr",
  [TK_F8E4M3] = "f8e4m3", [TK_F8E5M2] = "f8e5m2",
};

const char *tp_dtype_name(tk_dtype t) {
  return (unsigned)t < TK_NDTYPE ? dtype_names[t] : "?";
}

/* The compile-time parameters as a dict, for grid callables (Triton's `meta`). */
static PyObject *meta_dict(tk_kernel *k) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  int n = tk_kernel_num_cparams(k);
  for (int i = 0; i < n; i++) {
    const char *name;
    tk_arg v;
    if (tk_kernel_cparam(k, i, &name, &v) != TK_OK) continue;
    PyObject *val = v.type == TK_F64      ? PyFloat_FromDouble(v.v.f)
                    : v.type == TK_NDTYPE ? PyUnicode_FromString(tp_dtype_name((tk_dtype)v.v.i))
                                          : PyLong_FromLongLong(v.v.i);
    if (!val || PyDict_SetItemString(d, name, val) < 0) {
      Py_XDECREF(val);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(val);
  }
  return d;
}

/* The range of an integer parameter's values (u64's upper half takes the slow path). */
static void int_range(tk_dtype t, long long *lo, long long *hi) {
  switch (t) {
  case TK_I1: *lo = 0, *hi = 1; break;
  case TK_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
  case TK_I16: *lo = INT16_MIN, *hi = INT16_MAX; break;
  case TK_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
  case TK_U8: *lo = 0, *hi = UINT8_MAX; break;
  case TK_U16: *lo = 0, *hi = UINT16_MAX; break;
  case TK_U32: *lo = 0, *hi = UINT32_MAX; break;
  case TK_U64: *lo = 0, *hi = INT64_MAX; break;
  default: *lo = INT64_MIN, *hi = INT64_MAX; break;
  }
}

PyObject *tp_kernel_new(tp_module *m, tk_kernel *k) {
  tp_kernel *self = PyObject_GC_New(tp_kernel, &tp_kernel_type);
  if (!self) return NULL;
  self->module = m;
  Py_INCREF(m);
  self->k = k;
  self->last_launch = self->last_grid = NULL;
  self->nparams = tk_kernel_num_params(k);
  self->types = PyMem_Calloc((size_t)self->nparams + 1, sizeof(tk_dtype));
  self->pointees = PyMem_Calloc((size_t)self->nparams + 1, sizeof(tk_dtype));
  self->plan = PyMem_Calloc((size_t)self->nparams + 1, sizeof(tp_param));
  self->name = PyUnicode_FromString(tk_kernel_name(k));
  self->meta = meta_dict(k);
  PyObject_GC_Track(self);
  if (!self->types || !self->pointees || !self->plan || !self->name || !self->meta) {
    Py_DECREF(self);
    return PyErr_Occurred() ? NULL : PyErr_NoMemory();
  }
  for (int i = 0; i < self->nparams; i++) {
    tk_dtype t = self->types[i] = tk_kernel_param_type(k, i);
    self->pointees[i] = tk_kernel_param_pointee(k, i);
    tp_param *p = &self->plan[i];
    p->type = t;
    p->pointee = self->pointees[i];
    p->kind = t == TK_PTR ? TP_P_PTR
              : t == TK_F16 || t == TK_BF16 || t == TK_F32 || t == TK_F64 ? TP_P_FLOAT
                                                                          : TP_P_INT;
    if (p->kind == TP_P_INT) int_range(t, &p->lo, &p->hi);
  }
  return (PyObject *)self;
}

static int kernel_traverse(tp_kernel *self, visitproc visit, void *arg) {
  Py_VISIT(self->module);
  Py_VISIT(self->meta);
  Py_VISIT(self->last_launch);
  Py_VISIT(self->last_grid);
  return 0;
}

/* Breaks the cycle through the launch cache; the kernel stays usable. */
static int kernel_clear(tp_kernel *self) {
  Py_CLEAR(self->last_launch);
  Py_CLEAR(self->last_grid);
  return 0;
}

static void kernel_dealloc(tp_kernel *self) {
  PyObject_GC_UnTrack(self);
  kernel_clear(self);
  PyMem_Free(self->types);
  PyMem_Free(self->pointees);
  PyMem_Free(self->plan);
  Py_XDECREF(self->name);
  Py_XDECREF(self->meta);
  Py_XDECREF(self->module);
  PyObject_GC_Del(self);
}

/* [(name, "*f32"), (name, "i32"), ...] */
static PyObject *kernel_signature(tp_kernel *self, void *unused) {
  (void)unused;
  PyObject *list = PyList_New(self->nparams);
  if (!list) return NULL;
  for (int i = 0; i < self->nparams; i++) {
    const char *pname = tk_kernel_param_name(self->k, i);
    PyObject *t = self->types[i] != TK_PTR ? PyUnicode_FromString(tp_dtype_name(self->types[i]))
                  : self->pointees[i] == TK_NDTYPE
                      ? PyUnicode_FromString("ptr")
                      : PyUnicode_FromFormat("*%s", tp_dtype_name(self->pointees[i]));
    PyObject *item = t ? Py_BuildValue("(sN)", pname ? pname : "", t) : NULL;
    if (!item) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

static PyObject *kernel_name(tp_kernel *self, void *unused) {
  (void)unused;
  return Py_NewRef(self->name);
}

static PyObject *kernel_meta(tp_kernel *self, void *unused) {
  (void)unused;
  return PyDict_Copy(self->meta);
}

static PyObject *kernel_num_threads(tp_kernel *self, void *unused) {
  (void)unused;
  return PyLong_FromLong(tk_kernel_num_threads(self->k));
}

static PyObject *kernel_repr(tp_kernel *self) {
  PyObject *sig = kernel_signature(self, NULL);
  if (!sig) return NULL;
  PyObject *parts = PyList_New(0);
  for (Py_ssize_t i = 0; parts && i < PyList_GET_SIZE(sig); i++) {
    PyObject *it = PyList_GET_ITEM(sig, i);
    PyObject *s = PyUnicode_FromFormat("%U: %U", PyTuple_GET_ITEM(it, 0), PyTuple_GET_ITEM(it, 1));
    if (!s || PyList_Append(parts, s) < 0) Py_CLEAR(parts);
    Py_XDECREF(s);
  }
  Py_DECREF(sig);
  if (!parts) return NULL;
  PyObject *sep = PyUnicode_FromString(", ");
  PyObject *joined = sep ? PyUnicode_Join(sep, parts) : NULL;
  Py_XDECREF(sep);
  Py_DECREF(parts);
  if (!joined) return NULL;
  PyObject *r = PyUnicode_FromFormat("<tilek.Kernel %U(%U)>", self->name, joined);
  Py_DECREF(joined);
  return r;
}

/* ---- grids and launches --------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  tp_kernel *kernel; /* strong */
  tk_grid grid;
  bool empty;        /* a dimension is 0: check the arguments, launch nothing */
  vectorcallfunc vectorcall;
} tp_launch_obj;

/* One grid dimension; -1 with an exception when it is not a non-negative int that fits. */
static int grid_dim(PyObject *o, int axis, unsigned *out) {
  long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Format(PyExc_TypeError, "grid dimension %d must be an int, not %.100s", axis,
                 Py_TYPE(o)->tp_name);
    return -1;
  }
  long long max = axis == 0 ? 0x7fffffffLL : 65535;
  if (v < 0 || v > max) {
    PyErr_Format(PyExc_ValueError, "grid dimension %d is %lld, outside 0..%lld", axis, v, max);
    return -1;
  }
  *out = (unsigned)v;
  return 0;
}

/* An int, a tuple or list of 1..3 ints, or a callable taking the kernel's compile-time
 * parameters (a dict) and returning one of those. */
static int parse_grid(tp_kernel *k, PyObject *g, tk_grid *grid, bool *empty) {
  PyObject *owned = NULL;
  if (!PyIndex_Check(g) && !PyTuple_Check(g) && !PyList_Check(g) && PyCallable_Check(g)) {
    owned = PyObject_CallOneArg(g, k->meta);
    if (!owned) return -1;
    g = owned;
  }
  unsigned d[3] = {1, 1, 1};
  int rc = 0;
  if (PyIndex_Check(g)) { /* an int, or one that says it is (numpy.int64) */
    rc = grid_dim(g, 0, &d[0]);
  } else if (PyTuple_Check(g) || PyList_Check(g)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(g);
    if (n < 1 || n > 3) {
      PyErr_Format(PyExc_ValueError, "a grid has 1 to 3 dimensions, not %zd", n);
      rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++)
      rc = grid_dim(PySequence_Fast_GET_ITEM(g, i), (int)i, &d[i]);
  } else {
    PyErr_Format(PyExc_TypeError,
                 "a grid is an int, a tuple of 1 to 3 ints, or a callable returning one; not %.100s",
                 Py_TYPE(g)->tp_name);
    rc = -1;
  }
  Py_XDECREF(owned);
  if (rc) return -1;
  *grid = (tk_grid){d[0], d[1], d[2]};
  *empty = !d[0] || !d[1] || !d[2];
  return 0;
}

static PyObject *launch_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames);

/* A grid object whose value cannot change: an exact int, or a tuple of exact ints. */
static bool immutable_grid(PyObject *g) {
  if (PyLong_CheckExact(g)) return true;
  if (!PyTuple_CheckExact(g)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(g); i++)
    if (!PyLong_CheckExact(PyTuple_GET_ITEM(g, i))) return false;
  return true;
}

static PyObject *kernel_getitem(tp_kernel *self, PyObject *g) {
  /* the same immutable grid object as last time (a loop's `k[grid]`): the same Launch */
  if (g == self->last_grid && self->last_launch) return Py_NewRef(self->last_launch);
  tk_grid grid;
  bool empty;
  if (parse_grid(self, g, &grid, &empty) < 0) return NULL;
  tp_launch_obj *last = (tp_launch_obj *)self->last_launch;
  if (last && last->grid.x == grid.x && last->grid.y == grid.y && last->grid.z == grid.z &&
      last->empty == empty) {
    /* an equal grid built anew (`k[(cdiv(n, B),)]`): no allocation either */
    if (g != self->last_grid && immutable_grid(g)) Py_XSETREF(self->last_grid, Py_NewRef(g));
    return Py_NewRef(last);
  }
  tp_launch_obj *l = PyObject_GC_New(tp_launch_obj, &tp_launch_type);
  if (!l) return NULL;
  l->kernel = (tp_kernel *)Py_NewRef(self);
  l->grid = grid;
  l->empty = empty;
  l->vectorcall = launch_vectorcall;
  PyObject_GC_Track(l);
  Py_XSETREF(self->last_launch, Py_NewRef(l));
  Py_XSETREF(self->last_grid, immutable_grid(g) ? Py_NewRef(g) : NULL);
  return (PyObject *)l;
}

static int launch_traverse(tp_launch_obj *self, visitproc visit, void *arg) {
  Py_VISIT(self->kernel);
  return 0;
}

static void launch_dealloc(tp_launch_obj *self) {
  PyObject_GC_UnTrack(self);
  Py_XDECREF(self->kernel);
  PyObject_GC_Del(self);
}

static PyObject *s_stream;

/* Launch(*args, stream=None), called through vectorcall: the arguments arrive as an array,
 * no tuple or dict is built. */
static PyObject *launch_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames) {
  tp_launch_obj *self = (tp_launch_obj *)callable;
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  PyObject *stream = NULL;
  if (kwnames && PyTuple_GET_SIZE(kwnames)) {
    if (!s_stream && !(s_stream = PyUnicode_InternFromString("stream"))) return NULL;
    PyObject *kw = PyTuple_GET_ITEM(kwnames, 0);
    if (PyTuple_GET_SIZE(kwnames) != 1 ||
        (kw != s_stream && PyUnicode_Compare(kw, s_stream) != 0)) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "kernel '%U' takes its arguments by position (and stream=)",
                     self->kernel->name);
      return NULL;
    }
    stream = args[n];
  }
  tk_grid grid = self->grid;
  if (self->empty) grid.x = 0; /* tp_launch: converts, then launches nothing */
  if (tp_launch(self->kernel, grid, args, n, stream) < 0) return NULL;
  Py_RETURN_NONE;
}

/* Launch._time(args, reps): ns per launch of `reps` back-to-back tk_launch calls over
 * arguments converted once, on the stream a launch would take: libtk and the driver
 * without the binding, for bench/python_launch.py's breakdown. */
static PyObject *launch_time(tp_launch_obj *self, PyObject *a) {
  PyObject *args;
  int reps;
  if (!PyArg_ParseTuple(a, "O!i", &PyTuple_Type, &args, &reps)) return NULL;
  if (reps < 1) return PyErr_Format(PyExc_ValueError, "reps must be positive");
  tp_kernel *k = self->kernel;
  tp_args A;
  if (tp_args_prepare(k, PySequence_Fast_ITEMS(args), PyTuple_GET_SIZE(args), &A) < 0) return NULL;
  void *stream = NULL;
  bool cuda = k->module->ctx->backend == TK_BACKEND_CUDA;
  if (!cuda || self->empty || tp_resolve_stream(k, NULL, &stream) < 0) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "_time needs a CUDA kernel and a non-empty grid");
    tp_args_finish(&A, false);
    return NULL;
  }
  struct timespec t0, t1;
  tk_status s = TK_OK;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < reps && s == TK_OK; i++) s = tk_launch(k->k, self->grid, stream, A.args, A.n);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  tp_args_finish(&A, false);
  if (s != TK_OK) return tp_raise(A.ctx, s, "_time");
  return PyFloat_FromDouble(((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / reps);
}

static PyMethodDef launch_methods[] = {
  {"_time", (PyCFunction)launch_time, METH_VARARGS,
   "_time(args, reps): ns per tk_launch over arguments converted once (benchmarks)"},
  {NULL, NULL, 0, NULL},
};

static PyMappingMethods kernel_mapping = {NULL, (binaryfunc)kernel_getitem, NULL};

static PyGetSetDef kernel_getset[] = {
  {"name", (getter)kernel_name, NULL, "the kernel's name", NULL},
  {"signature", (getter)kernel_signature, NULL,
   "the parameters: a list of (name, type) with types such as '*f32' and 'i32'", NULL},
  {"meta", (getter)kernel_meta, NULL, "the compile-time parameters as compiled", NULL},
  {"num_threads", (getter)kernel_num_threads, NULL, "threads per program (32 x warps)", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject tp_kernel_type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tilek.Kernel",
  .tp_basicsize = sizeof(tp_kernel),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
  .tp_doc = "A compiled kernel: kernel[grid](*args) launches it.",
  .tp_dealloc = (destructor)kernel_dealloc,
  .tp_traverse = (traverseproc)kernel_traverse,
  .tp_clear = (inquiry)kernel_clear,
  .tp_repr = (reprfunc)kernel_repr,
  .tp_as_mapping = &kernel_mapping,
  .tp_getset = kernel_getset,
};

PyTypeObject tp_launch_type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tilek.Launch",
  .tp_basicsize = sizeof(tp_launch_obj),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
  .tp_doc = "kernel[grid]: call it with the kernel's arguments to launch.",
  .tp_dealloc = (destructor)launch_dealloc,
  .tp_traverse = (traverseproc)launch_traverse,
  .tp_methods = launch_methods,
  .tp_vectorcall_offset = offsetof(tp_launch_obj, vectorcall),
  .tp_call = PyVectorcall_Call,
};
