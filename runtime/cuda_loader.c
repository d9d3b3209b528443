/*
 * cuda_loader.c — finds the CUDA driver at run time and resolves the entry points libtk
 * uses. Names are tried newest ABI first; a driver that lacks the newest spelling of an
 * entry point (cuEventElapsedTime_v2 appeared in 12.8) falls back to the older one, which
 * has the same signature.
 */
#include "cuda.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  size_t offset;       /* of the field in rt_cuda_api */
  const char *names[2]; /* newest first */
  bool optional;       /* a driver without it still loads (the field stays NULL) */
} entry;

#define E(field, ...) { offsetof(rt_cuda_api, field), { __VA_ARGS__ }, false }
#define OPTIONAL(field, name) { offsetof(rt_cuda_api, field), { name, NULL }, true }
static const entry entries[] = {
  E(Init, "cuInit"),
  E(DriverGetVersion, "cuDriverGetVersion"),
  E(GetErrorName, "cuGetErrorName"),
  E(GetErrorString, "cuGetErrorString"),
  E(DeviceGetCount, "cuDeviceGetCount"),
  E(DeviceGet, "cuDeviceGet"),
  E(DeviceGetName, "cuDeviceGetName"),
  E(DeviceGetAttribute, "cuDeviceGetAttribute"),
  E(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
  E(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
  E(CtxSetCurrent, "cuCtxSetCurrent"),
  E(CtxSynchronize, "cuCtxSynchronize"),
  E(MemAlloc, "cuMemAlloc_v2"),
  E(MemFree, "cuMemFree_v2"),
  E(MemcpyHtoD, "cuMemcpyHtoD_v2"),
  E(MemcpyDtoH, "cuMemcpyDtoH_v2"),
  E(MemsetD8, "cuMemsetD8_v2"),
  E(MemsetD8Async, "cuMemsetD8Async"),
  E(ModuleLoadDataEx, "cuModuleLoadDataEx"),
  E(ModuleUnload, "cuModuleUnload"),
  E(ModuleGetFunction, "cuModuleGetFunction"),
  E(FuncSetAttribute, "cuFuncSetAttribute"),
  E(FuncGetAttribute, "cuFuncGetAttribute"),
  E(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
  E(LaunchKernel, "cuLaunchKernel"),
  OPTIONAL(LaunchKernelEx, "cuLaunchKernelEx"),
  E(StreamSynchronize, "cuStreamSynchronize"),
  E(StreamIsCapturing, "cuStreamIsCapturing"),
  E(EventCreate, "cuEventCreate"),
  E(EventRecord, "cuEventRecord"),
  E(EventSynchronize, "cuEventSynchronize"),
  E(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
  E(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy"),
};
#undef E
#undef OPTIONAL

bool rt_cuda_load(rt_cuda_api *api, su_buf *why) {
  memset(api, 0, sizeof *api);
  const char *libname = getenv("TK_LIBCUDA");
  if (!libname || !*libname) libname = "libcuda.so.1";
  void *lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    su_buf_printf(why, "the CUDA driver library could not be loaded (%s)", e ? e : libname);
    return false;
  }
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
    void *sym = NULL;
    for (int j = 0; j < 2 && !sym && entries[i].names[j]; j++)
      sym = dlsym(lib, entries[i].names[j]);
    if (!sym && entries[i].optional) continue;
    if (!sym) {
      su_buf_printf(why, "the CUDA driver %s lacks %s (driver too old?)", libname,
                    entries[i].names[0]);
      dlclose(lib);
      memset(api, 0, sizeof *api);
      return false;
    }
    /* A data pointer becomes a function pointer by copying its bits: the one conversion
     * POSIX guarantees for dlsym results. */
    memcpy((char *)api + entries[i].offset, &sym, sizeof sym);
  }
  api->lib = lib;
  return true;
}

void rt_cuda_unload(rt_cuda_api *api) {
  if (api->lib) dlclose(api->lib);
  memset(api, 0, sizeof *api);
}

void rt_cuda_describe(const rt_cuda_api *api, CUresult e, su_buf *b) {
  const char *name = NULL, *text = NULL;
  if (api->GetErrorName && api->GetErrorName(e, &name) != CUDA_SUCCESS) name = NULL;
  if (api->GetErrorString && api->GetErrorString(e, &text) != CUDA_SUCCESS) text = NULL;
  if (name)
    su_buf_printf(b, "%s: %s", name, text ? text : "no description");
  else
    su_buf_printf(b, "CUDA error %d", e);
}
