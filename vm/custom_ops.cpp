#include "vm/custom_ops.h"

namespace vm {

const ops::OpDef& register_op(CustomOp op, bool replace) {
  ops::OpDef def;
  def.name = std::move(op.name);
  def.group = std::move(op.group);
  def.params = std::move(op.params);
  def.outputs = std::move(op.outputs);
  def.doc = std::move(op.doc);
  def.function = std::move(op.kernel);
  // The tracer types an app's "Any" output as arithmetic does (tensor in, tensor out).
  for (const std::string& o : def.outputs)
    if (o == "Any") def.result = ops::ResultRule::Promote;
  return ops::Registry::register_op(std::move(def), replace);
}

ops::KernelFunction replace_kernel(const std::string& name, ops::KernelFunction kernel) {
  return ops::Registry::replace_kernel(name, std::move(kernel));
}

const ops::OpDef* find_op(const std::string& name) { return ops::Registry::get().find(name); }

}  // namespace vm
