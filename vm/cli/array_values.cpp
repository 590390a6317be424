#include "vm/cli/array_values.h"

#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cli {

namespace {

// A 0-d array for a scalar parameter (np.array(7) for an int, np.array(0.5) for a float).
vm::Value scalar_from_array(const ir::ArrayData& a, const std::string& type, const std::string& what) {
  if (!a.shape.empty())
    vm::fail("{} is declared {}: give a 0-d array, got shape [{}]", what, type, fmt::join(a.shape, ", "));
  auto as = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, a.data.data(), sizeof v);
    return v;
  };
  const bool integral = a.dtype == "I64" || a.dtype == "I32" || a.dtype == "I8";
  const int64_t i = a.dtype == "I64" ? as(int64_t{}) : a.dtype == "I32" ? as(int32_t{}) : a.dtype == "I8" ? as(int8_t{}) : 0;
  if ((type == "int" || type == "Any") && integral) return vm::Value::from_int(i);
  if (type == "float" || type == "Any") {
    if (a.dtype == "F32") return vm::Value::from_float(as(float{}));
    if (a.dtype == "F64") return vm::Value::from_float(as(double{}));
    if (integral && type == "float") return vm::Value::from_float(double(i));
  }
  if ((type == "bool" || type == "Any") && a.dtype == "BOOL") return vm::Value::from_bool(a.data[0] != 0);
  vm::fail("{} is declared {}, got a 0-d {} array", what, type, a.dtype);
}

}  // namespace

vm::DType dtype_from_name(const std::string& s, const std::string& what) {
  if (s == "F32") return vm::DType::f32;
  if (s == "I64") return vm::DType::i64;
  if (s == "I32") return vm::DType::i32;
  if (s == "BOOL") return vm::DType::boolean;
  if (s == "I8") return vm::DType::i8;
  vm::fail("{}: tensors must be float32, int64, int32, bool or int8, got {}", what, s);
}

std::string safetensors_dtype(vm::DType t) {
  switch (t) {
    case vm::DType::f32: return "F32";
    case vm::DType::i64: return "I64";
    case vm::DType::i32: return "I32";
    case vm::DType::boolean: return "BOOL";
    case vm::DType::i8: return "I8";
  }
  return "?";
}

vm::Value value_from_array(const ir::ArrayData& a, const std::string& type, const std::string& what) {
  if (type == "Tensor" || type == "Tensor?" || (type == "Any" && !a.shape.empty())) {
    vm::Tensor t = vm::Tensor::empty(dtype_from_name(a.dtype, what), vm::Shape(a.shape.begin(), a.shape.end()));
    std::memcpy(t.raw(), a.data.data(), a.data.size());
    return vm::Value(t);
  }
  return scalar_from_array(a, type, what);
}

}  // namespace cli
