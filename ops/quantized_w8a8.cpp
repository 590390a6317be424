// linear_w8a8: int8 weights (per output row scales, built offline like linear_int8's)
// and int8 activations quantized per row at run time, multiplied in int32.
//
// Why: once a product has more than a few rows (beams x batch, the encoder) the
// weight-only linear_int8 is bound by f32 FMAs, not by reading the weight. AVX-512 VNNI
// multiplies 64 int8 pairs per instruction (vpdpbusd) against 16 f32 pairs per FMA.
// vpdpbusd takes unsigned x signed bytes, so x is stored as q + 128 (u8) and each dot
// product subtracts 128 * sum(weight row), summed in the same pass (one more vpdpbusd
// per weight vector, shared by every row). The weight is packed offline for vpdpbusd
// (pycompiler/quantize.py pack_w8a8; layout below). The kernel is ops/kernels/
// linear_w8a8.h: vpdpbusd in the avx512_vnni variant, the same integer arithmetic in
// plain C++ in the others (same results).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/cpu.h"
#include "ops/linear_kernels.h"
#include "ops/registry.h"
#include "ops/select.h"
#include "ops/w8a8_amx.h"

namespace ops {

namespace {

constexpr int64_t kPad = 64;               // quantized x rows are padded to this many bytes

// Quantizes one row of x: q = rint(x * 127 / max|x|), stored as q + 128 (u8) and zero
// (128) up to `padded`. Returns the row's scale max|x| / 127 (0 for a row of zeros, NaN
// when the row holds a NaN or an infinity, which then makes the output row NaN).
float quantize_row(const float* x, int64_t in, uint8_t* q, int64_t padded) {
  float amax = 0.0f;
  bool finite = true;
  for (int64_t k = 0; k < in; ++k) {
    const float a = std::fabs(x[k]);
    finite &= a <= std::numeric_limits<float>::max();  // false for NaN and inf
    amax = a > amax ? a : amax;
  }
  if (!finite) {
    std::fill(q, q + padded, uint8_t(128));
    return std::numeric_limits<float>::quiet_NaN();
  }
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  for (int64_t k = 0; k < in; ++k) {
    const float v = std::nearbyint(x[k] * inv);  // round half to even, like numpy.rint
    q[k] = uint8_t(int(std::min(127.0f, std::max(-127.0f, v))) + 128);
  }
  std::fill(q + in, q + padded, uint8_t(128));
  return amax / 127.0f;
}

// The packed weight: [ceil(out / 16), ceil(in / 4), 16, 4] int8, zero-padded:
// packed[jb, kq, jj, t] = weight[16 * jb + jj, 4 * kq + t]. One 64-byte vector holds 4
// consecutive inputs of 16 consecutive outputs, which is vpdpbusd's operand layout: a
// broadcast of 4 bytes of x times it adds those 4 products into each of 16 int32 lanes,
// one lane per output. Outputs come out as vectors (no horizontal sums).
constexpr int64_t kOut = 16, kIn = 4;

// The packed weight's shape for a weight of [out, in].
Shape packed_shape(int64_t out, int64_t in) { return Shape{(out + kOut - 1) / kOut, (in + kIn - 1) / kIn, 64}; }

// linear_w8a8(x, weight, scale, bias=None)
void linear_w8a8(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& w = a.tensor(1);
  const Tensor& sc = a.tensor(2);
  const Tensor* b = a.opt_tensor(3);
  if (x.dtype() != DType::f32) vm::fail("x must be f32, got {}", x.describe());
  if (x.ndim() < 1) vm::fail("x must have at least 1 dimension, got {}", x.describe());
  if (sc.dtype() != DType::f32 || sc.ndim() != 1) vm::fail("scale must be f32 [out], got {}", sc.describe());
  const int64_t in = x.size(-1), outf = sc.size(0);
  if (in > (int64_t(1) << 15))
    vm::fail("at most {} input features (the int32 sums), got {}", int64_t(1) << 15, in);
  const Shape packed = packed_shape(outf, in);
  if (w.dtype() != DType::i8 || w.shape() != packed)
    vm::fail("weight must be the packed i8[{}, {}, 64] of a [{}, {}] weight (pack_w8a8), got {}", packed[0], packed[1],
             outf, in, w.describe());
  int64_t rows;
  Tensor y = linear_output(ctx, x, outf, b, rows);
  if (rows == 0 || outf == 0) {
    out[0] = std::move(y);
    return;
  }
  float* yp = y.data<float>();
  const float* bp = b ? b->data<float>() : nullptr;
  if (in == 0) {  // empty sums
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < outf; ++j) yp[r * outf + j] = bp ? bp[j] : 0.0f;
    out[0] = std::move(y);
    return;
  }
  const int64_t padded = (in + kPad - 1) / kPad * kPad;
  Tensor qx = ctx.empty(DType::i8, Shape{rows, padded});
  Tensor sx = ctx.empty(DType::f32, Shape{rows});
  uint8_t* qp = reinterpret_cast<uint8_t*>(qx.data<int8_t>());
  float* sxp = sx.data<float>();
  const float* xp = x.data<float>();
  ctx.parallel_for(rows, std::max<int64_t>(1, 8192 / in), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) sxp[r] = quantize_row(xp + r * in, in, qp + r * padded, padded);
  });
  const int64_t kb = (in + kIn - 1) / kIn;
  const kernels::W8A8Problem p{qp, padded, sxp, w.data<int8_t>(), kb, sc.data<float>(), bp, yp, outf};
  const int64_t blocks = (outf + kOut - 1) / kOut;
  if (rows >= kAmxMinRows && amx_active()) {
    // Pairs of output blocks per task: the AMX kernel takes 32 outputs at a time.
    const int64_t pairs = (blocks + 1) / 2;
    ctx.parallel_for(pairs, 1, [&](int64_t c0, int64_t c1) {
      Tensor a_tail = ctx.empty(DType::i8, Shape{32, padded});
      w8a8_amx_blocks(p, rows, 2 * c0, std::min(blocks, 2 * c1), reinterpret_cast<uint8_t*>(a_tail.data<int8_t>()));
    });
    out[0] = std::move(y);
    return;
  }
  const kernels::KernelTable& k = kernel_table();
  const int64_t grain = std::max<int64_t>(4, (int64_t(1) << 14) / (std::min<int64_t>(rows, 16) * in));
  ctx.parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) { k.w8a8_blocks(p, rows, b0, b1); });
  out[0] = std::move(y);
}

}  // namespace

void register_w8a8_ops(Registry& r) {
  r.add(TENSORVM_OP("linear_w8a8", linear_w8a8), "linear algebra",
        {p_tensor("x"), p_tensor("weight"), p_tensor("scale"), p_opt_tensor("bias")}, {"Tensor"},
        "int8 x int8 linear: each row of x[..., in] (f32) is quantized at run time to q = rint(x * 127 / max|x_row|) "
        "(symmetric, per row), multiplied with the int8 weight W[out, in] in int32, and rescaled: "
        "y = (q @ W^T) * (max|x_row| / 127) * scale[out] + bias[out]. W and scale are linear_int8's, W packed "
        "offline as weight[ceil(out/16), ceil(in/4), 64] = W[16 jb + jj, 4 kq + t] at [jb, kq, 4 jj + t], zero-padded "
        "(pycompiler/quantize.py pack_w8a8); the packed shape fixes out and ceil(in/4), not in itself. A row holding "
        "NaN or inf gives NaN; in <= 32768.");
}

}  // namespace ops
