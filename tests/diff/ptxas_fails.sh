#!/bin/sh
# The KNOWN llvm-nvptx-extload-v2f32 case, for a should_fail test: compiles a .tk file
# with tkc under the full divisibility signature for sm_90a and assembles it. Exits 1 only
# when ptxas rejects it with the known message (what the test expects today); 0 for any
# other outcome (it assembles, or something else broke), which meson then reports as an
# unexpected pass; 77 without ptxas. Usage: ptxas_fails.sh TKC FILE
tkc=$1
src=$2
ptxas=${TK_PTXAS:-${CUDA_HOME:-/usr/local/cuda}/bin/ptxas}
[ -x "$ptxas" ] || { echo "SKIP: no ptxas at $ptxas"; exit 77; }
tmp=$(mktemp -d) || exit 0
trap 'rm -rf "$tmp"' EXIT
"$tkc" "$src" --specialize=all --arch sm_90a -o "$tmp/k.ptx" || { echo "tkc failed: not the known failure"; exit 0; }
if "$ptxas" -arch=sm_90a -o /dev/null "$tmp/k.ptx" >"$tmp/log" 2>&1; then
  echo "ptxas accepts it now: drop the KNOWN entry"
  exit 0
fi
cat "$tmp/log"
grep -q "Arguments mismatch for instruction 'ld'" "$tmp/log" && exit 1
echo "ptxas failed otherwise: not the known failure"
exit 0
