// conv1d as im2col + linear's kernels: the columns of one output position are the
// C_in x K input samples under the kernel, in the [C_out, C_in, K] weight's own
// order, so the weight is read in place as a [C_out, C_in * K] matrix.
#include <algorithm>
#include <cstring>

#include "ops/linear_kernels.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

// conv1d(x [B, C_in, T], weight [C_out, C_in, K], bias [C_out]?, stride, padding)
static void conv1d(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& w = a.tensor(1);
  const Tensor* bias = a.opt_tensor(2);
  const int64_t stride = a.i64(3), padding = a.i64(4);
  if (x.dtype() != DType::f32 || x.ndim() != 3) vm::fail("x must be f32 [batch, channels, length], got {}", x.describe());
  if (w.dtype() != DType::f32 || w.ndim() != 3) vm::fail("weight must be f32 [out_channels, in_channels, kernel], got {}", w.describe());
  if (stride < 1) vm::fail("stride must be at least 1, got {}", stride);
  if (padding < 0) vm::fail("padding must be at least 0, got {}", padding);
  const int64_t batch = x.size(0), cin = x.size(1), len = x.size(2);
  const int64_t cout = w.size(0), k = w.size(2);
  if (w.size(1) != cin) vm::fail("x has {} channels but weight is {}", cin, w.describe());
  if (k < 1) vm::fail("the kernel size must be at least 1, got {}", w.describe());
  if (bias && (bias->dtype() != DType::f32 || bias->ndim() != 1 || bias->size(0) != cout))
    vm::fail("bias must be f32[{}], got {}", cout, bias->describe());
  const int64_t padded = len + 2 * padding;
  if (padded < k) vm::fail("x's length {} with padding {} is shorter than the kernel size {}", len, padding, k);
  const int64_t tout = (padded - k) / stride + 1, cols = cin * k;
  Tensor y = ctx.empty(DType::f32, Shape{batch, cout, tout});
  if (y.numel() == 0) {
    out[0] = std::move(y);
    return;
  }
  Tensor col = ctx.empty(DType::f32, Shape{tout, cols});
  Tensor rows = ctx.empty(DType::f32, Shape{tout, cout});
  const float* xp = x.data<float>();
  float* cp = col.data<float>();
  float* rp = rows.data<float>();
  float* yp = y.data<float>();
  for (int64_t b = 0; b < batch; ++b) {
    const float* xb = xp + b * cin * len;
    ctx.parallel_for(tout, 64, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        float* c = cp + t * cols;
        const int64_t start = t * stride - padding;
        for (int64_t ci = 0; ci < cin; ++ci)
          for (int64_t j = 0; j < k; ++j) {
            const int64_t s = start + j;
            c[ci * k + j] = (s >= 0 && s < len) ? xb[ci * len + s] : 0.0f;
          }
      }
    });
    linear_f32(ctx, cp, tout, cols, w.data<float>(), bias ? bias->data<float>() : nullptr, cout, rp);
    float* yb = yp + b * cout * tout;
    ctx.parallel_for(cout, 16, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o)
        for (int64_t t = 0; t < tout; ++t) yb[o * tout + t] = rp[t * cout + o];
    });
  }
  out[0] = std::move(y);
}

void register_conv_ops(Registry& r) {
  r.add(TENSORVM_OP("conv1d", conv1d), "nn",
        {p_tensor("x"), p_tensor("weight"), p_opt_tensor("bias"), p_int("stride", 1), p_int("padding", 0)}, {"Tensor"},
        "1-D convolution (torch.nn.functional.conv1d, one group, no dilation): f32 x [batch, in_channels, length], "
        "weight [out_channels, in_channels, kernel], bias [out_channels]?, zero padding on both ends -> "
        "[batch, out_channels, (length + 2 * padding - kernel) // stride + 1].");
}

}  // namespace ops
