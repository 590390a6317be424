// Rotary position embedding with explicit position ids, as transformers' Llama and Qwen2
// apply it (LlamaRotaryEmbedding + apply_rotary_pos_emb with rotate_half), in f32 with
// the same roundings: freqs = float(pos) * inv_freq (one f32 product), cos/sin of that
// f32 angle (computed in double and rounded once, within torch's f32 cos/sin ulp), each
// times the attention scaling in f32, then x * cos + rotate_half(x) * sin without fused
// multiply-adds (the build sets -ffp-contract=off). The angles depend on (batch, position)
// only, so cos/sin are computed once per (b, t) and applied to every head.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

// rotary(x, positions, inv_freq, scale=1.0)
static void rotary(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& pos = a.tensor(1);
  const Tensor& inv = a.tensor(2);
  const float scale = float(a.f64(3));
  if (x.dtype() != DType::f32 || x.ndim() != 4) vm::fail("x must be f32 [B, H, T, D], got {}", x.describe());
  const int64_t B = x.size(0), H = x.size(1), T = x.size(2), D = x.size(3);
  if (D % 2 != 0) vm::fail("x's head dim D must be even (rotate_half splits it in two halves), got {}", x.describe());
  const int64_t half = D / 2;
  if (pos.dtype() != DType::i64 || pos.ndim() != 2 || pos.size(0) != B || pos.size(1) != T)
    vm::fail("positions must be i64 [B, T] = [{}, {}] (x is {}), got {}", B, T, x.describe(), pos.describe());
  if (inv.dtype() != DType::f32 || inv.ndim() != 1 || inv.size(0) != half)
    vm::fail("inv_freq must be f32 [D / 2] = [{}], got {}", half, inv.describe());
  Tensor y = ctx.empty(DType::f32, x.shape());
  if (y.numel() == 0) {
    out[0] = std::move(y);
    return;
  }
  const float* xp = x.data<float>();
  const int64_t* pp = pos.data<int64_t>();
  const float* fp = inv.data<float>();
  float* yp = y.data<float>();
  // Work per (b, t): half cos/sin pairs plus H rows of D.
  const int64_t work = half * 40 + H * D;
  ctx.parallel_for(B * T, std::max<int64_t>(1, (int64_t(1) << 14) / work), [&](int64_t r0, int64_t r1) {
    Tensor table = ctx.empty(DType::f32, Shape{2, half});  // cos, sin of one (b, t)
    float* cs = table.data<float>();
    float* sn = cs + half;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / T, t = r % T;
      const float p = float(pp[r]);
      for (int64_t i = 0; i < half; ++i) {
        const double angle = double(p * fp[i]);  // the f32 product, as torch's matmul of [half, 1] x [1, T]
        cs[i] = float(std::cos(angle)) * scale;
        sn[i] = float(std::sin(angle)) * scale;
      }
      for (int64_t h = 0; h < H; ++h) {
        const int64_t off = ((b * H + h) * T + t) * D;
        const float* xr = xp + off;
        float* yr = yp + off;
        for (int64_t i = 0; i < half; ++i) {
          const float x1 = xr[i], x2 = xr[i + half];
          yr[i] = x1 * cs[i] + -x2 * sn[i];
          yr[i + half] = x2 * cs[i] + x1 * sn[i];
        }
      }
    }
  });
  out[0] = std::move(y);
}

void register_rotary_ops(Registry& r) {
  r.add(TENSORVM_OP("rotary", rotary), "nn",
        {p_tensor("x"), p_tensor("positions"), p_tensor("inv_freq"), p_float("scale", 1.0)}, {"Tensor"},
        "Rotary position embedding (Llama, Qwen2) of x f32[B, H, T, D] at explicit positions i64[B, T] (per row, "
        "e.g. from a left-padded mask), with inv_freq f32[D / 2] (rope_scaling already applied) and scale "
        "(transformers' attention_scaling, multiplies cos and sin): angle = float(position) * inv_freq, "
        "emb = concat(angle, angle), out = x * cos(emb) * scale + rotate_half(x) * sin(emb) * scale with "
        "rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2]). In f32 as transformers computes it. D must be even.");
}

}  // namespace ops
