/* The per-launch value arena. Unlike su_arena it can release back to a mark, which is
 * what keeps a launch of a million programs (or a loop of a million iterations) in a
 * bounded footprint: chunks released are kept and reused, never returned to malloc until
 * the launch ends. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

enum { CHUNK = 256 * 1024 };

typedef struct chunk {
  struct chunk *next;
  size_t size;
  max_align_t data[];
} chunk;

struct ip_scratch {
  chunk *first; /* the chunks in allocation order; cur and those before it are in use */
  chunk *cur;
  size_t used;  /* bytes used in cur */
};

static chunk *chunk_new(size_t size) {
  chunk *c = malloc(sizeof(chunk) + size);
  if (!c) su_fatal("out of memory (%zu bytes of interpreter values)", size);
  c->next = NULL;
  c->size = size;
  return c;
}

ip_scratch *ip_scratch_new(void) {
  ip_scratch *s = calloc(1, sizeof *s);
  if (!s) su_fatal("out of memory");
  s->first = s->cur = chunk_new(CHUNK);
  return s;
}

void ip_scratch_free(ip_scratch *s) {
  if (!s) return;
  for (chunk *c = s->first, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(s);
}

void *ip_scratch_take(ip_scratch *s, size_t n) {
  const size_t align = sizeof(max_align_t);
  n = (n + align - 1) / align * align;
  if (n == 0) n = align;
  while (s->cur->size - s->used < n) {
    chunk *next = s->cur->next;
    if (!next || next->size < n) {
      /* A kept chunk that is too small is replaced, so the chain only grows to the
       * launch's high-water mark. */
      chunk *c = chunk_new(n > CHUNK ? n : CHUNK);
      c->next = next ? next->next : NULL;
      free(next);
      s->cur->next = c;
    }
    s->cur = s->cur->next;
    s->used = 0;
  }
  void *p = (char *)s->cur->data + s->used;
  s->used += n;
  return p;
}

void *ip_scratch_alloc(ip_scratch *s, size_t n) {
  return memset(ip_scratch_take(s, n), 0, n);
}

ip_mark ip_scratch_mark(const ip_scratch *s) {
  return (ip_mark){s->cur, s->used};
}

void ip_scratch_release(ip_scratch *s, ip_mark mark) {
  s->cur = mark.chunk;
  s->used = mark.used;
}
