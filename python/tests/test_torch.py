"""PyTorch integration on the GPU: the example custom op (python/examples) passes
torch.library.opcheck and runs inside torch.compile; CUDA graphs capture 100 tk launches
and replay them with correct results, and a launch that would compile during capture is a
clear error. Skipped (exit 77) without torch or a CUDA device."""
import os
import sys
import unittest

import tilek
from common import ROOT, VADD, cuda_torch, run

torch = cuda_torch()
if torch is not None:
    sys.path.insert(0, os.path.join(ROOT, "python", "examples"))
    import torch_custom_op as example


@unittest.skipIf(torch is None, "no torch with a CUDA device")
class CustomOp(unittest.TestCase):
    def test_opcheck(self):
        for n in (1, 1000, 4096):
            x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
            torch.library.opcheck(example.axpy, (x, y, 0.5))

    def test_eager(self):
        x, y = torch.randn(3, 333, device="cuda"), torch.randn(3, 333, device="cuda")
        torch.testing.assert_close(example.axpy(x, y, -2.0), x - 2.0 * y)

    def test_torch_compile(self):
        @torch.compile(fullgraph=True)
        def f(x, y):
            return torch.sigmoid(example.axpy(x * 2, y, 3.0)).sum(dim=-1)

        for shape in ((64, 128), (7, 1000)):
            x, y = torch.randn(shape, device="cuda"), torch.randn(shape, device="cuda")
            torch.testing.assert_close(f(x, y), torch.sigmoid(x * 2 + 3.0 * y).sum(dim=-1))


@unittest.skipIf(torch is None, "no torch with a CUDA device")
class Graphs(unittest.TestCase):
    def setUp(self):
        # a module of its own, so that no other test has compiled its variants
        self.k = tilek.compile(VADD, backend="cuda", cache=False).vadd

    def test_capture_100_launches(self):
        n = 10000  # not a multiple of 16: a variant compiled on first launch
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.empty(n, device="cuda")
        grid = (tilek.cdiv(n, 256),)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up: compiles the variant these arguments need
            self.k[grid](out, y, out, n)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(100):
                self.k[grid](out, y, out, n)
        for _ in range(2):  # replays read the buffers' current contents
            x.copy_(torch.randn(n, device="cuda"))
            out.copy_(x)
            g.replay()
            ref = x.clone()
            for _ in range(100):
                ref = ref + y
            torch.cuda.synchronize()
            torch.testing.assert_close(out, ref, rtol=0, atol=0)

    def test_compile_during_capture_is_an_error(self):
        n = 1001
        x = torch.randn(n, device="cuda")
        g = torch.cuda.CUDAGraph()
        with self.assertRaises(tilek.Error) as e:
            with torch.cuda.graph(g):
                self.k[(4,)](x, x, x, n)
        self.assertIn("capturing a CUDA graph", str(e.exception))
        self.assertIn("before capturing", str(e.exception))
        # after a launch outside capture, the same capture works
        self.k[(4,)](x, x, x, n)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.k[(4,)](x, x, x, n)
        g.replay()
        torch.cuda.synchronize()


if __name__ == "__main__":
    run()
