#!/bin/bash
# session 17, call 2: where D128 / D64 attention's loop time goes (ablations), turns at D64, max threshold
. .gpu/env.sh
export PATH=/usr/local/cuda/bin:$PATH
L=/tmp/res; mkdir -p $L
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $L/gpu.txt
run1() { # label exe samples only cfg
  export TK_CACHE_DIR=$(mktemp -d)
  r=$(timeout 40 $2 --samples $3 --configs $5 --only "$4" 2>&1 | grep -E "^tkbench: +BM=" | sed 's/tkbench: *//; s/ programs\/SM=[0-9]*//; s/warps=/w/; s/stages=/s/' | tr '\n' ';')
  echo "$1 c$5 $4 | $r" | tee -a $L/ab.txt
}
A=.exp/abl/tkbench
Q="attention f16 B4 H32 S4096"
for round in 1 2; do
  [ $round = 2 ] && [ $SECONDS -gt 200 ] && break
  for c in 0 3 4 8 5 10 11 12; do
    d=D64; [ $c = 0 ] && d=D128
    run1 "r$round main" $A samples "$Q $d" $c
    case $c in 0|3|4|8) run1 "r$round thresh" $A .exp/abl/thresh "$Q $d" $c;; esac
    case $c in 0|3|5|12) TK_EXP_NOTURNS=1 run1 "r$round noturns" $A samples "$Q $d" $c;; esac
  done
  for v in noexp nomax gemm; do
    TKB_NOCHECK=1 run1 "r$round $v" $A .exp/abl/$v "$Q D128" 0
    TKB_NOCHECK=1 run1 "r$round $v" $A .exp/abl/$v "$Q D64" 3
  done
  tar czf $OUT/res.tgz -C /tmp res
  echo "round $round done at ${SECONDS}s"
done
if [ $SECONDS -lt 260 ]; then
  export TK_CACHE_DIR=$(mktemp -d) PYTHONUNBUFFERED=1
  timeout 120 build/bench/tkbench --only "B4 H32 S4096" > $L/tk_s4k.tsv 2> $L/tk_s4k.err; echo "tkbench rc=$? at ${SECONDS}s"
  grep -c . $L/tk_s4k.tsv
  timeout 90 python3 bench/anchors.py --tk $L/tk_s4k.tsv --no-compile --only "B4 H32 S4096" > $L/table_s4k.md 2> $L/anchors_s4k.err; echo "anchors rc=$? at ${SECONDS}s"
  grep -E "^\| attention" $L/table_s4k.md
fi
tar czf $OUT/res.tgz -C /tmp res
