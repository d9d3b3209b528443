#!/bin/bash
# Builds what docs/wip/next_call.sh runs (here, not on the GPU host): main's release build
# in build/, and in .exp/next/ the tkbench of c1e54cb (before rowsum) with that commit's
# sample, and tkbench / tk-samples with docs/wip/latewait.patch. Then ../shared/gpu/stage
# if .gpu/ is missing. Run from the repository root; ~10 minutes on 2 cores.
set -eu
R=$PWD
. scripts/setup >/dev/null
[ -f build/build.ninja ] || meson setup build --buildtype=release
ninja -C build bench/tkbench samples/tk-samples
mkdir -p .exp/next/old
grep -qx '.exp/' .git/info/exclude || echo '.exp/' >> .git/info/exclude
for v in old lw; do
  rm -rf /tmp/tk-$v && git worktree add -f /tmp/tk-$v HEAD --detach -q
  if [ $v = old ]; then git -C /tmp/tk-$v checkout -q c1e54cb; else git -C /tmp/tk-$v apply "$R/docs/wip/latewait.patch"; fi
  (cd /tmp/tk-$v && meson setup build --buildtype=release >/dev/null && ninja -C build bench/tkbench samples/tk-samples)
done
cp /tmp/tk-old/build/bench/tkbench .exp/next/tkx
git show c1e54cb:samples/attention.tk > .exp/next/old/attention.tk
cp /tmp/tk-lw/build/bench/tkbench .exp/next/tkbench-lw
cp /tmp/tk-lw/build/samples/tk-samples .exp/next/tk-samples-lw
[ -d .gpu ] || ../shared/gpu/stage
echo "ready: run with carry [\".gpu\", \"build\", \".exp\"] (or copy build's two binaries into .exp/next)"
