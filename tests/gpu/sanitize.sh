#!/bin/sh
# tests/gpu/sanitize.sh — every GPU suite under compute-sanitizer, memcheck then racecheck,
# on the GPU host:    tests/gpu/sanitize.sh [BUILD] [LOGDIR]
#
# A suite is clean when compute-sanitizer reports no error (--error-exitcode) and the
# suite itself passes or skips. One line per run and a summary line last ("sanitizer:
# clean, 8 runs" or "sanitizer: N of 8 runs not clean: ..."); exit 1 unless all are clean;
# 77 (skipped) without a device or without compute-sanitizer. The logs go to LOGDIR
# (default /tmp/tk-sanitize-logs). TK_SANITIZE_TIMEOUT bounds each run (seconds, default
# 900): racecheck serializes the kernels it watches, so a suite runs many times slower.
# Reads samples/ and tests/kernels/ relative to the working directory: run it from the
# repository root.
set -u
BUILD=${1:-build}
LOGS=${2:-/tmp/tk-sanitize-logs}
mkdir -p "$LOGS"
cuda=${CUDA_HOME:-/usr/local/cuda}
cs=$(command -v compute-sanitizer || echo "$cuda/bin/compute-sanitizer")
[ -x "$cs" ] || { echo "sanitizer: skipped: no compute-sanitizer (looked in PATH and $cuda/bin)"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "sanitizer: skipped: no CUDA device"; exit 77; }
limit=${TK_SANITIZE_TIMEOUT:-900}

suites="gpu_tests gpu_shapes gpu_dot gpu_math"
runs=0 bad=0 bad_list=
for tool in memcheck racecheck; do
  for s in $suites; do
    exe=$BUILD/tests/gpu/$s
    [ -x "$exe" ] || { echo "sanitizer: $exe is missing: build first"; exit 1; }
    log=$LOGS/$s.$tool.log
    runs=$((runs + 1))
    # the fake driver is not the device's: its tests would only add noise under the tool
    TK_FAKE_LIBCUDA= timeout "$limit" "$cs" --tool "$tool" --error-exitcode 99 \
      --print-limit 20 "$exe" > "$log" 2>&1
    rc=$?
    summary=$(grep -E "^========= (ERROR SUMMARY|RACECHECK SUMMARY)" "$log" | tail -n 1)
    case $rc in
      0|77) echo "sanitizer: $tool $s: clean (exit $rc) ${summary#========= }" ;;
      124) echo "sanitizer: $tool $s: timed out after ${limit} s"; bad=$((bad + 1)); bad_list="$bad_list $tool/$s" ;;
      99) echo "sanitizer: $tool $s: ERRORS ${summary#========= } (log: $log)"
          grep -m 5 -E "^========= (Invalid|Race|Error|Uninitialized|Program hit)" "$log"
          bad=$((bad + 1)); bad_list="$bad_list $tool/$s" ;;
      *) echo "sanitizer: $tool $s: the suite failed (exit $rc; log: $log)"; bad=$((bad + 1)); bad_list="$bad_list $tool/$s" ;;
    esac
  done
done
if [ $bad -eq 0 ]; then
  echo "sanitizer: clean, $runs runs (memcheck and racecheck on $suites)"
  exit 0
fi
echo "sanitizer: $bad of $runs runs not clean:$bad_list"
exit 1
