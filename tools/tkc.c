/* tkc — the command-line compiler: .tk (or .tkir) in; AST, IR, LLVM IR, PTX or C out.
 *
 * Exit status: 0 on success, 1 when the input has errors (every one reported), 2 for a
 * usage error or a stage that does not exist yet. Outputs go through su_write_outputs
 * (support.h): a failed run never leaves a half-written file, `-o /dev/null` discards,
 * and an input is never overwritten. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../driver/driver.h"
#include "../passes/passes.h"

typedef enum { EMIT_CHECK, EMIT_AST, EMIT_IR, EMIT_IR_OPT, EMIT_LLVM, EMIT_PTX, EMIT_C, EMIT_ROOFLINE } emit_kind;

static const char *const emit_names[] = {"check", "ast", "ir", "ir-opt", "llvm", "ptx", "c"};
enum { NEMIT_NAMES = sizeof emit_names / sizeof *emit_names };

typedef struct {
  const char *input, *output;
  emit_kind emit;
  drv_options drv;
  su_vec defines; /* sema_define* */
  const char *specialize; /* --specialize's list, or NULL */
  const char *tune;       /* --tune's winners file, or NULL */
  unsigned grid[3];       /* --grid, for --roofline */
  bool resources;         /* --resources: the per-kernel table instead of the PTX */
  bool no_spill_warning;  /* -Wno-spill */
  int spill_above;        /* -Wspill=N: spilled bytes (stores plus loads) that warn past N */
  const char *rl_args;    /* --args, for --roofline: NAME=INTEGER,... */
  const char *machine;    /* --machine, for --roofline: a card's name, as the driver gives it */
} options;

static void usage(FILE *f) {
  su_buf archs = {0};
  tg_names(&archs, " | ");
  fprintf(f,
          "usage: tkc FILE.tk|FILE.tkir [options]\n"
          "\n"
          "Compiles tk kernels. With no --emit, writes PTX with every kernel of the file to\n"
          "-o (default: FILE's base name + .ptx).\n"
          "\n"
          "  -o PATH              output path ('-' for standard output)\n"
          "  --check              parse and type-check only\n"
          "  --emit=KIND          ast | ir | ir-opt | llvm | ptx | c\n"
          "                         ast     the checked syntax tree, with types\n"
          "                         ir      Tile IR straight from the front end\n"
          "                         ir-opt  Tile IR after the pass pipeline\n"
          "                         llvm    LLVM IR for the NVPTX target\n"
          "                         ptx     PTX assembly (the default)\n"
          "                         c       -o NAME writes NAME.h and NAME.c: the PTX embedded,\n"
          "                                 a load function and a typed launcher per kernel\n"
          "  --tune=FILE          with --emit=c: compile every configuration FILE names and\n"
          "                       embed them all; each launcher takes a key and launches the\n"
          "                       configuration tuned for it. FILE has a line 'KEY: NAME=VALUE\n"
          "                       ...' per key (tk_tune's or tilek.tune's record=; the last line\n"
          "                       of a key wins; '#' starts a comment)\n"
          "  -D NAME=VALUE        set a compile-time parameter (or the launch attributes\n"
          "                       'warps' and 'stages') for every kernel that has it\n"
          "  --arch=ARCH          %s\n"
          "                       (default %s); '--arch ARCH' too\n"
          "  --specialize=NAME[:D|:pos],...\n"
          "                       assume that the integer or pointer parameter NAME (in every\n"
          "                       kernel having one) is a multiple of D (a power of two,\n"
          "                       default 16; for a pointer: its address, in bytes), as\n"
          "                       Triton's JIT specializes, or that the f32 or f64 parameter\n"
          "                       NAME is positive and finite (no suffix, or ':pos'), as\n"
          "                       libtk's JIT does; the kernel is then only correct for such\n"
          "                       arguments. '--specialize=all' assumes it of every integer,\n"
          "                       pointer and float parameter (the JIT's load-time variant).\n"
          "                       Without it the kernels accept any argument (pointers\n"
          "                       aligned to their element)\n"
          "  -O0 .. -O3           optimization level (default -O%d; -O0 runs no IR pass)\n"
          "  --passes=A,B         run exactly these IR passes, in order (for testing a pass)\n"
          "  --print-after-all    print the IR after every pass (to standard error)\n"
          "  --print-after=A,B    print the IR after the named passes\n"
          "  --time-passes        print the time each pass took\n"
          "  --verify-each        verify the IR after every pass (always on in debug builds)\n"
          "  --budget=N           compile-time work allowed: helper calls inlined plus\n"
          "                       static_range iterations unrolled (default 100000)\n"
          "  -fdot-precision=P    input precision of an f32 dot that names none: tf32 (the\n"
          "                       default, as Triton's), tf32x3 or ieee (docs/language.md,\n"
          "                       Precision)\n"
          "  -fmath=accurate|fast f32 sin, cos, exp, exp2, sigmoid on the GPU: libdevice's\n"
          "                       full-range routines (2 ulp), or the hardware\n"
          "                       approximations (the default)\n"
          "  -ffp-contract=fast|off\n"
          "                       fast: a * b + c may become one fma (both backends alike);\n"
          "                       off (the default): every product and sum rounded\n"
          "  -Rpass-missed=A,B    the named passes (or 'all') say, as remarks at the .tk\n"
          "                       line, what they leave unchanged and why (fuse, kloop)\n"
          "  -Rpass=A,B           the named passes (or 'all') also say what they chose (fuse:\n"
          "                       how a value two of its loops need is kept, and the\n"
          "                       estimated bytes of each option)\n"
          "  -ffuse-keep=auto|recompute|online|smem|cluster\n"
          "                       how fusion keeps a value two of its loops need: its cost\n"
          "                       model's choice (auto, the default), or forced\n"
          "  -fno-fuse            do not fuse: every op's result goes through global scratch\n"
          "                       memory and back (the unfused baseline fusion is measured\n"
          "                       against; results are the same)\n"
          "  --roofline           print, per kernel, the bytes it moves (HBM, L2), the FLOPs\n"
          "                       and special-function (MUFU) results it does for --grid\n"
          "                       and --args, the bound they imply on the target (memory,\n"
          "                       compute, special functions or launch overhead), the\n"
          "                       predicted time and the fraction of each ceiling used; no\n"
          "                       code is written\n"
          "  --grid=X[,Y[,Z]]     the grid the --roofline prediction is for (default 1)\n"
          "  --args=NAME=V,...    integer launch arguments for --roofline: loops whose trip\n"
          "                       counts follow from them are counted that many times\n"
          "  --machine=NAME       the card --roofline predicts for, by the driver's name of\n"
          "                       it (\"NVIDIA H100 80GB HBM3\"): its measured ceilings\n"
          "                       instead of the arch's (docs/roofline.md)\n"
          "  --resources          print, per kernel, the registers, spilled bytes, stack,\n"
          "                       static and dynamic shared memory, threads and the\n"
          "                       occupancy they allow on --arch (from ptxas -v; needs the\n"
          "                       CUDA toolkit: $TK_PTXAS, $CUDA_HOME or /usr/local/cuda);\n"
          "                       no code is written\n"
          "  -Wspill, -Wno-spill  warn (the default) or not when ptxas reports a kernel\n"
          "                       spilling more than %d bytes (stores plus loads) of\n"
          "                       registers to local memory (any PTX output, when ptxas\n"
          "                       is there); a few words spilled around a loop sit in L1\n"
          "  -Wspill=N            warn when more than N bytes spill (0: any byte)\n"
          "  --list-passes        list the IR passes\n"
          "  --list-archs         list the architectures (the target table's rows)\n"
          "  --version            print the version\n"
          "  -h, --help           this text\n"
          "\n"
          "Exit status: 0 success, 1 errors in the input, 2 usage error.\n",
          su_buf_str(&archs), TG_DEFAULT_ARCH, TG_DEFAULT_OPT_LEVEL, (int)DRV_SPILL_WARN_BYTES);
  su_buf_free(&archs);
}

static _Noreturn void usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "tkc: error: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run 'tkc --help' for usage)\n");
  exit(2);
}

static void add_define(options *o, su_arena *a, const char *arg) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg || !eq[1]) usage_error("-D expects NAME=VALUE, got '%s'", arg);
  sema_define *d = SU_NEW(a, sema_define);
  d->name = su_strndup(a, arg, (size_t)(eq - arg));
  d->value = su_strdup(a, eq + 1);
  su_vec_push(&o->defines, d);
}

static bool set_emit(options *o, const char *kind) {
  for (size_t i = 0; i < NEMIT_NAMES; i++)
    if (strcmp(kind, emit_names[i]) == 0) {
      o->emit = (emit_kind)i;
      return true;
    }
  return false;
}

static void set_arch(options *o, su_arena *a, const char *arch) {
  if (!tg_find(arch)) {
    su_buf names = {0};
    tg_names(&names, ", ");
    const char *list = su_strdup(a, su_buf_str(&names));
    su_buf_free(&names);
    usage_error("%s", su_fmt(a, "unknown --arch '%s' (expected one of %s)", arch, list));
  }
  o->drv.arch = arch;
}

static void parse_args(options *o, su_arena *a, int argc, char **argv) {
  o->emit = EMIT_PTX;
  o->grid[0] = o->grid[1] = o->grid[2] = 1;
  drv_options_init(&o->drv);
  o->drv.log = stderr;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(s, "--version")) {
      printf("tkc %s (LLVM NVPTX back end)\n", TK_VERSION);
      exit(0);
    } else if (!strcmp(s, "--list-passes")) {
      for (const char *const *p = pass_names(); *p; p++) printf("%s\n", *p);
      exit(0);
    } else if (!strcmp(s, "--list-archs")) {
      su_buf names = {0};
      tg_names(&names, "\n");
      printf("%s\n", su_buf_str(&names));
      su_buf_free(&names);
      exit(0);
    } else if (!strcmp(s, "-o")) {
      if (!next) usage_error("%s needs an argument", s);
      o->output = next;
      i++;
    } else if (!strcmp(s, "--check")) {
      o->emit = EMIT_CHECK;
    } else if (!strncmp(s, "--emit=", 7)) {
      if (!set_emit(o, s + 7)) usage_error("unknown --emit kind '%s'", s + 7);
    } else if (!strcmp(s, "--emit")) {
      if (!next || !set_emit(o, next)) usage_error("unknown --emit kind '%s'", next ? next : "");
      i++;
    } else if (!strcmp(s, "-D")) {
      if (!next) usage_error("%s needs NAME=VALUE", s);
      add_define(o, a, next);
      i++;
    } else if (!strncmp(s, "-D", 2)) {
      add_define(o, a, s + 2);
    } else if (!strncmp(s, "--arch=", 7)) {
      set_arch(o, a, s + 7);
    } else if (!strcmp(s, "--arch")) {
      if (!next) usage_error("%s needs an argument", s);
      set_arch(o, a, next);
      i++;
    } else if (!strncmp(s, "--tune=", 7)) {
      if (!s[7]) usage_error("%s needs a file of tuned configurations", s);
      o->tune = s + 7;
    } else if (!strncmp(s, "--specialize=", 13)) {
      if (!s[13]) usage_error("%s needs NAME[:D],... or all", s);
      o->specialize = s + 13;
    } else if (s[0] == '-' && s[1] == 'O' && s[2] >= '0' && s[2] <= '3' && !s[3]) {
      o->drv.opt_level = s[2] - '0';
    } else if (!strncmp(s, "--passes=", 9)) {
      o->drv.only_passes = s + 9;
    } else if (!strcmp(s, "--print-after-all")) {
      o->drv.print_after_all = true;
    } else if (!strncmp(s, "--print-after=", 14)) {
      o->drv.print_after = s + 14;
    } else if (!strcmp(s, "--time-passes")) {
      o->drv.time_passes = true;
    } else if (!strcmp(s, "--verify-each")) {
      o->drv.verify_each = true;
    } else if (!strncmp(s, "--budget=", 9)) {
      char *end;
      long long v = strtoll(s + 9, &end, 10);
      if (end == s + 9 || *end || v <= 0) usage_error("--budget expects a positive integer, got '%s'", s + 9);
      o->drv.budget = v;
    } else if (!strncmp(s, "-fdot-precision=", 16)) {
      int k = ir_dot_precision_parse(s + 16, strlen(s + 16));
      if (k < 0) usage_error("-fdot-precision expects ieee, tf32 or tf32x3, got '%s'", s + 16);
      o->drv.dot_precision = k;
    } else if (!strncmp(s, "-fmath=", 7)) {
      if (strcmp(s + 7, "accurate") && strcmp(s + 7, "fast"))
        usage_error("-fmath expects accurate or fast, got '%s'", s + 7);
      o->drv.accurate_math = !strcmp(s + 7, "accurate");
    } else if (!strncmp(s, "-ffp-contract=", 14)) {
      if (strcmp(s + 14, "fast") && strcmp(s + 14, "off"))
        usage_error("-ffp-contract expects fast or off, got '%s'", s + 14);
      o->drv.fp_contract = !strcmp(s + 14, "fast");
    } else if (!strcmp(s, "--resources")) {
      o->resources = true;
      o->emit = EMIT_PTX;
    } else if (!strcmp(s, "-Wspill")) {
      o->no_spill_warning = false;
    } else if (!strncmp(s, "-Wspill=", 8)) {
      char *end;
      long long v = strtoll(s + 8, &end, 10);
      if (end == s + 8 || *end || v < 0 || v > INT_MAX)
        usage_error("-Wspill= expects a number of bytes (0 or more), got '%s'", s + 8);
      o->no_spill_warning = false;
      o->spill_above = (int)v;
    } else if (!strcmp(s, "-Wno-spill")) {
      o->no_spill_warning = true;
    } else if (!strncmp(s, "-Rpass-missed=", 14)) {
      if (!s[14]) usage_error("%s needs pass names (or 'all')", s);
      o->drv.remark_missed = s + 14;
    } else if (!strncmp(s, "-Rpass=", 7)) {
      if (!s[7]) usage_error("%s needs pass names (or 'all')", s);
      o->drv.remark_done = s + 7;
    } else if (!strncmp(s, "-ffuse-keep=", 12)) {
      static const char *const keeps[] = {"auto", "recompute", "online", "smem", "cluster"};
      int k = 0;
      while (k < 5 && strcmp(s + 12, keeps[k])) k++;
      if (k == 5) usage_error("-ffuse-keep expects auto, recompute, online, smem or cluster, got '%s'", s + 12);
      o->drv.fuse_keep = k;
    } else if (!strcmp(s, "-fno-fuse")) {
      o->drv.no_fuse = true;
    } else if (!strcmp(s, "--roofline")) {
      o->emit = EMIT_ROOFLINE;
    } else if (!strncmp(s, "--args=", 7)) {
      o->rl_args = s + 7;
    } else if (!strncmp(s, "--machine=", 10)) {
      o->machine = s + 10;
    } else if (!strncmp(s, "--grid=", 7)) {
      const char *g = s + 7;
      for (int k = 0; k < 3; k++) {
        char *end;
        unsigned long v = strtoul(g, &end, 10);
        if (end == g || v == 0 || v > 0x7fffffffUL || (*end && *end != ',') || (*end && k == 2))
          usage_error("--grid expects X[,Y[,Z]] with positive integers, got '%s'", s + 7);
        o->grid[k] = (unsigned)v;
        if (!*end) break;
        g = end + 1;
      }
    } else if (s[0] == '-' && s[1]) {
      usage_error("unknown option '%s'", s);
    } else {
      if (o->input) usage_error("more than one input file ('%s')", s);
      o->input = s;
    }
  }
  if (!o->input) usage_error("%s", "no input file");
  if (o->tune && o->emit != EMIT_C) usage_error("%s", "--tune goes with --emit=c");
  if (o->rl_args && o->emit != EMIT_ROOFLINE) usage_error("%s", "--args goes with --roofline");
  if (o->machine && o->emit != EMIT_ROOFLINE) usage_error("%s", "--machine goes with --roofline");
  if (o->emit == EMIT_ROOFLINE && !tg_has_ceilings(o->drv.arch))
    usage_error("--roofline: the target table has no ceilings for %s (add them to "
                "target/targets.def)", o->drv.arch);
  tg_arch card;
  if (o->machine && tg_on_device(o->drv.arch, o->machine, &card) != &card) {
    su_buf known = {0}, msg = {0};
    tg_machine_names(&known, o->drv.arch, ", ");
    su_buf_printf(&msg, "the target table has no card '%s' for %s (%s%s; without --machine, "
                  "the row's own: %s)", o->machine, o->drv.arch,
                  known.len ? "it has: " : "none for that architecture", su_buf_str(&known),
                  tg_find(o->drv.arch)->machine);
    usage_error("--machine: %s", su_buf_str(&msg));
  }
}

/* Applies --specialize's list to m's parameter facts; a bad list is a usage error. */
static void apply_specialize(const char *list, ir_module *m, su_arena *a) {
  su_buf why = {0};
  bool ok = drv_specialize_list(m, list, a, &why);
  const char *msg = su_strdup(a, su_buf_str(&why));
  su_buf_free(&why);
  if (!ok) usage_error("--specialize: %s", msg);
}

/* Copies the define pointers into a flat array the driver takes. */
static void freeze_defines(options *o, su_arena *a) {
  sema_define *flat = SU_NEW_ARRAY(a, sema_define, o->defines.len + 1);
  for (int i = 0; i < o->defines.len; i++) flat[i] = *(sema_define *)o->defines.data[i];
  o->drv.defines = flat;
  o->drv.ndefines = o->defines.len;
  su_vec_free(&o->defines);
}

/* Writes the n outputs all or none (support.h: devices, FIFOs and "-" in place, regular
 * files replaced atomically, never the input); false after saying why. */
static bool write_outputs(const options *o, const su_output *outs, int n) {
  su_buf err = {0};
  bool ok = su_write_outputs(outs, n, &o->input, strcmp(o->input, "-") ? 1 : 0, &err);
  if (!ok) fprintf(stderr, "tkc: error: %s\n", su_buf_str(&err));
  su_buf_free(&err);
  return ok;
}

static bool write_file(const options *o, const char *path, const char *data, size_t len) {
  return write_outputs(o, &(su_output){path, data, len}, 1);
}

/* Standard output is checked once more at exit, as GNU tools do, for what was printed
 * through stdio (--roofline, --help): a full disk is an error, not silence. */
static void check_stdout(void) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "tkc: error: cannot write to standard output: %s\n", strerror(errno));
    _exit(1);
  }
}

/* The default output: the input's base name with ext, in the current directory. */
static const char *default_output(su_arena *a, const char *input, const char *ext) {
  const char *base = strrchr(input, '/');
  base = base ? base + 1 : input;
  const char *dot = strrchr(base, '.');
  size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  return su_fmt(a, "%.*s%s", (int)n, base, ext);
}

/* ---- --tune ---------------------------------------------------------------------------- */

/* One configuration of a winners file: the key it won for, its text, its defines. */
typedef struct {
  const char *key, *text;
  sema_define *defines;
  int ndefines;
} tuned;

/* Reads FILE's "KEY: NAME=VALUE ..." lines (the last one of a key wins, in the place of
 * the first); false after reporting FILE:LINE: why. */
static bool read_winners(const char *path, su_arena *a, su_vec *out) {
  const char *err = NULL;
  su_source *f = su_source_read(a, path, &err);
  if (!f) {
    fprintf(stderr, "tkc: error: cannot read '%s': %s\n", path, err);
    return false;
  }
  int lineno = 0;
  for (const char *p = f->text, *end = f->text + f->len; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    char *line = su_strndup(a, p, n);
    p += n + 1;
    lineno++;
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char *colon = strrchr(line, ':');
    char *t = line;
    while (*t == ' ' || *t == '\t' || *t == '\r') t++;
    if (!*t) continue;
    if (!colon) {
      fprintf(stderr, "%s:%d: error: expected 'KEY: NAME=VALUE ...'\n", path, lineno);
      return false;
    }
    *colon = 0;
    char *k = t, *ke = colon;
    while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t')) *--ke = 0;
    tuned *w = SU_NEW(a, tuned);
    w->key = k;
    su_vec defs = {0};
    su_buf text = {0};
    for (char *tok = strtok(colon + 1, " \t\r"); tok; tok = strtok(NULL, " \t\r")) {
      char *eq = strchr(tok, '=');
      if (!eq || eq == tok || !eq[1]) {
        fprintf(stderr, "%s:%d: error: '%s' is not NAME=VALUE\n", path, lineno, tok);
        su_vec_free(&defs);
        su_buf_free(&text);
        return false;
      }
      *eq = 0;
      sema_define *d = SU_NEW(a, sema_define);
      d->name = tok;
      d->value = eq + 1;
      su_vec_push(&defs, d);
      su_buf_printf(&text, "%s%s=%s", text.len ? " " : "", tok, eq + 1);
    }
    w->text = su_strdup(a, text.len ? text.data : "(defaults)");
    su_buf_free(&text);
    w->ndefines = defs.len;
    w->defines = SU_NEW_ARRAY(a, sema_define, defs.len ? defs.len : 1);
    for (int i = 0; i < defs.len; i++) w->defines[i] = *(sema_define *)defs.data[i];
    su_vec_free(&defs);
    int same = -1;
    for (int i = 0; i < out->len; i++)
      if (!strcmp(((tuned *)out->data[i])->key, w->key)) same = i;
    if (same >= 0) out->data[same] = w;
    else su_vec_push(out, w);
  }
  if (!out->len) {
    fprintf(stderr, "tkc: error: '%s' names no tuned configuration\n", path);
    return false;
  }
  return true;
}

/* --emit=c --tune=FILE: the module compiled under every configuration of FILE (each over
 * the command line's -D), one file pair that holds them all. */
static int emit_tuned(options *o, su_arena *a, su_source *src, su_diags *d) {
  su_vec ws = {0};
  if (!read_winners(o->tune, a, &ws)) {
    su_vec_free(&ws);
    return 1;
  }
  int n = ws.len;
  const ir_module **ms = SU_NEW_ARRAY(a, const ir_module *, n);
  const char **ptxs = SU_NEW_ARRAY(a, const char *, n), **keys = SU_NEW_ARRAY(a, const char *, n);
  const char **texts = SU_NEW_ARRAY(a, const char *, n);
  int status = 0;
  for (int j = 0; j < n && !status; j++) {
    tuned *w = ws.data[j];
    drv_options opt = o->drv;
    sema_define *defs = SU_NEW_ARRAY(a, sema_define, o->drv.ndefines + w->ndefines + 1);
    for (int i = 0; i < o->drv.ndefines; i++) defs[i] = o->drv.defines[i];
    for (int i = 0; i < w->ndefines; i++) defs[o->drv.ndefines + i] = w->defines[i];
    opt.defines = defs;
    opt.ndefines = o->drv.ndefines + w->ndefines;
    ir_module *m = drv_frontend(a, src, &opt, d);
    if (!m) {
      fprintf(stderr, "tkc: error: in the configuration tuned for '%s' (%s)\n", w->key, w->text);
      status = 1;
      break;
    }
    if (o->specialize) apply_specialize(o->specialize, m, a);
    su_buf ptx = {0};
    if (!drv_optimize(m, &opt, d) || !drv_codegen(m, &opt, CG_PTX, &ptx, d)) status = 1;
    ms[j] = m;
    ptxs[j] = su_strdup(a, su_buf_str(&ptx));
    keys[j] = w->key;
    texts[j] = w->text;
    su_buf_free(&ptx);
  }
  su_vec_free(&ws);
  if (status) return status;
  const char *name = o->output ? o->output : default_output(a, o->input, "");
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  su_buf h = {0}, c = {0};
  if (cg_emit_c_tuned(ms, ptxs, keys, texts, n, base, &h, &c, d)) {
    su_output both[] = {{su_fmt(a, "%s.h", name), h.data, h.len},
                        {su_fmt(a, "%s.c", name), c.data, c.len}};
    if (!write_outputs(o, both, 2)) status = 1;
  } else {
    status = 1;
  }
  su_buf_free(&h);
  su_buf_free(&c);
  return status;
}

/* ptxas -v's findings on the PTX of m: the --resources table (print) and the -Wspill
 * warnings, located at each kernel. Without ptxas: an error for --resources, nothing for
 * the warnings. Returns the exit status. */
static int resources(options *o, su_arena *a, const ir_module *m, su_source *src, const char *ptx,
                     su_diags *d) {
  drv_resources *r;
  int n;
  su_buf why = {0};
  bool ok = drv_ptxas_resources(a, ptx, o->drv.arch, &r, &n, &why);
  if (!ok) {
    if (o->resources) fprintf(stderr, "tkc: error: --resources: %s\n", su_buf_str(&why));
    su_buf_free(&why);
    return o->resources ? 1 : 0;
  }
  su_buf_free(&why);
  if (o->resources)
    printf("%-24s %5s %7s %7s %6s %8s %8s %7s %7s  %s\n", "kernel", "regs", "spill-st", "spill-ld",
           "stack", "smem", "dyn-smem", "threads", "blocks", "occupancy (limited by)");
  for (int i = 0; i < n; i++) {
    if (o->resources)
      printf("%-24s %5d %7d %7d %6d %8d %8d %7d %7d  %.0f%% (%s)\n", r[i].kernel, r[i].regs,
             r[i].spill_stores, r[i].spill_loads, r[i].stack, r[i].smem_static, r[i].smem_dynamic,
             r[i].threads, r[i].blocks_sm, 100 * r[i].occupancy, r[i].limiter);
    int spilled = r[i].spill_stores + r[i].spill_loads;
    if (o->no_spill_warning || spilled <= o->spill_above) continue;
    for (int k = 0; k < m->nfuncs; k++) {
      const ir_func *f = m->funcs[k];
      if (strcmp(f->name, r[i].kernel)) continue;
      su_loc loc = {src, UINT32_MAX, 0, f->loc.line, f->loc.col};
      su_warning(d, loc, "kernel '%s' spills on %s: %d bytes of spill stores and %d of spill loads "
                 "(%d registers per thread) [-Wspill]", f->name, o->drv.arch, r[i].spill_stores,
                 r[i].spill_loads, r[i].regs);
      su_note(d, loc, "smaller tiles or fewer stages need fewer registers (tkc --resources shows them)");
    }
  }
  return 0;
}

static int run(options *o, su_arena *a) {
  su_diags d;
  su_diags_init(&d, a, stderr);
  d.max_errors = 100;
  const char *err = NULL;
  su_source *src = !strcmp(o->input, "-") ? NULL : su_source_read(a, o->input, &err);
  if (!strcmp(o->input, "-")) {
    su_buf b = {0};
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, stdin)) > 0) su_buf_put(&b, tmp, n);
    src = su_source_new(a, "<stdin>", b.data ? b.data : "", b.len);
    su_buf_free(&b);
  }
  if (!src) {
    fprintf(stderr, "tkc: error: cannot read '%s': %s\n", o->input, err);
    return 1;
  }

  su_buf out = {0};
  int status = 0;
  if (o->emit == EMIT_AST) {
    if (drv_is_ir_source(src)) usage_error("--emit=ast needs a .tk input, not '%s'", o->input);
    /* The AST is printed even when checking fails, so users can see what was parsed. */
    su_map *names = su_map_new(a);
    ast_file *f = drv_parse(a, src, names, &d);
    if (f->checkable) {
      ir_module *m = ir_module_new(a, src->name);
      sema_options so = {.defines = o->drv.defines, .ndefines = o->drv.ndefines, .budget = o->drv.budget,
                         .dot_precision = o->drv.dot_precision, .accurate_math = o->drv.accurate_math};
      sema_check(a, f, m, &so, &d);
    }
    if (d.nerrors) return 1;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) su_fatal("open_memstream failed");
    ast_print(mem, f);
    fclose(mem);
    bool ok = write_file(o, o->output ? o->output : "-", text, len);
    free(text);
    return ok ? 0 : 1;
  }

  if (o->tune) return emit_tuned(o, a, src, &d);
  ir_module *m = drv_frontend(a, src, &o->drv, &d);
  if (!m) return 1;
  if (o->specialize) apply_specialize(o->specialize, m, a);
  if (o->emit == EMIT_CHECK) return 0;
  if (o->emit == EMIT_IR) {
    ir_print(&out, m);
  } else {
    /* the roofline counts what the kernel does, before the GPU level says how */
    drv_options opt = o->drv;
    if (o->emit == EMIT_ROOFLINE) opt.arch = NULL;
    if (!drv_optimize(m, &opt, &d)) return 1;
    if (o->emit == EMIT_IR_OPT) {
      ir_print(&out, m);
    } else if (o->emit == EMIT_ROOFLINE) {
      unsigned g[3] = {o->grid[0] ? o->grid[0] : 1, o->grid[1] ? o->grid[1] : 1,
                       o->grid[2] ? o->grid[2] : 1};
      const drv_rl_value **params = SU_NEW_ARRAY(a, const drv_rl_value *, m->nfuncs + 1);
      bool used = false;
      for (int i = 0; i < m->nfuncs; i++) {
        drv_rl_value *v = SU_NEW_ARRAY(a, drv_rl_value, m->funcs[i]->body->nargs + 1);
        su_buf why = {0};
        bool ok = drv_roofline_args(m->funcs[i], o->rl_args, v, &used, &why);
        const char *msg = su_strdup(a, su_buf_str(&why));
        su_buf_free(&why);
        if (!ok) usage_error("--args: %s", msg);
        params[i] = v;
      }
      /* every name must be some kernel's parameter: a typo would silently count once */
      for (const char *p = o->rl_args ? o->rl_args : ""; *p;) {
        size_t len = strcspn(p, ","), n = strcspn(p, "=");
        bool found = false;
        for (int i = 0; i < m->nfuncs && !found; i++)
          for (int k = 0; k < m->funcs[i]->body->nargs && !found; k++) {
            const char *pn = m->funcs[i]->param_names ? m->funcs[i]->param_names[k] : NULL;
            found = pn && strlen(pn) == n && !memcmp(pn, p, n);
          }
        if (!found) usage_error("--args: no kernel has an integer parameter named in '%s'",
                                su_strndup(a, p, len));
        p += len;
        if (*p == ',') p++;
      }
      tg_arch card;
      drv_roofline(stdout, m, tg_on_device(o->drv.arch, o->machine, &card), g, params);
      su_buf_free(&out);
      return 0;
    } else {
      if (!drv_codegen(m, &o->drv, o->emit == EMIT_LLVM ? CG_LLVM_IR : CG_PTX, &out, &d)) status = 1;
      if (!status && o->emit != EMIT_LLVM) status = resources(o, a, m, src, su_buf_str(&out), &d);
      if (o->resources) {
        su_buf_free(&out);
        return status;
      }
      if (!status && o->emit == EMIT_C) {
        const char *name = o->output ? o->output : default_output(a, o->input, "");
        su_buf h = {0}, c = {0};
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        if (cg_emit_c(m, su_buf_str(&out), base, &h, &c, &d)) {
          su_output both[] = {{su_fmt(a, "%s.h", name), h.data, h.len},
                              {su_fmt(a, "%s.c", name), c.data, c.len}};
          if (!write_outputs(o, both, 2)) status = 1;
        } else {
          status = 1;
        }
        su_buf_free(&h);
        su_buf_free(&c);
        su_buf_free(&out);
        return status;
      }
    }
  }
  if (!status) {
    const char *path = o->output ? o->output
                       : o->emit == EMIT_PTX ? default_output(a, o->input, ".ptx")
                                             : "-";
    if (!write_file(o, path, out.data ? out.data : "", out.len)) status = 1;
  }
  su_buf_free(&out);
  return status;
}

int main(int argc, char **argv) {
  su_arena *a = su_arena_new();
  options o = {.spill_above = DRV_SPILL_WARN_BYTES};
  atexit(check_stdout);
  parse_args(&o, a, argc, argv);
  freeze_defines(&o, a);
  int status = run(&o, a);
  su_arena_free(a);
  return status;
}
