#!/bin/bash
# The second device call (docs/wip/README.md): decode before / after 7aadb1d (q staged
# after the prologue; old = .exp/next/tkx, c1e54cb, whose decode sample is main's),
# interleaved, two rounds, f16, the configurations the rows pick (0: BN32 s5, 1: BN32 s4,
# 11: BN32 s3 8/SM); then the full S4096 attention sweep and decode with main, and the
# anchors of both in the same call. bash docs/wip/call2.sh (carry [".gpu", ".exp"]).
set -u
. .gpu/env.sh
E=.exp/next
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | head -1
for r in 1 2; do
  for v in old new; do
    B=$E/tkbench-new; [ $v = old ] && B=$E/tkx
    TK_CACHE_DIR=/tmp/tkd-$v timeout 80 $B --samples samples --only "decode f16" --configs 0,1,11 >> $OUT/dec-$v.tsv 2>> $OUT/dec-$v.err
  done
  echo "decode round $r t=$SECONDS"
done
for v in old new; do echo "== $v"; grep -E "^decode" $OUT/dec-$v.tsv | cut -f1-3; done
TK_CACHE_DIR=/tmp/tkd-new timeout 240 $E/tkbench-new --samples samples --only "B4 H32 S4096" > $OUT/att.tsv 2> $OUT/att.err
echo "sweep t=$SECONDS"
timeout 100 python3 bench/anchors.py --tk $OUT/dec-new.tsv --only "decode f16" --no-compile > $OUT/dec-anchors.txt 2>&1
tail -8 $OUT/dec-anchors.txt; echo "t=$SECONDS"
timeout $((590-SECONDS)) python3 bench/anchors.py --tk $OUT/att.tsv --only "H32 S4096" --no-compile > $OUT/anchors.txt 2>&1
tail -24 $OUT/anchors.txt
echo "end t=$SECONDS"
