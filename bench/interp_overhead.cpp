// Interpreter cost per instruction: programs of 100k+ tiny instructions where the
// kernel does almost nothing, so the time is the dispatch loop itself (operand
// gathering, kernel call, result store, last-use frees).
//   tensorvm-bench-interp [instructions=200000] [repeats=15]
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "vm/custom_ops.h"
#include "vm/vm.h"

namespace {

// A straight chain: v1 = add(v0, 1); v2 = add(v1, 1); ... one instruction each.
std::string chain_program(int n, const char* op, const char* type, const char* operand) {
  std::string text = fmt::format("# tensorvm ir 1\ndef chain(v0: {}) -> {}:\n", type, type);
  text.reserve(size_t(n) * 32);
  for (int i = 1; i <= n; ++i) text += fmt::format("    v{} = {}(v{}, {})\n", i, op, i - 1, operand);
  text += fmt::format("    return v{}\n", n);
  return text;
}

// The same count as a loop: one add per iteration plus the loop's own work.
std::string loop_program() {
  return "# tensorvm ir 1\n"
         "def more(i: int, n: int) -> bool:\n    c = lt(i, n)\n    return c\n\n"
         "def step(i: int, n: int) -> tuple[int, int]:\n    j = add(i, 1)\n    return j, n\n\n"
         "def count(n: int) -> int:\n    i, m = while_loop(more, step, 0, n)\n    return i\n";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double time_ns(vm::Session& s, const std::string& fn, const std::vector<vm::Value>& in, int repeats) {
  std::vector<double> runs;
  vm::run(s, fn, in);  // warm-up: pool and caches
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    vm::run(s, fn, in);
    runs.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(runs);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 15;
  fmt::print("tensorvm interpreter overhead: {} instructions per program, median of {} runs\n", n, repeats);

  {
    auto p = vm::Program::from_text(chain_program(n, "add", "int", "1"), "");
    vm::Session s(p);
    const double ns = time_ns(s, "chain", {vm::Value::from_int(0)}, repeats);
    fmt::print("  scalar add chain      : {:7.1f} ns/instruction\n", ns / n);
  }
  {
    auto p = vm::Program::from_text(chain_program(n, "add", "Tensor", "1.0"), "");
    vm::Session s(p);
    vm::Tensor x = vm::Tensor::zeros(vm::DType::f32, {1});
    const double ns = time_ns(s, "chain", {vm::Value(x)}, repeats);
    fmt::print("  1-element tensor add  : {:7.1f} ns/instruction (includes allocating each result from the pool)\n",
               ns / n);
  }
  {
    // The same chain with `add` given a kernel with state (vm::replace_kernel with a
    // std::function, as an app's or a Python op's): the trampoline's extra cost.
    auto builtin = std::make_shared<ops::KernelFunction>();
    auto calls = std::make_shared<uint64_t>(0);
    *builtin = vm::replace_kernel("add", [builtin, calls](ops::OpContext& c, const ops::Args& a, vm::Value* o) {
      ++*calls;
      (*builtin)(c, a, o);
    });
    auto p = vm::Program::from_text(chain_program(n, "add", "int", "1"), "");
    vm::replace_kernel("add", *builtin);
    vm::Session s(p);
    const double ns = time_ns(s, "chain", {vm::Value::from_int(0)}, repeats);
    fmt::print("  scalar add, stateful  : {:7.1f} ns/instruction (add replaced by a std::function calling the built-in)\n",
               ns / n);
  }
  {
    auto p = vm::Program::from_text(loop_program(), "");
    vm::Session s(p);
    const double ns = time_ns(s, "count", {vm::Value::from_int(n)}, repeats);
    const double per_iter = ns / n;
    fmt::print("  while_loop iteration  : {:7.1f} ns/iteration (2 calls + lt + add + return per iteration)\n", per_iter);
  }
  return 0;
}
