#!/usr/bin/env python3
"""The anchors of DESIGN.md section 8, measured in the same run as tk, and the table.

For every workload tkbench times, this times the same sizes and dtypes through Triton
(tutorial-style kernels), PyTorch eager and torch.compile, all with
triton.testing.do_bench (median; it flushes L2 before each run, as tkbench does), on
fresh random non-zero inputs, with each anchor's output poisoned first and checked
against eager afterwards. It also measures the machine's copy bandwidth, the host cost
of a Triton launch and of a tiny PyTorch op, and Triton's cold compile of softmax.

Then it reads tkbench's lines (--tk FILE) and prints one markdown table: workload, tk,
each anchor, the ratios (anchor time / tk time: above 1 means tk is faster) and tk's
bandwidth as a percentage of copy. With $OUT set, the table also goes to $OUT/RESULTS.md.

usage: anchors.py --tk tk.tsv [--no-compile]
"""
import argparse
import math
import os
import sys
import tempfile
import time

# A private, empty Triton cache, so that the first compile below is a cold one.
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="tk-anchors-triton-")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DEV = "cuda"
N28 = 1 << 28


# ---- Triton kernels (as a Triton user would write them) --------------------------------

@triton.jit
def add_kernel(x, y, z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def coscos_kernel(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y + offs, tl.cos(tl.cos(tl.load(x + offs, mask=m))), mask=m)


@triton.jit
def gelu_tanh_kernel(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m).to(tl.float32)
    inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
    t = 2.0 * tl.sigmoid(2.0 * inner) - 1.0  # tanh(inner)
    tl.store(y + offs, (0.5 * v * (1.0 + t)).to(tl.float16), mask=m)


@triton.jit
def softmax_kernel(x, y, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    v = tl.load(x + row * stride + cols, mask=m, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(y + row * stride + cols, e / tl.sum(e, axis=0), mask=m)


@triton.jit
def softmax_online_kernel(x, y, stride, n, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * stride
    mv = tl.full([BLOCK], -float("inf"), tl.float32)
    sv = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x + base + cols, mask=cols < n, other=-float("inf"))
        new_m = tl.maximum(mv, v)
        live = new_m != -float("inf")
        sv = tl.where(live, sv * tl.exp(mv - new_m) + tl.exp(v - new_m), 0.0)
        mv = new_m
    mx = tl.max(mv, axis=0)
    s = tl.sum(sv * tl.exp(mv - mx), axis=0)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x + base + cols, mask=cols < n, other=-float("inf"))
        tl.store(y + base + cols, tl.exp(v - mx) / s, mask=cols < n)


@triton.jit
def layernorm_kernel(x, y, w, b, mean, rstd, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    v = tl.load(x + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    mu = tl.sum(v, axis=0) / n
    d = tl.where(m, v - mu, 0.0)
    r = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
    tl.store(mean + row, mu)
    tl.store(rstd + row, r)
    wv = tl.load(w + cols, mask=m).to(tl.float32)
    bv = tl.load(b + cols, mask=m).to(tl.float32)
    tl.store(y + row * stride + cols, (d * r * wv + bv).to(tl.float16), mask=m)


@triton.jit
def rmsnorm_kernel(x, y, w, rstd, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    v = tl.load(x + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / n + eps)
    tl.store(rstd + row, r)
    wv = tl.load(w + cols, mask=m).to(tl.float32)
    tl.store(y + row * stride + cols, (v * r * wv).to(tl.float16), mask=m)


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GROUP: tl.constexpr):
    # the tutorial's grouped ordering: programs sharing A rows run together, for L2 reuse
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    first = (pid // per_group) * GROUP
    rows_in_group = min(tl.cdiv(M, BM) - first, GROUP)
    pm = first + (pid % per_group) % rows_in_group
    pn = (pid % per_group) // rows_in_group
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        ta = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        tb = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(ta, tb, acc)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


@triton.jit
def attn_fwd_kernel(Q, K, V, O, M, sm_scale, S, H, D: tl.constexpr, BM: tl.constexpr,
                    BN: tl.constexpr, CAUSAL: tl.constexpr):
    """FlashAttention-2's forward as Triton's fused-attention tutorial writes it: one
    program per BM query rows of one head, exp2 with the scale folded into log2(e), and
    for causal attention two stages, the blocks left of the diagonal unmasked and the
    diagonal block masked."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    base = off_hz.to(tl.int64) * S * D
    offs_m = start_m * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + base + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32) + 1.0
    acc = tl.zeros([BM, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = start_m * BM if CAUSAL else S
    for start_n in range(0, hi, BN):
        k = tl.load(K + base + (start_n + offs_n)[None, :] * D + offs_d[:, None])
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(V + base + (start_n + offs_n)[:, None] * D + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    if CAUSAL:
        for start_n in range(start_m * BM, (start_m + 1) * BM, BN):
            k = tl.load(K + base + (start_n + offs_n)[None, :] * D + offs_d[:, None])
            qk = tl.dot(q, k)
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
            p = tl.math.exp2(qk)
            alpha = tl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            v = tl.load(V + base + (start_n + offs_n)[:, None] * D + offs_d[None, :])
            acc = tl.dot(p.to(v.dtype), v, acc)
            m_i = m_ij
    m_i += tl.math.log2(l_i)
    tl.store(M + off_hz * S + offs_m, m_i)
    tl.store(O + base + offs_m[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty))


@triton.jit
def bincount_kernel(x, h, BLOCK: tl.constexpr, BINS: tl.constexpr):
    # n is a multiple of BLOCK here: tl.histogram's out-of-range values are undefined, so a
    # masked tail would need the mask argument, which older Tritons lack
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(h + tl.arange(0, BINS), tl.histogram(tl.load(x + offs), BINS))


@triton.jit
def tiny_kernel(x, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + o, 1.0, mask=o < n)


def warps_for(block):
    return 16 if block >= 8192 else 8 if block >= 2048 else 4


# ---- inputs and timing -------------------------------------------------------------------

def rand(shape, dtype):
    """Random non-zero values in +-[0.5, 2)."""
    mag = torch.rand(shape, device=DEV, dtype=torch.float32) * 1.5 + 0.5
    sign = torch.randint(0, 2, shape, device=DEV, dtype=torch.int8) * 2 - 1
    return (mag * sign).to(dtype)


def time_us(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3


def checked(run, out, ref, tol):
    """Poisons out, runs once, compares with ref; returns a note ('' when it matches)."""
    out.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    if not torch.allclose(out.float(), ref.float(), rtol=tol, atol=tol):
        return "MISMATCH vs eager"
    return ""


def host_us_per_call(call, batches=50, batch=200):
    """Host time per call, in batches short enough that the launch queue never fills."""
    ts = []
    for _ in range(batches):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(batch):
            call()
        ts.append((time.perf_counter() - t0) / batch * 1e6)
    torch.cuda.synchronize()
    ts.sort()
    return ts[len(ts) // 2]


def try_compile(fn, enabled):
    if not enabled:
        return None
    try:
        c = torch.compile(fn, dynamic=False)
        c()  # compile now, not inside the timing
        return c
    except Exception as e:  # a failed anchor is reported, not fatal
        print(f"anchors: torch.compile failed: {e}", file=sys.stderr)
        return None


# ---- workloads (names match tkbench's) -----------------------------------------------------

def elementwise(name, n, dtype, eager_fn, launch, tol):
    x = rand((n,), dtype)
    y = rand((n,), dtype) if name.startswith("vadd") else None
    args = (x, y) if y is not None else (x,)
    ref = eager_fn(*args)
    out = torch.empty_like(ref)
    note = checked(lambda: launch(*args, out), out, ref, tol)
    res = {"triton": time_us(lambda: launch(*args, out)),
           "eager": time_us(lambda: eager_fn(*args)), "note": note}
    comp = try_compile(lambda: eager_fn(*args), COMPILE)
    res["compile"] = time_us(comp) if comp else math.nan
    return res


def rows(name, r, n, kernel_launch, eager_fn, make_inputs, tol):
    ins = make_inputs(r, n)
    ref = eager_fn(*ins)
    out = torch.empty_like(ref)
    note = checked(lambda: kernel_launch(ins, out), out, ref, tol)
    res = {"triton": time_us(lambda: kernel_launch(ins, out)),
           "eager": time_us(lambda: eager_fn(*ins)), "note": note}
    comp = try_compile(lambda: eager_fn(*ins), COMPILE)
    res["compile"] = time_us(comp) if comp else math.nan
    return res


def cdiv(a, b):
    return (a + b - 1) // b


def bincount(n, bins, skew):
    """torch.bincount(x, minlength=bins) of i32 values, uniform in [0, bins) or with `skew`
    percent of them in bin 7 (tkbench_hist.c's inputs), against Triton's tl.histogram with
    one atomic per bin and program, as samples/bincount.tk does."""
    x = torch.randint(0, bins, (n,), device=DEV, dtype=torch.int32)
    if skew:
        x = torch.where(torch.rand((n,), device=DEV) < skew / 100, 7, x).to(torch.int32)
    eager = lambda: torch.bincount(x, minlength=bins)  # noqa: E731
    ref = eager().to(torch.int32)
    h = torch.zeros(bins, device=DEV, dtype=torch.int32)
    block = 4096
    launch = lambda: bincount_kernel[(cdiv(n, block),)](x, h, BLOCK=block, BINS=bins)  # noqa: E731
    launch()
    torch.cuda.synchronize()
    res = {"note": "" if torch.equal(h, ref) else "MISMATCH vs eager",
           "triton": time_us(launch), "eager": time_us(eager)}
    comp = try_compile(eager, COMPILE)
    res["compile"] = time_us(comp) if comp else math.nan
    return res


def launch_add(x, y, z):
    add_kernel[(cdiv(x.numel(), 1024),)](x, y, z, x.numel(), BLOCK=1024)


def launch_coscos(x, y):
    coscos_kernel[(cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096, num_warps=8)


def launch_gelu(x, y):
    gelu_tanh_kernel[(cdiv(x.numel(), 2048),)](x, y, x.numel(), BLOCK=2048)


def launch_softmax(ins, y):
    (x,) = ins
    r, n = x.shape
    if n > 32768:
        softmax_online_kernel[(r,)](x, y, x.stride(0), n, BLOCK=4096, num_warps=8)
    else:
        block = triton.next_power_of_2(n)
        softmax_kernel[(r,)](x, y, x.stride(0), n, BLOCK=block, num_warps=warps_for(block))


def launch_softmax_chunked(ins, y):
    """Triton's best hand-written kernel for rows too wide for one tile: the chunked online
    softmax (two passes over x), the anchor of tk's one-tile rows (issue 10)."""
    (x,) = ins
    r, n = x.shape
    softmax_online_kernel[(r,)](x, y, x.stride(0), n, BLOCK=4096, num_warps=8)


def norm_inputs(with_bias):
    def make(r, n):
        x = rand((r, n), torch.float16)
        w = rand((n,), torch.float16)
        return (x, w, rand((n,), torch.float16)) if with_bias else (x, w)
    return make


def launch_layernorm(ins, y):
    x, w, b = ins
    r, n = x.shape
    mean = torch.empty(r, device=DEV)
    rstd = torch.empty(r, device=DEV)
    block = triton.next_power_of_2(n)
    layernorm_kernel[(r,)](x, y, w, b, mean, rstd, x.stride(0), n, 1e-5, BLOCK=block,
                           num_warps=warps_for(block))


def launch_rmsnorm(ins, y):
    x, w = ins
    r, n = x.shape
    rstd = torch.empty(r, device=DEV)
    block = triton.next_power_of_2(n)
    rmsnorm_kernel[(r,)](x, y, w, rstd, x.stride(0), n, 1e-5, BLOCK=block,
                         num_warps=warps_for(block))


# The tutorial's autotune configurations for CUDA (fp16/bf16): (BM, BN, BK, GROUP, stages,
# warps); as @triton.autotune would, each is timed and the fastest kept.
TUTORIAL_CONFIGS = [(128, 256, 64, 8, 3, 8), (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4),
                    (128, 64, 32, 8, 4, 4), (64, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4),
                    (64, 32, 32, 8, 5, 2), (32, 64, 32, 8, 5, 2)]


def launch_matmul(a, b, c, cfg=TUTORIAL_CONFIGS[0]):
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk, group, stages, warps = cfg
    matmul_kernel[(cdiv(m, bm) * cdiv(n, bn),)](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk,
                                                GROUP=group, num_warps=warps, num_stages=stages)


def matmul(m, n, k, dtype, fused=False):
    """C = A @ B (fused: gelu(A @ B + bias)) against cuBLAS (torch.matmul, eager), Triton's
    tutorial kernel autotuned over its configurations (plain products only) and
    torch.compile of the same ops."""
    a = rand((m, k), dtype) / 2
    b = rand((k, n), dtype) / 2
    bias = rand((n,), dtype)
    eager = (lambda: F.gelu(torch.matmul(a, b) + bias)) if fused else (lambda: torch.matmul(a, b))
    res = {"eager": time_us(eager), "note": ""}
    res["tflops"] = True
    res["flops"] = 2.0 * m * n * k
    if fused:
        res["triton"] = math.nan
    else:
        ref = eager()
        out = torch.empty_like(ref)
        best, bcfg = math.nan, None
        for cfg in TUTORIAL_CONFIGS:
            if m % cfg[0] or n % cfg[1] or k % cfg[2]:
                continue
            try:
                note = checked(lambda: launch_matmul(a, b, out, cfg), out, ref, 5e-2)
                t = time_us(lambda: launch_matmul(a, b, out, cfg))
            except Exception as e:  # a config Triton cannot build costs that config
                print(f"anchors: matmul config {cfg}: {e}", file=sys.stderr)
                continue
            if note:
                res["note"] = note
            elif best != best or t < best:
                best, bcfg = t, cfg
        res["triton"] = best
        if bcfg:
            res["note"] = (res["note"] + "; " if res["note"] else "") + \
                f"Triton best BM={bcfg[0]} BN={bcfg[1]} BK={bcfg[2]} s={bcfg[4]} w={bcfg[5]}"
    comp = try_compile(eager, COMPILE)
    res["compile"] = time_us(comp) if comp else math.nan
    return res


def matmul_fp8(m, n, k):
    """C = (A @ B^T) * scale for e4m3 A [M, K] and B [N, K], f16 out, against cuBLAS's fp8
    GEMM (torch._scaled_mm, which takes B^T column-major: B's rows as they lie)."""
    a = (torch.randn((m, k), device=DEV) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn((n, k), device=DEV) * 2).to(torch.float8_e4m3fn)
    one = torch.tensor(1.0, device=DEV)
    scale = torch.tensor(1.0 / 64, device=DEV)
    # use_fast_accum: the tensor cores' own fp8 accumulation, what tk's fp8 dot does on
    # sm_90a (docs/language.md §6.6) and Triton's default there; the promoted (slower, more
    # precise) form is timed for the note
    def mm(fast):
        return lambda: torch._scaled_mm(a, b.t(), scale_a=scale, scale_b=one, out_dtype=torch.float16,
                                        use_fast_accum=fast)
    fast, slow = mm(True), mm(False)
    fast(), slow()
    return {"eager": time_us(fast), "triton": math.nan, "compile": math.nan, "tflops": True,
            "flops": 2.0 * m * n * k, "anchor": "cuBLAS fp8",
            "note": f"torch._scaled_mm use_fast_accum=True (False: {time_us(slow):.1f} us)"}


# Configurations in the tutorial's autotune space (BLOCK_M, BLOCK_N, stages, warps), the
# ones that do well on Hopper; each is timed and the fastest kept.
ATTN_CONFIGS = [(128, 64, 3, 4), (128, 64, 3, 8), (128, 128, 3, 8), (64, 64, 4, 4)]


def sdpa_backend(q, k, v, causal, enable_gqa=False):
    """The backend PyTorch's dispatcher picks for these inputs (its own choice function)."""
    try:
        from torch.nn.attention import SDPBackend
        return SDPBackend(torch._fused_sdp_choice(q, k, v, is_causal=causal,
                                                  enable_gqa=enable_gqa)).name
    except Exception as e:  # a private function: name what failed instead
        return f"unknown ({type(e).__name__})"


def attention(b, h, s, d, dtype, causal):
    """Attention forward on [B, H, S, D] inputs: SDPA (the 'eager' column) and the Triton
    tutorial-style kernel over ATTN_CONFIGS."""
    q, k, v = (torch.randn((b, h, s, d), device=DEV, dtype=dtype) for _ in range(3))
    scale = 1.0 / math.sqrt(d)
    sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)  # noqa: E731
    ref = sdpa()
    res = {"eager": time_us(sdpa), "compile": math.nan, "tflops": True, "anchor": "SDPA",
           "flops": 4.0 * b * h * s * s * d * (0.5 if causal else 1.0),
           "note": f"SDPA backend {sdpa_backend(q, k, v, causal)}"}
    out = torch.empty_like(q)
    lse = torch.empty((b, h, s), device=DEV, dtype=torch.float32)
    best, bcfg = math.nan, None
    for cfg in ATTN_CONFIGS:
        bm, bn, stages, warps = cfg
        if s % bm or s % bn:
            continue

        def run(bm=bm, bn=bn, stages=stages, warps=warps):
            attn_fwd_kernel[(s // bm, b * h)](q, k, v, out, lse, scale, s, h, D=d, BM=bm, BN=bn,
                                              CAUSAL=causal, num_warps=warps, num_stages=stages)
        try:
            note = checked(run, out, ref, 2e-2)
            t = time_us(run)
        except Exception as e:  # a config Triton cannot build costs that config
            print(f"anchors: attention config {cfg}: {e}", file=sys.stderr)
            continue
        if note:
            res["note"] += "; Triton " + note
        elif best != best or t < best:
            best, bcfg = t, cfg
    res["triton"] = best
    if bcfg:
        res["note"] += f"; Triton best BM={bcfg[0]} BN={bcfg[1]} s={bcfg[2]} w={bcfg[3]}"
    return res


def decode(b, hq, hkv, s, d, dtype):
    """Decode attention, one query token per sequence: SDPA with enable_gqa=True on q [B,
    H_q, 1, D] and k, v [B, H_kv, S, D] (the 'eager' column), as tkbench_decode.c times
    attention_decode.tk on the same shapes. The rate is the bytes of K and V read."""
    q = torch.randn((b, hq, 1, d), device=DEV, dtype=dtype)
    k, v = (torch.randn((b, hkv, s, d), device=DEV, dtype=dtype) for _ in range(2))
    scale = 1.0 / math.sqrt(d)
    sdpa = lambda: F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=True)  # noqa: E731
    us = time_us(sdpa)
    nbytes = 2.0 * k.numel() * k.element_size()
    return {"eager": us, "compile": math.nan, "triton": math.nan, "anchor": "SDPA", "bytes": nbytes,
            "note": f"SDPA backend {sdpa_backend(q, k, v, False, True)}, "
                    f"SDPA {nbytes / (us * 1e-6) / 1e9:.0f} GB/s of K and V read"}


def measure_all():
    res = {}
    # Triton's cold compile first, while its cache is empty.
    x = rand((4096, 1024), torch.float32)
    y = torch.empty_like(x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    softmax_kernel[(4096,)](x, y, 1024, 1024, BLOCK=1024, num_warps=4)
    torch.cuda.synchronize()
    res["compile triton softmax cold"] = (time.perf_counter() - t0) * 1e3
    del x, y

    x = rand((N28,), torch.float32)
    y = torch.empty_like(x)
    copy_us = time_us(lambda: y.copy_(x))
    res["copy"] = 8.0 * N28 / (copy_us * 1e-6) / 1e9
    # what a kernel that only reads can reach (decode attention's bound): a sum of 1 GiB
    res["read"] = 4.0 * N28 / (time_us(lambda: x.sum()) * 1e-6) / 1e9
    del x, y
    if ONLY:
        res.pop("compile triton softmax cold")

    def guard(name, fn):
        """One anchor failing (a Triton or PyTorch error) costs its row only."""
        if ONLY and ONLY not in name:
            return
        try:
            res[name] = fn()
        except Exception as e:
            print(f"anchors: {name}: {e}", file=sys.stderr)
            res[name] = {"triton": math.nan, "eager": math.nan, "compile": math.nan,
                         "note": "anchor failed"}
        torch.cuda.empty_cache()

    guard("vadd f32 2^28", lambda: elementwise("vadd", N28, torch.float32, torch.add,
                                               launch_add, 1e-6))
    guard("coscos f32 2^28", lambda: elementwise("coscos", N28, torch.float32,
                                                 lambda x: x.cos().cos(), launch_coscos, 1e-5))
    guard("gelu_tanh f16 2^28", lambda: elementwise("gelu", N28, torch.float16,
                                                    lambda x: F.gelu(x, approximate="tanh"),
                                                    launch_gelu, 2e-2))
    for r, n in ((4096, 1024), (4096, 4096), (8192, 8192), (1024, 131072)):
        guard(f"softmax f32 {r}x{n}",
              lambda r=r, n=n: rows("softmax", r, n, launch_softmax,
                                    lambda x: torch.softmax(x, dim=-1),
                                    lambda r, n: (rand((r, n), torch.float32),), 1e-5))
    # issue 10: tk's softmax written as one logical tile against Triton's chunked kernel
    for r, n in ((4096, 32768), (1024, 131072)):
        guard(f"softmax f32 {r}x{n} one tile",
              lambda r=r, n=n: rows("softmax", r, n, launch_softmax_chunked,
                                    lambda x: torch.softmax(x, dim=-1),
                                    lambda r, n: (rand((r, n), torch.float32),), 1e-5))
    # 4096 (one tile a row) and 16384 (wider than a thread's registers: fuse's chunk loops)
    for r, n in ((8192, 4096), (4096, 16384), (8192, 16384), (2048, 65536)):
        guard(f"layernorm f16 {r}x{n}", lambda r=r, n=n: rows(
            "layernorm", r, n, launch_layernorm,
            lambda x, w, b: F.layer_norm(x, (x.shape[1],), w, b, 1e-5), norm_inputs(True), 2e-2))
        guard(f"rmsnorm f16 {r}x{n}", lambda r=r, n=n: rows(
            "rmsnorm", r, n, launch_rmsnorm,
            lambda x, w: F.rms_norm(x, (x.shape[1],), w, 1e-5), norm_inputs(False), 2e-2))

    dts = {"f16": torch.float16, "bf16": torch.bfloat16}
    for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192), (16384, 4096, 4096), (8192, 1024, 8192)):
        for dn, dt in dts.items():
            shape = f"{m}^3" if m == n == k else f"{m}x{n}x{k}"
            guard(f"matmul {dn} {shape}", lambda m=m, n=n, k=k, dt=dt: matmul(m, n, k, dt))
    # the logical-K kernel computes the same product: the same anchors, measured once
    if isinstance(res.get("matmul f16 4096^3"), dict):
        res["matmul logical-K f16 4096^3"] = dict(res["matmul f16 4096^3"])
    guard("matmul+bias+gelu f16 4096^3", lambda: matmul(4096, 4096, 4096, torch.float16, True))
    for s in (4096, 8192):
        guard(f"matmul fp8 e4m3 {s}^3", lambda s=s: matmul_fp8(s, s, s))
    for dn, dt in dts.items():
        for d in (128, 64):
            for s in (4096, 16384):
                for causal in (False, True):
                    name = f"attention {dn} B4 H32 S{s} D{d}" + (" causal" if causal else "")
                    guard(name, lambda s=s, d=d, dt=dt, causal=causal: attention(4, 32, s, d, dt, causal))
    for dn, dt in dts.items():
        for b, s in ((32, 8192), (32, 131072), (1, 131072), (4, 131072)):
            name = f"decode {dn} B{b} Hq32 Hkv8 S{s} D128"
            guard(name, lambda b=b, s=s, dt=dt: decode(b, 32, 8, s, 128, dt))

    guard("bincount i32 2^28 256 bins", lambda: bincount(N28, 256, 0))
    guard("bincount i32 2^28 256 bins skewed", lambda: bincount(N28, 256, 90))

    t = torch.zeros(128, device=DEV)
    tiny_kernel[(1,)](t, 0, BLOCK=128)
    res["launch triton"] = host_us_per_call(lambda: tiny_kernel[(1,)](t, 0, BLOCK=128))
    one = torch.zeros(1, device=DEV)
    res["launch torch"] = host_us_per_call(lambda: one.add_(1))
    return res


# ---- the table ---------------------------------------------------------------------------

def read_tk(path):
    tk = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 4 and parts[0] == "tk":
                try:
                    v = float(parts[2])
                except ValueError:
                    v = math.nan
                key = (parts[1], parts[3])
                # tkbench may time several kernels for one workload: keep the fastest
                old = tk.get(key)
                if old and not math.isnan(old[0]) and (math.isnan(v) or
                                                       (v >= old[0] if parts[3] == "us"
                                                        else v <= old[0])):
                    continue
                tk[key] = (v, parts[4] if len(parts) > 4 else "")
    return tk


def fmt(v, digits=1):
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def ratio(anchor, mine):
    if mine is None or anchor is None or math.isnan(mine) or math.isnan(anchor) or mine == 0:
        return "n/a"
    return f"{anchor / mine:.2f}"


def table(tk, res):
    copy = res.get("copy", math.nan)
    out = ["| workload | tk µs | Triton µs | eager µs | compiled µs | vs Triton | vs eager "
           "| vs compiled | tk GB/s | % of copy | notes |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    names = [k for k in res if isinstance(res[k], dict)]
    for name in names:
        a = res[name]
        us, note = tk.get((name, "us"), (math.nan, "not run"))
        gbs = tk.get((name, "GB/s"), (math.nan, ""))[0]
        prefix = "" if a.get("anchor") else "Triton "
        notes = "; ".join(s for s in (note if note != "checked" else "", a["note"] and
                                      prefix + a["note"]) if s)
        if a.get("bytes") and us == us:
            rd = res.get("read", math.nan)
            tk_gbs = a["bytes"] / us / 1e3
            notes = (f"tk {tk_gbs:.0f} GB/s of K and V ({fmt(100 * tk_gbs / rd, 0)}% of read), "
                     f"SDPA {a['bytes'] / a['eager'] / 1e3:.0f}; " + notes)
        if a.get("flops") and us == us:
            f = a["flops"]
            notes = (f"tk {f / us / 1e6:.0f} TFLOP/s ({100 * f / us / 1e6 / 790:.0f}% of 790), "
                     f"{a.get('anchor', 'cuBLAS')} {f / a['eager'] / 1e6:.0f}; " + notes)
        out.append(f"| {name} | {fmt(us)} | {fmt(a['triton'])} | {fmt(a['eager'])} | "
                   f"{fmt(a['compile'])} | {ratio(a['triton'], us)} | {ratio(a['eager'], us)} | "
                   f"{ratio(a['compile'], us)} | {fmt(gbs, 0)} | "
                   f"{fmt(100 * gbs / copy if copy == copy else math.nan, 0)} | {notes} |")
    out.append("")
    out.append(f"Copy bandwidth (torch copy_, f32 2^28): {fmt(copy, 0)} GB/s; read bandwidth "
               f"(torch sum, f32 2^28): {fmt(res.get('read', math.nan), 0)} GB/s. "
               "Ratios are anchor time / tk time: above 1, tk is faster.")
    out.append("")
    out.append("| overhead | µs or ms | note |")
    out.append("|---|---|---|")
    for key in ("launch tk_launch", "launch cuLaunchKernel", "launch tk/raw"):
        v, note = tk.get((key, "us" if "/" not in key else "x"), (math.nan, "not run"))
        out.append(f"| {key} | {fmt(v, 2)} | {note} |")
    out.append(f"| launch Triton (Python) | {fmt(res.get('launch triton'), 2)} | host µs per launch |")
    out.append(f"| launch PyTorch tiny op | {fmt(res.get('launch torch'), 2)} | host µs per op |")
    for (key, unit), (v, note) in sorted(tk.items()):
        if key.startswith("compile"):
            out.append(f"| {key} | {fmt(v, 1)} {unit} | {note} |")
    out.append(f"| compile triton softmax cold | {fmt(res.get('compile triton softmax cold'), 1)} ms "
               "| first call, empty cache |")
    return "\n".join(out)


def fusion_table(tk):
    """tk's own columns: each workload fused and -fno-fuse (every op's result through global
    scratch memory, the unfused baseline), their ratio, and the measured time as a share of
    the roofline's predicted bound (tk_roofline: 100% is the bound)."""
    out = ["| workload | fused µs | -fno-fuse µs | fusion speedup | predicted bound µs | "
           "% of bound |", "|---|---|---|---|---|---|"]
    names = [k[0] for k in tk if k[1] == "us" and not k[0].endswith(" -fno-fuse")
             and not k[0].endswith(" roofline")]
    for name in names:
        us = tk[(name, "us")][0]
        nf = tk.get((name + " -fno-fuse", "us"), (math.nan, ""))[0]
        bound = tk.get((name + " roofline", "us"), (math.nan, ""))[0]
        if nf != nf and bound != bound:
            continue
        out.append(f"| {name} | {fmt(us)} | {fmt(nf)} | {fmt(nf / us if us == us else math.nan, 2)}x | "
                   f"{fmt(bound)} | {fmt(100 * bound / us if us == us else math.nan, 0)} |")
    return "\n".join(out)


def roofline_agreement(tk):
    """tkbench's closing row: how many workloads measured within 20% of the roofline's
    prediction, and the others with their % of bound (empty when the run had none)."""
    for (key, unit), (v, note) in tk.items():
        if key.startswith("roofline within 20%"):
            return f"\n\n{key}: {fmt(v, 0)} {unit}. {note}"
    return ""


def main():
    global COMPILE
    ap = argparse.ArgumentParser()
    ap.add_argument("--tk", required=True, help="tkbench's output")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--only", default="", help="only the workloads whose name contains this")
    args = ap.parse_args()
    COMPILE = not args.no_compile
    global ONLY
    ONLY = args.only
    torch.manual_seed(int(time.time()))
    res = measure_all()
    tk = read_tk(args.tk)
    text = table(tk, res) + "\n\n" + fusion_table(tk) + roofline_agreement(tk)
    print(text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "RESULTS.md"), "w") as f:
            f.write("# tk benchmark results\n\n" + text + "\n")


COMPILE = True
ONLY = ""

if __name__ == "__main__":
    main()
