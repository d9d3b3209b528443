#!/bin/sh
# Ahead-of-time use: tkc --emit=c for samples/vadd.tk, compiled with cc and linked with the
# CUDA driver only, run on the GPU (tests/gpu/aot_vadd.c checks the result). Skips (77)
# where there is no driver library to link.   usage: aot.sh TKC REPO_ROOT
set -u
tkc=$1 root=$2
cuda=${CUDA_HOME:-/usr/local/cuda}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$tkc" "$root/samples/vadd.tk" --emit=c -o "$tmp/vadd" || exit 1
lib=$(for d in /usr/lib/x86_64-linux-gnu /usr/local/nvidia/lib64 /usr/lib64 "$cuda/lib64/stubs"; do
        [ -e "$d/libcuda.so" ] || [ -e "$d/libcuda.so.1" ] && { echo "$d"; break; }; done)
[ -n "$lib" ] || { echo "skipped: no libcuda to link"; exit 77; }
${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$cuda/include" -I"$tmp" \
  "$root/tests/gpu/aot_vadd.c" "$tmp/vadd.c" -L"$lib" -l:libcuda.so.1 -o "$tmp/aot_vadd" \
  2>/dev/null || ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$cuda/include" -I"$tmp" \
  "$root/tests/gpu/aot_vadd.c" "$tmp/vadd.c" -L"$lib" -lcuda -o "$tmp/aot_vadd" || exit 1
"$tmp/aot_vadd"
rc=$?
# a link against the stub library builds but cannot run: no device here
[ $rc -eq 0 ] || { [ "$lib" = "$cuda/lib64/stubs" ] && { echo "skipped: no CUDA driver"; exit 77; }; }
exit $rc
