#!/usr/bin/env python3
"""Host cost of a kernel launch from Python: tk (tilek), Triton and a tiny PyTorch op,
side by side in one process, on the same tiny vector add (so the GPU is never the limit).

Each figure is the median over batches of the wall time of 200 back-to-back launches,
divided by 200, with the GPU drained between batches so the launch queue never fills.
tk is measured as users write it (`k[grid](...)`, the figure the 5 us budget is about),
then broken down: a launcher bound once (`l = k[grid]; l(...)`), the binding alone (a grid
of 0: every argument converted and checked, nothing launched), and libtk alone (tk_launch
in a C loop over arguments converted once: tk_launch plus cuLaunchKernel, no Python).
Results are checked (outputs poisoned first).

Usage: python3 bench/python_launch.py [--batches N]   (needs torch, a GPU; triton optional)

Without a GPU, `--fake-driver build/tests/gpu/libfake_cuda.so` (with
PYTHONPATH=build/python:build/python/tests) runs libtk's CUDA backend on the fake driver
and torch's launch-path surface from the stand-in _tilek_fake_torch (python/tests/
fake_torch.c): the host cost of everything but the driver's own launch, to track it
where there is no GPU. Nothing runs, so nothing is checked and there is no budget.
"""
import argparse
import os
import statistics
import sys
import time

VADD = """
kernel vadd<BLOCK: i32 = 256>(x: *f32, y: *f32, out: *f32, n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
}
"""
N, BLOCK, PER_BATCH = 1024, 256, 200


def per_launch_us(launch, batches, sync):
    for _ in range(3 * PER_BATCH):  # warm-up: compiles, caches, clocks
        launch()
    sync()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(PER_BATCH):
            launch()
        t1 = time.perf_counter_ns()
        sync()
        times.append((t1 - t0) / PER_BATCH / 1000.0)
    return statistics.median(times)


def libtk_us(bound, args, batches, sync):
    """tk_launch alone, in C, over arguments converted once."""
    bound._time(args, PER_BATCH)
    sync()
    times = []
    for _ in range(batches):
        times.append(bound._time(args, PER_BATCH) / 1000.0)
        sync()
    return statistics.median(times)


def tk_rows(tilek, x, y, out, batches, sync):
    k = tilek.compile(VADD, backend="cuda").vadd
    grid = (N // BLOCK,)
    rows = [("tk: k[grid](x, y, out, n)", per_launch_us(lambda: k[grid](x, y, out, N), batches, sync))]
    bound = k[grid]
    rows.append(("tk: bound launcher l(x, y, out, n)", per_launch_us(lambda: bound(x, y, out, N), batches, sync)))
    empty = k[(0,)]
    rows.append(("tk: the binding alone (grid 0: args checked)", per_launch_us(lambda: empty(x, y, out, N), batches, sync)))
    if hasattr(bound, "_time"):  # a binding older than the breakdown has not got it
        rows.append(("tk: libtk alone (tk_launch in C, args once)", libtk_us(bound, (x, y, out, N), batches, sync)))
    return k, grid, rows


def print_rows(title, rows):
    tk_us = rows[0][1]
    print(title)
    print(f"{'launch':58} {'us':>7} {'vs tk':>7}")
    for name, us in rows:
        print(f"{name:58} {us:7.2f} {us / tk_us:6.2f}x")


def fake_main(args):
    os.environ["TK_LIBCUDA"] = os.path.abspath(args.fake_driver)
    try:
        import _tilek_fake_torch as torch
    except ImportError:
        sys.exit("python_launch: --fake-driver needs _tilek_fake_torch on PYTHONPATH (build/python/tests)")
    sys.modules["torch"] = torch
    import tilek

    x, y, out = (torch.Tensor(0x100000 * (i + 1), torch.float32, 0) for i in range(3))
    _, _, rows = tk_rows(tilek, x, y, out, args.batches, lambda: None)

    class Cai:  # a __cuda_array_interface__ object, as CuPy and Numba arrays are
        def __init__(self, ptr):
            self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": "<f4", "shape": (N,),
                                             "version": 3}

    k = tilek.compile(VADD, backend="cuda").vadd
    cx, cy, cout = Cai(0x100000), Cai(0x200000), Cai(0x300000)
    grid = (N // BLOCK,)
    rows.append(("tk: k[grid](...) on __cuda_array_interface__ objects",
                 per_launch_us(lambda: k[grid](cx, cy, cout, N), args.batches, lambda: None)))
    rows.append(("python: an empty lambda (the loop's own cost)",
                 per_launch_us(lambda: None, args.batches, lambda: None)))
    print_rows(f"host cost of one launch from Python on the fake CUDA driver (stand-in torch "
               f"tensors; median of {args.batches} x {PER_BATCH} launches, vadd of {N} f32)", rows)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--fake-driver", metavar="LIBFAKE_CUDA",
                    help="no GPU: run on this fake libcuda (tests/gpu/fake_cuda.c)")
    args = ap.parse_args()
    if args.fake_driver:
        return fake_main(args)
    import torch

    import tilek

    if not torch.cuda.is_available():
        print("python_launch: skipped: no CUDA device")
        return 77
    x, y = torch.rand(N, device="cuda"), torch.rand(N, device="cuda")
    out = torch.empty(N, device="cuda")
    want = x + y

    def checked(name, launch):
        out.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        if not torch.equal(out, want):
            sys.exit(f"python_launch: {name} computed a wrong result")

    sync = torch.cuda.synchronize
    k, grid, rows = tk_rows(tilek, x, y, out, args.batches, sync)
    checked("tk", lambda: k[grid](x, y, out, N))

    try:
        import triton
        import triton.language as tl

        @triton.jit
        def tvadd(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask) + tl.load(y_ptr + offs, mask), mask)

        tl_launch = lambda: tvadd[grid](x, y, out, N, BLOCK=BLOCK)  # noqa: E731
        checked("triton", tl_launch)
        rows.append((f"triton {triton.__version__}: k[grid](x, y, out, n, BLOCK=)", per_launch_us(tl_launch, args.batches, sync)))
    except ImportError:
        rows.append(("triton: not installed", float("nan")))

    torch_launch = lambda: torch.add(x, y, out=out)  # noqa: E731
    checked("torch", torch_launch)
    rows.append((f"torch {torch.__version__}: torch.add(x, y, out=out)", per_launch_us(torch_launch, args.batches, sync)))

    tk_us = rows[0][1]
    print_rows(f"host cost of one launch from Python ({torch.cuda.get_device_name()}, median of "
               f"{args.batches} x {PER_BATCH} launches, vadd of {N} f32)", rows)
    print(f"tk launch host cost {tk_us:.2f} us: {'within' if tk_us <= 5.0 else 'OVER'} the 5 us budget")
    return 0 if tk_us <= 5.0 else 1


if __name__ == "__main__":
    sys.exit(main())
