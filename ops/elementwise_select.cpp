// Selection ops: where, masked_fill, clamp.
#include <cmath>

#include "ops/broadcast.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

namespace {

// where(cond, x, y): cond ? x : y with cond, x, y broadcast together.
void where_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& cond = a.tensor(0);
  const Value &x = a[1], &y = a[2];
  if (cond.dtype() != DType::boolean) vm::fail("cond must be a bool tensor, got {}", cond.describe());
  DType dt;
  if (x.is_tensor() && y.is_tensor()) {
    const Tensor &tx = x.tensor_unchecked(), &ty = y.tensor_unchecked();
    if (tx.dtype() != ty.dtype()) vm::fail("x and y must have the same dtype, got {} and {}", tx.describe(), ty.describe());
    dt = tx.dtype();
  } else if (x.is_tensor() || y.is_tensor()) {
    dt = (x.is_tensor() ? x : y).tensor_unchecked().dtype();
  } else {
    // Two scalars: bool/bool -> bool, int/int -> i64, a float -> f32.
    if (x.is_bool() != y.is_bool())
      vm::fail("x and y must both be bools or both be numbers, got {} and {}", x.describe(), y.describe());
    dt = x.is_bool() ? DType::boolean : (x.is_float() || y.is_float()) ? DType::f32 : DType::i64;
  }
  Shape shape = cond.shape();
  if (x.is_tensor()) shape = broadcast_shapes(shape, x.tensor_unchecked().shape());
  if (y.is_tensor()) shape = broadcast_shapes(shape, y.tensor_unchecked().shape());
  out[0] = dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    S sx{}, sy{};
    Operand<S> ox = x.is_tensor() ? operand<T>(x.tensor_unchecked(), shape) : (sx = S(scalar_to<T>(x, "x")), scalar_operand(&sx, shape));
    Operand<S> oy = y.is_tensor() ? operand<T>(y.tensor_unchecked(), shape) : (sy = S(scalar_to<T>(y, "y")), scalar_operand(&sy, shape));
    Tensor o = ctx.empty(dt, shape);
    map3(out_data<T>(o), operand<bool>(cond, shape), ox, oy, shape, [](uint8_t c, S u, S v) { return c ? u : v; }, ctx.threads);
    return o;
  });
}

// masked_fill(x, mask, value): value where mask, else x; mask broadcasts to x's shape.
void masked_fill_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Tensor& mask = a.tensor(1);
  const Value& value = a[2];
  if (mask.dtype() != DType::boolean) vm::fail("mask must be a bool tensor, got {}", mask.describe());
  if (broadcast_shapes(x.shape(), mask.shape()) != x.shape())
    vm::fail("mask {} does not broadcast to the shape of x {}", mask.describe(), x.describe());
  if (!value.is_scalar()) vm::fail("value must be an int, float or bool scalar, got {}", value.describe());
  const Shape& shape = x.shape();
  out[0] = dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = storage_t<T>;
    const S v = S(scalar_to<T>(value, "value"));
    Tensor o = ctx.empty(x.dtype(), shape);
    map2(out_data<T>(o), operand<T>(x, shape), operand<bool>(mask, shape), shape, [v](S u, uint8_t m) { return m ? v : u; },
         ctx.threads);
    return o;
  });
}

// clamp(x, min=None, max=None): min(max(x, min), max) like torch (min > max gives max
// everywhere); NaN in x stays NaN.
void clamp_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& x = a.tensor(0);
  const Value &lo = a[1], &hi = a[2];
  if (lo.is_none() && hi.is_none()) vm::fail("at least one of min and max must not be None");
  for (int i = 1; i < 3; ++i) {
    const Value& b = a[i];
    const char* name = i == 1 ? "min" : "max";
    if (b.is_none()) continue;
    if (!(b.is_int() || b.is_float())) vm::fail("{} must be an int or float scalar or None, got {}", name, b.describe());
    if (b.is_float() && std::isnan(b.as_float())) vm::fail("{} must not be NaN", name);
  }
  out[0] = dispatch_numeric(x, "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool has_lo = !lo.is_none(), has_hi = !hi.is_none();
    const T l = has_lo ? scalar_to<T>(lo, "min") : T(0);
    const T h = has_hi ? scalar_to<T>(hi, "max") : T(0);
    Tensor o = ctx.empty(x.dtype(), x.shape());
    const T* __restrict px = x.data<T>();
    T* __restrict po = o.data<T>();
    const int64_t n = x.numel();
    if (has_lo && has_hi) {
      for (int64_t i = 0; i < n; ++i) {
        const T v = px[i] < l ? l : px[i];
        po[i] = v > h ? h : v;
      }
    } else if (has_lo) {
      for (int64_t i = 0; i < n; ++i) po[i] = px[i] < l ? l : px[i];
    } else {
      for (int64_t i = 0; i < n; ++i) po[i] = px[i] > h ? h : px[i];
    }
    return o;
  });
}

}  // namespace

void register_elementwise_select_ops(Registry& r) {
  r.add(TENSORVM_OP("where", where_op), "elementwise",
        {p_strided(p_tensor("cond")), p_strided(p_scalar_or_tensor("x")), p_strided(p_scalar_or_tensor("y"))}, {"Tensor"},
        "cond ? x : y elementwise; cond a bool tensor, x and y tensors of one dtype or scalars (a scalar takes "
        "the other's dtype; two scalars give i64, f32 if either is a float, or bool); all three broadcast.");
  r.add(TENSORVM_OP("masked_fill", masked_fill_op), "elementwise",
        {p_strided(p_tensor("x")), p_strided(p_tensor("mask")), p_any("value")}, {"Tensor"},
        "x with the elements where mask is True set to value; mask a bool tensor broadcastable to x's shape, "
        "value an int/float/bool scalar converted to x's dtype (a float into an integer tensor is an error).");
  r.add(TENSORVM_OP("clamp", clamp_op), "elementwise", {p_tensor("x"), p_opt_any("min"), p_opt_any("max")}, {"Tensor"},
        "min(max(x, min), max) for an f32/i64/i32 tensor with int/float scalar bounds (None: unbounded; not both "
        "None; a float bound with an integer tensor is an error). min > max gives max, like torch.");
}

}  // namespace ops
