#!/usr/bin/env bash
# tkc --tune=FILE --emit=c: every configuration of a winners file (the format tk_tune's
# record= writes) compiled in, launchers that pick one by key, NAME_config/NAME_cparam;
# the last line of a key wins; bad files and configurations that do not compile are
# errors that say where. The generated C compiles with -Wall -Wextra -Werror -pedantic
# against the toolkit's cuda.h, and its key lookups run (without calling the driver).
# Usage: tune.sh TKC SOURCE_ROOT
set -euo pipefail
tkc=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "tune.sh: FAIL: $*" >&2; exit 1; }
cd "$tmp"
cat > w.txt <<'W'
# kernel vadd, tuned per size
n=1000: BLOCK=128 warps=2
n=4096: BLOCK=512
n=1000: BLOCK=256     # tuned again: this one wins
W
"$tkc" "$src/samples/vadd.tk" --emit=c --tune=w.txt -o tv || fail "tkc --tune failed"
grep -q 'tv_keys\[2\] = {"n=1000", "n=4096"}' tv.c || fail "keys: $(grep tv_keys tv.c | head -1)"
grep -q 'tv_configs\[2\] = {"BLOCK=256", "BLOCK=512"}' tv.c || fail "configs: $(grep tv_configs tv.c | head -1)"
grep -q 'CUresult tv_vadd(const char \*key, unsigned gx' tv.h || fail "no keyed launcher in tv.h"
[ "$(grep -c 'static CUresult tv_t[01]_vadd' tv.c)" = 2 ] || fail "not one launcher per configuration"
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -f "$cuda/include/cuda.h" ]; then
  cat > main.c <<'C'
#include <stdio.h>
#include <string.h>
#include "tv.h"
int main(void) {
  const char *c = tv_config("n=4096"), *b = tv_cparam("n=1000", "BLOCK");
  int ok = c && !strcmp(c, "BLOCK=512") && b && !strcmp(b, "256") && !tv_config("n=7") &&
           !tv_cparam("n=1000", "warps") && !tv_cparam("n=1000", "BLOCKX");
  printf("%s %s\n", c ? c : "-", b ? b : "-");
  return ok ? 0 : 1;
}
C
  cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$cuda/include" -I. -c tv.c -o tv.o ||
    fail "the generated C does not compile"
  # the driver is never called here: a stub per symbol it needs, for the link
  nm -u tv.o | awk '$2 ~ /^cu/ { printf "int %s(void) { return 1; }\n", $2 }' > stubs.c
  cc -std=c11 -I"$cuda/include" -I. main.c tv.o stubs.c -o main || fail "cannot link the test"
  ./main >/dev/null || fail "tv_config/tv_cparam: $(./main)"
fi
# errors
set +e
"$tkc" "$src/samples/vadd.tk" --tune=w.txt >/dev/null 2>err; rc=$?
set -e
[ $rc -ne 0 ] && grep -q -- "--tune goes with --emit=c" err || fail "--tune without --emit=c: rc $rc: $(cat err)"
printf 'n=1: BLOCK=64\nno colon here\n' > bad.txt
set +e
"$tkc" "$src/samples/vadd.tk" --emit=c --tune=bad.txt -o x 2>err; rc=$?
set -e
[ $rc -eq 1 ] && grep -q "bad.txt:2: error" err && [ ! -e x.c ] || fail "a bad line: rc $rc: $(cat err)"
printf 'big: BLOCK=3\n' > nc.txt
set +e
"$tkc" "$src/samples/vadd.tk" --emit=c --tune=nc.txt -o x 2>err; rc=$?
set -e
[ $rc -eq 1 ] && grep -q "tuned for 'big' (BLOCK=3)" err || fail "a configuration that does not compile: rc $rc: $(cat err)"
echo "tune: tkc --tune --emit=c: 2 configurations embedded, picked by key"
