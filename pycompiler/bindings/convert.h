// numpy/Python <-> vm::Value. Tensors cross without copies when dtype and layout
// allow: a numpy input is wrapped (the array kept alive by the buffer), a tensor
// output becomes an array that holds a reference to the tensor's buffer (read-only
// when that buffer is a program's weight).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "core/value.h"
#include "vm/program.h"

namespace tvm_py {

namespace py = pybind11;

vm::Value to_value(const py::handle& obj);
py::object from_value(const vm::Value& v);
vm::Tensor to_tensor(const py::array& arr);
// The tensor dtype of a numpy dtype, or a vm::Error naming the ones tensorvm takes.
vm::DType dtype_from_numpy(const py::dtype& dt);
py::array from_tensor(const vm::Tensor& t);

// An instruction's kind as Python sees it: "op" (a kernel), "call", "while_loop", "cond",
// "emit", "param" (indexed) or "return".
const char* kind_name(vm::Instr::Kind k);

// Python-side handle of a vm::Object (KV cache, ...): opaque, passed back to ops.
struct PyObjectHandle {
  vm::Ref<vm::Object> obj;
};

}  // namespace tvm_py
