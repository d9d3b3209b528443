#!/usr/bin/env python3
"""Host cost of a kernel launch from Python: tk (tilek), Triton and a tiny PyTorch op,
side by side in one process, on the same tiny vector add (so the GPU is never the limit).

Each figure is the median over batches of the wall time of 200 back-to-back launches,
divided by 200, with the GPU drained between batches so the launch queue never fills.
tk is measured twice: `k[grid](...)` as users write it, and a launcher bound once
(`l = k[grid]; l(...)`). Results are checked (outputs poisoned first).

Usage: python3 bench/python_launch.py [--batches N]   (needs torch, a GPU; triton optional)
"""
import argparse
import statistics
import sys
import time

import torch

import tilek

VADD = """
kernel vadd<BLOCK: i32 = 256>(x: *f32, y: *f32, out: *f32, n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
}
"""
N, BLOCK, PER_BATCH = 1024, 256, 200


def per_launch_us(launch, batches):
    for _ in range(3 * PER_BATCH):  # warm-up: compiles, caches, clocks
        launch()
    torch.cuda.synchronize()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(PER_BATCH):
            launch()
        t1 = time.perf_counter_ns()
        torch.cuda.synchronize()
        times.append((t1 - t0) / PER_BATCH / 1000.0)
    return statistics.median(times)


def checked(name, launch, out, want):
    out.fill_(float("nan"))
    launch()
    torch.cuda.synchronize()
    if not torch.equal(out, want):
        sys.exit(f"python_launch: {name} computed a wrong result")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=200)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("python_launch: skipped: no CUDA device")
        return 77
    x, y = torch.rand(N, device="cuda"), torch.rand(N, device="cuda")
    out = torch.empty(N, device="cuda")
    want = x + y
    grid = (N // BLOCK,)
    rows = []

    k = tilek.compile(VADD, backend="cuda").vadd
    checked("tk", lambda: k[grid](x, y, out, N), out, want)
    rows.append(("tk: k[grid](x, y, out, n)", per_launch_us(lambda: k[grid](x, y, out, N), args.batches)))
    bound = k[grid]
    rows.append(("tk: bound launcher l(x, y, out, n)", per_launch_us(lambda: bound(x, y, out, N), args.batches)))

    try:
        import triton
        import triton.language as tl

        @triton.jit
        def tvadd(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask) + tl.load(y_ptr + offs, mask), mask)

        tl_launch = lambda: tvadd[grid](x, y, out, N, BLOCK=BLOCK)  # noqa: E731
        checked("triton", tl_launch, out, want)
        rows.append((f"triton {triton.__version__}: k[grid](x, y, out, n, BLOCK=)", per_launch_us(tl_launch, args.batches)))
    except ImportError:
        rows.append(("triton: not installed", float("nan")))

    torch_launch = lambda: torch.add(x, y, out=out)  # noqa: E731
    checked("torch", torch_launch, out, want)
    rows.append((f"torch {torch.__version__}: torch.add(x, y, out=out)", per_launch_us(torch_launch, args.batches)))

    tk_us = rows[0][1]
    print(f"host cost of one launch from Python ({torch.cuda.get_device_name()}, median of "
          f"{args.batches} x {PER_BATCH} launches, vadd of {N} f32)")
    print(f"{'launch':58} {'us':>7} {'vs tk':>7}")
    for name, us in rows:
        print(f"{name:58} {us:7.2f} {us / tk_us:6.2f}x")
    print(f"tk launch host cost {tk_us:.2f} us: {'within' if tk_us <= 5.0 else 'OVER'} the 5 us budget")
    return 0 if tk_us <= 5.0 else 1


if __name__ == "__main__":
    sys.exit(main())
