// vm::SessionPool: one Program shared by threads (the code Python's Program.run uses,
// tests/python/test_program_threads.py), a run started from an emit callback of a run on
// the same pool, and a Session refusing a second run while one is under way. The
// [threads] cases run under TSan in CI (.ci/sanitize).
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "test_helpers.h"
#include "vm/vm.h"

using test_helpers::error_of;
using vm::Tensor;
using vm::Value;

namespace {

// Each step appends last + 1 to every row and emits it (tests/cpp/test_emit.cpp).
const std::string kCounter = test_helpers::source_file("tests/fixtures/programs/emit_counter.py");

using Rows = std::vector<std::vector<int64_t>>;

Value prompt(std::vector<int64_t> starts) {
  Tensor t = Tensor::empty(vm::DType::i64, {int64_t(starts.size()), 1});
  for (size_t i = 0; i < starts.size(); ++i) t.data<int64_t>()[i] = starts[i];
  return Value(t);
}

Rows rows_of(const Value& v) {
  const Tensor t = v.as_tensor().contiguous();
  Rows out(static_cast<size_t>(t.shape()[0]));
  for (int64_t r = 0; r < t.shape()[0]; ++r)
    for (int64_t c = 0; c < t.shape()[1]; ++c) out[size_t(r)].push_back(t.data<int64_t>()[r * t.shape()[1] + c]);
  return out;
}

struct Case {
  std::vector<int64_t> starts;
  int64_t limit;
};

std::vector<Value> inputs(const Case& c) { return {prompt(c.starts), Value::from_int(c.limit)}; }

}  // namespace

TEST_CASE("threads sharing one SessionPool get the single-thread results", "[vm][threads]") {
  auto p = vm::Program::from_text(kCounter, "");
  std::vector<Case> cases;
  for (int64_t i = 0; i < 12; ++i) cases.push_back({{10 * i, 1000 + i, -7 * i}, 2 + i % 9});
  std::vector<Rows> want;
  vm::Session one(p);
  for (const Case& c : cases) want.push_back(rows_of(vm::run(one, "generate", inputs(c))[0]));

  vm::SessionPool pool(p);
  constexpr int kThreads = 6, kCallsEach = 120;
  std::atomic<int> ready{0}, calls{0}, mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ++ready;
      while (ready < kThreads) std::this_thread::yield();  // start together
      for (int i = 0; i < kCallsEach; ++i) {
        const size_t k = size_t(i * 7 + t) % cases.size();
        try {
          // Every other call streams: the callback runs on this thread, mid-run.
          int64_t streamed = 0;
          vm::EmitCallback count = [&](const std::string& channel, const Value&) {
            streamed += channel == "tokens";
            return true;
          };
          const auto out = pool.run("generate", inputs(cases[k]), i % 2 ? count : vm::EmitCallback());
          ++calls;
          const bool stream_ok = i % 2 == 0 || streamed == cases[k].limit - 1;
          if (rows_of(out[0]) != want[k] || !stream_ok) ++mismatches;
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  INFO(kThreads << " threads, " << calls << " calls, " << mismatches << " mismatches, " << pool.sessions_made()
                << " sessions made");
  CHECK(errors == 0);
  CHECK(calls == kThreads * kCallsEach);
  CHECK(mismatches == 0);
  CHECK(pool.sessions_made() >= 1);
  CHECK(pool.sessions_made() <= size_t(kThreads));
  CHECK(pool.idle() == pool.sessions_made());  // every Session came back
}

TEST_CASE("a run started from an emit callback of a run on the same pool gets its own Session", "[vm][threads]") {
  vm::SessionPool pool(vm::Program::from_text(kCounter, ""));
  Rows outer_streamed;
  std::vector<Rows> inner;
  const auto out = pool.run("generate", inputs({{10}, 6}), [&](const std::string& channel, const Value& v) {
    if (channel != "tokens") return true;
    outer_streamed.push_back(rows_of(v)[0]);
    inner.push_back(rows_of(pool.run("generate", inputs({{100, 200}, 3}))[0]));
    return true;
  });
  CHECK(rows_of(out[0]) == Rows{{10, 11, 12, 13, 14, 15}});
  CHECK(outer_streamed == Rows{{11}, {12}, {13}, {14}, {15}});
  REQUIRE(inner.size() == 5);
  for (const Rows& r : inner) CHECK(r == Rows{{100, 101, 102}, {200, 201, 202}});
  CHECK(pool.sessions_made() == 2);
  CHECK(pool.idle() == 2);
  // One thread alone keeps getting a warm Session back: none is made.
  for (int i = 0; i < 5; ++i) pool.run("generate", inputs({{1}, 4}));
  CHECK(pool.sessions_made() == 2);
}

TEST_CASE("a SessionPool gives a Session back when its run fails, and leases one out", "[vm]") {
  vm::SessionPool pool(vm::Program::from_text(kCounter, ""));
  CHECK(error_of([&] { pool.run("generate", {prompt({1})}); }).find("generate") != std::string::npos);
  CHECK(error_of([&] { pool.run("nope", {}); }).find("nope") != std::string::npos);
  auto throwing = [](const std::string&, const Value&) -> bool { throw vm::Error("stop here"); };
  CHECK(error_of([&] { pool.run("generate", inputs({{3}, 3}), throwing); }).find("stop here") != std::string::npos);
  CHECK(pool.idle() == pool.sessions_made());
  {
    auto a = pool.acquire();
    auto b = pool.acquire();
    CHECK(&*a != &*b);
    CHECK(rows_of(a->run("generate", inputs({{5}, 3}))[0]) == Rows{{5, 6, 7}});
    CHECK(pool.idle() == 0);
  }
  CHECK(pool.idle() == 2);
  CHECK(error_of([] { vm::SessionPool none(nullptr); }).find("no program") != std::string::npos);
}

TEST_CASE("a SessionPool with arena_bytes gives each Session an arena of its own", "[vm]") {
  vm::SessionPool pool(vm::Program::from_text(kCounter, ""), {}, 1 << 16);
  auto a = pool.acquire();
  auto b = pool.acquire();
  REQUIRE(a->arena() != nullptr);
  REQUIRE(b->arena() != nullptr);
  CHECK(a->arena() != b->arena());
  CHECK(a->arena()->capacity() >= size_t(1 << 16));
  CHECK(rows_of(b->run("generate", inputs({{7}, 2}))[0]) == Rows{{7, 8}});
}

TEST_CASE("a Session refuses a second run while one is under way", "[vm]") {
  vm::Session s(vm::Program::from_text(kCounter, ""));
  std::vector<std::string> nested;
  const auto out = vm::run(s, "generate", inputs({{10}, 4}), [&](const std::string&, const Value&) {
    nested.push_back(error_of([&] { vm::run(s, "generate", inputs({{1}, 2})); }));
    nested.push_back(error_of([&] { vm::run(s, "generate", inputs({{1}, 2}), vm::EmitCallback()); }));
    return true;
  });
  // The refused runs left the one under way alone: its callback and registers.
  CHECK(rows_of(out[0]) == Rows{{10, 11, 12, 13}});
  REQUIRE(nested.size() == 8);  // the prompt and 3 steps, two tries each
  for (const std::string& e : nested) {
    CHECK(e.find("Session::run(generate): this Session is already running a function") != std::string::npos);
    CHECK(e.find("vm::SessionPool") != std::string::npos);
  }
  CHECK(rows_of(vm::run(s, "generate", inputs({{1}, 2}))[0]) == Rows{{1, 2}});
}
