/* The ahead-of-time use case end to end, with no tk runtime: `tkc samples/vadd.tk
 * --emit=c -o vadd` gives vadd.h/vadd.c, and this program drives them through the CUDA
 * driver alone. Built and run by tests/gpu/aot.sh on a machine with a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "vadd.h"

#define CHECK(call)                                                           \
  do {                                                                        \
    CUresult r_ = (call);                                                     \
    if (r_ != CUDA_SUCCESS) {                                                 \
      const char *s_ = NULL;                                                  \
      cuGetErrorName(r_, &s_);                                                \
      fprintf(stderr, "aot_vadd: %s failed: %s\n", #call, s_ ? s_ : "?");    \
      return 1;                                                               \
    }                                                                         \
  } while (0)

int main(void) {
  enum { N = 1000003, BLOCK = 1024 }; /* ragged: not a multiple of the block */
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(vadd_load());
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
  for (int i = 0; i < N; i++) x[i] = (float)i * 0.5f, y[i] = 1.0f - (float)i;
  CUdeviceptr dx, dy, dz;
  CHECK(cuMemAlloc(&dx, N * sizeof *x));
  CHECK(cuMemAlloc(&dy, N * sizeof *y));
  CHECK(cuMemAlloc(&dz, N * sizeof *z));
  CHECK(cuMemcpyHtoD(dx, x, N * sizeof *x));
  CHECK(cuMemcpyHtoD(dy, y, N * sizeof *y));
  CHECK(cuMemsetD8(dz, 0xff, N * sizeof *z));
  CHECK(vadd_vadd((N + BLOCK - 1) / BLOCK, 1, 1, NULL, dx, dy, dz, N));
  CHECK(cuMemcpyDtoH(z, dz, N * sizeof *z));
  int bad = 0;
  for (int i = 0; i < N; i++) bad += z[i] != x[i] + y[i];
  printf("aot_vadd: %d of %d elements wrong\n", bad, N);
  CHECK(vadd_unload());
  cuMemFree(dx), cuMemFree(dy), cuMemFree(dz);
  free(x), free(y), free(z);
  cuDevicePrimaryCtxRelease(dev);
  return bad != 0;
}
