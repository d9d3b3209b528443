"""The CUDA launch path on a machine without a GPU: libtk's CUDA backend over the fake
driver (tests/gpu/fake_cuda.c, named by $TK_FAKE_LIBCUDA), and PyTorch's launch-path
surface from the stand-in _tilek_fake_torch (python/tests/fake_torch.c) — so that the
torch tensor fast path, its fallbacks and every argument check run here. The fake driver
records each launch; nothing executes, so results are the arguments the driver got."""
import ctypes
import os
import sys
import unittest

from common import VADD, run

FAKE = os.environ.get("TK_FAKE_LIBCUDA")
if FAKE:
    os.environ["TK_LIBCUDA"] = FAKE  # before the first CUDA context
    import _tilek_fake_torch as torch
    sys.modules["torch"] = torch
    if __name__ == "__main__":
        # two devices, so that every tensor's device is read and checked (ONE_DEVICE
        # below runs a process with one)
        torch._set_device_count(2)

import tilek  # noqa: E402


class Launch(ctypes.Structure):
    _fields_ = [("fn", ctypes.c_void_p), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("params", ctypes.POINTER(ctypes.c_void_p)), ("stream", ctypes.c_void_p)]


# With one CUDA device a tensor's index is not read (it can only be 0), but the rest is.
ONE_DEVICE = """
import ctypes, os, sys
import test_fake_cuda as t
torch = t.torch
import tilek
k = tilek.compile(t.VADD, backend="cuda").vadd
x = torch.Tensor(0x100000, torch.float32, 0)
k[1](x, x, x, 16)
lib = ctypes.CDLL(t.FAKE)
lib.fake_cuda_last_launch.restype = ctypes.POINTER(t.Launch)
p = lib.fake_cuda_last_launch().contents.params
assert ctypes.cast(p[0], ctypes.POINTER(ctypes.c_uint64)).contents.value == 0x100000
for bad, text in [(torch.Tensor(0x100000, torch.float32, -1), "is in host memory"),
                  (torch.Tensor(0x100000, torch.float16, 0), "got dtype torch.float16")]:
    try:
        k[1](x, bad, x, 16)
        sys.exit("no error")
    except (TypeError, ValueError) as e:
        assert "'y' (parameter 1, *f32)" in str(e) and text in str(e), str(e)
print("one device: ok")
"""

SCALARS = """
kernel sc(x: *f32, a: f32, n: i32, m: u8, big: u64, flag: i1, w: *i8) {
    store(x + arange(0, 16), zeros<f32>(16) + a, arange(0, 16) < n);
}
"""


@unittest.skipIf(not FAKE, "TK_FAKE_LIBCUDA is not set (meson test sets it)")
class FakeCuda(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lib = ctypes.CDLL(FAKE)
        cls.lib.fake_cuda_last_launch.restype = ctypes.POINTER(Launch)
        cls.vadd = tilek.compile(VADD, backend="cuda").vadd
        cls.f32 = [torch.Tensor(0x100000 * (i + 1), torch.float32, 0) for i in range(3)]

    def last(self):
        return self.lib.fake_cuda_last_launch().contents

    def param(self, i, ctype=ctypes.c_uint64):
        return ctypes.cast(self.last().params[i], ctypes.POINTER(ctype)).contents.value

    def test_cpu_tensors_on_the_interpreter(self):
        # the interpreter copies a CPU tensor's extent: numel x element_size bytes (torch's
        # strides count elements; read as bytes, 777 floats were taken for 780 bytes)
        import array
        n = 777
        xs, ys = array.array("f", [i * 0.5 for i in range(n)]), array.array("f", [1.0] * n)
        out = array.array("f", [0.0] * n)
        t = [torch.Tensor(a.buffer_info()[0], torch.float32, -1, n) for a in (xs, ys, out)]
        k = tilek.compile(VADD, backend="interp").vadd
        k[(4,)](*t, n)
        self.assertEqual(list(out), [i * 0.5 + 1.0 for i in range(n)])

    def test_tensors_reach_the_driver(self):
        x, y, out = self.f32
        self.vadd[(4,)](x, y, out, 1024)
        self.assertEqual(list(self.last().grid), [4, 1, 1])
        self.assertEqual([self.param(i) for i in range(3)], [x.data_ptr(), y.data_ptr(), out.data_ptr()])
        self.assertEqual(self.param(3, ctypes.c_int32), 1024)

    def test_launch_objects_are_reused(self):
        grid = (4,)
        a = self.vadd[grid]
        self.assertIs(self.vadd[grid], a)
        self.assertIs(self.vadd[(4,)], a)  # an equal grid built anew
        self.assertIsNot(self.vadd[(2,)], a)
        b = self.vadd[lambda meta: (1024 // meta["BLOCK"],)]
        self.assertEqual(b.__class__, tilek.Launch)
        x, y, out = self.f32
        a(x, y, out, 64)
        self.assertEqual(list(self.last().grid), [4, 1, 1])
        self.vadd[(2,)](x, y, out, 64)
        self.assertEqual(list(self.last().grid), [2, 1, 1])

    def test_stream(self):
        x, y, out = self.f32
        torch._set_stream(0x1234)
        try:
            self.vadd[1](x, y, out, 16)
            self.assertEqual(self.last().stream, 0x1234)
            self.vadd[1](x, y, out, 16, stream=0x99)
            self.assertEqual(self.last().stream, 0x99)
        finally:
            torch._set_stream(0)
        self.vadd[1](x, y, out, 16)
        self.assertIsNone(self.last().stream)
        with self.assertRaises(TypeError):
            self.vadd[1](x, y, out, 16, strem=1)
        with self.assertRaises(TypeError):
            self.vadd[1](x, y, out, 16, stream="s")

    def test_argument_errors_name_the_parameter(self):
        x, y, out = self.f32
        h = torch.Tensor(0x200000, torch.float16, 0)
        cpu = torch.Tensor(0x300000, torch.float32, -1)
        other = torch.Tensor(0x400000, torch.float32, 1)
        c64 = torch.Tensor(0x500000, torch.complex64, 0)
        k = self.vadd[1]
        cases = [
            ((cpu, y, out, 256), ValueError,
             "kernel 'vadd': argument 'x' (parameter 0, *f32): is in host memory (a CPU tensor), "
             "but the kernel runs on cuda:0"),
            ((x, h, out, 256), TypeError,
             "argument 'y' (parameter 1, *f32): expected a tensor of f32, got dtype torch.float16"),
            ((x, y, other, 256), ValueError,
             "argument 'out' (parameter 2, *f32): is on cuda:1, but the kernel was compiled for cuda:0"),
            ((x, y, c64, 256), TypeError,
             "argument 'out' (parameter 2, *f32): tk has no element type for a tensor of dtype torch.complex64"),
            ((x, y, out, 2**31), OverflowError, "argument 'n' (parameter 3, i32): 2147483648 does not fit in i32"),
            ((x, y, out, -2**31 - 1), OverflowError, "'n' (parameter 3, i32): -2147483649 does not fit in i32"),
            ((x, y, out, 2**70), OverflowError, "'n' (parameter 3, i32)"),
            ((x, y, out, 1.0), TypeError, "argument 'n' (parameter 3, i32): expected an int, got float"),
            ((x, y, 3, 256), TypeError, "argument 'out' (parameter 2, *f32): expected a CUDA tensor"),
            ((x, y, out), TypeError, "kernel 'vadd' takes 4 arguments, got 3"),
        ]
        for args, exc, text in cases:
            with self.subTest(text=text):
                with self.assertRaises(exc) as e:
                    k(*args)
                self.assertIn(text, str(e.exception))
        k(x, y, out, 2**31 - 1)  # the edges fit
        k(x, y, out, -2**31)

    def test_scalars(self):
        k = tilek.compile(SCALARS, backend="cuda").sc
        x = self.f32[0]
        k[1](x, 2, 16, 255, 2**64 - 1, True, torch.Tensor(0x700000, torch.int8, 0))  # an int for a float; u64's top; a bool
        self.assertEqual(self.param(1, ctypes.c_float), 2.0)
        self.assertEqual(self.param(3, ctypes.c_uint8), 255)
        self.assertEqual(self.param(4), 2**64 - 1)
        self.assertEqual(self.param(5, ctypes.c_uint8), 1)
        k[1](x, 0.5, 16, 0, 0, 0, torch.Tensor(0x700000, torch.int8, 0))
        self.assertEqual(self.param(1, ctypes.c_float), 0.5)
        self.assertEqual(self.param(6), 0x700000)
        for args, text in [((x, 1.0, 16, 256, 0, False, x), "'m' (parameter 3, u8): 256 does not fit in u8"),
                           ((x, 1.0, 16, -1, 0, False, x), "'m' (parameter 3, u8): -1 does not fit in u8"),
                           ((x, 1.0, 16, 0, 2**64, False, x), "'big' (parameter 4, u64)"),
                           ((x, 1.0, 16, 0, -1, False, x), "'big' (parameter 4, u64)"),
                           ((x, 1.0, 16, 0, 0, 2, x), "'flag' (parameter 5, i1): 2 does not fit in i1"),
                           ((x, 1.0, 16, 0, 0, 0, torch.Tensor(0x700000, torch.uint8, 0)),
                            "'w' (parameter 6, *i8): expected a tensor of i8, got dtype torch.uint8"),
                           ((x, "a", 16, 0, 0, False, x), "'a' (parameter 1, f32): expected a float, got str")]:
            with self.subTest(text=text):
                with self.assertRaises((OverflowError, TypeError)) as e:
                    k[1](*args)
                self.assertIn(text, str(e.exception))

    def test_subclasses(self):
        class Param(torch.Tensor):  # shares torch's accessors: the fast path
            pass

        class Offset(torch.Tensor):  # overrides one: read through Python
            def data_ptr(self):
                return super().data_ptr() + 64

        x, y, out = self.f32
        p = Param(0x800000, torch.float32, 0)
        self.vadd[1](p, y, out, 16)
        self.assertEqual(self.param(0), 0x800000)
        o = Offset(0x900000, torch.float32, 0)
        self.vadd[1](o, y, out, 16)
        self.assertEqual(self.param(0), 0x900000 + 64)
        with self.assertRaises(TypeError) as e:
            self.vadd[1](x, Param(0x800000, torch.float16, 0), out, 16)
        self.assertIn("'y' (parameter 1, *f32): expected a tensor of f32, got dtype torch.float16", str(e.exception))

    def test_cuda_array_interface(self):
        class Cai:
            def __init__(self, ptr, typestr):
                self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": typestr,
                                                 "shape": (16,), "version": 3}

        x, y, out = self.f32
        self.vadd[1](Cai(0xa00000, "<f4"), y, out, 16)
        self.assertEqual(self.param(0), 0xa00000)
        with self.assertRaises(TypeError) as e:
            self.vadd[1](Cai(0xa00000, "<f2"), y, out, 16)
        self.assertIn("'x' (parameter 0, *f32): expected elements of f32, got f16", str(e.exception))

    def test_math_option_reaches_the_ptx(self):
        src = """kernel s(x: *f32) { let o = arange(0, 128); store(x + o, sin(load(x + o))); }"""
        self.lib.fake_cuda_last_ptx.restype = ctypes.c_char_p
        ptx = {}
        for math in ("fast", "accurate"):
            tilek.compile(src, backend="cuda", cache=False, math=math)
            ptx[math] = self.lib.fake_cuda_last_ptx().decode()
        self.assertIn("sin.approx.f32", ptx["fast"])
        self.assertNotIn("sin.approx.f32", ptx["accurate"])

    def test_unfused_launch_takes_scratch(self):
        # -fno-fuse's kernels go through a global scratch buffer the launch allocates
        x, y, out = self.f32
        allocs = self.lib.fake_cuda_live_allocs
        fused = tilek.compile(VADD, backend="cuda", cache=False).vadd
        before = allocs()
        fused[4](x, y, out, 1024)
        self.assertEqual(allocs(), before)
        unfused = tilek.compile(VADD, backend="cuda", cache=False, fuse=False).vadd
        unfused[4](x, y, out, 1024)
        self.assertEqual(allocs(), before + 1)

    def test_one_device(self):
        import subprocess
        r = subprocess.run([sys.executable, "-c", ONE_DEVICE], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("one device: ok", r.stdout)

    def test_empty_grid_checks_only(self):
        x, y, out = self.f32
        self.vadd[(4,)](x, y, out, 16)
        self.vadd[(0,)](x, y, out, 32)
        self.assertEqual(list(self.last().grid), [4, 1, 1])  # nothing launched
        self.assertEqual(self.param(3, ctypes.c_int32), 16)
        with self.assertRaises(OverflowError):
            self.vadd[(0,)](x, y, out, 2**40)


if __name__ == "__main__":
    run()
