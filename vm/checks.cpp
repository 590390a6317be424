#include "vm/checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace vm {

bool truthy(const Value& v, std::string_view fn) {
  if (v.is_bool()) return v.as_bool();
  if (v.is_tensor()) {
    const Tensor& t = v.tensor_unchecked();
    if (t.dtype() == DType::boolean && t.numel() == 1) return *static_cast<const uint8_t*>(t.raw()) != 0;
  }
  fail("'{}' must return a bool or a one-element bool tensor, got {}", fn, v.describe());
}

void fail_budget(uint64_t max_instructions, std::string_view body) {
  fail("while_loop: the run used up its budget of {} instructions (max_instructions) in loop '{}'; is the loop endless?",
       max_instructions, body);
}

bool type_matches(const std::string& type, const Value& v) {
  if (type == "Any") return true;
  if (type == "Tensor") return v.is_tensor();
  if (type == "int") return v.is_int();
  if (type == "float") return v.is_float() || v.is_int();
  if (type == "bool") return v.is_bool();
  if (type == "str") return v.is_str();
  if (type == "ints") return v.is_ints();
  if (type == "None") return v.is_none();
  return v.is_object() && v.as_object()->type_name() == type;
}

void check_inputs(const std::string& fn, const std::vector<std::string>& param_names,
                  const std::vector<std::string>& param_types, const std::vector<Value>& inputs) {
  if (inputs.size() != param_names.size())
    fail("{} takes {} input{} ({}), got {}", fn, param_names.size(), param_names.size() == 1 ? "" : "s",
         fmt::join(param_names, ", "), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!type_matches(param_types[i], inputs[i]))
      fail("{}: input '{}' must be {}, got {}", fn, param_names[i], param_types[i], inputs[i].describe());
}

}  // namespace vm
