// linear_w8a8's kernel (ops/quantized_w8a8.cpp has the op and the packed layout),
// compiled per variant. With AVX-512 VNNI, vpdpbusd multiplies 64 u8 x s8 pairs per
// instruction into 16 int32 lanes, one lane per output; x is stored as q + 128 (u8),
// so each dot product subtracts 128 * sum(weight row), summed in the same pass (one more
// vpdpbusd per weight vector, shared by every row). With AVX2 (and AVX-512 without
// VNNI), vpmaddubsw multiplies u8 x s8 pairs into int16 sums of two: |w| (u8) times
// x_signed * sign(w) (s8) gives w * x with no saturation (2 * 127 * 128 < 32768), then
// vpmaddwd with ones sums the pairs into int32 lanes. Elsewhere the same integer
// arithmetic runs in plain C++. The sums are exact in int32, so every variant gives the
// same integers, and the rescale is the same fused multiply-add.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/kernels/kernels.h"
#include "ops/kernels/simd.h"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define TENSORVM_W8A8_VNNI 1
#define TENSORVM_W8A8_AVX2 0
#elif defined(__AVX2__) && defined(__FMA__)
#define TENSORVM_W8A8_VNNI 0
#define TENSORVM_W8A8_AVX2 1
#else
#define TENSORVM_W8A8_VNNI 0
#define TENSORVM_W8A8_AVX2 0
#endif

namespace ops::kernels::TENSORVM_VARIANT {

constexpr int64_t kW8A8Out = 16, kW8A8In = 4;  // outputs per block, inputs per 4-byte group

#if TENSORVM_W8A8_VNNI
// sums[16 j + jj] = sum over the inputs of the weight row of output 16 (jb + j) + jj.
template <int J>
void block_sums(const W8A8Problem& p, int64_t jb, int32_t* sums) {
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
void block_rows(const W8A8Problem& p, int64_t r0, int64_t jb, const int32_t* sums) {
  const int8_t* w = p.w + jb * p.kb * 64;
#if TENSORVM_W8A8_VNNI
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
      std::memcpy(&x4, p.q + (r0 + r) * p.padded + kq * kW8A8In, 4);
      const __m512i xb = _mm512_set1_epi32(x4);
      for (int j = 0; j < J; ++j) acc[j][r] = _mm512_dpbusd_epi32(acc[j][r], xb, wv[j]);
    }
  }
  for (int j = 0; j < J; ++j) {
    const int64_t j0 = (jb + j) * kW8A8Out;
    const int64_t n = std::min<int64_t>(kW8A8Out, p.outf - j0);
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
    const int64_t j0 = (jb + j) * kW8A8Out;
    const int64_t n = std::min<int64_t>(kW8A8Out, p.outf - j0);
    for (int r = 0; r < R; ++r) {
      const uint8_t* q = p.q + (r0 + r) * p.padded;
      for (int64_t jj = 0; jj < n; ++jj) {
        int32_t t = 0;
        for (int64_t kq = 0; kq < p.kb; ++kq)
          for (int64_t i = 0; i < kW8A8In; ++i)
            t += (int32_t(q[kq * kW8A8In + i]) - 128) * int32_t(w[(j * p.kb + kq) * 64 + jj * kW8A8In + i]);
        const float b = p.bias ? p.bias[j0 + jj] : 0.0f;
        p.y[(r0 + r) * p.outf + j0 + jj] = std::fma(float(t), p.sx[r0 + r] * p.sw[j0 + jj], b);
      }
    }
  }
#endif
}

#if TENSORVM_W8A8_AVX2
// One output block (16 outputs: two registers of 8) for R rows starting at row r0.
template <int R>
void block_rows_avx2(const W8A8Problem& p, int64_t r0, int64_t jb) {
  const int8_t* w = p.w + jb * p.kb * 64;
  __m256i acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i bias128 = _mm256_set1_epi8(char(0x80));
  for (int64_t kq = 0; kq < p.kb; ++kq) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + kq * 64));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + kq * 64 + 32));
    _mm_prefetch(reinterpret_cast<const char*>(w + kq * 64 + 1024), _MM_HINT_T0);
    const __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);
    for (int r = 0; r < R; ++r) {
      int32_t x4;
      std::memcpy(&x4, p.q + (r0 + r) * p.padded + kq * kW8A8In, 4);
      const __m256i xs = _mm256_xor_si256(_mm256_set1_epi32(x4), bias128);  // q + 128 -> q (s8)
      const __m256i s0 = _mm256_maddubs_epi16(a0, _mm256_sign_epi8(xs, w0));
      const __m256i s1 = _mm256_maddubs_epi16(a1, _mm256_sign_epi8(xs, w1));
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(s0, ones16));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(s1, ones16));
    }
  }
  const int64_t j0 = jb * kW8A8Out;
  const int64_t n = std::min<int64_t>(kW8A8Out, p.outf - j0);
  for (int r = 0; r < R; ++r) {
    alignas(32) int32_t t[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(t), acc[r][0]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(t + 8), acc[r][1]);
    const float sx = p.sx[r0 + r];
    float* y = p.y + (r0 + r) * p.outf + j0;
    for (int64_t jj = 0; jj < n; ++jj) {
      const float b = p.bias ? p.bias[j0 + jj] : 0.0f;
      y[jj] = std::fma(float(t[jj]), sx * p.sw[j0 + jj], b);
    }
  }
}
#endif

using BlockFn = void (*)(const W8A8Problem&, int64_t, int64_t, const int32_t*);
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
inline void w8a8_blocks(const W8A8Problem& p, int64_t rows, int64_t b0, int64_t b1) {
#if TENSORVM_W8A8_AVX2
  // One block (16 * in bytes of weights, in L1) at a time, for each group of 4 rows.
  using RowsFn = void (*)(const W8A8Problem&, int64_t, int64_t);
  constexpr RowsFn kRows[4] = {block_rows_avx2<1>, block_rows_avx2<2>, block_rows_avx2<3>, block_rows_avx2<4>};
  for (int64_t jb = b0; jb < b1; ++jb)
    for (int64_t r = 0; r < rows; r += 4) kRows[std::min<int64_t>(4, rows - r) - 1](p, r, jb);
  return;
#endif
  alignas(64) int32_t sums[4 * 16];
  for (int64_t jb = b0; jb < b1; jb += 4) {
    const int64_t nj = std::min<int64_t>(4, b1 - jb);
    if (rows <= 4) {
      kBlock<true>[rows - 1][nj - 1](p, 0, jb, nullptr);
      continue;
    }
#if TENSORVM_W8A8_VNNI
    constexpr void (*kSums[4])(const W8A8Problem&, int64_t, int32_t*) = {block_sums<1>, block_sums<2>,
                                                                         block_sums<3>, block_sums<4>};
    kSums[nj - 1](p, jb, sums);
#endif
    for (int64_t r = 0; r < rows; r += 4) kBlock<false>[std::min<int64_t>(4, rows - r) - 1][nj - 1](p, r, jb, sums);
  }
}

}  // namespace ops::kernels::TENSORVM_VARIANT
