#!/bin/bash
# Builds what docs/wip/call2.sh runs (here, not on the GPU host): main's release build,
# copied to .exp/next/tkbench-new and tk-samples-new, and (once) the tkbench of c1e54cb
# as .exp/next/tkx, the "old" side of the decode A/B. Then ../shared/gpu/stage if .gpu/
# is missing. Run from the repository root.
set -eu
. scripts/setup >/dev/null
[ -f build/build.ninja ] || meson setup build --buildtype=release
ninja -C build bench/tkbench samples/tk-samples
mkdir -p .exp/next
grep -qx '.exp/' .git/info/exclude || echo '.exp/' >> .git/info/exclude
if [ ! -x .exp/next/tkx ]; then
  rm -rf /tmp/tk-old && git worktree add -f /tmp/tk-old c1e54cb --detach -q
  (cd /tmp/tk-old && meson setup build --buildtype=release >/dev/null && ninja -C build bench/tkbench)
  cp /tmp/tk-old/build/bench/tkbench .exp/next/tkx
fi
cp build/bench/tkbench .exp/next/tkbench-new
cp build/samples/tk-samples .exp/next/tk-samples-new
[ -d .gpu ] || ../shared/gpu/stage
echo 'ready: bash docs/wip/call2.sh with carry [".gpu", ".exp"]'
