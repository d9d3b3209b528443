/* The KNOWN list: failures tkdiff has found that are understood and recorded but not yet
 * fixed, each with the seed that found it and the text that recognizes it in a failure's
 * report. A known failure is printed as KNOWN with its id and does not fail the run; the
 * entry is to go when the bug is fixed (then tkdiff fails on it again, which is the
 * regression test). docs/decisions.md ("The differential tester") keeps the same list. */
#include "tkdiff.h"

#include <string.h>

/* Empty now (its one entry, LLVM 19's f32 -> f64 extending vector load, is worked around
 * in codegen: tests/diff/extload_v2f32.tk); the sentinel ends it. */
static const td_known KNOWN[] = {
    {NULL, NULL, NULL},
};

const td_known *td_known_match(const char *report) {
  if (!report) return NULL;
  for (size_t i = 0; KNOWN[i].id; i++)
    if (strstr(report, KNOWN[i].match)) return &KNOWN[i];
  return NULL;
}
