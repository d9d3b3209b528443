/* Joining the PTX of kernels compiled apart into one module. Each per-kernel module
 * defines what it needs: its entry, its shared scratch (tk_smem_KERNEL, unique already),
 * the libdevice routines and constant tables the optimizer did not inline or fold, and
 * declares the module's dynamic shared buffer. Renaming the module-local symbols before
 * emission keeps two kernels from defining the same name; the text merge then keeps one
 * header and one copy of each external declaration. */
#include "cg.h"

#include <stdint.h>
#include <string.h>

void cg_ptx_unique_names(LLVMModuleRef mod, const char *kernel) {
  char smem[256];
  snprintf(smem, sizeof smem, "tk_smem_%s", kernel); /* smem.c's per-kernel buffer */
  su_buf name = {0};
  for (int pass = 0; pass < 2; pass++) {
    LLVMValueRef v = pass ? LLVMGetFirstGlobal(mod) : LLVMGetFirstFunction(mod);
    for (; v; v = pass ? LLVMGetNextGlobal(v) : LLVMGetNextFunction(v)) {
      LLVMLinkage l = LLVMGetLinkage(v);
      if (LLVMIsDeclaration(v) || (l != LLVMInternalLinkage && l != LLVMPrivateLinkage))
        continue;
      size_t n;
      const char *old = LLVMGetValueName2(v, &n);
      if (n == 0 || !strcmp(old, smem)) continue;
      name.len = 0;
      su_buf_put(&name, old, n);
      su_buf_printf(&name, "$%s", kernel);
      LLVMSetValueName2(v, name.data, name.len);
    }
  }
  su_buf_free(&name);
}

/* The end of the line starting at p (past its '\n', if any). */
static const char *line_end(const char *p) {
  const char *e = strchr(p, '\n');
  return e ? e + 1 : p + strlen(p);
}

static bool starts_with(const char *p, const char *prefix) {
  return strncmp(p, prefix, strlen(prefix)) == 0;
}

/* The end of the module header (.version, .target, .address_size, and the comment
 * before them) at the start of ptx. */
static const char *header_end(const char *ptx) {
  for (const char *p = ptx; *p; p = line_end(p))
    if (starts_with(p, ".address_size")) return line_end(p);
  su_fatal("PTX without .address_size from the NVPTX back end");
}

/* The end of the statement starting at p, which may span lines (an .extern .func's
 * parameter list): the line holding its ';'. */
static const char *statement_end(const char *p) {
  const char *e = p;
  do {
    const char *next = line_end(e);
    if (memchr(e, ';', (size_t)(next - e))) return next;
    e = next;
  } while (*e);
  return e;
}

/* NVPTX numbers its call sequences ("{ // callseq N, 0" ... "} // callseq N") with a
 * process-wide counter, so the numbers depend on what was compiled before, and on other
 * threads. They are comments only: renumbering them in order of appearance makes the text
 * a function of the IR alone. */
typedef struct {
  su_map *ids; /* "piece:N" -> new number + 1 */
  int next;
} callseqs;

/* key within the line [p, e), or NULL. */
static const char *find_in_line(const char *p, const char *e, const char *key) {
  size_t n = strlen(key);
  for (const char *k = p; (k = memchr(k, key[0], (size_t)(e - k))); k++)
    if ((size_t)(e - k) >= n && !memcmp(k, key, n)) return k;
  return NULL;
}

static void put_line(su_buf *out, const char *p, const char *e, int piece, callseqs *cs) {
  static const char key[] = "// callseq ";
  const char *k = find_in_line(p, e, key);
  if (!k) {
    su_buf_put(out, p, (size_t)(e - p));
    return;
  }
  const char *num = k + sizeof key - 1, *end = num;
  while (end < e && *end >= '0' && *end <= '9') end++;
  char name[48];
  int len = snprintf(name, sizeof name, "%d:%.*s", piece, (int)(end - num), num);
  if (end == num || len >= (int)sizeof name) {
    su_buf_put(out, p, (size_t)(e - p));
    return;
  }
  intptr_t id = (intptr_t)su_map_get(cs->ids, name, (size_t)len);
  if (!id) {
    id = ++cs->next;
    su_map_put(cs->ids, name, (size_t)len, (void *)id);
  }
  su_buf_put(out, p, (size_t)(num - p));
  su_buf_printf(out, "%d", (int)id - 1);
  su_buf_put(out, end, (size_t)(e - end));
}

void cg_ptx_merge(const char *const *ptx, int n, su_buf *out) {
  if (n == 0) return;
  su_arena *a = su_arena_new();
  su_map *declared = su_map_new(a);
  callseqs cs = {su_map_new(a), 0};
  const char *head = header_end(ptx[0]);
  size_t head_len = (size_t)(head - ptx[0]);
  su_buf_put(out, ptx[0], head_len);
  for (int i = 0; i < n; i++) {
    const char *p = header_end(ptx[i]);
    /* One target machine setup made them all: a different header is our bug. */
    SU_ASSERT((size_t)(p - ptx[i]) == head_len && !memcmp(ptx[i], ptx[0], head_len));
    while (*p) {
      if (!starts_with(p, ".extern")) {
        const char *e = line_end(p);
        put_line(out, p, e, i, &cs);
        p = e;
        continue;
      }
      const char *e = statement_end(p);
      size_t len = (size_t)(e - p);
      if (!su_map_get(declared, p, len)) {
        su_map_put(declared, p, len, (void *)p);
        su_buf_put(out, p, len);
      }
      p = e;
    }
  }
  su_arena_free(a);
}
