#!/bin/sh
# Compiles every .tk file of a folder (the samples, or tests/kernels) with tkc for every
# architecture of the target table (tkc --list-archs) and assembles the PTX with ptxas. A
# file that uses what the GPU back end does not support yet (none today) is skipped,
# saying so; any other tkc or ptxas failure fails the test.
# Usage: check.sh TKC DIR [TKC FLAGS...]   (e.g. -fno-fuse; ptxas: $TK_PTXAS, else $CUDA_HOME/bin or /usr/local/cuda/bin)
# Exit: 0 pass, 1 failure, 77 (meson's skip) when ptxas is absent.
set -u
tkc=$1
samples=$2
shift 2
ptxas=${TK_PTXAS:-${CUDA_HOME:-/usr/local/cuda}/bin/ptxas}
if [ ! -x "$ptxas" ]; then
  echo "SKIP: ptxas not found at $ptxas (set TK_PTXAS or CUDA_HOME)"
  exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
archs=$("$tkc" --list-archs) || { echo "FAIL: tkc --list-archs"; exit 1; }
fail=0 pass=0 skip=0 arch_skip=0
for src in "$samples"/*.tk; do
  name=$(basename "$src" .tk)
  for arch in $archs; do
    out="$tmp/$name.$arch.ptx"
    if ! "$tkc" "$src" "$@" --emit=ptx --arch "$arch" -Wno-spill -o "$out" 2>"$tmp/err"; then
      if grep -q "not supported yet by the GPU back end" "$tmp/err"; then
        echo "SKIP $name: $(grep -m1 'not supported yet' "$tmp/err")"
        skip=$((skip + 1))
        break
      fi
      # tiles sized for a larger target: a compile error for this one, as it must be
      if grep -q "bytes of shared memory; $arch allows at most" "$tmp/err"; then
        echo "SKIP $name ($arch): $(grep -m1 'bytes of shared memory' "$tmp/err" | sed 's/.*error: //')"
        arch_skip=$((arch_skip + 1))
        continue
      fi
      echo "FAIL $name ($arch): tkc failed"; cat "$tmp/err"
      fail=$((fail + 1))
      continue
    fi
    if ! "$ptxas" -arch="$arch" -o /dev/null "$out" 2>"$tmp/err"; then
      echo "FAIL $name ($arch): ptxas rejected the PTX"; cat "$tmp/err"
      fail=$((fail + 1))
      continue
    fi
    echo "ok   $name ($arch)"
    pass=$((pass + 1))
  done
done
echo "$pass passed, $fail failed, $skip samples skipped, $arch_skip (sample, arch) pairs over the arch's shared memory"
[ "$fail" -eq 0 ] || exit 1
[ "$pass" -gt 0 ] || { echo "SKIP: no sample compiled"; exit 77; }
exit 0
