// Horizontal sums of SIMD registers, shared by the streaming dot-product kernels of
// linear and linear_int8.
#pragma once

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ops {

#if defined(__AVX512F__)
// The sum of the 16 lanes. The maskz forms: GCC 12 warns (-Wuninitialized) about the
// _undefined_ operand inside _mm512_reduce_add_ps and the unmasked shuffles/casts.
inline float hsum512(__m512 v) {
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0x4E));  // + the other 256-bit half
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0xB1));  // + the neighbouring 128-bit lane
  __m128 h = _mm512_maskz_extractf32x4_ps(0xF, v, 0);
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}
#endif

#if defined(__AVX512F__) || defined(__AVX2__)
// The sum of the 8 lanes.
inline float hsum256(__m256 s) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}
#endif

}  // namespace ops
