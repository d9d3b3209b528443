/*
 * runtime/cuda.h — the slice of the CUDA driver API that libtk uses, declared here and
 * loaded at run time with dlopen("libcuda.so.1"), so that libtk builds and runs (on the
 * interpreter) on a machine without CUDA. The toolkit's cuda.h is never included.
 *
 * Contract:
 *  - rt_cuda_load fills a table of entry points; it fails (with a readable reason) when
 *    the driver library or one of the required symbols is missing, and never aborts.
 *  - The entry points are the current ABI versions (the _v2 names where they exist), so
 *    CUdeviceptr is 64-bit and sizes are size_t.
 *  - The table is plain data owned by the caller; rt_cuda_unload closes the library (only
 *    before cuInit).
 * Prefix: rt_cuda_ (the CUDA names keep their own spelling so that they read like the
 * driver documentation).
 */
#ifndef TK_RUNTIME_CUDA_H
#define TK_RUNTIME_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "../include/tk.h"
#include "../support/support.h"

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201
};

/* CUjit_option: only the log options (the driver writes the JIT's messages there). */
typedef enum {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_LOG_VERBOSE = 12
} CUjit_option;

/* CUdevice_attribute: the two that name the architecture, and the SM count. */
enum {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
};

enum { CU_EVENT_DEFAULT = 0 };

/* The driver's CUfunction_attribute values libtk sets or reads. */
enum {
  RT_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1, /* static shared memory */
  RT_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,  /* local memory per thread: stack and spills */
  RT_CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  RT_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14 /* clusters above 8 CTAs */
};

/* cuLaunchKernelEx's configuration (CUDA 12.0): only the programmatic-dependent-launch
 * attribute is used (`@launch(pdl = true)`); the layouts are the driver's. */
enum { CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6 };
typedef struct {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
  } value;
} CUlaunchAttribute;
typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;

/* The entry points, one field per driver function (named after it, without "cu"). */
typedef struct {
  void *lib; /* the dlopen handle */
  CUresult (*Init)(unsigned flags);
  CUresult (*DriverGetVersion)(int *version);
  CUresult (*GetErrorName)(CUresult e, const char **s);
  CUresult (*GetErrorString)(CUresult e, const char **s);
  CUresult (*DeviceGetCount)(int *n);
  CUresult (*DeviceGet)(CUdevice *d, int ordinal);
  CUresult (*DeviceGetName)(char *name, int len, CUdevice d);
  CUresult (*DeviceGetAttribute)(int *v, int attr, CUdevice d);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *c, CUdevice d);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice d);
  CUresult (*CtxSetCurrent)(CUcontext c);
  CUresult (*CtxSynchronize)(void);
  CUresult (*MemAlloc)(CUdeviceptr *p, size_t bytes);
  CUresult (*MemFree)(CUdeviceptr p);
  CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
  CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
  CUresult (*MemsetD8)(CUdeviceptr dst, unsigned char v, size_t n);
  CUresult (*MemsetD8Async)(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
  CUresult (*ModuleLoadDataEx)(CUmodule *m, const void *image, unsigned nopts,
                               CUjit_option *opts, void **values);
  CUresult (*ModuleUnload)(CUmodule m);
  CUresult (*ModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
  CUresult (*FuncSetAttribute)(CUfunction f, int attr, int value);
  CUresult (*FuncGetAttribute)(int *value, int attr, CUfunction f);
  CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *blocks, CUfunction f, int threads,
                                                        size_t dynamic_smem);
  CUresult (*LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned shmem, CUstream s,
                           void **params, void **extra);
  /* optional (NULL when the driver lacks it): a pdl kernel then launches plainly, which
   * is correct, only without the overlap */
  CUresult (*LaunchKernelEx)(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra);
  CUresult (*StreamSynchronize)(CUstream s);
  /* *status: 0 not capturing, 1 capturing a graph, 2 a capture that was invalidated */
  CUresult (*StreamIsCapturing)(CUstream s, int *status);
  CUresult (*EventCreate)(CUevent *e, unsigned flags);
  CUresult (*EventRecord)(CUevent e, CUstream s);
  CUresult (*EventSynchronize)(CUevent e);
  CUresult (*EventElapsedTime)(float *ms, CUevent start, CUevent end);
  CUresult (*EventDestroy)(CUevent e);
} rt_cuda_api;

/* Opens the driver library (TK_LIBCUDA overrides its name, which tests use to simulate a
 * machine without a driver) and resolves every entry point into api. On failure returns
 * false, leaves api closed and appends the reason to why (an optional entry point that is
 * missing is left NULL instead). Does not call cuInit. */
bool rt_cuda_load(rt_cuda_api *api, su_buf *why);
/* Closes the library; the table is unusable afterwards. A never-loaded (zeroed) table is
 * ignored. Only for a table whose cuInit was never called: once the driver has started,
 * its threads and handlers outlive any unload, and libtk never unloads it. */
void rt_cuda_unload(rt_cuda_api *api);
/* "CUDA_ERROR_X: description" for a driver status, in a static or driver-owned string
 * written to b (works with a partially loaded table). */
void rt_cuda_describe(const rt_cuda_api *api, CUresult e, su_buf *b);

/* The CUfunction behind k when k belongs to a CUDA-backend module, else NULL: lets a
 * benchmark launch the very same function raw, to measure what tk_launch adds. */
CUfunction rt_cuda_kernel_function(const tk_kernel *k);

#endif
