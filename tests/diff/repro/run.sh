#!/bin/sh
# Variants of two kernels the second GPU run found wrong (generator 2, seeds 1009134 and
# 1014142; docs/decisions.md, "The differential tester"), each keeping its seed's
# signature, buffers and arguments (tkdiff --source): *-a0/-b0 are the generated kernels,
# the others cut them down. Run on the GPU host from the repository root:
#   . .gpu/env.sh && tests/diff/repro/run.sh build/tools/tkdiff/tkdiff
# A variant that still differs there localizes the bug; one that passes clears its ops.
tkdiff=${1:-build/tools/tkdiff/tkdiff}
dir=$(dirname "$0")
for f in "$dir"/s*.tk; do
  seed=$(basename "$f" | sed 's/^s\([0-9]*\)-.*/\1/')
  echo "== $(basename "$f")"
  "$tkdiff" --seed "$seed" --count 1 --no-ptx --require-gpu --source "$f" 2>&1 | grep -v '^tkdiff (gen' | grep -v replay | head -5
done
