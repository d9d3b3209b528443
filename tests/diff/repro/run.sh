#!/bin/sh
# Variants of two kernels the second GPU run found wrong (generator 2 = commit 2f1fc9d, and the
# same kernels in generator 3; seeds 1009134 and
# 1014142; docs/decisions.md, "The differential tester"), each keeping its seed's
# signature, buffers and arguments (tkdiff --source): *-a0/-b0 are the generated kernels,
# the others cut them down. Run on the GPU host from the repository root:
#   . .gpu/env.sh && tests/diff/repro/run.sh build/tools/tkdiff/tkdiff
# A variant that still differs there localizes the bug; one that passes clears its ops.
# s1012222-c* and s1009129-d* isolate the negation of a loaded integer feeding min/max
# or a max reduction (c4/d3 are the controls without it: on the H200 the failing kernels
# gave what those compute). It was ptxas's (negations folded into VIMNMX3 and dropped:
# docs/decisions.md, "The differential tester's GPU findings"); with codegen/ptx_fixup.c
# every variant here should pass. Each kernel can also be cut down on the device itself:
#   build/tools/tkdiff/tkdiff --seed S --count 1 --require-gpu --no-ptx --source FILE --reduce
tkdiff=${1:-build/tools/tkdiff/tkdiff}
dir=$(dirname "$0")
for f in "$dir"/s*.tk; do
  seed=$(basename "$f" | sed 's/^s\([0-9]*\)-.*/\1/')
  echo "== $(basename "$f")"
  "$tkdiff" --seed "$seed" --count 1 --no-ptx --require-gpu --source "$f" 2>&1 | grep -v '^tkdiff (gen' | grep -v replay | head -5
done
