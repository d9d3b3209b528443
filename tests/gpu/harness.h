/*
 * harness — what the GPU test programs (gpu_tests, gpu_shapes, gpu_dot) share: the seeded
 * generator, the pair of contexts (the device, or with TK_GPU_TESTS_SELFCHECK=1 an
 * interpreter standing in for it, and the reference interpreter), compiling a case on
 * either, compiling it to PTX on the host, element conversions, and the exit status
 * (77, meson's "skipped", when no device ran the device tests).
 *
 * Each program keeps one gh_harness in its own fixture; nothing here is global.
 */
#ifndef TK_TESTS_GPU_HARNESS_H
#define TK_TESTS_GPU_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "include/tk.h"
#include "support/support.h"

typedef struct {
  const char *prog;    /* the program's name: heads its seed line and fatal messages */
  tk_context *cuda;    /* the device, the self-check's stand-in, or NULL */
  tk_context *interp;  /* the reference */
  uint64_t seed;       /* the generator's state */
  uint64_t first_seed; /* as printed: TK_TEST_SEED replays the whole run */
} gh_harness;

enum { GH_MAX_DEFINES = 8 };

/* Integer defines a case compiles with (tile sizes, warps), as text for the API. */
typedef struct {
  const char *name[GH_MAX_DEFINES];
  char value[GH_MAX_DEFINES][16];
  int n;
} gh_defines;

/* What to compile: text under name, or when text is NULL the file at path; kernel is
 * the entry to look up. */
typedef struct {
  const char *name, *text, *path, *kernel;
} gh_source;

/* Seeds h from TK_TEST_SEED (else the time and pid) and prints the seed line
 * "PROG: seed S (TK_TEST_SEED=S replays it)". No contexts yet. */
void gh_init(gh_harness *h, const char *prog);

struct CMUnitTest;

/* The program after its cases are made: runs the host group (no device needed), creates
 * the contexts (h->cuda on the device; without one prints "skipped: no CUDA device" and
 * the reason and leaves it NULL, unless TK_GPU_TESTS_SELFCHECK asks for an interpreter
 * in its place), runs the device group (only the cases TK_GPU_FILTER's pattern names,
 * cmocka's wildcards, when it is set: a device call spends its minutes on the cases it
 * needs), destroys the contexts. Returns the exit status:
 * 1 if a test failed or no interpreter could be created, else 0 when the device ran the
 * device tests, else 77. */
int gh_run(gh_harness *h, const struct CMUnitTest *host, size_t nhost,
           const struct CMUnitTest *dev, size_t ndev);

/* True when h->cuda is a real CUDA context (not the self-check's stand-in). */
bool gh_real_device(const gh_harness *h);

/* The next number of the reproducible stream (splitmix64). */
uint64_t gh_rng_next(gh_harness *h);

/* "cuda" for h->cuda, "interpreter" for any other context: for failure messages. */
const char *gh_ctx_name(const gh_harness *h, const tk_context *ctx);

/* Appends NAME=v to d; more than GH_MAX_DEFINES is a bug in the caller. */
void gh_define_int(gh_defines *d, const char *name, int v);
/* Appends NAME=v (a string, e.g. "true") to d. */
void gh_define_str(gh_defines *d, const char *name, const char *v);

/* Compiles src on ctx at -O3 with d (may be NULL) and returns its kernel; fails the
 * running cmocka test with the compiler's message otherwise. */
tk_kernel *gh_compile(const gh_harness *h, tk_context *ctx, const gh_source *src,
                      const gh_defines *d);
/* The same with the numerics fields of *numerics (dot_precision, accurate_math,
 * fp_contract; NULL: the defaults), its fuse_keep, and its arch (NULL: the context's). */
tk_kernel *gh_compile_with(const gh_harness *h, tk_context *ctx, const gh_source *src,
                           const gh_defines *d, const tk_compile_options *numerics);
/* The same with no_fuse set (-fno-fuse: the unfused baseline through global scratch). */
tk_kernel *gh_compile_nofuse(const gh_harness *h, tk_context *ctx, const gh_source *src,
                             const gh_defines *d);

/* Compiles text (named name) for sm_90a at -O3 with d through the GPU back end into ptx,
 * no device needed. On rejection prints the source and the diagnostics on stderr and
 * returns false; the caller fails its test. */
bool gh_emit_ptx(const char *name, const char *text, const gh_defines *d, su_buf *ptx);

/* Bytes of one element of t (8 for the 64-bit types and pointers). */
size_t gh_dtype_size(tk_dtype t);

/* Conversions of 16-bit floats. gh_float_to_half is exact only for values f16 holds
 * exactly (at most 11 significant bits, normal range), gh_float_to_bf16 truncates:
 * both are for generating data, not for rounding. */
float gh_half_to_float(uint16_t h);
uint16_t gh_float_to_half(float f);
float gh_bf16_to_float(uint16_t h);
uint16_t gh_float_to_bf16(float f);

/* The value of a floating-point element (f16, bf16, f32, f64, fp8) at p. */
double gh_elem_value(tk_dtype t, const void *p);

/* a / b rounded up: the number of programs covering a with tiles of b. */
long gh_cdiv(long a, long b);

#endif
