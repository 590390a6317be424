// linear_w8a8: int8 weights (per output row scales, built offline like linear_int8's)
// and int8 activations quantized per row at run time, multiplied in int32.
//
// Why: once a product has more than a few rows (beams x batch, the encoder) the
// weight-only linear_int8 is bound by f32 FMAs, not by reading the weight. AVX-512 VNNI
// multiplies 64 int8 pairs per instruction (vpdpbusd) against 16 f32 pairs per FMA.
// vpdpbusd takes unsigned x signed bytes, so x is stored as q + 128 (u8) and each dot
// product subtracts 128 * sum(weight row), summed in the same pass (one more vpdpbusd
// per weight vector, shared by every row). The weight is packed offline for vpdpbusd
// (pycompiler/quantize.py pack_w8a8; layout below).
//
// Without AVX-512 VNNI the same integer arithmetic runs in plain C++ (same results).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>
#define TENSORVM_VNNI 1
#endif

#include "ops/linear_kernels.h"
#include "ops/registry.h"

namespace ops {

namespace {

constexpr int64_t kPad = 64;               // quantized x rows are padded to this many bytes

// Quantizes one row of x: q = rint(x * 127 / max|x|), stored as q + 128 (u8) and zero
// (128) up to `padded`. Returns the row's scale max|x| / 127 (0 for a row of zeros, NaN
// when the row holds a NaN or an infinity, which then makes the output row NaN).
float quantize_row(const float* x, int64_t in, uint8_t* q, int64_t padded) {
  float amax = 0.0f;
  bool finite = true;
  for (int64_t k = 0; k < in; ++k) {
    const float a = std::fabs(x[k]);
    finite &= a <= std::numeric_limits<float>::max();  // false for NaN and inf
    amax = a > amax ? a : amax;
  }
  if (!finite) {
    std::fill(q, q + padded, uint8_t(128));
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  for (int64_t k = 0; k < in; ++k) {
    const float v = std::nearbyint(x[k] * inv);  // round half to even, like numpy.rint
    q[k] = uint8_t(int(std::min(127.0f, std::max(-127.0f, v))) + 128);
  }
  std::fill(q + in, q + padded, uint8_t(128));
  return amax / 127.0f;
}

// The packed weight: [ceil(out / 16), ceil(in / 4), 16, 4] int8, zero-padded:
// packed[jb, kq, jj, t] = weight[16 * jb + jj, 4 * kq + t]. One 64-byte vector holds 4
// consecutive inputs of 16 consecutive outputs, which is vpdpbusd's operand layout: a
// broadcast of 4 bytes of x times it adds those 4 products into each of 16 int32 lanes,
// one lane per output. Outputs come out as vectors (no horizontal sums).
constexpr int64_t kOut = 16, kIn = 4;

struct Problem {
  const uint8_t* q;   // [rows, padded] quantized x (q + 128)
  int64_t padded;
  const float* sx;    // [rows] x scales
  const int8_t* w;    // packed weight
  int64_t kb;         // ceil(in / 4): 64-byte vectors per output block
  const float* sw;    // [outf] weight scales
  const float* bias;  // [outf] or null
  float* y;           // [rows, outf]
  int64_t outf;
};

#if TENSORVM_VNNI
// sums[16 j + jj] = sum over the inputs of the weight row of output 16 (jb + j) + jj.
template <int J>
void block_sums(const Problem& p, int64_t jb, int32_t* sums) {
  const int8_t* w = p.w + jb * p.kb * 64;
  const __m512i ones = _mm512_set1_epi8(1);
  for (int j = 0; j < J; ++j) {
    __m512i s = _mm512_setzero_si512();
    for (int64_t kq = 0; kq < p.kb; ++kq) s = _mm512_dpbusd_epi32(s, ones, _mm512_loadu_si512(w + (j * p.kb + kq) * 64));
    _mm512_storeu_si512(sums + 16 * j, s);
  }
}
#endif

// Output blocks [jb, jb + J) for R rows starting at row r0. kInlineSums: the weight
// sums (for the -128 shift) are taken in the same pass, which costs nothing extra when
// one group of rows covers every row; otherwise they come precomputed in `sums`.
template <int R, int J, bool kInlineSums>
void block_rows(const Problem& p, int64_t r0, int64_t jb, const int32_t* sums) {
  const int8_t* w = p.w + jb * p.kb * 64;
#if TENSORVM_VNNI
  __m512i acc[J][R], sum[J];
  for (int j = 0; j < J; ++j) {
    sum[j] = kInlineSums ? _mm512_setzero_si512() : _mm512_loadu_si512(sums + 16 * j);
    for (int r = 0; r < R; ++r) acc[j][r] = _mm512_setzero_si512();
  }
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t kq = 0; kq < p.kb; ++kq) {
    __m512i wv[J];
    for (int j = 0; j < J; ++j) {
      const int8_t* wp = w + (j * p.kb + kq) * 64;
      wv[j] = _mm512_loadu_si512(wp);
      _mm_prefetch(reinterpret_cast<const char*>(wp + 1024), _MM_HINT_T0);
      if (kInlineSums) sum[j] = _mm512_dpbusd_epi32(sum[j], ones, wv[j]);
    }
    for (int r = 0; r < R; ++r) {
      int32_t x4;
      std::memcpy(&x4, p.q + (r0 + r) * p.padded + kq * kIn, 4);
      const __m512i xb = _mm512_set1_epi32(x4);
      for (int j = 0; j < J; ++j) acc[j][r] = _mm512_dpbusd_epi32(acc[j][r], xb, wv[j]);
    }
  }
  for (int j = 0; j < J; ++j) {
    const int64_t j0 = (jb + j) * kOut;
    const int64_t n = std::min<int64_t>(kOut, p.outf - j0);
    const __mmask16 m = __mmask16((1u << n) - 1);
    const __m512 sw = _mm512_maskz_loadu_ps(m, p.sw + j0);
    const __m512 b = p.bias ? _mm512_maskz_loadu_ps(m, p.bias + j0) : _mm512_setzero_ps();
    const __m512i shift = _mm512_maskz_slli_epi32(0xFFFF, sum[j], 7);
    for (int r = 0; r < R; ++r) {
      const __m512 d = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_sub_epi32(acc[j][r], shift));
      const __m512 s = _mm512_mul_ps(_mm512_set1_ps(p.sx[r0 + r]), sw);
      _mm512_mask_storeu_ps(p.y + (r0 + r) * p.outf + j0, m, _mm512_fmadd_ps(d, s, b));
    }
  }
#else
  (void)sums;
  for (int j = 0; j < J; ++j) {
    const int64_t j0 = (jb + j) * kOut;
    const int64_t n = std::min<int64_t>(kOut, p.outf - j0);
    for (int r = 0; r < R; ++r) {
      const uint8_t* q = p.q + (r0 + r) * p.padded;
      for (int64_t jj = 0; jj < n; ++jj) {
        int32_t t = 0;
        for (int64_t kq = 0; kq < p.kb; ++kq)
          for (int64_t i = 0; i < kIn; ++i)
            t += (int32_t(q[kq * kIn + i]) - 128) * int32_t(w[(j * p.kb + kq) * 64 + jj * kIn + i]);
        const float b = p.bias ? p.bias[j0 + jj] : 0.0f;
        p.y[(r0 + r) * p.outf + j0 + jj] = std::fma(float(t), p.sx[r0 + r] * p.sw[j0 + jj], b);
      }
    }
  }
#endif
}

using BlockFn = void (*)(const Problem&, int64_t, int64_t, const int32_t*);
// [inline sums][rows in the group - 1][output blocks - 1]
template <bool I>
constexpr BlockFn kBlock[4][4] = {
    {block_rows<1, 1, I>, block_rows<1, 2, I>, block_rows<1, 3, I>, block_rows<1, 4, I>},
    {block_rows<2, 1, I>, block_rows<2, 2, I>, block_rows<2, 3, I>, block_rows<2, 4, I>},
    {block_rows<3, 1, I>, block_rows<3, 2, I>, block_rows<3, 3, I>, block_rows<3, 4, I>},
    {block_rows<4, 1, I>, block_rows<4, 2, I>, block_rows<4, 3, I>, block_rows<4, 4, I>},
};

// Every row for output blocks [b0, b1): 4 blocks (64 outputs, 64 * in bytes of weights)
// at a time, dotted with each group of up to 4 rows while they are in L1/L2.
void blocks_range(const Problem& p, int64_t rows, int64_t b0, int64_t b1) {
  alignas(64) int32_t sums[4 * 16];
  for (int64_t jb = b0; jb < b1; jb += 4) {
    const int64_t nj = std::min<int64_t>(4, b1 - jb);
    if (rows <= 4) {
      kBlock<true>[rows - 1][nj - 1](p, 0, jb, nullptr);
      continue;
    }
#if TENSORVM_VNNI
    constexpr void (*kSums[4])(const Problem&, int64_t, int32_t*) = {block_sums<1>, block_sums<2>, block_sums<3>,
                                                                     block_sums<4>};
    kSums[nj - 1](p, jb, sums);
#endif
    for (int64_t r = 0; r < rows; r += 4) kBlock<false>[std::min<int64_t>(4, rows - r) - 1][nj - 1](p, r, jb, sums);
  }
}


// The packed weight's shape for a weight of [out, in].
Shape packed_shape(int64_t out, int64_t in) { return Shape{(out + kOut - 1) / kOut, (in + kIn - 1) / kIn, 64}; }

// linear_w8a8(x, weight, scale, bias=None)
void linear_w8a8(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& w = a.tensor(1);
  const Tensor& sc = a.tensor(2);
  const Tensor* b = a.opt_tensor(3);
  if (x.dtype() != DType::f32) vm::fail("x must be f32, got {}", x.describe());
  if (x.ndim() < 1) vm::fail("x must have at least 1 dimension, got {}", x.describe());
  if (sc.dtype() != DType::f32 || sc.ndim() != 1) vm::fail("scale must be f32 [out], got {}", sc.describe());
  const int64_t in = x.size(-1), outf = sc.size(0);
  if (in > (int64_t(1) << 15))
    vm::fail("at most {} input features (the int32 sums), got {}", int64_t(1) << 15, in);
  const Shape packed = packed_shape(outf, in);
  if (w.dtype() != DType::i8 || w.shape() != packed)
    vm::fail("weight must be the packed i8[{}, {}, 64] of a [{}, {}] weight (pack_w8a8), got {}", packed[0], packed[1],
             outf, in, w.describe());
  int64_t rows;
  Tensor y = linear_output(ctx, x, outf, b, rows);
  if (rows == 0 || outf == 0) {
    out[0] = std::move(y);
    return;
  }
  float* yp = y.data<float>();
  const float* bp = b ? b->data<float>() : nullptr;
  if (in == 0) {  // empty sums
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < outf; ++j) yp[r * outf + j] = bp ? bp[j] : 0.0f;
    out[0] = std::move(y);
    return;
  }
  const int64_t padded = (in + kPad - 1) / kPad * kPad;
  Tensor qx = ctx.empty(DType::i8, Shape{rows, padded});
  Tensor sx = ctx.empty(DType::f32, Shape{rows});
  uint8_t* qp = reinterpret_cast<uint8_t*>(qx.data<int8_t>());
  float* sxp = sx.data<float>();
  const float* xp = x.data<float>();
  ctx.parallel_for(rows, std::max<int64_t>(1, 8192 / in), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) sxp[r] = quantize_row(xp + r * in, in, qp + r * padded, padded);
  });
  const int64_t kb = (in + kIn - 1) / kIn;
  const Problem p{qp, padded, sxp, w.data<int8_t>(), kb, sc.data<float>(), bp, yp, outf};
  const int64_t blocks = (outf + kOut - 1) / kOut;
  const int64_t grain = std::max<int64_t>(4, (int64_t(1) << 14) / (std::min<int64_t>(rows, 16) * in));
  ctx.parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) { blocks_range(p, rows, b0, b1); });
  out[0] = std::move(y);
}

}  // namespace

void register_w8a8_ops(Registry& r) {
  auto& op = r.add("linear_w8a8", "linear algebra");
  op.params = {p_tensor("x"), p_tensor("weight"), p_tensor("scale"), p_opt_tensor("bias")};
  op.outputs = {"Tensor"};
  op.doc =
      "int8 x int8 linear: each row of x[..., in] (f32) is quantized at run time to q = rint(x * 127 / max|x_row|) "
      "(symmetric, per row), multiplied with the int8 weight W[out, in] in int32, and rescaled: "
      "y = (q @ W^T) * (max|x_row| / 127) * scale[out] + bias[out]. W and scale are linear_int8's, W packed "
      "offline as weight[ceil(out/16), ceil(in/4), 64] = W[16 jb + jj, 4 kq + t] at [jb, kq, 4 jj + t], zero-padded "
      "(pycompiler/quantize.py pack_w8a8); the packed shape fixes out and ceil(in/4), not in itself. A row holding "
      "NaN or inf gives NaN; in <= 32768.";
  op.kernel = linear_w8a8;
}

}  // namespace ops
