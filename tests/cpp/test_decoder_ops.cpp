// The decoder-only LMs' ops: grouped-query attention gives the bits of attention on K/V
// repeated per query head (transformers' repeat_kv) on every kernel variant and thread
// count; rotary gives the same bits on any thread count and matches a double reference.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "ops/cpu.h"
#include "ops/registry.h"
#include "test_helpers.h"
#include "vm/thread_pool.h"

namespace {

using vm::DType;
using vm::Tensor;
using vm::Value;

Tensor randn(const vm::Shape& s, std::mt19937& g) {
  Tensor t = Tensor::empty(DType::f32, s);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(g);
  return t;
}

Tensor call(const char* name, const std::vector<Value>& args, int threads,
            const std::vector<std::pair<std::string, Value>>& kw = {}) {
  ops::OpContext ctx;
  std::unique_ptr<vm::ThreadPool> pool;
  if (threads > 1) {
    pool = std::make_unique<vm::ThreadPool>(threads);
    ctx.threads = pool.get();
    ctx.num_threads = threads;
  }
  return ops::call(*ops::Registry::get().find(name), args, kw, ctx)[0].as_tensor();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)) == 0;
}

// [B, Hkv, T, D] -> [B, Hkv * g, T, D], each head repeated g times in a row (repeat_interleave).
Tensor repeat_heads(const Tensor& t, int64_t g) {
  const int64_t B = t.size(0), Hkv = t.size(1), T = t.size(2), D = t.size(3);
  Tensor r = Tensor::empty(DType::f32, {B, Hkv * g, T, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv * g; ++h)
      std::memcpy(r.data<float>() + (b * Hkv * g + h) * T * D, t.data<float>() + (b * Hkv + h / g) * T * D,
                  size_t(T * D) * sizeof(float));
  return r;
}

struct VariantGuard {
  std::string before = ops::kernel_table().name;
  ~VariantGuard() { ops::set_kernel_variant(before); }
};

}  // namespace

TEST_CASE("grouped-query attention is attention on repeated K/V, bit for bit, on any variant and thread count",
          "[kernels][threads][attention]") {
  VariantGuard guard;
  std::mt19937 g(5);
  struct Case {
    int64_t B, H, Hkv, Tq, Tk, D;
  };
  for (const Case c : {Case{2, 8, 2, 1, 37, 64}, Case{3, 14, 2, 5, 9, 16}, Case{1, 7, 1, 1, 300, 32},
                       Case{2, 6, 3, 20, 20, 8}, Case{2, 4, 4, 3, 5, 16}}) {
    const int64_t G = c.H / c.Hkv;
    Tensor q = randn({c.B, c.H, c.Tq, c.D}, g), k = randn({c.B, c.Hkv, c.Tk, c.D}, g), v = randn({c.B, c.Hkv, c.Tk, c.D}, g);
    // causal over the last Tq positions, batch row 1 left-padded by 2
    Tensor mask = Tensor::empty(DType::boolean, {c.B, 1, c.Tq, c.Tk});
    auto* mp = static_cast<uint8_t*>(mask.raw());
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < c.Tq; ++i)
        for (int64_t j = 0; j < c.Tk; ++j)
          mp[(b * c.Tq + i) * c.Tk + j] = j <= c.Tk - c.Tq + i && !(b == 1 && j < 2);
    const Tensor kr = repeat_heads(k, G), vr = repeat_heads(v, G);
    for (const std::string& variant : ops::supported_kernel_variants()) {
      ops::set_kernel_variant(variant);
      INFO(variant << " B " << c.B << " H " << c.H << " Hkv " << c.Hkv << " Tq " << c.Tq << " Tk " << c.Tk);
      const Tensor want = call("attention", {Value(q), Value(kr), Value(vr), Value(mask)}, 1);
      for (int threads : {1, 2, 3})
        CHECK(same_bits(call("attention", {Value(q), Value(k), Value(v), Value(mask)}, threads), want));
    }
  }
}

TEST_CASE("grouped-query attention: heads that do not divide are an error naming the op", "[attention][errors]") {
  std::mt19937 g(6);
  const Tensor q = randn({1, 6, 2, 8}, g), k = randn({1, 4, 3, 8}, g), v = randn({1, 4, 3, 8}, g);
  CHECK_THAT(test_helpers::error_of([&] { call("attention", {Value(q), Value(k), Value(v)}, 1); }),
             Catch::StartsWith("attention: k has 4 heads, which do not divide q's 6"));
}

TEST_CASE("rotary: a double reference, and the same bits on any thread count", "[threads][rotary]") {
  std::mt19937 g(7);
  const int64_t B = 3, H = 5, T = 11, D = 64;
  const Tensor x = randn({B, H, T, D}, g);
  Tensor pos = Tensor::empty(DType::i64, {B, T});
  Tensor inv = Tensor::empty(DType::f32, {D / 2});
  for (int64_t i = 0; i < D / 2; ++i) inv.data<float>()[i] = float(1.0 / std::pow(500000.0, 2.0 * double(i) / double(D)));
  for (int64_t i = 0; i < B * T; ++i) pos.data<int64_t>()[i] = (i * 7919) % 100003;
  const std::vector<std::pair<std::string, Value>> kw{{"scale", Value::from_float(1.5)}};
  const Tensor y = call("rotary", {Value(x), Value(pos), Value(inv)}, 1, kw);
  for (int threads : {2, 3}) CHECK(same_bits(call("rotary", {Value(x), Value(pos), Value(inv)}, threads, kw), y));
  const float* xp = x.data<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < D / 2; ++i) {
          // the angle is the f32 product, as in transformers; the rest in double
          const double a = double(float(pos.data<int64_t>()[b * T + t]) * inv.data<float>()[i]);
          const int64_t off = ((b * H + h) * T + t) * D;
          const double x1 = xp[off + i], x2 = xp[off + i + D / 2];
          INFO("b " << b << " h " << h << " t " << t << " i " << i);
          CHECK(y.data<float>()[off + i] == Approx(1.5 * (x1 * std::cos(a) - x2 * std::sin(a))).margin(2e-6));
          CHECK(y.data<float>()[off + i + D / 2] == Approx(1.5 * (x2 * std::cos(a) + x1 * std::sin(a))).margin(2e-6));
        }
  CHECK_THAT(test_helpers::error_of([&] { call("rotary", {Value(x), Value(pos), Value(x)}, 1); }),
             Catch::StartsWith("rotary: inv_freq must be f32 [D / 2] = [32]"));
}
