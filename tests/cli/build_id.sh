#!/bin/sh
# build_id.sh PYTHON SCRIPT — runtime/build_id.py, the JIT cache's build identity: any edit
# to a source libtk is built from, or a new one, or another LLVM, changes the id; an edit
# elsewhere (tools/, tests/) does not; an unchanged tree leaves the header untouched (so
# meson, which runs it on every build, rebuilds nothing).
set -u
python=$1
script=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
tree=$tmp/src
mkdir -p "$tree/codegen" "$tree/runtime" "$tree/tools"
echo "project('t', 'c')" >"$tree/meson.build"
echo "int f(void) { return 1; }" >"$tree/codegen/emit.c"
echo "int main(void) { return 0; }" >"$tree/tools/tkc.c"
# id [LLVM]: the RT_BUILD_ID the script writes for the tree now
id() {
  "$python" "$script" "$tmp/build_id.h" "$tree" "${1:-19.1.7}" || bad "the script failed"
  sed -n 's/^#define RT_BUILD_ID "\(.*\)"$/\1/p' "$tmp/build_id.h"
}
a=$(id)
[ ${#a} -eq 64 ] || bad "no 64-digit id: '$a'"
touch -d '2000-01-01' "$tmp/build_id.h"
[ "$(id)" = "$a" ] || bad "the same tree gave another id"
[ -n "$(find "$tmp/build_id.h" ! -newermt '2000-01-02')" ] || bad "an unchanged id rewrote the header"
echo "int f(void) { return 2; }" >"$tree/codegen/emit.c"
b=$(id)
[ "$b" != "$a" ] || bad "an edited source kept the id"
echo "/* new */" >"$tree/runtime/new.h"
c=$(id)
[ "$c" != "$b" ] || bad "a new source kept the id"
echo "int main(void) { return 1; }" >"$tree/tools/tkc.c"
[ "$(id)" = "$c" ] || bad "an edit to tools/ changed the id"
[ "$(id 19.1.8)" != "$c" ] || bad "another LLVM kept the id"
[ "$fail" -eq 0 ] && echo "build id: every case passed"
exit "$fail"
