// The 4-bit weight kernels (ops/quantized_int4.cpp has the ops and the format),
// compiled per variant. A weight row is blocks of 32 inputs in 16 bytes: byte i holds
// q[k0 + i] + 8 in its low nibble and q[k0 + 16 + i] + 8 in its high one (llama.cpp's
// q4_0 order), so a 16-byte load splits into the block's first and second 16 inputs with
// one mask and one shift. One f32 scale per group of G inputs (G a multiple of 32).
//
// linear_int4 (weight-only) streams the nibble rows for a few rows of x: each block is
// widened to f32, scaled, and multiplied into one accumulator vector per (output, row);
// several outputs at a time keep several weight streams in flight (the decode is bound by
// reading the weight). linear_w4a8 multiplies the nibbles with x quantized to int8 per
// block of 32 (llama.cpp's q8_0): vpdpbusd (AVX-512 VNNI, two blocks a step on 512-bit
// vectors), vpmaddubsw + vpmaddwd (AVX2),
// vdotq_s32 (NEON with the dot-product extension) or widening multiplies (NEON), plain
// C++ otherwise. The x86 u8 x s8 instructions take the nibbles as stored (q + 8, u8) and
// start from -8 * sum(x block), precomputed per row (W4A8Problem::xc), so no instruction
// re-centres the weights. Each block's integer sum is exact in every variant; it is
// scaled by sx_block * sw_group and added in f32.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/kernels/kernels.h"
#include "ops/kernels/simd.h"

#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512BW__)
#define TENSORVM_W4A8_KIND 3  // vpdpbusd on 256-bit vectors
#elif defined(__AVX2__) && defined(__FMA__)
#define TENSORVM_W4A8_KIND 2  // vpmaddubsw + vpmaddwd
#elif defined(__ARM_NEON) && defined(__aarch64__) && !TENSORVM_PLAIN_SIMD
#define TENSORVM_W4A8_KIND 1  // NEON: vdotq_s32 where the compiler targets dotprod, else vmull_s8
#else
#define TENSORVM_W4A8_KIND 0  // plain C++
#endif

#if TENSORVM_W4A8_KIND == 3
#define TENSORVM_W4A8_NAME "vnni"
#elif TENSORVM_W4A8_KIND == 2
#define TENSORVM_W4A8_NAME "avx2"
#elif TENSORVM_W4A8_KIND == 1 && defined(__ARM_FEATURE_DOTPROD)
#define TENSORVM_W4A8_NAME "neon_dotprod"
#elif TENSORVM_W4A8_KIND == 1
#define TENSORVM_W4A8_NAME "neon"
#else
#define TENSORVM_W4A8_NAME "generic"
#endif

namespace ops::kernels::TENSORVM_VARIANT {

constexpr int kI4Block = 32;                // inputs per block (16 bytes)
constexpr int kI4Vecs = kI4Block / kLanes;  // f32 vectors per block

// The 32 signed values of one block as f32 vectors (inputs k0 .. k0 + 31 in order).
inline void unpack_i4(const uint8_t* b, Vf* w) {
#if defined(__AVX512F__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
  const __m128i m = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  const __m128i lo = _mm_sub_epi8(_mm_and_si128(v, m), eight);
  const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), m), eight);
  w[0].v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo));
  w[1].v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi));
#elif defined(__AVX2__) && defined(__FMA__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
  const __m128i m = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  const __m128i lo = _mm_sub_epi8(_mm_and_si128(v, m), eight);
  const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), m), eight);
  w[0].v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
  w[1].v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
  w[2].v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
  w[3].v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
#elif defined(__ARM_NEON) && defined(__aarch64__) && !TENSORVM_PLAIN_SIMD
  const uint8x16_t v = vld1q_u8(b);
  const int8x16_t eight = vdupq_n_s8(8);
  const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))), eight);
  const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), eight);
  const int8x16_t half[2] = {lo, hi};
  for (int h = 0; h < 2; ++h) {
    const int16x8_t a = vmovl_s8(vget_low_s8(half[h])), c = vmovl_s8(vget_high_s8(half[h]));
    w[4 * h + 0].v = vcvtq_f32_s32(vmovl_s16(vget_low_s16(a)));
    w[4 * h + 1].v = vcvtq_f32_s32(vmovl_s16(vget_high_s16(a)));
    w[4 * h + 2].v = vcvtq_f32_s32(vmovl_s16(vget_low_s16(c)));
    w[4 * h + 3].v = vcvtq_f32_s32(vmovl_s16(vget_high_s16(c)));
  }
#else
  int8_t q[kI4Block];
  for (int i = 0; i < 16; ++i) {
    q[i] = int8_t((b[i] & 0x0F) - 8);
    q[16 + i] = int8_t((b[i] >> 4) - 8);
  }
  for (int i = 0; i < kI4Vecs; ++i) w[i] = load_i8(q + i * kLanes);
#endif
}

// Outputs [j, j + J) for R rows of x (row stride p.in_p, zero past `in`). Up to 2 rows,
// the unscaled products of a group are summed first and scaled once per group (per 32
// weights: 2 widenings, 2 conversions, 2 multiply-adds and 1/(G/32) scaling one); more
// rows scale each block's weights once and share them (2 multiplies + 2 R multiply-adds).
// J outputs at a time are J weight streams in flight.
template <int R, int J>
inline void i4_outputs(const Int4Problem& p, int64_t j) {
  constexpr bool kGroupSums = R <= 2;
  const int64_t ng = p.in_p / p.group, row_bytes = p.in_p / 2;
  Vf acc[J][R], sum[J][R];
  for (int jj = 0; jj < J; ++jj)
    for (int r = 0; r < R; ++r) acc[jj][r] = zero();
  for (int64_t g = 0; g < ng; ++g) {
    Vf d[J];
    for (int jj = 0; jj < J; ++jj) {
      d[jj] = set1(p.scale[(j + jj) * ng + g]);
      for (int r = 0; r < R; ++r) sum[jj][r] = zero();
    }
    for (int64_t k0 = g * p.group; k0 < (g + 1) * p.group; k0 += kI4Block) {
      for (int jj = 0; jj < J; ++jj) {
        const uint8_t* row = p.w + (j + jj) * row_bytes;
        if ((k0 & 127) == 0) prefetch(row + k0 / 2 + 1024);
        Vf w[kI4Vecs];
        unpack_i4(row + k0 / 2, w);
        for (int i = 0; i < kI4Vecs; ++i) {
          const Vf wd = kGroupSums ? w[i] : mul(w[i], d[jj]);
          for (int r = 0; r < R; ++r) {
            Vf& a = kGroupSums ? sum[jj][r] : acc[jj][r];
            a = fmadd(wd, load(p.x + r * p.in_p + k0 + i * kLanes), a);
          }
        }
      }
    }
    if (kGroupSums)
      for (int jj = 0; jj < J; ++jj)
        for (int r = 0; r < R; ++r) acc[jj][r] = fmadd(sum[jj][r], d[jj], acc[jj][r]);
  }
  for (int jj = 0; jj < J; ++jj) {
    const float b = p.bias ? p.bias[j + jj] : 0.0f;
    for (int r = 0; r < R; ++r) p.y[r * p.outf + j + jj] = hsum(acc[jj][r]) + b;
  }
}

// Outputs per step for R rows: as many accumulators (twice as many up to 2 rows) as
// leave room for the block's weights and the x loads.
template <int R>
constexpr int i4_streams() {
  return std::max(1, std::min(4, (kRegisters / 2) / (R <= 2 ? 2 * R : R)));
}

template <int R>
void i4_rows(const Int4Problem& p, int64_t j0, int64_t j1) {
  constexpr int J = i4_streams<R>();
  int64_t j = j0;
  for (; j + J <= j1; j += J) i4_outputs<R, J>(p, j);
  for (; j < j1; ++j) i4_outputs<R, 1>(p, j);
}

inline void dot_rows_i4(const Int4Problem& p, int64_t rows, int64_t j0, int64_t j1) {
  using Fn = void (*)(const Int4Problem&, int64_t, int64_t);
  static constexpr Fn kRows[8] = {i4_rows<1>, i4_rows<2>, i4_rows<3>, i4_rows<4>,
                                  i4_rows<5>, i4_rows<6>, i4_rows<7>, i4_rows<8>};
  if (rows >= 1 && rows <= 8) kRows[rows - 1](p, j0, j1);
}

// s[i, k] = q[i, k] * scale[i, k / group] for k < in, n rows (row stride `in` in s).
inline void dequantize_rows_i4(const uint8_t* q, const float* scale, int64_t n, int64_t in, int64_t in_p,
                               int64_t group, float* s) {
  const int64_t ng = in_p / group;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* qi = q + i * (in_p / 2);
    float* si = s + i * in;
    for (int64_t k0 = 0, g = 0, left = group; k0 < in; k0 += kI4Block, left -= kI4Block) {
      if (left == 0) {  // the next group (no division in the loop)
        ++g;
        left = group;
      }
      Vf w[kI4Vecs];
      unpack_i4(qi + k0 / 2, w);
      const Vf d = set1(scale[i * ng + g]);
      for (int v = 0; v < kI4Vecs; ++v) {
        const int64_t k = k0 + v * kLanes;
        if (k + kLanes <= in) {
          store(si + k, mul(w[v], d));
        } else {
          if (k < in) store_n(si + k, mul(w[v], d), int(in - k));
          break;
        }
      }
    }
  }
}

// ---------------------------------------------------------------- w4a8

#if TENSORVM_W4A8_KIND >= 2
// The block's 32 nibbles as u8 in [0, 15], in input order: the 16 bytes in both halves,
// the upper half shifted by 4, masked (no shuffle-port instruction).
inline __m256i unpack_i4_u8(const uint8_t* b) {
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
  return _mm256_and_si256(_mm256_srlv_epi64(v, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
}

// 8 int32 partial sums of one block whose total is sum (nibble - 8) * x: nibble (u8) x x
// (s8), plus xc (-8 * sum(x) in lane 0, zeros) (nibble * x <= 15 * 127: vpmaddubsw's pairs do
// not saturate).
inline __m256i block_dot(__m256i u, __m256i x, __m256i xc) {
#if TENSORVM_W4A8_KIND == 3
  return _mm256_dpbusd_epi32(xc, u, x);
#else
  return _mm256_add_epi32(xc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
#endif
}

inline float hsum8(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}
#endif

#if TENSORVM_W4A8_KIND == 3
// Two consecutive blocks' 64 nibbles as u8 in input order on one 512-bit vector: the 32
// bytes' 128-bit halves each twice, every second copy shifted by 4, all masked.
inline __m512i unpack_i4_pair_u8(const uint8_t* b) {
  const __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
  const __m512i twice = _mm512_shuffle_i64x2(v, v, 0x50);  // [block 0, block 0, block 1, block 1]
  return _mm512_and_si512(_mm512_srlv_epi64(twice, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)), _mm512_set1_epi8(0x0F));
}

// Two consecutive floats p[0], p[1] as [p[0] x 8, p[1] x 8]: a block pair's scales.
inline __m512 pair_f32(const float* p) {
  const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))));
}

// Outputs [j, j + J) for R rows starting at row r0, two blocks (64 inputs) a step on
// 512-bit vectors: per output and pair one nibble load, one vpdpbusd per row, one
// conversion and one multiply-add, half the instructions of a block a step (decode was
// bound by them, not by the read). Lanes 0-7 hold the first block's partial sums, 8-15
// the second's, so each lane is scaled by its own block's sx * sw. An odd last block
// takes the 256-bit step.
template <int R, int J>
inline void w4a8_outputs_pairs(const W4A8Problem& p, int64_t r0, int64_t j) {
  const int64_t ng = p.in_p / p.group, nb = p.in_p / kI4Block, row_bytes = p.in_p / 2;
  const int64_t per_group = p.group / kI4Block;
  const int8_t* x = p.q + r0 * p.in_p;
  const float* sx = p.sx + r0 * nb;
  const int32_t* xc = p.xc + r0 * nb;
  const __m512i to_lanes_0_8 = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512 acc[J][R];
  for (int jj = 0; jj < J; ++jj)
    for (int r = 0; r < R; ++r) acc[jj][r] = _mm512_setzero_ps();
  int64_t g = 0, left = per_group;  // block b's group, and blocks left in it
  auto next_block = [&] {
    if (--left == 0) {
      ++g;
      left = per_group;
    }
  };
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const int64_t g0 = g;
    next_block();
    const int64_t g1 = g;
    next_block();
    __m512i xv[R], c[R];
    __m512 sxv[R];
    for (int r = 0; r < R; ++r) {
      xv[r] = _mm512_loadu_si512(x + r * p.in_p + b * kI4Block);
      // -8 * sum(x) of each block in its first lane (0 and 8): the start of vpdpbusd's sums
      c[r] = _mm512_maskz_permutexvar_epi32(0x0101, to_lanes_0_8,
                                            _mm512_castsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(xc + r * nb + b))));
      sxv[r] = pair_f32(sx + r * nb + b);
    }
    for (int jj = 0; jj < J; ++jj) {
      const uint8_t* row = p.w + (j + jj) * row_bytes;
      const float* sw = p.scale + (j + jj) * ng;
      if ((b & 3) == 0) _mm_prefetch(reinterpret_cast<const char*>(row + b * 16 + 1024), _MM_HINT_T0);
      const __m512 swv = g1 == g0 + 1 ? pair_f32(sw + g0) : _mm512_set1_ps(sw[g0]);  // groups of 32: one each
      const __m512i u = unpack_i4_pair_u8(row + b * 16);
      for (int r = 0; r < R; ++r)
        acc[jj][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(c[r], u, xv[r])), _mm512_mul_ps(sxv[r], swv),
                                     acc[jj][r]);
    }
  }
  float tail[J][R] = {};
  if (b < nb) {  // the odd last block
    for (int r = 0; r < R; ++r) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + r * p.in_p + b * kI4Block));
      const __m256i c = _mm256_zextsi128_si256(_mm_loadu_si32(xc + r * nb + b));
      for (int jj = 0; jj < J; ++jj) {
        const __m256i u = unpack_i4_u8(p.w + (j + jj) * row_bytes + b * 16);
        const float d = sx[r * nb + b] * p.scale[(j + jj) * ng + g];
        tail[jj][r] = hsum8(_mm256_mul_ps(_mm256_cvtepi32_ps(block_dot(u, xv, c)), _mm256_set1_ps(d)));
      }
    }
  }
  for (int jj = 0; jj < J; ++jj) {
    const float bias = p.bias ? p.bias[j + jj] : 0.0f;
    for (int r = 0; r < R; ++r) p.y[(r0 + r) * p.outf + j + jj] = hsum(Vf{acc[jj][r]}) + tail[jj][r] + bias;
  }
}
#endif

// Outputs [j, j + J) for R rows starting at row r0.
template <int R, int J>
inline void w4a8_outputs(const W4A8Problem& p, int64_t r0, int64_t j) {
  const int64_t ng = p.in_p / p.group, nb = p.in_p / kI4Block, row_bytes = p.in_p / 2;
  const int8_t* x = p.q + r0 * p.in_p;
  const float* sx = p.sx + r0 * nb;
#if TENSORVM_W4A8_KIND >= 2
  // Per block: x's vector, xc and scale loaded once for the J outputs, each output's
  // nibbles once for the R rows (the loads, not the arithmetic, bounded the first version).
  const int32_t* xc = p.xc + r0 * nb;
  __m256 acc[J][R], sw[J];
  for (int jj = 0; jj < J; ++jj) {
    sw[jj] = _mm256_broadcast_ss(p.scale + (j + jj) * ng);
    for (int r = 0; r < R; ++r) acc[jj][r] = _mm256_setzero_ps();
  }
  const int64_t per_group = p.group / kI4Block;
  for (int64_t b = 0, g = 0, left = per_group; b < nb; ++b, --left) {
    if (left == 0) {  // the next group (no division in the loop)
      ++g;
      left = per_group;
      for (int jj = 0; jj < J; ++jj) sw[jj] = _mm256_broadcast_ss(p.scale + (j + jj) * ng + g);
    }
    __m256i xv[R], c[R];
    __m256 sxv[R];
    for (int r = 0; r < R; ++r) {
      xv[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + r * p.in_p + b * kI4Block));
      c[r] = _mm256_zextsi128_si256(_mm_loadu_si32(xc + r * nb + b));
      sxv[r] = _mm256_broadcast_ss(sx + r * nb + b);
    }
    for (int jj = 0; jj < J; ++jj) {
      const uint8_t* row = p.w + (j + jj) * row_bytes;
      if ((b & 7) == 0) _mm_prefetch(reinterpret_cast<const char*>(row + b * 16 + 1024), _MM_HINT_T0);
      const __m256i u = unpack_i4_u8(row + b * 16);
      for (int r = 0; r < R; ++r) {
        const __m256 d = _mm256_mul_ps(sxv[r], sw[jj]);  // sx * sw, as the other variants
        acc[jj][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_dot(u, xv[r], c[r])), d, acc[jj][r]);
      }
    }
  }
  for (int jj = 0; jj < J; ++jj) {
    const float bias = p.bias ? p.bias[j + jj] : 0.0f;
    for (int r = 0; r < R; ++r) p.y[(r0 + r) * p.outf + j + jj] = hsum8(acc[jj][r]) + bias;
  }
#elif TENSORVM_W4A8_KIND == 1
  float32x4_t acc[J][R];
  for (int jj = 0; jj < J; ++jj)
    for (int r = 0; r < R; ++r) acc[jj][r] = vdupq_n_f32(0.0f);
  const int64_t per_group = p.group / kI4Block;
  for (int64_t b = 0, g = 0, left = per_group; b < nb; ++b, --left) {
    if (left == 0) {  // the next group (no division in the loop)
      ++g;
      left = per_group;
    }
    for (int jj = 0; jj < J; ++jj) {
      const uint8_t* row = p.w + (j + jj) * row_bytes;
      const uint8x16_t v = vld1q_u8(row + b * 16);
      const int8x16_t eight = vdupq_n_s8(8);
      const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))), eight);
      const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), eight);
      const float sw = p.scale[(j + jj) * ng + g];
      for (int r = 0; r < R; ++r) {
        const int8_t* xb = x + r * p.in_p + b * kI4Block;
        const int8x16_t x0 = vld1q_s8(xb), x1 = vld1q_s8(xb + 16);
#if defined(__ARM_FEATURE_DOTPROD)
        const int32x4_t s = vdotq_s32(vdotq_s32(vdupq_n_s32(0), lo, x0), hi, x1);
#else
        int16x8_t t = vmull_s8(vget_low_s8(lo), vget_low_s8(x0));
        t = vmlal_s8(t, vget_high_s8(lo), vget_high_s8(x0));  // |sum of 2| <= 2 * 8 * 127
        int16x8_t u = vmull_s8(vget_low_s8(hi), vget_low_s8(x1));
        u = vmlal_s8(u, vget_high_s8(hi), vget_high_s8(x1));
        const int32x4_t s = vpadalq_s16(vpaddlq_s16(t), u);
#endif
        acc[jj][r] = vfmaq_f32(acc[jj][r], vcvtq_f32_s32(s), vdupq_n_f32(sx[r * nb + b] * sw));
      }
    }
  }
  for (int jj = 0; jj < J; ++jj) {
    const float bias = p.bias ? p.bias[j + jj] : 0.0f;
    for (int r = 0; r < R; ++r) p.y[(r0 + r) * p.outf + j + jj] = vaddvq_f32(acc[jj][r]) + bias;
  }
#else
  float acc[J][R] = {};
  const int64_t per_group = p.group / kI4Block;
  for (int64_t b = 0, g = 0, left = per_group; b < nb; ++b, --left) {
    if (left == 0) {  // the next group (no division in the loop)
      ++g;
      left = per_group;
    }
    for (int jj = 0; jj < J; ++jj) {
      const uint8_t* wb = p.w + (j + jj) * row_bytes + b * 16;
      int8_t q[kI4Block];
      for (int i = 0; i < 16; ++i) {
        q[i] = int8_t((wb[i] & 0x0F) - 8);
        q[16 + i] = int8_t((wb[i] >> 4) - 8);
      }
      const float sw = p.scale[(j + jj) * ng + g];
      for (int r = 0; r < R; ++r) {
        const int8_t* xb = x + r * p.in_p + b * kI4Block;
        int32_t s = 0;
        for (int i = 0; i < kI4Block; ++i) s += int32_t(q[i]) * int32_t(xb[i]);
        acc[jj][r] = std::fma(float(s), sx[r * nb + b] * sw, acc[jj][r]);
      }
    }
  }
  for (int jj = 0; jj < J; ++jj) {
    const float bias = p.bias ? p.bias[j + jj] : 0.0f;
    for (int r = 0; r < R; ++r) p.y[(r0 + r) * p.outf + j + jj] = acc[jj][r] + bias;
  }
#endif
}

// Outputs [j0, j1) for rows [r0, r0 + R): two outputs at a time (two weight streams).
template <int R>
void w4a8_group(const W4A8Problem& p, int64_t r0, int64_t j0, int64_t j1) {
  int64_t j = j0;
#if TENSORVM_W4A8_KIND == 3
  for (; j + 2 <= j1; j += 2) w4a8_outputs_pairs<R, 2>(p, r0, j);
  for (; j < j1; ++j) w4a8_outputs_pairs<R, 1>(p, r0, j);
#else
  for (; j + 2 <= j1; j += 2) w4a8_outputs<R, 2>(p, r0, j);
  for (; j < j1; ++j) w4a8_outputs<R, 1>(p, r0, j);
#endif
}

// Every row for outputs [j0, j1): tiles of 16 outputs (16 * in_p / 2 bytes of weights,
// in L1/L2) dotted with each group of up to 4 rows.
inline void w4a8_rows(const W4A8Problem& p, int64_t rows, int64_t j0, int64_t j1) {
  using Fn = void (*)(const W4A8Problem&, int64_t, int64_t, int64_t);
  static constexpr Fn kGroup[4] = {w4a8_group<1>, w4a8_group<2>, w4a8_group<3>, w4a8_group<4>};
  constexpr int64_t kTile = 16;
  for (int64_t t0 = j0; t0 < j1; t0 += kTile) {
    const int64_t t1 = std::min(j1, t0 + kTile);
    for (int64_t r = 0; r < rows; r += 4) kGroup[std::min<int64_t>(4, rows - r) - 1](p, r, t0, t1);
  }
}

}  // namespace ops::kernels::TENSORVM_VARIANT
