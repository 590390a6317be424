// The profiler as a Session option: its counts match what ran, its trace nests.
#include <catch2/catch.hpp>

#include <string>

#include "vm/profiler.h"
#include "vm/vm.h"

using vm::Tensor;
using vm::Value;

namespace {

const char* kLoop = R"(# tensorvm ir 1
def more(i: int, n: int, x: Tensor) -> bool:
    lt_0 = lt(i, n)
    return lt_0

def step(i: int, n: int, x: Tensor) -> tuple[int, int, Tensor]:
    add_0 = add(i, 1)
    linear_0 = linear(x, x)
    tanh_0 = tanh(x)
    return add_0, n, tanh_0

def main(x: Tensor, n: int) -> Tensor:
    w_0, w_1, w_2 = while_loop(more, step, 0, n, x)
    return w_2
)";

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("a session profiles itself when asked, and its counts are the instructions that ran", "[vm][profiler]") {
  auto prog = vm::Program::from_text(kLoop, "");
  {
    vm::Session off(prog);
    CHECK(off.profiler() == nullptr);
    CHECK(off.hook() == nullptr);
  }
  vm::SessionOptions o;
  o.profile = true;
  o.profile_trace = true;
  vm::Session s(prog, o);
  REQUIRE(s.profiler() != nullptr);
  const int64_t n = 5;
  Tensor x = Tensor::zeros(vm::DType::f32, {3, 3});
  vm::run(s, "main", {Value(x), Value::from_int(n)});
  const vm::Profiler& p = *s.profiler();
  uint64_t total = 0;
  for (const vm::InstrStats& i : p.instructions()) total += i.count;
  CHECK(total == s.instructions_executed());
  auto ops = p.ops();
  CHECK(ops["lt"].count == uint64_t(n + 1));
  CHECK(ops["linear"].count == uint64_t(n));
  CHECK(ops["linear"].macs == uint64_t(n) * 27);
  CHECK(p.calls()["while_loop"].count == 1);
  CHECK(p.runs() == 1);
  const std::string trace = p.trace_json();
  CHECK(count(trace, "\"cat\":\"iteration\"") == size_t(n));
  CHECK(count(trace, "\"cat\":\"run\"") == 1);
  CHECK(count(trace, "\"name\":\"more\"") == size_t(n + 1));
  CHECK(p.op_table().find("(interpreter)") != std::string::npos);
  CHECK(p.instruction_table().find("step:8") != std::string::npos);  // the linear's line

  // An error mid-run leaves the next run's profile whole.
  CHECK_THROWS(vm::run(s, "main", {Value(Tensor::zeros(vm::DType::f32, {3})), Value::from_int(n)}));  // linear needs a matrix
  s.profiler()->reset();
  vm::run(s, "main", {Value(x), Value::from_int(2)});
  CHECK(s.profiler()->ops()["lt"].count == 3);
  CHECK(s.profiler()->runs() == 1);
}

TEST_CASE("the profiler says when there is no trace to write", "[vm][profiler]") {
  vm::Profiler p;
  CHECK_THROWS_WITH(p.trace_json(), Catch::Contains("no trace was recorded"));
}
