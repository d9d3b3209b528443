/* --emit=c: a header and a C file a host program compiles in to launch the kernels with
 * the CUDA driver API alone. The PTX is embedded as a byte array (no string-length limits
 * under -pedantic); each kernel gets a launcher typed after its signature. */
#include "cg.h"

#include <ctype.h>
#include <string.h>

/* Names a parameter may not take in the launcher: C's keywords and the launcher's own. */
static const char *const RESERVED[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "typedef", "union", "unsigned", "void", "volatile", "while", "bool", "true", "false",
    "gx", "gy", "gz", "stream", "args", "NULL", "key"};

static bool reserved(const char *s) {
  for (size_t i = 0; i < sizeof RESERVED / sizeof *RESERVED; i++)
    if (!strcmp(s, RESERVED[i])) return true;
  return !strncmp(s, "tk_", 3) || !strncmp(s, "_", 1);
}

/* The C type of a parameter (16-bit floats travel as their bit patterns). */
static const char *c_type(const ir_sig_param *p) {
  switch (p->type) {
  case TK_PTR: return "CUdeviceptr";
  case TK_I1: return "bool";
  case TK_I8: return "int8_t";
  case TK_I16: return "int16_t";
  case TK_I32: return "int32_t";
  case TK_I64: return "int64_t";
  case TK_U8: case TK_F8E4M3: case TK_F8E5M2: return "uint8_t";
  case TK_U16: case TK_F16: case TK_BF16: return "uint16_t";
  case TK_U32: return "uint32_t";
  case TK_U64: return "uint64_t";
  case TK_F32: return "float";
  case TK_F64: return "double";
  default: return NULL;
  }
}

/* The launcher's parameter names: the .tk names, with '_' appended until they neither
 * clash with C nor with each other. */
static const char **param_names(su_arena *a, const ir_signature *f) {
  int n = f->nparams;
  const char **names = SU_NEW_ARRAY(a, const char *, n ? n : 1);
  for (int i = 0; i < n; i++) {
    const char *s = *f->params[i].name ? f->params[i].name : su_fmt(a, "p%d", i);
    for (;;) {
      bool clash = reserved(s);
      for (int k = 0; k < i && !clash; k++) clash = !strcmp(s, names[k]);
      if (!clash) break;
      s = su_fmt(a, "%s_", s);
    }
    names[i] = s;
  }
  return names;
}

/* The prefix: basename's last path component as a C identifier. */
static const char *prefix_of(su_arena *a, const char *file) {
  char *s = su_strdup(a, file);
  for (char *p = s; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_') *p = '_';
  return isdigit((unsigned char)s[0]) ? su_fmt(a, "_%s", s) : s;
}

/* storage: "" for the API, "static " for a tuned variant's own launchers. */
static void signature_as(su_buf *b, const char *storage, const char *pre, const ir_signature *f,
                         const char **names) {
  su_buf_printf(b, "%sCUresult %s_%s(unsigned gx, unsigned gy, unsigned gz, CUstream stream",
                storage, pre, f->name);
  for (int i = 0; i < f->nparams; i++)
    su_buf_printf(b, ",\n    %s %s", c_type(&f->params[i]), names[i]);
  su_buf_puts(b, ")");
}

static void signature(su_buf *b, const char *pre, const ir_signature *f, const char **names) {
  signature_as(b, "", pre, f, names);
}

/* The C expression for a tensor map's dim or stride: a parameter or a constant. */
static void put_abi_arg(su_buf *o, cg_abi_arg a, const char **names) {
  if (a.param >= 0)
    su_buf_printf(o, "(cuuint64_t)%s", names[a.param]);
  else
    su_buf_printf(o, "(cuuint64_t)%lldull", (long long)a.value);
}

static const char *map_dtype(tk_dtype t) {
  switch (t) {
  case TK_F16: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
  case TK_BF16: return "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
  case TK_F32: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
  case TK_F64: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT64";
  case TK_I32: return "CU_TENSOR_MAP_DATA_TYPE_INT32";
  case TK_U32: return "CU_TENSOR_MAP_DATA_TYPE_UINT32";
  case TK_I64: return "CU_TENSOR_MAP_DATA_TYPE_INT64";
  case TK_U64: return "CU_TENSOR_MAP_DATA_TYPE_UINT64";
  case TK_I16: case TK_U16: return "CU_TENSOR_MAP_DATA_TYPE_UINT16";
  default: return "CU_TENSOR_MAP_DATA_TYPE_UINT8";
  }
}

/* The launcher's tensor maps (codegen.h, cg_abi), from its arguments: what libtk's
 * runtime does (runtime/tmap.c), here with the toolkit's cuda.h. */
static void emit_tensor_maps(su_buf *o, const cg_abi *abi, const char **names) {
  for (int i = 0; i < abi->ntmaps; i++) {
    const cg_tmap *t = &abi->tmaps[i];
    int r = t->rank, eb = ir_dtype_bytes(t->dtype);
    su_buf_printf(o, "  CUtensorMap map%d;\n  {\n    cuuint64_t dims[%d] = {", i, r);
    for (int d = r - 1; d >= 0; d--) { /* the driver's order: innermost first */
      su_buf_puts(o, d == r - 1 ? "" : ", ");
      put_abi_arg(o, t->dims[d], names);
    }
    su_buf_printf(o, "};\n    for (int d = 0; d < %d; d++) dims[d] = dims[d] ? dims[d] : 1;\n", r);
    su_buf_printf(o, "    cuuint64_t strides[%d] = {", r > 1 ? r - 1 : 1);
    for (int d = r - 2; d >= 0; d--) {
      su_buf_puts(o, d == r - 2 ? "" : ", ");
      put_abi_arg(o, t->strides[d], names);
      su_buf_printf(o, " * %d", eb);
    }
    if (r == 1) su_buf_puts(o, "0");
    su_buf_printf(o, "};\n    cuuint32_t box[%d] = {", r);
    for (int d = r - 1; d >= 0; d--) su_buf_printf(o, "%s%d", d == r - 1 ? "" : ", ", t->box[d]);
    su_buf_printf(o, "}, es[%d] = {", r);
    for (int d = 0; d < r; d++) su_buf_printf(o, "%s1", d ? ", " : "");
    su_buf_printf(o, "};\n    CUresult r = cuTensorMapEncodeTiled(&map%d, %s, %d, (void *)(uintptr_t)%s, dims, "
                     "strides, box, es,\n        CU_TENSOR_MAP_INTERLEAVE_NONE, %s, "
                     "CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);\n"
                     "    if (r != CUDA_SUCCESS) return r;\n  }\n",
                  i, map_dtype(t->dtype), r, names[t->base],
                  t->swizzle == 128 ? "CU_TENSOR_MAP_SWIZZLE_128B" : t->swizzle == 64 ? "CU_TENSOR_MAP_SWIZZLE_64B"
                  : t->swizzle == 32 ? "CU_TENSOR_MAP_SWIZZLE_32B" : "CU_TENSOR_MAP_SWIZZLE_NONE");
  }
}

static void emit_header(su_buf *h, const ir_module *m, const char *pre,
                        ir_signature *const *sigs, const char **names[]) {
  su_buf_printf(h, "/* %s.h -- generated by tkc from %s; do not edit.\n", pre,
                m->source_name ? m->source_name : "a Tile IR module");
  su_buf_puts(h, " * Call the load function once with a CUDA context current, then launch. "
                 "Link with -lcuda.\n * The kernels assume what tkc --specialize "
                 "said (nothing by default: any pointer\n * aligned to its element); f16/bf16 "
                 "arguments are passed as their bit patterns. */\n");
  su_buf_printf(h, "#ifndef %s_TK_H\n#define %s_TK_H\n\n", pre, pre);
  su_buf_puts(h, "#include <cuda.h>\n#include <stdbool.h>\n#include <stdint.h>\n\n");
  su_buf_puts(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  su_buf_printf(h, "/* Loads the module into the current context. */\nCUresult %s_load(void);\n",
                pre);
  su_buf_printf(h, "/* Unloads it. */\nCUresult %s_unload(void);\n", pre);
  for (int k = 0; k < m->nfuncs; k++) {
    const ir_signature *f = sigs[k];
    su_buf_printf(h, "\n/* %s(", f->name);
    for (int i = 0; i < f->nparams; i++) {
      su_buf_printf(h, "%s%s: ", i ? ", " : "", names[k][i]);
      ir_sig_param_print(h, &f->params[i]);
    }
    su_buf_printf(h, ") on a gx x gy x gz grid of programs. */\n");
    signature(h, pre, f, names[k]);
    su_buf_puts(h, ";\n");
  }
  su_buf_puts(h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

/* The launcher's code that makes the workspace `ws` (a static CUdeviceptr, its size in
 * ws_bytes) hold abi's bytes per program the launch runs (`launched`, an expression): as
 * libtk does, zero when allocated, kept between launches (the kernels leave it as they
 * found it), replaced by a larger zeroed one when a launch needs more. The zeroing goes
 * on the launch's stream, so it is done before the kernel starts whatever the stream. */
static void emit_workspace(su_buf *o, const char *ws, const cg_abi *abi, const char *launched) {
  su_buf_printf(o, "  { /* %lld bytes of workspace per program launched */\n"
                   "    size_t ws_need = (size_t)(%s) * %lldu;\n"
                   "    if (ws_need > %s_bytes) {\n"
                   "      CUresult r = cuCtxSynchronize(); /* a launch in flight may use the old one */\n"
                   "      if (r == CUDA_SUCCESS && %s) r = cuMemFree(%s);\n"
                   "      %s = 0;\n      %s_bytes = 0;\n"
                   "      if (r == CUDA_SUCCESS) r = cuMemAlloc(&%s, ws_need);\n"
                   "      if (r == CUDA_SUCCESS) r = cuMemsetD8Async(%s, 0, ws_need, stream);\n"
                   "      if (r != CUDA_SUCCESS) return r;\n      %s_bytes = ws_need;\n    }\n  }\n",
                (long long)abi->workspace, launched, (long long)abi->workspace, ws, ws, ws, ws, ws, ws,
                ws, ws);
}

/* The module's PTX, load/unload and launchers under prefix pre; storage "static " (and
 * file NULL: no preamble) for one variant of a tuned file. */
static void emit_source(su_buf *o, const ir_module *m, const char *pre, const char *file,
                        const char *ptx, ir_signature *const *sigs, const char **names[],
                        const char *storage) {
  if (file)
    su_buf_printf(o, "/* %s.c -- generated by tkc; do not edit. */\n#include \"%s.h\"\n\n", pre,
                  file);
  su_buf_printf(o, "static const unsigned char %s_ptx[] = {", pre);
  size_t n = strlen(ptx);
  for (size_t i = 0; i <= n; i++)
    su_buf_printf(o, "%s0x%02x,", i % 16 ? " " : "\n    ", (unsigned char)ptx[i]);
  su_buf_puts(o, "\n};\n\n");
  su_buf_printf(o, "static CUmodule %s_module;\n", pre);
  for (int k = 0; k < m->nfuncs; k++)
    su_buf_printf(o, "static CUfunction %s_fn_%s;\n", pre, sigs[k]->name);
  su_buf_printf(o, "static int %s_sms = 1; /* multiprocessors: a persistent kernel's grid */\n", pre);
  for (int k = 0; k < m->nfuncs; k++) {
    cg_abi abi;
    if (cg_ptx_abi(ptx, sigs[k]->name, &abi) && abi.scratch)
      su_buf_printf(o, "static CUdeviceptr %s_scratch_%s; /* -fno-fuse: scratch, grown to the largest launch */\n"
                       "static size_t %s_scratch_%s_bytes;\n", pre, sigs[k]->name, pre, sigs[k]->name);
    if (cg_ptx_abi(ptx, sigs[k]->name, &abi) && abi.workspace)
      su_buf_printf(o, "static CUdeviceptr %s_workspace_%s; /* workspace ops: zeroed at allocation, kept */\n"
                       "static size_t %s_workspace_%s_bytes;\n", pre, sigs[k]->name, pre, sigs[k]->name);
  }
  su_buf_printf(o, "\n%sCUresult %s_load(void) {\n", storage, pre);
  su_buf_printf(o, "  CUresult r = cuModuleLoadData(&%s_module, %s_ptx);\n", pre, pre);
  su_buf_puts(o, "  CUdevice dev;\n");
  su_buf_printf(o, "  if (r == CUDA_SUCCESS) r = cuCtxGetDevice(&dev);\n"
                   "  if (r == CUDA_SUCCESS)\n"
                   "    r = cuDeviceGetAttribute(&%s_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);\n", pre);
  for (int k = 0; k < m->nfuncs; k++) {
    int shmem = 0;
    su_buf_printf(o, "  if (r == CUDA_SUCCESS)\n    r = cuModuleGetFunction(&%s_fn_%s, "
                     "%s_module, \"%s\");\n", pre, sigs[k]->name, pre, sigs[k]->name);
    if (cg_ptx_shared_bytes(ptx, sigs[k]->name, &shmem) && shmem > 0)
      su_buf_printf(o, "  if (r == CUDA_SUCCESS) /* shared memory above the 48 KB a launch gets by default */\n"
                       "    r = cuFuncSetAttribute(%s_fn_%s, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, %d);\n",
                    pre, sigs[k]->name, shmem);
    cg_abi abi;
    if (cg_ptx_abi(ptx, sigs[k]->name, &abi) && abi.cluster > 8)
      su_buf_printf(o, "  if (r == CUDA_SUCCESS) /* clusters above the portable 8 CTAs */\n"
                       "    r = cuFuncSetAttribute(%s_fn_%s, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);\n",
                    pre, sigs[k]->name);
  }
  su_buf_puts(o, "  return r;\n}\n\n");
  su_buf_printf(o, "%sCUresult %s_unload(void) {\n  CUresult r = cuModuleUnload(%s_module);\n"
                   "  %s_module = NULL;\n", storage, pre, pre, pre);
  for (int k = 0; k < m->nfuncs; k++) {
    su_buf_printf(o, "  %s_fn_%s = NULL;\n", pre, sigs[k]->name);
    cg_abi abi;
    if (cg_ptx_abi(ptx, sigs[k]->name, &abi) && abi.scratch)
      su_buf_printf(o, "  if (%s_scratch_%s) cuMemFree(%s_scratch_%s);\n  %s_scratch_%s = 0;\n"
                       "  %s_scratch_%s_bytes = 0;\n", pre, sigs[k]->name, pre, sigs[k]->name, pre,
                    sigs[k]->name, pre, sigs[k]->name);
    if (cg_ptx_abi(ptx, sigs[k]->name, &abi) && abi.workspace)
      su_buf_printf(o, "  if (%s_workspace_%s) cuMemFree(%s_workspace_%s);\n  %s_workspace_%s = 0;\n"
                       "  %s_workspace_%s_bytes = 0;\n", pre, sigs[k]->name, pre, sigs[k]->name, pre,
                    sigs[k]->name, pre, sigs[k]->name);
  }
  su_buf_puts(o, "  return r;\n}\n");
  for (int k = 0; k < m->nfuncs; k++) {
    const ir_signature *f = sigs[k];
    cg_abi abi;
    int shmem = 0;
    if (!cg_ptx_abi(ptx, f->name, &abi) || abi.threads <= 0) {
      memset(&abi, 0, sizeof abi);
      abi.threads = CG_WARP * f->num_warps;
    }
    cg_ptx_shared_bytes(ptx, f->name, &shmem);
    su_buf_puts(o, "\n");
    signature_as(o, storage, pre, f, names[k]);
    su_buf_puts(o, " {\n");
    su_buf_printf(o, "  if (!%s_fn_%s) return CUDA_ERROR_NOT_INITIALIZED;\n", pre, f->name);
    emit_tensor_maps(o, &abi, names[k]);
    int total = f->nparams + cg_abi_hidden(&abi);
    if (abi.scratch)
      su_buf_printf(o, "  /* -fno-fuse: %lld bytes of scratch per program */\n"
                       "  size_t need = (size_t)gx * gy * gz * %lldu;\n"
                       "  if (need > %s_scratch_%s_bytes) {\n"
                       "    CUresult r = cuCtxSynchronize(); /* a launch in flight may read the old one */\n"
                       "    if (r == CUDA_SUCCESS && %s_scratch_%s) r = cuMemFree(%s_scratch_%s);\n"
                       "    %s_scratch_%s = 0;\n    %s_scratch_%s_bytes = 0;\n"
                       "    if (r == CUDA_SUCCESS) r = cuMemAlloc(&%s_scratch_%s, need);\n"
                       "    if (r != CUDA_SUCCESS) return r;\n    %s_scratch_%s_bytes = need;\n  }\n",
                    (long long)abi.scratch, (long long)abi.scratch, pre, f->name, pre, f->name, pre,
                    f->name, pre, f->name, pre, f->name, pre, f->name, pre, f->name);
    if (abi.persistent)
      su_buf_printf(o, "  /* persistent: %d program(s) per SM, each looping over the grid asked for */\n"
                       "  unsigned grid_x = gx, grid_y = gy, grid_z = gz;\n"
                       "  unsigned long long programs = (unsigned long long)gx * gy * gz;\n"
                       "  unsigned long long resident = (unsigned long long)%s_sms * %du;\n",
                    abi.persistent, pre, abi.persistent);
    if (abi.workspace) {
      su_buf ws = {0};
      su_buf_printf(&ws, "%s_workspace_%s", pre, f->name);
      emit_workspace(o, su_buf_str(&ws), &abi,
                     abi.persistent ? "programs < resident ? programs : resident" : "(unsigned long long)gx * gy * gz");
      su_buf_free(&ws);
    }
    if (total) {
      int m = 0; /* the arguments written so far */
      su_buf_puts(o, "  void *args[] = {");
      for (int i = 0; i < f->nparams; i++) su_buf_printf(o, "%s&%s", m++ ? ", " : "", names[k][i]);
      for (int i = 0; i < abi.ntmaps; i++) su_buf_printf(o, "%s&map%d", m++ ? ", " : "", i);
      if (abi.persistent) su_buf_printf(o, "%s&grid_x, &grid_y, &grid_z", m++ ? ", " : "");
      if (abi.scratch) su_buf_printf(o, "%s&%s_scratch_%s", m++ ? ", " : "", pre, f->name);
      if (abi.workspace) su_buf_printf(o, "%s&%s_workspace_%s", m++ ? ", " : "", pre, f->name);
      su_buf_puts(o, "};\n");
    } else {
      su_buf_puts(o, "  void **args = NULL;\n");
    }
    if (abi.cluster)
      su_buf_printf(o, "  /* each program is a cluster of %d CTAs along x (the PTX requires it) */\n"
                       "  if ((unsigned long long)gx * %du > 0x7fffffffu) return CUDA_ERROR_INVALID_VALUE;\n",
                    abi.cluster, abi.cluster);
    char cgrid[64];
    snprintf(cgrid, sizeof cgrid, "gx * %du, gy, gz", abi.cluster);
    const char *grid = abi.persistent ? "(unsigned)(programs < resident ? programs : resident), 1, 1"
                       : abi.cluster ? cgrid
                                     : "gx, gy, gz";
    if (abi.pdl)
      /* as libtk launches it: the kernel waits for its predecessor itself */
      su_buf_printf(o, "  CUlaunchAttribute pdl = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,\n"
                       "                          .value.programmaticStreamSerializationAllowed = 1};\n"
                       "  CUlaunchConfig cfg = {%s, %d, 1, 1, %d, stream, &pdl, 1};\n"
                       "  return cuLaunchKernelEx(&cfg, %s_fn_%s, args, NULL);\n}\n",
                    grid, abi.threads, shmem, pre, f->name);
    else
      su_buf_printf(o, "  return cuLaunchKernel(%s_fn_%s, %s, %d, 1, 1, %d, stream, args, NULL);\n}\n",
                    pre, f->name, grid, abi.threads, shmem);
  }
}

bool cg_emit_c(const ir_module *m, const char *ptx, const char *basename, su_buf *h_out,
               su_buf *c_out, su_diags *d) {
  su_arena *a = su_arena_new();
  const char *slash = strrchr(basename, '/');
  const char *file = slash ? slash + 1 : basename;
  const char *pre = prefix_of(a, *file ? file : "tk");
  ir_signature **sigs = SU_NEW_ARRAY(a, ir_signature *, m->nfuncs ? m->nfuncs : 1);
  const char ***names = SU_NEW_ARRAY(a, const char **, m->nfuncs ? m->nfuncs : 1);
  bool ok = true;
  for (int k = 0; k < m->nfuncs; k++) {
    sigs[k] = ir_func_signature(a, m->funcs[k]);
    names[k] = param_names(a, sigs[k]);
    for (int i = 0; i < sigs[k]->nparams; i++)
      if (!c_type(&sigs[k]->params[i])) {
        su_loc loc = {0};
        su_error(d, loc, "kernel '%s': parameter '%s' has no C type", sigs[k]->name,
                 names[k][i]);
        ok = false;
      }
  }
  if (ok) {
    emit_header(h_out, m, pre, sigs, names);
    emit_source(c_out, m, pre, file, ptx, sigs, names, "");
  }
  su_arena_free(a);
  return ok;
}

/* ---- tuned files (tkc --tune) -------------------------------------------------------- */

/* A C string literal of s. */
static void c_string(su_buf *o, const char *s) {
  su_buf_puts(o, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') su_buf_printf(o, "\\%c", *s);
    else if ((unsigned char)*s < 32 || (unsigned char)*s > 126) su_buf_printf(o, "\\%03o", (unsigned char)*s);
    else su_buf_printf(o, "%c", *s);
  }
  su_buf_puts(o, "\"");
}

static void emit_tuned_header(su_buf *h, const ir_module *m, const char *pre, int n,
                              ir_signature *const *sigs, const char **names[]) {
  su_buf_printf(h, "/* %s.h -- generated by tkc --tune from %s; do not edit.\n", pre,
                m->source_name ? m->source_name : "a Tile IR module");
  su_buf_printf(h, " * %d tuned configurations, each compiled in; every launcher takes the key "
                   "it was tuned for\n * and launches that configuration's kernel (an unknown key: "
                   "CUDA_ERROR_NOT_FOUND). The grid\n * is the caller's: read the configuration's "
                   "compile-time parameters with %s_cparam.\n * Call the load function once with a "
                   "CUDA context current. Link with -lcuda. */\n", n, pre);
  su_buf_printf(h, "#ifndef %s_TK_H\n#define %s_TK_H\n\n", pre, pre);
  su_buf_puts(h, "#include <cuda.h>\n#include <stdbool.h>\n#include <stdint.h>\n\n");
  su_buf_puts(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  su_buf_printf(h, "/* Loads every configuration's module into the current context. */\nCUresult %s_load(void);\n", pre);
  su_buf_printf(h, "/* Unloads them. */\nCUresult %s_unload(void);\n", pre);
  su_buf_printf(h, "/* The configuration tuned for key (\"BLOCK=128 warps=4\"), or NULL when none is. */\n"
                   "const char *%s_config(const char *key);\n", pre);
  su_buf_printf(h, "/* The value of compile-time parameter name in key's configuration, as text, or\n"
                   " * NULL when the configuration does not set it (the kernel's default applies). */\n"
                   "const char *%s_cparam(const char *key, const char *name);\n", pre);
  for (int k = 0; k < m->nfuncs; k++) {
    const ir_signature *f = sigs[k];
    su_buf_printf(h, "\n/* %s(", f->name);
    for (int i = 0; i < f->nparams; i++) {
      su_buf_printf(h, "%s%s: ", i ? ", " : "", names[k][i]);
      ir_sig_param_print(h, &f->params[i]);
    }
    su_buf_printf(h, ") in the configuration tuned for key. */\n");
    su_buf_printf(h, "CUresult %s_%s(const char *key, unsigned gx, unsigned gy, unsigned gz, CUstream stream",
                  pre, f->name);
    for (int i = 0; i < f->nparams; i++)
      su_buf_printf(h, ",\n    %s %s", c_type(&f->params[i]), names[k][i]);
    su_buf_puts(h, ");\n");
  }
  su_buf_puts(h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

bool cg_emit_c_tuned(const ir_module *const *ms, const char *const *ptxs, const char *const *keys,
                     const char *const *configs, int n, const char *basename, su_buf *h_out,
                     su_buf *c_out, su_diags *d) {
  su_arena *a = su_arena_new();
  const char *slash = strrchr(basename, '/');
  const char *file = slash ? slash + 1 : basename;
  const char *pre = prefix_of(a, *file ? file : "tk");
  const ir_module *m0 = ms[0];
  int nf = m0->nfuncs;
  bool ok = n > 0;
  ir_signature ***sigs = SU_NEW_ARRAY(a, ir_signature **, n);
  const char ****names = SU_NEW_ARRAY(a, const char ***, n);
  for (int j = 0; j < n; j++) {
    sigs[j] = SU_NEW_ARRAY(a, ir_signature *, nf ? nf : 1);
    names[j] = SU_NEW_ARRAY(a, const char **, nf ? nf : 1);
    if (ms[j]->nfuncs != nf) ok = false;
    for (int k = 0; ok && k < nf; k++) {
      sigs[j][k] = ir_func_signature(a, ms[j]->funcs[k]);
      names[j][k] = param_names(a, sigs[j][k]);
      const ir_signature *f = sigs[j][k], *g = sigs[0][k];
      bool same = !strcmp(f->name, g->name) && f->nparams == g->nparams;
      for (int i = 0; same && i < f->nparams; i++)
        same = f->params[i].type == g->params[i].type;
      for (int i = 0; i < f->nparams; i++)
        if (!c_type(&f->params[i])) {
          su_error(d, (su_loc){0}, "kernel '%s': parameter '%s' has no C type", f->name, names[j][k][i]);
          ok = false;
        }
      if (!same) {
        su_error(d, (su_loc){0}, "kernel '%s' has other parameters in configuration '%s' than in '%s'",
                 f->name, configs[j], configs[0]);
        ok = false;
      }
    }
  }
  if (!ok) {
    if (n > 0 && !d->nerrors) su_error(d, (su_loc){0}, "the tuned configurations define different kernels");
    su_arena_free(a);
    return false;
  }
  emit_tuned_header(h_out, m0, pre, n, sigs[0], names[0]);
  su_buf *o = c_out;
  su_buf_printf(o, "/* %s.c -- generated by tkc --tune; do not edit. */\n#include \"%s.h\"\n\n"
                   "#include <string.h>\n\n", pre, file);
  for (int j = 0; j < n; j++) {
    su_buf_printf(o, "/* ---- configuration %d: %s (the key is %s_keys[%d]) ---- */\n", j,
                  configs[j], pre, j);
    emit_source(o, ms[j], su_fmt(a, "%s_t%d", pre, j), NULL, ptxs[j], sigs[j], names[j], "static ");
    su_buf_puts(o, "\n");
  }
  su_buf_printf(o, "static const char *const %s_keys[%d] = {", pre, n);
  for (int j = 0; j < n; j++) {
    su_buf_puts(o, j ? ", " : "");
    c_string(o, keys[j]);
  }
  su_buf_printf(o, "};\nstatic const char *const %s_configs[%d] = {", pre, n);
  for (int j = 0; j < n; j++) {
    su_buf_puts(o, j ? ", " : "");
    c_string(o, configs[j]);
  }
  su_buf_printf(o, "};\n\nstatic int %s_find(const char *key) {\n"
                   "  for (int i = 0; key && i < %d; i++)\n"
                   "    if (!strcmp(%s_keys[i], key)) return i;\n  return -1;\n}\n\n", pre, n, pre);
  su_buf_printf(o, "const char *%s_config(const char *key) {\n  int i = %s_find(key);\n"
                   "  return i < 0 ? NULL : %s_configs[i];\n}\n\n", pre, pre, pre);
  su_buf_printf(o, "const char *%s_cparam(const char *key, const char *name) {\n"
                   "  static char value[64];\n  int i = %s_find(key);\n  if (i < 0 || !name) return NULL;\n"
                   "  size_t len = strlen(name);\n"
                   "  for (const char *s = %s_configs[i]; *s;) { /* NAME=VALUE, space-separated */\n"
                   "    const char *end = strchr(s, ' ');\n    size_t n = end ? (size_t)(end - s) : strlen(s);\n"
                   "    if (n > len && !strncmp(s, name, len) && s[len] == '=' && n - len - 1 < sizeof value) {\n"
                   "      memcpy(value, s + len + 1, n - len - 1);\n      value[n - len - 1] = 0;\n      return value;\n    }\n"
                   "    s += n;\n    while (*s == ' ') s++;\n  }\n  return NULL;\n}\n\n", pre, pre, pre);
  su_buf_printf(o, "CUresult %s_load(void) {\n  CUresult r = CUDA_SUCCESS;\n", pre);
  for (int j = 0; j < n; j++) su_buf_printf(o, "  if (r == CUDA_SUCCESS) r = %s_t%d_load();\n", pre, j);
  su_buf_puts(o, "  return r;\n}\n\n");
  su_buf_printf(o, "CUresult %s_unload(void) {\n  CUresult r = CUDA_SUCCESS, u;\n", pre);
  for (int j = 0; j < n; j++)
    su_buf_printf(o, "  if ((u = %s_t%d_unload()) != CUDA_SUCCESS) r = u;\n", pre, j);
  su_buf_puts(o, "  return r;\n}\n");
  for (int k = 0; k < nf; k++) {
    const ir_signature *f = sigs[0][k];
    const char **nm = names[0][k];
    su_buf_printf(o, "\nCUresult %s_%s(const char *key, unsigned gx, unsigned gy, unsigned gz, CUstream stream",
                  pre, f->name);
    for (int i = 0; i < f->nparams; i++) su_buf_printf(o, ",\n    %s %s", c_type(&f->params[i]), nm[i]);
    su_buf_printf(o, ") {\n  switch (%s_find(key)) {\n", pre);
    for (int j = 0; j < n; j++) {
      su_buf_printf(o, "  case %d: return %s_t%d_%s(gx, gy, gz, stream", j, pre, j, f->name);
      for (int i = 0; i < f->nparams; i++) su_buf_printf(o, ", %s", nm[i]);
      su_buf_puts(o, ");\n");
    }
    su_buf_puts(o, "  default: return CUDA_ERROR_NOT_FOUND;\n  }\n}\n");
  }
  su_arena_free(a);
  return true;
}
