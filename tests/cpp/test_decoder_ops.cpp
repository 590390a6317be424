// The decoder-only LMs' ops: grouped-query attention gives the bits of attention on K/V
// repeated per query head (transformers' repeat_kv) on every kernel variant and thread
// count; rotary gives the same bits on any thread count and matches a double reference.
// And attention's blocked path for many query rows (an encoder's self-attention, a long
// prefill) against a double reference and against the streamed path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "ops/attention.h"
#include "ops/cpu.h"
#include "ops/registry.h"
#include "test_helpers.h"
#include "core/thread_pool.h"

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

TEST_CASE("attention over many query rows: a double reference, the streamed path, GQA bits, any variant and thread count",
          "[kernels][threads][attention]") {
  VariantGuard guard;
  struct BlockedGuard {
    ~BlockedGuard() { ops::set_attention_blocked(true); }
  } blocked_guard;
  std::mt19937 g(9);
  enum Mask { none, causal_padded, additive_per_head, additive_per_query };
  struct Case {
    int64_t B, H, Hkv, Tq, Tk, D, Dv;
    Mask mask;
  };
  // Short runs (test_helpers::tests_short) leave out the two Whisper-length cases; the
  // smaller ones cross the same blocked paths.
  const bool short_run = test_helpers::tests_short();
  // Whisper-length and odd sizes: partial GEMM tiles of keys and value columns, blocks of
  // rows cut anywhere, head sizes 40 / 64 / 80, one key, Dv != D, GQA and MQA.
  for (const Case c : {Case{1, 2, 1, 1499, 1499, 64, 64, none}, Case{2, 3, 3, 300, 1499, 40, 40, causal_padded},
                       Case{2, 4, 2, 97, 131, 80, 80, additive_per_head}, Case{2, 6, 3, 33, 70, 64, 24, causal_padded},
                       Case{1, 2, 2, 50, 17, 16, 8, additive_per_query}, Case{2, 4, 1, 32, 1, 8, 8, none}}) {
    if (short_run && c.Tq * c.Tk > 100000) continue;
    INFO("B " << c.B << " H " << c.H << " Hkv " << c.Hkv << " Tq " << c.Tq << " Tk " << c.Tk << " D " << c.D << " Dv "
              << c.Dv << " mask " << int(c.mask));
    const int64_t G = c.H / c.Hkv;
    Tensor q = randn({c.B, c.H, c.Tq, c.D}, g), k = randn({c.B, c.Hkv, c.Tk, c.D}, g), v = randn({c.B, c.Hkv, c.Tk, c.Dv}, g);
    std::vector<Value> args{Value(q), Value(k), Value(v)};
    std::vector<Value> repeated{Value(q), Value(repeat_heads(k, G)), Value(repeat_heads(v, G))};
    // additive(b, h, i, j): the mask's value, -inf where masked.
    std::function<double(int64_t, int64_t, int64_t, int64_t)> additive = [](int64_t, int64_t, int64_t, int64_t) { return 0.0; };
    if (c.mask == causal_padded) {
      // causal over the last Tq positions; batch row 1's first 5 queries see no key at all
      Tensor m = Tensor::empty(DType::boolean, {c.B, 1, c.Tq, c.Tk});
      auto* mp = static_cast<uint8_t*>(m.raw());
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t i = 0; i < c.Tq; ++i)
          for (int64_t j = 0; j < c.Tk; ++j) mp[(b * c.Tq + i) * c.Tk + j] = j <= c.Tk - c.Tq + i && !(b == 1 && i < 5);
      additive = [mp, c](int64_t b, int64_t, int64_t i, int64_t j) {
        return mp[(b * c.Tq + i) * c.Tk + j] ? 0.0 : -HUGE_VAL;
      };
      args.push_back(Value(m));
      repeated.push_back(Value(m));
    } else if (c.mask != none) {
      // per (batch, head, query, key), or per query broadcast over the keys ([B, 1, Tq, 1])
      const bool per_head = c.mask == additive_per_head;
      Tensor m = per_head ? randn({c.B, c.H, c.Tq, c.Tk}, g) : randn({c.B, 1, c.Tq, 1}, g);
      const float* mp = m.data<float>();
      additive = [mp, c, per_head](int64_t b, int64_t h, int64_t i, int64_t j) {
        return double(per_head ? mp[((b * c.H + h) * c.Tq + i) * c.Tk + j] : mp[b * c.Tq + i]);
      };
      args.push_back(Value(m));
      repeated.push_back(Value(m));
    }
    // The reference in double.
    std::vector<double> want(size_t(c.B * c.H * c.Tq * c.Dv), 0.0), s(size_t(c.Tk));
    const double scale = 1.0 / std::sqrt(double(c.D));
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 0; h < c.H; ++h)
        for (int64_t i = 0; i < c.Tq; ++i) {
          const float* qi = q.data<float>() + ((b * c.H + h) * c.Tq + i) * c.D;
          const float* K = k.data<float>() + (b * c.Hkv + h / G) * c.Tk * c.D;
          const float* V = v.data<float>() + (b * c.Hkv + h / G) * c.Tk * c.Dv;
          double mx = -HUGE_VAL;
          for (int64_t j = 0; j < c.Tk; ++j) {
            double d = 0;
            for (int64_t e = 0; e < c.D; ++e) d += double(qi[e]) * K[j * c.D + e];
            s[j] = d * scale + additive(b, h, i, j);
            mx = std::max(mx, s[j]);
          }
          if (mx == -HUGE_VAL) continue;  // nothing to attend to: zeros
          double sum = 0;
          for (int64_t j = 0; j < c.Tk; ++j) sum += s[j] = std::exp(s[j] - mx);
          double* o = want.data() + ((b * c.H + h) * c.Tq + i) * c.Dv;
          for (int64_t j = 0; j < c.Tk; ++j)
            for (int64_t e = 0; e < c.Dv; ++e) o[e] += s[j] / sum * V[j * c.Dv + e];
        }
    for (const std::string& variant : ops::supported_kernel_variants()) {
      ops::set_kernel_variant(variant);
      INFO(variant);
      const Tensor got = call("attention", args, 1);
      double worst = 0;
      for (int64_t i = 0; i < got.numel(); ++i) worst = std::max(worst, std::fabs(got.data<float>()[i] - want[size_t(i)]));
      CHECK(worst < 2e-5);
      for (int threads : {2, 3}) CHECK(same_bits(call("attention", args, threads), got));
      if (G > 1) CHECK(same_bits(call("attention", repeated, 1), got));
      ops::set_attention_blocked(false);
      const Tensor streamed = call("attention", args, 2);
      ops::set_attention_blocked(true);
      double apart = 0;
      for (int64_t i = 0; i < got.numel(); ++i)
        apart = std::max(apart, double(std::fabs(got.data<float>()[i] - streamed.data<float>()[i])));
      CHECK(apart < 2e-5);
    }
  }
}
