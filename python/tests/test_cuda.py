"""The binding on the GPU with PyTorch: results, every argument check with a CUDA context
(a CPU tensor, a wrong dtype, another device, a too-large int), the foreign protocols
(__cuda_array_interface__, __dlpack__), and launching on the caller's current stream.
Skipped (exit 77) without torch or a CUDA device."""
import unittest

import tilek
from common import SCALE, VADD, cuda_torch, run

torch = cuda_torch()


@unittest.skipIf(torch is None, "no torch with a CUDA device")
class Cuda(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.vadd = tilek.compile(VADD, backend="cuda").vadd
        cls.scale = tilek.compile(SCALE, backend="cuda").scale

    def test_vadd_sizes(self):
        for n in (1, 1000, 4096, 100003):
            x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
            out = torch.full((n,), float("nan"), device="cuda")
            self.vadd[(tilek.cdiv(n, 256),)](x, y, out, n)
            torch.testing.assert_close(out, x + y, rtol=0, atol=0)

    def test_scalars_and_f16(self):
        n = 777
        x = torch.randn(n, device="cuda", dtype=torch.float16)
        out = torch.empty_like(x)
        self.scale[lambda m: (tilek.cdiv(n, m["BLOCK"]),)](x, out, 0.5, n, True)
        torch.testing.assert_close(out, (-(x.float() * 0.5)).half())

    def test_argument_errors(self):
        x = torch.rand(256, device="cuda")
        k = self.vadd[1]
        cases = [
            ((x.cpu(), x, x, 256), ValueError, "'x' (parameter 0, *f32): is in host memory"),
            ((x, x.half(), x, 256), TypeError, "'y' (parameter 1, *f32): expected a tensor of f32, got dtype torch.float16"),
            ((x, x, x, 2**31), OverflowError, "'n' (parameter 3, i32)"),
            ((x, x, x, 1.0), TypeError, "'n'"),
            ((x, x, 3, 256), TypeError, "'out'"),
        ]
        for args, exc, text in cases:
            with self.assertRaises(exc, msg=text) as e:
                k(*args)
            self.assertIn(text, str(e.exception))

    @unittest.skipIf(torch is None or torch.cuda.device_count() < 2, "one CUDA device")
    def test_other_device(self):
        x = torch.rand(256, device="cuda:1")
        with self.assertRaises(ValueError) as e:
            self.vadd[1](x, x, x, 256)
        self.assertIn("cuda:1", str(e.exception))

    def test_foreign_protocols(self):
        n = 1024
        x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        out = torch.zeros(n, device="cuda")

        class CAI:  # what CuPy and Numba hand over
            def __init__(self, t):
                self.__cuda_array_interface__ = t.__cuda_array_interface__

        class DL:  # a DLPack producer
            def __init__(self, t):
                self.t = t

            def __dlpack__(self, stream=None):
                return self.t.__dlpack__()

            def __dlpack_device__(self):
                return self.t.__dlpack_device__()

        self.vadd[4](CAI(x), DL(y), out, n)
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
        with self.assertRaises(TypeError):
            self.vadd[4](CAI(x.double()), y, out, n)

    def test_current_stream(self):
        # On a side stream: a long sleep, then zero the output, then the kernel. Launched
        # on any other stream, the kernel would run before the zeroing and be erased.
        n = 1 << 20
        x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        out = torch.empty(n, device="cuda")
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            torch.cuda._sleep(50_000_000)
            out.zero_()
            self.vadd[(tilek.cdiv(n, 256),)](x, y, out, n)
            got = out.clone()
        s.synchronize()
        torch.testing.assert_close(got, x + y, rtol=0, atol=0)

    def test_explicit_stream(self):
        n = 4096
        x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        out = torch.zeros(n, device="cuda")
        s = torch.cuda.Stream()
        self.vadd[16](x, y, out, n, stream=s)
        self.vadd[16](x, y, out, n, stream=s.cuda_stream)
        s.synchronize()
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)

    def test_tensor_subclasses(self):
        # nn.Parameter shares torch.Tensor's accessors (the fast path); a subclass that
        # overrides data_ptr is read through Python, as the override says
        n = 256
        x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        out = torch.zeros(n, device="cuda")
        self.vadd[1](torch.nn.Parameter(x), y, out, n)
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)

        class Shifted(torch.Tensor):
            def data_ptr(self):
                return super().data_ptr() + 4 * 128  # the second half

        out.zero_()
        self.vadd[1](x.as_subclass(Shifted), y, out, 128)
        torch.testing.assert_close(out[:128], x[128:] + y[:128], rtol=0, atol=0)
        with self.assertRaises(TypeError) as e:
            self.vadd[1](torch.nn.Parameter(x.half()), y, out, n)
        self.assertIn("'x' (parameter 0, *f32): expected a tensor of f32, got dtype torch.float16",
                      str(e.exception))

    def test_noncontiguous_view(self):
        base = torch.zeros(8, 256, device="cuda")
        row = base[3]  # a view: the launch sees its first element's address
        one = torch.ones(256, device="cuda")
        self.vadd[1](one, one, row, 256)
        self.assertEqual(base.sum().item(), 512.0)


if __name__ == "__main__":
    run()
