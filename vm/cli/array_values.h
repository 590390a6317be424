// tensorvm-run's arrays (ir/array_file.h: .npz or .safetensors) as VM values and back:
// shared by running a function (tensorvm_run.cpp) and checking a bundle (verify.cpp).
#pragma once

#include <string>

#include "ir/npz.h"
#include "vm/vm.h"

namespace cli {

// The dtype of a tensor array in safetensors spelling; `what` names it in errors.
vm::DType dtype_from_name(const std::string& s, const std::string& what);
std::string safetensors_dtype(vm::DType t);

// The value of a parameter declared `type` from an array: a tensor for Tensor, Tensor?
// and a shaped Any; otherwise a 0-d array read as an int, float or bool.
vm::Value value_from_array(const ir::ArrayData& a, const std::string& type, const std::string& what);

}  // namespace cli
