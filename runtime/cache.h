/*
 * runtime/cache.h — the on-disk compile cache of libtk: compiled artifacts (PTX) keyed by
 * a SHA-256 of everything that determines them. ccache is the model (docs/decisions.md).
 *
 * Contract:
 *  - Directory: the one given to rt_cache_open, else $TK_CACHE_DIR, else
 *    $XDG_CACHE_HOME/tk, else $HOME/.cache/tk; missing components are created 0700. It is
 *    used only when it is the user's own (owned by the effective uid) and writable by no
 *    one else (no group or other write bit); otherwise a warning, once per process, and
 *    no cache.
 *  - Keys hold the source and its name, every option that changes the code (defines,
 *    optimisation level, target, specialization) and the identity of the code that
 *    compiles (rt_compiler_id: a digest of this build's sources, the LLVM library's
 *    version, libdevice's digest), so an entry made by any other build is a miss. Each
 *    entry also names its writer (build and LLVM) in its header, checked on every read.
 *  - An entry is written to a temporary in the same directory (mkstemp) and renamed into
 *    place, so a reader sees a whole entry or none. Each carries a magic, a format
 *    version, its key, its writer, its length and a SHA-256 of its payload. It is opened
 *    O_NOFOLLOW | O_NONBLOCK and read only when fstat says it is a regular file; one that
 *    fails any check is deleted and is a miss, never returned.
 *  - Bound: the entries' total size is kept under $TK_CACHE_MAX_BYTES (bytes, or with a
 *    K, M or G suffix; default 1 GiB; 0: no bound) by deleting the least recently used
 *    (oldest mtime: a hit sets it to now) down to 80% of the bound. Temporaries older
 *    than ten minutes (left by a writer that died) are deleted. Only files named like an
 *    entry or an entry's temporary are ever deleted, whatever else the directory holds.
 *  - The cache is best effort: a directory that cannot be created, read or written makes
 *    every lookup miss and every store a no-op; nothing here is an error to the caller.
 * Prefix: rt_cache_, rt_key_, rt_compiler_.
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

/* The identity of the code that compiles: what, besides a compile's inputs, decides its
 * output. */
typedef struct {
  const char *build;      /* RT_BUILD_ID: SHA-256 of libtk's sources (runtime/build_id.py) */
  unsigned llvm[3];       /* the LLVM library's version, as it reports it at run time */
  bool has_libdevice;     /* false when libdevice cannot be read */
  rt_cache_key libdevice; /* SHA-256 of the libdevice bitcode codegen links */
} rt_compiler_id;

/* This process's compiler identity. libdevice's digest is computed once per process and
 * again only when its file (path, inode, size, mtime) changes; safe from any thread. */
void rt_compiler_id_current(rt_compiler_id *id);
/* The writer an entry's header names: the build and the LLVM version of id. */
rt_cache_key rt_compiler_writer(const rt_compiler_id *id);

/* The key of a JIT compilation by compiler id: the source text and name, every define in
 * order, the optimisation level, the target architecture (already resolved: never NULL)
 * and every field of id. opts may be NULL (defaults). */
rt_cache_key rt_cache_key_compile_id(const rt_compiler_id *id, const char *source, size_t len,
                                     const char *name, const tk_compile_options *opts,
                                     const char *arch);
/* The same by this process's compiler (rt_compiler_id_current). */
rt_cache_key rt_cache_key_compile(const char *source, size_t len, const char *name,
                                  const tk_compile_options *opts, const char *arch);

/* The key of one specialization of a compilation (base: rt_cache_key_compile's): the
 * kernel compiled alone (NULL: the whole module) with parameter i assumed a multiple of 16
 * exactly when bit i of spec is set (RT_SPEC_ALL: every integer and pointer parameter). */
enum { RT_SPEC_DIV = 16 };
#define RT_SPEC_ALL UINT64_MAX
rt_cache_key rt_cache_key_variant(const rt_cache_key *base, const char *kernel, uint64_t spec);

/* A cache rooted at dir; dir is NULL when no directory could be set up or trusted
 * (every lookup misses). Used by one thread at a time, as its context is. */
typedef struct {
  const char *dir;
  rt_cache_key writer; /* rt_compiler_writer of this process: what entries must name */
  uint64_t max_bytes;  /* the bound; 0: none */
  uint64_t bytes;      /* the entries' size: the last scan's, plus what was stored since */
  bool scanned;        /* whether this cache has scanned its directory yet */
} rt_cache;

/* Resolves the directory (dir, or the environment as above) into a, creating it, and
 * checks that it can be trusted (else warns once and leaves c->dir NULL). */
void rt_cache_open(rt_cache *c, su_arena *a, const char *dir);
/* The path of k's entry (in a), or NULL for a cache without a directory. */
char *rt_cache_entry_path(const rt_cache *c, su_arena *a, const rt_cache_key *k);
/* Looks k up: on a valid entry appends its payload to out, marks the entry used (its
 * mtime) and returns true. A missing entry is a miss; one that is corrupt, truncated, for
 * another key, by another writer or not a regular file is deleted and is a miss. */
bool rt_cache_get(const rt_cache *c, const rt_cache_key *k, su_buf *out);
/* Stores n bytes under k, atomically, then keeps the bound (the first store of a cache
 * scans the directory: its size, and orphan temporaries to delete). Returns whether the
 * entry was written; a failure leaves no partial file behind and is not an error. */
bool rt_cache_put(rt_cache *c, const rt_cache_key *k, const void *data, size_t n);
/* Deletes k's entry: the caller found it unusable (the driver rejected its PTX), so the
 * next lookup misses and the entry is rebuilt. */
void rt_cache_evict(const rt_cache *c, const rt_cache_key *k);

#endif
