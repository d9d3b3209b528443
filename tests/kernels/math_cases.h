/*
 * math_cases.h — the kernels of math.tk and random.tk as runnable cases, shared by the
 * interpreter test (tests/interp/test_math.c: each case against the C reference of what
 * the interpreter must compute, bit for bit) and the GPU test (tests/gpu/gpu_math.c: the
 * GPU against the interpreter, exactly where docs/language.md promises it, else within
 * the stated bound).
 *
 * A case is one kernel; it writes nout outputs of n elements each. Inputs mix special
 * values (zeros, infinities, NaN, ties, extremes) with seeded random ones. Plain C over
 * the public API (include/tk.h), no test framework. Prefix: mc_ / MC_.
 */
#ifndef TK_TESTS_MATH_CASES_H
#define TK_TESTS_MATH_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "include/tk.h"

typedef enum {
  MC_FLOAT1,   /* x -> round, rint, trunc, log1p, expm1, sqrt_rn */
  MC_FLOAT2,   /* x, z -> pow, **, copysign, div_rn, fdiv, fdiv(ieee_rounding) */
  MC_FCLASS,   /* x -> isnan, isinf, isfinite (i1) */
  MC_INT2,     /* x, z -> umulhi, cdiv */
  MC_ERF,      /* x -> erf, erfc, 1 + erf(-x), 1 - erf(x / 2), erfc(accurate) */
  MC_RANDOM32, /* seed: i64, offsets base + i: i32 -> randint (u32), rand, randn */
  MC_RANDOM64, /* seed: u64, offsets base + i: i64 -> randint (u32), rand, randn */
  MC_ROUNDS,   /* seed: i32, offsets base + i: u32 -> randint (7 rounds), rand (3 rounds) */
  MC_NARROW    /* seed: u32, offsets base + i: i32 as i16, u8, i8 -> randint, rand, randn */
} mc_family;

enum { MC_MAX_OUTS = 6, MC_BLOCK = 256 };

/* How far a result may be from the one it is compared with: ulps of the output's dtype
 * (0: the same bits, NaNs of any payload equal), or, when abs > 0, an absolute bound. */
typedef struct {
  int ulps;
  double abs;
} mc_tol;

typedef struct {
  const char *name;   /* unique in the table, e.g. "float2_f16" */
  const char *file;   /* "math.tk" or "random.tk" */
  const char *kernel;
  mc_family family;
  tk_dtype dt;        /* the element type of the inputs (random: of the words) */
  int64_t seed, base; /* random cases: the seed and the first offset */
  int nout;
  tk_dtype out[MC_MAX_OUTS];
  const char *what[MC_MAX_OUTS]; /* what each output is, for messages ("log1p") */
  mc_tol gpu[MC_MAX_OUTS];       /* the GPU against the interpreter */
} mc_case;

extern const mc_case mc_cases[];
extern const int mc_ncases;

/* Bytes of one element of dtype t. */
size_t mc_size(tk_dtype t);

/* The inputs of c at size n from seed, each malloc'ed (n elements of c->dt) into in[0]
 * (and in[1] for the two-operand families); returns how many (0 for random cases). */
int mc_inputs(const mc_case *c, long n, uint64_t seed, void *in[2]);

/* Runs kernel k of case c on ctx over the inputs at size n (one program per MC_BLOCK
 * elements) and downloads output o into out[o] (malloc'ed, n elements of c->out[o]).
 * Returns the first failing API status (its message in tk_last_error(ctx)) or TK_OK; on
 * failure out[] holds nothing to free. */
tk_status mc_run(tk_context *ctx, tk_kernel *k, const mc_case *c, long n, void *const in[2],
                 void *out[MC_MAX_OUTS]);

/* What the interpreter must compute, in C: output o into out[o] (malloc'ed). */
void mc_reference(const mc_case *c, long n, void *const in[2], void *out[MC_MAX_OUTS]);

/* Compares output o of two runs; returns the first index where got and want are farther
 * apart than tol, with a description in msg, or -1 when every element is close enough.
 * in may be NULL (random cases); otherwise the message quotes the inputs. */
long mc_compare(const mc_case *c, int o, long n, const void *got, const void *want, mc_tol tol,
                void *const in[2], char *msg, size_t cap);

#endif
