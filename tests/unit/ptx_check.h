/*
 * ptx_check.h — what the code-generation tests share for looking at PTX: counting
 * occurrences, and running ptxas (from the CUDA toolkit) on a module. Header-only, for
 * inclusion after <cmocka.h> in one test program each.
 * Prefix: pc_.
 */
#ifndef TK_TESTS_PTX_CHECK_H
#define TK_TESTS_PTX_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/support.h"

static const char PC_PTXAS[] = "/usr/local/cuda/bin/ptxas";

/* How many times needle occurs in text (overlapping occurrences counted). */
static inline int pc_count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* Runs `ptxas -v -arch=arch` on ptx and returns its report (the caller frees it), or NULL
 * when ptxas is not installed. Fails the test when ptxas rejects the PTX. */
static inline char *pc_ptxas(const char *ptx, const char *arch) {
  if (access(PC_PTXAS, X_OK) != 0) return NULL;
  char path[] = "/tmp/tk-ptx-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  size_t n = strlen(ptx);
  assert_int_equal(write(fd, ptx, n), (ssize_t)n);
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "%s -v -arch=%s -o /dev/null %s 2>&1", PC_PTXAS, arch, path);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  su_buf report = {0};
  char line[512];
  while (fgets(line, sizeof line, p)) su_buf_puts(&report, line);
  int rc = pclose(p);
  unlink(path);
  if (rc != 0) fail_msg("ptxas rejected the PTX for %s:\n%s\n%s", arch, su_buf_str(&report), ptx);
  su_buf_str(&report);
  return report.data;
}

#endif
