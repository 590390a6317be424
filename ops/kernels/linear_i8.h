// linear_int8's kernels (weight-only int8), written once against simd.h's vector and
// compiled per variant. Up to 8 rows stream the int8 weight rows (4x fewer bytes than
// f32) and widen them to f32 in registers; more rows dequantize blocks of weight rows
// into f32 for linear's kernels (ops/quantized.cpp).
#pragma once

#include "ops/kernels/simd.h"

namespace ops::kernels::TENSORVM_VARIANT {

// acc[r] = dot(x[r, :], q[:]) for R rows of x (row stride `in`), in f32: two
// accumulators per row over 2 vectors at a time, then one vector, then a partial one.
template <int R>
inline void dot_rows_q(const float* x, int64_t in, const int8_t* q, float* acc) {
  Vf a0[R], a1[R];
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = zero();
  int64_t k = 0;
  for (; k + 2 * kLanes <= in; k += 2 * kLanes) {
    const Vf w0 = load_i8(q + k), w1 = load_i8(q + k + kLanes);
    for (int r = 0; r < R; ++r) {
      a0[r] = fmadd(w0, load(x + r * in + k), a0[r]);
      a1[r] = fmadd(w1, load(x + r * in + k + kLanes), a1[r]);
    }
  }
  for (; k + kLanes <= in; k += kLanes) {
    const Vf w0 = load_i8(q + k);
    for (int r = 0; r < R; ++r) a0[r] = fmadd(w0, load(x + r * in + k), a0[r]);
  }
  if (k < in) {
    const int n = int(in - k);
    const Vf w0 = load_i8_n(q + k, n);
    for (int r = 0; r < R; ++r) a1[r] = fmadd(w0, load_n(x + r * in + k, n), a1[r]);
  }
  for (int r = 0; r < R; ++r) acc[r] = hsum(add(a0[r], a1[r]));
}

// y[r, j] = scale[j] * dot(x[r], q[j]) + bias[j] for output features [j0, j1), R rows.
template <int R>
void decode_rows_q(const float* x, const int8_t* q, const float* scale, const float* bias, float* y, int64_t in,
                   int64_t outf, int64_t j0, int64_t j1) {
  float acc[R];
  for (int64_t j = j0; j < j1; ++j) {
    dot_rows_q<R>(x, in, q + j * in, acc);
    const float s = scale[j], b = bias ? bias[j] : 0.0f;
    for (int r = 0; r < R; ++r) y[r * outf + j] = acc[r] * s + b;
  }
}

inline void dot_rows_i8(const float* x, int64_t rows, int64_t in, const int8_t* q, const float* scale,
                        const float* bias, float* y, int64_t outf, int64_t j0, int64_t j1) {
  using Fn = void (*)(const float*, const int8_t*, const float*, const float*, float*, int64_t, int64_t, int64_t,
                      int64_t);
  static constexpr Fn kRows[8] = {decode_rows_q<1>, decode_rows_q<2>, decode_rows_q<3>, decode_rows_q<4>,
                                  decode_rows_q<5>, decode_rows_q<6>, decode_rows_q<7>, decode_rows_q<8>};
  if (rows >= 1 && rows <= 8) kRows[rows - 1](x, q, scale, bias, y, in, outf, j0, j1);
}

inline void dequantize_rows(const int8_t* q, const float* scale, int64_t n, int64_t in, float* s) {
  for (int64_t i = 0; i < n; ++i) {
    const Vf f = set1(scale[i]);
    const int8_t* qi = q + i * in;
    float* si = s + i * in;
    int64_t k = 0;
    for (; k + kLanes <= in; k += kLanes) store(si + k, mul(load_i8(qi + k), f));
    if (k < in) store_n(si + k, mul(load_i8_n(qi + k, int(in - k)), f), int(in - k));
  }
}

}  // namespace ops::kernels::TENSORVM_VARIANT
