#!/usr/bin/env bash
# `pip install ./python` as the README's Debian machine runs it: into a fresh virtual
# environment (Debian's own Python is externally managed), offline (--no-build-isolation
# uses the installed setuptools), against this build's libtk (TK_BUILD_DIR); then the
# installed package compiles and runs a kernel on the interpreter from another folder.
# Usage: pip_install.sh PYTHON SOURCE_ROOT BUILD_DIR
set -euo pipefail
py=$1 src=$2 build=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$py" -c 'import setuptools, pip, venv' 2>/dev/null; then
  echo "skipped: $py has no pip, setuptools or venv (scripts/setup installs them)"; exit 77
fi
cp -r "$src/python" "$tmp/src" # pip builds in place: keep the tree clean
rm -rf "$tmp/src/build" "$tmp/src/"*.egg-info
"$py" -m venv --system-site-packages "$tmp/venv"
TK_BUILD_DIR=$build "$tmp/venv/bin/pip" install --quiet --no-build-isolation --no-deps \
  --no-index "$tmp/src" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; exit 1; }
cd "$tmp"
TK_INTERPRET=1 "$tmp/venv/bin/python" - <<'PY'
import array, tilek
assert "site-packages" in tilek.__file__, tilek.__file__
k = tilek.compile("""kernel twice<B: i32 = 64>(x: *f32, n: i32) {
    let o = program_id(0) * B + arange(0, B);
    store(x + o, load(x + o, o < n) * 2.0, o < n);
}""").twice
x = array.array("f", range(100))
k[(tilek.cdiv(100, 64),)](x, 100)
assert list(x) == [2.0 * i for i in range(100)], list(x)
print("pip install ./python: ok,", tilek.__file__)
PY
