// Weight-only int8 linear. The weight is stored int8 [out, in] with one f32 scale per
// output channel (symmetric: w ~= q * scale[:, None]); built offline by
// pycompiler/quantize.py. A decode step (a few rows) is bound by reading the weight,
// so the fast path streams int8 rows (4x fewer bytes than f32) and converts them to
// f32 in registers; many rows (encoder, prefill) dequantize blocks of weight rows into
// a small f32 scratch and use Eigen's GEMM on each block.
#include <algorithm>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include <Eigen/Core>

#include "ops/linear_kernels.h"
#include "ops/registry.h"
#include "ops/simd_sum.h"

namespace ops {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using RowMap = Eigen::Map<RowMatrix>;

constexpr int64_t kMaxDecodeRows = 8;  // rows up to this use the streaming dot-product path
constexpr int64_t kBlockRows = 64;     // weight rows dequantized per GEMM block
constexpr int64_t kMaxBlockedRows = 32;  // up to this many rows, the f32 blocked dot kernel beats Eigen's GEMM

// acc[r] = dot(x[r, :], q[:]) for R rows of x (row stride `in`), in f32.
template <int R>
inline void dot_rows(const float* x, int64_t in, const int8_t* q, float* acc) {
  int64_t k = 0;
#if defined(__AVX512F__)
  __m512 a0[R], a1[R];
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm512_setzero_ps();
  for (; k + 32 <= in; k += 32) {
    const __m512 w0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k))));
    const __m512 w1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k + 16))));
    for (int r = 0; r < R; ++r) {
      a0[r] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + r * in + k), a0[r]);
      a1[r] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + r * in + k + 16), a1[r]);
    }
  }
  for (; k + 16 <= in; k += 16) {
    const __m512 w0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k))));
    for (int r = 0; r < R; ++r) a0[r] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + r * in + k), a0[r]);
  }
  for (int r = 0; r < R; ++r) acc[r] = hsum512(_mm512_add_ps(a0[r], a1[r]));
#elif defined(__AVX2__)
  __m256 a0[R], a1[R];
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
  for (; k + 16 <= in; k += 16) {
    const __m256 w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + k))));
    const __m256 w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + k + 8))));
    for (int r = 0; r < R; ++r) {
#if defined(__FMA__)
      a0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * in + k), a0[r]);
      a1[r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + r * in + k + 8), a1[r]);
#else
      a0[r] = _mm256_add_ps(a0[r], _mm256_mul_ps(w0, _mm256_loadu_ps(x + r * in + k)));
      a1[r] = _mm256_add_ps(a1[r], _mm256_mul_ps(w1, _mm256_loadu_ps(x + r * in + k + 8)));
#endif
    }
  }
  for (int r = 0; r < R; ++r) acc[r] = hsum256(_mm256_add_ps(a0[r], a1[r]));
#else
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
#endif
  for (; k < in; ++k) {  // the tail (and the whole row without SIMD)
    const float w = float(q[k]);
    for (int r = 0; r < R; ++r) acc[r] += w * x[r * in + k];
  }
}

// y[r, j] = scale[j] * dot(x[r], q[j]) + bias[j] for output features [j0, j1), R rows.
template <int R>
void decode_rows(const float* x, const int8_t* q, const float* scale, const float* bias, float* y,
                 int64_t in, int64_t outf, int64_t j0, int64_t j1) {
  float acc[R];
  for (int64_t j = j0; j < j1; ++j) {
    dot_rows<R>(x, in, q + j * in, acc);
    const float s = scale[j], b = bias ? bias[j] : 0.0f;
    for (int r = 0; r < R; ++r) y[r * outf + j] = acc[r] * s + b;
  }
}

using DecodeFn = void (*)(const float*, const int8_t*, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
constexpr DecodeFn kDecode[kMaxDecodeRows] = {decode_rows<1>, decode_rows<2>, decode_rows<3>, decode_rows<4>,
                                              decode_rows<5>, decode_rows<6>, decode_rows<7>, decode_rows<8>};

// linear_int8(x, weight, scale, bias=None): x[..., in] @ (weight[out, in] * scale[out, None])^T + bias[out]
void linear_int8(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& w = a.tensor(1);
  const Tensor& sc = a.tensor(2);
  const Tensor* b = a.opt_tensor(3);
  if (x.dtype() != DType::f32) vm::fail("x must be f32, got {}", x.describe());
  if (x.ndim() < 1) vm::fail("x must have at least 1 dimension, got {}", x.describe());
  if (w.dtype() != DType::i8 || w.ndim() != 2) vm::fail("weight must be i8 [out, in], got {}", w.describe());
  const int64_t in = x.size(-1), outf = w.size(0);
  if (w.size(1) != in) vm::fail("x has {} features but weight is {}", in, w.describe());
  if (sc.dtype() != DType::f32 || sc.ndim() != 1 || sc.size(0) != outf)
    vm::fail("scale must be f32[{}], got {}", outf, sc.describe());
  int64_t rows;
  Tensor y = linear_output(ctx, x, outf, b, rows);
  if (rows == 0 || outf == 0) {
    out[0] = std::move(y);
    return;
  }
  RowMap Y(y.data<float>(), rows, outf);
  const float* bp = b ? b->data<float>() : nullptr;
  const float* sp = sc.data<float>();
  const int8_t* qp = w.data<int8_t>();
  if (in == 0) {
    Y.setZero();  // an empty sum
    if (b) Y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bp, outf);
  } else if (rows <= kMaxDecodeRows) {
    // Decode: stream each int8 weight row once, dotting it with every row of x.
    const DecodeFn fn = kDecode[rows - 1];
    const float* xp = x.data<float>();
    float* yp = y.data<float>();
    const int64_t grain = std::max<int64_t>(16, (int64_t(1) << 16) / (rows * in));
    ctx.parallel_for(outf, grain, [&](int64_t j0, int64_t j1) { fn(xp, qp, sp, bp, yp, in, outf, j0, j1); });
  } else {
    // Many rows: per thread, dequantize kBlockRows weight rows at a time into its own
    // slice of one f32 scratch and multiply with linear's f32 kernels (or Eigen's GEMM).
    const int64_t nblocks = (outf + kBlockRows - 1) / kBlockRows;
    const int64_t tasks = std::min<int64_t>(nblocks, std::max(1, ctx.threads ? ctx.threads->size() : 1));
    Tensor scratch = ctx.empty(DType::f32, Shape{tasks, kBlockRows, in});
    const ConstRowMap X(x.data<float>(), rows, in);
    ctx.parallel_for(tasks, 1, [&](int64_t t0, int64_t t1) {
      Tensor pack = ctx.empty(DType::f32, Shape{std::max<int64_t>(1, gemm_pack_floats())});
      for (int64_t t = t0; t < t1; ++t) {
        RowMap S(scratch.data<float>() + t * kBlockRows * in, kBlockRows, in);
        for (int64_t blk = nblocks * t / tasks; blk < nblocks * (t + 1) / tasks; ++blk) {
          const int64_t j0 = blk * kBlockRows, n = std::min(kBlockRows, outf - j0);
          for (int64_t i = 0; i < n; ++i) {
            const int8_t* q = qp + (j0 + i) * in;
            float* s = S.data() + i * in;
            const float f = sp[j0 + i];
            for (int64_t k = 0; k < in; ++k) s[k] = float(q[k]) * f;
          }
          if (rows <= kMaxBlockedRows) {
            dot_rows_f32(x.data<float>(), rows, in, S.data(), bp ? bp + j0 : nullptr, n, Y.data() + j0, outf);
          } else if (kHaveGemmF32) {
            gemm_rows_f32(x.data<float>(), rows, in, S.data(), bp ? bp + j0 : nullptr, Y.data() + j0, outf, 0, n,
                          pack.data<float>());
          } else {
            auto Yj = Y.middleCols(j0, n);
            Yj.noalias() = X * S.topRows(n).transpose();
            if (b) Yj.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bp + j0, n);
          }
        }
      }
    });
  }
  out[0] = std::move(y);
}

}  // namespace

void register_quantized_ops(Registry& r) {
  auto& op = r.add("linear_int8", "linear algebra");
  op.params = {p_tensor("x"), p_tensor("weight"), p_tensor("scale"), p_opt_tensor("bias")};
  op.outputs = {"Tensor"};
  op.doc =
      "x[..., in] (f32) @ (weight[out, in] (i8) * scale[out, None] (f32))^T + bias[out]: a weight-only int8 "
      "linear with symmetric per-output-channel scales (built offline by pycompiler/quantize.py quantize_int8).";
  op.kernel = linear_int8;
}

}  // namespace ops
