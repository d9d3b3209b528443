#!/bin/sh
# The tensor-core paths of the matmul and attention samples, per target: on sm_90a (specialized, as the
# JIT compiles aligned arguments) wgmma fed by TMA box copies, with TMA-store epilogues at
# 3 stages; on sm_90a without the alignment facts, wgmma fed by cp.async (of single
# elements: no vector is provably aligned); on sm_80 and
# sm_90, mma.sync fed by cp.async. ptxas accepts each. Skips (exit 77) without ptxas.
# usage: tensor_cores.sh TKC SAMPLES_DIR
set -u
tkc=$1 samples=$2
ptxas=${CUDA_HOME:-/usr/local/cuda}/bin/ptxas
[ -x "$ptxas" ] || { echo "skipped: no ptxas at $ptxas"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
# sample arch flags | instructions that must appear (space separated) | that must not
check() {
  file=$1 arch=$2 flags=$3 want=$4 not=$5
  name="$file --arch $arch $flags"
  # shellcheck disable=SC2086
  if ! "$tkc" "$samples/$file" --arch "$arch" -Wno-spill $flags -o "$tmp/k.ptx" 2> "$tmp/err"; then
    fail=$((fail + 1)); echo "FAIL: $name: tkc failed"; cat "$tmp/err"; return
  fi
  for w in $want; do
    if ! grep -q "$w" "$tmp/k.ptx"; then fail=$((fail + 1)); echo "FAIL: $name: no $w"; return; fi
  done
  for w in $not; do
    if grep -q "$w" "$tmp/k.ptx"; then fail=$((fail + 1)); echo "FAIL: $name: $w"; return; fi
  done
  if ! "$ptxas" -arch="$arch" "$tmp/k.ptx" -o "$tmp/k.cubin" 2> "$tmp/v"; then
    fail=$((fail + 1)); echo "FAIL: $name: ptxas rejected it"; cat "$tmp/v"; return
  fi
  pass=$((pass + 1)); echo "ok: $name"
}
tma="wgmma.mma_async cp.async.bulk.tensor mbarrier.try_wait.parity setmaxnreg"
check matmul.tk sm_90a "--specialize=all" "$tma" "mma.sync"
check matmul.tk sm_90a "--specialize=all -D stages=3" "$tma cp.async.bulk.tensor.2d.global.shared" ""
check matmul_bias_gelu.tk sm_90a "--specialize=all -D stages=3" "$tma cp.async.bulk.tensor.2d.global.shared" ""
check matmul.tk sm_90a "" "wgmma.mma_async" "cp.async.bulk.tensor"
# (sm_80's 163 KB per block hold two stages of the default tiles, not four)
check matmul.tk sm_80 "--specialize=all -D stages=2" "cp.async.cg mma.sync.aligned.m16n8k16" "wgmma"
check matmul.tk sm_90 "--specialize=all" "cp.async.cg mma.sync.aligned.m16n8k16" "wgmma"
check matmul.tk sm_80 "-D stages=2" "mma.sync.aligned.m16n8k16" "wgmma"
# K as one logical tile: kloop makes it the loop above, then the same TMA ring and wgmma
check matmul_logical.tk sm_90a "--specialize=all" "$tma" "mma.sync"
check matmul_logical.tk sm_90 "--specialize=all" "cp.async.cg mma.sync.aligned.m16n8k16" "wgmma"
check matmul_logical.tk sm_80 "--specialize=all -D stages=2" "cp.async.cg mma.sync.aligned.m16n8k16" "wgmma"
# fp8 with B given N x K: wgmma's own e4m3 form from the TMA ring (fp8dot); sm_90 converts
# the tiles to f16 after the load for mma.sync (no ring: the loads feed the conversions)
check matmul_fp8.tk sm_90a "--specialize=all" "$tma wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3" "mma.sync"
check matmul_fp8.tk sm_90 "--specialize=all -D stages=2" "mma.sync.aligned.m16n8k16" "wgmma"
# attention: K and V through the TMA ring, Q K^T and P V on wgmma with P from registers
# (the A operand as four b32 registers), O through a TMA store
# (Q K^T's zero accumulator is no input: its first k step has scale-d false)
check attention.tk sm_90a "--specialize=all" "$tma },.{%r cp.async.bulk.tensor.4d.global.shared setp.ne.b32.p,.0,.0 ex2.approx.ftz.f32" "mma.sync"
check attention.tk sm_90a "--specialize=all -D D=64 -D CAUSAL=true" "$tma },.{%r" "mma.sync"
check attention.tk sm_90a "--specialize=all -D T=bf16" "$tma },.{%r f32.bf16.bf16" "mma.sync"
echo "tensor cores: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
