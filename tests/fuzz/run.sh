#!/usr/bin/env bash
# Builds the front-end fuzzer with clang (libFuzzer + ASan + UBSan) and runs it for $1
# seconds (default 60) on a seed corpus made from the samples and the test programs.
# Any crash fails (exit non-zero); the crashing input is left in build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
if [ ! -f build-fuzz/build.ninja ]; then
  rm -rf build-fuzz
  CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false -Dwerror=false \
    -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link </dev/null >/dev/null
fi
ninja -C build-fuzz tests/fuzz/fuzz_frontend >/dev/null
corpus=build-fuzz/corpus
mkdir -p "$corpus" build-fuzz/crashes
for f in samples/*.tk tests/diag/*.tk tests/ir/*.tk; do [ -f "$f" ] && cp "$f" "$corpus/"; done
UBSAN_OPTIONS=halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
  build-fuzz/tests/fuzz/fuzz_frontend "$corpus" -max_total_time="$secs" -max_len=65536 \
  -artifact_prefix=build-fuzz/crashes/ -print_final_stats=1 2>build-fuzz/fuzz.log \
  || { tail -n 60 build-fuzz/fuzz.log; echo "fuzz: FAILED (input in build-fuzz/crashes/)"; exit 1; }
grep -E "stat::number_of_executed_units|stat::peak_rss" build-fuzz/fuzz.log || true
echo "fuzz: no crash in ${secs} s"
