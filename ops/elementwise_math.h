// Vectorisable float math for hot loops (softmax, sigmoid, silu). Branch-free inline
// code that GCC/Clang auto-vectorise in a plain `for` loop; libm's expf is not
// vectorised without -ffast-math. Exact at the edges: exp(-inf) = 0, exp(inf) = inf,
// exp(NaN) = NaN, results below FLT_MIN are gradual (denormal) like expf.
#pragma once

#include <cstdint>
#include <cstring>

namespace ops {

// exp(x) in float, within ~1 ulp of expf (Cephes polynomial on [-ln2/2, ln2/2]).
// The clamp bounds are chosen so that no final fix-up is needed: x >= 100 scales by
// 2^144 and overflows to inf, x <= -120 scales by 2^-173 and underflows to 0. A NaN
// is clamped to `lo` for the arithmetic (converting NaN to an int is undefined) and
// returned as is at the end (a select: the loop still vectorises).
inline float exp_f32(float x) {
  const float hi = 100.0f;
  const float lo = -120.0f;
  float xc = x > hi ? hi : x;
  xc = xc >= lo ? xc : lo;  // NaN -> lo
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
  // y * 2^n in two steps (n in [-173, 144]: each half is a normal power of two), so
  // denormal results and overflow to inf come out of the multiplications.
  const int32_t ni = int32_t(n);
  const int32_t n1 = ni >> 1;
  const int32_t n2 = ni - n1;
  const int32_t b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  const float e = y * s1 * s2;
  return x != x ? x : e;
}

// 1 / (1 + exp(-x)), torch's formula.
inline float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

// x * sigmoid(x) = x / (1 + exp(-x)), torch's formula.
inline float silu_f32(float x) { return x / (1.0f + exp_f32(-x)); }

// ---------------------------------------------------------------- row reductions
// Explicit 16-lane loops with GCC/Clang vector extensions: the auto-vectoriser does not
// turn max/argmax/sum-in-double reductions over floats into SIMD without -ffast-math.
// The vectors are generic (lowered to AVX-512, AVX2, SSE or scalars as available).
// These inline helpers return vectors by value; GCC warns that such calls have another
// ABI without AVX/AVX-512, which never matters here (-Wpsabi silenced; parameters are
// passed by reference because GCC's note about their ABI cannot be silenced).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
namespace simd {

constexpr int kLanes = 16;
typedef float f32x16 __attribute__((vector_size(64)));
typedef int32_t i32x16 __attribute__((vector_size(64)));
typedef float f32x8 __attribute__((vector_size(32)));
typedef double f64x8 __attribute__((vector_size(64)));

inline f32x16 load16(const float* p) {
  f32x16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline f32x8 load8(const float* p) {
  f32x8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline f32x16 splat(float x) { return f32x16{} + x; }
// m ? a : b per lane (m is all-ones or zero), as bit operations (portable across compilers).
inline f32x16 select(const i32x16& m, const f32x16& a, const f32x16& b) {
  i32x16 ia, ib;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  const i32x16 r = (m & ia) | (~m & ib);
  f32x16 out;
  std::memcpy(&out, &r, sizeof out);
  return out;
}
inline i32x16 select(const i32x16& m, const i32x16& a, const i32x16& b) { return (m & a) | (~m & b); }
// Whether any lane of a mask is set.
inline bool any(const i32x16& m) {
  uint64_t w[8];
  std::memcpy(w, &m, sizeof w);
  return ((w[0] | w[1]) | (w[2] | w[3]) | (w[4] | w[5]) | (w[6] | w[7])) != 0;
}

}  // namespace simd

// The maximum (MAX) or minimum of p[0..n) ignoring NaN (-inf / +inf for an empty or
// all-NaN row); `nan` tells whether the row holds a NaN.
template <bool MAX>
inline float extreme_f32(const float* p, int64_t n, bool& nan) {
  using namespace simd;
  const float init = MAX ? -__builtin_inff() : __builtin_inff();
  float m = init;
  bool any_nan = false;
  int64_t i = 0;
  if (n >= kLanes) {
    // Two independent accumulators hide the compare+blend latency.
    f32x16 l0 = splat(init), l1 = l0;
    i32x16 nanv = {};
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
      const f32x16 v0 = load16(p + i), v1 = load16(p + i + kLanes);
      l0 = select(MAX ? (v0 > l0) : (v0 < l0), v0, l0);
      l1 = select(MAX ? (v1 > l1) : (v1 < l1), v1, l1);
      nanv |= (v0 != v0) | (v1 != v1);
    }
    for (; i + kLanes <= n; i += kLanes) {
      const f32x16 v = load16(p + i);
      l0 = select(MAX ? (v > l0) : (v < l0), v, l0);
      nanv |= (v != v);
    }
    l0 = select(MAX ? (l1 > l0) : (l1 < l0), l1, l0);
    for (int j = 0; j < kLanes; ++j) {
      m = (MAX ? l0[j] > m : l0[j] < m) ? l0[j] : m;
      any_nan = any_nan || nanv[j] != 0;
    }
  }
  for (; i < n; ++i) {
    m = (MAX ? p[i] > m : p[i] < m) ? p[i] : m;
    any_nan = any_nan || p[i] != p[i];
  }
  nan = any_nan;
  return m;
}

// The index of the first maximum (MAX) or minimum of p[0..n), n >= 1; a NaN counts as
// the extreme (the first NaN wins), like torch and numpy.
template <bool MAX>
inline int64_t arg_extreme_f32(const float* p, int64_t n) {
  using namespace simd;
  float best = p[0];
  int64_t bi = 0;
  bool nan = p[0] != p[0];
  int64_t i = 1;
  if (n >= 2 * kLanes && n < (int64_t(1) << 31)) {
    // Two sets of lanes (elements [32k, 32k+16) and [32k+16, 32k+32)), each keeping
    // its first extreme (strict compare); merged by (value, lowest index) at the end.
    f32x16 lv0 = load16(p), lv1 = load16(p + kLanes);
    i32x16 li0 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    i32x16 li1 = li0 + kLanes;
    i32x16 cur = li0 + 2 * kLanes;
    i32x16 nanv = (lv0 != lv0) | (lv1 != lv1);
    for (i = 2 * kLanes; i + 2 * kLanes <= n; i += 2 * kLanes, cur += 2 * kLanes) {
      const f32x16 v0 = load16(p + i), v1 = load16(p + i + kLanes);
      const i32x16 b0 = MAX ? (v0 > lv0) : (v0 < lv0);
      const i32x16 b1 = MAX ? (v1 > lv1) : (v1 < lv1);
      lv0 = select(b0, v0, lv0);
      li0 = select(b0, cur, li0);
      lv1 = select(b1, v1, lv1);
      li1 = select(b1, cur + kLanes, li1);
      nanv |= (v0 != v0) | (v1 != v1);
    }
    best = lv0[0];
    bi = li0[0];
    for (int j = 0; j < 2 * kLanes; ++j) {
      const float v = j < kLanes ? lv0[j] : lv1[j - kLanes];
      const int64_t vi = j < kLanes ? li0[j] : li1[j - kLanes];
      if (j < kLanes) nan = nan || nanv[j] != 0;
      if ((MAX ? v > best : v < best) || (v == best && vi < bi)) {
        best = v;
        bi = vi;
      }
    }
  }
  for (; i < n; ++i) {  // later indices win only strictly
    if (MAX ? p[i] > best : p[i] < best) {
      best = p[i];
      bi = i;
    }
    nan = nan || p[i] != p[i];
  }
  if (nan) {
    for (int64_t k = 0; k < n; ++k)
      if (p[k] != p[k]) return k;
  }
  return bi;
}

// Whether any of p[0..16) could beat `worst` in a top-k heap: greater than it (LARGEST)
// or smaller, NaN counting as the largest. A superset test; callers check exactly.
template <bool LARGEST>
inline bool any_may_enter_f32(const float* p, float worst) {
  using namespace simd;
  if (worst != worst) return true;
  const f32x16 v = load16(p), w = splat(worst);
  return any(LARGEST ? (v > w) | (v != v) : (v < w));
}

// sum(p[0..n)) accumulated in double.
inline double sum_f32(const float* p, int64_t n) {
  using namespace simd;
  f64x8 a = {}, b = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    a += __builtin_convertvector(load8(p + i), f64x8);
    b += __builtin_convertvector(load8(p + i + 8), f64x8);
  }
  a += b;
  double s = 0;
  for (int j = 0; j < 8; ++j) s += a[j];
  for (; i < n; ++i) s += double(p[i]);
  return s;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace ops
