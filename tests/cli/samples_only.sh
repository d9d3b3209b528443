#!/usr/bin/env bash
# tk-samples --only TEXT: only the cases whose name holds TEXT run (on the interpreter
# here), the count says so, and a missing argument is a usage error (exit 2).
# Usage: samples_only.sh TK_SAMPLES SAMPLES_DIR
set -euo pipefail
exe=$1 dir=$2
fail() { echo "samples_only.sh: FAIL: $*" >&2; exit 1; }
out=$(TK_INTERPRET=1 "$exe" --interp --only coscos "$dir") || fail "tk-samples --only coscos failed: $out"
echo "$out" | grep -q '^  coscos ' || fail "coscos did not run: $out"
[ "$(echo "$out" | grep -c ' ok ')" = 1 ] || fail "not exactly one case ran: $out"
echo "$out" | grep -q '^1 samples: 1 passed, 0 failed, 0 skipped' || fail "count: $(echo "$out" | tail -1)"
out=$("$exe" --interp --only no-such-case "$dir") || fail "an empty selection failed"
echo "$out" | grep -q '^0 samples: 0 passed' || fail "empty selection: $(echo "$out" | tail -1)"
set +e
"$exe" --interp --only >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "--only without TEXT: exit $rc, not 2"
echo "samples_only.sh: ok"
