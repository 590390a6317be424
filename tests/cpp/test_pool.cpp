// The buffer pool's caching policy (core/tensor.h, docs/runtime.md "The buffer pool"):
// size classes bound the rounding, a loop whose tensors grow by a position per step
// keeps the pool's held bytes near its live bytes, and a steady loop still allocates
// nothing after its first step, even past a reset of the peaks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

using vm::Pool;
using vm::Ref;

namespace {

// One step of a beam search in miniature: a persistent cache (allocated once, like the
// KV cache), a step's temporaries of fixed sizes, and tensors that grow with the position:
// the sequences ([4 rows, pos] int64) and the KV cache's reorder scratch, whose row
// count (1-3 saved rows) changes from step to step.
struct GrowingLoop {
  static constexpr size_t kCache = size_t(8) << 20;
  Ref<Pool> pool = vm::make_ref<Pool>();
  Ref<vm::Buffer> cache = pool->allocate(kCache);
  std::vector<Ref<vm::Buffer>> sequences;

  void step(int64_t pos) {
    std::vector<Ref<vm::Buffer>> temps;
    for (size_t bytes : {size_t(4) << 10, size_t(64) << 10, size_t(230) << 10, size_t(4) << 10}) temps.push_back(pool->allocate(bytes));
    // A step's short-lived activations: a decoder layer's worth of allocations, times 6
    // (the pool measures staleness in allocations).
    for (int i = 0; i < 240; ++i) pool->allocate(size_t(1 + i % 5) << 10);
    const int64_t saved = 1 + (pos * 7) % 3;
    Ref<vm::Buffer> scratch = pool->allocate(size_t(saved * pos) * 2048);  // [saved, 8 heads, pos, 64] f32 per layer
    Ref<vm::Buffer> seq = pool->allocate(size_t(4 * pos) * 8);
    sequences.assign(1, seq);  // the previous step's sequences die here
  }
};

}  // namespace

TEST_CASE("pool: size classes round up by less than an eighth", "[pool]") {
  size_t last = 0;
  for (int c = 0; c < Pool::kSizeClasses; ++c) {
    const size_t bytes = Pool::class_bytes(c);
    INFO("class " << c << ", " << bytes << " bytes");
    REQUIRE(bytes > last);
    REQUIRE(bytes % 64 == 0);
    REQUIRE(Pool::size_class(bytes) == c);
    REQUIRE(Pool::size_class(last + 1) == c);  // every size between two classes takes the upper one
    if (last > 1024) REQUIRE(double(bytes) / double(last + 1) < 1.125);
    last = bytes;
  }
  CHECK(Pool::size_class(0) == 0);
  CHECK(Pool::size_class(1) == 0);
  CHECK(Pool::size_class(64) == 0);
  CHECK(Pool::size_class(65) == 1);
  CHECK(Pool::class_bytes(Pool::size_class(vm::kMaxTensorBytes)) == vm::kMaxTensorBytes);
  CHECK(Pool::size_class(vm::kMaxTensorBytes) == Pool::kSizeClasses - 1);
}

TEST_CASE("pool: tensors that grow each step keep held bytes near live bytes", "[pool]") {
  GrowingLoop loop;
  const int64_t steps = 511;
  for (int64_t pos = 1; pos <= steps; ++pos) loop.step(pos);
  Pool& pool = *loop.pool;
  INFO("peak live " << pool.peak_live_bytes() << ", peak held " << pool.peak_held_bytes() << ", fresh "
                    << pool.fresh_allocations() << ", evictions " << pool.evictions());
  // The budget: never more than twice the peak of live bytes.
  CHECK(pool.peak_held_bytes() <= 2 * pool.peak_live_bytes());
  // Caching one block per exact size would hold the scratch of every step, hundreds of
  // MiB here for an 11 MiB peak. With classes a grown tensor takes back its old block
  // until it grows by an eighth, and the classes left behind go once stale. Some stay
  // long: a class serves the 3-row scratch at one position and the 1-row scratch at
  // three times that, so it waits long between uses (1.6x measured).
  CHECK(pool.peak_held_bytes() < pool.peak_live_bytes() * 7 / 4);
  CHECK(pool.fresh_allocations() < size_t(steps) / 2);
  // The temporaries and the cache were never given up.
  CHECK(pool.live_bytes() >= GrowingLoop::kCache);
}

TEST_CASE("pool: a steady loop allocates nothing after its first step, across a reset of the peaks", "[pool]") {
  Ref<Pool> pool = vm::make_ref<Pool>();
  // Sizes whose live counts peak at different times, so the pool holds more than the
  // peak of live bytes: the budget must leave those blocks alone.
  const auto step = [&] {
    Ref<vm::Buffer> a = pool->allocate(size_t(3) << 20), b = pool->allocate(100000);
    a = Ref<vm::Buffer>();
    Ref<vm::Buffer> c = pool->allocate(size_t(2) << 20), d = pool->allocate(size_t(2) << 20);
    b = Ref<vm::Buffer>();
    Ref<vm::Buffer> e = pool->allocate(size_t(1) << 20);
  };
  step();
  const size_t fresh = pool->fresh_allocations();
  for (int i = 0; i < 20; ++i) {
    if (i == 10) pool->reset_peak();  // between runs: the peaks restart, the budget does not
    step();
  }
  CHECK(pool->fresh_allocations() == fresh);
  CHECK(pool->evictions() == 0);
  CHECK(pool->peak_held_bytes() > pool->peak_live_bytes());
}

TEST_CASE("pool: blocks of a bigger input run once are freed when smaller runs need room", "[pool]") {
  Ref<Pool> pool = vm::make_ref<Pool>();
  const auto run = [&](size_t scale, int64_t tensors) {
    std::vector<Ref<vm::Buffer>> live;
    for (int64_t i = 0; i < tensors; ++i) live.push_back(pool->allocate(scale * size_t(1 + i)));
  };
  run(size_t(1) << 20, 8);  // 36 MiB live at once, then cached
  const size_t big_peak = pool->peak_live_bytes();
  // Growing small runs: each asks for sizes the big run never freed.
  for (int64_t k = 1; k <= 200; ++k) run(size_t(4096) * size_t(k), 4);
  // Within budget the big run's blocks may stay, but no more than twice its peak is held.
  CHECK(pool->peak_held_bytes() <= 2 * big_peak);
  CHECK(pool->cached_bytes() + pool->live_bytes() <= 2 * big_peak);
}
