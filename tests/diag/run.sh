#!/bin/sh
# run.sh TKC DIR — the diagnostics suite: checks every DIR/*.tk with `TKC FILE --check`.
#
# Each file starts with a header of comment lines:
#   // expect: LINE:COL: error: MESSAGE   the exact first line tkc must print is
#                                         FILE:LINE:COL: error: MESSAGE, and it exits 1
#   // expect: tk: error: MESSAGE         the same for a diagnostic without a location
#   // expect: LINE:COL: warning: MESSAGE the same for a warning, and tkc exits 0
#   // expect: ok                         the file is correct: exit 0, no output at all
#   // expect-note: LINE:COL: note: MESSAGE  (optional) this line, FILE: prefixed, is among
#                                         the diagnostics (the hint that follows the error)
#   // expect-count: N                    (optional) exactly N errors are reported
#   // args: ...                          (optional) extra arguments, e.g. -D NAME=VALUE
#   // xfail: REASON                      (optional) tkc is known not to meet the
#                                         expectation yet: a mismatch is reported as XFAIL
#                                         and tolerated, a match as XPASS and a failure (so
#                                         the marker is removed as soon as tkc is fixed)
# A crash (a signal, an internal error) is always a failure: bad input must be reported,
# never fatal. Exits 0 when every file passes, 1 otherwise, printing one line per failure.

if [ $# -ne 2 ]; then
  echo "usage: $0 TKC DIR" >&2
  exit 2
fi
tkc=$1
dir=$2
pass=0
fail=0
xfail=0
tmp=${TMPDIR:-/tmp}/tk-diag.$$
trap 'rm -f "$tmp"' EXIT INT TERM

# header FILE KEY — the value of the first "// KEY: value" line of FILE ("" if none).
header() {
  sed -n "s|^// $2: ||p" "$1" | head -n 1
}

# failed FILE WHY — counts a mismatch, unless FILE is marked xfail.
failed() {
  if [ -n "$why_xfail" ]; then
    echo "XFAIL $1: $why_xfail"
    xfail=$((xfail + 1))
  else
    echo "FAIL $1: $2"
    fail=$((fail + 1))
  fi
}

# passed FILE — counts a match; one that was expected to fail is an error.
passed() {
  if [ -n "$why_xfail" ]; then
    echo "XPASS $1: remove its '// xfail:' line"
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
}

for f in "$dir"/*.tk; do
  [ -e "$f" ] || continue
  expect=$(header "$f" expect)
  count=$(header "$f" expect-count)
  note=$(header "$f" expect-note)
  args=$(header "$f" args)
  why_xfail=$(header "$f" xfail)
  if [ -z "$expect" ]; then
    failed "$f" "no '// expect:' line"
    continue
  fi
  # $args is split on purpose: it holds separate options.
  # shellcheck disable=SC2086
  NO_COLOR=1 "$tkc" "$f" --check $args >"$tmp" 2>&1
  status=$?
  first=$(head -n 1 "$tmp")
  if [ "$status" -gt 1 ] || grep -q -e "internal error" -e "Sanitizer" -e "runtime error:" "$tmp"; then
    echo "FAIL $f: tkc crashed (exit $status): $first"  # never tolerated, even if xfail
    fail=$((fail + 1))
    continue
  fi
  if [ "$expect" = ok ]; then
    if [ "$status" -ne 0 ] || [ -s "$tmp" ]; then
      failed "$f" "expected a clean check, got exit $status: $first"
      continue
    fi
    passed "$f"
    continue
  fi
  case $expect in
    [0-9]*) want="$f:$expect" ;;
    *) want=$expect ;;
  esac
  case $expect in *": warning: "*) want_status=0 ;; *) want_status=1 ;; esac
  if [ "$status" -ne "$want_status" ]; then
    failed "$f" "expected exit $want_status, got $status"
    continue
  fi
  if [ "$first" != "$want" ]; then
    failed "$f" "first diagnostic
    expected: $want
    got:      $first"
    continue
  fi
  if [ -n "$note" ] && ! grep -qxF "$f:$note" "$tmp"; then
    failed "$f" "no diagnostic line
    $f:$note"
    continue
  fi
  if [ -n "$count" ]; then
    n=$(grep -c '^[^ ].*: error: ' "$tmp")  # headlines; quoted source lines start with ' ' 
    if [ "$n" -ne "$count" ]; then
      failed "$f" "expected $count errors, got $n"
      continue
    fi
  fi
  passed "$f"
done

echo "diag: $pass passed, $xfail expected failures, $fail failed"
[ "$fail" -eq 0 ]
