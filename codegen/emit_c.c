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
    "gx", "gy", "gz", "stream", "args", "NULL"};

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
  case TK_U8: return "uint8_t";
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

static void signature(su_buf *b, const char *pre, const ir_signature *f, const char **names) {
  su_buf_printf(b, "CUresult %s_%s(unsigned gx, unsigned gy, unsigned gz, CUstream stream", pre,
                f->name);
  for (int i = 0; i < f->nparams; i++)
    su_buf_printf(b, ",\n    %s %s", c_type(&f->params[i]), names[i]);
  su_buf_puts(b, ")");
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

static void emit_source(su_buf *o, const ir_module *m, const char *pre, const char *file,
                        const char *ptx, ir_signature *const *sigs, const char **names[]) {
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
  su_buf_printf(o, "\nCUresult %s_load(void) {\n", pre);
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
  }
  su_buf_puts(o, "  return r;\n}\n\n");
  su_buf_printf(o, "CUresult %s_unload(void) {\n  CUresult r = cuModuleUnload(%s_module);\n"
                   "  %s_module = NULL;\n", pre, pre, pre);
  for (int k = 0; k < m->nfuncs; k++) su_buf_printf(o, "  %s_fn_%s = NULL;\n", pre, sigs[k]->name);
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
    signature(o, pre, f, names[k]);
    su_buf_puts(o, " {\n");
    su_buf_printf(o, "  if (!%s_fn_%s) return CUDA_ERROR_NOT_INITIALIZED;\n", pre, f->name);
    emit_tensor_maps(o, &abi, names[k]);
    int total = f->nparams + abi.ntmaps + (abi.persistent ? 3 : 0);
    if (abi.persistent)
      su_buf_puts(o, "  /* persistent: one program per SM, each looping over the grid asked for */\n"
                     "  unsigned grid_x = gx, grid_y = gy, grid_z = gz;\n"
                     "  unsigned long long programs = (unsigned long long)gx * gy * gz;\n");
    if (total) {
      su_buf_puts(o, "  void *args[] = {");
      for (int i = 0; i < f->nparams; i++) su_buf_printf(o, "%s&%s", i ? ", " : "", names[k][i]);
      for (int i = 0; i < abi.ntmaps; i++) su_buf_printf(o, "%s&map%d", i || f->nparams ? ", " : "", i);
      if (abi.persistent) su_buf_puts(o, ", &grid_x, &grid_y, &grid_z");
      su_buf_puts(o, "};\n");
    } else {
      su_buf_puts(o, "  void **args = NULL;\n");
    }
    if (abi.persistent)
      su_buf_printf(o, "  return cuLaunchKernel(%s_fn_%s, (unsigned)(programs < (unsigned long long)%s_sms ? programs : "
                       "(unsigned long long)%s_sms), 1, 1, %d, 1, 1, %d, stream, args, NULL);\n}\n",
                    pre, f->name, pre, pre, abi.threads, shmem);
    else
      su_buf_printf(o, "  return cuLaunchKernel(%s_fn_%s, gx, gy, gz, %d, 1, 1, %d, stream, args, "
                       "NULL);\n}\n", pre, f->name, abi.threads, shmem);
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
    emit_source(c_out, m, pre, file, ptx, sigs, names);
  }
  su_arena_free(a);
  return ok;
}
