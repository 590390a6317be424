// The exp-bound row kernels (softmax, log_softmax, exp / sigmoid / silu / erf / exact and tanh gelu), compiled per
// variant so that elementwise_math.h's loops use the variant's full vector width: one
// AVX-512 instruction per 16 floats instead of four SSE ones at the x86-64 baseline.
// Beam search runs two log_softmax over [batch x beams, vocab] every step, and at int8
// they cost as much as the linear layers. Every lane's arithmetic is the same on every
// variant (elementwise_math.h), so only the speed depends on the variant.
#pragma once

#include "ops/kernels/simd.h"

// In a namespace of its own: its simd::kLanes (16) is not simd.h's kLanes.
#define TENSORVM_MATH_NAMESPACE ops::kernels::TENSORVM_VARIANT::math
#include "ops/elementwise_math.h"
#undef TENSORVM_MATH_NAMESPACE

namespace ops::kernels::TENSORVM_VARIANT {

using namespace math;

// One contiguous row: y = softmax(x) or log_softmax(x). The row max and sum first; a NaN,
// +inf or an all -inf row makes the whole row NaN, like torch.
template <bool LOG>
inline void softmax_row(const float* x, float* y, int64_t R) {
  bool nan = false;
  float m = extreme_f32<true>(x, R, nan);
  if (nan) m = __builtin_nanf("");
  // exp(x - m) and its sum a chunk at a time, so the sum reads from L1; softmax keeps the
  // exps in y, log_softmax only needs their sum (a stack chunk).
  constexpr int64_t kChunk = 1024;
  double s = 0;
  for (int64_t c0 = 0; c0 < R; c0 += kChunk) {
    const int64_t nc = R - c0 < kChunk ? R - c0 : kChunk;
    float tmp[LOG ? kChunk : 1];
    float* e = LOG ? tmp : y + c0;
    exp_shifted_f32(x + c0, m, e, nc);
    s += sum_f32(e, nc);
  }
  if constexpr (LOG) {
    const float ls = __builtin_logf(float(s));
    for (int64_t k = 0; k < R; ++k) y[k] = (x[k] - m) - ls;
  } else {
    const float inv = float(1.0 / s);
    for (int64_t k = 0; k < R; ++k) y[k] *= inv;
  }
}

inline void softmax_rows(const float* x, float* y, int64_t rows, int64_t R, bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    if (log) {
      softmax_row<true>(x + r * R, y + r * R, R);
    } else {
      softmax_row<false>(x + r * R, y + r * R, R);
    }
  }
}

inline void exp_map(int kind, const float* x, float* y, int64_t n) {
  switch (kind) {
    case 0: exp_map_f32<ExpMap::exp>(x, y, n); break;
    case 1: exp_map_f32<ExpMap::sigmoid>(x, y, n); break;
    case 2: exp_map_f32<ExpMap::silu>(x, y, n); break;
    case 3: exp_map_f32<ExpMap::erf>(x, y, n); break;
    case 4: exp_map_f32<ExpMap::gelu>(x, y, n); break;
    default: exp_map_f32<ExpMap::gelu_tanh>(x, y, n); break;
  }
}

}  // namespace ops::kernels::TENSORVM_VARIANT
