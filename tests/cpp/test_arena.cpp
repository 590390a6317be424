// The app's memory arena (core/arena.h, docs/runtime.md "A memory arena"): runs in an
// arena give the pool's bits, carve every tensor from it (KV caches and kernels'
// scratch included), fail past it with an error naming the instruction and leave the
// session usable; caller buffers of any alignment; two regions; measure_memory.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "test_helpers.h"
#include "vm/vm.h"

using test_helpers::error_of;
using vm::Tensor;
using vm::Value;

namespace {

// A decode loop in miniature: a KV cache of `cap` positions, n steps that append to
// it, attend over it and reorder its rows as a beam search does.
const char* kDecode = R"(# tensorvm ir 1
def more(i: int, n: int, x: Tensor, cache: KVCache, order: Tensor) -> bool:
    c = lt(i, n)
    return c

def step(i: int, n: int, x: Tensor, cache: KVCache, order: Tensor) -> tuple[int, int, Tensor, KVCache, Tensor]:
    q = reshape(x, [2, 2, 1, 4])
    k = mul(q, 0.5)
    k_all, v_all = kv_append(cache, 0, k, q)
    a = attention(q, k_all, v_all, None, scale=0.5)
    y = reshape(a, [2, 8])
    s = add(y, x)
    x2 = tanh(s)
    cache2 = kv_reorder(cache, order)
    j = add(i, 1)
    return j, n, x2, cache2, order

def decode(x: Tensor, n: int, cap: int, order: Tensor) -> Tensor:
    cache = kv_cache(1, 2, 2, 4, cap)
    i0 = add(0, 0)
    i, m, y, c, o = while_loop(more, step, i0, n, x, cache, order)
    return y
)";

std::shared_ptr<const vm::Program> decode_program() { return vm::Program::from_text(kDecode, ""); }

struct Inputs {
  Tensor x, order;
};

Inputs inputs() {
  Inputs in{Tensor::empty(vm::DType::f32, {2, 8}), Tensor::empty(vm::DType::i64, {2})};
  for (int64_t i = 0; i < 16; ++i) in.x.data<float>()[i] = float((i * 7) % 11) / 11.0f - 0.4f;
  in.order.data<int64_t>()[0] = 1;
  in.order.data<int64_t>()[1] = 1;
  return in;
}

Tensor decode(vm::Session& s, const Inputs& in, int64_t n, int64_t cap) {
  return vm::run(s, "decode", {Value(in.x), Value::from_int(n), Value::from_int(cap), Value(in.order)})[0].as_tensor();
}

// What every arena run must reproduce: the result with a session's own pool.
Tensor pooled(const std::shared_ptr<const vm::Program>& p, const Inputs& in, int64_t n, int64_t cap) {
  vm::Session s(p);
  return decode(s, in, n, cap);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

bool inside(const Tensor& t, const void* begin, size_t bytes) {
  const char* p = static_cast<const char*>(t.buffer()->data());
  return p >= static_cast<const char*>(begin) && p + t.buffer()->bytes() <= static_cast<const char*>(begin) + bytes;
}

}  // namespace

TEST_CASE("arena: carving, coalescing and the high-water mark", "[arena]") {
  auto arena = vm::Arena::with_budget(1024);
  CHECK(arena->capacity() == 1024);
  auto a = arena->allocate(100), b = arena->allocate(64), c = arena->allocate(1);
  CHECK(arena->in_use() == 128 + 64 + 64);
  CHECK(reinterpret_cast<uintptr_t>(a->data()) % vm::kArenaAlignment == 0);
  CHECK(static_cast<char*>(b->data()) == static_cast<char*>(a->data()) + 128);
  void* b_at = b->data();
  b = {};
  // The hole b left is reused before the top, even for a smaller request.
  auto d = arena->allocate(10);
  CHECK(d->data() == b_at);
  CHECK(arena->arena_bytes() == 256);
  a = {};
  c = {};
  d = {};
  CHECK(arena->in_use() == 0);
  CHECK(arena->peak_in_use() == 256);
  // All free blocks coalesced again: the whole budget is one block.
  auto all = arena->allocate(1024);
  CHECK(all->data() != nullptr);
  CHECK_THROWS_WITH(arena->allocate(1), Catch::Contains("arena: out of memory: a tensor of 1 bytes does not fit") &&
                                            Catch::Contains("budget: 1024 of 1024 bytes in use, largest free block 0"));
  all = {};
  arena->reset_peak();
  CHECK(arena->peak_in_use() == 0);
  CHECK(arena->arena_bytes() == 0);
}

TEST_CASE("arena: a run in an arena gives the pool's bits and allocates nothing else", "[arena]") {
  auto p = decode_program();
  const Inputs in = inputs();
  const Tensor want = pooled(p, in, 5, 16);

  vm::SessionOptions o;
  o.arena = vm::Arena::with_budget(64 << 10);
  vm::Session s(p, o);
  const uint64_t global_before = vm::Pool::global().allocations();
  const uint64_t own_before = s.pool().allocations();
  Tensor got = decode(s, in, 5, 16);
  CHECK(vm::Pool::global().allocations() == global_before);  // the KV cache's copies included
  CHECK(s.pool().allocations() == own_before);
  CHECK(same_bits(got, want));
  CHECK(o.arena->allocations() > 10);
  // The result stays carved until the caller drops it.
  CHECK(o.arena->in_use() == 64);
  got = Tensor();
  CHECK(o.arena->in_use() == 0);
}

TEST_CASE("arena: measure_memory gives the size that runs the same inputs", "[arena]") {
  auto p = decode_program();
  const Inputs in = inputs();
  const vm::MemoryReport r =
      vm::measure_memory(p, "decode", {Value(in.x), Value::from_int(6), Value::from_int(64), Value(in.order)});
  // The cache alone: k and v, [2, 2, 64, 4] f32 each.
  CHECK(r.arena_bytes >= r.peak_bytes);
  CHECK(r.peak_bytes >= 2 * 2 * 2 * 64 * 4 * 4);
  CHECK(r.largest_tensor == 2 * 2 * 64 * 4 * 4);
  CHECK(r.allocations > 6);
  CHECK(r.instructions > 6 * 9);
  CHECK(r.high_water_at.find("program.py:") == 0);
  REQUIRE(r.outputs.size() == 1);

  vm::SessionOptions fits;
  fits.arena = vm::Arena::with_budget(r.arena_bytes);
  vm::Session s(p, fits);
  const Tensor got = decode(s, in, 6, 64);
  CHECK(same_bits(got, r.outputs[0].as_tensor()));
  CHECK(fits.arena->arena_bytes() == r.arena_bytes);
  CHECK(fits.arena->peak_in_use() == r.peak_bytes);
}

TEST_CASE("arena: a run past the arena fails naming the instruction and leaves the session usable", "[arena]") {
  auto p = decode_program();
  const Inputs in = inputs();
  const Tensor want = pooled(p, in, 3, 8);

  vm::SessionOptions o;
  o.arena = vm::Arena::with_budget(4096);
  vm::Session s(p, o);
  // The cache for 1000 positions (2 x 64000 bytes) cannot be carved.
  const std::string e = error_of([&] { decode(s, in, 3, 1000); });
  CHECK(e.find("kv_cache: arena: out of memory: a tensor of 64000 bytes does not fit") == 0);
  CHECK(e.find("at program.py:19 in decode: cache = kv_cache(1, 2, 2, 4, cap)") != std::string::npos);
  CHECK(o.arena->in_use() == 0);
  // An arena one block short of what the run needs: the cache fits, a step's tensors
  // do not. The failure is inside the loop, and everything carved so far is given back.
  const vm::MemoryReport need =
      vm::measure_memory(p, "decode", {Value(in.x), Value::from_int(3), Value::from_int(30), Value(in.order)});
  REQUIRE(need.high_water_at.find(" in step: ") != std::string::npos);
  vm::SessionOptions short_one;
  short_one.arena = vm::Arena::with_budget(need.arena_bytes - vm::kArenaAlignment);
  vm::Session t(p, short_one);
  const std::string e2 = error_of([&] { decode(t, in, 3, 30); });
  CHECK(e2.find("arena: out of memory") != std::string::npos);
  CHECK(e2.find(" in step: ") != std::string::npos);
  CHECK(e2.find("in decode: i, m, y, c, o = while_loop(") != std::string::npos);
  CHECK(short_one.arena->in_use() == 0);
  CHECK(same_bits(decode(t, in, 3, 8), want));
  // The same session runs what fits, with the pool's bits.
  CHECK(same_bits(decode(s, in, 3, 8), want));
  CHECK(o.arena->in_use() == 0);
}

TEST_CASE("arena: a caller's buffer of any alignment", "[arena]") {
  auto p = decode_program();
  const Inputs in = inputs();
  const Tensor want = pooled(p, in, 4, 8);
  std::vector<char> memory(64 << 10);
  for (size_t skew : {size_t(0), size_t(1), size_t(3), size_t(63)}) {
    char* start = memory.data() + skew;
    const size_t bytes = memory.size() - 64;
    vm::SessionOptions o;
    o.arena = vm::Arena::over({{start, bytes}});
    const uintptr_t first = (reinterpret_cast<uintptr_t>(start) + 63) & ~uintptr_t(63);
    CHECK(o.arena->capacity() == ((reinterpret_cast<uintptr_t>(start) + bytes) & ~uintptr_t(63)) - first);
    vm::Session s(p, o);
    const Tensor got = decode(s, in, 4, 8);
    CHECK(same_bits(got, want));
    CHECK(reinterpret_cast<uintptr_t>(got.raw()) % 64 == 0);
    CHECK(inside(got, start, bytes));
  }
  char tiny[100];
  const uintptr_t at = reinterpret_cast<uintptr_t>(tiny);
  const size_t usable = ((at + 100) & ~uintptr_t(63)) - ((at + 63) & ~uintptr_t(63));
  if (usable == 0)
    CHECK(error_of([&] { vm::Arena::over({{tiny, 100}}); }).find("no 64-byte aligned block") != std::string::npos);
  CHECK(error_of([] { vm::Arena::over({{nullptr, 64}}); }).find("null address") != std::string::npos);
  CHECK(error_of([] { vm::Arena::over({}); }).find("Arena: no regions") != std::string::npos);
  CHECK(error_of([] { vm::Arena::with_budget(0); }).find("a budget of 0 bytes") != std::string::npos);
}

TEST_CASE("arena: small tensors in a fast region, large ones in a slow one", "[arena]") {
  auto p = decode_program();
  const Inputs in = inputs();
  const Tensor want = pooled(p, in, 4, 64);
  std::vector<char> fast(4096), slow(64 << 10);
  vm::SessionOptions o;
  o.arena = vm::Arena::over({{fast.data(), fast.size(), 512, "fast"}, {slow.data(), slow.size(), 0, "slow"}});
  vm::Session s(p, o);
  const Tensor got = decode(s, in, 4, 64);
  CHECK(same_bits(got, want));
  CHECK(inside(got, fast.data(), fast.size()));
  const auto stats = o.arena->stats();
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].name == "fast");
  CHECK(stats[0].peak_in_use > 0);
  CHECK(stats[0].high_water <= 4096);
  CHECK(stats[1].peak_in_use >= 2 * 4096);  // the cache: 4096 bytes each for k and v
  // A tensor larger than every region's limit or room is an error naming both.
  vm::SessionOptions small;
  small.arena = vm::Arena::over({{fast.data(), fast.size(), 512, "fast"}});
  vm::Session t(p, small);
  const std::string e = error_of([&] { decode(t, in, 4, 64); });
  CHECK(e.find("fast: 0 of") != std::string::npos);
  CHECK(e.find("(tensors up to 512 bytes)") != std::string::npos);
}

TEST_CASE("arena: intra-op threads carve scratch from the arena too", "[arena][threads]") {
  auto p = decode_program();
  const Inputs in = inputs();
  vm::SessionOptions two;
  two.num_threads = 2;
  vm::Session pool_session(p, two);
  const Tensor want = decode(pool_session, in, 8, 32);
  two.arena = vm::Arena::with_budget(256 << 10);
  vm::Session s(p, two);
  const uint64_t global_before = vm::Pool::global().allocations();
  for (int k = 0; k < 3; ++k) CHECK(same_bits(decode(s, in, 8, 32), want));
  CHECK(vm::Pool::global().allocations() == global_before);
  CHECK(two.arena->in_use() == 0);
}

// The example of docs/runtime.md ("A memory arena"), compiled and run here.
#define main embed_arena_example_main
#include "../../examples/embed/arena.cpp"
#undef main

TEST_CASE("the arena example of docs/runtime.md runs", "[arena]") {
  CHECK(embed_arena_example_main() == 0);
  CHECK(test_helpers::source_file("docs/runtime.md").find(test_helpers::source_file("examples/embed/arena.cpp")) !=
        std::string::npos);
}
