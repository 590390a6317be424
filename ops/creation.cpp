// Creation and conversion: arange, full, zeros, ones, full_like, zeros_like, cast,
// tensor. dtype names are "f32", "i64", "i32", "bool" (cast also "f16", "bf16"). A fill value converts to the
// dtype by the operand rules of broadcast.h (scalar_to): an int fills f32/i64/i32, a
// float only f32, a bool only bool.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/half.h"
#include "ops/broadcast.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

namespace {

DType dtype_arg(const Args& a, int i, const char* what) { return parse_value_dtype(a.str(i), what); }

// An optional dtype argument: None or a dtype name.
DType opt_dtype_arg(const Args& a, int i, DType dflt) {
  if (a.is_none(i)) return dflt;
  if (!a[i].is_str()) vm::fail("dtype must be a dtype name or None, got {}", a[i].describe());
  return parse_value_dtype(a[i].as_str(), "dtype");
}

Tensor filled(OpContext& ctx, DType dt, const Shape& shape, const Value& value) {
  Tensor t = ctx.empty(dt, shape);
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = scalar_to<T>(value, "value");
    T* p = t.data<T>();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) p[i] = v;
  });
  return t;
}

Tensor zeros_of(OpContext& ctx, DType dt, const Shape& shape) {
  Tensor t = ctx.empty(dt, shape);
  std::memset(t.raw(), 0, t.nbytes());  // 0 bits are 0, 0.0f and False
  return t;
}

Shape shape_arg(const Args& a, int i) {
  const Shape s = a.ints(i).shape();
  for (int64_t d : s)
    if (d < 0) vm::fail("shape must not have negative sizes, got {}", s.str());
  return s;
}

void arange_op(OpContext& ctx, const Args& a, Value* out) {
  const int64_t start = a.i64(0), end = a.i64(1), step = a.i64(2);
  const DType dt = dtype_arg(a, 3, "dtype");
  if (dt == DType::boolean) vm::fail("dtype must be \"i64\", \"i32\" or \"f32\", got \"bool\"");
  if (step == 0) vm::fail("step must not be zero");
  // n = ceil((end - start) / step), clamped at 0; in 128 bits so nothing overflows.
  const __int128 span = __int128(end) - start;
  __int128 n = 0;
  if ((span > 0 && step > 0) || (span < 0 && step < 0)) {
    const __int128 as = span < 0 ? -span : span, st = step < 0 ? -__int128(step) : __int128(step);
    n = (as + st - 1) / st;
  }
  if (n > (__int128(1) << 40)) vm::fail("arange({}, {}, {}) is too long", start, end, step);
  const int64_t count = int64_t(n);
  if (dt == DType::i32 && count > 0) {
    const __int128 last = __int128(start) + __int128(count - 1) * step;
    for (__int128 v : {__int128(start), last})
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        vm::fail("arange({}, {}, {}) has values outside the i32 range", start, end, step);
  }
  Tensor t = ctx.empty(dt, Shape{count});
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < count; ++i) {
      // start + i*step stays within [start, end) so it fits int64.
      const int64_t v = int64_t(uint64_t(start) + uint64_t(i) * uint64_t(step));
      p[i] = T(v);
    }
  });
  out[0] = std::move(t);
}

void full_op(OpContext& ctx, const Args& a, Value* out) {
  const Shape s = shape_arg(a, 0);
  out[0] = filled(ctx, dtype_arg(a, 2, "dtype"), s, a[1]);
}

void zeros_op(OpContext& ctx, const Args& a, Value* out) {
  const Shape s = shape_arg(a, 0);
  out[0] = zeros_of(ctx, dtype_arg(a, 1, "dtype"), s);
}

void ones_op(OpContext& ctx, const Args& a, Value* out) {
  const Shape s = shape_arg(a, 0);
  const DType dt = dtype_arg(a, 1, "dtype");
  out[0] = filled(ctx, dt, s, dt == DType::boolean ? Value::from_bool(true) : Value::from_int(1));
}

void full_like_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  out[0] = filled(ctx, opt_dtype_arg(a, 2, x.dtype()), x.shape(), a[1]);
}

void zeros_like_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  out[0] = zeros_of(ctx, opt_dtype_arg(a, 1, x.dtype()), x.shape());
}

void tensor_op(OpContext& ctx, const Args& a, Value* out) {
  const Value& v = a[0];
  if (!v.is_scalar()) vm::fail("value must be an int, float or bool scalar, got {}", v.describe());
  out[0] = filled(ctx, opt_dtype_arg(a, 1, scalar_dtype(v)), Shape{}, v);
}

// Float to integer: truncate toward zero; NaN, inf and out-of-range values are errors.
template <typename I>
Tensor float_to_int(OpContext& ctx, const Tensor& x, DType dt) {
  Tensor y = ctx.empty(dt, x.shape());
  const float* px = x.data<float>();
  I* py = y.data<I>();
  // Bounds as floats: [-2^(b-1), 2^(b-1)) is exact in float for b = 32 and 64.
  const float lo = -std::ldexp(1.0f, std::numeric_limits<I>::digits);
  const float hi = std::ldexp(1.0f, std::numeric_limits<I>::digits);
  const int64_t n = x.numel();
  bool bad = false;
  for (int64_t i = 0; i < n; ++i) {
    const float t = std::trunc(px[i]);
    const bool ok = t >= lo && t < hi;  // false for NaN
    bad = bad || !ok;
    py[i] = ok ? I(t) : I(0);
  }
  if (bad) {
    for (int64_t i = 0; i < n; ++i) {
      const float t = std::trunc(px[i]);
      if (!(t >= lo && t < hi))
        vm::fail("x has the value {} at flat index {}, which cannot be cast to {}", px[i], i, vm::dtype_name(dt));
    }
  }
  return y;
}

bool is_16bit(DType t) { return t == DType::f16 || t == DType::bf16; }

// f32 <-> f16/bf16 (and f16 <-> bf16 through f32, one rounding): core/half.h's
// conversions, round to nearest even, inf and NaN kept.
Tensor cast_16bit(OpContext& ctx, const Tensor& x, DType dt) {
  if (!(x.dtype() == DType::f32 || is_16bit(x.dtype())) || !(dt == DType::f32 || is_16bit(dt)))
    vm::fail("{} cannot be cast to {}: f16 and bf16 convert to and from f32 only (cast through f32)", x.describe(),
             vm::dtype_name(dt));
  Tensor y = ctx.empty(dt, x.shape());
  const int64_t n = x.numel();
  const auto* p16 = static_cast<const uint16_t*>(x.raw());
  auto widened = [&](int64_t i) {
    return x.dtype() == DType::f32 ? x.data<float>()[i] : x.dtype() == DType::f16 ? vm::f16_to_f32(p16[i]) : vm::bf16_to_f32(p16[i]);
  };
  if (dt == DType::f32) {
    float* py = y.data<float>();
    for (int64_t i = 0; i < n; ++i) py[i] = widened(i);
  } else {
    auto* py = static_cast<uint16_t*>(y.raw());
    for (int64_t i = 0; i < n; ++i) py[i] = dt == DType::f16 ? vm::f32_to_f16(widened(i)) : vm::f32_to_bf16(widened(i));
  }
  return y;
}

DType cast_dtype_arg(const Args& a, int i) {
  const std::string& name = a.str(i);
  if (name == "f16") return DType::f16;
  if (name == "bf16") return DType::bf16;
  if (name == "f32" || name == "i64" || name == "i32" || name == "bool") return parse_value_dtype(name, "dtype");
  vm::fail("dtype must be \"f32\", \"i64\", \"i32\", \"bool\", \"f16\" or \"bf16\", got \"{}\"", name);
}

void cast_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const DType dt = cast_dtype_arg(a, 1);
  if (x.dtype() == DType::i8) vm::fail("x must be f32, i64, i32, bool, f16 or bf16, got {}", x.describe());
  if (dt == x.dtype()) {
    out[0] = x;  // tensors are immutable: the same tensor is the cast
    return;
  }
  if (is_16bit(x.dtype()) || is_16bit(dt)) {
    out[0] = cast_16bit(ctx, x, dt);
    return;
  }
  if (x.dtype() == DType::f32 && dt == DType::i64) {
    out[0] = float_to_int<int64_t>(ctx, x, dt);
    return;
  }
  if (x.dtype() == DType::f32 && dt == DType::i32) {
    out[0] = float_to_int<int32_t>(ctx, x, dt);
    return;
  }
  Tensor y = ctx.empty(dt, x.shape());
  const int64_t n = x.numel();
  dispatch(x.dtype(), [&](auto stag) {
    using S = typename decltype(stag)::type;
    dispatch(dt, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      const storage_t<S>* __restrict ps = in_data<S>(x);  // bools as 0/1 bytes
      storage_t<D>* __restrict pd = out_data<D>(y);
      if constexpr (std::is_same_v<D, bool>) {
        for (int64_t i = 0; i < n; ++i) pd[i] = ps[i] != 0;  // NaN is nonzero
      } else if constexpr (std::is_integral_v<D> && std::is_integral_v<S> && !std::is_same_v<S, bool>) {
        // i64 -> i32 wraps (two's complement), like torch and numpy.
        for (int64_t i = 0; i < n; ++i) pd[i] = D(std::make_unsigned_t<D>(ps[i]));
      } else if constexpr (!(std::is_floating_point_v<S> && std::is_integral_v<D>)) {
        for (int64_t i = 0; i < n; ++i) pd[i] = D(ps[i]);
      }
    });
  });
  out[0] = std::move(y);
}

}  // namespace

void register_creation_ops(Registry& r) {
  r.add(TENSORVM_OP("arange", arange_op), "creation",
        {p_int("start"), p_int("end"), p_int("step", 1), p_str("dtype", "i64")}, {"Tensor"},
        "The 1-D tensor [start, start+step, ...) up to end (exclusive), from ints; dtype \"i64\", \"i32\" or \"f32\". "
        "step 0 is an error; an empty range gives shape [0].");
  r.add(TENSORVM_OP("full", full_op), "creation", {p_ints("shape"), p_any("value"), p_str("dtype", "f32")}, {"Tensor"},
        "A tensor of `shape` filled with the scalar value (an int fills f32/i64/i32, a float only f32, a bool only "
        "bool).");
  r.add(TENSORVM_OP("zeros", zeros_op), "creation",
        {p_ints("shape"), p_str("dtype", "f32")}, {"Tensor"}, "A tensor of `shape` filled with 0 (False).");
  r.add(TENSORVM_OP("ones", ones_op), "creation",
        {p_ints("shape"), p_str("dtype", "f32")}, {"Tensor"}, "A tensor of `shape` filled with 1 (True).");
  r.add(TENSORVM_OP("full_like", full_like_op), "creation", {p_tensor("x"), p_any("value"), p_opt_any("dtype")}, {"Tensor"},
        "A tensor of x's shape filled with value; dtype None means x's dtype (value rules as in full).");
  r.add(TENSORVM_OP("zeros_like", zeros_like_op), "creation", {p_tensor("x"), p_opt_any("dtype")}, {"Tensor"},
        "A tensor of x's shape filled with 0; dtype None means x's dtype.");
  r.add(TENSORVM_OP("cast", cast_op), "creation", {p_tensor("x"), p_str("dtype")}, {"Tensor"},
        "x converted to dtype: float to int truncates toward zero (NaN, inf or out of range is an error), i64 to i32 "
        "wraps, to bool is x != 0, bool to numbers is 0/1. f16 and bf16 convert to and from f32 (and each other) "
        "only: f32 to f16/bf16 rounds to nearest even, overflow gives inf, NaN stays NaN; widening is exact. "
        "Casting to x's own dtype returns x.");
  r.add(TENSORVM_OP("tensor", tensor_op), "creation", {p_any("value"), p_opt_any("dtype")}, {"Tensor"},
        "A 0-d tensor holding the scalar value; dtype None picks i64 for an int, f32 for a float, bool for a bool.");
}

}  // namespace ops
