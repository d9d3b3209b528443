"""tilek — tk kernels from Python.

Compile a .tk source (a string or a file) with compile-time parameters, get its kernels,
and launch them Triton-style::

    import tilek, torch
    mod = tilek.compile(SOURCE, cparams={"BLOCK": 1024})
    mod.vadd[(tilek.cdiv(n, 1024),)](x, y, out, n)

Kernels take PyTorch tensors, objects with ``__cuda_array_interface__`` or ``__dlpack__``,
and Python ints, floats and bools, checked against their signature; they launch on the
caller's current PyTorch stream. With ``backend="interp"`` (or ``TK_INTERPRET=1``, or
without a GPU) they run on tk's bounds-checking interpreter over NumPy arrays and CPU
tensors. See docs/python.md.
"""
import os

from ._tilek import CompileError, Error, Kernel, Launch
from . import _tilek

__all__ = ["compile", "compile_file", "tune", "Tuned", "context", "cdiv", "Module", "Kernel",
           "Launch", "Error", "CompileError"]

_contexts = {}


def context(backend="auto", device=0):
    """The shared libtk context for (backend, device): 'auto' (the GPU when there is one
    and TK_INTERPRET is unset, else the interpreter), 'cuda' or 'interp'."""
    key = (backend, device)
    ctx = _contexts.get(key)
    if ctx is None:
        ctx = _contexts[key] = _tilek.Context(backend, device)
    return ctx


def cdiv(a, b):
    """ceil(a / b) for ints: the number of programs that cover a elements, b at a time."""
    return -(-a // b)


def _literal(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return v
    raise TypeError(f"a compile-time parameter is an int, float or bool, not {type(v).__name__}")


class Module:
    """A compiled .tk module: its kernels are attributes (``mod.vadd``) and items
    (``mod["vadd"]``)."""

    def __init__(self, handle, name):
        self._handle = handle
        self.name = name
        self._kernels = {}

    @property
    def kernel_names(self):
        return self._handle.kernel_names()

    def __getitem__(self, name):
        k = self._kernels.get(name)
        if k is None:
            k = self._kernels[name] = self._handle.kernel(name)
        return k

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(str(e)) from None

    def __repr__(self):
        return f"<tilek.Module {self.name}: {', '.join(self.kernel_names)}>"


# tk_dot_precision's values, by tkc -fdot-precision's (and Triton's input_precision) names
_DOT_PRECISION = {"tf32": 1, "ieee": 2, "tf32x3": 3}


def _choice(option, value, choices):
    if value not in choices:
        raise ValueError(f"{option} must be {', '.join(map(repr, choices))}; not {value!r}")
    return value


def _numerics(dot_precision, math, fp_contract, fuse):
    """compile()'s numerics keywords as tk_compile_options' (dot_precision, accurate_math,
    fp_contract, no_fuse): tkc's -fdot-precision, -fmath, -ffp-contract and -fno-fuse."""
    prec = 0 if dot_precision is None else _DOT_PRECISION[
        _choice("dot_precision", dot_precision, tuple(_DOT_PRECISION))]
    return (prec, _choice("math", math, ("fast", "accurate")) == "accurate",
            _choice("fp_contract", fp_contract, ("off", "fast")) == "fast",
            not _choice("fuse", fuse, (True, False)))


def compile(source, *, name="<source>", cparams=None, opt_level=3, arch=None, cache=True,
            backend="auto", device=0, dot_precision=None, math="fast", fp_contract="off",
            fuse=True):
    """Compiles .tk source text. cparams binds compile-time parameters (as tkc -D);
    arch names the target (default: the device's); cache=False bypasses the disk cache.
    The numerics are tkc's (docs/language.md, Precision): dot_precision, the input
    precision of an f32 dot that names none ("tf32", the default, "tf32x3" or "ieee";
    -fdot-precision); math="accurate" for libdevice's full-range f32 sin, cos, exp,
    exp2 and sigmoid on the GPU (-fmath); fp_contract="fast" to let a * b + c become one
    fma on both backends (-ffp-contract); fuse=False for the unfused baseline (-fno-fuse).
    Raises CompileError with every diagnostic rendered."""
    if isinstance(source, bytes):
        source = source.decode()
    defines = [(str(k), _literal(v)) for k, v in (cparams or {}).items()]
    handle = _tilek.compile(context(backend, device), source, name, defines, opt_level, arch,
                            not cache, *_numerics(dot_precision, math, fp_contract, fuse))
    return Module(handle, name)


def compile_file(path, **kw):
    """Reads and compiles a .tk file (the keywords are compile()'s)."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        return compile(f.read(), name=kw.pop("name", path), **kw)


class Tuned:
    """What tune() found: the winning kernel (compiled), its configuration and index, and
    every configuration's median time in ms (None: not timed — it failed, or the winner
    came from the disk cache)."""

    def __init__(self, kernel, best, config, times):
        self.kernel, self.best, self.config, self.times = kernel, best, config, times

    def __getitem__(self, grid):
        return self.kernel[grid]

    def __repr__(self):
        return f"<tilek.Tuned {self.kernel.name}: config {self.best} {self.config}>"


def tune(source, kernel, configs, args, grid, *, key="", name="<source>", cparams=None,
         opt_level=3, arch=None, cache=True, tune_cache=True, backend="auto", device=0,
         warmup=0, reps=0, jobs=0, progress=False, flush=True, timer=None, stream=None,
         record=None, dot_precision=None, math="fast", fp_contract="off", fuse=True):
    """Autotunes `kernel` of `source` over `configs` (dicts of compile-time parameters,
    plus "warps" and "stages"): compiles each (in parallel on CUDA), launches it on `args`
    over `grid` (an int, a tuple, or a callable taking the configuration's meta), times it
    on the device (CUDA events, L2 flushed, `warmup` launches, the median of `reps`), and
    returns a Tuned with the fastest. The winner is kept on disk per (source, kernel,
    cparams, configs, the arguments' types and alignment, arch, `key`), so a later
    process gets it without timing anything: put the sizes that matter in `key`.
    The launches write to `args` as the kernel does. `timer(config, rep) -> ms` replaces
    the clock (tests). `record`: a file the winner is appended to as "KEY: CONFIG", what
    `tkc --tune=FILE --emit=c` compiles into launchers that pick a configuration by key.
    dot_precision, math, fp_contract and fuse are compile()'s, for every configuration."""
    if isinstance(source, bytes):
        source = source.decode()
    if not configs:
        raise ValueError("tune: no configurations")
    base = [(str(k), _literal(v)) for k, v in (cparams or {}).items()]
    numerics = _numerics(dot_precision, math, fp_contract, fuse)
    cfgs = []
    for c in configs:
        c = dict(c)
        warps, stages = int(c.pop("warps", 0)), int(c.pop("stages", 0))
        cfgs.append(([(str(k), _literal(v)) for k, v in c.items()], warps, stages))
    ctx = context(backend, device)
    # the signature the arguments are checked against: every configuration shares it
    sig_mod = _tilek.compile(ctx, source, name, base, opt_level, arch, not cache, *numerics)
    handle, best, times = _tilek.tune(
        sig_mod.kernel(kernel), source, name, base, opt_level, arch, not cache, cfgs, grid,
        tuple(args), str(key), warmup, reps, jobs, bool(progress), not tune_cache, not flush,
        timer, stream, None if record is None else os.fspath(record), *numerics)
    return Tuned(Module(handle, name)[kernel], best, dict(configs[best]), times)
