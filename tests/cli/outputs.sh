#!/bin/sh
# outputs.sh TKC SAMPLES_DIR — how tkc writes -o (support.h, su_write_outputs): a device,
# a FIFO or '-' in place; a regular file replaced atomically, keeping its mode; a symbolic
# link written through to its target; never an input; --emit=c both files or neither; a
# failed write said and exit 1. Nothing here depends on running as root, and no tkc, even
# one that replaces devices (as root, an old one did), can damage the machine: devices are
# reached through links (a tkc that replaced links replaces the link, not the device), and
# /dev/null itself is written only once the link case has passed.
set -u
case $1 in /*) tkc=$1 ;; *) tkc=$PWD/$1 ;; esac
src=$(cd "$2" && pwd)/vadd.tk
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
cd "$tmp" || exit 1
umask 022

bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
# run ARGS...: tkc with a time limit (a FIFO open waits for its reader); status in $rc.
run() { timeout 60 "$tkc" "$@" 2>err; rc=$?; }
# no_temporaries DIR: nothing but what the test made is left in DIR.
no_temporaries() {
  left=$(ls -A "$1" | grep '^\.' || true)
  [ -z "$left" ] || bad "temporary files left in $1: $left"
}
mode() { stat -c %a "$1"; }

# A new file: 0666 less the umask. An existing one: replaced (a new inode), mode kept.
run "$src" -o new.ptx
[ "$rc" -eq 0 ] && grep -q '\.entry vadd' new.ptx || bad "new.ptx not written (exit $rc)"
[ "$(mode new.ptx)" = 644 ] || bad "new.ptx has mode $(mode new.ptx), want 644"
echo old >old.ptx
chmod 600 old.ptx
ino=$(stat -c %i old.ptx)
run "$src" -o old.ptx
grep -q '\.entry vadd' old.ptx || bad "old.ptx not replaced"
[ "$(mode old.ptx)" = 600 ] || bad "old.ptx lost its mode: $(mode old.ptx)"
[ "$(stat -c %i old.ptx)" != "$ino" ] || bad "old.ptx was rewritten in place, not replaced"
no_temporaries .

# A FIFO: its reader gets the bytes, and it stays a FIFO.
mkfifo fifo
timeout 60 cat fifo >from-fifo &
reader=$!
run "$src" --emit=ir -o fifo
wait "$reader"
[ -p fifo ] || bad "the FIFO was replaced by a $(stat -c %F fifo)"
[ "$rc" -eq 0 ] && grep -q 'kernel @vadd' from-fifo || bad "the FIFO's reader got no IR (exit $rc)"

# A link to a device: written through, the link stays; then the device itself.
ln -s /dev/null to-null
run "$src" -o to-null
if [ "$rc" -ne 0 ] || [ ! -L to-null ]; then
  bad "-o LINK-TO-/dev/null: exit $rc, the link is now a $(stat -c %F to-null)"
else
  run "$src" -o /dev/null
  [ "$rc" -eq 0 ] || bad "-o /dev/null: exit $rc: $(cat err)"
  [ -c /dev/null ] || bad "/dev/null is no longer a character device"
fi
no_temporaries .

# Links to regular files: relative to their own directory, chained, dangling.
mkdir a b
echo old >b/real.ptx
ln -s ../b/real.ptx a/link1
ln -s link1 a/link2
run "$src" -o a/link2
[ -L a/link1 ] && [ -L a/link2 ] || bad "a link on the way was replaced"
grep -q '\.entry vadd' b/real.ptx || bad "the link's target was not written (exit $rc)"
no_temporaries a
no_temporaries b
ln -s b/made.ptx dangling
run "$src" -o dangling
[ -L dangling ] && grep -q '\.entry vadd' b/made.ptx || bad "-o DANGLING-LINK did not create its target"

# Never the input: by name, through a hard link, through a symbolic link.
cp "$src" in.tk
ln in.tk hard.tk
ln -s in.tk soft.tk
for out in in.tk ./in.tk hard.tk soft.tk "$tmp/in.tk"; do
  run in.tk --emit=ir -o "$out"
  [ "$rc" -eq 1 ] && grep -q "it is the input file" err || bad "-o $out over its input: exit $rc"
  cmp -s in.tk "$src" || { bad "-o $out changed the input"; cp "$src" in.tk; }
done

# A failed write is an error, to a file or to standard output (also through stdio). The
# file case goes through a link, so that no tkc can replace /dev/full itself.
if [ -c /dev/full ]; then
  ln -s /dev/full to-full
  run "$src" -o to-full
  [ "$rc" -eq 1 ] && grep -q "cannot write 'to-full'" err || bad "-o LINK-TO-/dev/full: exit $rc"
  for args in "-o -" "--emit=ir" "--roofline" "--help"; do
    # $args is split on purpose.
    # shellcheck disable=SC2086
    timeout 60 "$tkc" "$src" $args >/dev/full 2>err
    rc=$?
    [ "$rc" -ne 0 ] && grep -q "cannot write to standard output" err ||
      bad "$args >/dev/full: exit $rc, $(cat err)"
  done
else
  echo "note: no /dev/full here, the failed-write cases are not run"
fi

# --emit=c: both files or neither, whichever of the two cannot be written.
mkdir k.c
run "$src" --emit=c -o k
[ "$rc" -eq 1 ] && [ ! -e k.h ] || bad "--emit=c with k.c a directory: exit $rc, k.h written"
echo old >k.h
run "$src" --emit=c -o k
[ "$rc" -eq 1 ] && [ "$(cat k.h)" = old ] || bad "--emit=c with k.c a directory: k.h replaced"
rmdir k.c
rm k.h
mkdir k.h
run "$src" --emit=c -o k
[ "$rc" -eq 1 ] && [ ! -e k.c ] || bad "--emit=c with k.h a directory: exit $rc, k.c written"
rmdir k.h
run "$src" --emit=c -o k
[ "$rc" -eq 0 ] && grep -q 'k_load' k.h && grep -q 'k_vadd' k.c || bad "--emit=c: exit $rc"
no_temporaries .

# As root (the CI's user), once more as an ordinary user where one can run this tkc: the
# two must behave the same.
cd / || exit 1
if [ "$(id -u)" -eq 0 ] && [ -z "${TK_OUTPUTS_AS_USER:-}" ] && command -v runuser >/dev/null &&
   runuser -u nobody -- test -x "$tkc" -a -r "$src" 2>/dev/null; then
  TK_OUTPUTS_AS_USER=1 runuser -u nobody -- sh "$self" "$tkc" "$(dirname "$src")" ||
    bad "as the user nobody (above)"
fi

if [ "$fail" -ne 0 ]; then
  echo "$fail output case(s) failed$([ -n "${TK_OUTPUTS_AS_USER:-}" ] && echo ' as nobody')"
  exit 1
fi
echo "every output case passed as $(id -un)"
