/*
 * python/src/ — tilek._tilek, the CPython extension over libtk (include/tk.h): contexts,
 * compiled modules, kernels with their signatures, and the launch path
 * `kernel[grid](*args)`, which turns PyTorch tensors, __cuda_array_interface__ and
 * __dlpack__ objects, buffers (NumPy) and Python scalars into tk_args checked against the
 * kernel's signature.
 *
 * Contract (internal):
 *  - Every failure raises a Python exception and returns NULL / -1; a mismatch between an
 *    argument and the kernel's signature names the parameter (TypeError for a type or
 *    dtype, ValueError for a device, OverflowError for an integer out of range).
 *  - Objects keep what they point into alive: a Kernel holds its Module, a Module its
 *    Context. A context is used under the GIL only (tk.h: one thread at a time).
 *  - Nothing imports torch: torch is recognized when the caller has imported it
 *    (sys.modules), which is the only way a torch tensor can reach us.
 * Prefix: tp_ (C), the Python names are the package's.
 */
#ifndef TILEK_H
#define TILEK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stdint.h>

#include "tk.h"

/* Exceptions of the package (module.c): tilek.Error, and CompileError below it. */
extern PyObject *tp_Error, *tp_CompileError;

typedef struct {
  PyObject_HEAD
  tk_context *ctx;
  tk_backend backend;
  int device;
} tp_context;

typedef struct {
  PyObject_HEAD
  tp_context *ctx;   /* strong */
  tk_module *mod;
} tp_module;

/* How a launch converts one argument: the plan, made once per kernel from its signature
 * (kernel.c), so that the launch path reads a table instead of deriving types per call. */
typedef enum { TP_P_PTR, TP_P_INT, TP_P_FLOAT } tp_param_kind;
typedef struct {
  uint8_t kind;        /* tp_param_kind */
  tk_dtype type;       /* the parameter's (TK_PTR for pointers) */
  tk_dtype pointee;    /* pointers: the element type, TK_NDTYPE for an untyped ptr */
  long long lo, hi;    /* integers: the range an exact int may take on the fast path */
} tp_param;

typedef struct {
  PyObject_HEAD
  tp_module *module; /* strong */
  tk_kernel *k;
  int nparams;
  tk_dtype *types, *pointees;
  tp_param *plan;       /* per parameter */
  PyObject *name;       /* str */
  PyObject *meta;       /* dict: compile-time parameter -> value, for grid callables */
  /* The last Launch `kernel[grid]` made, returned again for the same grid (Launch objects
   * are immutable), and the grid object it was made from when that is immutable (an int
   * or a tuple): a launch in a loop allocates nothing. A cycle with the Launch's kernel
   * reference, hence GC support. */
  PyObject *last_launch, *last_grid;
} tp_kernel;

extern PyTypeObject tp_context_type, tp_module_type, tp_kernel_type, tp_launch_type;

/* Raises the exception that fits status s with ctx's last message (what: a prefix). */
PyObject *tp_raise(tk_context *ctx, tk_status s, const char *what);

/* A Kernel object for k of module m (kernel.c). */
PyObject *tp_kernel_new(tp_module *m, tk_kernel *k);

/* A host range an interpreter launch copies in (and back when writable). */
typedef struct {
  uintptr_t host;
  size_t bytes;
  bool writable;
  tk_devptr dev;
} tp_span;

enum { TP_STACK_ARGS = 32 };

/* A launch's arguments, converted (args.c). */
typedef struct {
  tk_context *ctx;
  int n;
  tk_arg *args;
  int *span_of;    /* per argument: its span, or -1 */
  tp_span *spans;  /* the interpreter's host ranges */
  int nspans, uploaded;
  tk_arg stack_args[TP_STACK_ARGS];
  int stack_span_of[TP_STACK_ARGS];
  tp_span stack_spans[TP_STACK_ARGS];
} tp_args;

/* Converts the n arguments at args for kernel k's signature into A (0, or -1 with an
 * exception). */
int tp_args_prepare(tp_kernel *k, PyObject *const *args, Py_ssize_t n, tp_args *A);
/* Interpreter: copies the host arrays into its buffers and points the arguments there. */
int tp_args_upload(tp_args *A);
/* Copies writable arrays back (copy_back) and releases everything A holds; -1 with an
 * exception when a copy failed. Safe after a failed prepare. */
int tp_args_finish(tp_args *A, bool copy_back);
/* The stream a CUDA launch of k goes on: stream_obj (the stream= keyword), else the
 * caller's current PyTorch stream when torch is loaded, else the default stream. */
int tp_resolve_stream(tp_kernel *k, PyObject *stream_obj, void **out);

/* Converts the n arguments at args and launches k on grid (grid.x == 0: converts only). */
int tp_launch(tp_kernel *k, tk_grid grid, PyObject *const *args, Py_ssize_t n,
              PyObject *stream_obj);

/* _tilek.tune (tune.c): tk_tune over converted arguments. */
PyObject *tp_tune(PyObject *unused, PyObject *args);

/* "f32", "*f32", ... */
const char *tp_dtype_name(tk_dtype t);

#endif
