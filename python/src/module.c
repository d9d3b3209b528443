/* The extension module tilek._tilek: its exceptions, contexts (one tk_context each) and
 * compiled modules (tk_module_compile through libtk's one compile path). */
#include <string.h>

#include "tilek.h"

PyObject *tp_Error, *tp_CompileError;

PyObject *tp_raise(tk_context *ctx, tk_status s, const char *what) {
  const char *msg = tk_last_error(ctx);
  PyObject *type = s == TK_ERR_COMPILE ? tp_CompileError
                   : s == TK_ERR_ARGS  ? PyExc_TypeError
                   : s == TK_ERR_IO    ? PyExc_OSError
                   : s == TK_ERR_MEMORY ? PyExc_MemoryError
                                       : tp_Error;
  if (what && *what)
    PyErr_Format(type, "%s: %s", what, msg && *msg ? msg : tk_status_name(s));
  else
    PyErr_SetString(type, msg && *msg ? msg : tk_status_name(s));
  return NULL;
}

/* ---- Context --------------------------------------------------------------------------- */

static PyObject *context_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *names[] = {"backend", "device", NULL};
  const char *backend = "auto";
  int device = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|si", names, &backend, &device)) return NULL;
  tk_context_options o = {TK_BACKEND_AUTO, device};
  if (strcmp(backend, "auto") == 0) o.backend = TK_BACKEND_AUTO;
  else if (strcmp(backend, "cuda") == 0) o.backend = TK_BACKEND_CUDA;
  else if (strcmp(backend, "interp") == 0 || strcmp(backend, "interpreter") == 0)
    o.backend = TK_BACKEND_INTERP;
  else
    return PyErr_Format(PyExc_ValueError,
                        "unknown backend '%s' (expected 'auto', 'cuda' or 'interp')", backend);
  if (device < 0) return PyErr_Format(PyExc_ValueError, "device %d is negative", device);
  tk_context *ctx = NULL;
  tk_status s = tk_context_create(&ctx, &o);
  if (s != TK_OK) return tp_raise(NULL, s, "cannot create a tk context");
  tp_context *self = (tp_context *)type->tp_alloc(type, 0);
  if (!self) {
    tk_context_destroy(ctx);
    return NULL;
  }
  self->ctx = ctx;
  self->backend = tk_context_backend(ctx);
  self->device = device;
  return (PyObject *)self;
}

static void context_dealloc(tp_context *self) {
  tk_context_destroy(self->ctx);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *context_backend(tp_context *self, void *unused) {
  (void)unused;
  return PyUnicode_FromString(self->backend == TK_BACKEND_CUDA ? "cuda" : "interp");
}

static PyObject *context_device(tp_context *self, void *unused) {
  (void)unused;
  return PyLong_FromLong(self->device);
}

static PyObject *context_synchronize(tp_context *self, PyObject *unused) {
  (void)unused;
  tk_status s = tk_synchronize(self->ctx);
  if (s != TK_OK) return tp_raise(self->ctx, s, "synchronize");
  Py_RETURN_NONE;
}

static PyGetSetDef context_getset[] = {
  {"backend", (getter)context_backend, NULL, "'cuda' or 'interp'", NULL},
  {"device", (getter)context_device, NULL, "the CUDA device ordinal", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef context_methods[] = {
  {"synchronize", (PyCFunction)context_synchronize, METH_NOARGS, "Waits for all work."},
  {NULL, NULL, 0, NULL},
};

PyTypeObject tp_context_type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tilek._tilek.Context",
  .tp_basicsize = sizeof(tp_context),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "Context(backend='auto', device=0): a libtk context (tk_context_create).",
  .tp_new = context_new,
  .tp_dealloc = (destructor)context_dealloc,
  .tp_getset = context_getset,
  .tp_methods = context_methods,
};

/* ---- Module ---------------------------------------------------------------------------- */

static void module_dealloc(tp_module *self) {
  tk_module_destroy(self->mod);
  Py_XDECREF(self->ctx);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *module_kernel_names(tp_module *self, PyObject *unused) {
  (void)unused;
  int n = tk_module_num_kernels(self->mod);
  PyObject *list = PyList_New(n);
  if (!list) return NULL;
  for (int i = 0; i < n; i++) {
    PyObject *s = PyUnicode_FromString(tk_kernel_name(tk_module_kernel(self->mod, i)));
    if (!s) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, s);
  }
  return list;
}

static PyObject *module_kernel(tp_module *self, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name) return NULL;
  tk_kernel *k = NULL;
  tk_status s = tk_module_get_kernel(self->mod, name, &k);
  if (s == TK_ERR_NOT_FOUND) {
    PyErr_SetString(PyExc_KeyError, tk_last_error(self->ctx->ctx));
    return NULL;
  }
  if (s != TK_OK) return tp_raise(self->ctx->ctx, s, NULL);
  return tp_kernel_new(self, k);
}

static PyMethodDef module_methods[] = {
  {"kernel_names", (PyCFunction)module_kernel_names, METH_NOARGS,
   "The names of the module's kernels, in source order."},
  {"kernel", (PyCFunction)module_kernel, METH_O, "kernel(name): the Kernel of that name."},
  {NULL, NULL, 0, NULL},
};

PyTypeObject tp_module_type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tilek._tilek.Module",
  .tp_basicsize = sizeof(tp_module),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A compiled .tk module (made by compile()).",
  .tp_dealloc = (destructor)module_dealloc,
  .tp_methods = module_methods,
};

/* compile(ctx, source, name, defines, opt_level, arch, no_cache, dot_precision,
 * accurate_math, fp_contract, no_fuse): defines is a sequence of (name, value) string
 * pairs, as tkc -D NAME=VALUE; the numerics are tk_compile_options' (tilek.compile maps
 * its keywords to them). */
static PyObject *compile(PyObject *unused, PyObject *args, PyObject *kw) {
  (void)unused;
  static char *names[] = {"ctx", "source", "name", "defines", "opt_level", "arch", "no_cache",
                          "dot_precision", "accurate_math", "fp_contract", "no_fuse", NULL};
  tp_context *ctx;
  const char *source, *name = "<source>", *arch = NULL;
  Py_ssize_t len;
  PyObject *defines = NULL;
  int opt_level = 3, no_cache = 0, dot_precision = TK_DOT_DEFAULT, accurate_math = 0,
      fp_contract = 0, no_fuse = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!s#|sOizpippp", names, &tp_context_type, &ctx,
                                   &source, &len, &name, &defines, &opt_level, &arch,
                                   &no_cache, &dot_precision, &accurate_math, &fp_contract,
                                   &no_fuse))
    return NULL;
  PyObject *seq = defines && defines != Py_None
                      ? PySequence_Fast(defines, "defines must be a sequence of (name, value) pairs")
                      : PyTuple_New(0);
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  tk_define *defs = PyMem_Calloc(n ? (size_t)n : 1, sizeof *defs);
  if (!defs) {
    Py_DECREF(seq);
    return PyErr_NoMemory();
  }
  PyObject *result = NULL;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
      PyErr_SetString(PyExc_TypeError, "defines must be a sequence of (name, value) pairs");
      goto done;
    }
    defs[i].name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(pair, 0));
    defs[i].value = defs[i].name ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(pair, 1)) : NULL;
    if (!defs[i].value) goto done;
  }
  tk_compile_options o = {.defines = defs, .ndefines = (int)n, .opt_level = opt_level,
                          .arch = arch, .no_cache = no_cache,
                          .dot_precision = (tk_dot_precision)dot_precision,
                          .accurate_math = accurate_math, .fp_contract = fp_contract,
                          .no_fuse = no_fuse};
  tk_module *mod = NULL;
  tk_status s = tk_module_compile(ctx->ctx, &mod, source, (size_t)len, name, &o);
  if (s != TK_OK) {
    tp_raise(ctx->ctx, s, s == TK_ERR_COMPILE ? NULL : name);
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
  result = (PyObject *)m;
done:
  PyMem_Free(defs);
  Py_DECREF(seq);
  return result;
}

static PyMethodDef functions[] = {
  {"tune", tp_tune, METH_VARARGS, "tune(...): tk_tune (use tilek.tune)"},
  {"compile", (PyCFunction)(void (*)(void))compile, METH_VARARGS | METH_KEYWORDS,
   "compile(ctx, source, name='<source>', defines=(), opt_level=3, arch=None, no_cache=False, "
   "dot_precision=0, accurate_math=False, fp_contract=False, no_fuse=False)"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
  PyModuleDef_HEAD_INIT, "tilek._tilek", "tk kernels from Python: the C extension over libtk.",
  -1, functions, NULL, NULL, NULL, NULL,
};

static int add_type(PyObject *m, PyTypeObject *t, const char *name) {
  if (PyType_Ready(t) < 0) return -1;
  Py_INCREF(t);
  if (PyModule_AddObject(m, name, (PyObject *)t) < 0) {
    Py_DECREF(t);
    return -1;
  }
  return 0;
}

PyMODINIT_FUNC PyInit__tilek(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  tp_Error = PyErr_NewExceptionWithDoc("tilek.Error", "A failure reported by libtk.",
                                       PyExc_RuntimeError, NULL);
  tp_CompileError = tp_Error ? PyErr_NewExceptionWithDoc(
                                   "tilek.CompileError",
                                   "The .tk source has errors (the message holds every diagnostic).",
                                   tp_Error, NULL)
                             : NULL;
  if (!tp_CompileError || PyModule_AddObject(m, "Error", Py_NewRef(tp_Error)) < 0 ||
      PyModule_AddObject(m, "CompileError", Py_NewRef(tp_CompileError)) < 0 ||
      add_type(m, &tp_context_type, "Context") < 0 || add_type(m, &tp_module_type, "Module") < 0 ||
      add_type(m, &tp_kernel_type, "Kernel") < 0 || add_type(m, &tp_launch_type, "Launch") < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
