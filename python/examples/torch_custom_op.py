"""A tk kernel as a PyTorch operator: registered with torch.library.custom_op, given a
fake (meta) implementation with register_fake, so that torch.compile traces through it
and torch.library.opcheck accepts it. Run it: python3 torch_custom_op.py (needs a GPU).
python/tests/test_torch.py tests this very file."""
import torch

import tilek

SOURCE = """
// out = x + a * y, BLOCK elements per program
kernel axpy<BLOCK: i32 = 1024>(x: *f32, y: *f32, out: *f32, a: f32, n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(out + offs, load(x + offs, mask) + a * load(y + offs, mask), mask);
}
"""

_kernels = {}


def kernel(device):
    """The kernel compiled for a CUDA device, once per device (in milliseconds)."""
    k = _kernels.get(device)
    if k is None:
        k = _kernels[device] = tilek.compile(SOURCE, name="axpy.tk", backend="cuda",
                                             device=device).axpy
    return k


@torch.library.custom_op("tilek_examples::axpy", mutates_args=())
def axpy(x: torch.Tensor, y: torch.Tensor, a: float) -> torch.Tensor:
    torch._check(x.shape == y.shape, lambda: "axpy: x and y differ in shape")
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    kernel(x.device.index or 0)[(tilek.cdiv(n, 1024),)](x, y, out, a, n)
    return out


@axpy.register_fake
def _(x, y, a):
    torch._check(x.shape == y.shape, lambda: "axpy: x and y differ in shape")
    return torch.empty_like(x)


if __name__ == "__main__":
    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    f = torch.compile(lambda x, y: torch.relu(axpy(x, y, 2.0)))
    torch.testing.assert_close(f(x, y), torch.relu(x + 2.0 * y))
    print("axpy through torch.compile: ok")
