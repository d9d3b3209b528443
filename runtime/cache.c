/*
 * cache.c — the on-disk store behind rt_cache: one file per key, named by its hex digest.
 *
 * Entry layout (all integers little-endian):
 *   magic "TKCACHE\0" | u32 format version | u32 0 | u64 payload length |
 *   32-byte key | 32-byte SHA-256 of the payload | payload
 * The key inside the entry guards against a file copied or renamed under another name;
 * the digest against truncation and bit rot. Nothing read from disk is trusted before
 * both match.
 */
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { FORMAT_VERSION = 1, HEADER_SIZE = 8 + 4 + 4 + 8 + 32 + 32 };
static const char MAGIC[8] = {'T', 'K', 'C', 'A', 'C', 'H', 'E', '\0'};

/* mkdir -p: every missing component of path; true if it ends up a directory. */
static bool make_dirs(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    int r = mkdir(path, 0755);
    *p = '/';
    if (r != 0 && errno != EEXIST) return false;
  }
  if (mkdir(path, 0755) != 0 && errno != EEXIST) return false;
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static const char *default_dir(su_arena *a) {
  const char *e = getenv("TK_CACHE_DIR");
  if (e && *e) return su_strdup(a, e);
  e = getenv("XDG_CACHE_HOME");
  if (e && *e) return su_fmt(a, "%s/tk", e);
  e = getenv("HOME");
  if (e && *e) return su_fmt(a, "%s/.cache/tk", e);
  return NULL;
}

void rt_cache_open(rt_cache *c, su_arena *a, const char *dir) {
  const char *d = dir ? su_strdup(a, dir) : default_dir(a);
  c->dir = d && *d && make_dirs((char *)d) ? d : NULL;
}

char *rt_cache_entry_path(const rt_cache *c, su_arena *a, const rt_cache_key *k) {
  if (!c->dir) return NULL;
  char hex[65];
  rt_cache_key_hex(k, hex);
  return su_fmt(a, "%s/%s.ptx", c->dir, hex);
}

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void make_header(uint8_t h[HEADER_SIZE], const rt_cache_key *k, const void *data,
                        size_t n) {
  memcpy(h, MAGIC, 8);
  put_u32(h + 8, FORMAT_VERSION);
  put_u32(h + 12, 0);
  put_u64(h + 16, n);
  memcpy(h + 24, k->b, 32);
  rt_cache_key sum = rt_key_digest(data, n);
  memcpy(h + 56, sum.b, 32);
}

/* Reads the whole file at fd (regular, at most a sane size) into a heap block. */
static uint8_t *read_all(int fd, size_t *len) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
      (uint64_t)st.st_size > ((uint64_t)1 << 31))
    return NULL;
  size_t n = (size_t)st.st_size;
  uint8_t *p = malloc(n ? n : 1);
  if (!p) return NULL;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  *len = got;
  return p;
}

bool rt_cache_get(const rt_cache *c, const rt_cache_key *k, su_buf *out) {
  if (!c->dir) return false;
  su_arena *a = su_arena_new();
  char *path = rt_cache_entry_path(c, a, k);
  bool hit = false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    size_t len = 0;
    uint8_t *p = read_all(fd, &len);
    close(fd);
    if (p && len >= HEADER_SIZE && get_u64(p + 16) == len - HEADER_SIZE) {
      uint8_t want[HEADER_SIZE];
      make_header(want, k, p + HEADER_SIZE, len - HEADER_SIZE);
      hit = memcmp(want, p, HEADER_SIZE) == 0;
    }
    if (hit)
      su_buf_put(out, (const char *)p + HEADER_SIZE, len - HEADER_SIZE);
    else
      unlink(path); /* never trusted, so never kept: the caller recompiles and rewrites */
    free(p);
  }
  su_arena_free(a);
  return hit;
}

static bool write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t r = write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= (size_t)r;
  }
  return true;
}

bool rt_cache_put(const rt_cache *c, const rt_cache_key *k, const void *data, size_t n) {
  if (!c->dir) return false;
  su_arena *a = su_arena_new();
  char *path = rt_cache_entry_path(c, a, k);
  /* The temporary lives in the same directory so rename() stays on one file system and
   * is atomic; mkstemp makes concurrent writers of one key harmless (last rename wins,
   * and both wrote the same bytes). */
  char *tmp = su_fmt(a, "%s.tmp.XXXXXX", path);
  bool ok = false;
  int fd = mkstemp(tmp);
  if (fd >= 0) {
    uint8_t h[HEADER_SIZE];
    make_header(h, k, data, n);
    ok = write_all(fd, h, sizeof h) && write_all(fd, data, n);
    ok = close(fd) == 0 && ok;
    ok = ok && fchmodat(AT_FDCWD, tmp, 0644, 0) == 0 && rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
  }
  su_arena_free(a);
  return ok;
}
