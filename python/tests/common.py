"""What the binding's tests share: the kernels, and run(), which runs a file's tests and
exits 77 (meson's "skipped") when every one of them skipped, saying why."""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

VADD = """
kernel vadd<BLOCK: i32 = 256>(x: *f32, y: *f32, out: *f32, n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
}
"""

SCALE = """
kernel scale<BLOCK: i32 = 128>(x: *f16, out: *f16, a: f32, n: i64, flip: i1) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let v = load(x + offs, mask) as f32 * a;
    store(out + offs, where(flip, -v, v) as f16, mask);
}
"""


def optional(name):
    try:
        return __import__(name)
    except ImportError:
        return None


def cuda_torch():
    """torch when it is importable and sees a CUDA device, else None."""
    torch = optional("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return torch


def run():
    result = unittest.main(exit=False, verbosity=2).result
    skipped = len(result.skipped)
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun and skipped == result.testsRun:
        reasons = sorted({r for _, r in result.skipped})
        print("all skipped: " + "; ".join(reasons))
        sys.exit(77)
    sys.exit(0)
