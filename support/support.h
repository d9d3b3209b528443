/*
 * support/ — the small pieces every stage of tk shares.
 *
 * Contract:
 *  - Memory: every compilation owns one su_arena; nodes, types, IR and strings are
 *    allocated from it and freed together by su_arena_free. Nothing returned by an arena
 *    is ever freed on its own. Allocation failure is an internal error (su_oom).
 *  - Strings: su_intern returns a canonical copy, so interned names compare with ==.
 *  - Diagnostics: user errors go through su_diag_* with a source location; they are
 *    printed (file:line:col: error: msg, the line, a caret or range underline, then notes)
 *    and counted; the caller decides when to stop. Internal errors use su_fatal /
 *    SU_UNREACHABLE / SU_ASSERT / su_oom, which print "internal error" and abort —
 *    unless the thread has set a trap (su_trap_push): then they unwind to it with the
 *    message, which is how libtk keeps an internal error from taking its host down.
 *  - Output files: su_write_outputs never leaves a half-written file, never turns a
 *    device or FIFO into a regular file, and never overwrites an input.
 * Prefix: su_.
 */
#ifndef TK_SUPPORT_H
#define TK_SUPPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- internal errors ---------------------------------------------------------------- */

/* Prints "tk: internal error: ..." with the C location and aborts. Never returns. */
_Noreturn void su_fatal_at(const char *cfile, int cline, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define su_fatal(...) su_fatal_at(__FILE__, __LINE__, __VA_ARGS__)
#define SU_UNREACHABLE() su_fatal_at(__FILE__, __LINE__, "unreachable code reached")
#define SU_ASSERT(c) \
  do { if (!(c)) su_fatal_at(__FILE__, __LINE__, "assertion failed: %s", #c); } while (0)
/* Out of memory (bytes asked for; 0 if unknown): an internal error of kind oom. */
_Noreturn void su_oom(size_t bytes);

/* A recovery point for internal errors on this thread. Usage:
 *     su_trap t;
 *     su_trap_push(&t);
 *     if (setjmp(t.jb)) { ... an internal error unwound here: t.msg says what, t.oom
 *                          whether memory ran out; the trap is already removed ... }
 *     ... work that may hit su_fatal ...
 *     su_trap_clear(&t);
 * setjmp is called by the user of the trap, in the function the work is in, as the entire
 * condition of the if (the one place C lets its value be used). Traps nest (the innermost
 * catches). Unwinding skips every frame in between: what they allocated outside arenas is
 * leaked, and state they were changing may be half-changed, so the work must be on
 * objects the recovery then throws away (a compilation's arena, an LLVM context), never on
 * shared ones; locals of the function changed after the push must be volatile to be read
 * after an unwind. */
#include <setjmp.h>
typedef struct su_trap {
  jmp_buf jb;
  struct su_trap *prev;
  bool oom;
  char msg[1024];
} su_trap;
/* Makes t the thread's innermost trap (its jb must be set with setjmp next). */
void su_trap_push(su_trap *t);
/* Removes t (the innermost trap) after the work succeeded. */
void su_trap_clear(su_trap *t);
/* True if the thread has a trap set: an internal error would not abort. */
bool su_trap_active(void);

/* ---- arena -------------------------------------------------------------------------- */

typedef struct su_arena su_arena;

/* Creates an empty arena. */
su_arena *su_arena_new(void);
/* Frees the arena and everything allocated from it. NULL is ignored. */
void su_arena_free(su_arena *a);
/* Returns n zeroed bytes aligned for any type, valid until the arena is freed. */
void *su_alloc(su_arena *a, size_t n);
/* Returns an arena copy of the n bytes at p. */
void *su_memdup(su_arena *a, const void *p, size_t n);
/* Returns a NUL-terminated arena copy of the n chars at s. */
char *su_strndup(su_arena *a, const char *s, size_t n);
/* Returns a NUL-terminated arena copy of s. */
char *su_strdup(su_arena *a, const char *s);
/* printf into a fresh arena string. */
char *su_fmt(su_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Bytes handed out so far (for statistics and tests). */
size_t su_arena_used(const su_arena *a);

#define SU_NEW(a, T) ((T *)su_alloc((a), sizeof(T)))
#define SU_NEW_ARRAY(a, T, n) ((T *)su_alloc((a), sizeof(T) * (size_t)(n)))

/* ---- growable arrays (heap, not arena: for builders that need to grow) -------------- */

/* A vector of pointers. Grows with realloc; su_vec_free releases the storage. */
typedef struct {
  void **data;
  int len, cap;
} su_vec;

/* Appends p. */
void su_vec_push(su_vec *v, void *p);
/* Releases the storage (not the elements) and resets to empty. */
void su_vec_free(su_vec *v);
/* Copies the elements into an arena array (for freezing a builder's result). */
void **su_vec_freeze(su_arena *a, const su_vec *v);

/* A byte buffer for building text. */
typedef struct {
  char *data;
  size_t len, cap;
} su_buf;

/* Appends n bytes. */
void su_buf_put(su_buf *b, const char *s, size_t n);
/* Appends a NUL-terminated string. */
void su_buf_puts(su_buf *b, const char *s);
/* printf onto the end. */
void su_buf_printf(su_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void su_buf_vprintf(su_buf *b, const char *fmt, va_list ap);
/* Returns the contents NUL-terminated (the buffer keeps owning them). */
const char *su_buf_str(su_buf *b);
/* Releases the storage and resets to empty. */
void su_buf_free(su_buf *b);

/* ---- string map (open addressing; keys are copied into the map's arena) ------------- */

typedef struct su_map su_map;

/* Creates a map whose storage lives in arena a. */
su_map *su_map_new(su_arena *a);
/* Returns the value for key (n bytes), or NULL. */
void *su_map_get(const su_map *m, const char *key, size_t n);
/* Sets key to value (replacing). */
void su_map_put(su_map *m, const char *key, size_t n, void *value);
/* Returns the canonical interned copy of key: equal strings give the same pointer. */
const char *su_intern(su_map *m, const char *key, size_t n);
/* Number of entries. */
int su_map_len(const su_map *m);

/* FNV-1a over n bytes; h is the running hash (start with SU_HASH_INIT). */
#define SU_HASH_INIT 0xcbf29ce484222325ull
uint64_t su_hash(uint64_t h, const void *p, size_t n);

/* ---- output files ------------------------------------------------------------------ */

/* One output of a program: the path it was asked for ("-": standard output), its bytes. */
typedef struct {
  const char *path;
  const void *data;
  size_t len;
} su_output;

/* Writes the n outputs as a C compiler writes -o, all of them or none:
 *  - "-" is standard output (stdio's pending bytes are flushed first); a device, FIFO or
 *    socket is opened, never created, and written in place: `-o /dev/null` discards, a
 *    FIFO's reader gets the bytes (the open waits for one);
 *  - anything else, a regular file or a missing one, is replaced atomically: written to a
 *    temporary made in the same directory with an unpredictable name and O_EXCL
 *    (mkostemp), then renamed over it. A reader sees the old file or the whole new one;
 *  - a symbolic link is followed to the file it ends at (which is created when missing);
 *    that file is replaced, in its own directory, and the link stays a link;
 *  - an output that is one of the inputs, by name or as the same file (device and inode:
 *    a hard or symbolic link to it), is an error before anything is written;
 *  - nothing is committed until every output is prepared; direct outputs are written
 *    before any rename, and a failed rename puts back the files renamed before it.
 * A new file gets 0666 less the umask, a replaced one keeps its permission bits (the
 * umask is read by setting it: no other thread may be creating files meanwhile).
 * Returns false with one line in err ("cannot write 'PATH': REASON") on failure; then no
 * file was changed but what a direct output already received. */
bool su_write_outputs(const su_output *outs, int n, const char *const *inputs, int ninputs,
                      su_buf *err);
/* Writes n bytes to fd, retrying short writes and EINTR; false with errno set. */
bool su_write_all(int fd, const void *data, size_t n);

/* ---- sources and locations ---------------------------------------------------------- */

/* One source text. text is NUL-terminated (an embedded NUL is an error the lexer reports). */
typedef struct {
  const char *name; /* as given on the command line or by the API caller */
  const char *text;
  size_t len;
} su_source;

/* A location: byte offset and length in a source, with 1-based line and column of the
 * start. len may be 0 (a point). */
typedef struct {
  const su_source *src;
  uint32_t off, len;
  uint32_t line, col;
} su_loc;

/* Makes a source from text (copied into the arena, NUL-terminated). */
su_source *su_source_new(su_arena *a, const char *name, const char *text, size_t len);
/* Reads a whole file into a source. Returns NULL and sets *err (static string from
 * strerror) when it cannot be read. */
su_source *su_source_read(su_arena *a, const char *path, const char **err);
/* The source text loc spans, in the arena: at most max bytes, "..." appended when cut (for
 * quoting a construct in a hint). "" for a location without a source. */
const char *su_loc_text(su_arena *a, su_loc loc, size_t max);
/* A location spanning from the start of a to the end of b (same source). */
su_loc su_loc_join(su_loc a, su_loc b);

/* ---- diagnostics -------------------------------------------------------------------- */

typedef enum { SU_ERROR, SU_WARNING, SU_NOTE, SU_REMARK } su_severity;

/* One diagnostic, kept so tests and the API can read what was reported. */
typedef struct su_diag {
  su_severity sev;
  su_loc loc;
  const char *msg;
  struct su_diag *next;
} su_diag;

/* Where diagnostics go. out may be NULL (collect only). */
typedef struct {
  su_arena *arena;
  FILE *out;
  bool color;
  int nerrors;
  int max_errors; /* 0: unlimited; after this many, further errors are dropped */
  su_diag *first, *last;
} su_diags;

/* Sets up d printing to out (NULL: only collect), colour when out is a terminal and
 * NO_COLOR is unset. */
void su_diags_init(su_diags *d, su_arena *a, FILE *out);
/* Reports an error at loc (printed at once). */
void su_error(su_diags *d, su_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void su_verror(su_diags *d, su_loc loc, const char *fmt, va_list ap);
/* Reports a warning at loc. */
void su_warning(su_diags *d, su_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Reports a remark at loc: what an optimization did or did not do (-Rpass-missed). */
void su_remark(su_diags *d, su_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Attaches a note to the last error or warning (printed at once, after it). */
void su_note(su_diags *d, su_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Formats the whole report of d (every diagnostic, with source lines and carets, no
 * colour) into b: what the API hands back as its error message. */
void su_diags_render(const su_diags *d, su_buf *b);

#endif
