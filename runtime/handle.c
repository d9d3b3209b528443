/* The process-wide handle table behind tk_context, tk_module and tk_kernel (runtime.h).
 *
 * A handle is (generation << 32) | (slot + 1) with the slot's kind in the top byte of the
 * generation word: 0 is never a handle, and an address-like value (a pointer from
 * elsewhere) is only accepted if it happens to name a live slot with its generation.
 * Slots sit in chunks allocated once and never freed or moved, so rt_handle_get reads a
 * slot without a lock even while another thread makes or releases handles; releasing
 * bumps the generation first, so a stale handle never reaches the object again. Released
 * slots are reused (oldest first) so that a long-lived process making and destroying
 * modules does not run out. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "runtime.h"

/* A handle's low word is kind << 24 | (slot + 1), so slots number below 2^24 - 1. */
enum { CHUNK_BITS = 12, CHUNK = 1 << CHUNK_BITS, MAX_CHUNKS = 1 << 12,
       MAX_SLOTS = CHUNK * MAX_CHUNKS - 1 };

typedef struct {
  _Atomic uint64_t tag; /* live: (kind << 56) | generation (low 32 bits); 0 while free */
  void *_Atomic obj;
  uint32_t gen;         /* the generation the next handle of this slot gets */
  uint32_t next_free;   /* slot + 1 of the next free slot; 0 ends the list */
} slot;

static slot *_Atomic chunks[MAX_CHUNKS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t nslots;               /* slots handed out so far */
static uint32_t free_head, free_tail; /* slot + 1; FIFO, so a slot rests before reuse */

static slot *slot_at(uint32_t i) {
  slot *c = atomic_load_explicit(&chunks[i >> CHUNK_BITS], memory_order_acquire);
  return c ? &c[i & (CHUNK - 1)] : NULL;
}

uint64_t rt_handle_new(rt_handle_kind kind, void *obj) {
  pthread_mutex_lock(&lock);
  uint32_t i;
  if (free_head) {
    i = free_head - 1;
    slot *s = slot_at(i);
    free_head = s->next_free;
    if (!free_head) free_tail = 0;
  } else {
    if (nslots == MAX_SLOTS) {
      pthread_mutex_unlock(&lock);
      return 0;
    }
    i = nslots;
    if (!slot_at(i)) {
      slot *c = calloc(CHUNK, sizeof *c);
      if (!c) {
        pthread_mutex_unlock(&lock);
        return 0;
      }
      atomic_store_explicit(&chunks[i >> CHUNK_BITS], c, memory_order_release);
    }
    nslots++;
  }
  slot *s = slot_at(i);
  s->gen = s->gen + 1 ? s->gen + 1 : 1; /* never 0: a zero tag means free */
  uint64_t tag = (uint64_t)kind << 56 | s->gen;
  atomic_store_explicit(&s->obj, obj, memory_order_relaxed);
  atomic_store_explicit(&s->tag, tag, memory_order_release);
  pthread_mutex_unlock(&lock);
  return (uint64_t)s->gen << 32 | (uint64_t)kind << 24 | (i + 1);
}

/* The slot a handle names (NULL if it names none) and the tag it expects there. */
static slot *decode(uint64_t h, rt_handle_kind kind, uint64_t *tag) {
  uint32_t lo = (uint32_t)h, gen = (uint32_t)(h >> 32);
  if ((lo >> 24) != (uint32_t)kind || gen == 0) return NULL;
  uint32_t i = (lo & 0xffffff) - 1;
  if ((lo & 0xffffff) == 0 || i >= MAX_SLOTS) return NULL;
  *tag = (uint64_t)kind << 56 | gen;
  return slot_at(i);
}

void *rt_handle_get(uint64_t h, rt_handle_kind kind) {
  uint64_t tag;
  slot *s = decode(h, kind, &tag);
  if (!s || atomic_load_explicit(&s->tag, memory_order_acquire) != tag) return NULL;
  return atomic_load_explicit(&s->obj, memory_order_relaxed);
}

void rt_handle_release(uint64_t h) {
  uint64_t tag;
  for (rt_handle_kind k = RT_H_CONTEXT; k <= RT_H_KERNEL; k++) {
    slot *s = decode(h, k, &tag);
    if (!s) continue;
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&s->tag, memory_order_relaxed) == tag) {
      atomic_store_explicit(&s->tag, 0, memory_order_release);
      atomic_store_explicit(&s->obj, NULL, memory_order_relaxed);
      uint32_t i = (uint32_t)(h & 0xffffff) - 1;
      s->next_free = 0;
      if (free_tail)
        slot_at(free_tail - 1)->next_free = i + 1;
      else
        free_head = i + 1;
      free_tail = i + 1;
    }
    pthread_mutex_unlock(&lock);
    return;
  }
}
