// What linear, linear_int8 and linear_w8a8 share around their kernels (which live in
// ops/kernels/, one table per instruction-set variant, chosen by ops/cpu.h).
#pragma once

#include <cstdint>
#include <functional>

#include "ops/registry.h"

namespace ops {

// Rows of x up to this take the streaming dot-product kernels (each weight row read once
// and dotted with every row; in L1-sized blocks past 8 rows); more take the tiled GEMM.
// Measured on the opus-mt shapes: 2.5x Eigen's GEMM at 12 rows, 1.07x at 32.
constexpr int64_t kMaxDotRows = 32;

// Whether linear and linear_int8 send a product of `rows` rows with an [outf, in] weight to
// the library GEMM (when active): past kMaxDotRows always; from 17 rows on (beam 4 x batch
// 8 decodes 32) also when the weight is far bigger than L2 (4M floats or more), where the
// product is compute-bound rather than read-bound. One thread, 32 rows, oneDNN against the
// streaming kernels: 1.2x on NLLB's 1024 x 256206 output projection, 1.3x on its 4096 x 1024
// fc2, equal on 1024 x 4096, behind on 1024 x 1024 (an L2-sized weight).
bool library_gemm_for(int64_t rows, int64_t in, int64_t outf);

// The output of linear / linear_int8 / linear_w8a8: checks `bias` (f32 [outf] or null)
// and allocates y with x's shape but `outf` last; `rows` gets the product of x's other dims.
Tensor linear_output(OpContext& ctx, const Tensor& x, int64_t outf, const Tensor* bias, int64_t& rows);

// What linear_act applies to each output element after the bias, in place: run on the
// slice of output features a thread has just computed, while it is still in cache.
enum class Epilogue { none, relu, sigmoid, silu, gelu };

// act over columns [j0, j1) of every row of y [rows, outf], in place.
void apply_epilogue(Epilogue act, float* y, int64_t rows, int64_t outf, int64_t j0, int64_t j1);

// y[r, j] = act(dot(x[r], w[j]) + bias[j]) for rows x [rows, in] and w [outf, in], f32,
// with the active variant's kernels, split over the context's threads along j.
void linear_f32(OpContext& ctx, const float* x, int64_t rows, int64_t in, const float* w, const float* bias,
                int64_t outf, float* y, Epilogue act = Epilogue::none);

// The many-rows branch of the linears with a weight stored in another format (int8,
// f16, bf16): convert(j0, n, s) writes weight rows [j0, j0 + n) as f32 into s [n, in];
// blocks of them go to the library GEMM (as linear_f32 chooses it), or to dot_rows_f32 /
// gemm_rows_f32, so each output's arithmetic is linear_f32's on the converted weight.
using ConvertRows = std::function<void(int64_t j0, int64_t n, float* s)>;
void linear_converted_blocks(OpContext& ctx, const float* x, int64_t rows, int64_t in, int64_t outf, const float* bias,
                             float* y, const ConvertRows& convert, Epilogue act = Epilogue::none);

// linear_f32 with a 16-bit weight (wdt f16 or bf16, its bits as stored): the same result
// as linear_f32 on the weight widened to f32, bit for bit (ops/linear_16bit.cpp).
void linear_16bit(OpContext& ctx, const float* x, int64_t rows, int64_t in, const uint16_t* w, DType wdt,
                  const float* bias, int64_t outf, float* y, Epilogue act = Epilogue::none);

}  // namespace ops
