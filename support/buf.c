/* Growable pointer vectors and text buffers, for builders whose size is not known. */
#include "support.h"

#include <stdlib.h>
#include <string.h>

void su_vec_push(su_vec *v, void *p) {
  if (v->len == v->cap) {
    int cap = v->cap ? v->cap * 2 : 8;
    void **d = realloc(v->data, sizeof(void *) * (size_t)cap);
    if (!d) su_oom(0);
    v->data = d;
    v->cap = cap;
  }
  v->data[v->len++] = p;
}

void su_vec_free(su_vec *v) {
  free(v->data);
  v->data = NULL;
  v->len = v->cap = 0;
}

void **su_vec_freeze(su_arena *a, const su_vec *v) {
  return su_memdup(a, v->data, sizeof(void *) * (size_t)v->len);
}

static void reserve(su_buf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *d = realloc(b->data, cap);
  if (!d) su_oom(0);
  b->data = d;
  b->cap = cap;
}

void su_buf_put(su_buf *b, const char *s, size_t n) {
  reserve(b, n);
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void su_buf_puts(su_buf *b, const char *s) { su_buf_put(b, s, strlen(s)); }

void su_buf_vprintf(su_buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  /* Checking fmt first also stops GCC (with sanitizers) from warning that it may be NULL. */
  if (!fmt) su_fatal("NULL format string");
  int n = vsnprintf(NULL, 0, fmt, ap);
  if (n < 0) su_fatal("bad format string '%s'", fmt);
  reserve(b, (size_t)n);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  b->len += (size_t)n;
}

void su_buf_printf(su_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  su_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

const char *su_buf_str(su_buf *b) {
  reserve(b, 0);
  b->data[b->len] = 0;
  return b->data;
}

void su_buf_free(su_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}
