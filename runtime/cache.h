/*
 * runtime/cache.h — the on-disk compile cache of libtk: compiled artifacts (PTX) keyed by
 * a SHA-256 of everything that determines them.
 *
 * Contract:
 *  - Directory: the one given to rt_cache_open, else $TK_CACHE_DIR, else
 *    $XDG_CACHE_HOME/tk, else $HOME/.cache/tk (created, with its parents, on open).
 *  - An entry is written to a temporary file in the same directory and renamed into
 *    place, so a reader sees a whole entry or none. Each entry carries a magic, a format
 *    version, its key, its length and a SHA-256 of its payload; an entry that fails any
 *    check is deleted and reported as a miss, never returned.
 *  - The cache is best effort: a directory that cannot be created, read or written makes
 *    every lookup miss and every store a no-op; nothing here is an error to the caller.
 * Prefix: rt_cache_, rt_key_.
 */
#ifndef TK_RUNTIME_CACHE_H
#define TK_RUNTIME_CACHE_H

#include <stdint.h>

#include "../include/tk.h"
#include "../support/support.h"

/* A cache key: a SHA-256 digest. */
typedef struct {
  uint8_t b[32];
} rt_cache_key;

/* Incremental SHA-256 over a sequence of fields. */
typedef struct {
  uint32_t h[8];
  uint64_t nbytes;
  uint8_t block[64];
  size_t nblock;
} rt_key_builder;

/* Starts an empty key. */
void rt_key_init(rt_key_builder *k);
/* Adds raw bytes to the digest (no framing: use rt_key_field for key material). */
void rt_key_bytes(rt_key_builder *k, const void *p, size_t n);
/* Adds one field, framed by its length, so that ("ab","c") and ("a","bc") differ. */
void rt_key_field(rt_key_builder *k, const void *p, size_t n);
/* Adds a string field; NULL is a field distinct from "". */
void rt_key_str(rt_key_builder *k, const char *s);
/* Adds an integer field. */
void rt_key_int(rt_key_builder *k, int64_t v);
/* Finishes the digest (k must be re-initialised before reuse). */
rt_cache_key rt_key_final(rt_key_builder *k);
/* SHA-256 of n bytes in one call. */
rt_cache_key rt_key_digest(const void *p, size_t n);
/* The key as 64 lowercase hex digits and a NUL. */
void rt_cache_key_hex(const rt_cache_key *k, char out[65]);

/* The key of a JIT compilation: the source text and name, every define in order, the
 * optimisation level, the target architecture (already resolved: never NULL) and the
 * compiler's version (TK_VERSION). opts may be NULL (defaults). */
rt_cache_key rt_cache_key_compile(const char *source, size_t len, const char *name,
                                  const tk_compile_options *opts, const char *arch);

/* The key of one specialization of a compilation (base: rt_cache_key_compile's): the
 * kernel compiled alone (NULL: the whole module) with parameter i assumed a multiple of 16
 * exactly when bit i of spec is set (RT_SPEC_ALL: every integer and pointer parameter). */
enum { RT_SPEC_DIV = 16 };
#define RT_SPEC_ALL UINT64_MAX
rt_cache_key rt_cache_key_variant(const rt_cache_key *base, const char *kernel, uint64_t spec);

/* A cache rooted at dir; dir is NULL when no directory could be set up (always misses). */
typedef struct {
  const char *dir;
} rt_cache;

/* Resolves the directory (dir, or the environment as above) into a, creating it. */
void rt_cache_open(rt_cache *c, su_arena *a, const char *dir);
/* The path of k's entry (in a), or NULL for a cache without a directory. */
char *rt_cache_entry_path(const rt_cache *c, su_arena *a, const rt_cache_key *k);
/* Looks k up: on a valid entry appends its payload to out and returns true. A missing
 * entry, or one that is corrupt, truncated or for another key (then deleted), is a miss. */
bool rt_cache_get(const rt_cache *c, const rt_cache_key *k, su_buf *out);
/* Stores n bytes under k, atomically. Returns whether the entry was written; a failure
 * leaves no partial file behind and is not an error. */
bool rt_cache_put(const rt_cache *c, const rt_cache_key *k, const void *data, size_t n);

#endif
