#!/usr/bin/env python3
"""tk's randint, rand and randn against Triton's tl.randint, tl.rand and tl.randn.

For the GPU host, which has Triton (not run by meson: CI has neither a GPU nor Triton).
gpu_math writes the device's outputs of its random cases (tests/kernels/random.tk, the
seeds and offsets of tests/kernels/math_cases.c); this script computes the same with
Triton and compares: randint and rand bit for bit, randn within 1e-5.

  mkdir -p /tmp/tkrand && TK_GPU_MATH_DUMP=/tmp/tkrand build/tests/gpu/gpu_math \\
      && python3 tests/gpu/triton_random.py /tmp/tkrand

Prints a line per case and output and exits 1 on any mismatch.
"""
import os
import sys

import torch
import triton
import triton.language as tl

N = 100003  # the largest size of gpu_math
BLOCK = 256

# name, kernel, seed, first offset: as in tests/kernels/math_cases.c
CASES = [
    ("random32_zero", "random32", 0, 0),
    ("random32_seed", "random32", 0x123456789ABCDEF, 1000),
    ("random32_negative", "random32", -1, -700),
    ("random64", "random64", 0xDEADBEEFCAFEF00D, 2**32 - 300),
    ("random_rounds", "random_rounds", -123456789, 0xFFFFFF00),
]


@triton.jit
def random32(seed, base, w, u, g, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    offs = base + i
    tl.store(w + i, tl.randint(seed, offs), mask=m)
    tl.store(u + i, tl.rand(seed, offs), mask=m)
    tl.store(g + i, tl.randn(seed, offs), mask=m)


@triton.jit
def random_rounds(seed, base, w, u, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    offs = (base + i).to(tl.uint32, bitcast=True)  # tk's offsets are u32
    tl.store(w + i, tl.randint(seed, offs, n_rounds=7), mask=m)
    tl.store(u + i, tl.rand(seed, offs, n_rounds=3), mask=m)


def load(d, name, o, dtype):
    with open(os.path.join(d, f"{name}.{o}.bin"), "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=dtype).cuda()


def main():
    d = sys.argv[1]
    grid = (triton.cdiv(N, BLOCK),)
    bad = 0
    for name, kernel, seed, base in CASES:
        wide = kernel == "random64"
        wt = torch.int64 if wide else torch.int32
        w = torch.empty(N, dtype=wt, device="cuda")
        u = torch.empty(N, dtype=torch.float32, device="cuda")
        g = torch.empty(N, dtype=torch.float32, device="cuda")
        if kernel == "random_rounds":
            random_rounds[grid](seed, base - 2**32, w, u, N, BLOCK=BLOCK)
            outs = [("randint", w), ("rand", u)]
        else:
            random32[grid](seed, base, w, u, g, N, BLOCK=BLOCK)
            outs = [("randint", w), ("rand", u), ("randn", g)]
        for o, (what, t) in enumerate(outs):
            tk = load(d, name, o, t.dtype)
            if what == "randn":
                err = (tk - t).abs().max().item()
                ok = err <= 1e-5
                print(f"{name:18} {what:8} max |tk - triton| = {err:.3g}  {'ok' if ok else 'MISMATCH'}")
            else:
                same = torch.equal(tk.view(wt if what == 'randint' else torch.int32),
                                   t.view(wt if what == 'randint' else torch.int32))
                diff = (tk.view(torch.int8) != t.view(torch.int8)).sum().item()
                ok = same
                print(f"{name:18} {what:8} {'bit-identical' if ok else f'MISMATCH ({diff} bytes differ)'}")
            bad += not ok
    print("triton_random:", "all match" if not bad else f"{bad} mismatches")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
