#!/bin/sh
# bench/run.sh — the one command for the GPU host, from the repository root:
#
#     . .gpu/env.sh && bench/run.sh
#
# Builds nothing. Runs the GPU test suite (the CUDA backend against the interpreter), then
# tkbench (tk's timings) and bench/anchors.py (Triton, PyTorch eager and torch.compile on
# the same workloads, plus copy bandwidth), and prints one markdown table last. Logs go
# to $OUT/bench-logs (or /tmp/tk-bench-logs); with $OUT set the table is also written to
# $OUT/RESULTS.md.
#
# After the tests, tests/gpu/sanitize.sh runs every GPU suite under compute-sanitizer
# (memcheck and racecheck; TK_BENCH_NO_SANITIZE=1 skips it, as TK_BENCH_NO_TESTS=1 does).
# Environment: BUILD (default build), TK_BENCH_NO_TESTS=1 skips the tests,
# TK_BENCH_NO_COMPILE=1 skips torch.compile (its compiles take minutes), TK_BENCH_ONLY=TEXT
# runs only the workloads whose name contains TEXT (e.g. "matmul").
set -u

BUILD=${BUILD:-build}
LOGS=${OUT:+$OUT/bench-logs}
LOGS=${LOGS:-/tmp/tk-bench-logs}
mkdir -p "$LOGS"

for exe in "$BUILD/bench/tkbench" "$BUILD/tests/gpu/gpu_tests" "$BUILD/tools/tkc"; do
  [ -x "$exe" ] || { echo "run.sh: $exe is missing: build first (ninja -C $BUILD)"; exit 1; }
done

# The fake driver lets gpu_tests check the backend's host side as well.
case $BUILD in /*) TK_FAKE_LIBCUDA=$BUILD ;; *) TK_FAKE_LIBCUDA=$PWD/$BUILD ;; esac
TK_FAKE_LIBCUDA=$TK_FAKE_LIBCUDA/tests/gpu/libfake_cuda.so
export TK_FAKE_LIBCUDA

# The JIT cache and the tests' cache entries must not come from an earlier build.
TK_CACHE_DIR=$(mktemp -d /tmp/tk-bench-cache.XXXXXX)
export TK_CACHE_DIR

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader \
  > "$LOGS/gpu.txt" 2>&1

tests_line="gpu_tests: not run"
if [ "${TK_BENCH_NO_TESTS:-0}" != 1 ]; then
  "$BUILD/tests/gpu/gpu_tests" > "$LOGS/gpu_tests.log" 2>&1
  rc=$?
  # cmocka's per-group summaries: "[  PASSED  ] 3 test(s)." and the like
  count() { grep -E "^\[  $1 *\] [0-9]+ test" "$LOGS/gpu_tests.log" |
    sed -E 's/.*\] ([0-9]+) test.*/\1/' | awk '{ n += $1 } END { print n + 0 }'; }
  passed=$(count PASSED); failed=$(count FAILED); skipped=$(count SKIPPED)
  tests_line="gpu_tests: exit $rc, $passed passed, $failed failed, $skipped skipped"
  grep -E '^\[  (FAILED|ERROR)' "$LOGS/gpu_tests.log" | head -20
fi
echo "$tests_line"

sanitize_line="sanitizer: not run"
if [ "${TK_BENCH_NO_TESTS:-0}" != 1 ] && [ "${TK_BENCH_NO_SANITIZE:-0}" != 1 ]; then
  sanitize_line=$(tests/gpu/sanitize.sh "$BUILD" "$LOGS/sanitize" 2>&1 | tee "$LOGS/sanitize.log" | tail -n 1)
  grep -E "ERRORS|timed out|failed" "$LOGS/sanitize.log" | head -20
fi
echo "$sanitize_line"

only=
[ -n "${TK_BENCH_ONLY:-}" ] && only="--only $TK_BENCH_ONLY"
"$BUILD/bench/tkbench" --tkc "$BUILD/tools/tkc" --samples samples $only \
  > "$LOGS/tk.tsv" 2> "$LOGS/tkbench.log"
echo "tkbench: exit $? ($(grep -c . "$LOGS/tk.tsv") figures)"

compile_flag=
[ "${TK_BENCH_NO_COMPILE:-0}" = 1 ] && compile_flag=--no-compile
python3 bench/anchors.py --tk "$LOGS/tk.tsv" $compile_flag $only 2> "$LOGS/anchors.log"
rc=$?
if [ $rc != 0 ]; then
  echo "anchors.py failed ($rc):"; tail -20 "$LOGS/anchors.log"
  echo "tk alone:"; cat "$LOGS/tk.tsv"
fi

echo
echo "GPU: $(cat "$LOGS/gpu.txt")"
echo "$tests_line"
echo "$sanitize_line"
if [ -n "${OUT:-}" ] && [ -f "$OUT/RESULTS.md" ]; then
  printf '\n%s\n\n%s\n\nGPU: %s\n' "$tests_line" "$sanitize_line" "$(cat "$LOGS/gpu.txt")" >> "$OUT/RESULTS.md"
fi
rm -rf "$TK_CACHE_DIR"
