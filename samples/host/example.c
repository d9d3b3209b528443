/* example.c — the complete libtk example of docs/api.md: JIT-compile a kernel from a
 * string, run it on whatever backend the context picks (the GPU, or the interpreter with
 * TK_INTERPRET=1 or when there is no GPU), check the result, and show what a failure
 * looks like.
 *
 *   cc example.c $(pkg-config --cflags --libs tk) -o example && TK_INTERPRET=1 ./example
 * (after `meson install`; tests/cli/install.sh builds it so against a staged install)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tk.h"

static const char *source =
    "// y = a * x + y, BLOCK elements per program\n"
    "kernel saxpy<BLOCK: i32 = 256>(x: *f32, y: *f32, a: f32, n: i32) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    let vx = load(x + offs, mask);\n"
    "    let vy = load(y + offs, mask);\n"
    "    store(y + offs, a * vx + vy, mask);\n"
    "}\n";

/* Prints the failure and exits: every tk_* call that fails leaves a readable message. */
static void check(tk_context *ctx, tk_status s, const char *what) {
  if (s == TK_OK) return;
  fprintf(stderr, "%s failed: %s\n%s\n", what, tk_status_name(s), tk_last_error(ctx));
  tk_context_destroy(ctx);
  exit(1);
}

int main(void) {
  tk_context *ctx = NULL;
  check(NULL, tk_context_create(&ctx, NULL), "tk_context_create");
  printf("backend: %s\n", tk_context_backend(ctx) == TK_BACKEND_CUDA ? "cuda" : "interpreter");

  /* Compile with BLOCK overridden, as `tkc -D BLOCK=128` would. */
  tk_define defs[] = {{"BLOCK", "128"}};
  tk_compile_options opts = {.defines = defs, .ndefines = 1};
  tk_module *mod = NULL;
  check(ctx, tk_module_compile(ctx, &mod, source, strlen(source),
                               "saxpy.tk", &opts), "tk_module_compile");
  tk_kernel *saxpy = NULL;
  check(ctx, tk_module_get_kernel(mod, "saxpy", &saxpy), "tk_module_get_kernel");

  /* A ragged size: the last program is partly masked. */
  enum { N = 1000, BLOCK = 128 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 1.0f;
  tk_devptr dx, dy;
  check(ctx, tk_malloc(ctx, &dx, N * sizeof *x), "tk_malloc");
  check(ctx, tk_malloc(ctx, &dy, N * sizeof *y), "tk_malloc");
  check(ctx, tk_memcpy_htod(ctx, dx, x, N * sizeof *x), "tk_memcpy_htod");
  check(ctx, tk_memcpy_htod(ctx, dy, y, N * sizeof *y), "tk_memcpy_htod");

  tk_arg args[] = {tk_arg_ptr(dx), tk_arg_ptr(dy), tk_arg_f32(2.0f), tk_arg_i32(N)};
  tk_grid grid = {(N + BLOCK - 1) / BLOCK, 1, 1};
  check(ctx, tk_launch(saxpy, grid, NULL, args, 4), "tk_launch");
  check(ctx, tk_memcpy_dtoh(ctx, y, dy, N * sizeof *y), "tk_memcpy_dtoh");

  int bad = 0;
  for (int i = 0; i < N; i++) bad += fabsf(y[i] - (2.0f * (float)i + 1.0f)) > 1e-6f;
  printf("saxpy of %d elements: %s\n", N, bad ? "WRONG" : "ok");

  /* A mistake is reported, not a crash: here the last argument has the wrong type. */
  args[3] = tk_arg_f32(1000.0f);
  tk_status s = tk_launch(saxpy, grid, NULL, args, 4);
  printf("wrong argument: %s: %s\n", tk_status_name(s), tk_last_error(ctx));

  free(x);
  free(y);
  tk_context_destroy(ctx); /* frees the module and the buffers too */
  return bad || s != TK_ERR_ARGS;
}
