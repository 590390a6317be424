// An app's own ops: register an op (name, signature, output types, doc, kernel) that
// programs can call, or replace the kernel of any op, built-in or not (an accelerator,
// a vendor library). docs/runtime.md, "Embedding on a device", has a worked example.
//
//   vm::CustomOp op;
//   op.name = "scale_shift";
//   op.params = {ops::p_tensor("x"), ops::p_float("scale"), ops::p_float("shift", 0.0)};
//   op.outputs = {"Tensor"};
//   op.doc = "x * scale + shift, elementwise.";
//   op.kernel = [](ops::OpContext& ctx, const ops::Args& args, vm::Value* outs) { ... };
//   vm::register_op(op);
//   auto program = vm::Program::load("model.tvm");   // may now call scale_shift(...)
//
// Rules:
//  - Register before Program::load (or from_text, from_memory) of a program that calls
//    the op: the loader binds each call to the op's definition once. A program loaded
//    earlier keeps what it bound; re-registering or replacing a kernel affects programs
//    loaded afterwards and eager calls (ops::call, Python's tensorvm.ops) from then on.
//  - The calls are thread-safe, but registering while another thread loads the program
//    that needs the op is a race the app must order itself.
//  - Definitions are never freed (programs point at them); an app registers a handful.
//  - A kernel reads its arguments through ops::Args (args.tensor(0), args.f64(1), ...,
//    which throw vm::Error naming the argument on a wrong type), allocates its outputs
//    with ctx.empty(dtype, shape) and writes one Value per declared output into outs.
//    Tensor arguments arrive contiguous unless the Param says strided_ok. A kernel
//    reports bad input by throwing vm::Error (vm::fail); the VM adds the function, line
//    and op. It must not keep pointers to its arguments past the call.
//  - A plain function (or a captureless lambda with a leading +) is called directly, as
//    the built-in kernels are; any other callable (one with state) costs one more
//    indirect call per instruction.
#pragma once

#include <string>
#include <vector>

#include "ops/registry.h"

namespace vm {

struct CustomOp {
  std::string name;                    // what the IR calls: my_op(...)
  std::vector<ops::Param> params;      // ops::p_tensor("x"), ops::p_float("alpha", 1.0), ...
  std::vector<std::string> outputs = {"Tensor"};  // one type per result: "Tensor", "int", "float", "bool", "Any", ...
  std::string doc;
  std::string group = "custom";        // its section in `tensorvm ops`
  ops::KernelFunction kernel;          // required
};

// Publishes `op`. A name already registered (built-in or custom) is an error unless
// `replace`; a name the IR cannot call, a missing kernel, no outputs, two parameters
// of one name or a default of the wrong kind are errors too. Throws vm::Error.
const ops::OpDef& register_op(CustomOp op, bool replace = false);

// Gives op `name` a new kernel, keeping its signature; returns the kernel it had, so
// that the app can call through to it or put it back:
//   auto builtin = vm::replace_kernel("relu", my_relu);  ...  vm::replace_kernel("relu", builtin);
// Throws vm::Error for an unknown op or an empty kernel.
ops::KernelFunction replace_kernel(const std::string& name, ops::KernelFunction kernel);

// The op's current definition, or nullptr.
const ops::OpDef* find_op(const std::string& name);

}  // namespace vm
