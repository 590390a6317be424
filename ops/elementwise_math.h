// Vectorisable float math for hot loops (softmax, sigmoid, silu, erf, exact and tanh gelu).
// Branch-free inline code that GCC/Clang auto-vectorise in a plain `for` loop; libm's
// expf and erff are not vectorised without -ffast-math. Exact at the edges: exp(-inf) = 0, exp(inf) = inf,
// exp(NaN) = NaN, results below FLT_MIN are gradual (denormal) like expf.
//
// The ops include this in namespace ops. The kernel variants (ops/kernels/variant.cpp)
// include it again in their own namespace, by defining TENSORVM_MATH_NAMESPACE first, so
// that a copy compiled with AVX-512 flags never leaves its variant: hence no `#pragma
// once`, and nothing here but <cstdint> and <cstring>.
#ifndef TENSORVM_MATH_NAMESPACE
#pragma once
#define TENSORVM_MATH_NAMESPACE ops
#endif

#include <cstdint>
#include <cstring>

namespace TENSORVM_MATH_NAMESPACE {

// ---------------------------------------------------------------- row reductions
// Explicit loops over GCC/Clang vector extensions: the auto-vectoriser does not turn
// max/argmax/sum-in-double reductions over floats into SIMD without -ffast-math. The
// vectors are as wide as the registers the compilation targets (16 floats with
// AVX-512, 8 with AVX, else 4): GCC turns a comparison of a vector wider than its
// registers into one scalar compare per lane (measured: exp over 2M floats 7x slower
// with 16-lane vectors on AVX2), so the width must follow the target. Nothing computed
// here depends on the width: max, argmax and exp are exact per lane, and sum_f32 keeps
// one fixed order.
// These inline helpers return vectors by value; GCC warns that such calls have another
// ABI on other targets, which never matters here (-Wpsabi silenced; parameters are
// passed by reference because GCC's note about their ABI cannot be silenced).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
namespace simd {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif
typedef float fv __attribute__((vector_size(4 * kLanes)));
typedef int32_t iv __attribute__((vector_size(4 * kLanes)));

inline fv load(const float* p) {
  fv v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// Every lane x (as a loop: fv{} + x would turn -0 into +0).
inline fv splat(float x) {
  fv v;
  for (int j = 0; j < kLanes; ++j) v[j] = x;
  return v;
}
inline iv iota() {
  iv v = {};
  for (int j = 0; j < kLanes; ++j) v[j] = j;
  return v;
}
// m ? a : b per lane (m is all-ones or zero), as bit operations (portable across
// compilers); the casts reinterpret the bits.
inline fv select(const iv& m, const fv& a, const fv& b) { return (fv)((m & (iv)a) | (~m & (iv)b)); }
inline iv select(const iv& m, const iv& a, const iv& b) { return (m & a) | (~m & b); }
// Whether any lane of a mask is set.
inline bool any(const iv& m) {
  uint64_t w[kLanes / 2];
  std::memcpy(w, &m, sizeof w);
  uint64_t r = 0;
  for (int j = 0; j < kLanes / 2; ++j) r |= w[j];
  return r != 0;
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
    fv l0 = splat(init), l1 = l0;
    iv nanv = {};
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
      const fv v0 = load(p + i), v1 = load(p + i + kLanes);
      l0 = select(MAX ? (v0 > l0) : (v0 < l0), v0, l0);
      l1 = select(MAX ? (v1 > l1) : (v1 < l1), v1, l1);
      nanv |= (v0 != v0) | (v1 != v1);
    }
    for (; i + kLanes <= n; i += kLanes) {
      const fv v = load(p + i);
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
    // Two sets of lanes (elements [2Lk, 2Lk+L) and [2Lk+L, 2Lk+2L) for L lanes), each
    // keeping its first extreme (strict compare); merged by (value, lowest index) at the end.
    fv lv0 = load(p), lv1 = load(p + kLanes);
    iv li0 = iota();
    iv li1 = li0 + kLanes;
    iv cur = li0 + 2 * kLanes;
    iv nanv = (lv0 != lv0) | (lv1 != lv1);
    for (i = 2 * kLanes; i + 2 * kLanes <= n; i += 2 * kLanes, cur += 2 * kLanes) {
      const fv v0 = load(p + i), v1 = load(p + i + kLanes);
      const iv b0 = MAX ? (v0 > lv0) : (v0 < lv0);
      const iv b1 = MAX ? (v1 > lv1) : (v1 < lv1);
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

// Whether any of p[0..kLanes) could beat `worst` in a top-k heap: greater than it
// (LARGEST) or smaller, NaN counting as the largest. A superset test; callers check exactly.
template <bool LARGEST>
inline bool any_may_enter_f32(const float* p, float worst) {
  using namespace simd;
  if (worst != worst) return true;
  const fv v = load(p), w = splat(worst);
  return any(LARGEST ? (v > w) | (v != v) : (v < w));
}

// sum(p[0..n)) accumulated in double, in one order whatever the target: 16 partial sums,
// partial j adding the elements at 16t + j in order, then (partial j + partial j + 8)
// for j = 0..7 added in order, then the tail. The partials live in as many native
// double vectors as it takes (8 on SSE, 4 on AVX, 2 on AVX-512); one 64-byte vector
// split by GCC over AVX2 registers ran 6x slower.
inline double sum_f32(const float* p, int64_t n) {
  using namespace simd;
  constexpr int kD = kLanes / 2;  // doubles per native vector
  typedef double dv __attribute__((vector_size(8 * kD)));
  typedef float fh __attribute__((vector_size(4 * kD)));
  dv acc[16 / kD] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int v = 0; v < 16 / kD; ++v) {
      fh f;
      std::memcpy(&f, p + i + v * kD, sizeof f);
      acc[v] += __builtin_convertvector(f, dv);
    }
  }
  double part[16];
  std::memcpy(part, acc, sizeof part);
  double s = 0;
  for (int j = 0; j < 8; ++j) s += part[j] + part[j + 8];
  for (; i < n; ++i) s += double(p[i]);
  return s;
}

// out = exp(x) on every lane (out by reference: see -Wpsabi above), within ~1 ulp of
// expf (Cephes polynomial on [-ln2/2, ln2/2]). The clamp bounds are chosen so that no
// final fix-up is needed: x >= 100 scales by 2^144 and overflows to inf, x <= -120 scales
// by 2^-173 and underflows to 0. A NaN is clamped to `lo` for the arithmetic (converting
// NaN to an int is undefined) and returned as is at the end. Written on vectors because
// GCC vectorises the scalar form of these selects and conversions only with AVX-512.
inline void exp_v(const simd::fv& x, simd::fv& out) {
  using namespace simd;
  const fv hi = splat(100.0f), lo = splat(-120.0f);
  fv xc = select(x > hi, hi, x);
  xc = select(xc >= lo, xc, lo);  // NaN -> lo
  // n = round(x / ln2) via the 1.5 * 2^23 trick.
  const fv shifter = splat(12582912.0f);
  const fv n = (xc * 1.44269504088896341f + shifter) - shifter;
  fv r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  fv p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const fv y = p * r * r + r + 1.0f;
  const iv ni = __builtin_convertvector(n, iv);
  const iv n1 = ni >> 1;
  const iv n2 = ni - n1;
  const iv b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  // y * 2^n in two steps (n in [-173, 144]: each half is a normal power of two), so
  // denormal results and overflow to inf come out of the multiplications.
  const fv e = y * (fv)b1 * (fv)b2;
  out = select(x != x, x, e);
}

// exp of one float: exp_v on a vector holding it, so that a loop's scalar tail computes
// exactly what its vector lanes do, from one copy of the arithmetic.
inline float exp_f32(float x) {
  simd::fv r;
  exp_v(simd::splat(x), r);
  return r[0];
}

// 1 / (1 + exp(-x)), torch's formula.
inline float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

// x * sigmoid(x) = x / (1 + exp(-x)), torch's formula.
inline float silu_f32(float x) { return x / (1.0f + exp_f32(-x)); }

// out = erf(x) on every lane, within 2 ulp of the exact value (1.3 ulp measured with an
// exact exp; tests/cpp/test_kernel_variants.cpp bounds it against std::erf in double).
// Two branch-free pieces, both computed, one kept per lane:
//   |x| < 0.921875:  x + x * (2/sqrt(pi) - 1 + z Q(z)), z = x^2 (x + x*c keeps the leading
//                    term exact, so tiny x are right to the last bit);
//   |x| >= 0.921875: sign(x) * (1 - exp(-x^2) g(|x|)), g = erfcx = exp(x^2) erfc(x) as a
//                    polynomial in t = (|x| - 2.42) / 1.5 on [0.921875, 3.92]; past 3.92
//                    erf rounds to +-1 in float.
// The coefficients are least-squares fits (Chebyshev nodes, relative error, mpmath
// reference) of degree 6 in z and 12 in t. NaN stays NaN, erf(+-inf) = +-1.
inline void erf_v(const simd::fv& x, simd::fv& out) {
  using namespace simd;
  const iv sign = (iv)x & int32_t(0x80000000);
  const fv a = (fv)((iv)x & 0x7FFFFFFF);
  const fv z = a * a;
  fv q = splat(8.400146180065349e-05f);
  q = q * z + -0.0008151192450895905f;
  q = q * z + 0.0052019585855305195f;
  q = q * z + -0.026859886944293976f;
  q = q * z + 0.11283708363771439f;
  q = q * z + -0.37612634897232056f;
  q = q * z + 0.12837916612625122f;  // 2/sqrt(pi) - 1
  const fv small = a + a * q;
  const fv hi = splat(3.92f);
  const fv ac = select(a < hi, a, hi);  // NaN -> 3.92: finite arithmetic, the NaN is kept below
  const fv t = (ac - 2.4209375f) * 0.66708359391f;  // 1 / 1.4990625
  fv g = splat(1.5975389032973908e-05f);
  g = g * t + -4.659237674786709e-05f;
  g = g * t + 7.291085785254836e-05f;
  g = g * t + -0.00017529023170936853f;
  g = g * t + 0.0004930125433020294f;
  g = g * t + -0.0012041737791150808f;
  g = g * t + 0.0027986716013401747f;
  g = g * t + -0.006369142327457666f;
  g = g * t + 0.014027643948793411f;
  g = g * t + -0.029745198786258698f;
  g = g * t + 0.06052164360880852f;
  g = g * t + -0.11759505420923233f;
  g = g * t + 0.21684439480304718f;
  fv e;
  exp_v(-(ac * ac), e);
  const fv large = select(a >= hi, splat(1.0f), 1.0f - e * g);
  // Both pieces on |x|, the sign put back as a bit (erf is odd, erf(-0) = -0). A NaN is
  // returned as is: its payload would depend on the operand order the compiler picked.
  out = select(x != x, x, (fv)((iv)select(a >= 0.921875f, large, small) | sign));
}

// erf of one float, from erf_v's arithmetic (a loop's tail computes what its lanes do).
inline float erf_f32(float x) {
  simd::fv r;
  erf_v(simd::splat(x), r);
  return r[0];
}

// Exact GELU, torch's formula x * 0.5 * (1 + erf(x / sqrt(2))), on every lane / one float.
inline void gelu_v(const simd::fv& x, simd::fv& out) {
  simd::fv e;
  erf_v(x * 0.70710678118654752f, e);
  out = simd::select(x != x, x, x * 0.5f * (1.0f + e));  // NaN as is, as in erf_v
}
inline float gelu_f32(float x) {
  simd::fv r;
  gelu_v(simd::splat(x), r);
  return r[0];
}

// Tanh GELU (GPT-2's gelu_new), torch's 0.5 * x * (1 + tanh(u)), u = sqrt(2/pi) * (x +
// 0.044715 x^3), computed as x * sigmoid(2u) = x / (1 + exp(-2u)), the same function: on
// exp_v it vectorises where libm's tanhf does not (9 ns an element), and for x << 0 it
// has no cancellation in 1 + tanh(u) (torch's value is within 0.5 |x| ulp(1) of it).
// Edges as torch's: x/inf = -0 for x -> -inf, inf for +inf, NaN for -inf and NaN.
inline void gelu_tanh_v(const simd::fv& x, simd::fv& out) {
  simd::fv e;
  exp_v((x + 0.044715f * (x * x * x)) * -1.5957691216057308f, e);  // -2 sqrt(2/pi)
  out = x / (1.0f + e);
}
inline float gelu_tanh_f32(float x) {
  simd::fv r;
  gelu_tanh_v(simd::splat(x), r);
  return r[0];
}

// y[i] = f(x[i]) for n floats, a vector at a time: F is exp, sigmoid, silu, erf, exact
// gelu or tanh gelu, the vector form built on exp_v / erf_v and the scalar one (the tail)
// on the matching *_f32.
enum class ExpMap { exp = 0, sigmoid = 1, silu = 2, erf = 3, gelu = 4, gelu_tanh = 5 };  // the kernel table's exp_map kinds

template <ExpMap F>
inline void exp_map_f32(const float* x, float* y, int64_t n) {
  using namespace simd;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const fv v = load(x + i);
    fv r;
    if constexpr (F == ExpMap::erf) {
      erf_v(v, r);
    } else if constexpr (F == ExpMap::gelu) {
      gelu_v(v, r);
    } else if constexpr (F == ExpMap::gelu_tanh) {
      gelu_tanh_v(v, r);
    } else {
      exp_v(F == ExpMap::exp ? v : -v, r);
      if constexpr (F == ExpMap::sigmoid) r = 1.0f / (1.0f + r);
      if constexpr (F == ExpMap::silu) r = v / (1.0f + r);
    }
    std::memcpy(y + i, &r, sizeof r);
  }
  for (; i < n; ++i) {
    if constexpr (F == ExpMap::exp) y[i] = exp_f32(x[i]);
    if constexpr (F == ExpMap::sigmoid) y[i] = sigmoid_f32(x[i]);
    if constexpr (F == ExpMap::silu) y[i] = silu_f32(x[i]);
    if constexpr (F == ExpMap::erf) y[i] = erf_f32(x[i]);
    if constexpr (F == ExpMap::gelu) y[i] = gelu_f32(x[i]);
    if constexpr (F == ExpMap::gelu_tanh) y[i] = gelu_tanh_f32(x[i]);
  }
}

// e[i] = exp(x[i] - m) for n floats (softmax's numerator).
inline void exp_shifted_f32(const float* x, float m, float* e, int64_t n) {
  using namespace simd;
  int64_t i = 0;
  const fv mv = splat(m);
  for (; i + kLanes <= n; i += kLanes) {
    fv r;
    exp_v(load(x + i) - mv, r);
    std::memcpy(e + i, &r, sizeof r);
  }
  for (; i < n; ++i) e[i] = exp_f32(x[i] - m);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace TENSORVM_MATH_NAMESPACE
