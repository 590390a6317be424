#include "ops/broadcast.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ops {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const int n = std::max(a.size(), b.size());
  Shape out;
  out.resize(n);
  for (int i = 0; i < n; ++i) {
    const int ia = a.size() - n + i, ib = b.size() - n + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) vm::fail("cannot broadcast shapes {} and {}", a.str(), b.str());
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_strides(const Shape& in_shape, const Shape& in_strides, const Shape& out_shape) {
  Shape s;
  s.resize(out_shape.size(), 0);
  const int lead = out_shape.size() - in_shape.size();
  for (int i = 0; i < in_shape.size(); ++i) s[lead + i] = in_shape[i] == 1 ? 0 : in_strides[i];
  return s;
}

Tensor expand(const Tensor& t, const Shape& shape) {
  const int n = shape.size(), nt = t.ndim();
  if (nt > n) vm::fail("cannot expand {} to {}: the target has fewer dimensions", t.describe(), shape.str());
  Shape out = shape;
  for (int i = 0; i < n; ++i) {
    const int it = i - (n - nt);
    if (out[i] == -1 && it >= 0) out[i] = t.shape()[it];
    if (out[i] < 0) vm::fail("cannot expand {} to {}: bad size {}", t.describe(), shape.str(), shape[i]);
    if (it >= 0 && t.shape()[it] != 1 && t.shape()[it] != out[i])
      vm::fail("cannot expand {} to {}", t.describe(), shape.str());
  }
  return t.view(out, broadcast_strides(t.shape(), t.strides(), out), t.offset());
}

DType parse_value_dtype(const std::string& name, const char* what) {
  if (name == "f32") return DType::f32;
  if (name == "i64") return DType::i64;
  if (name == "i32") return DType::i32;
  if (name == "bool") return DType::boolean;
  vm::fail("{} must be \"f32\", \"i64\", \"i32\" or \"bool\", got \"{}\"", what, name);
}

DType scalar_dtype(const Value& v) {
  if (v.is_bool()) return DType::boolean;
  if (v.is_int()) return DType::i64;
  if (v.is_float()) return DType::f32;
  vm::fail("expected an int, float or bool scalar, got {}", v.describe());
}

void scalar_to_bytes(const Value& v, DType dt, const char* what, void* out8) {
  if (!v.is_scalar()) vm::fail("{} must be an int, float or bool scalar, got {}", what, v.describe());
  switch (dt) {
    case DType::f32: {
      if (v.is_bool()) vm::fail("{} is a bool scalar; an f32 tensor needs an int or float", what);
      const float f = v.is_int() ? float(v.as_int()) : float(v.as_float());
      std::memcpy(out8, &f, sizeof f);
      return;
    }
    case DType::i64:
    case DType::i32: {
      if (!v.is_int())
        vm::fail("{} is {}; an {} tensor needs an int scalar", what, v.describe(), vm::dtype_name(dt));
      const int64_t i = v.as_int();
      if (dt == DType::i64) {
        std::memcpy(out8, &i, sizeof i);
      } else {
        if (i < std::numeric_limits<int32_t>::min() || i > std::numeric_limits<int32_t>::max())
          vm::fail("{} = {} does not fit an i32 tensor", what, i);
        const int32_t j = int32_t(i);
        std::memcpy(out8, &j, sizeof j);
      }
      return;
    }
    case DType::boolean: {
      if (!v.is_bool()) vm::fail("{} is {}; a bool tensor needs a bool scalar", what, v.describe());
      const bool b = v.as_bool();
      std::memcpy(out8, &b, sizeof b);
      return;
    }
    default: break;
  }
  vm::fail("{}: dtype {} is not supported here", what, vm::dtype_name(dt));
}

}  // namespace ops
