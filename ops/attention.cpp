// Fused scaled-dot-product attention. Per (batch, head): scores = scale * q k^T (+ mask),
// a max-subtracted softmax over the keys, then scores @ v. k and v may be strided views
// (a KV cache hands out the filled prefix of preallocated [B, H, Tmax, D] storage), read
// in place. Grouped-query attention: k and v have Hkv heads, H a multiple; the G = H / Hkv
// query heads of a group read the same kv head (transformers' repeat_kv), and since q's
// heads are consecutive rows, a decode step's block of them is one row block against that
// head's keys: the keys are streamed once per block instead of once per query head. One
// scratch tensor holds the scores of one block. The products are
// the active kernel variant's (ops/kernels/): the scores are linear's dot_rows_f32 with
// the keys as weight rows, o = p v is weighted_rows_f32; Eigen is left only for keys
// whose rows are not contiguous.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

#include <Eigen/Core>

#include "ops/attention.h"
#include "ops/cpu.h"
#include "ops/linear_kernels.h"
#include "ops/registry.h"
#include "ops/select.h"

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

// Query heads per block: as many of a group as fill the streaming kernel's rows (decode:
// Tq = 1), at least one. Fixed by the shapes, not by the threads; a row's arithmetic
// is the same in any block, so the result is that of K/V repeated per query head.
static int64_t heads_per_block(int64_t group, int64_t tq) {
  return std::max<int64_t>(1, std::min<int64_t>(group, tq > 0 ? kMaxDotRows / tq : group));
}

// From the variant's attention_blocked_rows query rows on (32; 256 for the scalar
// variant), attention runs the blocked kernel (ops/kernels/attention.h): both products as
// GEMM tiles against keys and values packed once per head. Below, a decode step or a
// short prefill, packing would cost more than it saves, so the keys are streamed in place.
// The path depends on the variant and the shapes only, never on the heads' grouping or
// the thread count.

// Query rows per block of the blocked kernel: its scores (rows x Tk floats; 190 KB at
// Whisper's 1500 keys) stay in L2. A multiple of every variant's GEMM tile height.
constexpr int64_t kBlockRows = 48;

static std::atomic<bool> g_blocked{true};
void set_attention_blocked(bool on) { g_blocked.store(on, std::memory_order_relaxed); }

// The blocked kernel: keys and values packed per (batch, kv head), then every block of
// query rows of every head in parallel. Query head h reads kv head h / G, as below.
static void blocked_attention(OpContext& ctx, const float* qp, const Tensor& k, const Tensor& v, const MaskView& m,
                              float scale, int64_t H, int64_t Tq, int64_t D, int64_t Dv, float* op) {
  const kernels::KernelTable& kt = kernel_table();
  const int64_t B = k.size(0), Hkv = k.size(1), Tk = k.size(2), G = H / Hkv;
  const int64_t nr = kt.gemm_block;
  const int64_t kfloats = (Tk + nr - 1) / nr * nr * D, vfloats = (Dv + nr - 1) / nr * nr * Tk;
  Tensor packed = ctx.empty(DType::f32, Shape{B * Hkv, kfloats + vfloats});
  float* pk = packed.data<float>();
  const float* kp = k.data<float>();
  const float* vp = v.data<float>();
  ctx.parallel_for(B * Hkv, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / Hkv, kh = u % Hkv;
      float* dst = pk + u * (kfloats + vfloats);
      kt.pack_keys_f32(kp + b * k.strides()[0] + kh * k.strides()[1], Tk, D, k.strides()[2], dst);
      kt.pack_values_f32(vp + b * v.strides()[0] + kh * v.strides()[1], Tk, Dv, v.strides()[2], dst + kfloats);
    }
  });
  const int64_t blocks = (Tq + kBlockRows - 1) / kBlockRows;  // per (batch, head)
  ctx.parallel_for(B * H * blocks, 1, [&](int64_t u0, int64_t u1) {
    Tensor scratch = ctx.empty(DType::f32, Shape{kBlockRows, Tk});
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t bh = u / blocks, b = bh / H, h = bh % H, i0 = u % blocks * kBlockRows;
      const float* heads = pk + (b * Hkv + h / G) * (kfloats + vfloats);
      const int64_t moff = b * m.stride[0] + h * m.stride[1] + i0 * m.stride[2];
      kernels::AttentionRows r;
      r.q = qp + (bh * Tq + i0) * D;
      r.rows = std::min(kBlockRows, Tq - i0);
      r.d = D;
      r.keys = heads;
      r.values = heads + kfloats;
      r.tk = Tk;
      r.dv = Dv;
      r.scale = scale;
      r.mask_f = m.f ? m.f + moff : nullptr;
      r.mask_b = m.b ? m.b + moff : nullptr;
      r.mask_row = m.stride[2];
      r.mask_col = m.stride[3];
      r.scores = scratch.data<float>();
      r.o = op + (bh * Tq + i0) * Dv;
      kt.attention_rows_f32(r);
    }
  });
}

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
  if (k0.ndim() != 4 || k0.size(0) != B || k0.size(3) != D)
    vm::fail("k must be [B, Hkv, Tk, D] = [{}, Hkv, Tk, {}] to match q, got {}", B, D, k0.describe());
  const int64_t Hkv = k0.size(1);
  if (Hkv == 0 ? H != 0 : H % Hkv != 0)
    vm::fail("k has {} heads, which do not divide q's {} (grouped-query attention needs H % Hkv == 0), got q {} and k {}",
             Hkv, H, q.describe(), k0.describe());
  const int64_t Tk = k0.size(2);
  if (v0.ndim() != 4 || v0.size(0) != B || v0.size(1) != Hkv || v0.size(2) != Tk)
    vm::fail("v must be [B, Hkv, Tk, Dv] = [{}, {}, {}, Dv] to match k, got {}", B, Hkv, Tk, v0.describe());
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
  if (Tq >= kernel_table().attention_blocked_rows && D > 0 && Dv > 0 && g_blocked.load(std::memory_order_relaxed)) {
    blocked_attention(ctx, q.data<float>(), k, v, m, scale, H, Tq, D, Dv, o.data<float>());
    out[0] = std::move(o);
    return;
  }
  const int64_t ks0 = k.strides()[0], ks1 = k.strides()[1], ks2 = k.strides()[2];
  const int64_t vs0 = v.strides()[0], vs1 = v.strides()[1], vs2 = v.strides()[2];
  const float* qp = q.data<float>();
  const float* kp = k.data<float>();
  const float* vp = v.data<float>();
  const int64_t G = H / Hkv;  // query heads per kv head
  const int64_t hb = heads_per_block(G, Tq);
  const int64_t blocks = (G + hb - 1) / hb;  // blocks per (batch, kv head)
  // Each head's scores start 64-byte aligned in the scratch, as a lone head's would:
  // Eigen's reductions in softmax_row peel to an aligned address, so a row's sum order
  // (and bits) depends on where it starts.
  const int64_t hs = (Tq * Tk + 15) / 16 * 16;
  // Blocks are independent: split them over threads, each chunk with its own score
  // scratch (from the pool, so no malloc in a steady decode loop).
  const int64_t work = std::max<int64_t>(1, hb * Tq * Tk * std::max<int64_t>(1, D + Dv));
  const kernels::KernelTable& kt = kernel_table();
  ctx.parallel_for(B * Hkv * blocks, std::max<int64_t>(1, (int64_t(1) << 15) / work), [&](int64_t u0, int64_t u1) {
    Tensor scratch = ctx.empty(DType::f32, Shape{hb, hs});
    float* sp = scratch.data<float>();
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / (Hkv * blocks), kh = u / blocks % Hkv, h0 = kh * G + u % blocks * hb;
      const int64_t nh = std::min(hb, kh * G + G - h0);  // query heads of this block
      const float* Q = qp + (b * H + h0) * Tq * D;
      const float* K = kp + b * ks0 + kh * ks1;
      const float* V = vp + b * vs0 + kh * vs1;
      float* O = op + (b * H + h0) * Tq * Dv;
      if (D == 0) {
        for (int64_t j = 0; j < nh; ++j) std::fill(sp + j * hs, sp + j * hs + Tq * Tk, 0.0f);
      } else if (ks2 == D && Tq == 1) {  // decode: the block's heads in one pass over the keys
        kt.dot_rows_f32(Q, nh, D, K, nullptr, Tk, sp, hs);
      } else if (ks2 == D) {  // one head's keys are contiguous rows (a KV cache, a dense k)
        for (int64_t j = 0; j < nh; ++j)
          for (int64_t i0 = 0; i0 < Tq; i0 += kMaxDotRows)
            kt.dot_rows_f32(Q + (j * Tq + i0) * D, std::min(kMaxDotRows, Tq - i0), D, K, nullptr, Tk,
                            sp + j * hs + i0 * Tk, Tk);
      } else {
        const StridedRows keys(K, Tk, D, Eigen::OuterStride<>(ks2));
        for (int64_t j = 0; j < nh; ++j)
          RowMap(sp + j * hs, Tq, Tk).noalias() = ConstRowMap(Q + j * Tq * D, Tq, D) * keys.transpose();
      }
      for (int64_t j = 0; j < nh; ++j) {
        float* S = sp + j * hs;
        const int64_t mbase = b * m.stride[0] + (h0 + j) * m.stride[1];
        for (int64_t i = 0; i < Tq; ++i) softmax_row(S + i * Tk, Tk, scale, m, mbase + i * m.stride[2]);
        if (Dv > 0) kt.weighted_rows_f32(S, Tq, Tk, V, vs2, Dv, O + j * Tq * Dv);
      }
    }
  });
  out[0] = std::move(o);
}

void register_attention_ops(Registry& r) {
  r.add(TENSORVM_OP("attention", attention), "attention",
        {p_tensor("q"), p_strided(p_tensor("k")), p_strided(p_tensor("v")), p_opt_tensor("mask"), p_opt_any("scale")},
        {"Tensor"},
        "Scaled-dot-product attention, f32: softmax(scale * q k^T + mask) v over q[B, H, Tq, D], k[B, Hkv, Tk, D], "
        "v[B, Hkv, Tk, Dv] -> [B, H, Tq, Dv]; scale defaults to 1/sqrt(D). Grouped-query attention when Hkv < H "
        "(H % Hkv == 0; Hkv = 1 is multi-query): query head h reads kv head h / (H / Hkv), as transformers' "
        "repeat_kv, without copying K/V. mask broadcasts to [B, H, Tq, Tk]: f32 is added, bool keeps True and masks "
        "False. A query row with every key masked (all -inf) gives zeros, not NaN. k and v may be strided views "
        "(unit stride on the last dim).");
}

}  // namespace ops
