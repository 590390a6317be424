// The intra-op thread pool: every chunk runs exactly once, on any mix of spinning and
// sleeping workers, and the pool shuts down cleanly in either state. Also run under
// ThreadSanitizer (README, Development).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "vm/thread_pool.h"

namespace {

// Runs parallel_for(n, grain) and checks that [0, n) was covered exactly once.
void check_cover(vm::ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  for (auto& h : hits) h.store(0);
  std::atomic<int> calls{0}, empty_chunks{0};
  pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {  // no REQUIRE here: Catch2 is not thread-safe
    if (b >= e) ++empty_chunks;
    ++calls;
    for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
  });
  REQUIRE(empty_chunks.load() == 0);
  for (int64_t i = 0; i < n; ++i) REQUIRE(hits[size_t(i)].load() == 1);
  REQUIRE(calls.load() <= pool.size());
}

}  // namespace

TEST_CASE("thread pool: chunks cover the range once, for many sizes and grains", "[threads]") {
  for (int threads : {1, 2, 3, 5}) {
    vm::ThreadPool pool(threads);
    REQUIRE(pool.size() == threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1000, 4097})
      for (int64_t grain : {0, 1, 2, 16, 5000}) check_cover(pool, n, grain);
  }
}

TEST_CASE("thread pool: thousands of back-to-back jobs (spinning workers)", "[threads]") {
  vm::ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int job = 0; job < 5000; ++job) {
    pool.parallel_for(30, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum.fetch_add(i);
    });
  }
  REQUIRE(sum.load() == int64_t(5000) * (29 * 30 / 2));
}

TEST_CASE("thread pool: workers that went to sleep wake for the next job", "[threads]") {
  vm::ThreadPool pool(2, /*spin_us=*/0);  // no spinning: every job wakes a sleeper
  for (int job = 0; job < 300; ++job) {
    if (job % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    check_cover(pool, 100 + job, 1);
  }
  vm::ThreadPool spinning(2, 200);
  check_cover(spinning, 1000, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin budget: asleep
  check_cover(spinning, 1000, 1);
}

TEST_CASE("thread pool: destroyed while workers spin or sleep", "[threads]") {
  for (int spin : {0, 100000}) {
    vm::ThreadPool pool(4, spin);
    check_cover(pool, 1000, 1);
  }
  vm::ThreadPool idle(3);  // never used
}
