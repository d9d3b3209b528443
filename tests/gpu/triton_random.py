#!/usr/bin/env python3
"""tk's randint, rand and randn against Triton's tl.randint, tl.rand and tl.randn.

For the GPU host, which has Triton (not run by meson: CI has neither a GPU nor Triton).
gpu_math writes the device's outputs of its random cases (tests/kernels/random.tk, the
seeds and offsets of tests/kernels/math_cases.c); this script computes the same with
Triton and compares: randint and rand bit for bit, randn within 1e-5. It also holds
Triton to tests/kernels/triton_random_ref.py, the CPU emulation of its random module
that the golden values of the interpreter test come from, so that a mismatch says which
side moved: tk, or the emulation (a Triton other than the one it was written from).

  mkdir -p /tmp/tkrand && TK_GPU_MATH_DUMP=/tmp/tkrand build/tests/gpu/gpu_math \\
      && python3 tests/gpu/triton_random.py /tmp/tkrand [LOG]

Prints a line per case and output (to LOG too when given) and exits 1 on any mismatch.
"""
import os
import sys
import traceback

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels"))
import triton_random_ref as ref  # noqa: E402  (CASES, N, and the emulation)

BLOCK = 256


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


@triton.jit
def random_narrow(seed, base, w, u, g, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    offs = base + i
    tl.store(w + i, tl.randint(seed, offs.to(tl.int16)), mask=m)
    tl.store(u + i, tl.rand(seed, offs.to(tl.uint8)), mask=m)
    tl.store(g + i, tl.randn(seed, offs.to(tl.int8)), mask=m)


def load(d, name, o, dtype):
    """tk's output o of a case, or None when gpu_math wrote none (an older build)."""
    path = os.path.join(d, f"{name}.{o}.bin")
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=dtype).cuda()


def same(what, a, b):
    """(ok, description) of two outputs: bits for randint and rand, 1e-5 for randn."""
    if a.shape != b.shape:
        return False, f"MISMATCH ({a.numel()} values against {b.numel()})"
    if what == "randn":
        err = (a - b).abs().max().item()
        ok = err <= ref.RANDN_TOL
        return ok, f"max |difference| = {err:.3g}  {'ok' if ok else 'MISMATCH'}"
    diff = (a.view(torch.int32) != b.view(torch.int32)).nonzero()
    if not diff.numel():
        return True, "bit-identical"
    i = diff[0].item()
    x, y = a.view(torch.int32)[i].item() & 0xFFFFFFFF, b.view(torch.int32)[i].item() & 0xFFFFFFFF
    return False, f"MISMATCH at {diff.numel()} indices, first {i}: 0x{x:08x} against 0x{y:08x}"


def triton_outputs(kernel, seed, base):
    n = ref.N
    grid = (triton.cdiv(n, BLOCK),)
    w = torch.empty(n, dtype=torch.int32, device="cuda")  # u32 words, whatever the offsets
    u = torch.empty(n, dtype=torch.float32, device="cuda")
    g = torch.empty(n, dtype=torch.float32, device="cuda")
    if kernel == "random_rounds":
        random_rounds[grid](seed, base - 2**32, w, u, n, BLOCK=BLOCK)
        return [w, u]
    (random_narrow if kernel == "random_narrow" else random32)[grid](seed, base, w, u, g, n, BLOCK=BLOCK)
    return [w, u, g]


def main():
    if len(sys.argv) not in (2, 3):
        sys.stderr.write(__doc__)
        sys.exit(2)
    d = sys.argv[1]
    log = open(sys.argv[2], "w") if len(sys.argv) == 3 else None

    def say(line):
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()

    try:
        bad, bad_ref = compare(d, say)
    except BaseException:
        say(traceback.format_exc())  # the log keeps what went wrong too
        raise
    finally:
        if log:
            log.close()
    sys.exit(1 if bad or bad_ref else 0)


def compare(d, say):
    """Every case and output: tk against Triton, and the emulation against Triton; returns
    the two counts of mismatches."""
    say(f"triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    if ref.np is not None:
        ref.self_check()
    bad = bad_ref = 0
    for name, kernel, seed, base in ref.CASES:
        tri = triton_outputs(kernel, seed, base)
        emu = ref.outputs(kernel, seed, base, ref.N) if ref.np is not None else None
        for o, ((what, _, _, _), t) in enumerate(zip(ref.OUTPUTS[kernel], tri)):
            got = load(d, name, o, t.dtype)
            ok, text = same(what, got, t) if got is not None else (False, f"MISSING: no {name}.{o}.bin")
            say(f"{name:18} {what:8} tk against triton: {text}")
            bad += not ok
            if emu is not None:
                e = torch.from_numpy(emu[o][1].view("int32" if what != "randn" else "float32"))
                ok, text = same(what, e.to(t.device).view(t.dtype), t)
                say(f"{name:18} {what:8} emulation against triton: {text}")
                bad_ref += not ok
    if ref.np is None:
        say("triton_random: no numpy, so the emulation (tests/kernels/triton_random_ref.py) was not checked")
    say("triton_random: " + ("all match" if not bad else f"{bad} mismatches") +
        (f"; the emulation: {bad_ref} mismatches" if bad_ref else ""))
    return bad, bad_ref


if __name__ == "__main__":
    main()
