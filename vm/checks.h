// The checks a run makes on values, shared by the interpreter and by compiled
// programs (vm/aot.h), so both accept the same inputs and fail with the same words.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/value.h"

namespace vm {

// A while_loop condition's or a cond predicate's value: a bool or a one-element bool
// tensor. Anything else fails naming `fn`, the function that produced it.
bool truthy(const Value& v, std::string_view fn);

// A while_loop about to run `body` again after its run used up max_instructions.
[[noreturn]] void fail_budget(uint64_t max_instructions, std::string_view body);

// Whether `v` may be passed for a parameter declared `type` ("Tensor", "int", "Any",
// an object type name, ...).
bool type_matches(const std::string& type, const Value& v);

// The arity and declared types of a run's inputs; fails naming the function and the input.
void check_inputs(const std::string& fn, const std::vector<std::string>& param_names,
                  const std::vector<std::string>& param_types, const std::vector<Value>& inputs);

}  // namespace vm
