// Vectorisable float math for hot loops (softmax, sigmoid, silu). Branch-free inline
// code that GCC/Clang auto-vectorise in a plain `for` loop; libm's expf is not
// vectorised without -ffast-math. Exact at the edges: exp(-inf) = 0, exp(inf) = inf,
// exp(NaN) = NaN, results below FLT_MIN are gradual (denormal) like expf.
#pragma once

#include <cstdint>
#include <cstring>

namespace ops {

// exp(x) in float, within ~1 ulp of expf (Cephes polynomial on [-ln2/2, ln2/2]).
inline float exp_f32(float x) {
  const float hi = 88.72283935546875f;   // above: inf
  const float lo = -103.972084045410f;   // below: 0 (past the smallest denormal)
  float xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  // n = round(x / ln2) via the 1.5 * 2^23 trick (no call, vectorises).
  const float shifter = 12582912.0f;
  const float n = (xc * 1.44269504088896341f + shifter) - shifter;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  // y * 2^n in two steps so that n below -126 (denormal results) still works.
  const int32_t ni = int32_t(n);
  const int32_t n1 = ni / 2;
  const int32_t n2 = ni - n1;
  const int32_t b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  float res = y * s1 * s2;
  res = x > hi ? __builtin_inff() : res;
  res = x < lo ? 0.0f : res;
  res = x != x ? x : res;
  return res;
}

// 1 / (1 + exp(-x)), torch's formula.
inline float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

// x * sigmoid(x) = x / (1 + exp(-x)), torch's formula.
inline float silu_f32(float x) { return x / (1.0f + exp_f32(-x)); }

}  // namespace ops
