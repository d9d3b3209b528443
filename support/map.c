/* String-keyed hash map with open addressing, storage in an arena (old tables are simply
 * abandoned on growth: the arena reclaims them with everything else). */
#include "support.h"

#include <string.h>

typedef struct {
  const char *key; /* NULL: empty slot */
  size_t n;
  uint64_t h;
  void *value;
} slot;

struct su_map {
  su_arena *arena;
  slot *slots;
  int cap, len;
};

uint64_t su_hash(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

su_map *su_map_new(su_arena *a) {
  su_map *m = SU_NEW(a, su_map);
  m->arena = a;
  m->cap = 16;
  m->slots = SU_NEW_ARRAY(a, slot, m->cap);
  return m;
}

static slot *find(const su_map *m, const char *key, size_t n, uint64_t h) {
  for (int i = (int)(h & (uint64_t)(m->cap - 1));; i = (i + 1) & (m->cap - 1)) {
    slot *s = &m->slots[i];
    if (!s->key) return s;
    if (s->h == h && s->n == n && memcmp(s->key, key, n) == 0) return s;
  }
}

static void grow(su_map *m) {
  slot *old = m->slots;
  int oldcap = m->cap;
  m->cap *= 2;
  m->slots = SU_NEW_ARRAY(m->arena, slot, m->cap);
  for (int i = 0; i < oldcap; i++)
    if (old[i].key) *find(m, old[i].key, old[i].n, old[i].h) = old[i];
}

void *su_map_get(const su_map *m, const char *key, size_t n) {
  slot *s = find(m, key, n, su_hash(SU_HASH_INIT, key, n));
  return s->key ? s->value : NULL;
}

static slot *insert(su_map *m, const char *key, size_t n) {
  if ((m->len + 1) * 4 > m->cap * 3) grow(m);
  uint64_t h = su_hash(SU_HASH_INIT, key, n);
  slot *s = find(m, key, n, h);
  if (!s->key) {
    s->key = su_strndup(m->arena, key, n);
    s->n = n;
    s->h = h;
    m->len++;
  }
  return s;
}

void su_map_put(su_map *m, const char *key, size_t n, void *value) { insert(m, key, n)->value = value; }

const char *su_intern(su_map *m, const char *key, size_t n) {
  slot *s = insert(m, key, n);
  return s->key;
}

int su_map_len(const su_map *m) { return m->len; }
