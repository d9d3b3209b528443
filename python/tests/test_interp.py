"""The binding on the interpreter: compiling, signatures, launches over host memory
(array.array always; NumPy and CPU tensors when installed), and every argument check."""
import array
import os
import unittest

import tilek
from common import ROOT, SCALE, VADD, optional, run

np = optional("numpy")
torch = optional("torch")


def interp(src, **kw):
    return tilek.compile(src, backend="interp", **kw)


class Compile(unittest.TestCase):
    def test_signature_and_meta(self):
        m = interp(VADD, cparams={"BLOCK": 64})
        self.assertEqual(m.kernel_names, ["vadd"])
        k = m.vadd
        self.assertIs(k, m["vadd"])
        self.assertEqual(k.name, "vadd")
        self.assertEqual(k.signature, [("x", "*f32"), ("y", "*f32"), ("out", "*f32"), ("n", "i32")])
        self.assertEqual(k.meta, {"BLOCK": 64})
        self.assertEqual(interp(VADD).vadd.meta, {"BLOCK": 256})
        self.assertIn("vadd(x: *f32", repr(k))

    def test_dtype_parameter(self):
        src = """kernel fill<T: dtype = f32, B: i32 = 8>(x: *T, v: f32) {
    store(x + arange(0, B), zeros<T>(B) + v as T);
}"""
        k = interp(src, cparams={"T": "f64"}).fill
        self.assertEqual(k.meta, {"T": "f64", "B": 8})
        self.assertEqual(k.signature, [("x", "*f64"), ("v", "f32")])
        x = array.array("d", [0.0] * 8)
        k[1](x, 2.5)
        self.assertEqual(list(x), [2.5] * 8)

    def test_compile_file(self):
        m = tilek.compile_file(os.path.join(ROOT, "samples", "vadd.tk"), backend="interp")
        self.assertIn("vadd", m.kernel_names)

    def test_compile_error_is_located(self):
        with self.assertRaises(tilek.CompileError) as e:
            interp("kernel k(x: *f32) {\n  let y = ;\n}\n", name="bad.tk")
        self.assertIn("bad.tk:2:", str(e.exception))
        self.assertIn("^", str(e.exception))
        self.assertTrue(issubclass(tilek.CompileError, tilek.Error))

    def test_bad_options(self):
        with self.assertRaises(tilek.Error):
            interp(VADD, arch="sm_1")
        with self.assertRaises(TypeError):
            interp(VADD, cparams={"BLOCK": [1]})
        with self.assertRaises(ValueError):
            tilek.compile(VADD, backend="tpu")

    def test_unknown_kernel(self):
        m = interp(VADD)
        with self.assertRaises(AttributeError) as e:
            m.nope
        self.assertIn("vadd", str(e.exception))


class Launch(unittest.TestCase):
    n = 1000

    def setUp(self):
        self.k = interp(VADD, cparams={"BLOCK": 128}).vadd
        self.x = array.array("f", range(self.n))
        self.y = array.array("f", [1.0] * self.n)
        self.out = array.array("f", [0.0] * self.n)

    def check(self):
        self.assertEqual(list(self.out), [float(i) + 1 for i in range(self.n)])

    def test_grid_forms(self):
        n = self.n
        for grid in (8, (8,), [8, 1], (8, 1, 1), lambda meta: (tilek.cdiv(n, meta["BLOCK"]),)):
            self.out = array.array("f", [0.0] * n)
            self.k[grid](self.x, self.y, self.out, n)
            self.check()

    def test_empty_grid_checks_and_runs_nothing(self):
        self.k[0](self.x, self.y, self.out, self.n)
        self.assertEqual(sum(self.out), 0)
        with self.assertRaises(TypeError):
            self.k[0](self.x, self.y, self.out, 1.0)

    def test_bad_grids(self):
        for grid, exc in ((-1, ValueError), ((1, 2, 3, 4), ValueError), ("8", TypeError),
                          ((1, 70000), ValueError), (1.5, TypeError)):
            with self.assertRaises(exc, msg=repr(grid)):
                self.k[grid]

    def test_argument_errors_name_the_parameter(self):
        k, x, y, out, n = self.k, self.x, self.y, self.out, self.n
        cases = [
            ((x, y, out), TypeError, "takes 4 arguments, got 3"),
            ((x, y, out, 2**40), OverflowError, "'n' (parameter 3, i32)"),
            ((x, y, out, -2**31 - 1), OverflowError, "'n'"),
            ((x, y, out, 1.5), TypeError, "'n' (parameter 3, i32): expected an int"),
            ((x, y, array.array("d", [0.0] * n), n), TypeError, "'out' (parameter 2, *f32)"),
            ((x, 3, out, n), TypeError, "'y' (parameter 1, *f32): expected an array"),
            ((x, None, out, n), TypeError, "'y'"),
        ]
        for args, exc, text in cases:
            with self.assertRaises(exc, msg=text) as e:
                k[8](*args)
            self.assertIn(text, str(e.exception))

    def test_keywords(self):
        with self.assertRaises(TypeError):
            self.k[8](self.x, self.y, self.out, n=self.n)
        self.k[8](self.x, self.y, self.out, self.n, stream=None)  # ignored by the interpreter
        self.check()

    def test_out_of_bounds_is_an_error(self):
        short = array.array("f", [0.0] * 10)
        with self.assertRaises(tilek.Error) as e:
            self.k[8](self.x, self.y, short, self.n)
        self.assertIn("vadd", str(e.exception))

    def test_read_only_input(self):
        x = bytes(array.array("f", range(self.n)))
        k = interp(VADD.replace("x: *f32", "x: *u8").replace("load(x + offs, mask)", "0.0")).vadd
        k[8](x, self.y, self.out, self.n)
        self.assertEqual(list(self.out), [1.0] * self.n)

    def test_aliasing_is_one_buffer(self):
        self.k[8](self.y, self.y, self.y, self.n)
        self.assertEqual(list(self.y), [2.0] * self.n)
        mv = memoryview(self.y)
        with self.assertRaises(ValueError) as e:
            self.k[8](mv[1:], self.x, self.y, self.n - 1)
        self.assertIn("overlaps", str(e.exception))

    def test_scalars(self):
        k = interp(SCALE.replace("f16", "f32")).scale  # array.array has no f16
        self.assertEqual(k.signature[2:], [("a", "f32"), ("n", "i64"), ("flip", "i1")])
        x = array.array("f", [1.0, 2.0, 3.0])
        out = array.array("f", [0.0] * 3)
        k[1](x, out, 2, 3, True)  # an int is a fine f32
        self.assertEqual(list(out), [-2.0, -4.0, -6.0])
        k[1](x, out, 0.5, 3, 0)
        self.assertEqual(list(out), [0.5, 1.0, 1.5])
        with self.assertRaises(OverflowError):
            k[1](x, out, 1.0, 3, 2)
        with self.assertRaises(TypeError):
            k[1](x, out, "1", 3, True)
        with self.assertRaises(OverflowError):
            k[1](x, out, 1.0, 2**63, True)


@unittest.skipIf(np is None, "numpy is not installed")
class NumPy(unittest.TestCase):
    def test_vadd(self):
        k = interp(VADD).vadd
        n = 3000
        x = np.random.rand(n).astype(np.float32)
        y = np.random.rand(n).astype(np.float32)
        out = np.full(n, np.nan, np.float32)
        k[tilek.cdiv(n, 256)](x, y, out, n)
        np.testing.assert_array_equal(out, x + y)

    def test_numpy_grid(self):
        k = interp(VADD).vadd
        x = np.ones(512, np.float32)
        out = np.zeros(512, np.float32)
        k[np.int64(2)](x, x, out, 512)
        k[(np.int32(2),)](x, x, out, 512)
        np.testing.assert_array_equal(out, 2 * x)

    def test_strided_view_and_dtype(self):
        k = interp(VADD).vadd
        base = np.zeros((4, 8), np.float32)
        col = base[:, 1]  # strided: the launch sees its first element's address
        k[1](np.ones(1, np.float32), np.ones(1, np.float32), col, 1)
        self.assertEqual(base[0, 1], 2.0)
        with self.assertRaises(TypeError) as e:
            k[1](np.ones(4, np.float64), np.ones(4, np.float32), np.ones(4, np.float32), 4)
        self.assertIn("'x' (parameter 0, *f32): expected elements of f32, got f64", str(e.exception))

    def test_numpy_scalars(self):
        k = interp(SCALE).scale
        x = np.arange(4, dtype=np.float16)
        out = np.zeros(4, np.float16)
        k[1](x, out, np.float32(3), np.int64(4), np.bool_(False))
        np.testing.assert_array_equal(out, x * 3)


DOT = """
kernel mm(a: *f32, b: *f32, c: *f32) {
    let r = arange(0, 16);
    let ta = load(a + r[:, None] * 16 + r[None, :]);
    let tb = load(b + r[:, None] * 16 + r[None, :]);
    store(c + r[:, None] * 16 + r[None, :], dot(ta, tb));
}
"""

MULADD = """
kernel muladd(x: *f32, out: *f32, c: f32) {
    let o = arange(0, 16);
    let v = load(x + o);
    store(out + o, v * v + c);
}
"""


class Numerics(unittest.TestCase):
    """compile()'s numerics keywords reach libtk as tkc's flags do (docs/language.md,
    Precision); the interpreter emulates each choice."""

    def test_dot_precision(self):
        # a's column 0 is 1 + 2^-12, b's row 0 is 1: c = a[:, 0], which tf32 rounds to 1
        a = array.array("f", [0.0] * 256)
        b = array.array("f", [0.0] * 256)
        for i in range(16):
            a[i * 16] = 1 + 2**-12
            b[i] = 1.0
        got = {}
        for prec in (None, "tf32", "ieee", "tf32x3"):
            c = array.array("f", [0.0] * 256)
            interp(DOT, dot_precision=prec).mm[1](a, b, c)
            got[prec] = c[0]
        self.assertEqual(got, {None: 1.0, "tf32": 1.0, "ieee": 1 + 2**-12, "tf32x3": 1 + 2**-12})

    def test_fp_contract(self):
        # (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24, which the rounded product loses
        x = array.array("f", [1 + 2**-12] * 16)
        got = {}
        for mode in ("off", "fast"):
            out = array.array("f", [1.0] * 16)
            interp(MULADD, fp_contract=mode).muladd[1](x, out, -(1 + 2**-11))
            got[mode] = out[0]
        self.assertEqual(got, {"off": 0.0, "fast": 2**-24})
        out = array.array("f", [1.0] * 16)
        interp(MULADD).muladd[1](x, out, -(1 + 2**-11))
        self.assertEqual(out[0], 0.0)  # off is the default

    def test_unfused_and_accurate_compute_the_same(self):
        x, y = array.array("f", range(300)), array.array("f", [0.5] * 300)
        for kw in ({"fuse": False}, {"math": "accurate"}):
            out = array.array("f", [0.0] * 300)
            interp(VADD, **kw).vadd[2](x, y, out, 300)
            self.assertEqual(list(out), [v + 0.5 for v in range(300)])

    def test_bad_values(self):
        for kw, text in [({"dot_precision": "fp16"}, "dot_precision must be 'tf32', 'ieee', 'tf32x3'"),
                         ({"math": "exact"}, "math must be 'fast', 'accurate'"),
                         ({"fp_contract": "on"}, "fp_contract must be 'off', 'fast'"),
                         ({"fuse": "no"}, "fuse must be True, False")]:
            with self.subTest(kw=kw):
                with self.assertRaises(ValueError) as e:
                    interp(VADD, **kw)
                self.assertIn(text, str(e.exception))


@unittest.skipIf(torch is None, "torch is not installed")
class TorchCPU(unittest.TestCase):
    def test_cpu_tensors(self):
        k = interp(VADD).vadd
        x, y = torch.rand(777), torch.rand(777)
        out = torch.empty(777)
        k[4](x, y, out, 777)
        self.assertTrue(torch.equal(out, x + y))
        with self.assertRaises(TypeError) as e:
            k[4](x.double(), y, out, 777)
        self.assertIn("torch.float64", str(e.exception))


if __name__ == "__main__":
    run()
