// emit(channel, value): the VM-level instruction that hands values to the host, the
// Session's callback, and the token stream that generation builds on it.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "vm/vm.h"
#include "test_helpers.h"

using vm::Tensor;
using vm::Value;
using test_helpers::error_of;

namespace {

// A stand-in for a greedy search (shared with tests/python/test_streaming.py): each
// step appends last + 1 to every row, emits the step's tokens ([rows, 1]) and stops
// when the host says so or at `limit` columns.
const std::string kCounter = test_helpers::source_file("tests/fixtures/programs/emit_counter.py");

Tensor prompt_rows(std::vector<int64_t> starts) {
  Tensor t = Tensor::empty(vm::DType::i64, {int64_t(starts.size()), 1});
  for (size_t i = 0; i < starts.size(); ++i) t.data<int64_t>()[i] = starts[i];
  return t;
}

std::vector<std::vector<int64_t>> rows_of(const Value& v) {
  const Tensor t = v.as_tensor().contiguous();
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(t.shape()[0]));
  for (int64_t r = 0; r < t.shape()[0]; ++r)
    for (int64_t c = 0; c < t.shape()[1]; ++c) out[size_t(r)].push_back(t.data<int64_t>()[r * t.shape()[1] + c]);
  return out;
}

}  // namespace

TEST_CASE("emit with no callback answers continue", "[vm][emit]") {
  vm::Session s(vm::Program::from_text(kCounter, ""));
  auto out = vm::run(s, "generate", {Value(prompt_rows({10, 20})), Value::from_int(5)});
  CHECK(rows_of(out[0]) == std::vector<std::vector<int64_t>>{{10, 11, 12, 13, 14}, {20, 21, 22, 23, 24}});
}

TEST_CASE("a token callback stops generation after k steps and the output holds what was streamed", "[vm][emit]") {
  vm::Session s(vm::Program::from_text(kCounter, ""));
  for (int k : {1, 3}) {
    std::vector<std::vector<int64_t>> streamed(2);
    int steps = 0;
    auto on_tokens = [&](const std::vector<std::vector<int64_t>>& tokens) {
      REQUIRE(tokens.size() == 2);
      for (size_t r = 0; r < 2; ++r) streamed[r].insert(streamed[r].end(), tokens[r].begin(), tokens[r].end());
      return ++steps < k;
    };
    auto out = vm::run(s, "generate", {Value(prompt_rows({10, 20})), Value::from_int(50)}, vm::token_stream(on_tokens));
    CHECK(steps == k);
    const auto rows = rows_of(out[0]);
    REQUIRE(rows[0].size() == size_t(k) + 1);  // the prompt, then the k streamed tokens
    for (size_t r = 0; r < 2; ++r) CHECK(std::vector<int64_t>(rows[r].begin() + 1, rows[r].end()) == streamed[r]);
  }
  // The callback was for that run only: the next run goes to the limit.
  auto out = vm::run(s, "generate", {Value(prompt_rows({0})), Value::from_int(4)});
  CHECK(rows_of(out[0]) == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}});
}

TEST_CASE("the session callback sees every channel in program order", "[vm][emit]") {
  vm::Session s(vm::Program::from_text(kCounter, ""));
  std::vector<std::string> seen;
  s.set_on_emit([&](const std::string& channel, const Value& v) {
    seen.push_back(channel + ":" + std::to_string(v.as_tensor().contiguous().data<int64_t>()[0]));
    return true;
  });
  vm::run(s, "generate", {Value(prompt_rows({7})), Value::from_int(3)});
  CHECK(seen == std::vector<std::string>{"prompt:7", "tokens:8", "tokens:9"});
  s.set_on_emit(nullptr);
  seen.clear();
  vm::run(s, "generate", {Value(prompt_rows({7})), Value::from_int(3)});
  CHECK(seen.empty());
}

TEST_CASE("a callback that throws fails the run naming the emit", "[vm][emit]") {
  vm::Session s(vm::Program::from_text(kCounter, ""));
  auto thrower = [](const std::string&, const Value&) -> bool { throw std::runtime_error("host gave up"); };
  const std::string e = error_of([&] { vm::run(s, "generate", {Value(prompt_rows({1})), Value::from_int(3)}, thrower); });
  CHECK_THAT(e, Catch::Contains("host gave up"));
  CHECK_THAT(e, Catch::Contains("emit(\"prompt\", prompt)"));
  // The session is usable afterwards, with its own (empty) callback back.
  auto out = vm::run(s, "generate", {Value(prompt_rows({1})), Value::from_int(3)});
  CHECK(rows_of(out[0]) == std::vector<std::vector<int64_t>>{{1, 2, 3}});
}

TEST_CASE("the token stream refuses a tokens channel that is not an i64 matrix", "[vm][emit]") {
  vm::Session s(vm::Program::from_text(R"(# tensorvm ir 1
def f(x: Tensor) -> bool:
    go = emit("tokens", x)
    return go
)",
                                        ""));
  auto never = [](const std::vector<std::vector<int64_t>>&) { return true; };
  Tensor f32 = Tensor::empty(vm::DType::f32, {1, 1});
  CHECK_THAT(error_of([&] { vm::run(s, "f", {Value(f32)}, vm::token_stream(never)); }),
             Catch::Contains("tokens channel carries an i64 tensor [rows, n]"));
  auto out = vm::run(s, "f", {Value(prompt_rows({3}))}, vm::token_stream(never));
  CHECK(out[0].as_bool());
}

TEST_CASE("emit is checked at load", "[vm][emit]") {
  auto load = [](const std::string& body) {
    return error_of([&] { vm::Program::from_text("# tensorvm ir 1\ndef f(x: Tensor) -> bool:\n" + body, ""); });
  };
  CHECK_THAT(load("    go = emit(\"a\")\n    return go\n"), Catch::Contains("emit takes two positional arguments"));
  CHECK_THAT(load("    go = emit(\"a\", value=x)\n    return go\n"), Catch::Contains("emit takes two positional arguments"));
  CHECK_THAT(load("    go = emit(x, x)\n    return go\n"), Catch::Contains("emit: the channel must be a string literal"));
  CHECK_THAT(load("    a, b = emit(\"a\", x)\n    return a\n"), Catch::Contains("emit returns 1 value"));
  CHECK_THAT(load("    emit = neg(x)\n    return emit\n"), Catch::Contains("builtin"));
}
