/*
 * fake_cuda.c — a stand-in for libcuda.so.1 (loaded through TK_LIBCUDA) so that the host
 * side of the CUDA backend — driver loading, context start, memory calls, PTX loading
 * and its error log, argument packing, launch geometry — is tested on machines without a
 * GPU. Memory is host memory; a launch runs nothing and records what it was given.
 *
 * Knobs for tests (exported, found with dlsym): fake_cuda_set_devices(n) sets how many
 * devices cuDeviceGetCount reports; fake_cuda_set_cc(major, minor) their compute
 * capability (9.0 unless set); fake_cuda_last_launch() returns the last launch;
 * fake_cuda_set_capturing(on) makes every stream report a graph capture;
 * fake_cuda_last_alloc() returns the last allocation and asynchronous memset;
 * fake_cuda_loads() counts the modules loaded and fake_cuda_last_ptx() is the last one's
 * text; fake_cuda_set_name(s) the name cuDeviceGetName gives ("fake" unless set). Each load gets its own module and function handles, so that a test can tell which
 * load a launch ran.
 * PTX containing "frobnicate" is rejected with a log, as the JIT would.
 * Failures: fake_cuda_set_init(r) makes cuInit return r; fake_cuda_fault(r) makes the
 * next cuCtxSynchronize return r and, like a sticky fault, every call after it too (until
 * fake_cuda_reset()); fake_cuda_live_allocs() counts the allocations not yet freed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

typedef int CUresult;


/* The fake's state: one process, one test at a time. */
static int ndevices = 1;
static fake_launch last;
static int ctx_token;
enum { TOKENS = 64 };
static int mod_tokens[TOKENS], fn_tokens[TOKENS];
static int nloads;
static char last_ptx[1 << 16];

static int cc_major = 9, cc_minor = 0;
static int init_result, pending_fault, sticky, live_allocs;
static fake_memory_calls mem_calls;

void fake_cuda_set_init(int r) { init_result = r; }
void fake_cuda_fault(int r) { pending_fault = r; }
void fake_cuda_reset(void) { init_result = pending_fault = sticky = 0; }
int fake_cuda_live_allocs(void) { return live_allocs; }
const fake_memory_calls *fake_cuda_last_alloc(void) { return &mem_calls; }

void fake_cuda_set_devices(int n) { ndevices = n; }
void fake_cuda_set_cc(int major, int minor) { cc_major = major, cc_minor = minor; }
const fake_launch *fake_cuda_last_launch(void) { return &last; }
int fake_cuda_loads(void) { return nloads; }
const char *fake_cuda_last_ptx(void) { return last_ptx; }

CUresult cuInit(unsigned flags) { (void)flags; return init_result; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult e, const char **s) {
  *s = e == 218   ? "CUDA_ERROR_INVALID_PTX"
       : e == 2   ? "CUDA_ERROR_OUT_OF_MEMORY"
       : e == 700 ? "CUDA_ERROR_ILLEGAL_ADDRESS"
       : e == 999 ? "CUDA_ERROR_UNKNOWN"
                  : "CUDA_ERROR_FAKE";
  return 0;
}
CUresult cuGetErrorString(CUresult e, const char **s) { (void)e; *s = "fake driver error"; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = ndevices; return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return i < ndevices ? 0 : 101; }
static char dev_name[256] = "fake";
void fake_cuda_set_name(const char *s) { snprintf(dev_name, sizeof dev_name, "%s", s); }
CUresult cuDeviceGetName(char *s, int n, int d) { (void)d; strncpy(s, dev_name, (size_t)n); return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  *v = attr == 75 ? cc_major : attr == 76 ? cc_minor : 0; /* compute capability */
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &ctx_token; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *c) { (void)c; return 0; }
CUresult cuCtxSynchronize(void) {
  if (pending_fault) sticky = pending_fault, pending_fault = 0;
  return sticky;
}
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
  if (sticky) return sticky;
  void *m = malloc(n ? n : 1);
  *p = (uint64_t)(uintptr_t)m;
  live_allocs += m != NULL;
  mem_calls.alloc = *p;
  mem_calls.alloc_bytes = n;
  return m ? 0 : 2;
}
CUresult cuMemFree_v2(uint64_t p) {
  /* after a sticky fault the driver refuses, and the memory goes with the context's
   * reset; the fake frees it at once, so that a leak checker sees only real leaks */
  free((void *)(uintptr_t)p);
  live_allocs--;
  return sticky;
}
CUresult cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) {
  if (sticky) return sticky;
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) {
  if (sticky) return sticky;
  memcpy(d, (const void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemsetD8_v2(uint64_t d, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)d, v, n);
  return 0;
}
CUresult cuMemsetD8Async(uint64_t d, unsigned char v, size_t n, void *s) {
  if (sticky) return sticky;
  memset((void *)(uintptr_t)d, v, n);
  mem_calls.memset = d;
  mem_calls.memset_bytes = n;
  mem_calls.memset_value = v;
  mem_calls.memset_stream = s;
  mem_calls.memsets++;
  return 0;
}
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *opts, void **vals) {
  if (!strstr(image, "frobnicate")) {
    snprintf(last_ptx, sizeof last_ptx, "%s", (const char *)image);
    *m = &mod_tokens[nloads++ % TOKENS];
    return 0;
  }
  for (unsigned i = 0; i < n; i++)
    if (opts[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
      strcpy(vals[i], "ptxas application ptx input, line 4; error   : Not a name of any "
                      "known instruction: 'frobnicate'");
  return 218;
}
CUresult cuModuleUnload(void *m) { (void)m; return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  (void)name;
  *f = &fn_tokens[(int *)m - mod_tokens];
  return 0;
}
/* fake_cuda_nonportable(): how many functions were opted into non-portable cluster sizes */
static int nonportable;
int fake_cuda_nonportable(void) { return nonportable; }
CUresult cuFuncSetAttribute(void *f, int attr, int value) {
  (void)f;
  nonportable += attr == 14 /* NON_PORTABLE_CLUSTER_SIZE_ALLOWED */ && value == 1;
  return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shmem, void *s, void **params,
                        void **extra) {
  (void)shmem;
  (void)extra;
  if (sticky) return sticky;
  last = (fake_launch){f, {gx, gy, gz}, {bx, by, bz}, params, s, 0};
  return 0;
}
/* The driver's CUlaunchConfig and CUlaunchAttribute, as far as they are read here. */
typedef struct {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int allowed;
  } value;
} fake_attr;
typedef struct {
  unsigned grid[3], block[3], shmem;
  void *stream;
  fake_attr *attrs;
  unsigned nattrs;
} fake_config;
CUresult cuLaunchKernelEx(const fake_config *cfg, void *f, void **params, void **extra) {
  (void)extra;
  if (sticky) return sticky;
  int pdl = 0;
  for (unsigned i = 0; i < cfg->nattrs; i++)
    if (cfg->attrs[i].id == 6 /* PROGRAMMATIC_STREAM_SERIALIZATION */) pdl = cfg->attrs[i].value.allowed;
  last = (fake_launch){f, {cfg->grid[0], cfg->grid[1], cfg->grid[2]},
                       {cfg->block[0], cfg->block[1], cfg->block[2]}, params, cfg->stream, pdl};
  return 0;
}
CUresult cuStreamSynchronize(void *s) { (void)s; return 0; }
static int capturing;
void fake_cuda_set_capturing(int on) { capturing = on; }
CUresult cuStreamIsCapturing(void *s, int *status) { (void)s; *status = capturing; return 0; }
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = &ctx_token; return 0; }
CUresult cuEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }
CUresult cuEventSynchronize(void *e) { (void)e; return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 1; return 0; }
CUresult cuEventDestroy_v2(void *e) { (void)e; return 0; }

/* Resources (tk_kernel_resources without ptxas): fake_cuda_set_func_attr(attr, v) is what
 * cuFuncGetAttribute reports for attr on every function (0 unless set);
 * fake_cuda_set_occupancy(n) the blocks per SM that
 * cuOccupancyMaxActiveBlocksPerMultiprocessor reports, and fake_cuda_occupancy_query()
 * what its last call was asked: the function, the threads and the dynamic shared memory. */
enum { FAKE_FUNC_ATTRS = 32 };
static int func_attrs[FAKE_FUNC_ATTRS];
static int occupancy_blocks;
static fake_occupancy_query occupancy_query;

void fake_cuda_set_func_attr(int attr, int v) {
  if (attr >= 0 && attr < FAKE_FUNC_ATTRS) func_attrs[attr] = v;
}
void fake_cuda_set_occupancy(int n) { occupancy_blocks = n; }
const fake_occupancy_query *fake_cuda_occupancy_query(void) { return &occupancy_query; }

CUresult cuFuncGetAttribute(int *v, int attr, void *f) {
  (void)f;
  if (sticky) return sticky;
  if (attr < 0 || attr >= FAKE_FUNC_ATTRS) return 1; /* CUDA_ERROR_INVALID_VALUE */
  *v = func_attrs[attr];
  return 0;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int threads, size_t dyn) {
  if (sticky) return sticky;
  occupancy_query = (fake_occupancy_query){f, threads, dyn, occupancy_query.calls + 1};
  *n = occupancy_blocks;
  return 0;
}
