// y = x @ w^T + bias for many rows of x (the encoder, prefill): a register-tiled
// AVX-512 GEMM. Measured on the opus-mt encoder shapes, Eigen's GEMM reached ~100
// GMAC/s on 2 cores here; this kernel's tile (12 rows x 32 outputs = 24 accumulators)
// keeps the FMA units busier.
//
// Per block of 32 output features, the weight rows are packed (transposed) a kc-slice
// at a time into a small buffer: pack[k][0..32) = w[j..j+32, k] (zeros past the end),
// which stays in L1 while every tile of 12 rows of x streams past it. Each thread runs
// its own range of output features with its own pack buffer, and every output is a
// plain sum over k in order, so results do not depend on the thread count.
#include "ops/linear_kernels.h"

#include <algorithm>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace ops {

#if defined(__AVX512F__)

namespace {

constexpr int kNR = 32;     // output features per tile (2 vectors)
constexpr int kMR = 12;     // rows per tile
constexpr int64_t kKC = 256;  // inputs per packed slice: 256 x 32 floats = 32 KB

// y[r, 0..32) (+)= x[r, k0..k0+kc) . pack for MR rows; `first` starts from the bias
// (or zero) instead of the stored partial sums.
template <int MR>
void tile(const float* x, int64_t in, const float* pack, int64_t kc, float* y, int64_t outf, __mmask16 m0,
          __mmask16 m1, const float* bias, bool first) {
  __m512 c[MR][2];
  for (int r = 0; r < MR; ++r) {
    if (first) {
      c[r][0] = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
      c[r][1] = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
    } else {
      c[r][0] = _mm512_maskz_loadu_ps(m0, y + r * outf);
      c[r][1] = _mm512_maskz_loadu_ps(m1, y + r * outf + 16);
    }
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_loadu_ps(pack + k * kNR);
    const __m512 b1 = _mm512_loadu_ps(pack + k * kNR + 16);
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(x[r * in + k]);
      c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
      c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    _mm512_mask_storeu_ps(y + r * outf, m0, c[r][0]);
    _mm512_mask_storeu_ps(y + r * outf + 16, m1, c[r][1]);
  }
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, __mmask16, __mmask16,
                        const float*, bool);
constexpr TileFn kTiles[kMR] = {tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>,
                                tile<7>, tile<8>, tile<9>, tile<10>, tile<11>, tile<12>};

}  // namespace

int64_t gemm_pack_floats() { return kKC * kNR; }

void gemm_rows_f32(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, float* y,
                   int64_t outf, int64_t j0, int64_t j1, float* pack) {
  for (int64_t j = j0; j < j1; j += kNR) {
    const int64_t n = std::min<int64_t>(kNR, j1 - j);
    const __mmask16 m0 = __mmask16(n >= 16 ? 0xFFFF : (1u << n) - 1);
    const __mmask16 m1 = __mmask16(n <= 16 ? 0 : n >= 32 ? 0xFFFF : (1u << (n - 16)) - 1);
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
        kTiles[mr - 1](x + r * in + k0, in, pack, kc, y + r * outf + j, outf, m0, m1, b, k0 == 0);
      }
    }
  }
}

#else

int64_t gemm_pack_floats() { return 0; }

void gemm_rows_f32(const float*, int64_t, int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t,
                   float*) {
  vm::fail("gemm_rows_f32 needs AVX-512");  // callers check have_gemm_f32() first
}

#endif

}  // namespace ops
