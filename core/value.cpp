#include "core/value.h"

#include <fmt/format.h>

namespace vm {

void Ints::push_back(int64_t x) {
  if (n == kMaxDims) fail("int lists hold at most {} items", kMaxDims);
  v[n++] = x;
}

std::string_view Value::kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Bool: return "bool";
    case Kind::Str: return "str";
    case Kind::Tensor: return "tensor";
    case Kind::Ints: return "int list";
    case Kind::Tuple: return "tuple";
    case Kind::Object: return "object";
  }
  return "?";
}

std::string Value::describe() const {
  switch (kind()) {
    case Kind::None: return "None";
    case Kind::Int: return fmt::format("int {}", std::get<int64_t>(v_));
    case Kind::Float: return fmt::format("float {}", std::get<double>(v_));
    case Kind::Bool: return std::get<bool>(v_) ? "bool True" : "bool False";
    case Kind::Str: return fmt::format("str \"{}\"", *std::get<std::shared_ptr<const std::string>>(v_));
    case Kind::Tensor: return "tensor " + std::get<Tensor>(v_).describe();
    case Kind::Ints: {
      const Ints& is = std::get<Ints>(v_);
      return fmt::format("int list [{}]", fmt::join(is.begin(), is.end(), ", "));
    }
    case Kind::Tuple: return fmt::format("tuple of {}", std::get<std::shared_ptr<const Tuple>>(v_)->size());
    case Kind::Object: return std::get<Ref<Object>>(v_)->describe();
  }
  return "?";
}

#define TVM_EXPECT(cond, what) \
  if (!(cond)) fail("expected {}, got {}", what, describe())

int64_t Value::as_int() const {
  TVM_EXPECT(is_int(), "an int");
  return std::get<int64_t>(v_);
}

double Value::as_float() const {
  if (is_int()) return double(std::get<int64_t>(v_));
  TVM_EXPECT(is_float(), "a float");
  return std::get<double>(v_);
}

bool Value::as_bool() const {
  TVM_EXPECT(is_bool(), "a bool");
  return std::get<bool>(v_);
}

const std::string& Value::as_str() const {
  TVM_EXPECT(is_str(), "a str");
  return *std::get<std::shared_ptr<const std::string>>(v_);
}

const Tensor& Value::as_tensor() const {
  TVM_EXPECT(is_tensor(), "a tensor");
  return std::get<Tensor>(v_);
}

const Ints& Value::as_ints_raw() const {
  TVM_EXPECT(is_ints(), "an int list");
  return std::get<Ints>(v_);
}

Ints Value::as_ints() const {
  if (is_ints()) return std::get<Ints>(v_);
  Ints out;
  if (is_int()) {
    out.push_back(std::get<int64_t>(v_));
    return out;
  }
  if (is_tuple()) {
    for (const Value& v : as_tuple()) {
      if (!v.is_int()) fail("expected an int list, got a tuple holding {}", v.describe());
      out.push_back(v.as_int());
    }
    return out;
  }
  fail("expected an int list, got {}", describe());
}

const Tuple& Value::as_tuple() const {
  TVM_EXPECT(is_tuple(), "a tuple");
  return *std::get<std::shared_ptr<const Tuple>>(v_);
}

const Ref<Object>& Value::as_object() const {
  TVM_EXPECT(is_object(), "an object");
  return std::get<Ref<Object>>(v_);
}

#undef TVM_EXPECT

}  // namespace vm
