"""tilek.tune on the interpreter with a fake clock: the fastest median wins, the winner is
kept on disk per key (a second call times nothing), warps and stages are configuration
fields, callbacks' exceptions come back, and the arguments are written as by a launch."""
import array
import atexit
import os
import shutil
import tempfile
import unittest

import tilek
from common import run

SRC = """
kernel twice<BLOCK: i32 = 64>(x: *f32, n: i32) {
    let o = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + o, load(x + o, o < n) * 2.0, o < n);
}
"""
CONFIGS = [{"BLOCK": 32}, {"BLOCK": 64, "warps": 2}, {"BLOCK": 128, "stages": 2}, {"BLOCK": 256}]


def grid(n):
    return lambda meta: (tilek.cdiv(n, meta["BLOCK"]),)


class Tune(unittest.TestCase):
    def setUp(self):
        self.calls = []

    def clock(self, ms):
        def timer(config, rep):
            self.calls.append((config, rep))
            return ms[config][rep]
        return timer

    def tune(self, key, ms, x=None, **kw):
        x = x if x is not None else array.array("f", [1.0] * 100)
        return tilek.tune(SRC, "twice", CONFIGS, (x, 100), grid(100), key=key, backend="interp",
                          warmup=1, reps=3, timer=self.clock(ms), **kw)

    def test_numerics_options_reach_every_configuration(self):
        src = """
kernel muladd<BLOCK: i32 = 16>(x: *f32, c: f32) {
    let o = arange(0, BLOCK);
    let v = load(x + o);
    store(x + o, v * v + c);
}
"""
        # (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 with an fma, 0 without
        for mode, want in (("off", 0.0), ("fast", 2**-24)):
            x = array.array("f", [1 + 2**-12] * 32)
            t = tilek.tune(src, "muladd", [{"BLOCK": 16}, {"BLOCK": 32}], (x, -(1 + 2**-11)), 1,
                           key=mode, backend="interp", reps=1, timer=lambda c, r: c + 1.0,
                           tune_cache=False, fp_contract=mode)
            self.assertEqual(t.best, 0)
            x = array.array("f", [1 + 2**-12] * 32)
            t[1](x, -(1 + 2**-11))
            self.assertEqual(x[0], want)
        with self.assertRaises(ValueError):
            tilek.tune(src, "muladd", [{}], (x, 0.0), 1, backend="interp", math="exact")

    def test_fastest_median_wins_and_runs(self):
        ms = [[5, 5, 5], [1, 9, 1], [2, 2, 2], [0.5, 0.4, 30]]
        x = array.array("f", [1.0] * 100)
        t = self.tune("a", ms, x)
        self.assertEqual(t.best, 3)
        self.assertEqual(t.config, {"BLOCK": 256})
        self.assertEqual(t.times, [5, 1, 2, 0.5])
        self.assertEqual(len(self.calls), 12)
        self.assertEqual(t.kernel.meta, {"BLOCK": 256})
        # each configuration ran once to warm up and three times timed: 16 doublings
        self.assertEqual(x[0], 2.0 ** 16)
        y = array.array("f", [3.0] * 100)
        t[(1,)](y, 100)
        self.assertEqual(list(y), [6.0] * 100)

    def test_winner_cached_per_key(self):
        ms = [[5, 5, 5], [1, 1, 1], [2, 2, 2], [3, 3, 3]]
        self.assertEqual(self.tune("b", ms).best, 1)
        self.calls.clear()
        flipped = [[1, 1, 1], [5, 5, 5], [2, 2, 2], [3, 3, 3]]
        t = self.tune("b", flipped)
        self.assertEqual((t.best, self.calls, t.times), (1, [], [None] * 4))
        self.assertEqual(t.config, {"BLOCK": 64, "warps": 2})
        self.assertEqual(t.kernel.num_threads, 64)
        self.assertEqual(self.tune("c", flipped).best, 0)
        self.assertEqual(self.tune("b", flipped, tune_cache=False).best, 0)

    def test_record(self):
        path = os.path.join(os.environ["TK_CACHE_DIR"], "winners.txt")
        ms = [[5, 5, 5], [1, 1, 1], [2, 2, 2], [3, 3, 3]]
        self.tune("n=100", ms, record=path)
        self.tune("n=100", ms, record=path)  # from the cache: recorded again
        with open(path) as f:
            self.assertEqual(f.read(), "n=100: BLOCK=64 warps=2\n" * 2)

    def test_callback_errors(self):
        def bad_timer(config, rep):
            raise KeyError("boom")
        x = array.array("f", [1.0] * 100)
        with self.assertRaises(KeyError):
            tilek.tune(SRC, "twice", CONFIGS, (x, 100), grid(100), key="d", backend="interp",
                       reps=1, timer=bad_timer)
        with self.assertRaises(KeyError):
            tilek.tune(SRC, "twice", CONFIGS, (x, 100), lambda meta: meta["NOPE"], key="e",
                       backend="interp", reps=1, timer=lambda c, r: 1.0)

    def test_argument_and_config_errors(self):
        x = array.array("f", [1.0] * 100)
        with self.assertRaises(TypeError) as e:
            tilek.tune(SRC, "twice", CONFIGS, (x, 1.5), 1, backend="interp", timer=lambda c, r: 1.0)
        self.assertIn("'n'", str(e.exception))
        with self.assertRaises(tilek.CompileError) as e:
            tilek.tune(SRC, "twice", [{"BLOCK": 48}], (x, 100), 1, backend="interp",
                       timer=lambda c, r: 1.0, key="f")
        self.assertIn("every configuration", str(e.exception))
        with self.assertRaises(ValueError):
            tilek.tune(SRC, "twice", [], (x, 100), 1, backend="interp")


if __name__ == "__main__":
    os.environ["TK_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilek-tune-")  # winners of this run only
    atexit.register(shutil.rmtree, os.environ["TK_CACHE_DIR"], True)
    run()
