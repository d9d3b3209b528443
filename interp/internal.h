/*
 * interp/internal.h — what the interpreter's files share: runtime values, the scratch
 * arena, the prepared (slot-numbered) form of a kernel, scalar numerics, and the
 * per-launch execution state. Not part of the interpreter's public contract.
 */
#ifndef TK_INTERP_INTERNAL_H
#define TK_INTERP_INTERNAL_H

#include "format.h"
#include "interp.h"

/* ---- values --------------------------------------------------------------------------- */

/* (ip_elem, one element, is in format.h.) */

/* A runtime value: a scalar or pointer (n == 1) or a tile (row-major). Values are
 * immutable once built, so shape-only ops share e with their operand. */
typedef struct {
  const ir_type *type;
  int64_t n;
  ip_elem *e;
} ip_val;

/* ---- scratch arena (mark / release) ---------------------------------------------------- */

typedef struct ip_scratch ip_scratch;
typedef struct {
  void *chunk;
  size_t used;
} ip_mark;

/* An empty scratch arena; ip_scratch_free releases it and all its chunks. */
ip_scratch *ip_scratch_new(void);
void ip_scratch_free(ip_scratch *s);
/* n zeroed bytes, aligned for any type, valid until a release below them. */
void *ip_scratch_alloc(ip_scratch *s, size_t n);
/* The same, not zeroed: for buffers written in full before they are read. */
void *ip_scratch_take(ip_scratch *s, size_t n);
/* The current top, to release back to. */
ip_mark ip_scratch_mark(const ip_scratch *s);
/* Drops everything allocated since mark; the chunks are kept for reuse. */
void ip_scratch_release(ip_scratch *s, ip_mark mark);

/* ---- prepared code --------------------------------------------------------------------- */

/* An op with its operands and results resolved to slot numbers, so running it needs no
 * lookup. Regions are prepared recursively. */
typedef struct ip_code ip_code;
typedef struct {
  const ir_op *op;
  int *in;  /* op->noperands slots */
  int *out; /* op->nresults slots */
  ip_code *regions;
} ip_inst;

struct ip_code {
  int *args; /* the block's arguments' slots */
  int nargs;
  ip_inst *insts;
  int ninsts;
};

/* Prepares f's body in arena a; *nslots receives the number of slots used, *slot_of (if
 * not NULL) the map from each ir_value (its pointer's bytes as key) to its slot + 1. */
ip_code *ip_prepare(su_arena *a, const ir_func *f, int *nslots, const su_map **slot_of);

/* ---- scalar numerics (numeric.c) ------------------------------------------------------- */

/* Wraps an integer to dt's width in canonical form (i1: the low bit). */
ip_elem ip_int(tk_dtype dt, uint64_t bits);
/* Rounds x to float type dt (nearest even; overflow to inf). */
double ip_round(tk_dtype dt, double x);
/* The same for a float x, inline: what every f32, f16 and bf16 op does with its result
 * (and a cast to fp8). */
static inline double ip_round_float(tk_dtype dt, float x) {
  if (ir_dtype_is_fp8(dt)) return (float)ir_dtype_round(dt, x); /* rare: casts only */
  return dt == TK_F16 ? ip_round_f16(x) : dt == TK_BF16 ? ip_round_bf16(x) : x;
}
/* Converts v of type from to type to by the language's cast rules. */
ip_elem ip_convert(tk_dtype from, tk_dtype to, ip_elem v);
/* a op b in dt for ADD SUB MUL DIV REM AND OR XOR SHL SHR MIN MAX, POW COPYSIGN FDIV
 * (floats), UMULHI CDIV (ints). An integer divisor (DIV REM CDIV) must be nonzero: the
 * caller reports that. */
ip_elem ip_arith(ir_opcode op, tk_dtype dt, ip_elem a, ip_elem b);
/* op x in dt for NEG NOT ABS and the float math functions (RINT rounds ties to even). */
ip_elem ip_math(ir_opcode op, tk_dtype dt, ip_elem x);
/* fma(a, b, c) in dt, one rounding for floats. */
ip_elem ip_fma(tk_dtype dt, ip_elem a, ip_elem b, ip_elem c);
/* Minimum / maximum of floats that propagate NaN (as C's NAN) and order -0 below +0. */
static inline double ip_fminmax(double x, double y, bool want_max) {
  if (x != x || y != y) return NAN;
  if (x == y) return (signbit(x) != 0) == want_max ? y : x;
  return (x < y) == want_max ? y : x;
}
/* The comparison pred of a and b in dt (floats: ordered, except NE). */
bool ip_compare(ir_cmp pred, tk_dtype dt, ip_elem a, ip_elem b);
/* True if v is zero (ints) — for division checks. */
bool ip_is_zero(tk_dtype dt, ip_elem v);
/* Memory format: decodes / encodes the ir_dtype_bytes(dt) bytes at p (host order). */
ip_elem ip_decode(tk_dtype dt, const void *p);
void ip_encode(tk_dtype dt, ip_elem v, void *p);
/* Writes v as text (for device_print). */
void ip_format(su_buf *b, tk_dtype dt, ip_elem v);

/* ---- execution ------------------------------------------------------------------------- */

typedef struct {
  ip_memory *mem;
  const ir_module *m;
  const ir_func *f;
  ip_scratch *scratch;
  ip_val *slots;
  int nslots;
  unsigned pid[3], nprog[3];
  unsigned grid[3]; /* the launch's grid: grid_size (a persistent kernel runs fewer programs) */
  uint32_t gscratch; /* the buffer id of the launch's global scratch (scratch ops), 0: none */
  uint32_t gworkspace; /* the buffer id of the memory's workspace (workspace ops), 0: none */
  FILE *out;    /* device_print's stream */
  su_buf *print; /* if set, device_print appends here instead (grid.c orders the lines) */
  su_buf *err;
  const su_map *slot_of; /* ir_value* (key bytes) -> slot + 1 (ip_prepare's), for wrap.c */
} ip_exec;

/* Appends to why, when lane `lane` of pointer ptr (the operand of a faulting access) got
 * its offset from an integer add, subtract, multiply or shift of 32 bits or fewer whose
 * exact result does not fit its type, which op that was and what it computed. */
void ip_explain_wrap(const ip_exec *x, const ir_value *ptr, int64_t lane, su_buf *why);

#define IP_IN(x, inst, k) ((x)->slots[(inst)->in[(k)]])
#define IP_OUT(x, inst, k) (&(x)->slots[(inst)->out[(k)]])

/* A fresh value of type t (zeroed). */
ip_val ip_val_new(ip_exec *x, const ir_type *t);
/* The same, not zeroed: for a result whose every element the op then writes whole. */
ip_val ip_val_out(ip_exec *x, const ir_type *t);
/* The dtype of t's elements (TK_PTR for pointers). */
tk_dtype ip_elem_dtype(const ir_type *t);
/* Records a fault at op: "<file>:<l>:<c>: <what> in kernel 'k' at program (x, y, z):
 * <detail>". Returns false, for `return ip_fail(...)`. */
bool ip_fail(ip_exec *x, const ir_op *op, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* grid.c: runs body once per program of the grid (total programs, x fastest), on x and
 * `threads` threads in all (x's slots hold the bound arguments). Output and the fault
 * reported are those of running the programs in order; see grid.c. */
ip_status ip_run_grid(ip_exec *x, const ip_code *body, uint64_t total, int threads);
/* The threads for a grid of `programs`: $TK_INTERPRET_THREADS if a positive number, else
 * the cores online; at most 256 and at most one per program. */
int ip_thread_count(uint64_t programs);
/* The programs a persistent kernel runs (its launch's SM count): TK_INTERPRET_SMS when set
 * (1 to 2^20), else 132, an H100's or H200's; any count computes the same (programs are
 * unordered), which tests of the persist pass rely on. */
uint64_t ip_persistent_programs(void);

/* Runs a block: every inst in order. On a YIELD, *yield (if not NULL) receives it. */
bool ip_run_block(ip_exec *x, const ip_code *c, const ip_inst **yield);

/* The op families; each runs one inst and returns false after ip_fail. */
bool ip_run_shape(ip_exec *x, const ip_inst *in);       /* values and shape ops */
bool ip_run_elementwise(ip_exec *x, const ip_inst *in); /* IR_ELEM ops */
bool ip_run_reduce(ip_exec *x, const ip_inst *in);      /* REDUCE ARGREDUCE SCAN DOT */
bool ip_run_memory(ip_exec *x, const ip_inst *in);      /* LOAD STORE ATOMIC ATOMIC_CAS */
bool ip_run_debug(ip_exec *x, const ip_inst *in);       /* PRINT ASSERT */

/* typed.c: r = op(a, b, c) (operands of r's element count; unused ones may be anything of
 * that count) by one loop for op's dtype, when that pair has one; false (r untouched)
 * when not, or when ip_typed_loops is off. Bit for bit what the scalar rules give. */
bool ip_typed_elementwise(const ir_op *op, ip_val r, ip_val a, ip_val b, ip_val c);
/* typed.c: the reduction (or with scan, the inclusive scan) of kind of src, seen as
 * [outer, len, inner] around the axis, into r, for the (input, result) dtypes that have
 * a loop (f32 or f64 results of floats, integer results of integers); false (r
 * untouched) otherwise or when ip_typed_loops is off. */
bool ip_typed_reduce(ir_reduce_kind kind, bool scan, ip_val src, ip_val r, int64_t outer,
                     int64_t len, int64_t inner);
/* dot.c: r = acc + a @ b over the last two dims (leading ones a batch), in the documented
 * order (each element: acc, then k = 0, 1, ... in turn, rounding each product and sum to
 * r's type); f32 operands first rounded as prec says (tf32: to tf32; tf32x3: split into
 * three tf32 products, docs/language.md "Precision"); s holds its temporaries. */
void ip_dot(ip_scratch *s, ip_val a, ip_val b, ip_val acc, ip_val r, ir_dot_precision prec);
/* x rounded to tf32 as the GPU's cvt.rna.tf32.f32 rounds it (to nearest, ties away). */
float ip_round_tf32(float x);
/* On unless a test turns it off to get the scalar rules' results to compare with. */
extern bool ip_typed_loops;

/* The buffer id of a pointer whose offset overflowed 64 bits: no buffer has it, so every
 * access through it faults ("pointer-overflow") instead of wrapping back in bounds. */
#define IP_BUF_WRAPPED UINT32_MAX

/* Pointer p advanced by idx elements of size bytes (idx signed or not): the exact byte
 * offset, or a pointer into no buffer (IP_BUF_WRAPPED) when that does not fit 64 bits, so
 * that no offset wraps around back into bounds. */
static inline ip_elem ip_addptr(ip_elem p, bool is_signed, ip_elem idx, int64_t size) {
  int64_t step, off;
  bool over = is_signed ? __builtin_mul_overflow(idx.i, size, &step)
                        : __builtin_mul_overflow(idx.u, (uint64_t)size, &step);
  if (over || __builtin_add_overflow(p.i, step, &off) || p.buf == IP_BUF_WRAPPED) {
    p.buf = IP_BUF_WRAPPED;
    return p;
  }
  p.i = off;
  return p;
}

/* Checks one element access of `size` bytes at (buf, off): NULL with *host set when it
 * is fine, else the fault's name ("out-of-bounds", "misaligned", "null-pointer",
 * "use-after-free", "wild-pointer") with the details written to why ("element offset
 * 1024 is past the end of a 4096-byte buffer"). */
const char *ip_mem_access(ip_memory *mem, uint32_t buf, int64_t off, int size, void **host,
                          su_buf *why);
/* The host bytes and size of live buffer id; false if id is no live buffer. Buffers are
 * neither made nor freed while a launch runs, so this stays valid through it. */
bool ip_mem_buffer(const ip_memory *mem, uint32_t id, uint8_t **data, uint64_t *size);
/* The id of mem's workspace (workspace ops: one buffer a memory, kept across launches as
 * a GPU context keeps its own) of at least `bytes` (> 0) for the kernel whose ir_func uid
 * is owner: the one there is when it is that large — zeroed first when another kernel
 * used it last, whose data may lie where owner keeps its counters — else a new zeroed one
 * that replaces it (the old one is freed). False with a message in err when it cannot be
 * allocated. ip_memory_free frees it with the rest. */
bool ip_mem_workspace(ip_memory *mem, size_t bytes, uint64_t owner, uint32_t *id, su_buf *err);
/* Splits a device address into (buffer id, byte offset) and back. */
void ip_mem_split(tk_devptr p, uint32_t *buf, int64_t *off);
tk_devptr ip_mem_join(uint32_t buf, int64_t off);

#endif
