// Binary elementwise ops: arithmetic, comparisons and logical ops, with numpy
// broadcasting. Operand rules (shared by all of them):
//   tensor ∘ tensor   equal dtypes (no implicit promotion), shapes broadcast
//   tensor ∘ scalar   the scalar converts to the tensor's dtype (a float scalar with an
//                     integer tensor is an error; bool scalars only with bool tensors)
//   scalar ∘ scalar   Python semantics, the result is a scalar
// Integer tensor add, sub and mul wrap on overflow (like torch); scalar int arithmetic
// is checked (Python ints do not overflow, int64 ones would). The smallest int
// floor-divided by -1 is an error for tensors too: a quotient that lands back on a
// negative number is no modular identity anyone relies on, only a silent wrong value.
// Unary ops live in elementwise_unary.cpp; where, masked_fill and clamp in
// elementwise_select.cpp.
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/broadcast.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

void register_elementwise_unary_ops(Registry& r);
void register_elementwise_select_ops(Registry& r);

namespace {

enum class Bin { add, sub, mul, div, pow, maximum, minimum, floordiv, remainder };
enum class Cmp { eq, ne, lt, le, gt, ge };
enum class Logic { land, lor, lxor };

// ---------------------------------------------------------------- scalar ∘ scalar

[[noreturn]] void int_overflow() { vm::fail("integer overflow (scalar ints are int64)"); }

Value scalar_arith(Bin op, const Value& x, const Value& y) {
  if (x.is_bool() || y.is_bool())
    vm::fail("x and y must be int or float scalars or tensors, got {} and {}", x.describe(), y.describe());
  if (x.is_int() && y.is_int()) {
    const int64_t a = x.as_int(), b = y.as_int();
    int64_t r = 0;
    switch (op) {
      case Bin::add:
        if (__builtin_add_overflow(a, b, &r)) int_overflow();
        return Value::from_int(r);
      case Bin::sub:
        if (__builtin_sub_overflow(a, b, &r)) int_overflow();
        return Value::from_int(r);
      case Bin::mul:
        if (__builtin_mul_overflow(a, b, &r)) int_overflow();
        return Value::from_int(r);
      case Bin::div:
        if (b == 0) vm::fail("division by zero");
        return Value::from_float(double(a) / double(b));
      case Bin::pow: {
        if (b < 0) {
          if (a == 0) vm::fail("0 cannot be raised to a negative power");
          return Value::from_float(std::pow(double(a), double(b)));
        }
        int64_t base = a, e = b;
        r = 1;
        while (e > 0) {
          if ((e & 1) && __builtin_mul_overflow(r, base, &r)) int_overflow();
          e >>= 1;
          if (e > 0 && __builtin_mul_overflow(base, base, &base)) int_overflow();
        }
        return Value::from_int(r);
      }
      case Bin::maximum: return Value::from_int(a > b ? a : b);
      case Bin::minimum: return Value::from_int(a < b ? a : b);
      case Bin::floordiv: {
        if (b == 0) vm::fail("integer division by zero");
        if (a == std::numeric_limits<int64_t>::min() && b == -1) int_overflow();
        int64_t q = a / b;
        if (a % b != 0 && ((a < 0) != (b < 0))) --q;
        return Value::from_int(q);
      }
      case Bin::remainder: {
        if (b == 0) vm::fail("integer modulo by zero");
        if (b == -1) return Value::from_int(0);
        int64_t m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) m += b;
        return Value::from_int(m);
      }
    }
  }
  const double a = x.as_float(), b = y.as_float();
  switch (op) {
    case Bin::add: return Value::from_float(a + b);
    case Bin::sub: return Value::from_float(a - b);
    case Bin::mul: return Value::from_float(a * b);
    case Bin::div:
      if (b == 0) vm::fail("float division by zero");
      return Value::from_float(a / b);
    case Bin::pow: {
      if (a == 0 && b < 0 && std::isfinite(b)) vm::fail("0.0 cannot be raised to a negative power");
      if (a < 0 && std::isfinite(a) && std::isfinite(b) && b != std::floor(b))
        vm::fail("a negative base to a fractional power has no real result ({} ** {})", a, b);
      const double r = std::pow(a, b);
      if (std::isinf(r) && std::isfinite(a) && std::isfinite(b)) vm::fail("result out of range ({} ** {})", a, b);
      return Value::from_float(r);
    }
    case Bin::maximum: return Value::from_float((a > b || a != a) ? a : b);
    case Bin::minimum: return Value::from_float((a < b || a != a) ? a : b);
    case Bin::floordiv:
    case Bin::remainder: {
      if (b == 0) vm::fail(op == Bin::floordiv ? "float floor division by zero" : "float modulo by zero");
      // CPython's float divmod.
      double mod = std::fmod(a, b);
      double div = (a - mod) / b;
      if (mod != 0) {
        if ((b < 0) != (mod < 0)) {
          mod += b;
          div -= 1.0;
        }
      } else {
        mod = std::copysign(0.0, b);
      }
      double fd;
      if (div != 0) {
        fd = std::floor(div);
        if (div - fd > 0.5) fd += 1.0;
      } else {
        fd = std::copysign(0.0, a / b);
      }
      return Value::from_float(op == Bin::floordiv ? fd : mod);
    }
  }
  return Value();
}

bool scalar_compare(Cmp op, const Value& x, const Value& y) {
  auto cmp = [op](auto a, auto b) {
    switch (op) {
      case Cmp::eq: return a == b;
      case Cmp::ne: return a != b;
      case Cmp::lt: return a < b;
      case Cmp::le: return a <= b;
      case Cmp::gt: return a > b;
      case Cmp::ge: return a >= b;
    }
    return false;
  };
  if (x.is_bool() != y.is_bool())
    vm::fail("x and y must both be bools or both be numbers, got {} and {}", x.describe(), y.describe());
  if (x.is_bool()) return cmp(int(x.as_bool()), int(y.as_bool()));
  if (x.is_int() && y.is_int()) return cmp(x.as_int(), y.as_int());
  return cmp(x.as_float(), y.as_float());
}

// ---------------------------------------------------------------- tensor kernels

// The dtype of a tensor∘tensor or tensor∘scalar operation (at least one is a tensor).
DType operand_dtype(const Value& x, const Value& y) {
  if (x.is_tensor() && y.is_tensor()) {
    const Tensor &tx = x.tensor_unchecked(), &ty = y.tensor_unchecked();
    if (tx.dtype() != ty.dtype())
      vm::fail("x and y must have the same dtype, got {} and {}", tx.describe(), ty.describe());
    return tx.dtype();
  }
  return x.is_tensor() ? x.tensor_unchecked().dtype() : y.tensor_unchecked().dtype();
}

const Tensor& the_tensor(const Value& x, const Value& y) { return x.is_tensor() ? x.tensor_unchecked() : y.tensor_unchecked(); }
const char* tensor_name(const Value& x) { return x.is_tensor() ? "x" : "y"; }

// out = f(x, y) elementwise with broadcasting; x, y tensors of type T or scalars.
// f takes and returns storage types (uint8_t for bool).
template <typename R, typename T, typename F>
Tensor apply2(OpContext& ctx, const Value& x, const Value& y, F f) {
  using S = storage_t<T>;
  Shape shape;
  if (x.is_tensor() && y.is_tensor()) shape = broadcast_shapes(x.tensor_unchecked().shape(), y.tensor_unchecked().shape());
  else shape = the_tensor(x, y).shape();
  S sx{}, sy{};
  Operand<S> ox = x.is_tensor() ? operand<T>(x.tensor_unchecked(), shape) : (sx = S(scalar_to<T>(x, "x")), scalar_operand(&sx, shape));
  Operand<S> oy = y.is_tensor() ? operand<T>(y.tensor_unchecked(), shape) : (sy = S(scalar_to<T>(y, "y")), scalar_operand(&sy, shape));
  Tensor out = ctx.empty(vm::dtype_of<R>::value, shape);
  map2(out_data<R>(out), ox, oy, shape, f, ctx.threads);
  return out;
}

template <typename T>
using U = std::make_unsigned_t<T>;

template <Bin OP, typename T>
Tensor arith_typed(OpContext& ctx, const Value& x, const Value& y) {
  constexpr bool is_float = std::is_floating_point_v<T>;
  if constexpr (OP == Bin::add) {
    if constexpr (is_float) return apply2<T, T>(ctx, x, y, [](T a, T b) { return a + b; });
    else return apply2<T, T>(ctx, x, y, [](T a, T b) { return T(U<T>(a) + U<T>(b)); });
  } else if constexpr (OP == Bin::sub) {
    if constexpr (is_float) return apply2<T, T>(ctx, x, y, [](T a, T b) { return a - b; });
    else return apply2<T, T>(ctx, x, y, [](T a, T b) { return T(U<T>(a) - U<T>(b)); });
  } else if constexpr (OP == Bin::mul) {
    if constexpr (is_float) return apply2<T, T>(ctx, x, y, [](T a, T b) { return a * b; });
    else return apply2<T, T>(ctx, x, y, [](T a, T b) { return T(U<T>(a) * U<T>(b)); });
  } else if constexpr (OP == Bin::div) {
    return apply2<T, T>(ctx, x, y, [](T a, T b) { return a / b; });
  } else if constexpr (OP == Bin::pow) {
    return apply2<T, T>(ctx, x, y, [](T a, T b) { return std::pow(a, b); });
  } else if constexpr (OP == Bin::maximum) {
    return apply2<T, T>(ctx, x, y, [](T a, T b) { return (a > b || a != a) ? a : b; });
  } else if constexpr (OP == Bin::minimum) {
    return apply2<T, T>(ctx, x, y, [](T a, T b) { return (a < b || a != a) ? a : b; });
  } else if constexpr (OP == Bin::floordiv || OP == Bin::remainder) {
    if constexpr (is_float) {
      if constexpr (OP == Bin::floordiv) {
        // torch's div_floor_floating (= numpy floor_divide).
        return apply2<T, T>(ctx, x, y, [](T a, T b) {
          if (b == 0) return a / b;
          const T mod = std::fmod(a, b);
          T div = (a - mod) / b;
          if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
          if (div != 0) {
            T fd = std::floor(div);
            if (div - fd > T(0.5)) fd += T(1);
            return fd;
          }
          return std::copysign(T(0), a / b);
        });
      } else {
        return apply2<T, T>(ctx, x, y, [](T a, T b) {
          T mod = std::fmod(a, b);
          if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
          return mod;
        });
      }
    } else {
      bool zero = false;  // set inside the loop, reported after it (no throw mid-loop)
      Tensor out;
      if constexpr (OP == Bin::floordiv) {
        bool overflow = false;
        out = apply2<T, T>(ctx, x, y, [&zero, &overflow](T a, T b) -> T {
          if (b == 0) { zero = true; return 0; }
          if (b == -1) {
            // The minimum has no negation: an error (as for scalars), not torch's wrap.
            if (a == std::numeric_limits<T>::min()) overflow = true;
            return T(U<T>(0) - U<T>(a));
          }
          T q = a / b;
          if (a % b != 0 && ((a < 0) != (b < 0))) --q;
          return q;
        });
        if (overflow && !zero) vm::fail("integer overflow: the smallest {} divided by -1 (x has it where y is -1)", vm::dtype_name(vm::dtype_of<T>::value));
      } else {
        out = apply2<T, T>(ctx, x, y, [&zero](T a, T b) -> T {
          if (b == 0) { zero = true; return 0; }
          if (b == -1) return 0;
          T m = a % b;
          if (m != 0 && ((m < 0) != (b < 0))) m += b;
          return m;
        });
      }
      if (zero) vm::fail("integer division by zero (y has a zero element)");
      return out;
    }
  }
}

template <Bin OP>
void arith(OpContext& ctx, const Args& args, Value* out) {
  const Value &x = args[0], &y = args[1];
  if (!x.is_tensor() && !y.is_tensor()) {
    out[0] = scalar_arith(OP, x, y);
    return;
  }
  const DType dt = operand_dtype(x, y);
  const Tensor& t = the_tensor(x, y);
  const char* tn = tensor_name(x);
  if constexpr (OP == Bin::div) {
    if (dt != DType::f32) vm::fail("{} must be f32 (use floordiv for integer division), got {}", tn, t.describe());
  }
  if constexpr (OP == Bin::pow) {
    if (dt != DType::f32) vm::fail("{} must be f32, got {}", tn, t.describe());
  }
  if constexpr (OP == Bin::div || OP == Bin::pow) {
    out[0] = arith_typed<OP, float>(ctx, x, y);
  } else {
    out[0] = dispatch_numeric(t, tn, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return arith_typed<OP, T>(ctx, x, y);
    });
  }
}

template <Cmp OP, typename T>
Tensor compare_typed(OpContext& ctx, const Value& x, const Value& y) {
  using S = storage_t<T>;  // bools compare as 0/1 bytes
  if constexpr (OP == Cmp::eq) return apply2<bool, T>(ctx, x, y, [](S a, S b) -> uint8_t { return a == b; });
  if constexpr (OP == Cmp::ne) return apply2<bool, T>(ctx, x, y, [](S a, S b) -> uint8_t { return a != b; });
  if constexpr (OP == Cmp::lt) return apply2<bool, T>(ctx, x, y, [](S a, S b) -> uint8_t { return a < b; });
  if constexpr (OP == Cmp::le) return apply2<bool, T>(ctx, x, y, [](S a, S b) -> uint8_t { return a <= b; });
  if constexpr (OP == Cmp::gt) return apply2<bool, T>(ctx, x, y, [](S a, S b) -> uint8_t { return a > b; });
  if constexpr (OP == Cmp::ge) return apply2<bool, T>(ctx, x, y, [](S a, S b) -> uint8_t { return a >= b; });
}

template <Cmp OP>
void compare(OpContext& ctx, const Args& args, Value* out) {
  const Value &x = args[0], &y = args[1];
  if (!x.is_tensor() && !y.is_tensor()) {
    out[0] = Value::from_bool(scalar_compare(OP, x, y));
    return;
  }
  const DType dt = operand_dtype(x, y);
  out[0] = dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return compare_typed<OP, T>(ctx, x, y);
  });
}

// On 0/1 bytes (bool tensors hold only 0 and 1).
template <Logic OP>
uint8_t logic1(uint8_t a, uint8_t b) {
  if constexpr (OP == Logic::land) return a & b;
  if constexpr (OP == Logic::lor) return a | b;
  return a ^ b;
}

template <Logic OP>
void logical(OpContext& ctx, const Args& args, Value* out) {
  const Value &x = args[0], &y = args[1];
  for (int i = 0; i < 2; ++i) {
    const Value& v = args[i];
    const bool ok = v.is_bool() || (v.is_tensor() && v.tensor_unchecked().dtype() == DType::boolean);
    if (!ok) vm::fail("{} must be a bool tensor or a bool, got {}", i == 0 ? "x" : "y", v.describe());
  }
  if (!x.is_tensor() && !y.is_tensor()) {
    out[0] = Value::from_bool(logic1<OP>(x.as_bool(), y.as_bool()) != 0);
    return;
  }
  out[0] = apply2<bool, bool>(ctx, x, y, [](uint8_t a, uint8_t b) { return logic1<OP>(a, b); });
}

void logical_not(OpContext& ctx, const Args& args, Value* out) {
  const Value& x = args[0];
  if (x.is_bool()) {
    out[0] = Value::from_bool(!x.as_bool());
    return;
  }
  if (!x.is_tensor() || x.tensor_unchecked().dtype() != DType::boolean)
    vm::fail("x must be a bool tensor or a bool, got {}", x.describe());
  const Tensor& t = x.tensor_unchecked();
  Tensor o = ctx.empty(DType::boolean, t.shape());
  map1(out_data<bool>(o), operand<bool>(t, t.shape()), t.shape(), [](uint8_t a) -> uint8_t { return a ^ 1; });
  out[0] = std::move(o);
}

std::vector<Param> binary_params() { return {p_strided(p_scalar_or_tensor("x")), p_strided(p_scalar_or_tensor("y"))}; }

}  // namespace

void register_elementwise_ops(Registry& r) {
  const std::string arith_rule =
      " Tensors or int/float scalars, broadcast; tensor∘tensor needs equal dtypes, a scalar takes the tensor's dtype "
      "(a float scalar with an integer tensor is an error); scalar∘scalar gives a scalar with Python semantics.";
  r.add(TENSORVM_OP("add", arith<Bin::add>), "elementwise", binary_params(), {"Any"},
        "x + y (f32, i64, i32; integers wrap)." + arith_rule, ResultRule::Promote);
  r.add(TENSORVM_OP("sub", arith<Bin::sub>), "elementwise", binary_params(), {"Any"},
        "x - y (f32, i64, i32; integers wrap)." + arith_rule, ResultRule::Promote);
  r.add(TENSORVM_OP("mul", arith<Bin::mul>), "elementwise", binary_params(), {"Any"},
        "x * y (f32, i64, i32; integers wrap)." + arith_rule, ResultRule::Promote);
  r.add(TENSORVM_OP("div", arith<Bin::div>), "elementwise", binary_params(), {"Any"},
        "x / y, true division: f32 tensors only (use floordiv for integers); int/int scalars give a float." + arith_rule,
        ResultRule::Float);
  r.add(TENSORVM_OP("pow", arith<Bin::pow>), "elementwise", binary_params(), {"Any"},
        "x ** y: f32 tensors (the exponent a tensor or a scalar)." + arith_rule, ResultRule::Promote);
  r.add(TENSORVM_OP("maximum", arith<Bin::maximum>), "elementwise", binary_params(), {"Any"},
        "Elementwise max of x and y; NaN propagates (like torch)." + arith_rule, ResultRule::Promote);
  r.add(TENSORVM_OP("minimum", arith<Bin::minimum>), "elementwise", binary_params(), {"Any"},
        "Elementwise min of x and y; NaN propagates (like torch)." + arith_rule, ResultRule::Promote);
  r.add(TENSORVM_OP("floordiv", arith<Bin::floordiv>), "elementwise", binary_params(), {"Any"},
        "floor(x / y) (Python/torch floor semantics); integer division by zero and the smallest int divided by -1 are "
        "errors, f32 follows IEEE." + arith_rule,
        ResultRule::Promote);
  r.add(TENSORVM_OP("remainder", arith<Bin::remainder>), "elementwise", binary_params(), {"Any"},
        "x - floordiv(x, y) * y: the result takes the divisor's sign (Python/torch); integer division by zero is an "
        "error." + arith_rule,
        ResultRule::Promote);

  const std::string cmp_rule =
      " A bool tensor (broadcast) from tensors of equal dtype (f32, i64, i32, bool) or a tensor and a scalar of a "
      "matching kind; scalar∘scalar gives a bool. NaN compares unequal to everything.";
  r.add(TENSORVM_OP("eq", compare<Cmp::eq>), "elementwise",
        binary_params(), {"Any"}, "x == y." + cmp_rule, ResultRule::Bool);
  r.add(TENSORVM_OP("ne", compare<Cmp::ne>), "elementwise",
        binary_params(), {"Any"}, "x != y." + cmp_rule, ResultRule::Bool);
  r.add(TENSORVM_OP("lt", compare<Cmp::lt>), "elementwise",
        binary_params(), {"Any"}, "x < y." + cmp_rule, ResultRule::Bool);
  r.add(TENSORVM_OP("le", compare<Cmp::le>), "elementwise",
        binary_params(), {"Any"}, "x <= y." + cmp_rule, ResultRule::Bool);
  r.add(TENSORVM_OP("gt", compare<Cmp::gt>), "elementwise",
        binary_params(), {"Any"}, "x > y." + cmp_rule, ResultRule::Bool);
  r.add(TENSORVM_OP("ge", compare<Cmp::ge>), "elementwise",
        binary_params(), {"Any"}, "x >= y." + cmp_rule, ResultRule::Bool);

  const std::string logic_rule = " Bool tensors (broadcast) or bool scalars; two scalars give a bool.";
  r.add(TENSORVM_OP("logical_and", logical<Logic::land>), "elementwise", binary_params(), {"Any"},
        "x and y, elementwise." + logic_rule, ResultRule::Bool);
  r.add(TENSORVM_OP("logical_or", logical<Logic::lor>), "elementwise", binary_params(), {"Any"},
        "x or y, elementwise." + logic_rule, ResultRule::Bool);
  r.add(TENSORVM_OP("logical_xor", logical<Logic::lxor>), "elementwise", binary_params(), {"Any"},
        "x != y for bools, elementwise." + logic_rule, ResultRule::Bool);
  r.add(TENSORVM_OP("logical_not", logical_not), "elementwise", {p_scalar_or_tensor("x")}, {"Any"},
        "not x: a bool tensor (same shape) or a bool scalar.", ResultRule::Bool);

  register_elementwise_unary_ops(r);
  register_elementwise_select_ops(r);
}

}  // namespace ops
