// attention's products, written once against simd.h's vector and compiled per variant.
// Few query rows (decode): the scores q k^T are linear's dot_rows_f32 on the keys (the op
// calls it) and o = p v is weighted_rows_f32 below. Many query rows (an encoder's or a
// prefill's self-attention): attention_rows_f32 computes a block of rows with linear's
// GEMM tile for both products, against keys and values packed once per head.
#pragma once

#include "ops/kernels/kernels.h"
#include "ops/kernels/linear_f32.h"
#include "ops/kernels/simd.h"
#include "ops/kernels/softmax.h"

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

// ---- many query rows
//
// Each row of a block is computed in full: its scores against every key (one GEMM), an
// exact softmax over them, then o = p v (a second GEMM). A block's scores are
// rows x Tk floats, which for a few dozen rows and Whisper's 1500 keys stay in L2, so
// the softmax needs no running max and rescaling (flash attention's online softmax)
// and gives the same values as the softmax of the whole row. Every output is a plain
// sum in a fixed order (GEMM tiles do not change a row's arithmetic), so neither the
// block a row falls in nor the thread count changes a bit.

// From this many query rows on the blocked path is the faster (bench/encoder_ops_bench.cpp,
// Xeon, one thread): from about 24-32 rows with AVX2 and AVX-512 (2-2.7x at Whisper's
// 1500 positions). The scalar variant's 4-lane unfused GEMM gains only at long rows
// (1.08x at 1500 x 1500 with head size 64, 2.9x at 40; 0.8x at 32 x 300).
constexpr int64_t kAttentionBlockedRows = TENSORVM_PLAIN_SIMD ? 256 : 32;

// Key panels for the scores' GEMM: the tile's B operand, kNR keys per panel, transposed:
// out[p * d * kNR + c * kNR + j] = k[(p * kNR + j) * stride + c], zeros past tk.
inline void pack_keys_f32(const float* k, int64_t tk, int64_t d, int64_t stride, float* out) {
  for (int64_t p = 0; p * kNR < tk; ++p) {
    float* dst = out + p * d * kNR;
    const int64_t nj = std::min<int64_t>(kNR, tk - p * kNR);
    for (int64_t j = 0; j < kNR; ++j) {
      const float* row = k + (p * kNR + j) * stride;
      for (int64_t c = 0; c < d; ++c) dst[c * kNR + j] = j < nj ? row[c] : 0.0f;
    }
  }
}

// Value panels for o = p v: kNR columns per panel, out[p * tk * kNR + j * kNR + c] =
// v[j * stride + p * kNR + c], zeros past dv.
inline void pack_values_f32(const float* v, int64_t tk, int64_t dv, int64_t stride, float* out) {
  for (int64_t p = 0; p * kNR < dv; ++p) {
    const int64_t nc = std::min<int64_t>(kNR, dv - p * kNR);
    float* dst = out + p * tk * kNR;
    for (int64_t j = 0; j < tk; ++j) {
      const float* row = v + j * stride + p * kNR;
      for (int64_t c = 0; c < kNR; ++c) dst[j * kNR + c] = c < nc ? row[c] : 0.0f;
    }
  }
}

// One row of scores in place: scaled, masked, then softmax probabilities (zeros when
// every key is masked or -inf, NaN when a score is NaN).
inline void softmax_scores(float* s, int64_t tk, float scale, const float* mf, const uint8_t* mb, int64_t mcol) {
  if (mf && mcol == 1) {
    for (int64_t j = 0; j < tk; ++j) s[j] = s[j] * scale + mf[j];
  } else if (mf) {
    for (int64_t j = 0; j < tk; ++j) s[j] = s[j] * scale + mf[j * mcol];
  } else if (mb) {
    const float neg_inf = -__builtin_inff();
    for (int64_t j = 0; j < tk; ++j) s[j] = mb[j * mcol] ? s[j] * scale : neg_inf;
  } else {
    for (int64_t j = 0; j < tk; ++j) s[j] *= scale;
  }
  bool nan = false;
  float m = extreme_f32<true>(s, tk, nan);
  if (nan) m = __builtin_nanf("");
  if (m == -__builtin_inff()) {  // the row attends to nothing
    for (int64_t j = 0; j < tk; ++j) s[j] = 0.0f;
    return;
  }
  exp_shifted_f32(s, m, s, tk);
  const float inv = float(1.0 / sum_f32(s, tk));
  for (int64_t j = 0; j < tk; ++j) s[j] *= inv;
}

inline void attention_rows_f32(const AttentionRows& a) {
  static constexpr auto kTiles = make_tiles(std::make_integer_sequence<int, kMR>{});
  const int64_t tk = a.tk, rows = a.rows;
  float* s = a.scores;
  // Per key panel (kNR keys x d, in L1) every tile of rows: the block's q rows stay in L1.
  for (int64_t p = 0; p * kNR < tk; ++p) {
    const int64_t n = std::min<int64_t>(kNR, tk - p * kNR);
    const int n0 = int(std::min<int64_t>(n, kLanes)), n1 = int(std::max<int64_t>(0, n - kLanes));
    for (int64_t r = 0; r < rows; r += kMR)
      kTiles[std::min<int64_t>(kMR, rows - r) - 1](a.q + r * a.d, a.d, a.keys + p * a.d * kNR, a.d,
                                                   s + r * tk + p * kNR, tk, n0, n1, nullptr, true);
  }
  for (int64_t r = 0; r < rows; ++r)
    softmax_scores(s + r * tk, tk, a.scale, a.mask_f ? a.mask_f + r * a.mask_row : nullptr,
                   a.mask_b ? a.mask_b + r * a.mask_row : nullptr, a.mask_col);
  // o = p v per value panel, kKC keys at a time (a kKC x kNR slice of the panel in L1).
  for (int64_t p = 0; p * kNR < a.dv; ++p) {
    const int64_t n = std::min<int64_t>(kNR, a.dv - p * kNR);
    const int n0 = int(std::min<int64_t>(n, kLanes)), n1 = int(std::max<int64_t>(0, n - kLanes));
    for (int64_t k0 = 0; k0 < tk; k0 += kKC) {
      const int64_t kc = std::min(kKC, tk - k0);
      for (int64_t r = 0; r < rows; r += kMR)
        kTiles[std::min<int64_t>(kMR, rows - r) - 1](s + r * tk + k0, tk, a.values + p * tk * kNR + k0 * kNR, kc,
                                                     a.o + r * a.dv + p * kNR, a.dv, n0, n1, nullptr, k0 == 0);
    }
  }
}

}  // namespace ops::kernels::TENSORVM_VARIANT
