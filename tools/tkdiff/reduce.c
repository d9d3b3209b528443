/* tkdiff --reduce: greedy minimization of a failing kernel's source (tkdiff.h,
 * td_reduce). The generator writes one statement per line inside the kernel's braces, so
 * the reductions work on lines and on parenthesized groups of one line:
 *  1. delete a body line, or a whole block (a line ending in '{' through the line that
 *     closes it), last line first: dead values and unrelated outputs go first;
 *  2. in a line, replace a call by one of its positional arguments, drop a call's last
 *     argument (a load's `other`, then its mask), or replace a parenthesized expression
 *     by one of its operands (`(a + b)` by `a` or `b`, `(x as i8)` by `x`, `(-x)` by `x`).
 * A candidate is kept when the predicate still holds for it: one that no longer
 * compiles, faults, or fails differently is just not taken, so no reduction needs to
 * know the language's rules. Passes repeat until nothing changes or the run budget is
 * spent. */
#include "tkdiff.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char **line;
  int n;
} lines;

static char *dup_range(const char *s, size_t n) {
  char *r = malloc(n + 1);
  if (!r) abort();
  memcpy(r, s, n);
  r[n] = 0;
  return r;
}

static lines split(const char *src) {
  lines l = {0};
  int cap = 0;
  for (const char *p = src; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (l.n == cap) {
      cap = cap ? 2 * cap : 64;
      l.line = realloc(l.line, (size_t)cap * sizeof *l.line);
      if (!l.line) abort();
    }
    l.line[l.n++] = dup_range(p, n);
    p += n + (e != NULL);
  }
  return l;
}

static void free_lines(lines *l) {
  for (int i = 0; i < l->n; i++) free(l->line[i]);
  free(l->line);
  l->line = NULL;
  l->n = 0;
}

/* The source of l without lines [skip0, skip1), line `at` replaced by `repl` (at < 0:
 * none). */
static char *join(const lines *l, int skip0, int skip1, int at, const char *repl) {
  su_buf b = {0};
  for (int i = 0; i < l->n; i++) {
    if (i >= skip0 && i < skip1) continue;
    su_buf_puts(&b, i == at ? repl : l->line[i]);
    su_buf_puts(&b, "\n");
  }
  char *r = dup_range(su_buf_str(&b), b.len);
  su_buf_free(&b);
  return r;
}

/* A line of the kernel's body: indented, and not the line that closes a block. */
static bool body_line(const char *s) {
  if (strncmp(s, "    ", 4) != 0) return false;
  while (*s == ' ') s++;
  return *s && *s != '}';
}

/* One past the last line of the statement that starts at line i: the line itself, or
 * for a line opening a block, through the line where the braces balance again. */
static int statement_end(const lines *l, int i) {
  int depth = 0;
  for (int j = i; j < l->n; j++) {
    for (const char *p = l->line[j]; *p; p++) depth += (*p == '{') - (*p == '}');
    if (depth <= 0) return j + 1;
  }
  return l->n;
}

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The index of the parenthesis that closes the one at s[open], or -1. */
static int closing(const char *s, int open) {
  int depth = 0;
  for (int i = open; s[i]; i++) {
    if (s[i] == '(' || s[i] == '[') depth++;
    else if (s[i] == ')' || s[i] == ']') {
      if (--depth == 0) return s[i] == ')' ? i : -1;
    }
  }
  return -1;
}

/* The builtins whose argument alone would be no simpler kernel (a pointer, a shape). */
static bool keep_call(const char *name, size_t n) {
  static const char *K[] = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_and",
                            "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas", "arange",
                            "program_id", "num_programs", "zeros", "full", "range", "static_range"};
  for (size_t i = 0; i < sizeof K / sizeof K[0]; i++)
    if (strlen(K[i]) == n && !strncmp(K[i], name, n)) return true;
  return false;
}

typedef struct {
  char **text;
  int n, cap;
} cands;

static void add(cands *c, const char *line, int from, int to, const char *with, size_t wn) {
  su_buf b = {0};
  su_buf_put(&b, line, (size_t)from);
  su_buf_put(&b, with, wn);
  su_buf_puts(&b, line + to);
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 16;
    c->text = realloc(c->text, (size_t)c->cap * sizeof *c->text);
    if (!c->text) abort();
  }
  c->text[c->n++] = dup_range(su_buf_str(&b), b.len);
  su_buf_free(&b);
}

static void trim(const char *s, int *a, int *b) {
  while (*a < *b && s[*a] == ' ') (*a)++;
  while (*b > *a && s[*b - 1] == ' ') (*b)--;
}

/* The length of the binary operator at s (top level, after an operand), or 0. */
static int binop_at(const char *s) {
  static const char *OPS[] = {"<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "**", "+", "-",
                              "*", "/", "%", "&", "|", "^", "<", ">"};
  for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
    if (!strncmp(s, OPS[i], strlen(OPS[i]))) return (int)strlen(OPS[i]);
  if (!strncmp(s, " as ", 4)) return 4;
  return 0;
}

/* Candidates from the group whose parentheses are line[open] and line[close]. */
static void group_candidates(const char *line, int open, int close, cands *c) {
  int name = open;
  while (name > 0 && ident_char(line[name - 1])) name--;
  bool call = name < open;
  int depth = 0, start = open + 1, nargs = 0, last_comma = -1;
  if (call) {
    bool keep = keep_call(line + name, (size_t)(open - name));
    for (int i = open + 1; i <= close; i++) {
      char ch = line[i];
      if (ch == '(' || ch == '[') depth++;
      else if ((ch == ')' || ch == ']') && depth > 0) depth--;
      else if (depth == 0 && (ch == ',' || i == close)) {
        int a = start, b = i;
        trim(line, &a, &b);
        bool named = false;
        for (int k = a; k < b; k++)
          if (line[k] == '=' && line[k + 1] != '=' && (k == a || !strchr("=!<>", line[k - 1]))) named = true;
        if (!keep && !named && b > a) add(c, line, name, close + 1, line + a, (size_t)(b - a));
        nargs += b > a;
        if (ch == ',') last_comma = i;
        start = i + 1;
      }
    }
    if (nargs >= 2 && last_comma > 0) add(c, line, last_comma, close, "", 0);
    return;
  }
  /* operands at the top level of the group; a type after 'as' is none */
  bool after_as = false, operand = false;
  for (int i = open + 1; i <= close; i++) {
    char ch = line[i];
    int op = 0;
    if (ch == '(' || ch == '[') depth++;
    else if ((ch == ')' || ch == ']') && depth > 0) depth--;
    else if (depth == 0 && i < close && operand && (op = binop_at(line + i)) > 0) {}
    if (depth == 0 && (op > 0 || i == close)) {
      int a = start, b = i;
      trim(line, &a, &b);
      if (!after_as && b > a && !(a == open + 1 && i == close)) add(c, line, open, close + 1, line + a, (size_t)(b - a));
      if (!after_as && b > a + 1 && strchr("-!~", line[a])) add(c, line, open, close + 1, line + a + 1, (size_t)(b - a - 1));
      after_as = op == 4;
      start = i + op;
      operand = false;
      i += op > 0 ? op - 1 : 0;
      continue;
    }
    if (ch != ' ') operand = ident_char(ch) || ch == ')' || ch == ']' || ch == '.';
  }
}

char *td_reduce(const char *src, td_reduce_pred pred, void *ctx, int budget, int *runs) {
  char *best = dup_range(src, strlen(src));
  *runs = 0;
  bool changed = true;
  while (changed && *runs < budget) {
    changed = false;
    /* 1. statements, last first */
    lines l = split(best);
    for (int i = l.n - 1; i >= 0 && *runs < budget; i--) {
      if (!body_line(l.line[i])) continue;
      char *cand = join(&l, i, statement_end(&l, i), -1, NULL);
      (*runs)++;
      if (pred(ctx, cand)) {
        free(best);
        best = cand;
        free_lines(&l);
        l = split(best);
        changed = true;
        if (i > l.n) i = l.n;
      } else {
        free(cand);
      }
    }
    /* 2. expressions, line by line, a line again after each change */
    for (int i = 0; i < l.n && *runs < budget; i++) {
      if (!body_line(l.line[i])) continue;
      bool again = true;
      while (again && *runs < budget) {
        again = false;
        cands c = {0};
        const char *s = l.line[i];
        for (int p = 0; s[p]; p++) {
          if (s[p] != '(') continue;
          int q = closing(s, p);
          if (q > p) group_candidates(s, p, q, &c);
        }
        for (int k = 0; k < c.n && !again && *runs < budget; k++) {
          char *cand = join(&l, 0, 0, i, c.text[k]);
          (*runs)++;
          if (pred(ctx, cand)) {
            free(best);
            best = cand;
            free(l.line[i]);
            l.line[i] = dup_range(c.text[k], strlen(c.text[k]));
            again = changed = true;
          } else {
            free(cand);
          }
        }
        for (int k = 0; k < c.n; k++) free(c.text[k]);
        free(c.text);
      }
    }
    free_lines(&l);
  }
  return best;
}

const char *td_failure_key(const char *detail, su_buf *key) {
  /* the first "WHAT: N of M elements of BUF (T) differ" line, counts left out */
  key->len = 0;
  const char *p = strstr(detail, " elements of ");
  if (!p) return su_buf_str(key);
  const char *line = p;
  while (line > detail && line[-1] != '\n') line--;
  const char *colon = strstr(line, ": ");
  const char *end = strstr(p, ") differ");
  if (!colon || colon > p || !end) return su_buf_str(key);
  su_buf_put(key, line, (size_t)(colon - line));
  su_buf_puts(key, ": ");
  su_buf_put(key, p + 1, (size_t)(end + 1 - (p + 1)));
  return su_buf_str(key);
}
