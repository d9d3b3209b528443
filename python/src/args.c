/* The launch path: each Python argument becomes the tk_arg its parameter wants, checked
 * against the kernel's signature, then one tk_launch on the caller's stream.
 *
 * What a pointer parameter takes, by backend:
 *  - CUDA: a PyTorch CUDA tensor (data_ptr, on the context's device), an object with
 *    __cuda_array_interface__ (CuPy, Numba, ...), or one with __dlpack__ on a CUDA device.
 *  - interpreter: a PyTorch CPU tensor, an object with the buffer protocol (NumPy,
 *    bytearray, array.array, memoryview), __array_interface__ or a CPU __dlpack__. The
 *    interpreter runs over its own bounds-checked buffers, so each distinct host range is
 *    copied in before the launch and, when writable, back after it.
 * Torch tensors are recognized by type (Tensor from an already imported torch), so the
 * common case costs a few attribute reads, not a protocol's dictionary. */
#include <string.h>

#include "tilek.h"

/* ---- torch, when the caller has imported it ------------------------------------------ */

/* torch's own C accessors of torch.Tensor (TensorBase's getset and METH_NOARGS method
 * descriptors), called directly for a tensor whose type resolves these names to them —
 * torch.Tensor and every subclass that does not override them, such as nn.Parameter — as
 * torch's own operators read a tensor: no attribute lookup, no bound method, no argument
 * tuple. Anything else goes through ordinary attribute access. */
typedef struct {
  getter get;
  void *closure;
} tp_getter;

static struct {
  bool ready;
  PyTypeObject *tensor;           /* torch.Tensor */
  PyObject *dtype_of[TK_NDTYPE];  /* tk dtype -> the torch.dtype object (NULL: none) */
  bool direct;                    /* the four accessors below were found */
  PyObject *descr[4];             /* their descriptors, as torch.Tensor resolves them */
  tp_getter dtype, is_cuda;
  PyCFunction data_ptr, get_device;
  PyTypeObject *direct_sub;       /* the last subclass found to share them (strong) */
  PyObject *get_stream;  /* torch._C._cuda_getCurrentRawStream(device) -> int, or NULL */
  PyCFunction get_stream_fn;      /* its C function when it is a METH_O builtin */
  PyObject *get_stream_self;
  PyObject *cuda;        /* torch.cuda: device_count(), and current_stream() when
                            get_stream is missing */
  int ncuda;             /* torch.cuda.device_count(), read at the first CUDA launch; -1:
                            not yet, or unknown */
} torch = {.ncuda = -1};

static PyObject *s_data_ptr, *s_dtype, *s_is_cuda, *s_get_device, *s_cai, *s_dlpack,
    *s_dlpack_device, *s_aai, *s_cuda_stream, *s_size, *s_stride, *s_element_size, *s_torch,
    *s_data, *s_typestr;

static int intern_names(void) {
  if (s_data_ptr) return 0;
#define I(var, text) if (!(var = PyUnicode_InternFromString(text))) return -1
  I(s_dtype, "dtype");
  I(s_is_cuda, "is_cuda");
  I(s_get_device, "get_device");
  I(s_cai, "__cuda_array_interface__");
  I(s_dlpack, "__dlpack__");
  I(s_dlpack_device, "__dlpack_device__");
  I(s_aai, "__array_interface__");
  I(s_cuda_stream, "cuda_stream");
  I(s_size, "size");
  I(s_stride, "stride");
  I(s_element_size, "element_size");
  I(s_torch, "torch");
  I(s_data, "data");
  I(s_typestr, "typestr");
  I(s_data_ptr, "data_ptr"); /* last: it says the others are there */
#undef I
  return 0;
}

/* Finds torch.Tensor's C accessors; false (no exception) when one is not what it was. */
static bool find_accessors(PyTypeObject *tensor) {
  PyObject *names[4] = {s_dtype, s_is_cuda, s_data_ptr, s_get_device};
  for (int i = 0; i < 4; i++) {
    PyObject *d = PyObject_GetAttr((PyObject *)tensor, names[i]); /* the descriptor itself */
    if (!d) {
      PyErr_Clear();
      return false;
    }
    torch.descr[i] = d;
  }
  for (int i = 0; i < 2; i++) {
    if (!Py_IS_TYPE(torch.descr[i], &PyGetSetDescr_Type)) return false;
    PyGetSetDef *g = ((PyGetSetDescrObject *)torch.descr[i])->d_getset;
    if (!g->get) return false;
    *(i == 0 ? &torch.dtype : &torch.is_cuda) = (tp_getter){g->get, g->closure};
  }
  for (int i = 2; i < 4; i++) {
    if (!Py_IS_TYPE(torch.descr[i], &PyMethodDescr_Type)) return false;
    PyMethodDef *m = ((PyMethodDescrObject *)torch.descr[i])->d_method;
    if ((m->ml_flags & (METH_VARARGS | METH_KEYWORDS | METH_NOARGS | METH_O | METH_FASTCALL)) !=
        METH_NOARGS)
      return false;
    *(i == 2 ? &torch.data_ptr : &torch.get_device) = m->ml_meth;
  }
  return true;
}

/* Looks torch up in sys.modules (never imports it); once it is there and initialized,
 * caches what the launch path reads. A failure leaves torch unrecognized, no exception. */
static void torch_probe(void) {
  if (torch.ready) return;
  PyObject *mod = PyImport_GetModule(s_torch);
  if (!mod) {
    PyErr_Clear();
    return;
  }
  PyObject *tensor = PyObject_GetAttrString(mod, "Tensor");
  if (!tensor || !PyType_Check(tensor)) {
    PyErr_Clear();
    Py_XDECREF(tensor);
    Py_DECREF(mod);
    return;
  }
  static const struct { const char *name; tk_dtype t; } map[] = {
    {"float32", TK_F32}, {"float16", TK_F16}, {"bfloat16", TK_BF16}, {"float64", TK_F64},
    {"int8", TK_I8}, {"int16", TK_I16}, {"int32", TK_I32}, {"int64", TK_I64},
    {"uint8", TK_U8}, {"uint16", TK_U16}, {"uint32", TK_U32}, {"uint64", TK_U64},
    {"bool", TK_I1}, {"float8_e4m3fn", TK_F8E4M3}, {"float8_e5m2", TK_F8E5M2},
  };
  for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
    torch.dtype_of[map[i].t] = PyObject_GetAttrString(mod, map[i].name);
    if (!torch.dtype_of[map[i].t]) PyErr_Clear(); /* an older torch without this dtype */
  }
  torch.direct = find_accessors((PyTypeObject *)tensor);
  /* Triton reads the current stream the same way: one C call, no Stream object. */
  PyObject *c = PyObject_GetAttrString(mod, "_C");
  torch.get_stream = c ? PyObject_GetAttrString(c, "_cuda_getCurrentRawStream") : NULL;
  Py_XDECREF(c);
  PyErr_Clear();
  if (torch.get_stream && PyCFunction_Check(torch.get_stream) &&
      (PyCFunction_GET_FLAGS(torch.get_stream) & ~METH_COEXIST) == METH_O) {
    torch.get_stream_fn = PyCFunction_GET_FUNCTION(torch.get_stream);
    torch.get_stream_self = PyCFunction_GET_SELF(torch.get_stream);
  }
  torch.cuda = PyObject_GetAttrString(mod, "cuda");
  PyErr_Clear();
  torch.tensor = (PyTypeObject *)tensor;
  torch.ready = true;
  Py_DECREF(mod);
}

/* torch.cuda.device_count() into torch.ncuda, once; at a CUDA launch, so that an
 * interpreter user with torch loaded never has torch look for devices. Any failure leaves
 * the count unknown (0), which checks every tensor's device. */
static void torch_count_devices(void) {
  PyObject *n = torch.cuda ? PyObject_CallMethod(torch.cuda, "device_count", NULL) : NULL;
  long v = n ? PyLong_AsLong(n) : 0;
  Py_XDECREF(n);
  PyErr_Clear();
  torch.ncuda = v > 0 ? (int)v : 0;
}

static bool is_tensor(PyObject *o) {
  return torch.ready && PyObject_TypeCheck(o, torch.tensor);
}

/* True when tensor type t resolves dtype, is_cuda, data_ptr and get_device to torch's own
 * accessors (one subclass remembered, so a model's nn.Parameter checks once). */
static bool direct_type(PyTypeObject *t) {
  if (t == torch.tensor || t == torch.direct_sub) return torch.direct;
  if (!torch.direct) return false;
  PyObject *names[4] = {s_dtype, s_is_cuda, s_data_ptr, s_get_device};
  for (int i = 0; i < 4; i++) {
    PyObject *d = PyObject_GetAttr((PyObject *)t, names[i]);
    bool same = d == torch.descr[i];
    Py_XDECREF(d);
    if (!same) {
      PyErr_Clear();
      return false;
    }
  }
  Py_INCREF(t);
  Py_XSETREF(torch.direct_sub, t);
  return true;
}

/* The tk element type of a torch.dtype object; TK_NDTYPE when tk has none. */
static tk_dtype torch_dtype(PyObject *dt) {
  for (int t = 0; t < TK_NDTYPE; t++)
    if (torch.dtype_of[t] && torch.dtype_of[t] == dt) return (tk_dtype)t;
  return TK_NDTYPE;
}

/* ---- messages ------------------------------------------------------------------------ */

/* Raises type with "kernel 'K': argument 'p' (parameter i, T): <fmt>". */
static int arg_error(PyObject *type, tp_kernel *k, int i, const char *fmt, ...) {
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  const char *pname = tk_kernel_param_name(k->k, i);
  char t[16];
  if (k->types[i] == TK_PTR)
    snprintf(t, sizeof t, k->pointees[i] == TK_NDTYPE ? "ptr" : "*%s", tp_dtype_name(k->pointees[i]));
  else
    snprintf(t, sizeof t, "%s", tp_dtype_name(k->types[i]));
  PyErr_Format(type, "kernel '%U': argument '%s' (parameter %d, %s): %s", k->name,
               pname && *pname ? pname : "?", i, t, why);
  return -1;
}

/* ---- element types of the protocols -------------------------------------------------- */

/* A NumPy-style type string ("<f4", "|u1", "<i8", "|b1"); TK_NDTYPE when tk has none. */
static tk_dtype typestr_dtype(const char *s) {
  if (!s || !*s) return TK_NDTYPE;
  if (*s == '<' || *s == '|' || *s == '=') s++;
  else if (*s == '>') return TK_NDTYPE; /* big-endian data on a little-endian machine */
  int n = atoi(s + 1);
  switch (*s) {
  case 'f': return n == 2 ? TK_F16 : n == 4 ? TK_F32 : n == 8 ? TK_F64 : TK_NDTYPE;
  case 'i': return n == 1 ? TK_I8 : n == 2 ? TK_I16 : n == 4 ? TK_I32 : n == 8 ? TK_I64 : TK_NDTYPE;
  case 'u': return n == 1 ? TK_U8 : n == 2 ? TK_U16 : n == 4 ? TK_U32 : n == 8 ? TK_U64 : TK_NDTYPE;
  case 'b': return n == 1 ? TK_I1 : TK_NDTYPE;
  default: return TK_NDTYPE;
  }
}

/* A buffer-protocol format ("f", "<e", "q", "?") of itemsize bytes. */
static tk_dtype format_dtype(const char *f, Py_ssize_t itemsize) {
  if (!f) return TK_U8; /* plain bytes */
  if (*f == '@' || *f == '=' || *f == '<') f++;
  else if (*f == '>' || *f == '!') return TK_NDTYPE;
  if (f[0] && f[1]) return TK_NDTYPE; /* a struct or repeated item */
  switch (*f) {
  case 'e': return TK_F16;
  case 'f': return TK_F32;
  case 'd': return TK_F64;
  case '?': return TK_I1;
  case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
    return itemsize == 1 ? TK_I8 : itemsize == 2 ? TK_I16 : itemsize == 4 ? TK_I32
           : itemsize == 8 ? TK_I64 : TK_NDTYPE;
  case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': case 'c':
    return itemsize == 1 ? TK_U8 : itemsize == 2 ? TK_U16 : itemsize == 4 ? TK_U32
           : itemsize == 8 ? TK_U64 : TK_NDTYPE;
  default: return TK_NDTYPE;
  }
}

/* DLPack's (code, bits, lanes). */
static tk_dtype dlpack_dtype(unsigned code, unsigned bits, unsigned lanes) {
  if (lanes != 1) return TK_NDTYPE;
  switch (code) {
  case 0: return bits == 8 ? TK_I8 : bits == 16 ? TK_I16 : bits == 32 ? TK_I32 : bits == 64 ? TK_I64 : TK_NDTYPE;
  case 1: return bits == 8 ? TK_U8 : bits == 16 ? TK_U16 : bits == 32 ? TK_U32 : bits == 64 ? TK_U64 : TK_NDTYPE;
  case 2: return bits == 16 ? TK_F16 : bits == 32 ? TK_F32 : bits == 64 ? TK_F64 : TK_NDTYPE;
  case 4: return bits == 16 ? TK_BF16 : TK_NDTYPE;
  case 6: return bits == 8 ? TK_I1 : TK_NDTYPE;
  default: return TK_NDTYPE;
  }
}

/* The DLPack ABI (dlpack.h, stable since v0.6), as much as a consumer reads. */
typedef struct { int32_t device_type, device_id; } dl_device;
typedef struct { uint8_t code, bits; uint16_t lanes; } dl_dtype;
typedef struct {
  void *data;
  dl_device device;
  int32_t ndim;
  dl_dtype dtype;
  int64_t *shape, *strides;
  uint64_t byte_offset;
} dl_tensor;
typedef struct dl_managed {
  dl_tensor t;
  void *manager_ctx;
  void (*deleter)(struct dl_managed *);
} dl_managed;
enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3, DL_CUDA_MANAGED = 13 };

/* ---- one launch ---------------------------------------------------------------------- */

typedef tp_span span;

typedef struct {
  tp_kernel *k;
  bool cuda;          /* the kernel's context runs on the GPU */
  int device;
  span *spans;        /* interpreter only, one per pointer parameter at most */
  int nspans;
} launch;

/* What a pointer argument turned out to be. */
typedef struct {
  uintptr_t ptr;
  tk_dtype dtype;     /* TK_NDTYPE: the object says nothing (raw bytes) */
  const char *dtype_text; /* for messages */
  bool on_cuda;
  int cuda_device;    /* -1: unknown */
  size_t bytes;       /* host objects: the extent in bytes */
  bool writable;
} pointer;

/* The byte extent of a strided array, from its lowest to its highest element. */
static size_t extent(int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides,
                     Py_ssize_t itemsize, Py_ssize_t *low) {
  Py_ssize_t lo = 0, hi = 0;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 0) {
      *low = 0;
      return 0;
    }
    Py_ssize_t span = (shape[d] - 1) * strides[d];
    if (span < 0) lo += span; else hi += span;
  }
  *low = lo;
  return (size_t)(hi - lo + itemsize);
}

static int from_tensor(launch *L, int i, PyObject *o, pointer *p) {
  tp_kernel *k = L->k;
  PyObject *dt = PyObject_GetAttr(o, s_dtype);
  if (!dt) return -1;
  p->dtype = torch_dtype(dt);
  if (p->dtype == TK_NDTYPE) {
    PyObject *s = PyObject_Str(dt);
    arg_error(PyExc_TypeError, k, i, "tk has no element type for a tensor of dtype %s",
              s ? PyUnicode_AsUTF8(s) : "?");
    Py_XDECREF(s);
    Py_DECREF(dt);
    return -1;
  }
  if (k->pointees[i] != TK_NDTYPE && p->dtype != k->pointees[i]) {
    PyObject *s = PyObject_Str(dt);
    arg_error(PyExc_TypeError, k, i, "expected a tensor of %s, got dtype %s",
              tp_dtype_name(k->pointees[i]), s ? PyUnicode_AsUTF8(s) : "?");
    Py_XDECREF(s);
    Py_DECREF(dt);
    return -1;
  }
  Py_DECREF(dt);
  PyObject *cuda = PyObject_GetAttr(o, s_is_cuda);
  if (!cuda) return -1;
  p->on_cuda = cuda == Py_True;
  Py_DECREF(cuda);
  p->cuda_device = -1;
  if (p->on_cuda) {
    PyObject *dev = PyObject_CallMethodNoArgs(o, s_get_device);
    if (!dev) return -1;
    p->cuda_device = (int)PyLong_AsLong(dev);
    Py_DECREF(dev);
  }
  PyObject *ptr = PyObject_CallMethodNoArgs(o, s_data_ptr);
  if (!ptr) return -1;
  p->ptr = (uintptr_t)PyLong_AsUnsignedLongLong(ptr);
  Py_DECREF(ptr);
  if (PyErr_Occurred()) return -1;
  if (!p->on_cuda && !L->cuda) { /* the interpreter copies the tensor's extent */
    PyObject *size = PyObject_CallMethodNoArgs(o, s_size);
    PyObject *stride = size ? PyObject_CallMethodNoArgs(o, s_stride) : NULL;
    PyObject *es = stride ? PyObject_CallMethodNoArgs(o, s_element_size) : NULL;
    int rc = -1;
    if (es) {
      Py_ssize_t n = PyTuple_Size(size), sh[64], st[64];
      Py_ssize_t esz = PyLong_AsSsize_t(es);
      if (n >= 0 && n <= 64) {
        for (Py_ssize_t d = 0; d < n; d++) { /* torch's strides count elements, extent's bytes */
          sh[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(size, d));
          st[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(stride, d)) * esz;
        }
        Py_ssize_t lo;
        p->bytes = extent((int)n, sh, st, esz, &lo);
        p->ptr += lo;
        rc = PyErr_Occurred() ? -1 : 0;
      }
    }
    Py_XDECREF(size);
    Py_XDECREF(stride);
    Py_XDECREF(es);
    p->writable = true;
    return rc;
  }
  return 0;
}

/* __cuda_array_interface__ (v2/v3): data, typestr. */
static int from_cai(launch *L, int i, PyObject *cai, pointer *p) {
  if (!PyDict_Check(cai))
    return arg_error(PyExc_TypeError, L->k, i, "__cuda_array_interface__ is not a dict");
  PyObject *data = PyDict_GetItemWithError(cai, s_data);
  PyObject *ts = data ? PyDict_GetItemWithError(cai, s_typestr) : NULL;
  if (PyErr_Occurred()) return -1;
  if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) < 1 || !ts || !PyUnicode_Check(ts))
    return arg_error(PyExc_TypeError, L->k, i, "__cuda_array_interface__ lacks data or typestr");
  p->ptr = (uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
  if (PyErr_Occurred()) return -1;
  p->dtype_text = PyUnicode_AsUTF8(ts);
  p->dtype = typestr_dtype(p->dtype_text);
  p->on_cuda = true;
  p->cuda_device = -1;
  return 0;
}

/* The buffer protocol (NumPy arrays, bytearray, memoryview, array.array). */
static int from_buffer(launch *L, int i, PyObject *o, pointer *p) {
  (void)L, (void)i;
  Py_buffer view;
  p->writable = true;
  if (PyObject_GetBuffer(o, &view, PyBUF_STRIDES | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
    PyErr_Clear();
    p->writable = false;
    if (PyObject_GetBuffer(o, &view, PyBUF_STRIDES | PyBUF_FORMAT) < 0) return -1;
  }
  Py_ssize_t lo = 0;
  p->bytes = view.ndim == 0 ? (size_t)view.itemsize
                            : extent(view.ndim, view.shape, view.strides, view.itemsize, &lo);
  p->ptr = (uintptr_t)view.buf + lo;
  p->dtype = format_dtype(view.format, view.itemsize);
  static _Thread_local char text[32];
  snprintf(text, sizeof text, "buffer format '%s'", view.format ? view.format : "B");
  p->dtype_text = text;
  p->on_cuda = false;
  PyBuffer_Release(&view); /* the object itself stays alive in the argument tuple */
  return 0;
}

/* __array_interface__ (objects that expose host memory without the buffer protocol). */
static int from_aai(launch *L, int i, PyObject *aai, pointer *p) {
  PyObject *data = PyDict_Check(aai) ? PyDict_GetItemString(aai, "data") : NULL;
  PyObject *ts = PyDict_Check(aai) ? PyDict_GetItemString(aai, "typestr") : NULL;
  PyObject *shape = PyDict_Check(aai) ? PyDict_GetItemString(aai, "shape") : NULL;
  PyObject *strides = PyDict_Check(aai) ? PyDict_GetItemString(aai, "strides") : NULL;
  if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) < 2 || !ts ||
      !PyUnicode_Check(ts) || !shape || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > 64)
    return arg_error(PyExc_TypeError, L->k, i, "__array_interface__ lacks data, typestr or shape");
  p->dtype_text = PyUnicode_AsUTF8(ts);
  p->dtype = typestr_dtype(p->dtype_text);
  Py_ssize_t item = p->dtype_text ? atoi(p->dtype_text + 2) : 1;
  if (item <= 0) item = 1;
  int n = (int)PyTuple_GET_SIZE(shape);
  Py_ssize_t sh[64], st[64], acc = item;
  for (int d = n - 1; d >= 0; d--) { /* C order unless strides say otherwise */
    sh[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
    st[d] = strides && PyTuple_Check(strides) && PyTuple_GET_SIZE(strides) == n
                ? PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, d)) : acc;
    acc *= sh[d];
  }
  Py_ssize_t lo;
  p->bytes = extent(n, sh, st, item, &lo);
  p->ptr = (uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0)) + lo;
  p->writable = !PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
  p->on_cuda = false;
  return PyErr_Occurred() ? -1 : 0;
}

/* __dlpack__: the capsule's tensor is read and the capsule released (its destructor
 * calls the producer's deleter); the object, alive in the argument tuple, keeps the
 * memory. */
static int from_dlpack(launch *L, int i, PyObject *o, pointer *p) {
  PyObject *dev = PyObject_CallMethodNoArgs(o, s_dlpack_device);
  if (!dev) return -1;
  int dtype_dev = -1, dev_id = 0;
  if (!PyArg_ParseTuple(dev, "ii", &dtype_dev, &dev_id)) {
    Py_DECREF(dev);
    return -1;
  }
  Py_DECREF(dev);
  PyObject *cap = PyObject_CallMethodNoArgs(o, s_dlpack);
  if (!cap) return -1;
  dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
  if (!m) {
    Py_DECREF(cap);
    return -1;
  }
  dl_tensor *t = &m->t;
  p->ptr = (uintptr_t)t->data + t->byte_offset;
  p->dtype = dlpack_dtype(t->dtype.code, t->dtype.bits, t->dtype.lanes);
  static _Thread_local char text[48];
  snprintf(text, sizeof text, "DLPack (code %u, %u bits)", t->dtype.code, t->dtype.bits);
  p->dtype_text = text;
  p->on_cuda = dtype_dev == DL_CUDA || dtype_dev == DL_CUDA_MANAGED;
  p->cuda_device = p->on_cuda ? dev_id : -1;
  p->writable = true;
  if (!p->on_cuda) {
    Py_ssize_t sh[64], st[64], item = (t->dtype.bits + 7) / 8, acc = 1;
    int n = t->ndim > 64 ? 64 : t->ndim;
    for (int d = n - 1; d >= 0; d--) {
      sh[d] = (Py_ssize_t)t->shape[d];
      st[d] = (t->strides ? (Py_ssize_t)t->strides[d] : acc) * item;
      acc *= sh[d];
    }
    Py_ssize_t lo;
    p->bytes = extent(n, sh, st, item, &lo);
    p->ptr += lo;
  }
  Py_DECREF(cap);
  (void)L, (void)i;
  return 0;
}

/* Records a host range for the interpreter: the same range twice is one buffer (so a
 * kernel may read and write one array through two parameters); ranges that overlap
 * otherwise cannot be two bounds-checked buffers and are refused. */
static int add_span(launch *L, int i, pointer *p, int *index) {
  for (int s = 0; s < L->nspans; s++) {
    span *q = &L->spans[s];
    if (q->host == p->ptr && q->bytes == p->bytes) {
      q->writable = q->writable && p->writable;
      *index = s;
      return 0;
    }
    if (p->ptr < q->host + q->bytes && q->host < p->ptr + p->bytes)
      return arg_error(PyExc_ValueError, L->k, i,
                       "overlaps another argument's memory without being the same range; the "
                       "interpreter needs each array whole or disjoint");
  }
  L->spans[L->nspans] = (span){p->ptr, p->bytes, p->writable, 0};
  *index = L->nspans++;
  return 0;
}

/* A CUDA launch's torch tensor through torch's own accessors (direct_type): 1 when it is
 * a tensor of the parameter's dtype on the context's device (*out set), 0 when it is not
 * (from_tensor then says why, reading it again), -1 with an exception. */
static int tensor_fast(launch *L, int i, PyObject *o, tk_arg *out) {
  tk_dtype want = L->k->plan[i].pointee;
  PyObject *v = torch.dtype.get(o, torch.dtype.closure);
  if (!v) return -1;
  bool ok = want != TK_NDTYPE ? v == torch.dtype_of[want] : torch_dtype(v) != TK_NDTYPE;
  Py_DECREF(v);
  if (!ok) return 0;
  if (!(v = torch.is_cuda.get(o, torch.is_cuda.closure))) return -1;
  ok = v == Py_True;
  Py_DECREF(v);
  if (!ok) return 0;
  /* with one CUDA device (torch's count, the same process's driver as ours), a CUDA tensor
   * is on cuda:0 and reading its index is a call saved per tensor */
  if (torch.ncuda != 1 || L->device != 0) {
    if (!(v = torch.get_device(o, NULL))) return -1;
    long dev = PyLong_AsLong(v);
    Py_DECREF(v);
    if (dev == -1 && PyErr_Occurred()) return -1;
    if (dev != L->device) return 0;
  }
  if (!(v = torch.data_ptr(o, NULL))) return -1;
  uint64_t ptr = PyLong_AsUnsignedLongLong(v);
  Py_DECREF(v);
  if (ptr == (uint64_t)-1 && PyErr_Occurred()) return -1;
  out->type = TK_PTR;
  out->v.p = ptr;
  return 1;
}

static int convert_pointer(launch *L, int i, PyObject *o, tk_arg *out, int *span_of) {
  tp_kernel *k = L->k;
  pointer p = {0};
  p.cuda_device = -1;
  int rc;
  PyObject *proto = NULL;
  if (is_tensor(o)) {
    if (L->cuda && direct_type(Py_TYPE(o)) && (rc = tensor_fast(L, i, o, out)) != 0)
      return rc < 0 ? -1 : 0;
    rc = from_tensor(L, i, o, &p);
  } else if (L->cuda && (proto = PyObject_GetAttr(o, s_cai))) {
    rc = from_cai(L, i, proto, &p);
  } else if (PyErr_Clear(), !L->cuda && PyObject_CheckBuffer(o)) {
    rc = from_buffer(L, i, o, &p);
  } else if (PyObject_HasAttr(o, s_dlpack) && PyObject_HasAttr(o, s_dlpack_device)) {
    rc = from_dlpack(L, i, o, &p);
  } else if (!L->cuda && (proto = PyObject_GetAttr(o, s_aai))) {
    rc = from_aai(L, i, proto, &p);
  } else {
    PyErr_Clear();
    return arg_error(PyExc_TypeError, k, i,
                     L->cuda ? "expected a CUDA tensor (torch, __cuda_array_interface__ or "
                               "__dlpack__), got %.100s"
                             : "expected an array in host memory (NumPy, a CPU tensor, the "
                               "buffer protocol, __array_interface__ or __dlpack__), got %.100s",
                     Py_TYPE(o)->tp_name);
  }
  Py_XDECREF(proto);
  if (rc < 0) return -1;
  if (L->cuda && !p.on_cuda)
    return arg_error(PyExc_ValueError, k, i,
                     "is in host memory (%.100s), but the kernel runs on cuda:%d; move it to "
                     "the GPU (e.g. tensor.cuda())", is_tensor(o) ? "a CPU tensor" : Py_TYPE(o)->tp_name,
                     L->device);
  if (!L->cuda && p.on_cuda)
    return arg_error(PyExc_ValueError, k, i,
                     "is on a CUDA device, but the kernel runs on the interpreter (CPU); pass "
                     "host memory (e.g. tensor.cpu())");
  if (L->cuda && p.cuda_device >= 0 && p.cuda_device != L->device)
    return arg_error(PyExc_ValueError, k, i,
                     "is on cuda:%d, but the kernel was compiled for cuda:%d", p.cuda_device,
                     L->device);
  if (k->pointees[i] != TK_NDTYPE && p.dtype != TK_NDTYPE && p.dtype != k->pointees[i])
    return arg_error(PyExc_TypeError, k, i, "expected elements of %s, got %s (%s)",
                     tp_dtype_name(k->pointees[i]), tp_dtype_name(p.dtype),
                     p.dtype_text ? p.dtype_text : "?");
  if (k->pointees[i] != TK_NDTYPE && p.dtype == TK_NDTYPE)
    return arg_error(PyExc_TypeError, k, i, "expected elements of %s, got %s",
                     tp_dtype_name(k->pointees[i]), p.dtype_text ? p.dtype_text : "an unknown type");
  out->type = TK_PTR;
  out->v.p = p.ptr;
  if (!L->cuda) {
    if (p.bytes == 0) p.bytes = 1; /* an empty array still needs an address */
    return add_span(L, i, &p, span_of);
  }
  return 0;
}

static int convert_scalar(launch *L, int i, PyObject *o, tk_arg *out) {
  tp_kernel *k = L->k;
  tk_dtype t = k->types[i];
  out->type = t;
  bool is_float = t == TK_F16 || t == TK_BF16 || t == TK_F32 || t == TK_F64;
  if (is_float) {
    if (!PyFloat_Check(o) && !PyLong_Check(o) && !PyIndex_Check(o) &&
        !(Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float))
      return arg_error(PyExc_TypeError, k, i, "expected a float, got %.100s", Py_TYPE(o)->tp_name);
    out->v.f = PyFloat_AsDouble(o);
    return out->v.f == -1.0 && PyErr_Occurred() ? -1 : 0;
  }
  /* NumPy's bool scalar (numpy.bool, numpy.bool_ before 2.0) has no __index__ */
  if (t == TK_I1 && !PyLong_Check(o) && !strncmp(Py_TYPE(o)->tp_name, "numpy.bool", 10)) {
    int b = PyObject_IsTrue(o);
    if (b < 0) return -1;
    out->v.i = b;
    return 0;
  }
  if (!PyLong_Check(o) && !PyIndex_Check(o))
    return arg_error(PyExc_TypeError, k, i, "expected %s, got %.100s",
                     t == TK_I1 ? "a bool" : "an int", Py_TYPE(o)->tp_name);
  PyObject *n = PyNumber_Index(o);
  if (!n) return -1;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(n, &overflow);
  if (overflow > 0 && t == TK_U64) {
    unsigned long long u = PyLong_AsUnsignedLongLong(n);
    Py_DECREF(n);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return arg_error(PyExc_OverflowError, k, i, "the int does not fit in u64");
    }
    out->v.u = u;
    return 0;
  }
  if (overflow || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    PyObject *s = PyObject_Repr(n);
    arg_error(PyExc_OverflowError, k, i, "%s does not fit in %s", s ? PyUnicode_AsUTF8(s) : "the int",
              tp_dtype_name(t));
    Py_XDECREF(s);
    Py_DECREF(n);
    return -1;
  }
  Py_DECREF(n);
  long long lo = k->plan[i].lo, hi = k->plan[i].hi;
  if (v < lo || v > hi)
    return arg_error(PyExc_OverflowError, k, i, "%lld does not fit in %s", v, tp_dtype_name(t));
  out->v.i = v;
  return 0;
}

/* The stream to launch on: stream= (an int handle, an object with .cuda_stream such as
 * torch.cuda.Stream, or None), else the caller's current PyTorch stream on the device
 * when torch is loaded, else the default stream. */
static int resolve_stream(launch *L, PyObject *stream_obj, void **out) {
  *out = NULL;
  PyObject *h = NULL;
  if (stream_obj && stream_obj != Py_None) {
    h = PyLong_Check(stream_obj) ? Py_NewRef(stream_obj) : PyObject_GetAttr(stream_obj, s_cuda_stream);
    if (!h) {
      PyErr_Format(PyExc_TypeError, "stream= must be an int (a CUstream) or have .cuda_stream, not %.100s",
                   Py_TYPE(stream_obj)->tp_name);
      return -1;
    }
  } else if (torch.ready && torch.get_stream) {
    PyObject *dev = PyLong_FromLong(L->device);
    h = !dev                 ? NULL
        : torch.get_stream_fn ? torch.get_stream_fn(torch.get_stream_self, dev)
                              : PyObject_CallOneArg(torch.get_stream, dev);
    Py_XDECREF(dev);
    if (!h) return -1;
  } else if (torch.ready && torch.cuda && !torch.get_stream) {
    PyObject *s = PyObject_CallMethod(torch.cuda, "current_stream", "i", L->device);
    h = s ? PyObject_GetAttr(s, s_cuda_stream) : NULL;
    Py_XDECREF(s);
    if (!h) return -1;
  } else {
    return 0;
  }
  *out = (void *)(uintptr_t)PyLong_AsUnsignedLongLong(h);
  Py_DECREF(h);
  return PyErr_Occurred() ? -1 : 0;
}

/* Interpreter: allocates and fills a buffer per span and points the arguments at them. */
static tk_status upload(tp_args *A, tk_context *ctx) {
  tk_status s = TK_OK;
  for (; A->uploaded < A->nspans && s == TK_OK; A->uploaded++) {
    span *q = &A->spans[A->uploaded];
    s = tk_malloc(ctx, &q->dev, q->bytes);
    if (s != TK_OK) break;
    s = tk_memcpy_htod(ctx, q->dev, (const void *)q->host, q->bytes);
  }
  for (int i = 0; s == TK_OK && i < A->n; i++)
    if (A->span_of[i] >= 0) {
      span *q = &A->spans[A->span_of[i]];
      A->args[i].v.p = q->dev + (A->args[i].v.p - q->host);
    }
  return s;
}

int tp_args_prepare(tp_kernel *k, PyObject *const *args, Py_ssize_t got, tp_args *A) {
  /* not a memset of A: its stack arrays are for the arguments there are */
  A->ctx = k->module->ctx->ctx;
  A->n = 0;
  A->args = NULL;
  A->nspans = A->uploaded = 0;
  if (intern_names() < 0) return -1;
  torch_probe();
  int n = k->nparams;
  if (got != n) {
    PyErr_Format(PyExc_TypeError, "kernel '%U' takes %d argument%s, got %zd", k->name, n,
                 n == 1 ? "" : "s", got);
    return -1;
  }
  tp_context *ctx = k->module->ctx;
  A->n = n;
  A->args = A->stack_args;
  A->span_of = A->stack_span_of;
  A->spans = A->stack_spans;
  if (n > TP_STACK_ARGS) {
    A->args = PyMem_Malloc(sizeof *A->args * (size_t)n);
    A->span_of = PyMem_Malloc(sizeof *A->span_of * (size_t)n);
    A->spans = PyMem_Malloc(sizeof *A->spans * (size_t)n);
    if (!A->args || !A->span_of || !A->spans) {
      PyMem_Free(A->args);
      PyMem_Free(A->span_of);
      PyMem_Free(A->spans);
      A->args = NULL;
      return PyErr_NoMemory(), -1;
    }
  }
  launch L = {k, ctx->backend == TK_BACKEND_CUDA, ctx->device, A->spans, 0};
  if (L.cuda && torch.ready && torch.ncuda == -1) torch_count_devices();
  for (int i = 0; i < n; i++) {
    PyObject *o = args[i];
    const tp_param *p = &k->plan[i];
    tk_arg *a = &A->args[i];
    A->span_of[i] = -1;
    /* the common scalars without a call: an exact int in range, an exact float */
    if (p->kind == TP_P_INT && PyLong_CheckExact(o)) {
      int overflow;
      long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (!overflow && v >= p->lo && v <= p->hi) {
        a->type = p->type;
        a->v.i = v;
        continue;
      }
    } else if (p->kind == TP_P_FLOAT && PyFloat_CheckExact(o)) {
      a->type = p->type;
      a->v.f = PyFloat_AS_DOUBLE(o);
      continue;
    }
    int rc = p->kind == TP_P_PTR ? convert_pointer(&L, i, o, a, &A->span_of[i])
                                 : convert_scalar(&L, i, o, a);
    if (rc < 0) {
      A->nspans = L.nspans;
      tp_args_finish(A, false);
      return -1;
    }
  }
  A->nspans = L.nspans;
  return 0;
}

int tp_args_upload(tp_args *A) {
  tk_status s = upload(A, A->ctx);
  if (s != TK_OK) {
    tp_raise(A->ctx, s, "copying the arguments to the interpreter");
    return -1;
  }
  return 0;
}

int tp_args_finish(tp_args *A, bool copy_back) {
  tk_status s = TK_OK;
  for (int j = 0; copy_back && j < A->uploaded && s == TK_OK; j++)
    if (A->spans[j].writable)
      s = tk_memcpy_dtoh(A->ctx, (void *)A->spans[j].host, A->spans[j].dev, A->spans[j].bytes);
  if (s != TK_OK) tp_raise(A->ctx, s, "copying the results back from the interpreter");
  for (int j = 0; j < A->uploaded; j++) tk_free(A->ctx, A->spans[j].dev);
  A->uploaded = 0;
  if (A->args && A->args != A->stack_args) {
    PyMem_Free(A->args);
    PyMem_Free(A->span_of);
    PyMem_Free(A->spans);
  }
  A->args = NULL;
  return s == TK_OK ? 0 : -1;
}

int tp_resolve_stream(tp_kernel *k, PyObject *stream_obj, void **out) {
  launch L = {k, true, k->module->ctx->device, NULL, 0};
  return resolve_stream(&L, stream_obj, out);
}

int tp_launch(tp_kernel *k, tk_grid grid, PyObject *const *args, Py_ssize_t n,
              PyObject *stream_obj) {
  tp_args A;
  if (tp_args_prepare(k, args, n, &A) < 0) return -1;
  if (grid.x == 0) return tp_args_finish(&A, false); /* an empty grid: checked, nothing to run */
  bool cuda = k->module->ctx->backend == TK_BACKEND_CUDA;
  void *stream = NULL;
  if (cuda ? tp_resolve_stream(k, stream_obj, &stream) < 0 : tp_args_upload(&A) < 0) {
    tp_args_finish(&A, false);
    return -1;
  }
  tk_status s = tk_launch(k->k, grid, stream, A.args, A.n);
  if (s != TK_OK) {
    char what[160];
    snprintf(what, sizeof what, "kernel '%s'", tk_kernel_name(k->k));
    tp_raise(A.ctx, s, what);
    tp_args_finish(&A, false);
    return -1;
  }
  return tp_args_finish(&A, true);
}
