#!/bin/sh
# tkdiff --reduce without a GPU: the self-check's injected fault is the failure, and
# --reduce-keep a construct that must survive (a fake bug in it). The reduced kernel must
# still hold the construct, be a few lines where the generated one had many, and still
# compile, run and fail alike when replayed with --source. Usage: reduce.sh TKDIFF
tkdiff=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/log"; exit 1; }
# seed 4 (generators 6 and 7): 21 lines with a dot loop and a where
"$tkdiff" --seed 4 --count 1 --self-check --no-ptx --no-gpu --reduce --reduce-keep 'where(' \
  --write "$tmp/k.tk" >"$tmp/log" 2>&1 || fail "tkdiff --reduce exited $?"
grep -q '^reduce: -O0 against -O3' "$tmp/log" || fail "no reduction reported"
grep -q 'where(' "$tmp/k.tk" || fail "the kept construct was deleted"
body=$(grep -c '^    ' "$tmp/k.tk")
[ "$body" -ge 1 ] && [ "$body" -le 3 ] || fail "the reduced body has $body lines"
orig=$("$tkdiff" --seed 4 --count 1 --print --no-ptx --no-gpu | grep -c '^    ')
[ "$orig" -gt $((body + 10)) ] || fail "the generated body has $orig lines only"
# the reduced source still compiles and runs, and the injected fault is still caught
"$tkdiff" --seed 4 --count 1 --no-ptx --no-gpu --source "$tmp/k.tk" >"$tmp/log" 2>&1 || fail "replay failed"
"$tkdiff" --seed 4 --count 1 --self-check --no-ptx --no-gpu --source "$tmp/k.tk" >"$tmp/log" 2>&1 ||
  fail "replay under --self-check failed"
# a kernel that passes has nothing to reduce
"$tkdiff" --seed 4 --count 1 --no-ptx --no-gpu --reduce >"$tmp/log" 2>&1 || fail "a passing kernel failed"
grep -q '^reduce:' "$tmp/log" && fail "a passing kernel was reduced"
echo "ok: $orig body lines reduced to $body"
