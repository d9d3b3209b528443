/*
 * gpu_fault.c — a sticky device fault on the real driver (issue 13, item 6): a kernel
 * that stores to an unmapped address faults; the call that sees it says that a kernel
 * faulted and that the CUDA context is now unusable, every later call on the context says
 * it is dead, and destroying it is fine. A program of its own, because the fault poisons
 * the device's primary context for the whole process (and CUDA forbids fork after
 * cuInit). Exits 77 without a device.
 */
#include <stdio.h>
#include <string.h>

#include "tk.h"

static int failed(const char *what, tk_status s, const char *msg) {
  fprintf(stderr, "gpu-fault: %s: %s: %s\n", what, tk_status_name(s), msg);
  return 1;
}

int main(void) {
  tk_context *ctx = NULL;
  tk_status s = tk_context_create(&ctx, &(tk_context_options){TK_BACKEND_CUDA, 0});
  if (s == TK_ERR_NO_DEVICE) {
    printf("skipped: no CUDA device (%s)\n", tk_last_error(NULL));
    return 77;
  }
  if (s != TK_OK) return failed("tk_context_create", s, tk_last_error(NULL));
  const char *src = "kernel wild(p: *f32) {\n    store(p + arange(0, 32), zeros<f32>(32));\n}\n";
  tk_module *m = NULL;
  tk_kernel *k = NULL;
  if ((s = tk_module_compile(ctx, &m, src, strlen(src), "wild.tk", NULL)) != TK_OK)
    return failed("tk_module_compile", s, tk_last_error(ctx));
  if ((s = tk_module_get_kernel(m, "wild", &k)) != TK_OK)
    return failed("tk_module_get_kernel", s, tk_last_error(ctx));
  tk_arg a[] = {tk_arg_ptr(0x10)}; /* not tk's: passed through, and unmapped */
  s = tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 1);
  if (s == TK_OK) s = tk_synchronize(ctx);
  if (s != TK_ERR_RUNTIME || !strstr(tk_last_error(ctx), "a kernel faulted") ||
      !strstr(tk_last_error(ctx), "unusable"))
    return failed("the faulting kernel", s, tk_last_error(ctx));
  printf("gpu-fault: the fault: %s\n", tk_last_error(ctx));
  tk_devptr p = 0;
  s = tk_malloc(ctx, &p, 64);
  if (s != TK_ERR_RUNTIME || !strstr(tk_last_error(ctx), "the CUDA context is dead"))
    return failed("tk_malloc after the fault", s, tk_last_error(ctx));
  s = tk_launch(k, (tk_grid){1, 1, 1}, NULL, a, 1);
  if (s != TK_ERR_RUNTIME || !strstr(tk_last_error(ctx), "the CUDA context is dead"))
    return failed("tk_launch after the fault", s, tk_last_error(ctx));
  printf("gpu-fault: later calls: %s\n", tk_last_error(ctx));
  tk_context_destroy(ctx);
  printf("gpu-fault: ok\n");
  return 0;
}
