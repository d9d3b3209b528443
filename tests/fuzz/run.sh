#!/usr/bin/env bash
# Builds the fuzzers with clang (libFuzzer + ASan + UBSan) and runs them:
#  - fuzz_frontend (.tk through lexer, parser, checker, lowering, verifier) for $1 seconds
#    (default 60) on a seed corpus of the samples and the test programs, then $2 seconds
#    (default 20) more with -len_control=0, so that inputs grow past a few KB at once
#    instead of creeping up from the seeds' sizes;
#  - fuzz_tkir (.tkir through the IR parser, verifier and every pass) and fuzz_codegen
#    (the same, then the GPU back end to PTX) for $2 seconds each, on the .tkir tests and
#    the IR of every sample.
# Any crash fails (exit non-zero); the crashing input is left in build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
ir_secs=${2:-20}
if [ ! -f build-fuzz/build.ninja ]; then
  rm -rf build-fuzz
  CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false -Dwerror=false \
    -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link </dev/null >/dev/null
fi
ninja -C build-fuzz tests/fuzz/fuzz_frontend tests/fuzz/fuzz_tkir tests/fuzz/fuzz_codegen tools/tkc >/dev/null
mkdir -p build-fuzz/corpus build-fuzz/corpus-ir build-fuzz/crashes
for f in samples/*.tk tests/diag/*.tk tests/ir/*.tk; do [ -f "$f" ] && cp "$f" build-fuzz/corpus/; done
find tests/ir -name '*.tkir' -exec cp {} build-fuzz/corpus-ir/ \;
for f in samples/*.tk; do
  ASAN_OPTIONS=detect_leaks=0 build-fuzz/tools/tkc "$f" --emit=ir -O0 \
    > "build-fuzz/corpus-ir/$(basename "$f" .tk).tkir" 2>/dev/null || true
done

# fuzz NAME CORPUS SECONDS [FLAGS...]
fuzz() {
  local name=$1 corpus=$2 t=$3
  shift 3
  UBSAN_OPTIONS=halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
    LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
    "build-fuzz/tests/fuzz/$name" "$corpus" -max_total_time="$t" -max_len=65536 \
    -artifact_prefix=build-fuzz/crashes/ -print_final_stats=1 "$@" 2>"build-fuzz/$name.log" \
    || { tail -n 60 "build-fuzz/$name.log"; echo "fuzz: $name FAILED (input in build-fuzz/crashes/)"; exit 1; }
  grep -E "stat::number_of_executed_units|stat::peak_rss" "build-fuzz/$name.log" || true
  echo "fuzz: $name: no crash in $t s${*:+ ($*)}"
}
fuzz fuzz_frontend build-fuzz/corpus "$secs"
fuzz fuzz_frontend build-fuzz/corpus "$ir_secs" -len_control=0
fuzz fuzz_tkir build-fuzz/corpus-ir "$ir_secs"
fuzz fuzz_codegen build-fuzz/corpus-ir "$ir_secs"
