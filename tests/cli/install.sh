#!/usr/bin/env bash
# The installed library, as a C user meets it: `meson install` into a temporary prefix puts
# tkc, libtk.so (with its soname), tk.h and tk.pc there; libtk.so exports the tk_* API and
# nothing else; samples/host/example.c builds against the installed copy with
# `pkg-config --cflags --libs tk` and runs (on the interpreter).
# Usage: install.sh BUILD_DIR SOURCE_ROOT
set -euo pipefail
build=$1 src=$2
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
fail() { echo "install.sh: FAIL: $*" >&2; exit 1; }

# --destdir keeps the configured prefix inside the staging folder; --no-rebuild because
# meson test has built everything already (and another ninja may be running).
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
prefix=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
libdir=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
root=$dest$prefix
lib=$dest$libdir

[ -x "$root/bin/tkc" ] || fail "tkc was not installed in $prefix/bin"
[ -f "$root/include/tk.h" ] || fail "tk.h was not installed in $prefix/include"
[ -f "$lib/pkgconfig/tk.pc" ] || fail "tk.pc was not installed in $libdir/pkgconfig"
so=$(ls "$lib"/libtk.so.*.*.* 2>/dev/null | head -n1)
[ -n "$so" ] || fail "libtk.so.X.Y.Z was not installed in $libdir"
soname=$(objdump -p "$so" | awk '$1 == "SONAME" { print $2 }')
[ -n "$soname" ] || fail "$so has no soname"
[ -L "$lib/$soname" ] || fail "no $soname link next to $so"
[ -L "$lib/libtk.so" ] || fail "no libtk.so development link"

# Exactly the API: every defined dynamic symbol is a tk_ function of tk.h, and every
# function tk.h declares is there.
# (the linker's own absolute markers, __bss_start, _edata and _end, are on every object)
exported=$(nm -D --defined-only "$so" | awk '$3 !~ /^(__bss_start|_edata|_end)$/ { print $3 }' | sort)
stray=$(grep -v '^tk_' <<<"$exported" || true)
[ -z "$stray" ] || fail "libtk.so exports symbols outside the tk_* API: $(echo $stray | head -c 400)"
declared=$(grep -oE '^TK_API [^(]*\btk_[a-z0-9_]+\(' "$src/include/tk.h" |
  grep -oE 'tk_[a-z0-9_]+\($' | tr -d '(' | sort)
[ "$exported" = "$declared" ] ||
  fail "libtk.so's exports differ from tk.h's API: $(diff <(echo "$declared") <(echo "$exported") | tr '\n' ' ')"

# A user's build: the flags come from pkg-config alone (the sysroot variable maps the
# staged prefix), the program runs against the installed library.
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
flags=$(pkg-config --cflags --libs tk) || fail "pkg-config --cflags --libs tk failed"
[ "$(pkg-config --variable=tkc tk)" = "$dest$prefix/bin/tkc" ] ||
  fail "tk.pc's tkc variable is '$(pkg-config --variable=tkc tk)', not $prefix/bin/tkc"
# (a sanitized libtk needs a sanitized program: the runtime must come first)
san=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"))')
sanflags=
[ "$san" = none ] || sanflags=-fsanitize=$san
cc -std=c11 -Wall -Wextra -Werror $sanflags "$src/samples/host/example.c" -o "$dest/example" $flags -lm
out=$(TK_INTERPRET=1 LD_LIBRARY_PATH=$lib "$dest/example") || fail "example failed: $out"
grep -q "saxpy of 1000 elements: ok" <<<"$out" || fail "example's output is wrong: $out"
grep -q "wrong argument: TK_ERR_ARGS" <<<"$out" || fail "example did not report the bad argument: $out"
# and it did load the installed copy
loaded=$(TK_INTERPRET=1 LD_LIBRARY_PATH=$lib LD_DEBUG=libs "$dest/example" 2>&1 >/dev/null)
grep -q "calling init: $lib/libtk.so" <<<"$loaded" || fail "example did not load the installed libtk.so"
echo "install: $prefix: tkc, $soname ($(wc -l <<<"$exported") symbols, all tk_*), tk.h, tk.pc; example.c built with pkg-config and ran"
