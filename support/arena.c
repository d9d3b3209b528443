/* Bump allocator: every compilation's nodes, types, IR and strings die together. */
#include "support.h"

#include <stdlib.h>
#include <string.h>

enum { CHUNK = 64 * 1024 };

typedef struct chunk {
  struct chunk *next;
  size_t used, size;
  max_align_t data[];
} chunk;

struct su_arena {
  chunk *head;
  size_t total;
};

static _Thread_local su_trap *trap;

void su_trap_push(su_trap *t) {
  t->prev = trap;
  t->oom = false;
  t->msg[0] = 0;
  trap = t;
}

void su_trap_clear(su_trap *t) {
  SU_ASSERT(trap == t);
  trap = t->prev;
}

bool su_trap_active(void) { return trap != NULL; }

/* Unwinds to the innermost trap with the message, or prints it and aborts. */
static _Noreturn void fatal(bool oom, const char *cfile, int cline, const char *fmt, va_list ap) {
  su_trap *t = trap;
  if (t) {
    int n = vsnprintf(t->msg, sizeof t->msg, fmt, ap);
    if (n >= 0 && (size_t)n < sizeof t->msg)
      snprintf(t->msg + n, sizeof t->msg - (size_t)n, " (at %s:%d)", cfile, cline);
    t->oom = oom;
    trap = t->prev;
    longjmp(t->jb, 1);
  }
  fflush(stdout);
  fprintf(stderr, "tk: internal error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (at %s:%d)\n", cfile, cline);
  abort();
}

_Noreturn void su_fatal_at(const char *cfile, int cline, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fatal(false, cfile, cline, fmt, ap);
}

static _Noreturn void oom_at(const char *cfile, int cline, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fatal(true, cfile, cline, fmt, ap);
}

_Noreturn void su_oom(size_t bytes) {
  if (bytes) oom_at(__FILE__, __LINE__, "out of memory (%zu bytes)", bytes);
  oom_at(__FILE__, __LINE__, "out of memory");
}

su_arena *su_arena_new(void) {
  su_arena *a = calloc(1, sizeof *a);
  if (!a) su_oom(sizeof *a);
  return a;
}

void su_arena_free(su_arena *a) {
  if (!a) return;
  for (chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void *su_alloc(su_arena *a, size_t n) {
  const size_t align = sizeof(max_align_t);
  n = (n + align - 1) / align * align;
  if (n == 0) n = align;
  chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    size_t size = n > CHUNK ? n : CHUNK;
    c = malloc(sizeof(chunk) + size);
    if (!c) su_oom(size);
    c->size = size;
    c->used = 0;
    /* A big request gets its own chunk behind the current one, so the rest of the
     * current chunk stays usable. */
    if (a->head && n > CHUNK) {
      c->next = a->head->next;
      a->head->next = c;
    } else {
      c->next = a->head;
      a->head = c;
    }
  }
  void *p = (char *)c->data + c->used;
  c->used += n;
  a->total += n;
  memset(p, 0, n);
  return p;
}

void *su_memdup(su_arena *a, const void *p, size_t n) {
  void *q = su_alloc(a, n);
  if (n) memcpy(q, p, n);
  return q;
}

char *su_strndup(su_arena *a, const char *s, size_t n) {
  char *q = su_alloc(a, n + 1);
  memcpy(q, s, n);
  q[n] = 0;
  return q;
}

char *su_strdup(su_arena *a, const char *s) { return su_strndup(a, s, strlen(s)); }

char *su_fmt(su_arena *a, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  /* Checking fmt first also stops GCC (with sanitizers) from warning that it may be NULL. */
  if (!fmt) su_fatal("NULL format string");
  int n = vsnprintf(NULL, 0, fmt, ap);
  if (n < 0) su_fatal("bad format string '%s'", fmt);
  va_end(ap);
  char *s = su_alloc(a, (size_t)n + 1);
  vsnprintf(s, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

size_t su_arena_used(const su_arena *a) { return a->total; }
