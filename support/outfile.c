/*
 * outfile.c — writing a program's output files the way a C compiler writes -o (see
 * su_write_outputs in support.h).
 *
 * Each output is planned before anything changes on disk: its symbolic links followed to
 * the file they name, its kind decided (a regular or missing file is replaced through a
 * temporary; a device, FIFO or standard output is written in place), its temporary made
 * and filled, its direct file opened. Only then is anything committed: direct outputs
 * are written first (they cannot be undone), then the temporaries are renamed over their
 * targets, an existing target exchanged with its temporary (renameat2 RENAME_EXCHANGE)
 * so that a later failure can put every earlier file back.
 */
#include "support.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool su_write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t r = write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) {
      errno = EIO; /* a write that makes no progress would loop forever */
      return false;
    }
    p += r;
    n -= (size_t)r;
  }
  return true;
}

typedef enum { OUT_STDOUT, OUT_DIRECT, OUT_REPLACE } out_kind;

typedef struct {
  const su_output *o;
  out_kind kind;
  const char *target; /* the path written: o->path with its symbolic links followed */
  char *tmp;          /* OUT_REPLACE: the temporary, later the old file's name */
  int fd;             /* OUT_DIRECT: the open file; OUT_REPLACE: the temporary, until closed */
  bool existed;       /* OUT_REPLACE: target was a regular file (exchanged, not renamed) */
  bool exchanged, renamed;
} plan;

/* Follows path's symbolic links (the last component's, as open(2) would) to the file
 * they end at, which need not exist: writing through a dangling link creates its target,
 * as `cc -o` does. Links relative to their own directory are resolved against it. */
static const char *follow_links(su_arena *a, const char *path) {
  for (int hops = 0; hops < 40; hops++) { /* Linux's own limit (ELOOP) */
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    char to[PATH_MAX];
    ssize_t n = readlink(path, to, sizeof to - 1);
    if (n < 0) return path;
    to[n] = '\0';
    const char *slash = strrchr(path, '/');
    if (to[0] == '/' || !slash)
      path = su_strdup(a, to);
    else
      path = su_fmt(a, "%.*s/%s", (int)(slash - path), path, to);
  }
  return path; /* a loop: open and rename report ELOOP themselves */
}

static bool fail(su_buf *err, const char *path, const char *why) {
  if (!strcmp(path, "-"))
    su_buf_printf(err, "cannot write to standard output: %s", why);
  else
    su_buf_printf(err, "cannot write '%s': %s", path, why);
  return false;
}

/* The permission bits a newly created file gets: 0666 less the umask (which can only be
 * read by setting it, hence the contract's "no other thread creating files"). */
static mode_t new_file_mode(void) {
  mode_t mask = umask(077);
  umask(mask);
  return 0666 & ~mask;
}

/* Is the file at st one of the inputs? */
static const char *same_as_input(const struct stat *st, const char *path,
                                 const char *const *inputs, int ninputs) {
  for (int i = 0; i < ninputs; i++) {
    struct stat in;
    if (!strcmp(inputs[i], path)) return inputs[i];
    if (st && stat(inputs[i], &in) == 0 && in.st_dev == st->st_dev && in.st_ino == st->st_ino)
      return inputs[i];
  }
  return NULL;
}

/* Writes o's bytes to fd and closes it (close reports what a network file system
 * deferred); false with the reason's errno in *e. */
static bool write_close(int fd, const su_output *o, int *e) {
  bool ok = su_write_all(fd, o->data, o->len);
  if (!ok) *e = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    *e = errno;
  }
  return ok;
}

/* Makes p's temporary in the target's directory and writes the whole output to it. */
static bool fill_temporary(su_arena *a, plan *p, mode_t mode, su_buf *err) {
  const char *slash = strrchr(p->target, '/');
  const char *base = slash ? slash + 1 : p->target;
  int dirlen = slash ? (int)(slash - p->target + 1) : 0;
  /* Hidden and bounded, so that a name near NAME_MAX still leaves room for the suffix. */
  p->tmp = su_fmt(a, "%.*s.%.200s.XXXXXX", dirlen, p->target, base);
  p->fd = mkostemp(p->tmp, O_CLOEXEC);
  if (p->fd < 0) {
    p->tmp = NULL;
    return fail(err, p->o->path, strerror(errno));
  }
  int e = fchmod(p->fd, mode) == 0 ? 0 : errno; /* mkstemp made it 0600 */
  bool ok = write_close(p->fd, p->o, &e) && !e;
  p->fd = -1;
  return ok || fail(err, p->o->path, strerror(e));
}

/* Decides how p's output is written and prepares it, changing no existing file. */
static bool prepare(su_arena *a, plan *p, const char *const *inputs, int ninputs, su_buf *err) {
  const char *path = p->o->path;
  if (!strcmp(path, "-")) {
    p->kind = OUT_STDOUT;
    return true;
  }
  p->target = follow_links(a, path);
  struct stat st;
  bool exists = stat(p->target, &st) == 0;
  if (!exists && errno != ENOENT) return fail(err, path, strerror(errno));
  const char *in = same_as_input(exists ? &st : NULL, p->target, inputs, ninputs);
  if (!in) in = same_as_input(NULL, path, inputs, ninputs);
  if (in) return fail(err, path, su_fmt(a, "it is the input file '%s'", in));
  if (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    /* A device, FIFO or socket: write into it, as `cc -o /dev/null` does. No O_CREAT, so
     * what is opened is what was seen (a FIFO blocks here until it has a reader). */
    p->kind = OUT_DIRECT;
    p->fd = open(p->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (p->fd < 0) return fail(err, path, strerror(errno));
    struct stat now;
    if (fstat(p->fd, &now) != 0 || S_ISREG(now.st_mode))
      return fail(err, path, "it became a regular file while being opened");
    return true;
  }
  /* A regular file, a missing one, or a directory (whose rename then fails, EISDIR). */
  p->kind = OUT_REPLACE;
  p->existed = exists && S_ISREG(st.st_mode);
  return fill_temporary(a, p, p->existed ? (st.st_mode & 0777) : new_file_mode(), err);
}

/* Writes p's bytes in place: standard output or the direct file opened by prepare. */
static bool write_direct(plan *p, su_buf *err) {
  if (p->kind == OUT_STDOUT) {
    /* Whatever stdio already holds goes first, so the bytes stay in order. */
    if (fflush(stdout) != 0 || !su_write_all(STDOUT_FILENO, p->o->data, p->o->len))
      return fail(err, "-", strerror(errno));
    return true;
  }
  int e = 0;
  bool ok = write_close(p->fd, p->o, &e);
  p->fd = -1;
  return ok || fail(err, p->o->path, strerror(e));
}

/* Puts p's temporary in place of its target. An existing target is exchanged with it,
 * so the old file lives on under the temporary's name until every output is in. */
static bool commit(plan *p, su_buf *err) {
  if (p->existed && renameat2(AT_FDCWD, p->tmp, AT_FDCWD, p->target, RENAME_EXCHANGE) == 0) {
    p->exchanged = true;
    return true;
  }
  /* No target, or a file system without exchange: a plain rename (not undoable). */
  if (rename(p->tmp, p->target) != 0) return fail(err, p->o->path, strerror(errno));
  p->renamed = true;
  p->tmp = NULL;
  return true;
}

/* Undoes a commit: the old file back under its name, or a new one removed. */
static void undo(plan *p) {
  if (p->exchanged) {
    renameat2(AT_FDCWD, p->tmp, AT_FDCWD, p->target, RENAME_EXCHANGE);
    p->exchanged = false;
  } else if (p->renamed && !p->existed) {
    unlink(p->target);
  }
}

bool su_write_outputs(const su_output *outs, int n, const char *const *inputs, int ninputs,
                      su_buf *err) {
  su_arena *a = su_arena_new();
  plan *ps = SU_NEW_ARRAY(a, plan, n > 0 ? n : 1);
  bool ok = true;
  for (int i = 0; i < n; i++) ps[i] = (plan){.o = &outs[i], .fd = -1};
  for (int i = 0; ok && i < n; i++) ok = prepare(a, &ps[i], inputs, ninputs, err);
  for (int i = 0; ok && i < n; i++)
    if (ps[i].kind != OUT_REPLACE) ok = write_direct(&ps[i], err);
  int done = 0; /* outputs committed */
  while (ok && done < n)
    if (ps[done].kind != OUT_REPLACE || commit(&ps[done], err))
      done++;
    else
      ok = false;
  if (!ok)
    for (int i = 0; i < done; i++) undo(&ps[i]);
  for (int i = 0; i < n; i++) {
    if (ps[i].fd >= 0) close(ps[i].fd);
    /* After a successful exchange the temporary's name holds the old file. */
    if (ps[i].tmp) unlink(ps[i].tmp);
  }
  su_arena_free(a);
  return ok;
}
