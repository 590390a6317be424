// Unary elementwise ops. Float math (exp, log, sqrt, rsqrt, tanh, sigmoid, silu, gelu,
// erf) takes f32 tensors; neg, abs and relu also i64/i32. exp/sigmoid/silu/erf and
// both gelus use the vectorised exp and erf of elementwise_math.h (erf within 2 ulp of
// libm's); log, tanh and sqrt call libm per element (exact; Eigen's AVX-512
// packet sqrt is an approximation, and sqrtf does not vectorise with errno semantics).
// silu is Marian's activation, on every FFN row; exact gelu Whisper's and M2M100's, tanh
// gelu GPT-2's.
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/broadcast.h"
#include "ops/cpu.h"
#include "ops/elementwise_math.h"
#include "ops/registry.h"
#include "ops/select.h"

// As in reduce.cpp: GCC notes at the end of the file, where the templates are emitted,
// that the SIMD helpers' vector values have another ABI without AVX; they never cross one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace ops {

namespace {

const Tensor& f32_input(const Args& a) {
  const Tensor& x = a.tensor(0);
  if (x.dtype() != DType::f32) vm::fail("x must be f32, got {}", x.describe());
  return x;
}

// y = f(x) over a contiguous f32 tensor.
template <typename F>
Tensor map_f32(OpContext& ctx, const Tensor& x, F f) {
  Tensor y = ctx.empty(DType::f32, x.shape());
  const float* __restrict px = x.data<float>();
  float* __restrict py = y.data<float>();
  const int64_t n = x.numel();
  const auto range = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = f(px[i]);
  };
  if (n >= kParallelElements) {
    ctx.parallel_for(n, kParallelElements / 2, range);
  } else {
    range(0, n);
  }
  return y;
}

#define TVM_UNARY_F32(name, expr)                                         \
  void name(OpContext& ctx, const Args& a, Value* out) {                  \
    out[0] = map_f32(ctx, f32_input(a), [](float v) -> float { return expr; }); \
  }

TVM_UNARY_F32(log_op, std::log(v))
TVM_UNARY_F32(tanh_op, std::tanh(v))
TVM_UNARY_F32(sqrt_op, std::sqrt(v))
TVM_UNARY_F32(rsqrt_op, 1.0f / std::sqrt(v))
#undef TVM_UNARY_F32

// exp, sigmoid, silu, erf and both gelus: the active variant's vector loops
// (ops/kernels/softmax.h). Each lane's arithmetic is fixed and the same on every variant,
// so neither the variant nor where a thread's range starts changes a bit.
Tensor exp_map_tensor(OpContext& ctx, const Tensor& x, ExpMap f) {
  Tensor y = ctx.empty(DType::f32, x.shape());
  const float* px = x.data<float>();
  float* py = y.data<float>();
  const int64_t n = x.numel();
  const auto map = kernel_table().exp_map;
  const int kind = int(f);
  if (n >= kParallelElements) {
    ctx.parallel_for(n, kParallelElements / 2, [&](int64_t b, int64_t e) { map(kind, px + b, py + b, e - b); });
  } else {
    map(kind, px, py, n);
  }
  return y;
}

template <ExpMap F>
void exp_map_op(OpContext& ctx, const Args& a, Value* out) {
  out[0] = exp_map_tensor(ctx, f32_input(a), F);
}

void gelu_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = f32_input(a);
  const std::string& approx = a.str(1);
  if (approx == "none") {
    // torch: x * 0.5 * (1 + erf(x / sqrt(2))), elementwise_math.h's gelu_v
    out[0] = exp_map_tensor(ctx, x, ExpMap::gelu);
  } else if (approx == "tanh") {
    // torch: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), as elementwise_math.h's gelu_tanh_v
    out[0] = exp_map_tensor(ctx, x, ExpMap::gelu_tanh);
  } else {
    vm::fail("approximate must be \"none\" or \"tanh\", got \"{}\"", approx);
  }
}

// neg, abs, relu: f32/i64/i32 tensors (integers wrap: neg/abs of the minimum is itself).
template <typename F>
Tensor map_numeric(OpContext& ctx, const Tensor& x, F f) {
  return dispatch_numeric(x, "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor y = ctx.empty(x.dtype(), x.shape());
    const T* __restrict px = x.data<T>();
    T* __restrict py = y.data<T>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) py[i] = f(px[i]);
    return y;
  });
}

template <typename T>
T wrap_neg(T v) {
  if constexpr (std::is_floating_point_v<T>) return -v;
  else return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(v));
}

void neg_op(OpContext& ctx, const Args& a, Value* out) {
  const Value& x = a[0];
  if (x.is_int()) {
    if (x.as_int() == std::numeric_limits<int64_t>::min()) vm::fail("integer overflow (scalar ints are int64)");
    out[0] = Value::from_int(-x.as_int());
  } else if (x.is_float()) {
    out[0] = Value::from_float(-x.as_float());
  } else if (x.is_tensor()) {
    out[0] = map_numeric(ctx, x.tensor_unchecked(), [](auto v) { return wrap_neg(v); });
  } else {
    vm::fail("x must be a tensor or an int/float scalar, got {}", x.describe());
  }
}

void abs_op(OpContext& ctx, const Args& a, Value* out) {
  const Value& x = a[0];
  if (x.is_int()) {
    if (x.as_int() == std::numeric_limits<int64_t>::min()) vm::fail("integer overflow (scalar ints are int64)");
    out[0] = Value::from_int(x.as_int() < 0 ? -x.as_int() : x.as_int());
  } else if (x.is_float()) {
    out[0] = Value::from_float(std::fabs(x.as_float()));
  } else if (x.is_tensor()) {
    out[0] = map_numeric(ctx, x.tensor_unchecked(), [](auto v) {
      using T = decltype(v);
      if constexpr (std::is_floating_point_v<T>) return std::fabs(v);
      else return v < 0 ? wrap_neg(v) : v;
    });
  } else {
    vm::fail("x must be a tensor or an int/float scalar, got {}", x.describe());
  }
}

void relu_op(OpContext& ctx, const Args& a, Value* out) {
  // NaN stays NaN (torch); -0.0 becomes 0.
  out[0] = map_numeric(ctx, a.tensor(0), [](auto v) { return v <= 0 ? decltype(v)(0) : v; });
}

}  // namespace

void register_elementwise_unary_ops(Registry& r) {
  r.add(TENSORVM_OP("exp", exp_map_op<ExpMap::exp>), "elementwise",
        {p_tensor("x")}, {"Tensor"}, "e ** x (f32 tensor, same shape).");
  r.add(TENSORVM_OP("log", log_op), "elementwise",
        {p_tensor("x")}, {"Tensor"}, "Natural log (f32 tensor): log(0) = -inf, log(x < 0) = NaN.");
  r.add(TENSORVM_OP("sqrt", sqrt_op), "elementwise",
        {p_tensor("x")}, {"Tensor"}, "Square root (f32 tensor): sqrt(x < 0) = NaN.");
  r.add(TENSORVM_OP("rsqrt", rsqrt_op), "elementwise",
        {p_tensor("x")}, {"Tensor"}, "1 / sqrt(x) (f32 tensor): rsqrt(0) = inf, rsqrt(x < 0) = NaN.");
  r.add(TENSORVM_OP("tanh", tanh_op), "elementwise", {p_tensor("x")}, {"Tensor"}, "Hyperbolic tangent (f32 tensor).");
  r.add(TENSORVM_OP("sigmoid", exp_map_op<ExpMap::sigmoid>), "elementwise",
        {p_tensor("x")}, {"Tensor"}, "1 / (1 + exp(-x)) (f32 tensor).");
  r.add(TENSORVM_OP("silu", exp_map_op<ExpMap::silu>), "elementwise", {p_tensor("x")}, {"Tensor"},
        "x * sigmoid(x), computed as x / (1 + exp(-x)) like torch (f32 tensor).");
  r.add(TENSORVM_OP("erf", exp_map_op<ExpMap::erf>), "elementwise",
        {p_tensor("x")}, {"Tensor"}, "The error function (f32 tensor), within 2 ulp of libm's.");
  r.add(TENSORVM_OP("relu", relu_op), "elementwise",
        {p_tensor("x")}, {"Tensor"}, "max(x, 0) (f32, i64, i32 tensor); NaN stays NaN.");
  r.add(TENSORVM_OP("gelu", gelu_op), "elementwise", {p_tensor("x"), p_str("approximate", "none")}, {"Tensor"},
        "GELU (f32 tensor): approximate=\"none\" is 0.5*x*(1+erf(x/sqrt(2))), \"tanh\" is "
        "0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))), as in torch.");
  r.add(TENSORVM_OP("neg", neg_op), "elementwise", {p_scalar_or_tensor("x")}, {"Any"},
        "-x: an f32/i64/i32 tensor (integers wrap) or an int/float scalar (gives a scalar).", ResultRule::Promote);
  r.add(TENSORVM_OP("abs", abs_op), "elementwise", {p_scalar_or_tensor("x")}, {"Any"},
        "|x|: an f32/i64/i32 tensor (the integer minimum stays itself, like torch) or an int/float scalar.",
        ResultRule::Promote);
}

}  // namespace ops
