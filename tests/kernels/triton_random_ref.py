#!/usr/bin/env python3
"""Triton 3.6's random module on the CPU, in numpy: what tl.randint, tl.rand, tl.randn (and
their 4x forms) return, for holding tk's randint, rand and randn against without a GPU.

Emulated from triton/language/random.py of the triton 3.6.0 wheel, step by step:
  - the seed (a Python int, or a kernel argument of any integer type) becomes a u64 as a
    cast does (signed types sign-extend), split into the key (low 32 bits, high 32 bits);
  - randint4x: the counter is (offset.to(u32), offset >> 32 to u32 for 64-bit offsets
    else 0, 0, 0), so 64-bit offsets run Philox4x32 too (the 4x64 branch of philox is
    unreachable from randint4x) and every word is a u32;
  - philox_impl: n_rounds rounds of Philox4x32 (multipliers 0xD2511F53, 0xCD9E8D57; the
    key raised by 0x9E3779B9, 0xBB67AE85 after each round, the last one included);
  - uint_to_uniform_float: the u32 read as i32, x < 0 replaced by -x - 1, converted to f32
    and multiplied by f32(4.6566127342e-10);
  - pair_uniform_to_normal: u1 = max(1e-7, u1), th = 6.283185307179586 * u2,
    r = sqrt(-2 * log(u1)), (r * cos(th), r * sin(th)), all in f32; randn is the first of
    the pair on words 0 and 1; randn4x pairs (0, 1) and (2, 3).
CASES are the seeds and offsets of tests/kernels/math_cases.c (the kernels of
tests/kernels/random.tk, which tests/gpu/triton_random.py writes in Triton too).

  triton_random_ref.py golden FILE      writes the golden values (triton_random.golden)
  triton_random_ref.py check FILE       recomputes them and compares (meson: exits 77
                                        without numpy)
  triton_random_ref.py compare DIR      tk's outputs of gpu_math (TK_GPU_MATH_DUMP=DIR)
                                        against the emulation, all N of them

The golden file keeps a sample of indices per case (the first ones, those where the offset
crosses a boundary, a spread); tests/interp/test_math.c holds the interpreter to it, so
the chain interpreter = golden = emulation needs no numpy on the machine that tests.
"""
import os
import sys

try:
    import numpy as np
except ImportError:  # the tests skip; importing this for CASES still works
    np = None

N = 100003  # the largest size of tests/gpu/gpu_math.c
N_ROUNDS_DEFAULT = 10

# name, kernel, seed, first offset: as in tests/kernels/math_cases.c
CASES = [
    ("random32_zero", "random32", 0, 0),
    ("random32_seed", "random32", 0x123456789ABCDEF, 1000),
    ("random32_negative", "random32", -1, -700),
    ("random64", "random64", 0xDEADBEEFCAFEF00D, 2**32 - 300),
    ("random_rounds", "random_rounds", -123456789, 0xFFFFFF00),
    ("random_narrow", "random_narrow", 0xF00DFACE, -34000),
]

# each kernel's outputs: (what, function, n_rounds, the dtype the offsets are cast to, if)
OUTPUTS = {
    "random32": [("randint", "randint", 10, None), ("rand", "rand", 10, None),
                 ("randn", "randn", 10, None)],
    "random64": [("randint", "randint", 10, None), ("rand", "rand", 10, None),
                 ("randn", "randn", 10, None)],
    "random_rounds": [("randint", "randint", 7, None), ("rand", "rand", 3, None)],
    "random_narrow": [("randint", "randint", 10, "int16"), ("rand", "rand", 10, "uint8"),
                      ("randn", "randn", 10, "int8")],
}

RANDN_TOL = 1e-5

# ---- the emulation ----------------------------------------------------------------------

M32 = 0xFFFFFFFF


def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT):
    """n_rounds of Philox4x32 on u32 arrays c0..c3 with the u32 key (k0, k1)."""
    A, B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    c = [x.astype(np.uint64) for x in (c0, c1, c2, c3)]
    k0, k1 = int(k0), int(k1)
    for _ in range(n_rounds):
        p0, p1 = A * c[0], B * c[2]  # 32 x 32 bits fit a u64
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & np.uint64(M32),
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & np.uint64(M32)]
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return tuple(x.astype(np.uint32) for x in c)


def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT):
    """The key from the seed: seed.to(tl.uint64), then its low and high words. A Python int
    seed is typed i32, u32, i64 or u64 by its value; each of them, and a kernel argument of
    any integer type holding that value, reaches the same u64: the value modulo 2**64."""
    s = int(seed) & (2**64 - 1)
    return philox_impl(c0, c1, c2, c3, s & M32, s >> 32, n_rounds)


def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """offset: a numpy integer array of the offsets' Triton dtype. offset.to(tl.uint32)
    extends a narrower offset by its signedness and truncates a 64-bit one, as astype does;
    a 64-bit offset's high word is the second counter word."""
    offset = np.asarray(offset)
    assert offset.dtype.kind in "iu", "offsets are integers"
    lo = offset.astype(np.uint32)
    zero = lo * np.uint32(0)
    hi = (offset >> 32).astype(np.uint32) if offset.dtype.itemsize == 8 else zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    return randint4x(seed, offset, n_rounds)[0]


def uint_to_uniform_float(x):
    """The u32 branch (the only one rand and randn reach): read as signed, so the top bit
    folds the range in half rather than being a magnitude bit."""
    assert x.dtype == np.uint32
    x = x.view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)  # in i32, -x - 1 == ~x; no overflow here either
    return x.astype(np.int32).astype(np.float32) * np.float32(4.6566127342e-10)


def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


def rand4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    return tuple(uint_to_uniform_float(w) for w in randint4x(seed, offset, n_rounds))


def pair_uniform_to_normal(u1, u2):
    """Box-Muller in f32 (the Python float constants are f32 in Triton's arithmetic)."""
    with np.errstate(all="ignore"):
        u1 = np.maximum(np.float32(1.0e-7), u1)
        th = np.float32(6.283185307179586) * u2
        r = np.sqrt(np.float32(-2.0) * np.log(u1))
        return r * np.cos(th), r * np.sin(th)


def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))[0]


def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(u1, u2) + pair_uniform_to_normal(u3, u4)


FUNCTIONS = {"randint": randint, "rand": rand, "randn": randn}

# Random123's known answers for Philox4x32-10 (kat_vectors): counter, key, result
KAT = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
       ((M32,) * 4, (M32, M32), (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
       ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
        (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]


def self_check():
    """The emulation's Philox against the known answers: a wrong one would make every
    comparison with it meaningless."""
    for ctr, key, want in KAT:
        got = philox_impl(*(np.array([c], dtype=np.uint32) for c in ctr), *key)
        if tuple(int(w[0]) for w in got) != want:
            raise SystemExit(f"triton_random_ref: Philox fails the known answer {want[0]:#x}")

# ---- the cases --------------------------------------------------------------------------


def offsets(kernel, base, n):
    """The offsets the kernels of random.tk (and triton_random.py) make for i < n:
    base + i in i32 (random32, random_narrow), i64 (random64), or u32 (random_rounds),
    wrapping."""
    v = np.arange(n, dtype=np.int64) + np.int64(base - 2**64 if base >= 2**63 else base)
    if kernel in ("random32", "random_narrow"):
        return v.astype(np.int32)
    if kernel == "random64":
        return v
    return v.astype(np.uint32)


def outputs(kernel, seed, base, n):
    """[(what, array)] of one case's kernel at size n."""
    offs = offsets(kernel, base, n)
    return [(what, FUNCTIONS[f](seed, offs if cast is None else offs.astype(cast), rounds))
            for what, f, rounds, cast in OUTPUTS[kernel]]


def sample(kernel, base):
    """The golden indices of a case: below 3000 (the interpreter test's largest size)."""
    idx = set(range(16)) | set(range(16, 3000, 97)) | {2999}
    if kernel == "random64":
        idx |= set(range(2**32 - base - 4, 2**32 - base + 4))  # the high word turns to 1
    elif kernel == "random_rounds":
        idx |= set(range(2**32 - base - 4, 2**32 - base + 4))  # u32 wraps to 0
    elif kernel == "random_narrow":
        idx |= set(range(-32768 - base - 4, -32768 - base + 4))  # i16 wraps to 32767
    elif base < 0:
        idx |= set(range(-base - 4, -base + 4))  # the offsets cross 0
    return sorted(i for i in idx if 0 <= i < 3000)


def golden_text():
    lines = ["# Triton 3.6's tl.randint, tl.rand (its f32 bits) and tl.randn on the cases of",
             "# tests/kernels/math_cases.c, at sampled indices: tests/kernels/triton_random_ref.py",
             "# golden writes this file; tests/interp/test_math.c holds the interpreter to it.",
             "# case NAME SEED BASE, then: INDEX RANDINT RAND [RANDN]"]
    for name, kernel, seed, base in CASES:
        lines.append(f"case {name} {seed} {base}")
        outs = outputs(kernel, seed, base, 3000)
        for i in sample(kernel, base):
            row = [str(i)]
            for what, a in outs:
                if what == "randn":
                    row.append(f"{float(a[i]):.9e}")
                else:
                    row.append(f"0x{int(a[i:i + 1].view(np.uint32)[0]):08x}")
            lines.append(" ".join(row))
    return "\n".join(lines) + "\n"


def parse_golden(text):
    """{case: [(index, [fields])]} of a golden file."""
    cases, cur = {}, None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        f = line.split()
        if f[0] == "case":
            cur = cases.setdefault(f[1], [])
        else:
            cur.append((int(f[0]), f[1:]))
    return cases


def check(path):
    """The golden file against the emulation: the same rows, randn within RANDN_TOL."""
    want = parse_golden(golden_text())
    got = parse_golden(open(path).read())
    bad = 0
    if sorted(got) != sorted(want):
        print(f"{path}: cases {sorted(got)}, the emulation has {sorted(want)}")
        return 1
    for name in want:
        if [i for i, _ in got[name]] != [i for i, _ in want[name]]:
            print(f"{path}: {name}: other indices than the emulation's")
            bad += 1
            continue
        for (i, g), (_, w) in zip(got[name], want[name]):
            ok = len(g) == len(w) and g[:2] == w[:2]
            if ok and len(w) > 2:
                ok = abs(float(g[2]) - float(w[2])) <= RANDN_TOL
            if not ok:
                print(f"{path}: {name} [{i}]: {' '.join(g)}, the emulation gives {' '.join(w)}")
                bad += 1
    print(f"triton_random_ref: {path}:", "matches the emulation" if not bad else f"{bad} rows differ")
    return 1 if bad else 0


def compare(d, log=print):
    """tk's dumps in d (CASE.OUTPUT.bin, from gpu_math) against the emulation, at all N."""
    bad = 0
    for name, kernel, seed, base in CASES:
        for o, (what, want) in enumerate(outputs(kernel, seed, base, N)):
            got = np.fromfile(os.path.join(d, f"{name}.{o}.bin"), dtype=want.dtype)
            if got.shape != want.shape:
                log(f"{name:18} {what:8} {got.size} values, want {want.size}  MISMATCH")
                bad += 1
            elif what == "randn":
                err = float(np.max(np.abs(got.astype(np.float64) - want)))
                ok = err <= RANDN_TOL
                log(f"{name:18} {what:8} max |tk - emulation| = {err:.3g}  {'ok' if ok else 'MISMATCH'}")
                bad += not ok
            else:
                diff = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
                if diff.size:
                    i = int(diff[0])
                    log(f"{name:18} {what:8} MISMATCH at {diff.size} indices, first {i}: "
                        f"tk 0x{int(got.view(np.uint32)[i]):08x}, emulation 0x{int(want.view(np.uint32)[i]):08x}")
                else:
                    log(f"{name:18} {what:8} bit-identical")
                bad += diff.size > 0
    log("triton_random_ref: " + ("all match" if not bad else f"{bad} mismatches"))
    return 1 if bad else 0


def main(argv):
    if len(argv) != 3 or argv[1] not in ("golden", "check", "compare"):
        sys.stderr.write(__doc__)
        return 2
    if np is None:
        print("triton_random_ref: skipped: no numpy")
        return 77
    self_check()
    if argv[1] == "golden":
        with open(argv[2], "w") as f:
            f.write(golden_text())
        return 0
    return check(argv[2]) if argv[1] == "check" else compare(argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
