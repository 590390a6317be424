// What linear, linear_int8 and linear_w8a8 share around their kernels (which live in
// ops/kernels/, one table per instruction-set variant, chosen by ops/cpu.h).
#pragma once

#include <cstdint>

#include "ops/registry.h"

namespace ops {

// Rows of x up to this take the streaming dot-product kernels (each weight row read once
// and dotted with every row; in L1-sized blocks past 8 rows); more take the tiled GEMM.
// Measured on the opus-mt shapes: 2.5x Eigen's GEMM at 12 rows, 1.07x at 32.
constexpr int64_t kMaxDotRows = 32;

// The output of linear / linear_int8 / linear_w8a8: checks `bias` (f32 [outf] or null)
// and allocates y with x's shape but `outf` last; `rows` gets the product of x's other dims.
Tensor linear_output(OpContext& ctx, const Tensor& x, int64_t outf, const Tensor* bias, int64_t& rows);

// What linear_act applies to each output element after the bias, in place: run on the
// slice of output features a thread has just computed, while it is still in cache.
enum class Epilogue { none, relu, sigmoid, silu };

// y[r, j] = act(dot(x[r], w[j]) + bias[j]) for rows x [rows, in] and w [outf, in], f32,
// with the active variant's kernels, split over the context's threads along j.
void linear_f32(OpContext& ctx, const float* x, int64_t rows, int64_t in, const float* w, const float* bias,
                int64_t outf, float* y, Epilogue act = Epilogue::none);

}  // namespace ops
