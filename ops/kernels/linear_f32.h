// linear's f32 kernels, written once against simd.h's vector and compiled per variant.
//
// A few rows (decode: batch x beams): each weight row is loaded once and dotted with
// every row of x; the cost is reading the weights. Many rows (encoder, prefill): a
// register-tiled GEMM. Per block of 2 vectors of output features the weight rows are
// packed (transposed) a kKC-slice at a time into a small buffer that stays in L1 while
// every tile of rows of x streams past it. Every output is a plain sum over k in order
// (bias first), so it does not depend on where a thread's range starts.
#pragma once

#include <algorithm>
#include <array>
#include <utility>

#include "ops/kernels/simd.h"

namespace ops::kernels::TENSORVM_VARIANT {

constexpr int64_t kMaxDecodeRows = 8;     // rows up to this stream the weights once
constexpr int64_t kPrefetch = 1024;       // floats ahead in the weight stream (measured: 2x at 2-4 rows)
constexpr int64_t kBlockFloats = 16384;   // weights per block when more than 4 rows take two passes
constexpr int64_t kL1BlockFloats = 8192;  // weights per block reused from L1 by many rows
// Weight rows dotted at once with 4 rows of x: 4 x 4 accumulators need 32 registers.
constexpr int kBlockedO = kRegisters >= 32 ? 4 : 2;

// How the streaming kernels read weights: f32 as stored; f16 and bf16 (linear with a
// 16-bit weight, ops/linear_16bit.cpp) widened to f32 as they are loaded, which is
// exact, so every output's arithmetic is the f32 kernel's on the widened weight, bit
// for bit. They read half the bytes, which is what bounds a decode step.
struct F32Weights {
  using T = float;
  static Vf get(const float* p) { return load(p); }
  static Vf get_n(const float* p, int n) { return load_n(p, n); }
};
struct F16Weights {
  using T = uint16_t;
  static Vf get(const uint16_t* p) { return load_f16(p); }
  static Vf get_n(const uint16_t* p, int n) { return load_f16_n(p, n); }
};
struct BF16Weights {
  using T = uint16_t;
  static Vf get(const uint16_t* p) { return load_bf16(p); }
  static Vf get_n(const uint16_t* p, int n) { return load_bf16_n(p, n); }
};

// acc[o * R + r] = dot(x[r, :], w[o, :]) for R rows of x and O consecutive weight rows
// (both with row stride `in`): each weight vector is loaded once and used for every row.
template <int R, int O, class W = F32Weights>
inline void dot_rows(const float* x, int64_t in, const typename W::T* w, float* acc) {
  // A 16-bit weight takes U = 2 vectors a step: the same bytes per step (and per
  // prefetch) as f32, and the same order of FMAs into each accumulator as f32's steps.
  constexpr int U = int(sizeof(float) / sizeof(typename W::T));
  constexpr int64_t ahead = kPrefetch * U;  // the same bytes ahead
  Vf a[O][R];
  for (int o = 0; o < O; ++o)
    for (int r = 0; r < R; ++r) a[o][r] = zero();
  int64_t k = 0;
  for (; k + U * kLanes <= in; k += U * kLanes) {
    Vf wv[U][O];
    for (int o = 0; o < O; ++o) {
      for (int u = 0; u < U; ++u) wv[u][o] = W::get(w + o * in + k + u * kLanes);
      prefetch(w + o * in + k + ahead);
    }
    for (int u = 0; u < U; ++u)
      for (int r = 0; r < R; ++r) {
        const Vf xv = load(x + r * in + k + u * kLanes);
        for (int o = 0; o < O; ++o) a[o][r] = fmadd(wv[u][o], xv, a[o][r]);
      }
  }
  if constexpr (U > 1) {
    for (; k + kLanes <= in; k += kLanes) {
      for (int r = 0; r < R; ++r) {
        const Vf xv = load(x + r * in + k);
        for (int o = 0; o < O; ++o) a[o][r] = fmadd(W::get(w + o * in + k), xv, a[o][r]);
      }
    }
  }
  if (k < in) {  // the tail: partial loads read nothing past the end
    const int n = int(in - k);
    Vf wv[O];
    for (int o = 0; o < O; ++o) wv[o] = W::get_n(w + o * in + k, n);
    for (int r = 0; r < R; ++r) {
      const Vf xv = load_n(x + r * in + k, n);
      for (int o = 0; o < O; ++o) a[o][r] = fmadd(wv[o], xv, a[o][r]);
    }
  }
  for (int o = 0; o < O; ++o)
    for (int r = 0; r < R; ++r) acc[o * R + r] = hsum(a[o][r]);
}

// y[r, j] = dot(x[r], w[j]) + bias[j] for output features [j0, j1), R rows.
template <int R, int OW = 2, class W = F32Weights>
void decode_rows(const float* x, const typename W::T* w, const float* bias, float* y, int64_t in, int64_t outf,
                 int64_t j0, int64_t j1) {
  if constexpr (R > 4) {
    // More than 4 rows: two passes of at most 4 rows over each block of weight rows,
    // the second from cache (measured faster than 5..8 rows in one pass).
    constexpr int R1 = (R + 1) / 2;
    const int64_t block = std::max<int64_t>(2, kBlockFloats / in / 2 * 2);
    for (int64_t jb = j0; jb < j1; jb += block) {
      const int64_t je = std::min(jb + block, j1);
      decode_rows<R1, 2, W>(x, w, bias, y, in, outf, jb, je);
      decode_rows<R - R1, 2, W>(x + R1 * in, w, bias, y + R1 * outf, in, outf, jb, je);
    }
    return;
  }
  // Several weight rows at a time: more independent accumulators per step.
  constexpr int O = OW;
  float acc[O * R];
  int64_t j = j0;
  for (; j + O <= j1; j += O) {
    dot_rows<R, O, W>(x, in, w + j * in, acc);
    for (int o = 0; o < O; ++o) {
      const float b = bias ? bias[j + o] : 0.0f;
      for (int r = 0; r < R; ++r) y[r * outf + j + o] = acc[o * R + r] + b;
    }
  }
  for (; j < j1; ++j) {
    dot_rows<R, 1, W>(x, in, w + j * in, acc);
    const float b = bias ? bias[j] : 0.0f;
    for (int r = 0; r < R; ++r) y[r * outf + j] = acc[r] + b;
  }
}

template <class W>
using DecodeFn = void (*)(const float*, const typename W::T*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
template <class W>
constexpr DecodeFn<W> kDecode[kMaxDecodeRows] = {decode_rows<1, 2, W>, decode_rows<2, 2, W>, decode_rows<3, 2, W>,
                                                 decode_rows<4, 2, W>, decode_rows<5, 2, W>, decode_rows<6, 2, W>,
                                                 decode_rows<7, 2, W>, decode_rows<8, 2, W>};

// Many rows: the weight rows of [j0, j1) in blocks small enough to stay in L1, each
// block dotted with every group of 4 rows of x: one pass over memory. A block holds at
// least kBlockedO weight rows even when they overflow L1 (in > 2048, e.g. NLLB's
// 4096-wide fc2): with fewer, decode_rows falls back to one weight row per step, 4 FMAs
// for 5 loads, and ran at 40% of the speed of the L2-resident 4 x 4 block (measured at
// 32 x 4096 -> 1024). Each output's arithmetic is the same either way.
template <class W>
void blocked_rows(const float* x, int64_t rows, const typename W::T* w, const float* bias, float* y, int64_t in,
                  int64_t outf, int64_t j0, int64_t j1) {
  const int64_t block = std::max<int64_t>(kBlockedO, kL1BlockFloats / in / kBlockedO * kBlockedO);
  for (int64_t jb = j0; jb < j1; jb += block) {
    const int64_t je = std::min(jb + block, j1);
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) decode_rows<4, kBlockedO, W>(x + r * in, w, bias, y + r * outf, in, outf, jb, je);
    if (r < rows) kDecode<W>[rows - r - 1](x + r * in, w, bias, y + r * outf, in, outf, jb, je);
  }
}

template <class W>
void dot_rows_of(const float* x, int64_t rows, int64_t in, const typename W::T* w, const float* bias, int64_t n,
                 float* y, int64_t y_stride) {
  if (rows <= 0 || n <= 0) return;
  if (rows <= kMaxDecodeRows) {
    kDecode<W>[rows - 1](x, w, bias, y, in, y_stride, 0, n);
  } else {
    blocked_rows<W>(x, rows, w, bias, y, in, y_stride, 0, n);
  }
}

inline void dot_rows_f32(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, int64_t n,
                         float* y, int64_t y_stride) {
  dot_rows_of<F32Weights>(x, rows, in, w, bias, n, y, y_stride);
}

inline void dot_rows_f16(const float* x, int64_t rows, int64_t in, const uint16_t* w, const float* bias, int64_t n,
                         float* y, int64_t y_stride) {
  dot_rows_of<F16Weights>(x, rows, in, w, bias, n, y, y_stride);
}

inline void dot_rows_bf16(const float* x, int64_t rows, int64_t in, const uint16_t* w, const float* bias, int64_t n,
                          float* y, int64_t y_stride) {
  dot_rows_of<BF16Weights>(x, rows, in, w, bias, n, y, y_stride);
}

// out[i] = w[i] widened to f32 for n 16-bit values (exact): linear's blocks of weight
// rows for the GEMM, embedding's rows.
template <class W>
void widen(const uint16_t* w, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(out + i, W::get(w + i));
  if (i < n) store_n(out + i, W::get_n(w + i, int(n - i)), int(n - i));
}
inline void widen_f16(const uint16_t* w, int64_t n, float* out) { widen<F16Weights>(w, n, out); }
inline void widen_bf16(const uint16_t* w, int64_t n, float* out) { widen<BF16Weights>(w, n, out); }

// ---- the GEMM

constexpr int kNR = 2 * kLanes;                  // output features per tile (2 vectors)
constexpr int kMR = kRegisters >= 32 ? 12 : 6;   // rows per tile: 2 x MR accumulators + 3 in flight
constexpr int64_t kKC = 256;                     // inputs per packed slice

// y[r, 0..n) (+)= x[r, k0..k0+kc) . pack for MR rows; `first` starts from the bias (or
// zero) instead of the stored partial sums. n0 / n1: valid lanes of the two vectors.
template <int MR>
void tile(const float* x, int64_t in, const float* pack, int64_t kc, float* y, int64_t outf, int n0, int n1,
          const float* bias, bool first) {
  Vf c[MR][2];
  const bool full = n0 == kLanes && n1 == kLanes;
  for (int r = 0; r < MR; ++r) {
    if (first) {
      c[r][0] = bias ? load_n(bias, n0) : zero();
      c[r][1] = bias && n1 > 0 ? load_n(bias + kLanes, n1) : zero();
    } else if (full) {
      c[r][0] = load(y + r * outf);
      c[r][1] = load(y + r * outf + kLanes);
    } else {
      c[r][0] = load_n(y + r * outf, n0);
      c[r][1] = n1 > 0 ? load_n(y + r * outf + kLanes, n1) : zero();
    }
  }
  for (int64_t k = 0; k < kc; ++k) {
    const Vf b0 = load(pack + k * kNR);
    const Vf b1 = load(pack + k * kNR + kLanes);
    for (int r = 0; r < MR; ++r) {
      const Vf a = set1(x[r * in + k]);
      c[r][0] = fmadd(a, b0, c[r][0]);
      c[r][1] = fmadd(a, b1, c[r][1]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    if (full) {
      store(y + r * outf, c[r][0]);
      store(y + r * outf + kLanes, c[r][1]);
    } else {
      store_n(y + r * outf, c[r][0], n0);
      if (n1 > 0) store_n(y + r * outf + kLanes, c[r][1], n1);
    }
  }
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int, int, const float*, bool);

template <int... M>
constexpr auto make_tiles(std::integer_sequence<int, M...>) {
  return std::array<TileFn, sizeof...(M)>{tile<M + 1>...};
}

inline void gemm_rows_f32(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, float* y,
                          int64_t outf, int64_t j0, int64_t j1, float* pack) {
  static constexpr auto kTiles = make_tiles(std::make_integer_sequence<int, kMR>{});
  for (int64_t j = j0; j < j1; j += kNR) {
    const int64_t n = std::min<int64_t>(kNR, j1 - j);
    const int n0 = int(std::min<int64_t>(n, kLanes));
    const int n1 = int(std::max<int64_t>(0, n - kLanes));
    for (int64_t k0 = 0; k0 < in; k0 += kKC) {
      const int64_t kc = std::min(kKC, in - k0);
      for (int64_t jj = 0; jj < kNR; ++jj) {  // transpose the slice; zeros past the last feature
        const float* row = w + (j + jj) * in + k0;
        if (jj < n) {
          for (int64_t k = 0; k < kc; ++k) pack[k * kNR + jj] = row[k];
        } else {
          for (int64_t k = 0; k < kc; ++k) pack[k * kNR + jj] = 0.0f;
        }
      }
      const float* b = bias ? bias + j : nullptr;
      for (int64_t r = 0; r < rows; r += kMR) {
        const int64_t mr = std::min<int64_t>(kMR, rows - r);
        kTiles[mr - 1](x + r * in + k0, in, pack, kc, y + r * outf + j, outf, n0, n1, b, k0 == 0);
      }
    }
  }
}

}  // namespace ops::kernels::TENSORVM_VARIANT
