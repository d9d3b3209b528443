#!/bin/sh
# tkc --resources and -Wspill (docs/language.md, "Resources"), against ptxas -v itself:
# the table's registers, spills and shared memory are ptxas's numbers for each kernel, the
# dynamic shared memory codegen's; the unspecialized matmul (which spills: see spills.sh)
# gets the -Wspill warning at its kernel, -Wno-spill silences it, a kernel that does not
# spill gets none. Skips (exit 77) without ptxas.   usage: resources.sh TKC SAMPLES_DIR
set -u
tkc=$1 samples=$2
ptxas=${TK_PTXAS:-${CUDA_HOME:-/usr/local/cuda}/bin/ptxas}
[ -x "$ptxas" ] || { echo "skipped: no ptxas at $ptxas"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { fail=1; echo "FAIL: $*"; }
"$tkc" "$samples/matmul.tk" --resources > "$tmp/table" 2> "$tmp/err" || bad "--resources failed: $(cat "$tmp/err")"
"$tkc" "$samples/matmul.tk" -Wno-spill -o "$tmp/m.ptx" 2> "$tmp/quiet" || bad "tkc failed"
"$ptxas" -v -arch=sm_90a "$tmp/m.ptx" -o /dev/null > "$tmp/v" 2>&1 || bad "ptxas failed"
for k in matmul matmul_bf16; do
  info=$(grep -A3 "Compiling entry function '$k'" "$tmp/v" | tr '\n' ' ')
  regs=$(echo "$info" | sed -n 's/.*Used \([0-9]*\) registers.*/\1/p')
  st=$(echo "$info" | sed -n 's/.* \([0-9]*\) bytes spill stores.*/\1/p')
  dyn=$(sed -n "s|^// .tk.shared $k ||p" "$tmp/m.ptx")
  row=$(grep "^$k " "$tmp/table")
  [ -n "$row" ] || { bad "no row for $k"; continue; }
  set -- $row
  [ "$2" = "$regs" ] || bad "$k: $2 registers in the table, ptxas says $regs"
  [ "$3" = "$st" ] || bad "$k: $3 bytes of spill stores in the table, ptxas says $st"
  [ "$7" = "$dyn" ] || bad "$k: $7 bytes of dynamic shared memory in the table, codegen's note says $dyn"
  [ "$8" = 256 ] || bad "$k: $8 threads in the table, not 256"
  case "$row" in *"%"*) ;; *) bad "$k: no occupancy: $row" ;; esac
  grep -q "matmul.tk:[0-9]*:1: warning: kernel '$k' spills on sm_90a: $st bytes of spill stores" "$tmp/err" ||
    bad "$k: no -Wspill warning: $(cat "$tmp/err")"
done
[ -s "$tmp/quiet" ] && bad "-Wno-spill still warned: $(cat "$tmp/quiet")"
"$tkc" "$samples/vadd.tk" -o "$tmp/v.ptx" 2> "$tmp/verr" || bad "vadd failed"
[ -s "$tmp/verr" ] && bad "vadd warned: $(cat "$tmp/verr")"
TK_PTXAS=/nonexistent "$tkc" "$samples/vadd.tk" --resources > /dev/null 2> "$tmp/none" && bad "--resources without ptxas succeeded"
grep -q "tkc: error: --resources: no ptxas" "$tmp/none" || bad "without ptxas: $(cat "$tmp/none")"
[ "$fail" -eq 0 ] && echo "resources: ok"
exit "$fail"
