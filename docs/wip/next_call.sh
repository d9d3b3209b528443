#!/bin/bash
# The first device call of the next session (docs/wip/README.md): GPU correctness of
# rowsum, stream-K attention and latewait (tk-samples), then interleaved A/B rounds of
# old (c1e54cb, before rowsum) / main / main + streamk (configs 12-14) / latewait, then on
# an H200 issue 10's one-tile softmax. Short table last; logs under $OUT.
# bash docs/wip/next_call.sh  (carry [".gpu", ".exp"], after docs/wip/prepare.sh and
# copying build/bench/tkbench, build/samples/tk-samples to .exp/next/tkbench-new,
# tk-samples-new)
set -u
. .gpu/env.sh
E=.exp/next
G=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$G"
for v in ${SAMPLES:-new lw}; do
  TK_CACHE_DIR=$(mktemp -d) timeout 150 $E/tk-samples-$v --gpu --only attention > $OUT/samples-$v.txt 2>&1
  echo "samples $v rc=$?"; grep -E 'FAIL|samples:' $OUT/samples-$v.txt | tail -4
done
echo "t=$SECONDS"
for r in 1 2 3; do
  [ $SECONDS -gt ${ROUNDS_UNTIL:-360} ] && break
  for v in ${VARIANTS:-old new sk lw}; do
    B=$E/tkbench-$v; S=samples; [ $v = old ] && B=$E/tkx && S=$E/old; [ $v = sk ] && B=$E/tkbench-new
    for w in "f16 B4 H32 S4096 D128:0:12" "f16 B4 H32 S4096 D64:4:13,14" "f16 B4 H32 S4096 D64 causal:10:" "bf16 B4 H32 S4096 D64:4:13"; do
      IFS=: read -r wl base skc <<< "$w"
      cfg=$base; [ $v = sk ] && cfg=$skc; [ -z "$cfg" ] && continue
      TK_CACHE_DIR=/tmp/tkc-$v timeout 60 $B --samples $S --only "attention $wl" --configs $cfg >> $OUT/$v.tsv 2>> $OUT/$v.err
    done
  done
  echo "round $r t=$SECONDS"
done
for v in old new sk lw; do echo "== $v"; grep -E "tkbench: attention|tkbench:   " $OUT/$v.err | sed 's/programs\/SM=/pp/; s/stages=2 //; s/tkbench: attention //; s/tkbench:   //; s/B4 H32 S4096 //; s/warps=/w/'; done
if echo "$G" | grep -q H200 && [ $SECONDS -lt ${SOFTMAX_UNTIL:-420} ]; then
  TK_CACHE_DIR=/tmp/tkc-new timeout 90 $E/tkbench-new --samples samples --only "one tile" > $OUT/sm.tsv 2> $OUT/sm.err
  timeout $((590-SECONDS)) python3 bench/anchors.py --tk $OUT/sm.tsv --only "softmax f32" --no-compile > $OUT/sm_anchors.txt 2>&1
  tail -12 $OUT/sm_anchors.txt
fi
echo "end t=$SECONDS"
