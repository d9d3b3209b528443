/* Kernel objects (a tk_kernel with its signature read once) and Launch objects, what
 * `kernel[grid]` returns: calling one converts the arguments and launches. */
#include "tilek.h"

static const char *const dtype_names[] = {
  [TK_I1] = "i1", [TK_I8] = "i8", [TK_I16] = "i16", [TK_I32] = "i32", [TK_I64] = "i64",
  [TK_U8] = "u8", [TK_U16] = "u16", [TK_U32] = "u32", [TK_U64] = "u64",
  [TK_F16] = "f16", [TK_BF16] = "bf16", [TK_F32] = "f32", [TK_F64] = "f64", [TK_PTR] = "ptr",
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
    PyObject *val = v.type == TK_F64 ? PyFloat_FromDouble(v.v.f) : PyLong_FromLongLong(v.v.i);
    if (!val || PyDict_SetItemString(d, name, val) < 0) {
      Py_XDECREF(val);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(val);
  }
  return d;
}

PyObject *tp_kernel_new(tp_module *m, tk_kernel *k) {
  tp_kernel *self = PyObject_New(tp_kernel, &tp_kernel_type);
  if (!self) return NULL;
  self->module = m;
  Py_INCREF(m);
  self->k = k;
  self->nparams = tk_kernel_num_params(k);
  self->types = PyMem_Calloc((size_t)self->nparams + 1, sizeof(tk_dtype));
  self->pointees = PyMem_Calloc((size_t)self->nparams + 1, sizeof(tk_dtype));
  self->name = PyUnicode_FromString(tk_kernel_name(k));
  self->meta = meta_dict(k);
  if (!self->types || !self->pointees || !self->name || !self->meta) {
    Py_DECREF(self);
    return PyErr_Occurred() ? NULL : PyErr_NoMemory();
  }
  for (int i = 0; i < self->nparams; i++) {
    self->types[i] = tk_kernel_param_type(k, i);
    self->pointees[i] = tk_kernel_param_pointee(k, i);
  }
  return (PyObject *)self;
}

static void kernel_dealloc(tp_kernel *self) {
  PyMem_Free(self->types);
  PyMem_Free(self->pointees);
  Py_XDECREF(self->name);
  Py_XDECREF(self->meta);
  Py_XDECREF(self->module);
  PyObject_Free(self);
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
  if (!PyLong_Check(g) && !PyTuple_Check(g) && !PyList_Check(g) && PyCallable_Check(g)) {
    owned = PyObject_CallOneArg(g, k->meta);
    if (!owned) return -1;
    g = owned;
  }
  unsigned d[3] = {1, 1, 1};
  int rc = 0;
  if (PyLong_Check(g)) {
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

static PyObject *kernel_getitem(tp_kernel *self, PyObject *g) {
  tp_launch_obj *l = PyObject_New(tp_launch_obj, &tp_launch_type);
  if (!l) return NULL;
  Py_INCREF(self);
  l->kernel = self;
  if (parse_grid(self, g, &l->grid, &l->empty) < 0) {
    Py_DECREF(l);
    return NULL;
  }
  return (PyObject *)l;
}

static void launch_dealloc(tp_launch_obj *self) {
  Py_XDECREF(self->kernel);
  PyObject_Free(self);
}

static PyObject *launch_call(tp_launch_obj *self, PyObject *args, PyObject *kw) {
  PyObject *stream = NULL;
  if (kw && PyDict_GET_SIZE(kw)) {
    stream = PyDict_GetItemString(kw, "stream");
    if (PyDict_GET_SIZE(kw) != (stream ? 1 : 0)) {
      PyErr_Format(PyExc_TypeError, "kernel '%U' takes its arguments by position (and stream=)",
                   self->kernel->name);
      return NULL;
    }
  }
  tk_grid grid = self->grid;
  if (self->empty) grid.x = 0; /* tp_launch: converts, then launches nothing */
  if (tp_launch(self->kernel, grid, args, stream) < 0) return NULL;
  Py_RETURN_NONE;
}

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
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A compiled kernel: kernel[grid](*args) launches it.",
  .tp_dealloc = (destructor)kernel_dealloc,
  .tp_repr = (reprfunc)kernel_repr,
  .tp_as_mapping = &kernel_mapping,
  .tp_getset = kernel_getset,
};

PyTypeObject tp_launch_type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tilek.Launch",
  .tp_basicsize = sizeof(tp_launch_obj),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "kernel[grid]: call it with the kernel's arguments to launch.",
  .tp_dealloc = (destructor)launch_dealloc,
  .tp_call = (ternaryfunc)launch_call,
};
