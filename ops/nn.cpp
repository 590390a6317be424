// Neural-network building blocks: normalisations over the last dim (alone or after a
// residual add, as the graph passes fuse them) and embedding lookup.
// Row statistics accumulate in double (cheap at these row lengths and exact enough that
// large magnitudes such as 1e30 do not overflow the variance); outputs are f32.
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/cpu.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

// The sum of f(double(x[i])) over a row, in 16 independent double lanes: the compiler
// vectorizes this (float -> double converts and adds) without reassociating a single
// chain, which Eigen's cast<double>().sum() does not do.
template <typename F>
inline double row_sum(const float* x, int64_t d, F f) {
  constexpr int L = 16;
  double acc[L] = {};
  int64_t i = 0;
  for (; i + L <= d; i += L)
    for (int j = 0; j < L; ++j) acc[j] += f(double(x[i + j]));
  double s = 0;
  for (; i < d; ++i) s += f(double(x[i]));
  for (int j = 0; j < L; ++j) s += acc[j];
  return s;
}

// Checks an optional per-feature parameter (weight or bias) of a norm over `d` features.
static const float* feature_param(const Tensor* t, const char* what, int64_t d) {
  if (!t) return nullptr;
  if (t->dtype() != DType::f32 || t->ndim() != 1 || t->size(0) != d)
    vm::fail("{} must be f32[{}] (the last dim of x), got {}", what, d, t->describe());
  return t->data<float>();
}

static const Tensor& norm_input(const Args& a) {
  const Tensor& x = a.tensor(0);
  if (x.dtype() != DType::f32) vm::fail("x must be f32, got {}", x.describe());
  if (x.ndim() < 1) vm::fail("x must have at least 1 dimension, got {}", x.describe());
  return x;
}

static double norm_eps(const Args& a, int i) {
  const double eps = a.f64(i);
  if (!(eps >= 0)) vm::fail("eps must be >= 0, got {}", eps);
  return eps;
}

// Layer norm of `rows` rows of d floats from x to y.
static void layer_norm_rows(const float* xp, float* yp, int64_t rows, int64_t d, const float* w, const float* b,
                            double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * d;
    float* yr = yp + r * d;
    const double mean = row_sum(xr, d, [](double v) { return v; }) / double(d);
    const double var = row_sum(xr, d, [mean](double v) { return (v - mean) * (v - mean); }) / double(d);
    const float m = float(mean);
    const float rstd = float(1.0 / std::sqrt(var + eps));
    if (w && b) {
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * rstd * w[i] + b[i];
    } else if (w) {
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * rstd * w[i];
    } else if (b) {
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * rstd + b[i];
    } else {
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - m) * rstd;
    }
  }
}

// RMS norm of `rows` rows of d floats from x to y.
static void rms_norm_rows(const float* xp, float* yp, int64_t rows, int64_t d, const float* w, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * d;
    float* yr = yp + r * d;
    const double ms = row_sum(xr, d, [](double v) { return v * v; }) / double(d);
    const float rr = float(1.0 / std::sqrt(ms + eps));
    if (w) {
      for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * rr * w[i];
    } else {
      for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * rr;
    }
  }
}

static int64_t norm_rows(const Tensor& x) { return x.size(-1) == 0 ? 0 : x.numel() / x.size(-1); }

// layer_norm(x, weight=None, bias=None, eps=1e-5) over the last dim.
static void layer_norm(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = norm_input(a);
  const int64_t d = x.size(-1);
  const float* w = feature_param(a.opt_tensor(1), "weight", d);
  const float* b = feature_param(a.opt_tensor(2), "bias", d);
  const double eps = norm_eps(a, 3);
  Tensor y = ctx.empty(DType::f32, x.shape());
  layer_norm_rows(x.data<float>(), y.data<float>(), norm_rows(x), d, w, b, eps);
  out[0] = std::move(y);
}

// rms_norm(x, weight=None, eps=1e-6) over the last dim: x / sqrt(mean(x^2) + eps) * weight.
static void rms_norm(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = norm_input(a);
  const int64_t d = x.size(-1);
  const float* w = feature_param(a.opt_tensor(1), "weight", d);
  const double eps = norm_eps(a, 2);
  Tensor y = ctx.empty(DType::f32, x.shape());
  rms_norm_rows(x.data<float>(), y.data<float>(), norm_rows(x), d, w, eps);
  out[0] = std::move(y);
}

// add_layer_norm / add_rms_norm: norm(x + residual). `prepare(d)` checks the norm's
// other arguments for rows of d features and returns norm(src, dst, rows). Two f32
// tensors of one shape take the fused path: each row's sum goes to a buffer that stays
// in L1 and is normalised from there (a buffer, not the output: the norm's loops
// vectorise only when source and destination are apart). Anything else add accepts
// (broadcasting, scalars, other dtypes) goes through the add op itself, so the fused op
// means exactly norm(add(x, residual)) for every input.
template <typename Prepare>
static void add_norm(OpContext& ctx, const Args& a, Value* out, Prepare prepare) {
  const Value &x = a[0], &res = a[1];
  const bool fused = x.is_tensor() && res.is_tensor() && x.tensor_unchecked().dtype() == DType::f32 &&
                     res.tensor_unchecked().dtype() == DType::f32 &&
                     x.tensor_unchecked().shape() == res.tensor_unchecked().shape() && x.tensor_unchecked().ndim() >= 1;
  Tensor sum;
  if (!fused) {
    std::vector<Value> v = call(*Registry::get().find("add"), {x, res}, {}, ctx);
    if (!v[0].is_tensor() || v[0].tensor_unchecked().dtype() != DType::f32 || v[0].tensor_unchecked().ndim() < 1)
      vm::fail("x + residual must be an f32 tensor of at least 1 dimension, got {}", v[0].describe());
    sum = v[0].tensor_unchecked().contiguous(ctx.pool);
  }
  const Tensor& in = fused ? x.tensor_unchecked() : sum;
  const int64_t d = in.size(-1), rows = norm_rows(in);
  const auto norm = prepare(d);
  Tensor y = ctx.empty(DType::f32, in.shape());
  float* py = y.data<float>();
  if (!fused) {
    norm(sum.data<float>(), py, rows);
  } else {
    const float* px = x.tensor_unchecked().data<float>();
    const float* pr = res.tensor_unchecked().data<float>();
    Tensor row = ctx.empty(DType::f32, Shape{d});  // the pool's: no heap allocation per call
    float* __restrict t = row.data<float>();
    for (int64_t k = 0; k < rows; ++k) {
      const float* __restrict xk = px + k * d;
      const float* __restrict rk = pr + k * d;
      for (int64_t i = 0; i < d; ++i) t[i] = xk[i] + rk[i];
      norm(t, py + k * d, 1);
    }
  }
  out[0] = std::move(y);
}

// add_layer_norm(x, residual, weight=None, bias=None, eps=1e-5): layer_norm(x + residual).
static void add_layer_norm(OpContext& ctx, const Args& a, Value* out) {
  add_norm(ctx, a, out, [&](int64_t d) {
    const float* w = feature_param(a.opt_tensor(2), "weight", d);
    const float* b = feature_param(a.opt_tensor(3), "bias", d);
    const double eps = norm_eps(a, 4);
    return [=](const float* src, float* dst, int64_t rows) { layer_norm_rows(src, dst, rows, d, w, b, eps); };
  });
}

// add_rms_norm(x, residual, weight=None, eps=1e-6): rms_norm(x + residual).
static void add_rms_norm(OpContext& ctx, const Args& a, Value* out) {
  add_norm(ctx, a, out, [&](int64_t d) {
    const float* w = feature_param(a.opt_tensor(2), "weight", d);
    const double eps = norm_eps(a, 3);
    return [=](const float* src, float* dst, int64_t rows) { rms_norm_rows(src, dst, rows, d, w, eps); };
  });
}

// Row ids[i] of w (f32 copied, f16/bf16 widened to f32 by the active variant) for each i.
template <typename I>
static void embedding_rows(const I* ids, int64_t n, const Tensor& w, int64_t v, int64_t d, float* y) {
  const kernels::KernelTable& k = kernel_table();
  const auto widen = w.dtype() == DType::f16 ? k.widen_f16 : k.widen_bf16;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = int64_t(ids[i]);
    if (id < 0 || id >= v) vm::fail("id {} out of range [0, {})", id, v);
    if (w.dtype() == DType::f32)
      std::memcpy(y + i * d, w.data<float>() + id * d, size_t(d) * sizeof(float));
    else
      widen(static_cast<const uint16_t*>(w.raw()) + id * d, d, y + i * d);
  }
}

// embedding(ids, weight): weight[ids] -> [..., D].
static void embedding(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& ids = a.tensor(0);
  const Tensor& w = a.tensor(1);
  if (ids.dtype() != DType::i64 && ids.dtype() != DType::i32) vm::fail("ids must be i64 or i32, got {}", ids.describe());
  if ((w.dtype() != DType::f32 && w.dtype() != DType::f16 && w.dtype() != DType::bf16) || w.ndim() != 2)
    vm::fail("weight must be f32 [V, D] (or f16, bf16), got {}", w.describe());
  const int64_t v = w.size(0), d = w.size(1);
  Shape os = ids.shape();
  os.push_back(d);
  Tensor y = ctx.empty(DType::f32, os);
  if (ids.dtype() == DType::i64)
    embedding_rows(ids.data<int64_t>(), ids.numel(), w, v, d, y.data<float>());
  else
    embedding_rows(ids.data<int32_t>(), ids.numel(), w, v, d, y.data<float>());
  out[0] = std::move(y);
}

void register_nn_ops(Registry& r) {
  r.add(TENSORVM_OP("layer_norm", layer_norm), "nn",
        {p_tensor("x"), p_opt_tensor("weight"), p_opt_tensor("bias"), p_float("eps", 1e-5)}, {"Tensor"},
        "Layer normalisation of f32 x over its last dim D: (x - mean) / sqrt(var + eps) * weight[D] + bias[D], "
        "with the biased variance (as torch); weight and bias are optional.");
  r.add(TENSORVM_OP("rms_norm", rms_norm), "nn",
        {p_tensor("x"), p_opt_tensor("weight"), p_float("eps", 1e-6)}, {"Tensor"},
        "RMS normalisation of f32 x over its last dim D: x / sqrt(mean(x^2) + eps) * weight[D] (weight optional).");
  r.add(TENSORVM_OP("add_layer_norm", add_layer_norm), "nn",
        {p_scalar_or_tensor("x"), p_scalar_or_tensor("residual"), p_opt_tensor("weight"), p_opt_tensor("bias"),
         p_float("eps", 1e-5)}, {"Tensor"},
        "layer_norm(x + residual, weight, bias, eps) in one pass over each row (the graph passes fuse "
        "the two); x + residual is add's, and must be an f32 tensor.");
  r.add(TENSORVM_OP("add_rms_norm", add_rms_norm), "nn",
        {p_scalar_or_tensor("x"), p_scalar_or_tensor("residual"), p_opt_tensor("weight"), p_float("eps", 1e-6)},
        {"Tensor"},
        "rms_norm(x + residual, weight, eps) in one pass over each row (the graph passes fuse the two); "
        "x + residual is add's, and must be an f32 tensor.");
  r.add(TENSORVM_OP("embedding", embedding), "nn", {p_tensor("ids"), p_tensor("weight")}, {"Tensor"},
        "Rows of weight f32[V, D] picked by ids (i64 or i32, any shape) -> f32[*ids.shape, D]. "
        "An id outside [0, V) is an error. weight may be f16 or bf16: its rows are widened to f32 (exact).");
}

}  // namespace ops
