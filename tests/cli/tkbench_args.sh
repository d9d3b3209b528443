#!/usr/bin/env bash
# tkbench's arguments: --configs takes decimal indices separated by commas; anything else
# is a usage error (exit 2, the list named) rather than a sweep that silently tries nothing.
# Parsing comes before the device is looked for, so this runs on any machine.
# Usage: tkbench_args.sh TKBENCH
set -uo pipefail
exe=$1
fail() { echo "tkbench_args.sh: FAIL: $*" >&2; exit 1; }
for bad in x '3,' ',1' '1,,2' '' '-1'; do
  err=$("$exe" --configs "$bad" --only no-such-workload 2>&1 >/dev/null)
  rc=$?
  [ "$rc" = 2 ] || fail "--configs '$bad': exit $rc, not 2"
  echo "$err" | grep -q "got '$bad'" || fail "--configs '$bad': the message does not name it: $err"
done
"$exe" --configs 0,3,12 --only no-such-workload >/dev/null 2>&1 || fail "--configs 0,3,12 was refused"
"$exe" --configs >/dev/null 2>&1
[ $? = 2 ] || fail "--configs without a list: not a usage error"
echo "tkbench_args.sh: ok"
