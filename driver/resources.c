/* What a kernel's PTX costs the GPU (docs/language.md, "Resources"): ptxas -v's registers,
 * spills, stack and static shared memory, the dynamic shared memory and threads codegen
 * recorded beside the PTX (.tk.shared, .tk.abi), and the occupancy they allow on the
 * target's SM (target/targets.def). ptxas is run as a child process on a temporary file;
 * without it there is nothing to report here (the runtime asks the driver instead). */
#include "driver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../target/target.h"

const char *drv_ptxas_path(void) {
  static char path[1024];
  const char *env = getenv("TK_PTXAS");
  if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
  const char *home = getenv("CUDA_HOME");
  snprintf(path, sizeof path, "%s/bin/ptxas", home && *home ? home : "/usr/local/cuda");
  return access(path, X_OK) == 0 ? path : NULL;
}

/* Runs ptxas -v -arch=arch on the file at in; its output (both streams) into out. */
static bool run_ptxas(const char *ptxas, const char *arch, const char *in, su_buf *out, su_buf *why) {
  int fd[2];
  if (pipe(fd) != 0) {
    su_buf_printf(why, "pipe: %s", strerror(errno));
    return false;
  }
  char archarg[64];
  snprintf(archarg, sizeof archarg, "-arch=%s", arch);
  pid_t pid = fork();
  if (pid < 0) {
    su_buf_printf(why, "fork: %s", strerror(errno));
    close(fd[0]), close(fd[1]);
    return false;
  }
  if (pid == 0) {
    dup2(fd[1], 1);
    dup2(fd[1], 2);
    close(fd[0]), close(fd[1]);
    execl(ptxas, ptxas, "-v", archarg, in, "-o", "/dev/null", (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  char chunk[4096];
  ssize_t n;
  while ((n = read(fd[0], chunk, sizeof chunk)) > 0) su_buf_put(out, chunk, (size_t)n);
  close(fd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    su_buf_printf(why, "%s failed:\n%s", ptxas, su_buf_str(out));
    return false;
  }
  return true;
}

/* The number after `key` on the line of text at p (up to its end), or -1. */
static int number_before(const char *line, const char *end, const char *key) {
  size_t k = strlen(key);
  for (const char *p = line; p + k <= end; p++)
    if (!memcmp(p, key, k)) {
      const char *q = p;
      while (q > line && q[-1] == ' ') q--;
      while (q > line && q[-1] >= '0' && q[-1] <= '9') q--;
      return atoi(q);
    }
  return -1;
}

/* The integer after "KEY NAME " on a `// .tk.KEY NAME ...` line, for kernel name. */
static int tk_note(const char *ptx, const char *key, const char *name, const char *field) {
  char head[256];
  snprintf(head, sizeof head, "// .tk.%s %s ", key, name);
  const char *p = strstr(ptx, head);
  if (!p) return -1;
  p += strlen(head);
  if (!field) return atoi(p);
  const char *eol = strchr(p, '\n'), *f = strstr(p, field);
  return f && (!eol || f < eol) ? atoi(f + strlen(field)) : -1;
}

void drv_occupancy(const char *arch, drv_resources *r) {
  const tg_arch *t = tg_find(arch);
  r->blocks_sm = 0;
  r->occupancy = 0;
  r->limiter = "";
  if (!t || r->threads <= 0) return;
  int warps = (r->threads + 31) / 32;
  /* registers are given per warp in units of 256; shared memory in units of 128 bytes,
   * plus the 1 KB the system keeps per block (CUDA's occupancy calculator) */
  int regs_warp = (r->regs * 32 + 255) / 256 * 256;
  int by_regs = regs_warp ? t->regs_sm / (regs_warp * warps) : t->blocks_sm;
  int smem = r->smem_static + r->smem_dynamic;
  int by_smem = smem ? t->smem_sm / ((smem + 127) / 128 * 128 + 1024) : t->blocks_sm;
  int by_threads = t->threads_sm / (warps * 32);
  int b = t->blocks_sm;
  r->limiter = "blocks per SM";
  if (by_threads < b) b = by_threads, r->limiter = "threads";
  if (by_regs < b) b = by_regs, r->limiter = "registers";
  if (by_smem < b) b = by_smem, r->limiter = "shared memory";
  r->blocks_sm = b;
  r->occupancy = (double)(b * warps) / (t->threads_sm / 32);
}

bool drv_ptxas_resources(su_arena *a, const char *ptx, const char *arch, drv_resources **out, int *n,
                         su_buf *why) {
  *out = NULL;
  *n = 0;
  const char *ptxas = drv_ptxas_path();
  if (!ptxas) {
    su_buf_puts(why, "no ptxas (set TK_PTXAS or CUDA_HOME)");
    return false;
  }
  char in[] = "/tmp/tk-resources-XXXXXX";
  int fd = mkstemp(in);
  if (fd < 0) {
    su_buf_printf(why, "a temporary file: %s", strerror(errno));
    return false;
  }
  size_t len = strlen(ptx), done = 0;
  while (done < len) {
    ssize_t w = write(fd, ptx + done, len - done);
    if (w <= 0) break;
    done += (size_t)w;
  }
  close(fd);
  su_buf text = {0};
  bool ok = done == len && run_ptxas(ptxas, arch, in, &text, why);
  unlink(in);
  if (!ok) {
    su_buf_free(&text);
    return false;
  }
  int cap = 0;
  static const char entry[] = "Compiling entry function '";
  for (const char *p = strstr(su_buf_str(&text), entry); p; p = strstr(p + 1, entry)) {
    const char *name = p + sizeof entry - 1, *q = strchr(name, '\'');
    if (!q) break;
    if (*n == cap) {
      cap = cap ? 2 * cap : 8;
      drv_resources *grown = SU_NEW_ARRAY(a, drv_resources, cap);
      if (*n) memcpy(grown, *out, sizeof **out * (size_t)*n);
      *out = grown;
    }
    drv_resources *r = &(*out)[(*n)++];
    memset(r, 0, sizeof *r);
    r->kernel = su_strndup(a, name, (size_t)(q - name));
    /* the entry's lines, up to the next entry */
    const char *end = strstr(q, entry);
    if (!end) end = q + strlen(q);
    for (const char *line = q; line < end;) {
      const char *eol = memchr(line, '\n', (size_t)(end - line));
      if (!eol) eol = end;
      int v;
      if ((v = number_before(line, eol, "bytes stack frame")) >= 0) r->stack = v;
      if ((v = number_before(line, eol, "bytes spill stores")) >= 0) r->spill_stores = v;
      if ((v = number_before(line, eol, "bytes spill loads")) >= 0) r->spill_loads = v;
      if ((v = number_before(line, eol, "registers")) >= 0) r->regs = v;
      if ((v = number_before(line, eol, "bytes smem")) >= 0) r->smem_static = v;
      line = eol + 1;
    }
    int dyn = tk_note(ptx, "shared", r->kernel, NULL), thr = tk_note(ptx, "abi", r->kernel, "threads=");
    r->smem_dynamic = dyn > 0 ? dyn : 0;
    r->threads = thr > 0 ? thr : 0;
    drv_occupancy(arch, r);
  }
  su_buf_free(&text);
  return true;
}
