/* The matrix product r = acc + a @ b over the last two dims (leading dims are a batch).
 * The documented order: element (m, n) starts from acc[m][n], then adds a[m][k] * b[k][n]
 * for k = 0, 1, ..., K - 1, the product and each sum rounded to the result's type. An f32
 * dot of input precision tf32 or tf32x3 rounds its operands first (dot_tf32).
 *
 * For f32, f64 and 32- or 64-bit integer results this runs as a blocked loop: operands
 * converted once to the result's machine type, then 4 rows by two 16-byte vectors of
 * columns (8 f32) of accumulators held in registers while k runs. Blocking only chooses
 * which elements advance together; each element still sees its k in order, one rounding
 * per product and per sum, so the result is bit for bit the scalar rule's
 * (tests/unit/test_interp.c compares them; NaN bits aside, which C leaves open). This
 * relies on C's float arithmetic being IEEE single or double (FLT_EVAL_METHOD 0, as on
 * x86-64 and AArch64) and not fused (see STEP). */
#include "internal.h"

typedef struct {
  int64_t M, N, K, batches;
} dims;

/* The scalar rule, for every other result type (f16 and bf16 accumulators). */
static void dot_scalar(ip_val a, ip_val b, ip_val acc, ip_val r, dims d) {
  tk_dtype adt = ip_elem_dtype(a.type), bdt = ip_elem_dtype(b.type);
  tk_dtype cdt = ip_elem_dtype(acc.type), rdt = ip_elem_dtype(r.type);
  int64_t M = d.M, N = d.N, K = d.K;
  for (int64_t batch = 0; batch < d.batches; batch++) {
    const ip_elem *pa = &a.e[batch * M * K], *pb = &b.e[batch * K * N];
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        int64_t at = batch * M * N + m * N + n;
        ip_elem s = ip_convert(cdt, rdt, acc.e[at]);
        for (int64_t k = 0; k < K; k++) {
          ip_elem p = ip_arith(IR_MUL, rdt, ip_convert(adt, rdt, pa[m * K + k]),
                               ip_convert(bdt, rdt, pb[k * N + n]));
          s = ip_arith(IR_ADD, rdt, s, p);
        }
        r.e[at] = s;
      }
  }
}

/* acc = acc + a * b with the product rounded first: two statements, because a compiler
 * may fuse a * b + c within one expression (Clang's default -ffp-contract=on), never
 * across statements unless told to (-ffp-contract=fast, which -std=c11 does not set). */
#define STEP(acc, a, b)                                                                  \
  {                                                                                      \
    __typeof__(acc) p_ = (a) * (b);                                                      \
    acc = acc + p_;                                                                      \
  }

/* C[M][N] += A[M][K] @ B[K][N] in type T. VT is a 16-byte vector of T (GCC / Clang
 * vector extensions, lanewise IEEE or wrapping arithmetic: what keeps it exact); a block
 * of 4 rows by 2 vectors of columns stays in 8 registers while k runs. */
#define DOT_KERNEL(name, T, VT)                                                          \
  typedef T VT __attribute__((vector_size(16)));                                        \
  static void name(const T *A, const T *B, T *C, int64_t M, int64_t N, int64_t K) {     \
    const int64_t L = 16 / sizeof(T), W = 2 * L;                                         \
    int64_t m = 0;                                                                       \
    for (; m + 4 <= M; m += 4) {                                                         \
      int64_t n = 0;                                                                     \
      for (; n + W <= N; n += W) {                                                       \
        const T *a0 = &A[m * K], *a1 = a0 + K, *a2 = a1 + K, *a3 = a2 + K;               \
        T *r0 = &C[m * N + n], *r1 = r0 + N, *r2 = r1 + N, *r3 = r2 + N;                 \
        VT c0, d0, c1, d1, c2, d2, c3, d3, b0, b1;                                       \
        memcpy(&c0, r0, 16), memcpy(&d0, r0 + L, 16), memcpy(&c1, r1, 16);               \
        memcpy(&d1, r1 + L, 16), memcpy(&c2, r2, 16), memcpy(&d2, r2 + L, 16);           \
        memcpy(&c3, r3, 16), memcpy(&d3, r3 + L, 16);                                    \
        for (int64_t k = 0; k < K; k++) {                                                \
          memcpy(&b0, &B[k * N + n], 16), memcpy(&b1, &B[k * N + n + L], 16);            \
          STEP(c0, a0[k], b0) STEP(d0, a0[k], b1) STEP(c1, a1[k], b0) STEP(d1, a1[k], b1) \
          STEP(c2, a2[k], b0) STEP(d2, a2[k], b1) STEP(c3, a3[k], b0) STEP(d3, a3[k], b1) \
        }                                                                                \
        memcpy(r0, &c0, 16), memcpy(r0 + L, &d0, 16), memcpy(r1, &c1, 16);               \
        memcpy(r1 + L, &d1, 16), memcpy(r2, &c2, 16), memcpy(r2 + L, &d2, 16);           \
        memcpy(r3, &c3, 16), memcpy(r3 + L, &d3, 16);                                    \
      }                                                                                  \
      for (; n < N; n++)                                                                 \
        for (int i = 0; i < 4; i++)                                                      \
          for (int64_t k = 0; k < K; k++) {                                              \
            STEP(C[(m + i) * N + n], A[(m + i) * K + k], B[k * N + n])                   \
          }                                                                              \
    }                                                                                    \
    for (; m < M; m++)                                                                   \
      for (int64_t k = 0; k < K; k++)                                                    \
        for (int64_t n = 0; n < N; n++) {                                                \
          STEP(C[m * N + n], A[m * K + k], B[k * N + n])                                 \
        }                                                                                \
  }

DOT_KERNEL(dot_f32, float, v8_f32)
DOT_KERNEL(dot_f64, double, v8_f64)
DOT_KERNEL(dot_u32, uint32_t, v8_u32)
DOT_KERNEL(dot_u64, uint64_t, v8_u64)

/* n elements of type from as machine values of the result type rdt, by ip_convert (the
 * rule's own conversion); the common pairs, where it is exact, without the call. */
#define CONVERT(T, field, dst, src, n)                                                   \
  do {                                                                                   \
    if (from == rdt || (fl_from == fl_to && (fl_to ? from != TK_F64 : true)))           \
      for (int64_t i = 0; i < (n); i++) (dst)[i] = (T)(src)[i].field;                     \
    else                                                                                 \
      for (int64_t i = 0; i < (n); i++) (dst)[i] = (T)ip_convert(from, rdt, (src)[i]).field; \
  } while (0)

/* The operands converted once, the kernel, and the result back in canonical form. */
#define DOT_BLOCKED(T, kernel, field, store)                                             \
  do {                                                                                   \
    T *A = ip_scratch_take(s, sizeof(T) * (size_t)(d.M * d.K));                          \
    T *B = ip_scratch_take(s, sizeof(T) * (size_t)(d.K * d.N));                          \
    T *C = ip_scratch_take(s, sizeof(T) * (size_t)(d.M * d.N));                          \
    bool fl_to = ir_dtype_is_float(rdt), fl_from;                                        \
    tk_dtype from;                                                                       \
    for (int64_t bt = 0; bt < d.batches; bt++) {                                         \
      ip_elem *pr = &r.e[bt * d.M * d.N];                                                \
      from = adt, fl_from = ir_dtype_is_float(from);                                     \
      CONVERT(T, field, A, &a.e[bt * d.M * d.K], d.M * d.K);                             \
      from = bdt, fl_from = ir_dtype_is_float(from);                                     \
      CONVERT(T, field, B, &b.e[bt * d.K * d.N], d.K * d.N);                             \
      from = cdt, fl_from = ir_dtype_is_float(from);                                     \
      CONVERT(T, field, C, &acc.e[bt * d.M * d.N], d.M * d.N);                           \
      kernel(A, B, C, d.M, d.N, d.K);                                                    \
      for (int64_t i = 0; i < d.M * d.N; i++) pr[i] = store;                             \
    }                                                                                    \
  } while (0)

/* x rounded to tf32 as cvt.rna.tf32.f32 does: 10 bits of mantissa kept, to nearest with
 * ties away from zero (adding half of the dropped part to the magnitude's bits carries
 * into the exponent where it must, up to infinity); NaN stays NaN, infinities stay. */
float ip_round_tf32(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  memcpy(&x, &u, 4);
  return x;
}

/* An f32 dot on the tensor cores' terms (docs/language.md, "Precision"), in the documented
 * order of each product. tf32: r = acc + tf32(a) @ tf32(b). tf32x3, as Triton's: with
 * big = tf32(x) and small = tf32(x - big), p = small_a @ big_b from zero, then
 * + big_a @ small_b, NaNs of p made 0 (an infinite input would give inf - inf), then
 * + big_a @ big_b, and r = p + acc. Every product of two tf32 values is exact in f32, so
 * only the order of the sums separates this from the GPU's result. */
static void dot_tf32(ip_scratch *s, ip_val a, ip_val b, ip_val acc, ip_val r, dims d, bool x3) {
  size_t na = (size_t)(d.M * d.K), nb = (size_t)(d.K * d.N), nc = (size_t)(d.M * d.N);
  float *A = ip_scratch_take(s, sizeof(float) * na), *B = ip_scratch_take(s, sizeof(float) * nb);
  float *As = ip_scratch_take(s, sizeof(float) * na), *Bs = ip_scratch_take(s, sizeof(float) * nb);
  float *C = ip_scratch_take(s, sizeof(float) * nc);
  for (int64_t bt = 0; bt < d.batches; bt++) {
    const ip_elem *pa = &a.e[bt * d.M * d.K], *pb = &b.e[bt * d.K * d.N], *pc = &acc.e[bt * d.M * d.N];
    for (size_t i = 0; i < na; i++) {
      A[i] = ip_round_tf32((float)pa[i].f);
      As[i] = ip_round_tf32((float)pa[i].f - A[i]);
    }
    for (size_t i = 0; i < nb; i++) {
      B[i] = ip_round_tf32((float)pb[i].f);
      Bs[i] = ip_round_tf32((float)pb[i].f - B[i]);
    }
    for (size_t i = 0; i < nc; i++) C[i] = x3 ? 0.0f : (float)pc[i].f;
    if (x3) {
      dot_f32(As, B, C, d.M, d.N, d.K);
      dot_f32(A, Bs, C, d.M, d.N, d.K);
      for (size_t i = 0; i < nc; i++)
        if (C[i] != C[i]) C[i] = 0.0f;
    }
    dot_f32(A, B, C, d.M, d.N, d.K);
    ip_elem *pr = &r.e[bt * d.M * d.N];
    for (size_t i = 0; i < nc; i++) {
      float v = x3 ? C[i] + (float)pc[i].f : C[i];
      pr[i] = (ip_elem){.f = v};
    }
  }
}

void ip_dot(ip_scratch *s, ip_val a, ip_val b, ip_val acc, ip_val r, ir_dot_precision prec) {
  int rank = r.type->rank;
  dims d = {r.type->shape[rank - 2], r.type->shape[rank - 1], a.type->shape[rank - 1], 0};
  d.batches = r.n / (d.M * d.N);
  tk_dtype adt = ip_elem_dtype(a.type), bdt = ip_elem_dtype(b.type);
  tk_dtype cdt = ip_elem_dtype(acc.type), rdt = ip_elem_dtype(r.type);
  if (adt == TK_F32 && bdt == TK_F32 && cdt == TK_F32 && rdt == TK_F32 && prec != IR_DOT_IEEE) {
    ip_mark mark = ip_scratch_mark(s);
    dot_tf32(s, a, b, acc, r, d, prec == IR_DOT_TF32X3);
    ip_scratch_release(s, mark);
    return;
  }
  if (!ip_typed_loops) {
    dot_scalar(a, b, acc, r, d);
    return;
  }
  ip_mark mark = ip_scratch_mark(s);
  switch (rdt) {
  case TK_F32: DOT_BLOCKED(float, dot_f32, f, ((ip_elem){.f = C[i]})); break;
  case TK_F64: DOT_BLOCKED(double, dot_f64, f, ((ip_elem){.f = C[i]})); break;
  case TK_I32: case TK_U32: DOT_BLOCKED(uint32_t, dot_u32, u, ip_int(rdt, C[i])); break;
  case TK_I64: case TK_U64: DOT_BLOCKED(uint64_t, dot_u64, u, ip_int(rdt, C[i])); break;
  default: dot_scalar(a, b, acc, r, d); break;
  }
  ip_scratch_release(s, mark);
}
