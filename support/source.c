/* Source texts and locations. */
#include "support.h"

#include <errno.h>
#include <string.h>

su_source *su_source_new(su_arena *a, const char *name, const char *text, size_t len) {
  su_source *s = SU_NEW(a, su_source);
  s->name = su_strdup(a, name ? name : "<input>");
  s->text = su_strndup(a, text, len);
  s->len = len;
  return s;
}

su_source *su_source_read(su_arena *a, const char *path, const char **err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    *err = strerror(errno);
    return NULL;
  }
  su_buf b = {0};
  char tmp[65536];
  size_t n;
  while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) su_buf_put(&b, tmp, n);
  bool bad = ferror(f);
  int e = errno;
  fclose(f);
  if (bad) {
    su_buf_free(&b);
    *err = strerror(e ? e : EIO);
    return NULL;
  }
  su_source *s = su_source_new(a, path, b.data ? b.data : "", b.len);
  su_buf_free(&b);
  return s;
}

const char *su_loc_text(su_arena *a, su_loc loc, size_t max) {
  if (!loc.src || loc.off > loc.src->len) return "";
  size_t n = loc.len;
  if (n > loc.src->len - loc.off) n = loc.src->len - loc.off;
  bool cut = n > max;
  char *s = su_alloc(a, (cut ? max : n) + 4);
  memcpy(s, loc.src->text + loc.off, cut ? max : n);
  strcpy(s + (cut ? max : n), cut ? "..." : "");
  return s;
}

su_loc su_loc_join(su_loc a, su_loc b) {
  if (!a.src) return b;
  if (!b.src || a.src != b.src) return a;
  su_loc r = a.off <= b.off ? a : b;
  uint32_t end = a.off + a.len > b.off + b.len ? a.off + a.len : b.off + b.len;
  r.len = end - r.off;
  return r;
}
