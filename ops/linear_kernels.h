// The f32 dot-product kernels of linear, shared with linear_int8 (which dequantizes a
// block of weight rows into f32 and hands it over).
#pragma once

#include <cstdint>

#include "ops/registry.h"

namespace ops {

// The output of linear / linear_int8 / linear_w8a8: checks `bias` (f32 [outf] or null)
// and allocates y with x's shape but `outf` last; `rows` gets the product of x's other dims.
Tensor linear_output(OpContext& ctx, const Tensor& x, int64_t outf, const Tensor* bias, int64_t& rows);

// y[r * y_stride + j] = dot(x[r, :], w[j, :]) + bias[j] (bias may be null) for r < rows,
// j < n; x is [rows, in] and w is [n, in], both row-major. Single-threaded: callers
// split j over threads. Streams w once (rows <= 8), or in L1-sized blocks reused by
// groups of 4 rows (more rows).
void dot_rows_f32(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, int64_t n, float* y,
                  int64_t y_stride);

// y[r, j] = dot(x[r], w[j]) + bias[j] for all rows and j in [j0, j1), with the register-
// tiled AVX-512 GEMM (ops/gemm_f32.cpp); `pack` holds gemm_pack_floats() floats of
// per-thread scratch. Only with kHaveGemmF32 (AVX-512 builds).
#if defined(__AVX512F__)
constexpr bool kHaveGemmF32 = true;
#else
constexpr bool kHaveGemmF32 = false;
#endif
int64_t gemm_pack_floats();
void gemm_rows_f32(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, float* y,
                   int64_t outf, int64_t j0, int64_t j1, float* pack);

}  // namespace ops
