// attention's second product, o = p v, written once against simd.h's vector and compiled
// per variant (the first, the scores q k^T, is linear's dot_rows_f32 on the keys). It
// used to be Eigen's, which the x86-64 baseline build compiles for SSE only.
#pragma once

#include "ops/kernels/simd.h"

namespace ops::kernels::TENSORVM_VARIANT {

// o[i, c] = sum over j < n of p[i * n + j] * v[j * v_stride + c], for i < rows, c < dv,
// adding j in order (each output's arithmetic is fixed). Four vectors of columns at a
// time keep four independent accumulators in flight.
inline void weighted_rows_f32(const float* p, int64_t rows, int64_t n, const float* v, int64_t v_stride, int64_t dv,
                              float* o) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* pi = p + i * n;
    float* oi = o + i * dv;
    int64_t c = 0;
    for (; c + 4 * kLanes <= dv; c += 4 * kLanes) {
      Vf a0 = zero(), a1 = zero(), a2 = zero(), a3 = zero();
      for (int64_t j = 0; j < n; ++j) {
        const Vf w = set1(pi[j]);
        const float* vj = v + j * v_stride + c;
        a0 = fmadd(w, load(vj), a0);
        a1 = fmadd(w, load(vj + kLanes), a1);
        a2 = fmadd(w, load(vj + 2 * kLanes), a2);
        a3 = fmadd(w, load(vj + 3 * kLanes), a3);
      }
      store(oi + c, a0);
      store(oi + c + kLanes, a1);
      store(oi + c + 2 * kLanes, a2);
      store(oi + c + 3 * kLanes, a3);
    }
    for (; c < dv; c += kLanes) {
      const int m = int(dv - c < kLanes ? dv - c : kLanes);
      Vf a = zero();
      for (int64_t j = 0; j < n; ++j) a = fmadd(set1(pi[j]), load_n(v + j * v_stride + c, m), a);
      store_n(oi + c, a, m);
    }
  }
}

}  // namespace ops::kernels::TENSORVM_VARIANT
