// Neural-network building blocks: normalisations over the last dim and embedding lookup.
// Row statistics accumulate in double (cheap at these row lengths and exact enough that
// large magnitudes such as 1e30 do not overflow the variance); outputs are f32.
#include <cmath>
#include <cstring>

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

// layer_norm(x, weight=None, bias=None, eps=1e-5) over the last dim.
static void layer_norm(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = norm_input(a);
  const int64_t d = x.size(-1);
  const float* w = feature_param(a.opt_tensor(1), "weight", d);
  const float* b = feature_param(a.opt_tensor(2), "bias", d);
  const double eps = norm_eps(a, 3);
  Tensor y = ctx.empty(DType::f32, x.shape());
  const int64_t rows = d == 0 ? 0 : x.numel() / d;
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
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
  out[0] = std::move(y);
}

// rms_norm(x, weight=None, eps=1e-6) over the last dim: x / sqrt(mean(x^2) + eps) * weight.
static void rms_norm(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = norm_input(a);
  const int64_t d = x.size(-1);
  const float* w = feature_param(a.opt_tensor(1), "weight", d);
  const double eps = norm_eps(a, 2);
  Tensor y = ctx.empty(DType::f32, x.shape());
  const int64_t rows = d == 0 ? 0 : x.numel() / d;
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
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
  out[0] = std::move(y);
}

template <typename I>
static void embedding_rows(const I* ids, int64_t n, const float* w, int64_t v, int64_t d, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = int64_t(ids[i]);
    if (id < 0 || id >= v) vm::fail("id {} out of range [0, {})", id, v);
    std::memcpy(y + i * d, w + id * d, size_t(d) * sizeof(float));
  }
}

// embedding(ids, weight): weight[ids] -> [..., D].
static void embedding(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& ids = a.tensor(0);
  const Tensor& w = a.tensor(1);
  if (ids.dtype() != DType::i64 && ids.dtype() != DType::i32) vm::fail("ids must be i64 or i32, got {}", ids.describe());
  if (w.dtype() != DType::f32 || w.ndim() != 2) vm::fail("weight must be f32 [V, D], got {}", w.describe());
  const int64_t v = w.size(0), d = w.size(1);
  Shape os = ids.shape();
  os.push_back(d);
  Tensor y = ctx.empty(DType::f32, os);
  if (ids.dtype() == DType::i64)
    embedding_rows(ids.data<int64_t>(), ids.numel(), w.data<float>(), v, d, y.data<float>());
  else
    embedding_rows(ids.data<int32_t>(), ids.numel(), w.data<float>(), v, d, y.data<float>());
  out[0] = std::move(y);
}

void register_nn_ops(Registry& r) {
  {
    auto& op = r.add(TENSORVM_OP("layer_norm", layer_norm), "nn");
    op.params = {p_tensor("x"), p_opt_tensor("weight"), p_opt_tensor("bias"), p_float("eps", 1e-5)};
    op.outputs = {"Tensor"};
    op.doc = "Layer normalisation of f32 x over its last dim D: (x - mean) / sqrt(var + eps) * weight[D] + bias[D], "
             "with the biased variance (as torch); weight and bias are optional.";
  }
  {
    auto& op = r.add(TENSORVM_OP("rms_norm", rms_norm), "nn");
    op.params = {p_tensor("x"), p_opt_tensor("weight"), p_float("eps", 1e-6)};
    op.outputs = {"Tensor"};
    op.doc = "RMS normalisation of f32 x over its last dim D: x / sqrt(mean(x^2) + eps) * weight[D] (weight optional).";
  }
  {
    auto& op = r.add(TENSORVM_OP("embedding", embedding), "nn");
    op.params = {p_tensor("ids"), p_tensor("weight")};
    op.outputs = {"Tensor"};
    op.doc = "Rows of weight f32[V, D] picked by ids (i64 or i32, any shape) -> f32[*ids.shape, D]. "
             "An id outside [0, V) is an error.";
  }
}

}  // namespace ops
