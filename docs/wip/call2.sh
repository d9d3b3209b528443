#!/bin/bash
# The next device call (docs/wip/README.md), after docs/wip/prepare.sh; carry [".gpu",
# ".exp"]; ~9 minutes, each step behind a time check. In order: tk-samples' attention
# cases; stream-K configuration 14 alone and after 13 (the workspace fix, 175e315);
# decode's split rows before / after 7aadb1d (old = .exp/next/tkx, c1e54cb); the full
# S4096 attention sweep with the anchors in the same run; on an H200, issue 10's one-tile
# softmax with its anchors.
set -u
. .gpu/env.sh
E=.exp/next
G=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$G"
TK_CACHE_DIR=$(mktemp -d) timeout 120 $E/tk-samples-new --gpu --only attention > $OUT/samples.txt 2>&1
echo "samples rc=$?"; grep -E 'FAIL|samples:' $OUT/samples.txt | tail -3
for c in 14 13,14; do
  TK_CACHE_DIR=/tmp/tkn timeout 60 $E/tkbench-new --samples samples --only "attention f16 B4 H32 S4096 D64" --configs $c 2>&1 >/dev/null | grep "tkbench:   " | sed "s/^/cfg $c: /"
done
echo "t=$SECONDS"
for r in 1 2; do
  for v in old new; do
    B=$E/tkbench-new; [ $v = old ] && B=$E/tkx
    for w in "decode f16 B1" "decode f16 B4"; do
      TK_CACHE_DIR=/tmp/tkd-$v timeout 50 $B --samples samples --only "$w" >> $OUT/dec-$v.tsv 2>> $OUT/dec-$v.err
    done
  done
  echo "decode round $r t=$SECONDS"
  [ $SECONDS -gt 200 ] && break
done
for v in old new; do echo "== $v"; awk -F'\t' '$4 == "us" && $2 ~ /^decode f16 B[0-9]+ Hq32 Hkv8 S[0-9]+ D128$/ {print $2, $3}' $OUT/dec-$v.tsv; done
TK_CACHE_DIR=/tmp/tkn timeout 200 $E/tkbench-new --samples samples --only "B4 H32 S4096" > $OUT/att.tsv 2> $OUT/att.err
echo "sweep t=$SECONDS"
timeout $((480-SECONDS)) python3 bench/anchors.py --tk $OUT/att.tsv --only "H32 S4096" --no-compile > $OUT/anchors.txt 2>&1
tail -24 $OUT/anchors.txt; echo "t=$SECONDS"
if echo "$G" | grep -q H200 && [ $SECONDS -lt 470 ]; then
  TK_CACHE_DIR=/tmp/tkn timeout 60 $E/tkbench-new --samples samples --only "one tile" > $OUT/sm.tsv 2> $OUT/sm.err
  timeout $((590-SECONDS)) python3 bench/anchors.py --tk $OUT/sm.tsv --only "softmax f32" --no-compile > $OUT/sm_anchors.txt 2>&1
  tail -12 $OUT/sm_anchors.txt
fi
echo "end t=$SECONDS"
