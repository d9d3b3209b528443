#!/bin/sh
# A regression test for PTX that ptxas once rejected: compiles a .tk file with tkc under
# the full divisibility signature for sm_90a (what the JIT compiles for aligned
# arguments) and assembles it; exits 0 when ptxas accepts it, 1 when it does not, 77
# without ptxas. Usage: ptxas_accepts.sh TKC FILE
tkc=$1
src=$2
ptxas=${TK_PTXAS:-${CUDA_HOME:-/usr/local/cuda}/bin/ptxas}
[ -x "$ptxas" ] || { echo "SKIP: no ptxas at $ptxas"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$tkc" "$src" --specialize=all --arch sm_90a -o "$tmp/k.ptx" || { echo "tkc failed"; exit 1; }
if "$ptxas" -arch=sm_90a -o /dev/null "$tmp/k.ptx" >"$tmp/log" 2>&1; then
  echo "ptxas accepts $src"
  exit 0
fi
cat "$tmp/log"
exit 1
