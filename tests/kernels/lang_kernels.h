/* lang_kernels.h — the kernels of the language-form tests (docs/language.md), shared by
 * the interpreter test (tests/interp/test_lang.c, against C computations of what the
 * reference says) and the GPU test (tests/gpu/gpu_lang.c, against the interpreter). */
#ifndef TK_TESTS_LANG_KERNELS_H
#define TK_TESTS_LANG_KERNELS_H

static const char SCALE[] =
    "kernel scale<T: dtype = f16, ACC: dtype = f32, BLOCK: i32 = 64>(x: *T, y: *T, n: i32) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = offs < n;\n"
    "    let v: T = load(x + offs, m, 0.0);\n"
    "    let acc: ACC = (v as ACC) * 2.0 + full<ACC>(1.0, BLOCK);\n"
    "    store(y + offs, acc as T, m);\n"
    "}\n";

static const char EXIT[] =
    "kernel rows<B: i32 = 32>(x: *f32, y: *f32, n: i32, nrows: i32) {\n"
    "    let row = program_id(0);\n"
    "    if row >= nrows { return; }\n"
    "    var f = 2.0;\n"
    "    if row == 0 {\n"
    "        store(y, -1.0);\n"
    "        return;\n"
    "    } else if row == 1 {\n"
    "        f = 3.0;\n"
    "    }\n"
    "    let o = arange(0, B);\n"
    "    store(y + row * n + o, load(x + row * n + o, o < n) * f, o < n);\n"
    "}\n";

static const char LOOPS[] =
    "kernel loops(out: *i32, n: i32) {\n"
    "    let pid = program_id(0);\n"
    "    let lim = 10 + pid * 7;\n"
    "    var i = 0;\n"
    "    var s = 0;\n"
    "    while i < n {\n"
    "        i += 1;\n"
    "        if i % 3 == 0 { continue; }\n"
    "        s += i;\n"
    "        if s > lim { break; }\n"
    "    }\n"
    "    var t = 0;\n"
    "    for j in range(0, n + pid) {\n"
    "        if j % 2 == 1 { continue; } else if j == 5 + pid { break; }\n"
    "        t += j;\n"
    "    }\n"
    "    var v = arange(0, 16) * 0;\n"
    "    var steps = 0;\n"
    "    while max(v, 0) < pid {\n"
    "        v += arange(0, 16) % 3;\n"
    "        steps += 1;\n"
    "    }\n"
    "    store(out + pid * 4, i);\n"
    "    store(out + pid * 4 + 1, s);\n"
    "    store(out + pid * 4 + 2, t);\n"
    "    store(out + pid * 4 + 3, steps);\n"
    "}\n";

static const char SLICES[] =
    "kernel slices(x: *f32, y: *f32) {\n"
    "    let r = arange(0, 16);\n"
    "    let t = load(x + r[:, None] * 64 + arange(0, 64)[None, :]);\n"
    "    let a = t[:, 0:32];\n"
    "    let b = t[8:16, 32:];\n"
    "    let w = t[4:8, 16:48][None, :, :];\n"
    "    let p = permute(reshape(t[0:2, 0:8], 2, 2, 4), 2, 0, 1);\n"
    "    store(y + r[:, None] * 32 + arange(0, 32)[None, :], a);\n"
    "    store(y + 512 + arange(0, 8)[:, None] * 32 + arange(0, 32)[None, :], b);\n"
    "    store(y + 768 + arange(0, 4)[:, None] * 32 + arange(0, 32)[None, :], reshape(w, 4, 32));\n"
    "    store(y + 896 + reshape(arange(0, 16), 4, 2, 2), p);\n"
    "}\n";

/* histogram: masked and not, values out of range (negatives, >= bins) not counted, u8
 * input, a 2-D input, one in a loop, bins fewer and more than the CTA's threads; every
 * program adds its counts to h with one atomic per bin. h holds 8 + 16 + 4 + 32 + 1024. */
static const char HIST[] =
    "kernel hist(x: *i32, b: *u8, h: *i32, n: i32) {\n"
    "    let offs = program_id(0) * 256 + arange(0, 256);\n"
    "    let m = offs < n;\n"
    "    let v = load(x + offs, m, 0);\n"
    "    atomic_add(h + arange(0, 8), histogram(v, 8, m));\n"
    "    atomic_add(h + 8 + arange(0, 16), histogram(v + 4, 16));\n"
    "    atomic_add(h + 24 + arange(0, 4), histogram(load(b + offs, m), 4, mask = m));\n"
    "    var acc = zeros<i32>(32);\n"
    "    for i in range(0, 4) {\n"
    "        acc += histogram(reshape(v, 16, 16) * 2 + i, 32);\n"
    "    }\n"
    "    atomic_add(h + 28 + arange(0, 32), acc);\n"
    "    atomic_add(h + 60 + arange(0, 1024), histogram(v * 64 + 512, 1024, m));\n"
    "}\n";

/* load and store hints: every cache operator and eviction priority, masked and not; they
 * change nothing but the caches (the interpreter ignores them). y holds 4 x 300. */
static const char HINTS[] =
    "kernel hints(x: *f32, y: *f32, n: i32) {\n"
    "    let o = program_id(0) * 128 + arange(0, 128);\n"
    "    let m = o < n;\n"
    "    let a = load(x + o, m, 1.0, cache = \".cg\") + load(x + o, m, 0.0, cache = \"ca\");\n"
    "    let b = load(x + o, m, 0.0, eviction = \"evict_last\") * load(x + o, m, 0.0, cache = \"cs\");\n"
    "    let c = load(x + o, m, 0.0, cache = \"lu\") - load(x + o, m, 0.0, cache = \"cv\", eviction = \"evict_normal\");\n"
    "    store(y + o, a, m, cache = \"wb\");\n"
    "    store(y + n + o, b, m, cache = \"wt\");\n"
    "    store(y + 2 * n + o, c + load(x + o, m, 0.0, eviction = \"evict_first\"), m, cache = \"cg\");\n"
    "    store(y + 3 * n + o, a * 2.0, m, cache = \".cs\");\n"
    "    if program_id(0) == 0 { store(y + 3 * n, load(x, eviction = \"evict_first\"), eviction = \"evict_last\"); }\n"
    "}\n";

/* A batched dot: [4, 32, 16] x [4, 16, 32] f16 plus an f32 accumulator, and i8 without
 * one; each batch its own product (docs/language.md §6.6). */
static const char BDOT[] =
    "kernel bdot(a: *f16, b: *f16, acc: *f32, a8: *i8, b8: *i8, c: *f32, c8: *i32) {\n"
    "    let i = arange(0, 4)[:, None, None];\n"
    "    let m = arange(0, 32)[None, :, None];\n"
    "    let k = arange(0, 16)[None, None, :];\n"
    "    let kk = arange(0, 16)[None, :, None];\n"
    "    let n = arange(0, 32)[None, None, :];\n"
    "    let ta = load(a + i * 512 + m * 16 + k);\n"
    "    let tb = load(b + i * 512 + kk * 32 + n);\n"
    "    store(c + i * 1024 + m * 32 + n, dot(ta, tb, load(acc + i * 1024 + m * 32 + n)));\n"
    "    let t8 = load(a8 + i * 1024 + m * 32 + arange(0, 32)[None, None, :]);\n"
    "    let v8 = load(b8 + i * 1024 + arange(0, 32)[None, :, None] * 32 + n);\n"
    "    store(c8 + i * 1024 + m * 32 + n, dot(t8, v8));\n"
    "}\n";

/* dot with an f16 accumulator, twice: acc + a @ b summed in f32, rounded to f16 at each
 * call (docs/language.md §6.6). */
static const char F16ACC[] =
    "kernel f16acc(a: *f16, b: *f16, acc: *f16, c: *f16) {\n"
    "    let m = arange(0, 32);\n"
    "    let k = arange(0, 16);\n"
    "    let ta = load(a + m[:, None] * 16 + k[None, :]);\n"
    "    let tb = load(b + k[:, None] * 32 + m[None, :]);\n"
    "    let once = dot(ta, tb, load(acc + m[:, None] * 32 + m[None, :]));\n"
    "    store(c + m[:, None] * 32 + m[None, :], dot(ta, tb, once));\n"
    "}\n";

/* fp8 conversions (docs/language.md §5.6): x (f32), xd (f64) and xi (i32) to both fp8 types,
 * directly and through f16 / bf16; every byte of each fp8 type (b4, b5: 0..255) to f32, f16,
 * i32 and the other fp8 type. o4 and o5 hold 3 x 1024 + 256 bytes, r32, r16 and ri 512. */
static const char F8CVT[] =
    "kernel f8cvt(x: *f32, xd: *f64, xi: *i32, b4: *f8e4m3, b5: *f8e5m2, o4: *f8e4m3,\n"
    "             o5: *f8e5m2, r32: *f32, r16: *f16, ri: *i32) {\n"
    "    let offs = arange(0, 1024);\n"
    "    let v = load(x + offs);\n"
    "    store(o4 + offs, v as f8e4m3);\n"
    "    store(o5 + offs, v as f8e5m2);\n"
    "    store(o4 + 1024 + offs, (v as f16) as f8e4m3);\n"
    "    store(o5 + 1024 + offs, (v as bf16) as f8e5m2);\n"
    "    store(o4 + 2048 + offs, load(xd + offs) as f8e4m3);\n"
    "    store(o5 + 2048 + offs, load(xi + offs) as f8e5m2);\n"
    "    let bytes = arange(0, 256);\n"
    "    let p = load(b4 + bytes);\n"
    "    let q = load(b5 + bytes);\n"
    "    store(r32 + bytes, p as f32);\n"
    "    store(r32 + 256 + bytes, q as f32);\n"
    "    store(r16 + bytes, p as f16);\n"
    "    store(r16 + 256 + bytes, q as f16);\n"
    "    store(ri + bytes, p as i32);\n"
    "    store(ri + 256 + bytes, q as i32);\n"
    "    store(o4 + 3072 + bytes, q as f8e4m3);\n"
    "    store(o5 + 3072 + bytes, p as f8e5m2);\n"
    "}\n";

/* fp8 dot (§6.6): e4m3 x e5m2 into f32 from zero, e4m3 x e4m3 onto an f32 acc, e5m2 x e5m2
 * onto an f16 acc; fp8 tiles through where, a slice, trans and a masked load with other. */
static const char F8DOT[] =
    "kernel f8dot(a: *f8e4m3, b: *f8e5m2, acc: *f32, c: *f32, d: *f32, h: *f16, w: *f8e4m3) {\n"
    "    let m = arange(0, 32);\n"
    "    let k = arange(0, 64);\n"
    "    let ta = load(a + m[:, None] * 64 + k[None, :]);\n"
    "    let tb = load(b + k[:, None] * 32 + m[None, :]);\n"
    "    let out = m[:, None] * 32 + m[None, :];\n"
    "    store(c + out, dot(ta, tb));\n"
    "    store(d + out, dot(ta, trans(ta, 1, 0)[:, 0:32], load(acc + out)));\n"
    "    store(h + out, dot(tb[0:32, :], tb[0:32, :], load(acc + out) as f16));\n"
    "    let sel = where(m[:, None] > m[None, :], ta[:, 0:32], 0.5);\n"
    "    store(w + out, load(w + out, out < 700, -3.0));\n"
    "    store(w + 1024 + out, sel);\n"
    "}\n";

#endif
