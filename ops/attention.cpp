// Fused scaled-dot-product attention. Per (batch, head): scores = scale * q k^T (+ mask),
// a max-subtracted softmax over the keys, then scores @ v. k and v may be strided views
// (a KV cache hands out the filled prefix of preallocated [B, H, Tmax, D] storage), read
// in place. One scratch tensor holds the scores of one (batch, head). The products are
// the active kernel variant's (ops/kernels/): the scores are linear's dot_rows_f32 with
// the keys as weight rows, o = p v is weighted_rows_f32; Eigen is left only for keys
// whose rows are not contiguous.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <Eigen/Core>

#include "ops/cpu.h"
#include "ops/linear_kernels.h"
#include "ops/registry.h"

namespace ops {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using RowMap = Eigen::Map<RowMatrix>;
using StridedRows = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using ArrMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrMap = Eigen::Map<const Eigen::ArrayXf>;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The mask broadcast to [B, H, Tq, Tk]: element strides, 0 on broadcast dims.
struct MaskView {
  const float* f = nullptr;    // additive f32 mask
  const uint8_t* b = nullptr;  // bool mask: 1 = attend, 0 = masked
  int64_t stride[4] = {0, 0, 0, 0};
};

MaskView mask_view(const Tensor* mask, const int64_t full[4]) {
  MaskView m;
  if (!mask) return m;
  if (mask->dtype() != DType::f32 && mask->dtype() != DType::boolean)
    vm::fail("mask must be f32 (additive) or bool (True = attend), got {}", mask->describe());
  const Shape& ms = mask->shape();
  const int r = ms.size();
  if (r > 4) vm::fail("mask must broadcast to [B, H, Tq, Tk] = [{}, {}, {}, {}], got {}", full[0], full[1], full[2], full[3], mask->describe());
  const Shape cs = vm::contiguous_strides(ms);
  for (int i = 0; i < 4; ++i) {
    const int j = i - (4 - r);
    const int64_t d = j >= 0 ? ms[j] : 1;
    if (d != full[i] && d != 1)
      vm::fail("mask must broadcast to [B, H, Tq, Tk] = [{}, {}, {}, {}], got {}", full[0], full[1], full[2], full[3], mask->describe());
    m.stride[i] = (d == 1 || j < 0) ? 0 : cs[j];
  }
  if (mask->dtype() == DType::f32)
    m.f = mask->data<float>();
  else
    m.b = static_cast<const uint8_t*>(mask->raw());
  return m;
}

// k or v with a unit stride on the last dim (copied when it is not).
Tensor unit_inner(const Tensor& t, OpContext& ctx) {
  if (t.size(3) > 1 && t.strides()[3] != 1) return t.contiguous(ctx.pool);
  return t;
}

// Scales and masks one row of scores in place, then turns it into softmax
// probabilities. A row with no finite score (all -inf or all masked) becomes zeros.
inline void softmax_row(float* s, int64_t tk, float scale, const MaskView& m, int64_t moff) {
  ArrMap row(s, tk);
  if (m.f) {
    const float* mr = m.f + moff;
    if (m.stride[3] != 0)
      row = row * scale + ConstArrMap(mr, tk);
    else
      row = row * scale + mr[0];
  } else if (m.b) {
    const uint8_t* mr = m.b + moff;
    const int64_t st = m.stride[3];
    for (int64_t j = 0; j < tk; ++j) s[j] = mr[j * st] ? s[j] * scale : kNegInf;
  } else {
    row *= scale;
  }
  const float mx = row.maxCoeff();
  if (mx == kNegInf) {  // every score is -inf: the row attends to nothing
    row.setZero();
    return;
  }
  row = (row - mx).exp();
  row *= 1.0f / row.sum();
}

}  // namespace

// attention(q, k, v, mask=None, scale=None)
static void attention(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& q = a.tensor(0);
  const Tensor& k0 = a.tensor(1);
  const Tensor& v0 = a.tensor(2);
  const Tensor* mask = a.opt_tensor(3);
  const Value& sv = a[4];
  if (q.dtype() != DType::f32 || k0.dtype() != DType::f32 || v0.dtype() != DType::f32)
    vm::fail("q, k and v must be f32, got {}, {} and {}", q.describe(), k0.describe(), v0.describe());
  if (q.ndim() != 4) vm::fail("q must be 4-D [B, H, Tq, D], got {}", q.describe());
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), D = q.size(3);
  if (k0.ndim() != 4 || k0.size(0) != B || k0.size(1) != H || k0.size(3) != D)
    vm::fail("k must be [B, H, Tk, D] = [{}, {}, Tk, {}] to match q, got {}", B, H, D, k0.describe());
  const int64_t Tk = k0.size(2);
  if (v0.ndim() != 4 || v0.size(0) != B || v0.size(1) != H || v0.size(2) != Tk)
    vm::fail("v must be [B, H, Tk, Dv] = [{}, {}, {}, Dv] to match q and k, got {}", B, H, Tk, v0.describe());
  const int64_t Dv = v0.size(3);
  double scale_d;
  if (sv.is_none())
    scale_d = D > 0 ? 1.0 / std::sqrt(double(D)) : 1.0;
  else if (sv.is_float() || sv.is_int())
    scale_d = sv.as_float();
  else
    vm::fail("argument 'scale' must be a float or None, got {}", sv.describe());
  const float scale = float(scale_d);
  const int64_t full[4] = {B, H, Tq, Tk};
  const MaskView m = mask_view(mask, full);

  Tensor o = ctx.empty(DType::f32, Shape{B, H, Tq, Dv});
  if (o.numel() == 0) {
    out[0] = std::move(o);
    return;
  }
  float* op = o.data<float>();
  if (Tk == 0) {  // no keys: every row attends to nothing
    std::fill(op, op + o.numel(), 0.0f);
    out[0] = std::move(o);
    return;
  }
  const Tensor k = unit_inner(k0, ctx), v = unit_inner(v0, ctx);
  const int64_t ks0 = k.strides()[0], ks1 = k.strides()[1], ks2 = k.strides()[2];
  const int64_t vs0 = v.strides()[0], vs1 = v.strides()[1], vs2 = v.strides()[2];
  const float* qp = q.data<float>();
  const float* kp = k.data<float>();
  const float* vp = v.data<float>();
  // (batch, head) pairs are independent: split them over threads, each chunk with its
  // own score scratch (from the pool, so no malloc in a steady decode loop).
  const int64_t work = std::max<int64_t>(1, Tq * Tk * std::max<int64_t>(1, D + Dv));
  const kernels::KernelTable& kt = kernel_table();
  ctx.parallel_for(B * H, std::max<int64_t>(1, (int64_t(1) << 15) / work), [&](int64_t bh0, int64_t bh1) {
    Tensor scratch = ctx.empty(DType::f32, Shape{Tq, Tk});
    float* sp = scratch.data<float>();
    for (int64_t bh = bh0; bh < bh1; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const float* Q = qp + (b * H + h) * Tq * D;
      const float* K = kp + b * ks0 + h * ks1;
      float* O = op + (b * H + h) * Tq * Dv;
      if (D == 0) {
        std::fill(sp, sp + Tq * Tk, 0.0f);
      } else if (ks2 == D) {  // one head's keys are contiguous rows (a KV cache, a dense k)
        for (int64_t i0 = 0; i0 < Tq; i0 += kMaxDotRows)
          kt.dot_rows_f32(Q + i0 * D, std::min(kMaxDotRows, Tq - i0), D, K, nullptr, Tk, sp + i0 * Tk, Tk);
      } else {
        RowMap(sp, Tq, Tk).noalias() = ConstRowMap(Q, Tq, D) * StridedRows(K, Tk, D, Eigen::OuterStride<>(ks2)).transpose();
      }
      const int64_t mbase = b * m.stride[0] + h * m.stride[1];
      for (int64_t i = 0; i < Tq; ++i) softmax_row(sp + i * Tk, Tk, scale, m, mbase + i * m.stride[2]);
      if (Dv == 0) continue;
      kt.weighted_rows_f32(sp, Tq, Tk, vp + b * vs0 + h * vs1, vs2, Dv, O);
    }
  });
  out[0] = std::move(o);
}

void register_attention_ops(Registry& r) {
  auto& op = r.add("attention", "attention");
  Param k = p_tensor("k"), v = p_tensor("v");
  k.strided_ok = true;
  v.strided_ok = true;
  Param scale;
  scale.name = "scale";
  scale.kind = Kind::Any;
  scale.has_default = true;
  scale.default_value = Value::none();
  op.params = {p_tensor("q"), k, v, p_opt_tensor("mask"), scale};
  op.outputs = {"Tensor"};
  op.doc = "Scaled-dot-product attention, f32: softmax(scale * q k^T + mask) v over q[B, H, Tq, D], k[B, H, Tk, D], "
           "v[B, H, Tk, Dv] -> [B, H, Tq, Dv]; scale defaults to 1/sqrt(D). mask broadcasts to [B, H, Tq, Tk]: "
           "f32 is added, bool keeps True and masks False. A query row with every key masked (all -inf) gives zeros, "
           "not NaN. k and v may be strided views (unit stride on the last dim).";
  op.kernel = attention;
}

}  // namespace ops
