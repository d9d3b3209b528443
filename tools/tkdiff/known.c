/* The KNOWN list: failures tkdiff has found that are understood and recorded but not yet
 * fixed, each with the seed that found it and the text that recognizes it in a failure's
 * report. A known failure is printed as KNOWN with its id and does not fail the run; the
 * entry is to go when the bug is fixed (then tkdiff fails on it again, which is the
 * regression test). docs/decisions.md ("The differential tester") keeps the same list. */
#include "tkdiff.h"

#include <string.h>

static const td_known KNOWN[] = {
    {"llvm-nvptx-extload-v2f32",
     "LLVM 19's NVPTX back end folds an f32 -> f64 fpext into a vectorized shared-memory "
     "load, `ld.shared.v2.f32 {%fd1, %fd2}`, which ptxas rejects; tk emits a scalar load and "
     "an fpext (codegen/relayout.c through_smem, then the cast). Seen with f64 <= trans(f32) "
     "under the full divisibility signature (tkc --specialize=all; seeds 24792, 11472)",
     "Arguments mismatch for instruction 'ld'"},
};

const td_known *td_known_match(const char *report) {
  if (!report) return NULL;
  for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++)
    if (strstr(report, KNOWN[i].match)) return &KNOWN[i];
  return NULL;
}
