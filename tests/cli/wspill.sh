#!/bin/sh
# wspill.sh TKC SAMPLES_DIR — -Wspill's threshold (docs/language.md, "Resources"): -Wspill=N
# takes a byte count (anything else is a usage error, exit 2), --help states the default;
# these need no ptxas. With ptxas, on the unspecialized samples/matmul.tk (both kernels
# spill 140 + 140 bytes, as resources.sh checks): -Wspill=279 warns, -Wspill=280 does not,
# and -Wspill=N after -Wno-spill turns the warning back on.
set -u
tkc=$1 samples=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { fail=1; echo "FAIL: $*"; }
for n in x -1 "" 12k 99999999999; do
  "$tkc" "$samples/vadd.tk" --check "-Wspill=$n" 2> "$tmp/err"
  rc=$?
  [ "$rc" -eq 2 ] || bad "-Wspill=$n: exit $rc, not 2"
  grep -q "tkc: error: -Wspill= expects a number of bytes" "$tmp/err" || bad "-Wspill=$n: $(cat "$tmp/err")"
done
"$tkc" "$samples/vadd.tk" --check -Wspill=0 2> "$tmp/err" || bad "-Wspill=0 refused: $(cat "$tmp/err")"
"$tkc" --help | grep -q "spilling more than 64 bytes" || bad "--help does not state the default threshold"
ptxas=${TK_PTXAS:-${CUDA_HOME:-/usr/local/cuda}/bin/ptxas}
if [ -x "$ptxas" ]; then
  # warns FILE ARGS...: the number of -Wspill warnings tkc prints compiling FILE
  warns() { f=$1; shift; "$tkc" "$f" -o "$tmp/out.ptx" "$@" 2>&1 | grep -c "warning: .* \[-Wspill\]"; }
  [ "$(warns "$samples/matmul.tk" -Wspill=279)" = 2 ] || bad "-Wspill=279 did not warn for 280 spilled bytes"
  [ "$(warns "$samples/matmul.tk" -Wspill=280)" = 0 ] || bad "-Wspill=280 warned for 280 spilled bytes"
  [ "$(warns "$samples/matmul.tk")" = 2 ] || bad "the default (64) did not warn for 280 spilled bytes"
  [ "$(warns "$samples/matmul.tk" -Wno-spill -Wspill=0)" = 2 ] || bad "-Wspill=0 after -Wno-spill did not warn"
  [ "$(warns "$samples/matmul.tk" -Wspill=0 -Wno-spill)" = 0 ] || bad "-Wno-spill after -Wspill=0 warned"
else
  echo "no ptxas at $ptxas: the thresholds against real spills are not checked"
fi
[ "$fail" -eq 0 ] && echo "wspill: ok"
exit "$fail"
