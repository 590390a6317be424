// The loader and interpreter: results, control flow, weights, and every kind of bad
// input giving an error that names the file, line, function and op.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <functional>
#include <thread>
#include <fstream>
#include <string>

#include "io/safetensors.h"
#include "vm/vm.h"
#include "test_helpers.h"

using vm::Tensor;
using vm::Value;
using test_helpers::error_of;

namespace {

Tensor filled(vm::Shape shape, float start) {
  Tensor t = Tensor::empty(vm::DType::f32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + float(i);
  return t;
}

std::shared_ptr<const vm::Program> program(const std::string& body, const std::string& weights = "") {
  return vm::Program::from_text("# tensorvm ir 1\n" + body, weights);
}

std::string temp_path(const std::string& name) { return std::string("/tmp/tensorvm_test_vm_") + name; }

std::string write_weights(const std::string& name) {
  static float w0[6] = {1, 0, 0, 0, 1, 0};
  static float w1[6] = {0, 1, 0, 0, 0, 1};
  std::string path = temp_path(name);
  io::write_safetensors(path, {{"layers.0.w", "F32", {2, 3}, w0, sizeof(w0)}, {"layers.1.w", "F32", {2, 3}, w1, sizeof(w1)}});
  return path;
}

const char* kLinear = R"(def f(x: Tensor, w: Tensor) -> Tensor:
    y = linear(x, w)
    return y
)";

}  // namespace

TEST_CASE("a program runs and returns what its ops compute", "[vm]") {
  vm::Session s(program(kLinear));
  Tensor x = filled({1, 3}, 1);  // [1, 2, 3]
  Tensor w = filled({2, 3}, 0);  // [[0, 1, 2], [3, 4, 5]]
  auto out = vm::run(s, "f", {Value(x), Value(w)});
  REQUIRE(out.size() == 1);
  const Tensor& y = out[0].as_tensor();
  REQUIRE(y.shape() == vm::Shape({1, 2}));
  CHECK(y.data<float>()[0] == 8.0f);
  CHECK(y.data<float>()[1] == 26.0f);
}

TEST_CASE("calls, multiple returns and tuple packing", "[vm]") {
  auto p = program(std::string(kLinear) + R"(
def g(x: Tensor, w: Tensor) -> tuple[Tensor, Tensor]:
    a = f(x, w)
    b = f(x, w=w)
    return a, b

def h(x: Tensor, w: Tensor) -> Tensor:
    t = g(x, w)
    a, b = g(x, w)
    return a
)");
  vm::Session s(p);
  auto out = vm::run(s, "h", {Value(filled({1, 3}, 1)), Value(filled({2, 3}, 0))});
  CHECK(out[0].as_tensor().data<float>()[1] == 26.0f);
  auto both = vm::run(s, "g", {Value(filled({1, 3}, 1)), Value(filled({2, 3}, 0))});
  REQUIRE(both.size() == 2);
}

TEST_CASE("while_loop and cond run their functions", "[vm]") {
  auto p = program(R"(def lt_limit(i: int, acc: int, limit: int) -> bool:
    c = lt(i, limit)
    return c

def step(i: int, acc: int, limit: int) -> tuple[int, int, int]:
    j = add(i, 1)
    a = add(acc, i)
    return j, a, limit

def sum_below(limit: int) -> int:
    i, acc, l = while_loop(lt_limit, step, 0, 0, limit)
    return acc

def double(x: int) -> int:
    y = mul(x, 2)
    return y

def negate(x: int) -> int:
    y = neg(x)
    return y

def pick(p: bool, x: int) -> int:
    y = cond(p, double, negate, x)
    return y
)");
  vm::Session s(p);
  CHECK(vm::run(s, "sum_below", {Value::from_int(10)})[0].as_int() == 45);
  CHECK(vm::run(s, "sum_below", {Value::from_int(0)})[0].as_int() == 0);
  CHECK(vm::run(s, "pick", {Value::from_bool(true), Value::from_int(5)})[0].as_int() == 10);
  CHECK(vm::run(s, "pick", {Value::from_bool(false), Value::from_int(5)})[0].as_int() == -5);
}

TEST_CASE("weights: by name, by template and index, zero-copy", "[vm]") {
  std::string wpath = write_weights("weights.safetensors");
  auto p = program(R"(def by_name(x: Tensor) -> Tensor:
    w = param("layers.1.w")
    y = linear(x, w)
    return y

def by_index(x: Tensor, i: int) -> Tensor:
    w = param("layers.{}.w", i)
    y = linear(x, w)
    return y
)", wpath);
  vm::Session s(p);
  Tensor x = filled({1, 3}, 1);
  auto a = vm::run(s, "by_name", {Value(x)})[0].as_tensor();
  CHECK(a.data<float>()[0] == 2.0f);
  CHECK(a.data<float>()[1] == 3.0f);
  auto b = vm::run(s, "by_index", {Value(x), Value::from_int(0)})[0].as_tensor();
  CHECK(b.data<float>()[0] == 1.0f);
  CHECK(p->weight_bytes() == 48);
  std::string err = error_of([&] { vm::run(s, "by_index", {Value(x), Value::from_int(2)}); });
  CHECK_THAT(err, Catch::Contains("no weight 'layers.{}.w' for index 2"));
  CHECK_THAT(err, Catch::Contains("in by_index: w = param(\"layers.{}.w\", i)"));
}

TEST_CASE("load errors name the file, the line and the problem", "[vm][errors]") {
  CHECK_THAT(error_of([] { program("def f(x: Tensor) -> Tensor:\n    y = frobnicate(x)\n    return y\n"); }),
             Catch::Contains("program.py:3: unknown op or function 'frobnicate'"));
  CHECK_THAT(error_of([] { program("def f(x: Tensor) -> Tensor:\n    y = linear(x, x, x, x)\n    return y\n"); }),
             Catch::Contains("program.py:3: linear: takes at most 3 positional arguments, got 4"));
  CHECK_THAT(error_of([] { program("def f(x: Tensor) -> Tensor:\n    y = linear(x, x, bias=3)\n    return y\n"); }),
             Catch::Contains("argument 'bias' must be Tensor?, got int 3"));
  CHECK_THAT(error_of([] { program("def f(x: Tensor) -> Tensor:\n    y = linear(x, x, bais=x)\n    return y\n"); }),
             Catch::Contains("unknown keyword argument 'bais'"));
  CHECK_THAT(error_of([] { program("def f(x: Tensor) -> Tensor:\n    y = linear(x)\n    return y\n"); }),
             Catch::Contains("missing required argument 'weight'"));
  CHECK_THAT(error_of([] { program("def f(x: Tensor) -> Tensor:\n    a, b = linear(x, x)\n    return a\n"); }),
             Catch::Contains("linear returns 1 value, but 2 names are bound"));
  CHECK_THAT(error_of([] { program("def f(x: Tensor) -> Tensor:\n    y = param(\"nope\")\n    return y\n"); }),
             Catch::Contains("no weight named 'nope'"));
  CHECK_THAT(error_of([] { program("def f(x: Tensor) -> Tensor:\n    return x, x\n"); }),
             Catch::Contains("declared to return 1 value, this returns 2"));
  CHECK_THAT(error_of([] { program("def f(x: Tensor) -> Tensor:\n    y = linear(x x)\n"); }), Catch::Contains("program.py:3:"));
  CHECK_THAT(error_of([] { program("def linear(x: Tensor) -> Tensor:\n    return x\n"); }),
             Catch::Contains("has the name of an op"));
  CHECK_THAT(error_of([] { vm::Program::load("/nonexistent/dir"); }), Catch::Contains("not a tensorvm program"));
}

TEST_CASE("a truncated or corrupt weights file is a load error", "[vm][errors]") {
  std::string good = write_weights("good.safetensors");
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string bad = temp_path("truncated.safetensors");
  std::ofstream(bad, std::ios::binary) << bytes.substr(0, bytes.size() - 8);
  CHECK_THAT(error_of([&] { program(kLinear, bad); }), Catch::Contains("truncated.safetensors"));
  std::ofstream(bad, std::ios::binary) << "garbage";
  CHECK_THAT(error_of([&] { program(kLinear, bad); }), Catch::Contains("truncated.safetensors"));
}

TEST_CASE("run errors name the function, the line and the op", "[vm][errors]") {
  vm::Session s(program(std::string(kLinear) + R"(
def outer(x: Tensor, w: Tensor) -> Tensor:
    y = f(x, w)
    return y
)"));
  std::string err = error_of([&] { vm::run(s, "outer", {Value(filled({1, 3}, 1)), Value(filled({2, 4}, 0))}); });
  CHECK_THAT(err, Catch::StartsWith("linear: x has 3 features but weight is f32[2, 4]"));
  CHECK_THAT(err, Catch::Contains("at program.py:3 in f: y = linear(x, w)"));
  CHECK_THAT(err, Catch::Contains("at program.py:7 in outer: y = f(x, w)"));
  CHECK_THAT(error_of([&] { vm::run(s, "f", {Value(filled({1, 3}, 1))}); }), Catch::Contains("f takes 2 inputs (x, w), got 1"));
  CHECK_THAT(error_of([&] { vm::run(s, "f", {Value::from_int(1), Value(filled({2, 3}, 0))}); }),
             Catch::Contains("input 'x' must be Tensor, got int 1"));
  CHECK_THAT(error_of([&] { vm::run(s, "nope", {}); }), Catch::Contains("no function 'nope'"));
  // The session is usable after an error.
  CHECK(vm::run(s, "f", {Value(filled({1, 3}, 1)), Value(filled({2, 3}, 0))}).size() == 1);
}

TEST_CASE("steady-state runs allocate nothing new from the pool", "[vm][memory]") {
  vm::Session s(program(std::string(kLinear) + R"(
def chain(x: Tensor, w: Tensor) -> Tensor:
    a = f(x, w)
    b = f(a, w)
    c = f(b, w)
    return c
)"));
  Tensor x = filled({4, 8}, 0), w = filled({8, 8}, 0);
  vm::run(s, "chain", {Value(x), Value(w)});
  const size_t after_first = s.pool().fresh_allocations();
  for (int i = 0; i < 5; ++i) vm::run(s, "chain", {Value(x), Value(w)});
  CHECK(s.pool().fresh_allocations() == after_first);
  // Last-use freeing: a chain of three needs at most two live intermediates.
  CHECK(after_first <= 2);
}

TEST_CASE("one program serves several sessions on several threads", "[vm][threads]") {
  auto p = program(kLinear);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      vm::Session s(p);
      for (int i = 0; i < 200; ++i) {
        auto y = vm::run(s, "f", {Value(filled({1, 3}, 1)), Value(filled({2, 3}, 0))})[0].as_tensor();
        if (y.data<float>()[1] != 26.0f) return;
      }
      ++ok;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == 4);
}

TEST_CASE("intra-op threads give the single-thread results", "[vm][threads]") {
  auto p = program(kLinear);
  Tensor x = Tensor::empty(vm::DType::f32, {3, 300});
  Tensor w = Tensor::empty(vm::DType::f32, {1000, 300});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i * 37) % 101) / 101.0f - 0.5f;
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = float((i * 53) % 97) / 97.0f - 0.5f;
  vm::Session one(p), two(p, vm::SessionOptions{2}), three(p, vm::SessionOptions{3});
  const Tensor a = vm::run(one, "f", {Value(x), Value(w)})[0].as_tensor();
  for (vm::Session* s : {&two, &three}) {
    const Tensor b = vm::run(*s, "f", {Value(x), Value(w)})[0].as_tensor();
    REQUIRE(b.shape() == a.shape());
    for (int64_t i = 0; i < a.numel(); ++i) REQUIRE(b.data<float>()[i] == Approx(a.data<float>()[i]).margin(1e-5));
  }
  CHECK_THROWS_WITH(one.set_num_threads(0), Catch::Contains("num_threads must be at least 1"));
}

TEST_CASE("resolve: the loaded program without weights, each param() named, not runnable", "[vm]") {
  // What `tensorvm compile` prints (pycompiler/bindings/resolved.cpp): the same binding and
  // last uses as a load with weights, each weight bound by name only.
  auto p = vm::Program::resolve(
      "# tensorvm ir 1\ndef f(x: Tensor, i: int) -> Tensor:\n    w = param(\"layers.0.w\")\n"
      "    t = param(\"layers.{}.w\", i)\n    y = linear(x, w)\n    z = add(y, t)\n    return z\n");
  const vm::Function& f = p->function("f");
  REQUIRE(f.code.size() == 4);  // param (indexed), linear, add, return: a literal param() is a constant
  CHECK(f.code[0].kind == vm::Instr::Kind::ParamIndexed);
  CHECK(f.code[0].table_template == "layers.{}.w");
  const vm::Instr& lin = f.code[1];
  REQUIRE(lin.args.size() == 3);  // x, w, bias (its default)
  REQUIRE(lin.args[1].from == vm::Operand::From::Const);
  CHECK(f.const_weights[lin.args[1].index] == "layers.0.w");
  CHECK(f.const_weights[lin.args[2].index].empty());
  CHECK(lin.frees == std::vector<uint32_t>{0});  // x dies at its last use
  CHECK_FALSE(p->weights_bound());
  CHECK_THAT(error_of([&] { vm::Session s(p); }), Catch::Contains("resolved without its weights"));
  CHECK(vm::Program::from_text("# tensorvm ir 1\n" + std::string(kLinear), "")->weights_bound());
}
