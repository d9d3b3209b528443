/* _tilek_fake_torch — a stand-in for the part of PyTorch the binding's launch path reads,
 * so that the torch path is tested and timed on a machine without torch or a GPU (with
 * libtk on the fake CUDA driver, tests/gpu/fake_cuda.c). Installed as sys.modules["torch"]
 * by the tests and by `bench/python_launch.py --fake-driver`.
 *
 * It has what torch gives the binding, in the same form: `Tensor` (subclassable) with a
 * `dtype` and an `is_cuda` getset descriptor and `data_ptr()`, `get_device()` METH_NOARGS
 * methods, as torch's TensorBase has them; dtype objects `float32`, `float16`, ... that
 * print as torch's do; and `_C._cuda_getCurrentRawStream(device)`, a METH_O builtin
 * returning the stream set with `_set_stream(handle)` (0 until then); and
 * `cuda.device_count()`, 1 until `_set_device_count(n)`. A tensor is made as
 * `Tensor(data_ptr, dtype, device, numel=0)` with device -1 for host memory; it owns
 * nothing. A 1-D contiguous tensor of `numel` elements answers `size()`, `stride()` (in
 * elements, as torch's) and `element_size()`, which the interpreter backend reads to copy
 * a CPU tensor's extent.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- dtype ------------------------------------------------------------------------------ */

typedef struct {
  PyObject_HEAD
  const char *name;
} fdtype;

static PyObject *dtype_repr(fdtype *self) { return PyUnicode_FromFormat("torch.%s", self->name); }

static PyTypeObject dtype_type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "torch.dtype",
  .tp_basicsize = sizeof(fdtype),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_repr = (reprfunc)dtype_repr,
};

/* ---- Tensor ----------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  unsigned long long ptr;
  PyObject *dtype;
  int device; /* -1: host */
  Py_ssize_t numel;
  PyObject *dict;
} ftensor;

static int tensor_init(ftensor *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"data_ptr", "dtype", "device", "numel", NULL};
  unsigned long long ptr;
  PyObject *dt;
  int device = 0;
  Py_ssize_t numel = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "KO!|in", names, &ptr, &dtype_type, &dt, &device, &numel))
    return -1;
  self->numel = numel;
  self->ptr = ptr;
  Py_INCREF(dt);
  Py_XSETREF(self->dtype, dt);
  self->device = device;
  return 0;
}

static void tensor_dealloc(ftensor *self) {
  Py_XDECREF(self->dtype);
  Py_XDECREF(self->dict);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *tensor_dtype(ftensor *self, void *unused) {
  (void)unused;
  return Py_NewRef(self->dtype);
}

static PyObject *tensor_is_cuda(ftensor *self, void *unused) {
  (void)unused;
  return PyBool_FromLong(self->device >= 0);
}

static PyObject *tensor_data_ptr(ftensor *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromUnsignedLongLong(self->ptr);
}

static PyObject *tensor_get_device(ftensor *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromLong(self->device);
}

static PyObject *tensor_size(ftensor *self, PyObject *unused) {
  (void)unused;
  return Py_BuildValue("(n)", self->numel);
}

static PyObject *tensor_stride(ftensor *self, PyObject *unused) {
  (void)self, (void)unused;
  return Py_BuildValue("(n)", (Py_ssize_t)1);
}

static PyObject *tensor_element_size(ftensor *self, PyObject *unused) {
  (void)unused;
  const char *n = ((fdtype *)self->dtype)->name;
  long size = !strcmp(n, "float64") || !strcmp(n, "int64") || !strcmp(n, "complex64") ? 8
              : !strcmp(n, "float32") || !strcmp(n, "int32")                         ? 4
              : !strcmp(n, "float16") || !strcmp(n, "bfloat16") || !strcmp(n, "int16") ? 2
                                                                                        : 1;
  return PyLong_FromLong(size);
}

static PyGetSetDef tensor_getset[] = {
  {"dtype", (getter)tensor_dtype, NULL, NULL, NULL},
  {"is_cuda", (getter)tensor_is_cuda, NULL, NULL, NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef tensor_methods[] = {
  {"data_ptr", (PyCFunction)tensor_data_ptr, METH_NOARGS, NULL},
  {"get_device", (PyCFunction)tensor_get_device, METH_NOARGS, NULL},
  {"size", (PyCFunction)tensor_size, METH_NOARGS, NULL},
  {"stride", (PyCFunction)tensor_stride, METH_NOARGS, NULL},
  {"element_size", (PyCFunction)tensor_element_size, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject tensor_type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "torch.Tensor",
  .tp_basicsize = sizeof(ftensor),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_dealloc = (destructor)tensor_dealloc,
  .tp_getset = tensor_getset,
  .tp_methods = tensor_methods,
  .tp_init = (initproc)tensor_init,
  .tp_new = PyType_GenericNew,
  .tp_dictoffset = offsetof(ftensor, dict),
};

/* ---- the module ------------------------------------------------------------------------- */

static PyObject *current_stream;

static PyObject *get_current_raw_stream(PyObject *self, PyObject *device) {
  (void)self;
  if (!PyLong_Check(device)) return PyErr_Format(PyExc_TypeError, "invalid argument to getCurrentStream");
  return Py_NewRef(current_stream);
}

static PyObject *set_stream(PyObject *self, PyObject *h) {
  (void)self;
  if (!PyLong_Check(h)) return PyErr_Format(PyExc_TypeError, "a stream handle is an int");
  Py_INCREF(h);
  Py_XSETREF(current_stream, h);
  Py_RETURN_NONE;
}

static long device_count = 1;

static PyObject *get_device_count(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return PyLong_FromLong(device_count);
}

static PyObject *set_device_count(PyObject *self, PyObject *n) {
  (void)self;
  device_count = PyLong_AsLong(n);
  if (device_count == -1 && PyErr_Occurred()) return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef cuda_methods[] = {
  {"device_count", get_device_count, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL},
};

static PyMethodDef c_methods[] = {
  {"_cuda_getCurrentRawStream", get_current_raw_stream, METH_O, NULL},
  {NULL, NULL, 0, NULL},
};

static PyMethodDef methods[] = {
  {"_set_stream", set_stream, METH_O, "the handle _C._cuda_getCurrentRawStream returns"},
  {"_set_device_count", set_device_count, METH_O, "what cuda.device_count() returns"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef c_def = {PyModuleDef_HEAD_INIT, "torch._C", NULL, -1, c_methods};
static struct PyModuleDef cuda_def = {PyModuleDef_HEAD_INIT, "torch.cuda", NULL, -1, cuda_methods};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_tilek_fake_torch", NULL, -1, methods};

static fdtype dtypes[] = {
  {PyObject_HEAD_INIT(&dtype_type) "float32"}, {PyObject_HEAD_INIT(&dtype_type) "float16"},
  {PyObject_HEAD_INIT(&dtype_type) "bfloat16"}, {PyObject_HEAD_INIT(&dtype_type) "float64"},
  {PyObject_HEAD_INIT(&dtype_type) "int8"}, {PyObject_HEAD_INIT(&dtype_type) "int16"},
  {PyObject_HEAD_INIT(&dtype_type) "int32"}, {PyObject_HEAD_INIT(&dtype_type) "int64"},
  {PyObject_HEAD_INIT(&dtype_type) "uint8"}, {PyObject_HEAD_INIT(&dtype_type) "bool"},
  {PyObject_HEAD_INIT(&dtype_type) "complex64"},
};

PyMODINIT_FUNC PyInit__tilek_fake_torch(void) {
  if (PyType_Ready(&dtype_type) < 0 || PyType_Ready(&tensor_type) < 0) return NULL;
  current_stream = PyLong_FromLong(0);
  PyObject *m = PyModule_Create(&def);
  PyObject *c = m ? PyModule_Create(&c_def) : NULL;
  PyObject *cuda = c ? PyModule_Create(&cuda_def) : NULL;
  if (!cuda || PyModule_AddObjectRef(m, "_C", c) < 0 || PyModule_AddObjectRef(m, "cuda", cuda) < 0 ||
      PyModule_AddObjectRef(m, "Tensor", (PyObject *)&tensor_type) < 0) {
    Py_XDECREF(cuda);
    Py_XDECREF(c);
    Py_XDECREF(m);
    return NULL;
  }
  Py_DECREF(cuda);
  Py_DECREF(c);
  for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
    if (PyModule_AddObjectRef(m, dtypes[i].name, (PyObject *)&dtypes[i]) < 0) {
      Py_DECREF(m);
      return NULL;
    }
  return m;
}
