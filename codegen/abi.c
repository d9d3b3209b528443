/* The launch contract beyond a kernel's parameters (codegen.h): derived once from the
 * lowered IR, emitted as the kernel's hidden arguments and written after the PTX as
 * comment lines that the runtime (and --emit=c) read back, so that a launcher needs
 * nothing but the PTX:
 *
 *   // .tk.abi KERNEL threads=384 persistent=1 tmaps=2 [scratch=BYTES] [workspace=BYTES] [pdl] [cluster=C]
 *
 * (persistent=N: N programs per SM, 0: not persistent; scratch, workspace: bytes per
 * program of the two global buffers, see codegen.h; pdl: launch it with
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, it waits for its predecessor;
 * cluster=C: each program is a cluster of C CTAs along x, so the launch's grid x is C
 * times the programs', the PTX requires the cluster)
 *   // .tk.tmap KERNEL 0 f16 base=%0 dims=%3,%5 strides=%5 box=128,64 swizzle=128
 *
 * (%N: parameter N's value; a number: that constant). */
#include "cg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cg_abi_arg arg_of(const ir_func *f, const ir_value *v) {
  for (int i = 0; i < f->body->nargs; i++)
    if (f->body->args[i] == v) return (cg_abi_arg){i, 0};
  SU_ASSERT(v->def && v->def->opc == IR_CONST); /* the verifier's rule */
  return (cg_abi_arg){-1, v->def->cval.i};
}

/* The bytes per program of the kernel's scratch and workspace ops: one size of each a
 * kernel (the verifier's rule). */
static void find_buffers(ir_op *op, void *ctx) {
  cg_abi *abi = ctx;
  if (op->opc == IR_SCRATCH) abi->scratch = op->attr2;
  if (op->opc == IR_WORKSPACE) abi->workspace = op->attr2;
}

int cg_abi_hidden(const cg_abi *abi) {
  return abi->ntmaps + (abi->persistent ? 3 : 0) + (abi->scratch ? 1 : 0) + (abi->workspace ? 1 : 0);
}

void cg_abi_of(const ir_func *f, const char *arch, cg_abi *out) {
  memset(out, 0, sizeof *out);
  ir_walk(f->body, find_buffers, out);
  int producers = 0;
  for (const ir_op *op = f->body->first; op; op = op->next) {
    if (op->opc == IR_WARP_SPEC) {
      out->warp_spec = true;
      producers = (int)op->attr;
    }
    if (op->opc != IR_TENSOR_MAP) continue;
    SU_ASSERT(out->ntmaps < CG_MAX_TMAPS);
    cg_tmap *t = &out->tmaps[out->ntmaps++];
    t->rank = op->nints;
    t->dtype = op->operands[0]->type->elem->dtype;
    t->base = arg_of(f, op->operands[0]).param;
    for (int i = 0; i < t->rank; i++) {
      t->dims[i] = arg_of(f, op->operands[1 + i]);
      t->box[i] = op->ints[i];
    }
    for (int i = 0; i + 1 < t->rank; i++) t->strides[i] = arg_of(f, op->operands[1 + t->rank + i]);
    t->swizzle = (int)op->attr;
  }
  out->threads = CG_WARP * (f->num_warps + producers);
  out->persistent = !f->persistent ? 0 : f->programs_per_sm > 1 ? f->programs_per_sm : 1;
  /* without griddepcontrol there is no wait to rely on: an ordinary launch */
  out->pdl = f->pdl && tg_has(arch, TG_GRIDDEP);
  out->cluster = f->cluster;
}

static void put_arg(su_buf *b, cg_abi_arg a) {
  if (a.param >= 0)
    su_buf_printf(b, "%%%d", a.param);
  else
    su_buf_printf(b, "%lld", (long long)a.value);
}

void cg_abi_note(cg_ctx *c, const ir_func *f, const cg_abi *abi) {
  su_buf *b = &c->shared_note;
  su_buf_printf(b, "// .tk.abi %s threads=%d persistent=%d tmaps=%d", f->name, abi->threads,
                abi->persistent, abi->ntmaps);
  if (abi->scratch) su_buf_printf(b, " scratch=%lld", (long long)abi->scratch);
  if (abi->workspace) su_buf_printf(b, " workspace=%lld", (long long)abi->workspace);
  if (abi->pdl) su_buf_puts(b, " pdl");
  if (abi->cluster) su_buf_printf(b, " cluster=%d", abi->cluster);
  su_buf_puts(b, "\n");
  for (int i = 0; i < abi->ntmaps; i++) {
    const cg_tmap *t = &abi->tmaps[i];
    su_buf_printf(b, "// .tk.tmap %s %d %s base=%%%d dims=", f->name, i, ir_dtype_name(t->dtype), t->base);
    for (int d = 0; d < t->rank; d++) {
      if (d) su_buf_puts(b, ",");
      put_arg(b, t->dims[d]);
    }
    su_buf_puts(b, " strides=");
    for (int d = 0; d + 1 < t->rank; d++) {
      if (d) su_buf_puts(b, ",");
      put_arg(b, t->strides[d]);
    }
    su_buf_puts(b, " box=");
    for (int d = 0; d < t->rank; d++) su_buf_printf(b, "%s%d", d ? "," : "", t->box[d]);
    su_buf_printf(b, " swizzle=%d\n", t->swizzle);
  }
}

void cg_emit_abi_value(cg_ctx *c, const ir_op *op) {
  LLVMValueRef *s = cg_slots(c, 1);
  if (op->opc == IR_TENSOR_MAP) {
    /* the maps are the hidden arguments right after the parameters, in IR order */
    s[0] = LLVMGetParam(c->fn, (unsigned)(c->f->body->nargs + c->tmaps_seen++));
  } else if (op->opc == IR_SCRATCH) {
    SU_ASSERT(c->scratch);
    LLVMValueRef off = LLVMConstInt(LLVMInt64TypeInContext(c->llc), (unsigned long long)op->attr, false);
    s[0] = LLVMBuildGEP2(c->b, LLVMInt8TypeInContext(c->llc), c->scratch, &off, 1, "scratch");
  } else if (op->opc == IR_WORKSPACE) {
    SU_ASSERT(c->workspace);
    s[0] = c->workspace; /* the base: each program finds its part itself */
  } else {
    SU_ASSERT(c->f->persistent);
    s[0] = c->grid[op->attr];
  }
  cg_set(c, op->results[0], s, 1);
}

/* ---- reading the notes back ---- */

/* The text after "// .tk.KEY KERNEL " on the line where it stands (NULL: none), from
 * `from` on. */
static const char *find_line(const char *from, const char *key, const char *kernel) {
  size_t n = strlen(kernel), k = strlen(key);
  for (const char *p = strstr(from, key); p; p = strstr(p + 1, key)) {
    const char *name = p + k;
    if (strncmp(name, kernel, n) == 0 && name[n] == ' ') return name + n + 1;
  }
  return NULL;
}

static bool read_int(const char **s, long long *v) {
  char *end;
  *v = strtoll(*s, &end, 10);
  if (end == *s) return false;
  *s = end;
  return true;
}

static bool read_key(const char **s, const char *key) {
  size_t k = strlen(key);
  while (**s == ' ') (*s)++;
  if (strncmp(*s, key, k)) return false;
  *s += k;
  return true;
}

static bool read_arg(const char **s, cg_abi_arg *a) {
  long long v;
  bool param = **s == '%';
  if (param) (*s)++;
  if (!read_int(s, &v)) return false;
  *a = param ? (cg_abi_arg){(int)v, 0} : (cg_abi_arg){-1, v};
  return !param || (v >= 0 && v < 1 << 20);
}

static bool read_tmap(const char *s, int i, cg_tmap *t) {
  long long v;
  if (!read_int(&s, &v) || v != i) return false;
  while (*s == ' ') s++;
  const char *dt = s;
  while (*s && *s != ' ') s++;
  if (!ir_dtype_parse(dt, (size_t)(s - dt), &t->dtype)) return false;
  if (!read_key(&s, "base=%") || !read_int(&s, &v)) return false;
  t->base = (int)v;
  if (!read_key(&s, "dims=")) return false;
  t->rank = 0;
  do {
    if (t->rank == IR_MAX_RANK || !read_arg(&s, &t->dims[t->rank++])) return false;
  } while (*s == ',' && s++);
  if (!read_key(&s, "strides=")) return false;
  for (int d = 0; d + 1 < t->rank; d++)
    if ((d && *s++ != ',') || !read_arg(&s, &t->strides[d])) return false;
  if (!read_key(&s, "box=")) return false;
  for (int d = 0; d < t->rank; d++) {
    if ((d && *s++ != ',') || !read_int(&s, &v) || v < 1 || v > 256) return false;
    t->box[d] = (int)v;
  }
  if (!read_key(&s, "swizzle=") || !read_int(&s, &v)) return false;
  t->swizzle = (int)v;
  return true;
}

/* The optional " KEY=BYTES" word of the line from *s to eol (NULL: the text's end) into
 * *bytes (0 when absent), *s moved past it: false when present but not a positive
 * multiple of 16 up to 2^36 (the verifier's bound). */
static bool read_bytes(const char **s, const char *eol, const char *key, int64_t *bytes) {
  char word[32];
  snprintf(word, sizeof word, " %s", key);
  const char *at = strstr(*s, word);
  long long v = 0;
  *bytes = 0;
  if (!at || (eol && at > eol)) return true;
  *s = at;
  if (!read_key(s, key) || !read_int(s, &v) || v < 16 || v % 16 || v > ((long long)1 << 36)) return false;
  *bytes = v;
  return true;
}

bool cg_ptx_abi(const char *ptx, const char *kernel, cg_abi *out) {
  memset(out, 0, sizeof *out);
  const char *s = find_line(ptx, "// .tk.abi ", kernel);
  if (!s) return true;
  long long threads, persistent, ntmaps;
  if (!read_key(&s, "threads=") || !read_int(&s, &threads) || !read_key(&s, "persistent=") ||
      !read_int(&s, &persistent) || !read_key(&s, "tmaps=") || !read_int(&s, &ntmaps) ||
      threads < 1 || threads > 1024 || persistent < 0 || persistent > 64 || ntmaps < 0 ||
      ntmaps > CG_MAX_TMAPS)
    return false;
  out->threads = (int)threads;
  out->persistent = (int)persistent;
  out->ntmaps = (int)ntmaps;
  const char *eol = strchr(s, '\n');
  if (!read_bytes(&s, eol, "scratch=", &out->scratch) || !read_bytes(&s, eol, "workspace=", &out->workspace))
    return false;
  const char *pd = strstr(s, " pdl");
  out->pdl = pd && (!eol || pd < eol) && (pd[4] == '\n' || pd[4] == ' ' || !pd[4]);
  const char *cl = strstr(s, " cluster=");
  if (cl && (!eol || cl < eol)) {
    long long n;
    s = cl;
    if (!read_key(&s, "cluster=") || !read_int(&s, &n) || !ir_cluster_size_ok(n)) return false;
    out->cluster = (int)n;
  }
  const char *from = ptx;
  for (int i = 0; i < out->ntmaps; i++) {
    const char *t = find_line(from, "// .tk.tmap ", kernel);
    if (!t || !read_tmap(t, i, &out->tmaps[i])) return false;
    from = t;
  }
  return true;
}
