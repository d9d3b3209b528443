/*
 * fake_cuda.h — what tests/gpu/fake_cuda.c (a stand-in for libcuda.so.1, loaded through
 * TK_LIBCUDA) and the tests that inspect it through dlsym share: the records its
 * inspection entry points return. One definition, so the two sides of the dlopen
 * boundary cannot disagree on a layout.
 * Prefix: fake_.
 */
#ifndef TK_TESTS_FAKE_CUDA_H
#define TK_TESTS_FAKE_CUDA_H

#include <stddef.h>

/* The last launch's arguments (fake_cuda_last_launch): cuLaunchKernel's, or
 * cuLaunchKernelEx's with pdl set when its attributes allowed programmatic stream
 * serialization. */
typedef struct {
  void *fn;
  unsigned grid[3], block[3];
  void **params;
  void *stream;
  int pdl;
} fake_launch;

/* The last cuOccupancyMaxActiveBlocksPerMultiprocessor query (fake_cuda_occupancy_query):
 * the function, the threads and the dynamic shared memory it was asked about, and how
 * many queries there were. */
typedef struct {
  void *fn;
  int threads;
  size_t dynamic_smem;
  int calls;
} fake_occupancy_query;

/* The last cuMemAlloc and cuMemsetD8Async (fake_cuda_last_alloc): the address and size
 * allocated, the range set, its byte and stream, and how many cuMemsetD8Async calls there
 * were. */
typedef struct {
  unsigned long long alloc, alloc_bytes;
  unsigned long long memset, memset_bytes;
  int memset_value;
  void *memset_stream;
  int memsets;
} fake_memory_calls;

#endif
