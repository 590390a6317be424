// An app's own op, and a built-in op's kernel replaced (docs/runtime.md, "Embedding on a device").
#include <cstdio>

#include "vm/custom_ops.h"
#include "vm/vm.h"

// clamp_scale(x, lo, hi, scale) = min(max(x, lo), hi) * scale, on f32 tensors.
static void clamp_scale(ops::OpContext& ctx, const ops::Args& args, vm::Value* outs) {
  const vm::Tensor& x = args.tensor(0);
  if (x.dtype() != vm::DType::f32) vm::fail("x must be f32, got {}", vm::dtype_name(x.dtype()));
  const float lo = float(args.f64(1)), hi = float(args.f64(2)), scale = float(args.f64(3));
  vm::Tensor y = ctx.empty(vm::DType::f32, x.shape());
  const float* in = x.data<float>();
  float* out = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = (in[i] < lo ? lo : in[i] > hi ? hi : in[i]) * scale;
  outs[0] = vm::Value(y);
}

int main() {
  vm::CustomOp op;
  op.name = "clamp_scale";
  op.params = {ops::p_tensor("x"), ops::p_float("lo"), ops::p_float("hi"), ops::p_float("scale", 1.0)};
  op.outputs = {"Tensor"};
  op.doc = "min(max(x, lo), hi) * scale (f32).";
  op.kernel = clamp_scale;
  vm::register_op(op);  // before loading a program that calls it

  // Count relu's calls, then run the built-in kernel: a vendor library would go here.
  static int relu_calls = 0;
  static ops::KernelFunction builtin_relu;
  builtin_relu = vm::replace_kernel("relu", +[](ops::OpContext& ctx, const ops::Args& args, vm::Value* outs) {
    ++relu_calls;
    builtin_relu(ctx, args, outs);
  });

  auto program = vm::Program::from_text(R"(# tensorvm ir 1
def f(x: Tensor) -> Tensor:
    y = clamp_scale(x, -1.0, 1.0, scale=2.0)
    z = relu(y)
    return z
)", "");
  vm::Session session(program);
  vm::Tensor x = vm::Tensor::empty(vm::DType::f32, {4});
  const float in[4] = {-3.0f, -0.5f, 0.25f, 5.0f};
  for (int i = 0; i < 4; ++i) x.data<float>()[i] = in[i];
  vm::Tensor z = vm::run(session, "f", {vm::Value(x)})[0].as_tensor();
  for (int i = 0; i < 4; ++i) std::printf("%g ", z.data<float>()[i]);  // 0 0 0.5 2
  std::printf("(relu ran %d time)\n", relu_calls);

  vm::replace_kernel("relu", builtin_relu);  // programs loaded from now on use the built-in again
  return relu_calls == 1 ? 0 : 1;
}
