// The hot kernels (the linear ops, attention's products, softmax and the exp maps), in
// one table per instruction-set variant. Each variant is ops/kernels/variant.cpp
// compiled with its own flags into its own namespace; ops/cpu.cpp picks one table at
// load time (CPU detection, or TENSORVM_ISA). The kernels are single-threaded and take
// plain pointers: the ops (ops/linalg.cpp, ops/quantized*.cpp, ops/attention.cpp,
// ops/reduce.cpp, ops/elementwise_unary.cpp) check shapes, allocate and split the work
// over threads, and each output is computed by the same arithmetic wherever a split
// falls, so results do not depend on the thread count.
#pragma once

#include <cstdint>

namespace ops::kernels {

// linear_w8a8's operands (ops/quantized_w8a8.cpp describes the packed weight layout).
struct W8A8Problem {
  const uint8_t* q;   // [rows, padded] quantized x, stored as q + 128
  int64_t padded;     // a multiple of 64
  const float* sx;    // [rows] x scales
  const int8_t* w;    // packed weight [ceil(out / 16), kb, 64]
  int64_t kb;         // ceil(in / 4)
  const float* sw;    // [outf] weight scales
  const float* bias;  // [outf] or null
  float* y;           // [rows, outf]
  int64_t outf;
};

// linear_int4's decode operands (ops/quantized_int4.cpp describes the 4-bit format).
struct Int4Problem {
  const float* x;      // [rows, in_p] f32, zero past the op's `in` features
  int64_t in_p;        // padded inputs, a multiple of group
  int64_t group;       // inputs per scale, a multiple of 32
  const uint8_t* w;    // [outf, in_p / 2] nibbles
  const float* scale;  // [outf, in_p / group]
  const float* bias;   // [outf] or null
  float* y;            // [rows, outf]
  int64_t outf;
};

// linear_w4a8's operands: the weight as linear_int4's, x quantized per block of 32.
struct W4A8Problem {
  const int8_t* q;     // [rows, in_p] quantized x, zero past `in`
  const float* sx;     // [rows, in_p / 32] x scales, NaN for a row holding NaN or inf
  const int32_t* xc;   // [rows, in_p / 32] -8 * each block's sum of q: (nibble - 8) . q = nibble . q + xc
  int64_t in_p, group;
  const uint8_t* w;    // [outf, in_p / 2] nibbles
  const float* scale;  // [outf, in_p / group]
  const float* bias;   // [outf] or null
  float* y;            // [rows, outf]
  int64_t outf;
};

// attention's many-query path: one block of query rows of one head (ops/attention.cpp).
struct AttentionRows {
  const float* q;             // [rows, d], contiguous
  int64_t rows, d;
  const float* keys;          // pack_keys_f32's panels of the head's tk keys
  const float* values;        // pack_values_f32's panels of its values
  int64_t tk, dv;
  float scale;
  const float* mask_f;        // additive mask: row i, key j at mask_f[i * mask_row + j * mask_col]; or null
  const uint8_t* mask_b;      // bool mask (1 = attend), the same strides; or null
  int64_t mask_row, mask_col;
  float* scores;              // [rows, tk] scratch
  float* o;                   // [rows, dv]
};

struct KernelTable {
  const char* name;  // "scalar", "avx2", "avx512", "avx512_vnni", "neon", "neon_dotprod"

  // y[r * y_stride + j] = dot(x[r, :], w[j, :]) + bias[j] (bias may be null) for r < rows,
  // j < n; x is [rows, in], w is [n, in]. Streams w once for up to 8 rows, in L1-sized
  // blocks reused by groups of 4 rows past that.
  void (*dot_rows_f32)(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, int64_t n,
                       float* y, int64_t y_stride);

  // The register-tiled GEMM for many rows: y[r, j] = dot(x[r], w[j]) + bias[j] for every
  // row and j in [j0, j1); `pack` holds gemm_pack_floats floats of per-thread scratch.
  // Callers split [0, outf) in multiples of gemm_block outputs.
  void (*gemm_rows_f32)(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, float* y,
                        int64_t outf, int64_t j0, int64_t j1, float* pack);
  int64_t gemm_pack_floats;
  int64_t gemm_block;

  // linear_int8, up to 8 rows: y[r, j] = scale[j] * dot(x[r], q[j]) + bias[j] for j in
  // [j0, j1), streaming the int8 rows.
  void (*dot_rows_i8)(const float* x, int64_t rows, int64_t in, const int8_t* q, const float* scale,
                      const float* bias, float* y, int64_t outf, int64_t j0, int64_t j1);

  // s[i, k] = q[i, k] * scale[i] for n rows of `in` int8 weights (linear_int8's blocks).
  void (*dequantize_rows)(const int8_t* q, const float* scale, int64_t n, int64_t in, float* s);

  // linear_w8a8: every row for output blocks [b0, b1) of 16 features.
  void (*w8a8_blocks)(const W8A8Problem& p, int64_t rows, int64_t b0, int64_t b1);
  const char* w8a8_name;  // which arithmetic linear_w8a8 runs: "vnni", "avx2" or "generic"

  // linear_int4, 1 to 8 rows: y[r, j] = sum over groups g of scale[j, g] * dot(x[r, g],
  // q[j, g]) + bias[j] for j in [j0, j1), streaming the nibble rows.
  void (*dot_rows_i4)(const Int4Problem& p, int64_t rows, int64_t j0, int64_t j1);
  // s[i, k] = q[i, k] * scale[i, k / group] for k < in (row stride `in` in s), n rows of
  // in_p / 2 nibble bytes (linear_int4's blocks for many rows, embedding_int4).
  void (*dequantize_rows_i4)(const uint8_t* q, const float* scale, int64_t n, int64_t in, int64_t in_p,
                             int64_t group, float* s);
  // linear_w4a8: every row for outputs [j0, j1).
  void (*w4a8_rows)(const W4A8Problem& p, int64_t rows, int64_t j0, int64_t j1);
  const char* w4a8_name;  // "vnni", "avx2", "neon_dotprod", "neon" or "generic"

  // y = softmax (log = false) or log_softmax of each of `rows` contiguous rows of R floats.
  void (*softmax_rows)(const float* x, float* y, int64_t rows, int64_t R, bool log);

  // y[i] = f(x[i]) for n floats, f = exp (kind 0), sigmoid (1), silu (2), erf (3), exact
  // gelu (4) or tanh gelu (5): elementwise_math.h's ExpMap.
  void (*exp_map)(int kind, const float* x, float* y, int64_t n);

  // linear with an f16 / bf16 weight [n, in] (its 16 bits as stored): dot_rows_f32's
  // arithmetic on the weight widened to f32 as it is loaded, so the same results bit for
  // bit, reading half the bytes.
  void (*dot_rows_f16)(const float* x, int64_t rows, int64_t in, const uint16_t* w, const float* bias, int64_t n,
                       float* y, int64_t y_stride);
  void (*dot_rows_bf16)(const float* x, int64_t rows, int64_t in, const uint16_t* w, const float* bias, int64_t n,
                        float* y, int64_t y_stride);
  // out[i] = w[i] widened to f32 for n values (exact).
  void (*widen_f16)(const uint16_t* w, int64_t n, float* out);
  void (*widen_bf16)(const uint16_t* w, int64_t n, float* out);

  // attention's o = p v: o[i, :] = sum_j p[i * n + j] * v[j * v_stride, :dv] for i < rows.
  void (*weighted_rows_f32)(const float* p, int64_t rows, int64_t n, const float* v, int64_t v_stride, int64_t dv,
                            float* o);

  // attention over many query rows: keys [tk, d] and values [tk, dv] (row strides given)
  // packed into gemm_block-wide panels, ceil(tk / gemm_block) * gemm_block * d and
  // ceil(dv / gemm_block) * gemm_block * tk floats; then softmax(scale q k^T + mask) v
  // for a block of query rows.
  void (*pack_keys_f32)(const float* k, int64_t tk, int64_t d, int64_t stride, float* out);
  void (*pack_values_f32)(const float* v, int64_t tk, int64_t dv, int64_t stride, float* out);
  void (*attention_rows_f32)(const AttentionRows& a);
  int64_t attention_blocked_rows;  // query rows from which attention takes this path
};

// One table per variant built for the target (CMakeLists.txt): scalar everywhere,
// avx2 / avx512 / avx512_vnni on x86-64, neon / neon_dotprod on AArch64, simd128 on WebAssembly.
extern const KernelTable kScalarKernels;
#if defined(__x86_64__)
extern const KernelTable kAvx2Kernels;
extern const KernelTable kAvx512Kernels;
extern const KernelTable kAvx512VnniKernels;
#elif defined(__aarch64__)
extern const KernelTable kNeonKernels;
extern const KernelTable kNeonDotprodKernels;
#elif defined(__wasm__)
extern const KernelTable kSimd128Kernels;
#endif

}  // namespace ops::kernels
