#!/bin/sh
# The benchmarked kernels, compiled at their benchmarked sizes, must not spill (and the
# blocks of rows that fusion cuts along their last axis, at widths that spill unfused): ptxas -v
# must report 0 bytes of spill stores and loads for each (a stack frame alone, e.g. from
# libdevice's argument reduction, is reported but allowed), both unspecialized (tkc's
# default) and with --specialize=all (what the JIT runs for aligned, divisible arguments).
# Skips (exit 77)
# without ptxas.   usage: spills.sh TKC SAMPLES_DIR
set -u
tkc=$1 samples=$2
ptxas=${CUDA_HOME:-/usr/local/cuda}/bin/ptxas
[ -x "$ptxas" ] || { echo "skipped: no ptxas at $ptxas"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
# sample  kernel  defines...
list=$(cat <<'LIST'
vadd.tk vadd -D BLOCK=1024
coscos.tk coscos -D BLOCK=4096
gelu.tk gelu_tanh -D BLOCK=2048
softmax.tk softmax -D BLOCK=1024
softmax.tk softmax -D BLOCK=4096
softmax.tk softmax -D BLOCK=8192
softmax_online.tk softmax_online -D BLOCK=4096
layernorm.tk layernorm -D BLOCK=4096
layernorm_f32.tk layernorm_f32 -D BLOCK=4096
rmsnorm.tk rmsnorm -D BLOCK=4096
layernorm_rows.tk layernorm_rows -D BLOCK=16384
layernorm_rows.tk layernorm_rows -D BLOCK=65536
softmax_rows.tk softmax_rows -D BLOCK=16384
attention_decode.tk decode_split
attention_decode.tk decode_split -D T=bf16
attention_decode.tk decode_split -D stages=4
attention_decode.tk decode_split -D BN=64 -D stages=2 -D warps=8
attention_decode.tk decode_split -D BN=64 -D stages=3 -D warps=8
attention_decode.tk decode_split -D T=bf16 -D BN=128 -D stages=2 -D warps=8
attention_decode.tk decode_combine
attention_decode.tk decode_combine -D T=bf16
LIST
)
# The tensor-core kernels are benchmarked on aligned arguments, which the JIT runs
# specialized (TMA rings, warp specialization); their unaligned variant (cp.async of
# single elements, 256 threads sharing the register file) is correct but spills.
spec_only=$(cat <<'LIST'
matmul.tk matmul -D stages=4
matmul.tk matmul -D stages=3
matmul.tk matmul -D BK=32 -D stages=6
matmul.tk matmul -D BM=256 -D BN=128 -D stages=3
matmul.tk matmul -D BN=128 -D stages=4
matmul.tk matmul_bf16 -D stages=3
matmul_bias_gelu.tk matmul_bias_gelu -D stages=4
matmul_bias_gelu.tk matmul_bias_gelu -D stages=3
matmul_bias_gelu.tk matmul_bias_gelu -D BK=32 -D stages=6
matmul_bias_gelu.tk matmul_bias_gelu -D BM=256 -D BN=128 -D stages=3
attention.tk attention -D D=128
attention.tk attention -D D=128 -D CAUSAL=true
attention.tk attention -D D=64
attention.tk attention -D D=64 -D CAUSAL=true
attention.tk attention -D D=64 -D BN=64
attention.tk attention -D T=bf16
attention.tk attention -D T=bf16 -D D=64 -D CAUSAL=true
attention.tk attention -D D=64 -D CAUSAL=true -D BM=64 -D BN=64 -D warps=4 -D programs_per_sm=3
attention.tk attention -D T=bf16 -D D=64 -D CAUSAL=true -D BM=64 -D BN=64 -D warps=4 -D programs_per_sm=3
attention.tk attention -D D=64 -D CAUSAL=true -D BM=64 -D BN=128 -D warps=4 -D programs_per_sm=2
LIST
)
for spec in "" --specialize=all; do
entries=$list
[ -n "$spec" ] && entries="$list
$spec_only"
while read -r file kernel defs; do
  [ -n "$file" ] || continue
  name="$kernel $defs $spec"
  # shellcheck disable=SC2086
  if ! "$tkc" "$samples/$file" -Wno-spill -o "$tmp/k.ptx" $defs $spec 2> "$tmp/err"; then
    fail=$((fail + 1)); echo "FAIL: $name: tkc failed"; cat "$tmp/err"; continue
  fi
  "$ptxas" -v -arch=sm_90a "$tmp/k.ptx" -o "$tmp/k.cubin" > "$tmp/v" 2>&1
  info=$(grep -A3 "Compiling entry function '$kernel'" "$tmp/v" | tr '\n' ' ')
  if grep -q "error" "$tmp/v"; then
    fail=$((fail + 1)); echo "FAIL: $name: ptxas rejected it"; cat "$tmp/v"
  elif echo "$info" | grep -Eq "[1-9][0-9]* bytes spill"; then
    fail=$((fail + 1)); echo "FAIL: $name spills: $info"
  else
    pass=$((pass + 1))
    echo "ok: $name: $(echo "$info" | grep -Eo 'Used [0-9]+ registers|[0-9]+ bytes stack frame' | tr '\n' ' ')"
  fi
done <<EOF
$entries
EOF
done
echo "spills: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
