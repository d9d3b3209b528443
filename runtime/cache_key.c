/*
 * cache_key.c — SHA-256 (FIPS 180-4), the identity of the compiler and the key of a
 * compilation. A cryptographic hash because a collision would silently run the wrong
 * kernel; 64-bit FNV is not enough for a cache shared by every program of a user.
 *
 * The LLVM version is asked of the library itself (LLVMGetVersion), the one place above
 * codegen/ that names LLVM: the key must describe the code generator that runs, and a
 * patch release of the shared libLLVM replaces it under a tk that was not rebuilt.
 */
#include "cache.h"

#include <fcntl.h>
#include <stdlib.h>
#include <llvm-c/Core.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../codegen/codegen.h"
#include "build_id.h"

#include "../target/target.h"

static const uint32_t K[64] = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const uint8_t p[64]) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
    uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g; g = f; f = e; e = d + t1;
    d = c; c = b; b = a; a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d;
  h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void rt_key_init(rt_key_builder *k) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(k->h, iv, sizeof iv);
  k->nbytes = 0;
  k->nblock = 0;
}

void rt_key_bytes(rt_key_builder *k, const void *p, size_t n) {
  const uint8_t *s = p;
  k->nbytes += n;
  while (n > 0) {
    size_t take = 64 - k->nblock < n ? 64 - k->nblock : n;
    memcpy(k->block + k->nblock, s, take);
    k->nblock += take;
    s += take;
    n -= take;
    if (k->nblock == 64) {
      compress(k->h, k->block);
      k->nblock = 0;
    }
  }
}

void rt_key_int(rt_key_builder *k, int64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)v >> (8 * i));
  rt_key_bytes(k, b, sizeof b);
}

void rt_key_field(rt_key_builder *k, const void *p, size_t n) {
  rt_key_int(k, (int64_t)n);
  rt_key_bytes(k, p, n);
}

void rt_key_str(rt_key_builder *k, const char *s) {
  if (!s) {
    rt_key_int(k, -1); /* no field of that length exists */
    return;
  }
  rt_key_field(k, s, strlen(s));
}

rt_cache_key rt_key_final(rt_key_builder *k) {
  uint64_t bits = k->nbytes * 8;
  static const uint8_t pad[64] = {0x80};
  size_t padlen = k->nblock < 56 ? 56 - k->nblock : 120 - k->nblock;
  rt_key_bytes(k, pad, padlen);
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
  rt_key_bytes(k, len, 8);
  SU_ASSERT(k->nblock == 0);
  rt_cache_key out;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 4; j++) out.b[4 * i + j] = (uint8_t)(k->h[i] >> (24 - 8 * j));
  return out;
}

rt_cache_key rt_key_digest(const void *p, size_t n) {
  rt_key_builder k;
  rt_key_init(&k);
  rt_key_bytes(&k, p, n);
  return rt_key_final(&k);
}

void rt_cache_key_hex(const rt_cache_key *k, char out[65]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = digits[k->b[i] >> 4];
    out[2 * i + 1] = digits[k->b[i] & 15];
  }
  out[64] = '\0';
}

#ifndef TK_VERSION
#define TK_VERSION "unknown"
#endif

/* libdevice's digest, kept for the process with the identity of the file it was read
 * from; the file is stat'ed on every compile (about a microsecond) and hashed again only
 * when that identity changed (about 2 ms for its 460 KB, hence not per compile). */
static struct {
  pthread_mutex_t lock;
  char *path;
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
  bool found;
  rt_cache_key digest;
} libdevice = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* SHA-256 of the regular file at fd; false when it cannot be read through. */
static bool digest_fd(int fd, rt_cache_key *out) {
  rt_key_builder k;
  rt_key_init(&k);
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) return false;
    rt_key_bytes(&k, buf, (size_t)n);
  }
  *out = rt_key_final(&k);
  return true;
}

static void libdevice_id(rt_compiler_id *id) {
  su_buf path = {0};
  cg_libdevice_path(NULL, &path); /* what codegen links, with the options the JIT passes */
  struct stat st;
  bool exists = stat(su_buf_str(&path), &st) == 0 && S_ISREG(st.st_mode);
  pthread_mutex_lock(&libdevice.lock);
  bool same = libdevice.path && !strcmp(libdevice.path, su_buf_str(&path)) &&
              exists == libdevice.found &&
              (!exists || (st.st_dev == libdevice.dev && st.st_ino == libdevice.ino &&
                           st.st_size == libdevice.size &&
                           st.st_mtim.tv_sec == libdevice.mtime.tv_sec &&
                           st.st_mtim.tv_nsec == libdevice.mtime.tv_nsec));
  if (!same) {
    free(libdevice.path);
    libdevice.path = strdup(su_buf_str(&path));
    libdevice.found = false;
    int fd = exists ? open(su_buf_str(&path), O_RDONLY | O_CLOEXEC) : -1;
    struct stat now;
    if (fd >= 0 && fstat(fd, &now) == 0 && S_ISREG(now.st_mode) &&
        digest_fd(fd, &libdevice.digest)) {
      libdevice.found = true; /* the identity of what was read, not of what was stat'ed */
      libdevice.dev = now.st_dev;
      libdevice.ino = now.st_ino;
      libdevice.size = now.st_size;
      libdevice.mtime = now.st_mtim;
    }
    if (fd >= 0) close(fd);
  }
  id->has_libdevice = libdevice.found;
  id->libdevice = libdevice.found ? libdevice.digest : (rt_cache_key){{0}};
  pthread_mutex_unlock(&libdevice.lock);
  su_buf_free(&path);
}

void rt_compiler_id_current(rt_compiler_id *id) {
  id->build = RT_BUILD_ID;
  LLVMGetVersion(&id->llvm[0], &id->llvm[1], &id->llvm[2]);
  libdevice_id(id);
}

/* The fields that say who wrote an entry, keyed and in the header alike. */
static void add_writer(rt_key_builder *k, const rt_compiler_id *id) {
  rt_key_str(k, TK_VERSION);
  rt_key_str(k, id->build);
  for (int i = 0; i < 3; i++) rt_key_int(k, id->llvm[i]);
}

rt_cache_key rt_compiler_writer(const rt_compiler_id *id) {
  rt_key_builder k;
  rt_key_init(&k);
  rt_key_str(&k, "tk-writer");
  add_writer(&k, id);
  return rt_key_final(&k);
}

rt_cache_key rt_cache_key_compile_id(const rt_compiler_id *id, const char *source, size_t len,
                                     const char *name, const tk_compile_options *opts,
                                     const char *arch) {
  rt_key_builder k;
  rt_key_init(&k);
  /* A tag first, so a future kind of entry (e.g. cubin) can never share a key with this. */
  rt_key_str(&k, "tk-jit-ptx");
  add_writer(&k, id);
  rt_key_int(&k, id->has_libdevice);
  rt_key_field(&k, id->libdevice.b, sizeof id->libdevice.b);
  rt_key_field(&k, source, len);
  rt_key_str(&k, name);
  rt_key_str(&k, arch);
  int opt = opts && opts->opt_level > 0 ? opts->opt_level : TG_DEFAULT_OPT_LEVEL; /* 0: default */
  rt_key_int(&k, opt);
  rt_key_int(&k, opts && opts->dot_precision == TK_DOT_TF32 ? TK_DOT_DEFAULT : opts ? opts->dot_precision : 0);
  rt_key_int(&k, opts && opts->accurate_math);
  rt_key_int(&k, opts && opts->fp_contract);
  rt_key_int(&k, opts && opts->no_fuse ? 1 : 0);
  rt_key_int(&k, opts ? (int)opts->fuse_keep : 0);
  int nd = opts && opts->defines ? opts->ndefines : 0;
  rt_key_int(&k, nd);
  for (int i = 0; i < nd; i++) {
    rt_key_str(&k, opts->defines[i].name);
    rt_key_str(&k, opts->defines[i].value);
  }
  return rt_key_final(&k);
}

rt_cache_key rt_cache_key_compile(const char *source, size_t len, const char *name,
                                  const tk_compile_options *opts, const char *arch) {
  rt_compiler_id id;
  rt_compiler_id_current(&id);
  return rt_cache_key_compile_id(&id, source, len, name, opts, arch);
}

rt_cache_key rt_cache_key_variant(const rt_cache_key *base, const char *kernel, uint64_t spec) {
  rt_key_builder k;
  rt_key_init(&k);
  rt_key_str(&k, "tk-jit-variant");
  rt_key_field(&k, base->b, sizeof base->b);
  rt_key_str(&k, kernel);
  rt_key_int(&k, (int64_t)spec);
  rt_key_int(&k, RT_SPEC_DIV);
  return rt_key_final(&k);
}
