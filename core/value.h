// Value: what a register holds. Tensors, scalars, strings, int lists (shapes),
// tuples (multiple returns) and objects (stateful values such as a KV cache, mutated
// in place by their ops, which return the same handle so effects are ordered by SSA).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/tensor.h"

namespace vm {

// Base of every stateful value. Subclasses name their type; the IR uses that name in
// parameter annotations and ops check it before downcasting.
class Object : public RefCounted {
 public:
  virtual std::string_view type_name() const = 0;
  virtual std::string describe() const { return std::string(type_name()); }
};

// A short list of ints held inline (shapes, permutations): building one at run time
// from registers costs no allocation.
struct Ints {
  int n = 0;
  int64_t v[kMaxDims] = {};
  const int64_t* begin() const { return v; }
  const int64_t* end() const { return v + n; }
  int size() const { return n; }
  int64_t operator[](int i) const { return v[i]; }
  void push_back(int64_t x);
  Shape shape() const { return Shape(begin(), end()); }
};

class Value;
using Tuple = std::vector<Value>;

class Value {
 public:
  // The order matches the variant below.
  enum class Kind : uint8_t { None, Int, Float, Bool, Str, Tensor, Ints, Tuple, Object };

  Value() = default;
  Value(Tensor t) : v_(std::move(t)) {}  // NOLINT: a tensor is a value
  Value(Ref<Object> o) : v_(std::move(o)) {}  // NOLINT
  static Value none() { return Value(); }
  static Value from_int(int64_t i) { Value v; v.v_ = i; return v; }
  static Value from_float(double f) { Value v; v.v_ = f; return v; }
  static Value from_bool(bool b) { Value v; v.v_ = b; return v; }
  static Value from_str(std::string s) { Value v; v.v_ = std::make_shared<const std::string>(std::move(s)); return v; }
  static Value from_ints(const Ints& is) { Value v; v.v_ = is; return v; }
  static Value from_tuple(Tuple t) { Value v; v.v_ = std::make_shared<const Tuple>(std::move(t)); return v; }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_none() const { return kind() == Kind::None; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_str() const { return kind() == Kind::Str; }
  bool is_tensor() const { return kind() == Kind::Tensor; }
  bool is_ints() const { return kind() == Kind::Ints; }
  bool is_tuple() const { return kind() == Kind::Tuple; }
  bool is_object() const { return kind() == Kind::Object; }
  bool is_scalar() const { return is_int() || is_float() || is_bool(); }

  // Accessors throw vm::Error naming what was expected and what was found.
  int64_t as_int() const;
  double as_float() const;  // accepts an int too
  bool as_bool() const;
  const std::string& as_str() const;
  const Tensor& as_tensor() const;
  const Ints& as_ints_raw() const;
  Ints as_ints() const;  // accepts Ints, an Int (a 1-list) or a tuple of ints
  const Tuple& as_tuple() const;
  const Ref<Object>& as_object() const;

  // "None", "int 3", "tensor f32[2, 3]", "KVCache", ...
  std::string describe() const;
  static std::string_view kind_name(Kind k);

  // Cheap unchecked access for hot paths that checked kind() already.
  const Tensor& tensor_unchecked() const { return std::get<Tensor>(v_); }

 private:
  std::variant<std::monostate, int64_t, double, bool, std::shared_ptr<const std::string>, Tensor, Ints,
               std::shared_ptr<const Tuple>, Ref<Object>>
      v_;
};

}  // namespace vm
