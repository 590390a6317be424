// App-registered ops (vm/custom_ops.h): a C++ op registered and called by a program,
// kernels with state, replacing a built-in kernel and putting it back, and the errors.
// Names are unique per test: the registry is one per process.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>

#include "test_helpers.h"
#include "vm/custom_ops.h"
#include "vm/vm.h"

using test_helpers::error_of;
using vm::Tensor;
using vm::Value;

namespace {

Tensor vec(std::initializer_list<float> xs) {
  Tensor t = Tensor::empty(vm::DType::f32, {int64_t(xs.size())});
  int i = 0;
  for (float x : xs) t.data<float>()[i++] = x;
  return t;
}

void affine(ops::OpContext& ctx, const ops::Args& args, Value* outs) {
  const Tensor& x = args.tensor(0);
  const double a = args.f64(1), b = args.f64(2);
  Tensor y = ctx.empty(vm::DType::f32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = float(x.data<float>()[i] * a + b);
  outs[0] = Value(y);
}

vm::CustomOp affine_op(const std::string& name) {
  vm::CustomOp op;
  op.name = name;
  op.params = {ops::p_tensor("x"), ops::p_float("a"), ops::p_float("b", 0.0)};
  op.doc = "x * a + b";
  op.kernel = affine;
  return op;
}

std::shared_ptr<const vm::Program> program(const std::string& body) {
  return vm::Program::from_text("# tensorvm ir 1\n" + body, "");
}

}  // namespace

TEST_CASE("a C++ op registered by the app is called by a program", "[custom_ops]") {
  const ops::OpDef& def = vm::register_op(affine_op("test_affine"));
  CHECK(def.signature() == "test_affine(x: Tensor, a: float, b: float = 0) -> Tensor");
  CHECK(def.kernel == &affine);  // a plain function stays a direct call
  CHECK(vm::find_op("test_affine") == &def);
  auto p = program(R"(def f(x: Tensor) -> Tensor:
    y = test_affine(x, 2.0, b=1.0)
    z = test_affine(y, 3)
    return z
)");
  vm::Session s(p);
  Tensor z = vm::run(s, "f", {Value(vec({1, 2}))})[0].as_tensor();
  CHECK(z.data<float>()[0] == 9.0f);
  CHECK(z.data<float>()[1] == 15.0f);
  // It is in the registry like any op (what `tensorvm ops` and the Python side list).
  bool listed = false;
  for (const ops::OpDef* op : ops::Registry::get().all()) listed = listed || op->name == "test_affine";
  CHECK(listed);
}

TEST_CASE("a kernel with state, and an error it raises names the op and line", "[custom_ops]") {
  auto calls = std::make_shared<std::atomic<int>>(0);
  vm::CustomOp op;
  op.name = "test_counted";
  op.params = {ops::p_tensor("x")};
  op.kernel = [calls](ops::OpContext&, const ops::Args& args, Value* outs) {
    ++*calls;
    if (args.tensor(0).numel() == 0) vm::fail("x is empty");
    outs[0] = args[0];
  };
  vm::register_op(op);
  auto p = program(R"(def f(x: Tensor) -> Tensor:
    y = test_counted(x)
    return y
)");
  vm::Session s(p);
  vm::run(s, "f", {Value(vec({1}))});
  vm::run(s, "f", {Value(vec({1}))});
  CHECK(*calls == 2);
  const std::string e = error_of([&] { vm::run(s, "f", {Value(Tensor::empty(vm::DType::f32, {0}))}); });
  CHECK(e.find("test_counted") != std::string::npos);
  CHECK(e.find("x is empty") != std::string::npos);
  CHECK(e.find(":3") != std::string::npos);  // the line of the call
}

TEST_CASE("replacing a built-in kernel, calling through to it, and restoring it", "[custom_ops]") {
  static std::atomic<int> relu_calls{0};
  static ops::KernelFunction builtin;
  const ops::Kernel original = vm::find_op("relu")->kernel;
  builtin = vm::replace_kernel("relu", +[](ops::OpContext& ctx, const ops::Args& args, Value* outs) {
    ++relu_calls;
    builtin(ctx, args, outs);
  });
  const char* text = R"(def f(x: Tensor) -> Tensor:
    y = relu(x)
    z = relu(y)
    return z
)";
  auto replaced = program(text);
  vm::Session s(replaced);
  Tensor z = vm::run(s, "f", {Value(vec({-1, 2}))})[0].as_tensor();
  CHECK(z.data<float>()[0] == 0.0f);
  CHECK(z.data<float>()[1] == 2.0f);
  CHECK(relu_calls == 2);
  // Eager calls see the replacement too.
  ops::OpContext ctx;
  ops::call(*vm::find_op("relu"), {Value(vec({1}))}, {}, ctx);
  CHECK(relu_calls == 3);

  vm::replace_kernel("relu", builtin);
  CHECK(vm::find_op("relu")->kernel == original);  // restored as the same direct call
  auto restored = program(text);
  vm::Session s2(restored);
  vm::run(s2, "f", {Value(vec({-1, 2}))});
  CHECK(relu_calls == 3);
  // A program loaded before keeps the kernel it bound.
  vm::run(s, "f", {Value(vec({-1, 2}))});
  CHECK(relu_calls == 5);
}

TEST_CASE("re-registering with replace publishes a new definition; old programs keep theirs", "[custom_ops]") {
  vm::register_op(affine_op("test_affine_v"));
  auto before = program("def f(x: Tensor) -> Tensor:\n    y = test_affine_v(x, 2.0)\n    return y\n");
  vm::CustomOp v2;
  v2.name = "test_affine_v";
  v2.params = {ops::p_tensor("x")};
  v2.kernel = [](ops::OpContext&, const ops::Args& args, Value* outs) { outs[0] = args[0]; };
  CHECK(error_of([&] { vm::register_op(v2); }).find("already registered") != std::string::npos);
  vm::register_op(v2, /*replace=*/true);
  vm::Session s(before);
  CHECK(vm::run(s, "f", {Value(vec({3}))})[0].as_tensor().data<float>()[0] == 6.0f);
  auto after = program("def f(x: Tensor) -> Tensor:\n    y = test_affine_v(x)\n    return y\n");
  vm::Session s2(after);
  CHECK(vm::run(s2, "f", {Value(vec({3}))})[0].as_tensor().data<float>()[0] == 3.0f);
}

TEST_CASE("an op with many outputs delivers each of them", "[custom_ops]") {
  // Eight results: the interpreter collected them in a fixed array of four, so a kernel
  // declaring more wrote past it (issue 25).
  constexpr int kOutputs = 8;
  vm::CustomOp op;
  op.name = "test_many_outputs";
  op.params = {ops::p_int("base")};
  op.outputs.assign(kOutputs, "int");
  op.kernel = [](ops::OpContext&, const ops::Args& args, Value* outs) {
    for (int i = 0; i < kOutputs; ++i) outs[i] = Value::from_int(args.i64(0) + i);
  };
  vm::register_op(op);
  auto p = program(R"(def f(b: int) -> tuple[int, int, int, int, int, int, int, int]:
    a0, a1, a2, a3, a4, a5, a6, a7 = test_many_outputs(b)
    return a0, a1, a2, a3, a4, a5, a6, a7
)");
  vm::Session s(p);
  for (int run = 0; run < 3; ++run) {
    const auto out = vm::run(s, "f", {Value::from_int(100 * run)});
    REQUIRE(out.size() == size_t(kOutputs));
    for (int i = 0; i < kOutputs; ++i) CHECK(out[size_t(i)].as_int() == 100 * run + i);
  }
}

TEST_CASE("registration errors", "[custom_ops]") {
  auto reg = [](vm::CustomOp op) { return error_of([&] { vm::register_op(std::move(op)); }); };
  CHECK(reg(affine_op("relu")).find("'relu' is already registered") != std::string::npos);
  vm::CustomOp no_kernel = affine_op("test_no_kernel");
  no_kernel.kernel = nullptr;
  CHECK(reg(no_kernel).find("op 'test_no_kernel' needs a kernel") != std::string::npos);
  vm::CustomOp null_fn = affine_op("test_null_fn");
  null_fn.kernel = ops::Kernel(nullptr);
  CHECK(reg(null_fn).find("needs a kernel") != std::string::npos);
  CHECK(reg(affine_op("while_loop")).find("reserves") != std::string::npos);
  CHECK(reg(affine_op("bad name")).find("not a name the IR can call") != std::string::npos);
  CHECK(reg(affine_op("")).find("not a name the IR can call") != std::string::npos);
  vm::CustomOp no_out = affine_op("test_no_out");
  no_out.outputs.clear();
  CHECK(reg(no_out).find("at least one output") != std::string::npos);
  vm::CustomOp twice = affine_op("test_twice");
  twice.params.push_back(ops::p_tensor("x"));
  CHECK(reg(twice).find("two parameters named 'x'") != std::string::npos);
  vm::CustomOp bad_default = affine_op("test_bad_default");
  bad_default.params.push_back(ops::p_str("mode"));
  bad_default.params.back().has_default = true;
  bad_default.params.back().default_value = Value::from_int(1);
  CHECK(reg(bad_default).find("the default of 'mode' is not a str") != std::string::npos);
  CHECK(vm::find_op("test_no_kernel") == nullptr);  // nothing half-registered
  CHECK(error_of([] { vm::replace_kernel("no_such_op", ops::Kernel(&affine)); }).find("no op named 'no_such_op'") !=
        std::string::npos);
  CHECK(error_of([] { vm::replace_kernel("relu", nullptr); }).find("needs a kernel") != std::string::npos);
  // A program calling an op nobody registered: the error says how to register one.
  const std::string e = error_of([] { program("def f(x: Tensor) -> Tensor:\n    y = test_unregistered(x)\n    return y\n"); });
  CHECK(e.find("unknown op or function 'test_unregistered'") != std::string::npos);
  CHECK(e.find("vm::register_op") != std::string::npos);
}

// The example of docs/runtime.md ("Embedding on a device"), compiled and run here.
#define main embed_custom_op_example_main
#include "../../examples/embed/custom_op.cpp"
#undef main

TEST_CASE("the custom-op example of docs/runtime.md runs", "[custom_ops]") {
  CHECK(embed_custom_op_example_main() == 0);
  CHECK(test_helpers::source_file("docs/runtime.md").find(test_helpers::source_file("examples/embed/custom_op.cpp")) !=
        std::string::npos);
}
