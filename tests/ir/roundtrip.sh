#!/bin/sh
# The text form round-trips: for every sample, the IR tkc prints (-O0 and optimized)
# parses back and prints identically; for every .tkir test file, printing its parse is a
# fixed point (print(parse(print(parse(t)))) == print(parse(t))); tests/ir/reject/ holds
# .tkir the verifier refuses, checked by lit alone.
# usage: roundtrip.sh TKC REPO_ROOT
set -u
tkc=$1 root=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { # name, file holding canonical text
  if "$tkc" "$2" --emit=ir -O0 > "$tmp/again.tkir" 2> "$tmp/err" && cmp -s "$2" "$tmp/again.tkir"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $1"; cat "$tmp/err"; diff "$2" "$tmp/again.tkir" | head -20
  fi
}
for f in "$root"/samples/*.tk; do
  n=$(basename "$f" .tk)
  for mode in ir ir-opt; do
    if "$tkc" "$f" --emit=$mode > "$tmp/$n.$mode.tkir" 2> "$tmp/err"; then
      check "$n ($mode)" "$tmp/$n.$mode.tkir"
    else
      fail=$((fail + 1)); echo "FAIL: $n: tkc --emit=$mode failed"; cat "$tmp/err"
    fi
  done
done
for f in $(find "$root/tests/ir" -name '*.tkir' -not -path '*/reject/*' | sort); do
  n=$(basename "$f")
  if "$tkc" "$f" --emit=ir -O0 > "$tmp/$n" 2> "$tmp/err"; then
    check "$n" "$tmp/$n"
  else
    fail=$((fail + 1)); echo "FAIL: $n does not parse"; cat "$tmp/err"
  fi
done
echo "roundtrip: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
