#!/usr/bin/env bash
# The binding's GPU checks on the GPU host, which cannot build tk (no LLVM 19 headers,
# re2c, bison) but has a C compiler and its Python's headers: from the repository root,
#   python/tests/gpu-run.sh BUILD [OUT]
# with BUILD a build directory made here (only BUILD/runtime/libtk.so* is read) and .gpu/
# staged (../shared/gpu/stage). Builds the extension there with python/build-here, runs
# the binding's tests (interpreter, CUDA, PyTorch integration) and bench/python_launch.py,
# keeps the logs in OUT (default /tmp/tilek-gpu; the extension goes to /tmp/tilek-py), and
# prints a short table last.
set -uo pipefail
build=${1:?usage: gpu-run.sh BUILD [OUT]} out=${2:-/tmp/tilek-gpu}
mkdir -p "$out"
[ -f .gpu/env.sh ] && . .gpu/env.sh
python/build-here /tmp/tilek-py "$build" >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
export PYTHONPATH=/tmp/tilek-py:$PWD/python/tests TK_CACHE_DIR=/tmp/tilek-cache
status=0
summary=()
for t in interp tune cuda torch tune_gpu samples_torch; do
  python3 "python/tests/test_$t.py" >"$out/test_$t.log" 2>&1
  rc=$?
  case $rc in 0) r=ok ;; 77) r="skipped ($(tail -n1 "$out/test_$t.log"))" ;; *) r="FAILED (rc $rc)"; status=1 ;; esac
  summary+=("python-$t: $r: $(grep -E '^(OK|FAILED)' "$out/test_$t.log" | tail -n1)")
done
python3 bench/python_launch.py >"$out/bench.log" 2>&1 || status=1
for t in interp tune cuda torch tune_gpu samples_torch; do
  grep -E "(FAIL|ERROR):|Error" "$out/test_$t.log" | head -n 20
done
echo "== tilek on $(python3 -c 'import torch; print(torch.cuda.get_device_name())' 2>/dev/null) =="
printf '%s\n' "${summary[@]}"
cat "$out/bench.log"
exit $status
