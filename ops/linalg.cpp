// Matrix products; weights stay in their stored [out, in] layout. linear picks a
// kernel by the rows of x: 1 row Eigen's GEMV; 2-32 rows (beam search, batched
// decoding) streaming dot-product kernels, since there the cost is reading the weights
// once; more rows (encoder, prefill) the register-tiled GEMM of gemm_f32.cpp (AVX-512)
// or Eigen's GEMM (a row-major [out, in] matrix is a column-major [in, out] one, so
// x @ W^T needs no transpose copy). matmul is Eigen's.
#include <algorithm>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include <Eigen/Core>

#include "ops/linear_kernels.h"
#include "ops/registry.h"
#include "ops/simd_sum.h"

namespace ops {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using RowMap = Eigen::Map<RowMatrix>;

namespace {

constexpr int64_t kMaxDecodeRows = 8;  // rows 2..this use the streaming dot-product path
constexpr int64_t kPrefetch = 1024;    // floats ahead in the weight stream (measured: 2x at 2-4 rows)
constexpr int64_t kBlockFloats = 16384;  // weights per block when more than 4 rows take two passes
constexpr int64_t kL1BlockFloats = 8192; // weights per block reused from L1 by many rows
// Rows 9..this take the blocked path (measured on the opus-mt shapes: 2.5x Eigen's GEMM
// at 12 rows, 1.07x at 32, even at 64, where both run at the FMA units' peak).
constexpr int64_t kMaxBlockedRows = 32;
#if defined(__AVX512F__)
constexpr int kBlockedO = 4;  // 4 weight rows x 4 rows = 16 accumulators of AVX-512's 32 registers
#else
constexpr int kBlockedO = 2;  // AVX2 has 16 registers
#endif

// acc[o * R + r] = dot(x[r, :], w[o, :]) for R rows of x and O consecutive weight rows
// (both with row stride `in`): each weight vector is loaded once and used for every row.
template <int R, int O>
inline void dot_rows(const float* x, int64_t in, const float* w, float* acc) {
  int64_t k = 0;
#if defined(__AVX512F__)
  __m512 a[O][R];
  for (int o = 0; o < O; ++o)
    for (int r = 0; r < R; ++r) a[o][r] = _mm512_setzero_ps();
  for (; k + 16 <= in; k += 16) {
    __m512 wv[O];
    for (int o = 0; o < O; ++o) {
      wv[o] = _mm512_loadu_ps(w + o * in + k);
      _mm_prefetch(reinterpret_cast<const char*>(w + o * in + k + kPrefetch), _MM_HINT_T0);
    }
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_loadu_ps(x + r * in + k);
      for (int o = 0; o < O; ++o) a[o][r] = _mm512_fmadd_ps(wv[o], xv, a[o][r]);
    }
  }
  if (k < in) {  // the tail: masked loads read nothing past the end
    const __mmask16 m = __mmask16((1u << (in - k)) - 1);
    __m512 wv[O];
    for (int o = 0; o < O; ++o) wv[o] = _mm512_maskz_loadu_ps(m, w + o * in + k);
    for (int r = 0; r < R; ++r) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, x + r * in + k);
      for (int o = 0; o < O; ++o) a[o][r] = _mm512_fmadd_ps(wv[o], xv, a[o][r]);
    }
    k = in;
  }
  for (int o = 0; o < O; ++o)
    for (int r = 0; r < R; ++r) acc[o * R + r] = hsum512(a[o][r]);
#elif defined(__AVX2__)
  __m256 a[O][R];
  for (int o = 0; o < O; ++o)
    for (int r = 0; r < R; ++r) a[o][r] = _mm256_setzero_ps();
  for (; k + 8 <= in; k += 8) {
    __m256 wv[O];
    for (int o = 0; o < O; ++o) {
      wv[o] = _mm256_loadu_ps(w + o * in + k);
      _mm_prefetch(reinterpret_cast<const char*>(w + o * in + k + kPrefetch), _MM_HINT_T0);
    }
    for (int r = 0; r < R; ++r) {
      const __m256 xv = _mm256_loadu_ps(x + r * in + k);
      for (int o = 0; o < O; ++o) {
#if defined(__FMA__)
        a[o][r] = _mm256_fmadd_ps(wv[o], xv, a[o][r]);
#else
        a[o][r] = _mm256_add_ps(a[o][r], _mm256_mul_ps(wv[o], xv));
#endif
      }
    }
  }
  for (int o = 0; o < O; ++o)
    for (int r = 0; r < R; ++r) acc[o * R + r] = hsum256(a[o][r]);
#else
  for (int i = 0; i < O * R; ++i) acc[i] = 0.0f;
#endif
  for (; k < in; ++k)  // the tail (and the whole row without SIMD)
    for (int o = 0; o < O; ++o) {
      const float wk = w[o * in + k];
      for (int r = 0; r < R; ++r) acc[o * R + r] += wk * x[r * in + k];
    }
}

// y[r, j] = dot(x[r], w[j]) + bias[j] for output features [j0, j1), R rows.
template <int R, int OW = 2>
void decode_rows(const float* x, const float* w, const float* bias, float* y, int64_t in, int64_t outf,
                 int64_t j0, int64_t j1) {
  if constexpr (R > 4) {
    // More than 4 rows: two passes of at most 4 rows over each block of weight rows,
    // the second from cache (measured faster than 5..8 rows in one pass).
    constexpr int R1 = (R + 1) / 2;
    const int64_t block = std::max<int64_t>(2, kBlockFloats / in / 2 * 2);
    for (int64_t jb = j0; jb < j1; jb += block) {
      const int64_t je = std::min(jb + block, j1);
      decode_rows<R1>(x, w, bias, y, in, outf, jb, je);
      decode_rows<R - R1>(x + R1 * in, w, bias, y + R1 * outf, in, outf, jb, je);
    }
    return;
  }
  // Two weight rows at a time: twice the independent accumulators per step (2 x 4 rows
  // still fit AVX2's 16 registers).
  constexpr int O = OW;
  float acc[O * R];
  int64_t j = j0;
  for (; j + O <= j1; j += O) {
    dot_rows<R, O>(x, in, w + j * in, acc);
    for (int o = 0; o < O; ++o) {
      const float b = bias ? bias[j + o] : 0.0f;
      for (int r = 0; r < R; ++r) y[r * outf + j + o] = acc[o * R + r] + b;
    }
  }
  for (; j < j1; ++j) {
    dot_rows<R, 1>(x, in, w + j * in, acc);
    const float b = bias ? bias[j] : 0.0f;
    for (int r = 0; r < R; ++r) y[r * outf + j] = acc[r] + b;
  }
}

using DecodeFn = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
constexpr DecodeFn kDecode[kMaxDecodeRows] = {decode_rows<1>, decode_rows<2>, decode_rows<3>, decode_rows<4>,
                                              decode_rows<5>, decode_rows<6>, decode_rows<7>, decode_rows<8>};

// Many rows (beams x batch): the weight rows of [j0, j1) in blocks small enough to
// stay in L1, each block dotted with every group of 4 rows of x: one pass over memory.
void blocked_rows(const float* x, int64_t rows, const float* w, const float* bias, float* y, int64_t in,
                  int64_t outf, int64_t j0, int64_t j1) {
  const int64_t block = std::max<int64_t>(2, kL1BlockFloats / in / 2 * 2);
  for (int64_t jb = j0; jb < j1; jb += block) {
    const int64_t je = std::min(jb + block, j1);
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) decode_rows<4, kBlockedO>(x + r * in, w, bias, y + r * outf, in, outf, jb, je);
    if (r < rows) kDecode[rows - r - 1](x + r * in, w, bias, y + r * outf, in, outf, jb, je);
  }
}

}  // namespace

void dot_rows_f32(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, int64_t n, float* y,
                  int64_t y_stride) {
  if (rows <= 0 || n <= 0) return;
  if (rows <= kMaxDecodeRows) {
    kDecode[rows - 1](x, w, bias, y, in, y_stride, 0, n);
  } else {
    blocked_rows(x, rows, w, bias, y, in, y_stride, 0, n);
  }
}

Tensor linear_output(OpContext& ctx, const Tensor& x, int64_t outf, const Tensor* bias, int64_t& rows) {
  if (bias && (bias->dtype() != DType::f32 || bias->ndim() != 1 || bias->size(0) != outf))
    vm::fail("bias must be f32[{}], got {}", outf, bias->describe());
  Shape os = x.shape();
  os[os.size() - 1] = outf;
  rows = Shape(x.shape().begin(), x.shape().end() - 1).numel();
  return ctx.empty(DType::f32, os);
}

// linear(x, weight, bias=None): x[..., in] @ weight[out, in]^T + bias[out]
static void linear(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& w = a.tensor(1);
  const Tensor* b = a.opt_tensor(2);
  if (x.dtype() != DType::f32 || w.dtype() != DType::f32) vm::fail("x and weight must be f32, got {} and {}", x.describe(), w.describe());
  if (x.ndim() < 1) vm::fail("x must have at least 1 dimension, got {}", x.describe());
  if (w.ndim() != 2) vm::fail("weight must be 2-D [out, in], got {}", w.describe());
  const int64_t in = x.size(-1), outf = w.size(0);
  if (w.size(1) != in) vm::fail("x has {} features but weight is {}", in, w.describe());
  int64_t rows;
  Tensor y = linear_output(ctx, x, outf, b, rows);
  RowMap Y(y.data<float>(), rows, outf);
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  const float* bp = b ? b->data<float>() : nullptr;
  float* yp = y.data<float>();
  if (in == 0) {
    Y.setZero();  // an empty sum
    if (b) Y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bp, outf);
  } else if (rows >= 2 && rows <= kMaxBlockedRows && outf > 0) {
    // A few rows: stream each weight row once (in L1-sized blocks past 8 rows), dotting
    // it with every row of x; the output features are split over threads as below.
    const int64_t grain = rows <= kMaxDecodeRows ? std::max<int64_t>(16, (int64_t(1) << 16) / (rows * in)) : 16;
    ctx.parallel_for(outf, grain, [&](int64_t j0, int64_t j1) {
      dot_rows_f32(xp, rows, in, wp + j0 * in, bp ? bp + j0 : nullptr, j1 - j0, yp + j0, outf);
    });
  } else if (kHaveGemmF32 && rows > kMaxBlockedRows && outf > 0) {
    // Many rows: the register-tiled GEMM (1.2-1.6x Eigen's at 64-1024 rows on the opus-mt
    // shapes), output blocks of 32 split over threads.
    const int64_t blocks = (outf + 31) / 32;
    ctx.parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      Tensor pack = ctx.empty(DType::f32, Shape{gemm_pack_floats()});
      gemm_rows_f32(xp, rows, in, wp, bp, yp, outf, b0 * 32, std::min(b1 * 32, outf), pack.data<float>());
    });
  } else if (rows > 0 && outf > 0) {
    // One row (Eigen's GEMV), or many without AVX-512 (Eigen's GEMM). Split the output
    // features over threads: each reads its own slice of the weight matrix, which is
    // what bounds a decode step (batch 1 reads every weight once).
    const ConstRowMap X(xp, rows, in);
    const ConstRowMap W(wp, outf, in);
    const int64_t grain = std::max<int64_t>(16, (int64_t(1) << 16) / std::max<int64_t>(1, rows * in));
    ctx.parallel_for(outf, grain, [&](int64_t j0, int64_t j1) {
      auto Yj = Y.middleCols(j0, j1 - j0);
      Yj.noalias() = X * W.middleRows(j0, j1 - j0).transpose();
      if (b) Yj.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bp + j0, j1 - j0);
    });
  }
  out[0] = std::move(y);
}

// The numpy-broadcast shape of two batch shapes (right-aligned; size 1 stretches).
static Shape broadcast_batch(const Shape& a, const Shape& b, const Tensor& x, const Tensor& y) {
  const int n = std::max(a.size(), b.size());
  Shape s;
  s.resize(n);
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - a.size()), ib = i - (n - b.size());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      vm::fail("batch dimensions of x and y do not broadcast, got {} and {}", x.describe(), y.describe());
    s[i] = da == 1 ? db : da;
  }
  return s;
}

// Per-dimension strides (in matrices) of a batch shape right-aligned into `full`;
// broadcast dimensions get stride 0.
static Shape batch_strides(const Shape& batch, const Shape& full) {
  Shape st;
  st.resize(full.size());
  int64_t acc = 1;
  for (int i = full.size() - 1; i >= 0; --i) {
    const int j = i - (full.size() - batch.size());
    const int64_t d = j >= 0 ? batch[j] : 1;
    st[i] = d == 1 ? 0 : acc;
    acc *= d;
  }
  return st;
}

// matmul(x, y): x[..., m, k] @ y[..., k, n] with numpy broadcasting of the batch dims.
static void matmul(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& y = a.tensor(1);
  if (x.dtype() != DType::f32 || y.dtype() != DType::f32) vm::fail("x and y must be f32, got {} and {}", x.describe(), y.describe());
  if (x.ndim() < 2 || y.ndim() < 2) vm::fail("x and y must have at least 2 dimensions, got {} and {}", x.describe(), y.describe());
  const int64_t m = x.size(-2), k = x.size(-1), n = y.size(-1);
  if (y.size(-2) != k) vm::fail("x[..., m, k] and y[..., k, n] do not match, got {} and {}", x.describe(), y.describe());
  const Shape xb(x.shape().begin(), x.shape().end() - 2), yb(y.shape().begin(), y.shape().end() - 2);
  const Shape ob = broadcast_batch(xb, yb, x, y);
  Shape os = ob;
  os.push_back(m);
  os.push_back(n);
  Tensor z = ctx.empty(DType::f32, os);
  const int64_t batches = ob.numel();
  if (z.numel() == 0) {
    out[0] = std::move(z);
    return;
  }
  float* zp = z.data<float>();
  if (k == 0) {
    std::fill(zp, zp + z.numel(), 0.0f);  // empty sums
    out[0] = std::move(z);
    return;
  }
  const float* xp = x.data<float>();
  const float* yp = y.data<float>();
  if (yb.numel() == 1 && xb.numel() == batches) {
    // y is one matrix shared by every batch: a single GEMM over all rows of x.
    RowMap(zp, batches * m, n).noalias() = ConstRowMap(xp, batches * m, k) * ConstRowMap(yp, k, n);
    out[0] = std::move(z);
    return;
  }
  const Shape xs = batch_strides(xb, ob), ys = batch_strides(yb, ob);
  const int nb = ob.size();
  Shape idx;
  idx.resize(nb);
  int64_t xo = 0, yo = 0;  // offsets in matrices
  for (int64_t bi = 0; bi < batches; ++bi) {
    RowMap(zp + bi * m * n, m, n).noalias() = ConstRowMap(xp + xo * m * k, m, k) * ConstRowMap(yp + yo * k * n, k, n);
    for (int d = nb - 1; d >= 0; --d) {
      xo += xs[d];
      yo += ys[d];
      if (++idx[d] < ob[d]) break;
      xo -= xs[d] * ob[d];
      yo -= ys[d] * ob[d];
      idx[d] = 0;
    }
  }
  out[0] = std::move(z);
}

void register_linalg_ops(Registry& r) {
  auto& op = r.add("linear", "linear algebra");
  op.params = {p_tensor("x"), p_tensor("weight"), p_opt_tensor("bias")};
  op.outputs = {"Tensor"};
  op.doc = "x[..., in] @ weight[out, in]^T + bias[out] (f32). Weights keep the PyTorch [out, in] layout.";
  op.kernel = linear;

  auto& mm = r.add("matmul", "linear algebra");
  mm.params = {p_tensor("x"), p_tensor("y")};
  mm.outputs = {"Tensor"};
  mm.doc = "x[..., m, k] @ y[..., k, n] (f32, both at least 2-D); the batch dims broadcast like numpy.";
  mm.kernel = matmul;
}

}  // namespace ops
