/*
 * interp/ — the reference interpreter of the Tile IR: runs a kernel on the CPU over host
 * buffers that stand in for device memory, the programs of a grid spread over the cores.
 * It defines what every op means; the GPU backend is tested against it.
 *
 * Contract:
 *  - Memory: an ip_memory is a table of buffers. The device address of buffer id k plus
 *    byte offset o is (k << 38) | o, so addresses are synthetic: 0 is null, a buffer
 *    holds at most 256 GiB, and any tk_devptr can be mapped back to its buffer. An id
 *    holds the table's space (one of 255, handed out in turn, so that an address of
 *    another table is recognised as such) and a slot; a freed slot is reused only after
 *    1024 later frees. Inside a kernel a pointer keeps that provenance as
 *    (buffer id, byte offset): pointer arithmetic never moves it to another buffer.
 *  - Every load, store and atomic is checked against the buffer its pointer came from
 *    (null, freed, misaligned, before the start, past the end); a violation stops the
 *    launch with "file:line:col: <what> in kernel 'k' at program (x, y, z): <detail>".
 *  - Numerics are exact per dtype: integers wrap at their width (signed or unsigned by
 *    dtype); f16/bf16 are stored as 16 bits and every op computes in f32 and rounds to
 *    the type (nearest even); f32 ops run in float, f64 in double; math functions call
 *    libm in the type's precision. Integer division or remainder by zero is a runtime
 *    error (not UB, not a silent value); INT_MIN / -1 wraps to INT_MIN (remainder 0).
 *    Shifts by the width or more give 0 (shr of a negative signed value: -1), as PTX.
 *    Float-to-int casts truncate and saturate, NaN gives 0.
 *    A NaN result's sign and payload are unspecified (C does not say which NaN an op on
 *    two NaNs returns); every other result is exact, bit for bit.
 *  - Masked-off lanes of a load yield `other` (0 without it); masked-off stores and
 *    atomics do nothing (an atomic's masked-off result is 0).
 *  - Reductions and scans accumulate sequentially in the result's type, in index order;
 *    dot's element (m, n) is acc[m][n], then + a[m][k] * b[k][n] for k = 0, 1, ..., K-1,
 *    the product and each sum rounded to the accumulator's type. The GPU's order may
 *    differ in the last bits of float results.
 *  - Programs run on $TK_INTERPRET_THREADS threads (default: the cores online), handed
 *    out one at a time in grid order, x fastest. What a launch prints, the fault it
 *    reports and (without a fault) the memory it leaves do not depend on the thread
 *    count, for kernels whose programs do not race (no program reads or writes memory
 *    another program of the launch writes, except through atomics): device_print lines
 *    come out in program order; a fault is the first faulting program's in grid order,
 *    after the lines of the programs before it (programs after it may have run too, and
 *    their stores stay). A kernel
 *    with atomics runs its programs in order on one thread, so atomics are sequential,
 *    lanes in row-major order. With one thread every kernel runs in grid order, races
 *    included: TK_INTERPRET_THREADS=1 is the sequential reference.
 *  - device_print writes "pid (x, y, z) <prefix> <values>" lines to the chosen stream;
 *    a failed device_assert stops the launch with its message.
 *  - A launch keeps every value in a scratch arena per thread that is reset for each
 *    program (and for each loop iteration), so memory stays bounded over any grid.
 * Prefix: ip_ / IP_.
 */
#ifndef TK_INTERP_H
#define TK_INTERP_H

#include "../include/tk.h"
#include "../ir/ir.h"
#include "../support/support.h"

/* ---- memory --------------------------------------------------------------------------- */

typedef struct ip_memory ip_memory;

enum {
  IP_ADDR_BITS = 38, /* byte offset bits of a device address */
  IP_SPACE_BITS = 8  /* the table's bits of a buffer id, above its slot's */
};

/* An empty buffer table; NULL when out of memory. */
ip_memory *ip_memory_new(void);
/* Frees every buffer and the table. NULL is ignored. */
void ip_memory_free(ip_memory *mem);
/* Allocates a zeroed buffer of bytes (> 0) and returns its address; false with a
 * message in err when the size is too large or the host is out of memory. */
bool ip_mem_alloc(ip_memory *mem, size_t bytes, tk_devptr *out, su_buf *err);
/* Frees the buffer that starts at p; false with a message if p is not the start of a
 * live buffer. */
bool ip_mem_free(ip_memory *mem, tk_devptr p, su_buf *err);
/* The host address of the device range [p, p + bytes), which must lie inside one live
 * buffer; NULL with a message in err otherwise. For copies from and to the host. */
void *ip_mem_host(ip_memory *mem, tk_devptr p, size_t bytes, su_buf *err);
/* True if p is 0 or an address inside (or just past) a live buffer: what a pointer
 * argument of a launch must be. */
bool ip_mem_valid_arg(const ip_memory *mem, tk_devptr p);
/* True if p is an address of another table (another context's buffer). */
bool ip_mem_foreign(const ip_memory *mem, tk_devptr p);

/* ---- launching ------------------------------------------------------------------------ */

typedef enum {
  IP_OK,
  IP_BAD_ARGS, /* the arguments do not fit the kernel (count, type, unknown pointer) */
  IP_FAULT     /* the kernel faulted: out-of-bounds, division by zero, failed assert */
} ip_status;

/* Runs kernel f of module m on every program of grid (0 counts as 1), with args matching
 * f's parameters in number and type (TK_PTR args are device addresses of mem), on the
 * threads the contract above says. device_print output goes to out (stdout if NULL). On
 * failure writes one line (no trailing newline) to err and returns the status; the
 * effects of the programs that ran stay in memory. A kernel with workspace ops gets mem's
 * one workspace buffer (per_program bytes per program it runs), zero when made and kept
 * from launch to launch as the GPU keeps its own, zeroed again when another kernel used
 * it last, replaced by a zeroed larger one when a launch needs more. */
ip_status ip_launch(ip_memory *mem, const ir_module *m, const ir_func *f, tk_grid grid,
                    const tk_arg *args, int nargs, FILE *out, su_buf *err);

#endif
