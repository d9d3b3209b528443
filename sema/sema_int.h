/*
 * sema/sema_int.h — what the checker's files share with each other and with the lowering.
 *
 * Where sema leaves its results in the AST (the lowering reads exactly these):
 *  - every expression: sema_type (NULL for a call that yields nothing, and for an
 *    erroneous expression), sema_is_const/sema_const for compile-time scalars;
 *  - AST_NAME, AST_LET, AST_PARAM, AST_CONST, AST_FOR (its induction variable):
 *    sema_ref = the sema_sym declared or referenced;
 *  - AST_ASSIGN: sema_ref = the sema_sym assigned; for `x op= e`, lhs = a synthetic
 *    checked AST_BINARY `x op e` (so the value to assign is always lhs ? lhs : rhs);
 *  - AST_CALL: sema_ref = a sema_call (builtin or helper, arguments in parameter order);
 *    for a helper call, body = the checked per-call clone of the AST_FUNC (the instance);
 *  - AST_FOR over static_range: stmts = one checked clone of the body per iteration;
 *    AST_FOR over range and a runtime AST_IF: sema_ref of the *statement* is a sema_flow
 *    listing the outer vars assigned inside (the loop-carried values / if results);
 *    the induction variable's symbol is in that sema_flow too, and the iterator call's
 *    sema_type is the induction variable's type (both kinds of loop);
 *  - a compile-time AST_IF: its condition is sema_is_const; only the taken branch was
 *    checked and only it is lowered;
 *  - AST_KERNEL: sema_ref = a sema_kernel (launch attributes).
 */
#ifndef TK_SEMA_INT_H
#define TK_SEMA_INT_H

#include "../lexer/lexer.h"
#include "sema.h"

/* ---- symbols and scopes ----------------------------------------------------------------- */

typedef enum {
  SYM_LOCAL,   /* let / var */
  SYM_PARAM,   /* a kernel's runtime parameter, or a helper parameter bound to a runtime value */
  SYM_CONST,   /* a compile-time value: const, compile-time parameter, static_range variable,
                  helper parameter bound to a compile-time argument */
  SYM_LOOPVAR, /* a runtime loop's induction variable */
  SYM_DTYPE,   /* a compile-time dtype parameter: type = the scalar type it is bound to */
  SYM_FUNC,    /* a helper (decl = its AST_FUNC) */
  SYM_KERNEL
} sema_sym_kind;

typedef union {
  int64_t i; /* ints and i1; unsigned values in the same bits */
  double f;
} sema_cval;

typedef struct sema_sym {
  sema_sym_kind kind;
  const char *name;
  ast_node *decl;       /* the declaring node (notes point at its name_loc) */
  const ir_type *type;  /* NULL: erroneous declaration (uses stay silent) */
  bool is_var;          /* assignable */
  bool weak;            /* an untyped constant: adapts to the other operand */
  sema_cval cval;       /* SYM_CONST's value */
  int state;            /* file-level consts/funcs: 0 unchecked, 1 checking, 2 done */
  int depth;            /* scope depth of the declaration */
  struct sema_sym *next;/* next symbol of the same scope */
  ir_value *val;        /* lowering: the symbol's current SSA value */
} sema_sym;

typedef struct sema_scope {
  struct sema_scope *parent;
  sema_sym *syms;
  su_map *index;  /* name -> newest symbol, for the file scope (any number of kernels);
                     block scopes stay short lists */
  int depth;
} sema_scope;

/* ---- builtins --------------------------------------------------------------------------- */

typedef enum {
  B_PROGRAM_ID, B_NUM_PROGRAMS, B_ARANGE, B_ZEROS, B_FULL,
  B_LOAD, B_STORE, B_ATOMIC, B_ATOMIC_CAS, B_WHERE,
  B_MATH1, B_ABS, B_FMA, B_MINIMUM, B_MAXIMUM, B_CLAMP,
  B_MATH2, B_UMULHI, B_FCLASS, B_RANDOM,
  B_REDUCE, B_ARGREDUCE, B_CUMSUM, B_DOT,
  B_RESHAPE, B_TRANS, B_BROADCAST_TO, B_EXPAND_DIMS,
  B_CDIV, B_STATIC_ASSERT, B_DEVICE_PRINT, B_DEVICE_ASSERT,
  B_JOIN, B_SPLIT, B_GATHER, B_SORT, B_HISTOGRAM,
  B_RANGE, B_STATIC_RANGE
} sema_builtin_kind;

/* SEMA_MAX_BINS: histogram's bins live in shared memory on the GPU (4 bytes each); 16384
 * is 64 KB. SEMA_MAX_PARAMS: the named parameters a builtin may have. */
enum { SEMA_VARIADIC = -1, SEMA_MAX_STATIC_ITERS = 4096, SEMA_MAX_SORT = 1024, SEMA_MAX_BINS = 16384,
       SEMA_MAX_PARAMS = 6, SEMA_DOT_MAX_BATCH = 64 /* a batched dot is one product per batch */ };

typedef struct {
  const char *name;
  sema_builtin_kind kind;
  int min_args, max_args;        /* max SEMA_VARIADIC: any number */
  const char *params[SEMA_MAX_PARAMS]; /* names for named arguments (fixed-arity builtins) */
  bool type_arg;                 /* accepts <T> */
  int sub;                       /* ir_opcode (math), ir_reduce_kind, ir_atomic_kind,
                                    sema_fclass, sema_random */
} sema_builtin;

/* The forms of join: a new last axis of 2, the last axis doubled (interleave), the first
 * axis doubled (cat). */
typedef enum { SEMA_JOIN, SEMA_INTERLEAVE, SEMA_CAT } sema_join;

/* What isnan / isinf / isfinite ask, and what rand / randn / randint give. */
typedef enum { SEMA_ISNAN, SEMA_ISINF, SEMA_ISFINITE } sema_fclass;
typedef enum { SEMA_RANDINT, SEMA_RAND, SEMA_RANDN } sema_random;

/* Philox rounds when rand / randn / randint are given no n_rounds (Triton's default), and
 * the most they accept. */
enum { SEMA_PHILOX_ROUNDS = 10, SEMA_PHILOX_MAX_ROUNDS = 32 };

/* The builtin called name, or NULL. */
const sema_builtin *sema_builtin_find(const char *name);

/* A checked call: the arguments sorted into parameter order (absent optional ones NULL). */
typedef struct {
  const sema_builtin *builtin; /* NULL for a helper call */
  ast_node *helper;            /* the helper's instance (also the call's body) */
  ast_node **argv;             /* the argument values (not the AST_ARG wrappers) */
  int argc;
  const ir_type *targ;         /* <T>, when given (else the default) */
  const ir_type **rets;        /* a helper returning a tuple: its element types */
  int nrets;
  /* What the checker resolved from the call and the compile options: dot's input
   * precision (ir_dot_precision), 1 for an accurate sin, cos, exp, exp2, sigmoid, or a
   * load's or store's hints (ir_cache | ir_evict << 8). */
  int64_t numerics;
} sema_call;

/* Outer vars assigned inside a runtime for/while/if. */
typedef struct {
  sema_sym **syms;
  int nsyms, cap;
  sema_sym *iv; /* for: the induction variable */
  /* A loop with break/continue or a while loop: go is the i1 var that keeps the loop
   * running (carried, syms[0]: the IR loop's {while} flag; NULL when only continue is
   * used in a for), skip the per-iteration var set by break and continue, under whose
   * negation the checker put the statements that follow them (NULL without either). */
  sema_sym *go, *skip;
  ast_node *again; /* while: `if #go { #go = cond; }`, appended to the body */
} sema_flow;

/* The runtime loop whose body is being checked, for break and continue. */
typedef struct sema_loop {
  struct sema_loop *outer;
  sema_flow *flow; /* NULL: a static_range loop (unrolled: no break) */
} sema_loop;

typedef struct {
  int warps, stages;
  int warp_specialize, persistent, streamk; /* launch attributes: 1 true, -1 false, 0 unset (auto) */
  int programs_per_sm;             /* 0: unset (the compiler decides) */
  int pdl;                         /* 1 true, -1 false, 0 unset (false) */
} sema_kernel;

/* ---- the checker's context -------------------------------------------------------------- */

typedef struct sema_flow_frame {
  struct sema_flow_frame *outer;
  sema_flow *flow;
  int depth; /* scope depth just outside the construct */
} sema_flow_frame;

typedef struct sema_inst {
  struct sema_inst *outer;
  ast_node *func; /* the helper being instantiated (the original AST_FUNC) */
  ast_node *call;
} sema_inst;

typedef struct {
  su_arena *a;
  ir_module *m;
  su_diags *d;
  const sema_options *opt;
  sema_scope *global;
  sema_scope *scope;
  sema_flow_frame *flow;
  sema_loop *loop;       /* the innermost loop around the statement checked, or NULL */
  sema_inst *inst;       /* helpers being instantiated, innermost first */
  int inst_depth;
  int64_t work;          /* helper instances and static_range iterations so far */
  bool over_budget;      /* work passed opt->budget (reported once) */
  su_map *warned;        /* overflow.c: the products already warned about */
  ast_node *func;        /* the kernel or helper instance whose body is checked */
  bool in_helper;
  const ir_type *ret_type; /* a helper instance's result: SEMA_VOID until `return e;`,
                              NULL after an erroneous return */
  ast_node *ret_stmt;      /* the one place a `return` may appear: a helper's last statement */
  const ir_type **ret_elems; /* ret_type SEMA_TUPLE: the element types */
  int nret;
} sema_ctx;

/* ---- scope.c ---------------------------------------------------------------------------- */

/* Opens a block scope below the current one. */
/* Counts one unit of compile-time work at loc: an instance of helper (its name), or, with
 * helper NULL, a static_range iteration; false once the budget is spent, after reporting
 * it once with the chain of helper calls. */
bool sema_spend(sema_ctx *c, su_loc loc, const char *helper);
/* overflow.c: records what checked expression e derives from and warns when a pointer is
 * offset by a 32-bit product of run-time values (called for every checked expression). */
void sema_overflow_track(sema_ctx *c, ast_node *e);
void sema_scope_push(sema_ctx *c);
/* Closes the innermost scope. */
void sema_scope_pop(sema_ctx *c);
/* Declares name in the current scope; reports a redeclaration in that scope (with a note
 * at the earlier one) and still returns the new symbol so checking can go on. */
sema_sym *sema_declare(sema_ctx *c, sema_sym_kind k, const char *name, ast_node *decl);
/* The innermost visible symbol called name, or NULL. */
sema_sym *sema_lookup(sema_ctx *c, const char *name);
/* The helper or kernel called name (file scope), or NULL. */
sema_sym *sema_find_function(sema_ctx *c, const char *name);

/* ---- hints.c: Triton's spellings the parser passed on ---------------------------------- */

/* A call written with a module prefix (tl.load(p)) or as a method (x.sum(0), e->qual
 * "."): reports it with the tk spelling and renames it to the tk builtin (isfinited →
 * isfinite). True when a builtin or helper of that name exists, so the caller goes on
 * checking the plain call. */
bool sema_hint_call(sema_ctx *c, ast_node *e);
/* A module name used as a value (tl.float16, tl.constexpr): reported. */
void sema_hint_name(sema_ctx *c, ast_node *e);
/* After a failed max/min reduction with a second argument: notes that the elementwise
 * maximum/minimum is meant as 'maximum(a, b)'. */
void sema_hint_elementwise(sema_ctx *c, ast_node *e, const sema_call *cl);
/* After a call to a function that is neither a builtin nor a helper (e->name, module prefix
 * already dropped): notes what tk writes for a Triton function it lacks (randint4x). */
void sema_hint_missing(sema_ctx *c, ast_node *e);

/* ---- types.c ---------------------------------------------------------------------------- */

/* Rank and shape of t (0 for scalars and pointers). */
int sema_rank(const ir_type *t);
/* The element type: t for scalars and pointers. */
const ir_type *sema_elem(const ir_type *t);
/* The type with t's element and the given shape (rank 0: the element itself). */
const ir_type *sema_with_shape(sema_ctx *c, const ir_type *elem, int rank, const int *shape);
/* The dtype a type keyword names ("f16", "bool"), or -1: the values of a dtype define. */
int sema_dtype_named(const char *name);
/* The language's spelling of t ("f32", "*f16", "tile<128x64xf32>") in the arena. */
const char *sema_type_str(su_arena *a, const ir_type *t);
/* The same in quotes, as diagnostics write types ("'tile<128xf32>'"). */
const char *sema_type_quoted(su_arena *a, const ir_type *t);
/* Broadcasts the shapes of a and b into *rank/shape; false if they do not broadcast. */
bool sema_broadcast_shapes(const ir_type *a, const ir_type *b, int *rank, int *shape);
/* Broadcasts a with b and reports a mismatch at loc, with a note per operand. */
bool sema_broadcast(sema_ctx *c, su_loc loc, ast_node *x, const ir_type *a, ast_node *y,
                    const ir_type *b, int *rank, int *shape);
/* True for an untyped constant (a literal, or a constant built only from them). */
bool sema_is_weak(const ast_node *e);
/* For a weak integer constant e adapting to integer dtype d: true if its value fits d;
 * otherwise reports "integer literal V does not fit in 'd'" and returns false. Anything
 * else (not weak, not an integer, d a float) fits. */
bool sema_weak_fits(sema_ctx *c, const ast_node *e, tk_dtype d);
/* The common element dtype of two numeric operands per the promotion rules. */
tk_dtype sema_promote(tk_dtype a, bool weak_a, tk_dtype b, bool weak_b);
/* True for ints (i1 included) and floats. */
bool sema_is_numeric(tk_dtype d);
/* Whether t's elements are fp8 (a storage type): then reports that `what` (an operator or
 * builtin, quoted) does not compute on it, with a note saying what to write. */
bool sema_fp8_rejected(sema_ctx *c, su_loc loc, const char *what, const ir_type *t);
/* True if n is a power of two (n > 0). */
bool sema_is_pow2(int64_t n);

/* ---- consteval.c ------------------------------------------------------------------------ */

/* Wraps v to dtype's width (two's complement), sign- or zero-extending back to 64 bits. */
int64_t sema_wrap_int(tk_dtype d, int64_t v);
/* Rounds v to dtype's precision (f32: to float). */
double sema_round_float(tk_dtype d, double v);
/* Converts a constant of dtype from to dtype to (the `as` rules). */
sema_cval sema_const_convert(tk_dtype from, tk_dtype to, sema_cval v);
/* Folds `x op y` with operands already converted to dtype opd; result dtype res. False
 * (with *why set) for division by zero or an out-of-range shift. */
bool sema_fold_binary(int op, tk_dtype opd, sema_cval x, sema_cval y, tk_dtype res,
                      sema_cval *out, const char **why);
/* Folds cdiv(x, y) in integer dtype d: x / y rounded toward +infinity, exactly (the
 * interpreter's and the GPU's rule). False (with *why set) for a zero divisor. */
bool sema_fold_cdiv(tk_dtype d, sema_cval x, sema_cval y, sema_cval *out, const char **why);
/* Folds a unary operator. */
sema_cval sema_fold_unary(int op, tk_dtype d, sema_cval x);
/* The constant value of a checked compile-time expression e converted to dtype d. */
sema_cval sema_const_as(const ast_node *e, tk_dtype d);
/* Marks e as a compile-time constant of value v. */
void sema_set_const(ast_node *e, const ir_type *t, sema_cval v);

/* ---- clone.c ---------------------------------------------------------------------------- */

/* A deep copy of a subtree in the arena with the sema fields cleared (a fresh instance). */
ast_node *sema_clone(su_arena *a, const ast_node *n);

/* ---- check_*.c -------------------------------------------------------------------------- */

/* Checks e and returns its type: NULL after an error (silently for follow-ons), and
 * SEMA_VOID for a call that yields nothing. */
const ir_type *sema_check_expr(sema_ctx *c, ast_node *e);
/* Like sema_check_expr, but a value is required (void is reported). */
const ir_type *sema_check_value(sema_ctx *c, ast_node *e);
/* Checks e and requires a compile-time integer (what names the use in messages). */
bool sema_const_int(sema_ctx *c, ast_node *e, const char *what, int64_t *out);
/* The type of `x op y` (tx, ty their types), with the operand type both sides are
 * converted to in *opd; NULL after reporting invalid operands or a broadcast mismatch. */
const ir_type *sema_binary_type(sema_ctx *c, int op, su_loc loc, ast_node *x, const ir_type *tx,
                                ast_node *y, const ir_type *ty, const ir_type **opd);
/* Folds `x op y` over constant scalars into *out; reports division by zero and the like. */
bool sema_fold_binary_node(sema_ctx *c, int op, su_loc loc, ast_node *x, ast_node *y,
                           const ir_type *opd, const ir_type *res, sema_cval *out);
/* Checks a call (builtin or helper). */
const ir_type *sema_check_call(sema_ctx *c, ast_node *e);
/* Checks a builtin call whose arguments are already sorted into cl. */
const ir_type *sema_check_builtin(sema_ctx *c, ast_node *e, sema_call *cl);
/* Instantiates helper fn for the call e (arguments already checked). */
const ir_type *sema_instantiate(sema_ctx *c, ast_node *e, sema_sym *fn, sema_call *cl);
/* Checks that a value of type t (from node e) may be stored into a slot of type want
 * (assignment, annotation, store): same type, or a weak constant adapting. what names
 * the slot for the message. */
bool sema_check_assignable(sema_ctx *c, ast_node *e, const ir_type *t, const ir_type *want,
                           const char *what);
/* Checks a block's statements in a new scope. */
void sema_check_block(sema_ctx *c, ast_node *blk);
/* Checks a kernel's or helper's body in the current scope: the parameters' scope, so
 * `let n` over a parameter n is a redeclaration. */
void sema_check_body(sema_ctx *c, ast_node *blk);
/* Checks one statement. */
void sema_check_stmt(sema_ctx *c, ast_node *s);
/* Converts an AST type (AST_TYPE / AST_PTR_TYPE / AST_TYPE_NAME, a dtype parameter) to an
 * ir_type; NULL after an error. */
const ir_type *sema_resolve_type(sema_ctx *c, ast_node *t);
/* Makes sure a file-level const is evaluated (they may be used before their declaration). */
void sema_check_global_const(sema_ctx *c, sema_sym *s);

/* A sentinel type for calls that yield nothing. Never stored in the AST. */
extern const ir_type sema_void_type;
#define SEMA_VOID (&sema_void_type)
/* The sentinel for a tuple: an AST_TUPLE, or a call of a helper that returns one. Never
 * stored in the AST (sema_type stays NULL); sema_tuple_elems gives the element types. A
 * tuple is no value: sema_check_value refuses it, so it appears only where it is taken
 * apart (`let (a, b) = ...`, `(a, b) = ...`) or returned. */
extern const ir_type sema_tuple_type;
#define SEMA_TUPLE (&sema_tuple_type)
/* The element types of a checked tuple expression e (AST_TUPLE or a tuple-returning helper
 * call) and their number in *n; NULL if e is no tuple. */
const ir_type **sema_tuple_elems(su_arena *a, const ast_node *e, int *n);

/* ---- lowering helpers shared by lower*.c ------------------------------------------------ */

typedef struct {
  ir_module *m;
  ir_builder b;
  ir_value *ret;           /* the returned value of the helper instance being inlined */
  ir_value **rets;         /* or its values, when it returns a tuple */
  const ir_type *ret_type; /* and the type it is converted to */
} sema_lowerer;

/* Lowers e to a value of its own type. */
ir_value *sema_lower_expr(sema_lowerer *l, ast_node *e);
/* Lowers e converted to type want (constants emitted directly in want; dtype casts and
 * splats/broadcasts inserted). */
ir_value *sema_lower_as(sema_lowerer *l, ast_node *e, const ir_type *want);
/* Converts v to type want: element cast, then splat or expand+broadcast. */
ir_value *sema_lower_convert(sema_lowerer *l, ir_value *v, const ir_type *want);
/* Lowers rand / randn / randint (lower_random.c): Philox4x32 as IR ops, as Triton 3.6. */
ir_value *sema_lower_random(sema_lowerer *l, ast_node *e, sema_call *cl);
/* Lowers a tuple expression (AST_TUPLE or a tuple-returning helper call) into out, one
 * value per element. */
void sema_lower_tuple(sema_lowerer *l, ast_node *e, ir_value **out);
/* Lowers a call (builtin or helper instance); NULL for calls yielding nothing. */
ir_value *sema_lower_call(sema_lowerer *l, ast_node *e);
/* Lowers the statements of a block. */
void sema_lower_block(sema_lowerer *l, ast_node *blk);
/* Stamps e's location on the ops built next. */
void sema_lower_at(sema_lowerer *l, const ast_node *e);

#endif
