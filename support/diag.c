/* Diagnostics in the style of a good C compiler: a located headline, the source line, a
 * caret (and a range underline), notes after their error. */
#include "support.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_SHOWN = 160 }; /* columns of a source line shown around the caret */

void su_diags_init(su_diags *d, su_arena *a, FILE *out) {
  memset(d, 0, sizeof *d);
  d->arena = a;
  d->out = out;
  d->color = out && isatty(fileno(out)) && !getenv("NO_COLOR");
}

static const char *sev_name(su_severity s) {
  return s == SU_ERROR ? "error" : s == SU_WARNING ? "warning" : s == SU_REMARK ? "remark" : "note";
}

static const char *sev_color(su_severity s) {
  return s == SU_ERROR ? "\033[1;31m" : s == SU_WARNING ? "\033[1;35m" : s == SU_REMARK ? "\033[1;32m" : "\033[1;36m";
}

/* Appends one diagnostic: headline, source line, caret line. */
static void render_one(su_buf *b, const su_diag *g, bool color) {
  const su_loc *l = &g->loc;
  if (color) su_buf_puts(b, "\033[1m");
  if (l->src)
    su_buf_printf(b, "%s:%u:%u: ", l->src->name, l->line, l->col);
  else
    su_buf_puts(b, "tk: ");
  if (color) su_buf_puts(b, sev_color(g->sev));
  su_buf_printf(b, "%s: ", sev_name(g->sev));
  if (color) su_buf_puts(b, "\033[0;1m");
  su_buf_printf(b, "%s\n", g->msg);
  if (color) su_buf_puts(b, "\033[0m");
  if (!l->src || l->off > l->src->len) return;

  const char *text = l->src->text;
  size_t start = l->off, end = l->off;
  while (start > 0 && text[start - 1] != '\n') start--;
  while (end < l->src->len && text[end] != '\n') end++;
  /* Very long lines (a megabyte identifier) are shown as a window around the caret. */
  size_t caret = l->off - start;
  size_t from = caret > MAX_SHOWN / 2 ? caret - MAX_SHOWN / 2 : 0;
  size_t to = end - start;
  if (to - from > MAX_SHOWN) to = from + MAX_SHOWN;
  char num[32];
  int w = snprintf(num, sizeof num, "%u", l->line);
  su_buf_printf(b, " %s | %s", num, from ? "..." : "");
  for (size_t i = from; i < to; i++) {
    unsigned char c = (unsigned char)text[start + i];
    char out = (c == '\t' || (c >= 32 && c < 127)) ? (char)c : '?';
    su_buf_put(b, &out, 1);
  }
  su_buf_puts(b, to < end - start ? "...\n" : "\n");
  su_buf_printf(b, " %*s | %s", w, "", from ? "   " : "");
  for (size_t i = from; i < caret; i++) su_buf_put(b, text[start + i] == '\t' ? "\t" : " ", 1);
  if (color) su_buf_puts(b, "\033[1;32m");
  su_buf_puts(b, "^");
  size_t len = l->len;
  for (size_t i = 1; i < len && caret + i < to; i++) su_buf_puts(b, "~");
  if (color) su_buf_puts(b, "\033[0m");
  su_buf_puts(b, "\n");
}

static void add(su_diags *d, su_severity sev, su_loc loc, const char *fmt, va_list ap) {
  if (sev == SU_ERROR) {
    d->nerrors++;
    if (d->max_errors && d->nerrors > d->max_errors) return;
  }
  su_buf m = {0};
  su_buf_vprintf(&m, fmt, ap);
  su_diag *g = SU_NEW(d->arena, su_diag);
  g->sev = sev;
  g->loc = loc;
  g->msg = su_strdup(d->arena, su_buf_str(&m));
  su_buf_free(&m);
  if (d->last)
    d->last->next = g;
  else
    d->first = g;
  d->last = g;
  if (d->out) {
    su_buf b = {0};
    render_one(&b, g, d->color);
    fputs(su_buf_str(&b), d->out);
    su_buf_free(&b);
  }
}

void su_verror(su_diags *d, su_loc loc, const char *fmt, va_list ap) { add(d, SU_ERROR, loc, fmt, ap); }

void su_error(su_diags *d, su_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add(d, SU_ERROR, loc, fmt, ap);
  va_end(ap);
}

void su_warning(su_diags *d, su_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add(d, SU_WARNING, loc, fmt, ap);
  va_end(ap);
}

void su_remark(su_diags *d, su_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add(d, SU_REMARK, loc, fmt, ap);
  va_end(ap);
}

void su_note(su_diags *d, su_loc loc, const char *fmt, ...) {
  if (d->max_errors && d->nerrors > d->max_errors) return;
  va_list ap;
  va_start(ap, fmt);
  add(d, SU_NOTE, loc, fmt, ap);
  va_end(ap);
}

void su_diags_render(const su_diags *d, su_buf *b) {
  for (const su_diag *g = d->first; g; g = g->next) render_one(b, g, false);
}
