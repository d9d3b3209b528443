/*
 * cache.c — the on-disk store behind rt_cache: one file per key, named by its hex digest.
 *
 * Entry layout (all integers little-endian):
 *   magic "TKCACHE\0" | u32 format version | u32 0 | u64 payload length |
 *   32-byte key | 32-byte writer (rt_compiler_writer) | 32-byte SHA-256 of the payload |
 *   payload
 * The key inside the entry guards against a file copied or renamed under another name;
 * the writer against an entry of another build that a key derivation failed to tell
 * apart; the digest against truncation and bit rot. Nothing read from disk is trusted
 * before all three match.
 */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { FORMAT_VERSION = 2, HEADER_SIZE = 8 + 4 + 4 + 8 + 32 + 32 + 32 };
static const char MAGIC[8] = {'T', 'K', 'C', 'A', 'C', 'H', 'E', '\0'};
#define DEFAULT_MAX_BYTES ((uint64_t)1 << 30)
enum { ORPHAN_SECONDS = 600 }; /* a temporary this old lost its writer (writes take ms) */
static const char ENTRY_SUFFIX[] = ".ptx", TMP_SUFFIX[] = ".ptx.tmp.";

/* One warning of each kind per process: a library must not flood its host's stderr. */
static atomic_flag warned_dir = ATOMIC_FLAG_INIT, warned_size = ATOMIC_FLAG_INIT;

/* mkdir -p with mode 0700 for what it creates; true if path ends up a directory. */
static bool make_dirs(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    int r = mkdir(path, 0700);
    *p = '/';
    if (r != 0 && errno != EEXIST) return false;
  }
  if (mkdir(path, 0700) != 0 && errno != EEXIST) return false;
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether dir may hold code this process will run: another user who can write there can
 * make us load their PTX. Says why not, once per process. */
static bool trusted(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0) return false;
  const char *why = NULL;
  char buf[96];
  if (st.st_uid != geteuid()) {
    snprintf(buf, sizeof buf, "it belongs to uid %u, not to you (uid %u)", (unsigned)st.st_uid,
             (unsigned)geteuid());
    why = buf;
  } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    snprintf(buf, sizeof buf, "others can write to it (mode %03o)", (unsigned)(st.st_mode & 0777));
    why = buf;
  }
  if (why && !atomic_flag_test_and_set(&warned_dir))
    fprintf(stderr,
            "tk: warning: not using the compile cache '%s': %s; compiling without a disk "
            "cache (set TK_CACHE_DIR to a directory of your own, mode 0700)\n",
            dir, why);
  return !why;
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

/* $TK_CACHE_MAX_BYTES: bytes, or K, M, G (powers of 1024); 0 is no bound. */
static uint64_t max_bytes(void) {
  const char *e = getenv("TK_CACHE_MAX_BYTES");
  if (!e || !*e) return DEFAULT_MAX_BYTES;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(e, &end, 10);
  int shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  default: break;
  }
  if (errno || end == e || *end || e[0] == '-' || v > (UINT64_MAX >> shift)) {
    if (!atomic_flag_test_and_set(&warned_size))
      fprintf(stderr, "tk: warning: TK_CACHE_MAX_BYTES='%s' is not a size (bytes, or a number "
                      "with K, M or G); the compile cache keeps its default bound of 1 GiB\n", e);
    return DEFAULT_MAX_BYTES;
  }
  return (uint64_t)v << shift;
}

void rt_cache_open(rt_cache *c, su_arena *a, const char *dir) {
  const char *d = dir ? su_strdup(a, dir) : default_dir(a);
  rt_compiler_id id;
  rt_compiler_id_current(&id);
  *c = (rt_cache){.writer = rt_compiler_writer(&id), .max_bytes = max_bytes()};
  c->dir = d && *d && make_dirs((char *)d) && trusted(d) ? d : NULL;
}

char *rt_cache_entry_path(const rt_cache *c, su_arena *a, const rt_cache_key *k) {
  if (!c->dir) return NULL;
  char hex[65];
  rt_cache_key_hex(k, hex);
  return su_fmt(a, "%s/%s%s", c->dir, hex, ENTRY_SUFFIX);
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

static void make_header(uint8_t h[HEADER_SIZE], const rt_cache *c, const rt_cache_key *k,
                        const void *data, size_t n) {
  memcpy(h, MAGIC, 8);
  put_u32(h + 8, FORMAT_VERSION);
  put_u32(h + 12, 0);
  put_u64(h + 16, n);
  memcpy(h + 24, k->b, 32);
  memcpy(h + 56, c->writer.b, 32);
  rt_cache_key sum = rt_key_digest(data, n);
  memcpy(h + 88, sum.b, 32);
}

/* Reads the whole regular file at fd (at most a sane size) into a heap block. */
static uint8_t *read_all(int fd, const struct stat *st, size_t *len) {
  if (st->st_size < 0 || (uint64_t)st->st_size > ((uint64_t)1 << 31)) return NULL;
  size_t n = (size_t)st->st_size;
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

/* Is the entry at fd (st: its fstat) a valid one for k by this cache's writer? On a hit,
 * its payload is appended to out. */
static bool read_entry(const rt_cache *c, int fd, const struct stat *st, const rt_cache_key *k,
                       su_buf *out) {
  size_t len = 0;
  uint8_t *p = read_all(fd, st, &len);
  bool hit = false;
  if (p && len >= HEADER_SIZE && get_u64(p + 16) == len - HEADER_SIZE) {
    uint8_t want[HEADER_SIZE];
    make_header(want, c, k, p + HEADER_SIZE, len - HEADER_SIZE);
    hit = memcmp(want, p, HEADER_SIZE) == 0;
  }
  if (hit) su_buf_put(out, (const char *)p + HEADER_SIZE, len - HEADER_SIZE);
  free(p);
  return hit;
}

bool rt_cache_get(const rt_cache *c, const rt_cache_key *k, su_buf *out) {
  if (!c->dir) return false;
  su_arena *a = su_arena_new();
  char *path = rt_cache_entry_path(c, a, k);
  bool hit = false;
  /* Never follow a link out of the directory, never block on a FIFO put in its place. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd >= 0) {
    struct stat st;
    hit = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read_entry(c, fd, &st, k, out);
    /* A hit is a use: the bound deletes the least recently used first. */
    if (hit) futimens(fd, NULL);
    close(fd);
  }
  /* Never trusted, so never kept: the caller recompiles and rewrites. A link is deleted
   * itself, not what it names. */
  if (!hit && (fd >= 0 || errno == ELOOP)) unlink(path);
  su_arena_free(a);
  return hit;
}

void rt_cache_evict(const rt_cache *c, const rt_cache_key *k) {
  if (!c->dir) return;
  su_arena *a = su_arena_new();
  unlink(rt_cache_entry_path(c, a, k));
  su_arena_free(a);
}

/* Is name "<64 hex digits>" followed by suffix, and then (tail) any 6 characters? */
static bool named_like(const char *name, const char *suffix, bool tail) {
  for (int i = 0; i < 64; i++)
    if (!name[i] || !strchr("0123456789abcdef", name[i])) return false;
  size_t n = strlen(suffix);
  if (strncmp(name + 64, suffix, n)) return false;
  return strlen(name + 64 + n) == (tail ? 6u : 0u);
}

/* One entry seen by a scan. */
typedef struct {
  struct timespec used;
  uint64_t bytes;
  char name[64 + sizeof ENTRY_SUFFIX];
} scanned;

static int older_first(const void *pa, const void *pb) {
  const scanned *a = pa, *b = pb;
  if (a->used.tv_sec != b->used.tv_sec) return a->used.tv_sec < b->used.tv_sec ? -1 : 1;
  return (a->used.tv_nsec > b->used.tv_nsec) - (a->used.tv_nsec < b->used.tv_nsec);
}

/* Reads the directory: deletes orphan temporaries, sets c->bytes to the entries' total,
 * and when they exceed the bound deletes the least recently used down to 80% of it. */
static void scan(rt_cache *c) {
  DIR *d = opendir(c->dir);
  if (!d) return;
  scanned *v = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  time_t now = time(NULL);
  for (struct dirent *e; (e = readdir(d));) {
    bool entry = named_like(e->d_name, ENTRY_SUFFIX, false);
    bool tmp = !entry && named_like(e->d_name, TMP_SUFFIX, true);
    struct stat st;
    if ((!entry && !tmp) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      continue;
    if (tmp) {
      if (now - st.st_mtime > ORPHAN_SECONDS) unlinkat(dirfd(d), e->d_name, 0);
      continue;
    }
    total += (uint64_t)st.st_size;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      scanned *nv = realloc(v, cap * sizeof *v);
      if (!nv) break; /* best effort: a bound kept next time */
      v = nv;
    }
    v[n].used = st.st_mtim;
    v[n].bytes = (uint64_t)st.st_size;
    memcpy(v[n].name, e->d_name, sizeof v[n].name); /* named_like: exactly that long */
    n++;
  }
  if (c->max_bytes && total > c->max_bytes) {
    qsort(v, n, sizeof *v, older_first);
    uint64_t target = c->max_bytes / 5 * 4;
    for (size_t i = 0; i < n && total > target; i++)
      if (unlinkat(dirfd(d), v[i].name, 0) == 0 || errno == ENOENT) total -= v[i].bytes;
  }
  closedir(d);
  free(v);
  c->bytes = total;
  c->scanned = true;
}

bool rt_cache_put(rt_cache *c, const rt_cache_key *k, const void *data, size_t n) {
  if (!c->dir) return false;
  su_arena *a = su_arena_new();
  char *path = rt_cache_entry_path(c, a, k);
  /* The temporary lives in the same directory so rename() stays on one file system and
   * is atomic; mkstemp makes concurrent writers of one key harmless (last rename wins,
   * and both wrote the same bytes). Its mode, 0600, is the directory's privacy. */
  char *tmp = su_fmt(a, "%s.tmp.XXXXXX", path);
  bool ok = false;
  int fd = mkstemp(tmp);
  if (fd >= 0) {
    uint8_t h[HEADER_SIZE];
    make_header(h, c, k, data, n);
    ok = su_write_all(fd, h, sizeof h) && su_write_all(fd, data, n);
    ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
  }
  su_arena_free(a);
  if (!ok) return false;
  if (c->scanned)
    c->bytes += HEADER_SIZE + n;
  if (!c->scanned || (c->max_bytes && c->bytes > c->max_bytes)) scan(c);
  return true;
}
