// KVCache::truncate (the kv_truncate op): what speculative decoding's verify step needs.
// Truncating then appending equals never having appended the dropped positions, views
// handed out before stay as they were, and bad lengths are errors naming the op.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/kvcache.h"
#include "vm/vm.h"
#include "test_helpers.h"

using vm::Tensor;
using vm::Value;

namespace {

// f32 [batch 2, heads 1, t, head_dim 2]: element [b, 0, i, d] = seed + 1000 b + 2 i + d, so
// positions(n, s) is the first n positions of positions(m, s) for n <= m.
Tensor positions(int64_t t, float seed) {
  Tensor x = Tensor::empty(vm::DType::f32, {2, 1, t, 2});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 2 * t; ++i) x.data<float>()[b * 2 * t + i] = seed + float(1000 * b + i);
  return x;
}

std::vector<float> values(const Tensor& view) {
  const Tensor c = view.contiguous(nullptr);
  return {c.data<float>(), c.data<float>() + c.numel()};
}

}  // namespace

TEST_CASE("kv_truncate then append equals never appending the dropped positions", "[kvcache]") {
  vm::KVCache spec(2, 2, 1, 2, 8, nullptr), plain(2, 2, 1, 2, 8, nullptr);
  const Tensor prefix = positions(3, 0), proposals = positions(4, 100), bonus = positions(1, 200);
  const Tensor two = positions(2, 100);  // the two accepted proposals: the same values
  for (int64_t l = 0; l < 2; ++l) {
    spec.append(l, prefix, prefix);
    plain.append(l, prefix, prefix);
  }
  auto held = spec.append(0, proposals, proposals);  // a view still alive across the truncate
  spec.append(1, proposals, proposals);
  const std::vector<float> shown = values(held.first);
  for (int64_t l = 0; l < 2; ++l) plain.append(l, two, two);
  spec.truncate(5, nullptr);
  CHECK(spec.length(0) == 5);
  CHECK(spec.length(1) == 5);
  for (int64_t l = 0; l < 2; ++l) {
    auto got = spec.append(l, bonus, bonus);
    auto want = plain.append(l, bonus, bonus);
    CHECK(got.first.shape() == vm::Shape{2, 1, 6, 2});
    CHECK(values(got.first) == values(want.first));
    CHECK(values(got.second) == values(want.second));
  }
  CHECK(values(held.first) == shown);
  spec.truncate(6, nullptr);  // the filled length: nothing changes
  CHECK(spec.length(1) == 6);
  spec.truncate(0, nullptr);
  CHECK(spec.length(0) == 0);
}

TEST_CASE("kv_truncate refuses bad lengths and non-caches, naming the op", "[kvcache]") {
  const std::string text = R"(# tensorvm ir 1
def f(n: int) -> int:
    cache = kv_cache(2, 1, 1, 2, 4)
    z = zeros([1, 1, 2, 2])
    k, v = kv_append(cache, 0, z, z)
    k1, v1 = kv_append(cache, 1, z, z)
    c2 = kv_truncate(cache, n)
    m = kv_length(c2, 1)
    return m
)";
  auto prog = vm::Program::from_text(text, "");
  const auto run = [&](int64_t n) {
    vm::Session s(prog);
    return vm::run(s, "f", {Value::from_int(n)})[0].as_int();
  };
  CHECK(run(1) == 1);
  CHECK(run(2) == 2);
  CHECK_THAT(test_helpers::error_of([&] { run(-1); }), Catch::StartsWith("kv_truncate: length -1 is negative"));
  CHECK_THAT(test_helpers::error_of([&] { run(3); }),
             Catch::StartsWith("kv_truncate: length 3 is beyond the filled length: layer 0 holds 2 positions"));
  auto not_cache = vm::Program::from_text("# tensorvm ir 1\ndef g(x: Tensor) -> Tensor:\n    c = kv_truncate(x, 0)\n    return x\n", "");
  CHECK_THAT(test_helpers::error_of([&] {
               vm::Session s(not_cache);
               vm::run(s, "g", {Value(Tensor::empty(vm::DType::f32, {2}))});
             }),
             Catch::StartsWith("kv_truncate: argument 'cache' must be a KVCache"));
}
