/*
 * cases.h — every sample kernel of the .tk files in samples/ as a checkable case: how to
 * compile it (file, kernel, defines), the sizes to run it at on each backend, and a run
 * function that generates inputs, launches the kernel, and compares the outputs with a
 * plain C reference in double precision, within a tolerance fitting the output's dtype.
 *
 * Shared by the tk-samples program (samples/check/main.c) and the interpreter test
 * (tests/interp/test_samples.c). Plain C over the public API (include/tk.h): no test
 * framework, so that a release build without the tests can still check the samples.
 * Prefix: ck_ / CK_.
 */
#ifndef CK_CASES_H
#define CK_CASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "include/tk.h"

/* How a case reads its size, which also decides how it is printed. */
typedef enum {
  CK_1D,    /* d[0] = n */
  CK_ROWS,  /* d[0] rows of d[1] values, d[2] elements apart (the row stride) */
  CK_2D,    /* d[0] x d[1] */
  CK_MNK,   /* an M x K by K x N product: d[0] = M, d[1] = N, d[2] = K */
  CK_ATTN,  /* attention: d[0] = S_q query rows, d[1] = S_k keys, d[2] = B batches */
  CK_DECODE /* decode attention: d[0] = S_cap cache rows, d[1] = B sequences, d[2] = splits */
} ck_shape;

typedef struct {
  long d[3];
} ck_size;

enum { CK_MAX_SIZES = 5 };

typedef struct ck_job ck_job;

typedef struct {
  const char *name;       /* shown in reports, unique in the table */
  const char *file;       /* under the samples directory, e.g. "softmax.tk" */
  const char *kernel;
  tk_define defines[7];   /* the first ndefines are used */
  int ndefines;
  ck_shape shape;
  /* Sizes to run at, ragged ones included; a size whose d[0] is 0 ends the list. The
   * interpreter's are small (it is slow); the GPU's are closer to real work. */
  ck_size interp_sizes[CK_MAX_SIZES];
  ck_size gpu_sizes[CK_MAX_SIZES];
  int variant;            /* picks among the kernels that share a run function */
  void (*run)(ck_job *job);
  const char *kernel2;    /* a second kernel of the file the run launches after the first
                           * (decode attention's combine), or NULL */
} ck_case;

typedef enum {
  CK_OK,          /* every output within tolerance */
  CK_MISMATCH,    /* an output differs from the reference */
  CK_API_ERROR    /* an API call failed (the kernel faulted, ran out of memory, ...) */
} ck_status;

typedef struct {
  ck_status status;
  tk_status api;      /* the failing call's status when status is CK_API_ERROR */
  double max_err;     /* the largest |got - want| over every compared output */
  char msg[512];      /* what failed; "" on CK_OK */
} ck_result;

extern const ck_case ck_cases[];
extern const int ck_ncases;

/* The case named name, or NULL. */
const ck_case *ck_find(const char *name);

/* Compiles the case's file under dir with its defines and looks its kernel up, and its
 * kernel2 into *kernel2 when the case has one (kernel2 may be NULL for a case without). On
 * failure returns the API's status (its message in tk_last_error(ctx)) and sets *module
 * to NULL; on success the caller owns *module (tk_module_destroy). */
tk_status ck_compile(tk_context *ctx, const char *dir, const ck_case *c, tk_module **module,
                     tk_kernel **kernel, tk_kernel **kernel2);

/* Runs kernel k (and k2, the case's kernel2, NULL for a case without) of case c once at
 * size, on inputs drawn from seed, and checks every output. Frees everything it allocated,
 * on the host and on the device, whatever the outcome. */
ck_result ck_run(tk_context *ctx, tk_kernel *k, tk_kernel *k2, const ck_case *c, uint64_t seed,
                 ck_size size);

/* Writes size as the case reads it ("4096", "7x1000", "7x1000/1003" for a row stride
 * other than the row length, "64x64x32") into buf. */
void ck_size_format(const ck_case *c, ck_size size, char *buf, size_t cap);

#endif
