"""The attention samples against PyTorch on the GPU: samples/attention.tk (f16 and bf16,
causal or not, grouped-query heads, ragged lengths, strided views) against
torch.nn.functional.scaled_dot_product_attention, and samples/attention_decode.tk
(split + combine, ragged cache lengths, GQA) against a float64 reference in torch. The
log-sum-exp of each against torch's logsumexp of the scaled scores. Skipped (exit 77)
without torch or a CUDA device."""
import math
import os
import unittest

import tilek
from common import ROOT, cuda_torch, run

torch = cuda_torch()
SAMPLES = os.path.join(ROOT, "samples")


def reference(q, k, v, causal, scale):
    """O and the log-sum-exp in float64; q [B, H, Sq, D], k/v [B, Hkv, Sk, D]."""
    g = q.shape[1] // k.shape[1]
    k = k.double().repeat_interleave(g, dim=1)
    v = v.double().repeat_interleave(g, dim=1)
    s = q.double() @ k.transpose(-1, -2) * scale
    if causal:
        i = torch.arange(q.shape[2], device=q.device)[:, None]
        j = torch.arange(k.shape[2], device=q.device)[None, :]
        s = s.masked_fill(j > i, -math.inf)
    return torch.softmax(s, dim=-1) @ v, torch.logsumexp(s, dim=-1)


@unittest.skipIf(torch is None, "no torch with a CUDA device")
class Attention(unittest.TestCase):
    def check(self, dtype, causal, B, H, Hkv, Sq, Sk, D, layout="bhsd"):
        mod = tilek.compile_file(os.path.join(SAMPLES, "attention.tk"),
                                 cparams={"T": dtype, "D": D, "CAUSAL": causal})
        k_ = mod.attention
        tdt = torch.float16 if dtype == "f16" else torch.bfloat16
        def make(h, s):
            if layout == "bshd":  # a [B, S, H, D] buffer viewed as [B, H, S, D]
                return torch.randn(B, s, h, D, device="cuda", dtype=tdt).transpose(1, 2)
            return torch.randn(B, h, s, D, device="cuda", dtype=tdt)
        q, k, v = make(H, Sq), make(Hkv, Sk), make(Hkv, Sk)
        o = torch.full((B, H, Sq, D), float("nan"), device="cuda", dtype=tdt)
        lse = torch.full((B, H, Sq), float("nan"), device="cuda")
        scale = 1.0 / math.sqrt(D)
        grid = (tilek.cdiv(Sq, 128), H, B)
        k_[grid](q, k, v, o, lse, H, Hkv, Sq, Sk, scale,
                 q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                 v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2))
        torch.cuda.synchronize()
        want, wlse = reference(q, k, v, causal, scale)
        tol = 2e-2 if dtype == "bf16" else 4e-3
        torch.testing.assert_close(o.double(), want, atol=tol, rtol=tol)
        # l sums the weights rounded to T (samples/attention.tk): within T's unit roundoff
        lse_tol = 1e-3 + (2.0 ** -8 if dtype == "bf16" else 2.0 ** -11)
        torch.testing.assert_close(lse.double(), wlse, atol=lse_tol, rtol=1e-4)
        if Hkv == H and Sq == Sk:  # PyTorch's own kernel on the same inputs
            sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.testing.assert_close(o.float(), sdpa.float(), atol=tol, rtol=tol)

    def test_f16(self):
        self.check("f16", False, 2, 4, 4, 1024, 1024, 128)

    def test_f16_causal_ragged(self):
        self.check("f16", True, 1, 4, 4, 1000, 1000, 128)

    def test_bf16_gqa_d64(self):
        self.check("bf16", False, 2, 8, 2, 333, 777, 64)

    def test_bf16_causal_strided(self):
        self.check("bf16", True, 2, 4, 4, 600, 600, 128, layout="bshd")


@unittest.skipIf(torch is None, "no torch with a CUDA device")
class Decode(unittest.TestCase):
    def check(self, dtype, B, Hq, Hkv, cap, lens, splits):
        mod = tilek.compile_file(os.path.join(SAMPLES, "attention_decode.tk"), cparams={"T": dtype})
        tdt = torch.float16 if dtype == "f16" else torch.bfloat16
        D = 128
        q = torch.randn(B, Hq, D, device="cuda", dtype=tdt)
        k = torch.randn(B, Hkv, cap, D, device="cuda", dtype=tdt)
        v = torch.randn(B, Hkv, cap, D, device="cuda", dtype=tdt)
        ln = torch.tensor(lens, device="cuda", dtype=torch.int32)
        chunk = tilek.cdiv(tilek.cdiv(max(lens), splits), 32) * 32
        part_o = torch.empty(B, Hq, splits, D, device="cuda")
        part_m = torch.empty(B, Hq, splits, device="cuda")
        part_l = torch.empty(B, Hq, splits, device="cuda")
        o = torch.full((B, Hq, D), float("nan"), device="cuda", dtype=tdt)
        lse = torch.full((B, Hq), float("nan"), device="cuda")
        scale = 1.0 / math.sqrt(D)
        mod.decode_split[(splits, Hkv, B)](q, k, v, ln, part_o, part_m, part_l, Hq, Hkv, splits, chunk,
                                           scale, q.stride(0), q.stride(1), k.stride(0), k.stride(1),
                                           k.stride(2), v.stride(0), v.stride(1), v.stride(2),
                                           o, lse, o.stride(0), o.stride(1))
        if splits > 1:  # one split writes O and LSE itself
            mod.decode_combine[(Hq, B)](part_o, part_m, part_l, ln, o, lse, Hq, splits, chunk,
                                        o.stride(0), o.stride(1))
        torch.cuda.synchronize()
        for b, n in enumerate(lens):
            if n == 0:
                self.assertTrue(bool((o[b] == 0).all()) and bool(torch.isinf(lse[b]).all()))
                continue
            want, wlse = reference(q[b:b + 1, :, None], k[b:b + 1, :, :n], v[b:b + 1, :, :n], False, scale)
            torch.testing.assert_close(o[b].double(), want[0, :, 0], atol=2e-2, rtol=2e-2)
            torch.testing.assert_close(lse[b].double(), wlse[0, :, 0], atol=1e-3, rtol=1e-4)

    def test_f16_gqa_ragged(self):
        self.check("f16", 4, 32, 8, 9000, [8192, 1, 4097, 0], 8)

    def test_bf16_mha(self):
        self.check("bf16", 2, 8, 8, 3000, [2999, 1234], 3)

    def test_f16_one_split(self):
        self.check("f16", 3, 32, 8, 2000, [1999, 0, 640], 1)


if __name__ == "__main__":
    run()
