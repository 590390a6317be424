// Every kernel variant this CPU runs, against a double-precision reference, and with 1,
// 2 and 3 threads: the output must be bit-identical whatever the thread count (each
// output's arithmetic is fixed wherever a thread's range starts). Row counts cover each
// path (1 row, the 2-8 row streaming kernel, 9-32 rows in L1 blocks, the GEMM with a
// partial tile), input sizes cover partial vectors and GEMM slices.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>
#include <random>
#include <utility>

#include "core/half.h"
#include "ops/cpu.h"
#include "ops/gemm_library.h"
#include "ops/registry.h"
#include "core/thread_pool.h"
#include "test_helpers.h"

namespace {

using vm::DType;
using vm::Tensor;
using vm::Value;

Tensor random_tensor(DType dt, const vm::Shape& s, std::mt19937& g) {
  Tensor t = Tensor::empty(dt, s);
  if (dt == DType::f32) {
    std::normal_distribution<float> d(0.0f, 0.5f);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(g);
  } else {
    std::uniform_int_distribution<int> d(-127, 127);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = int8_t(d(g));
  }
  return t;
}

std::vector<Value> run_op_outputs(const char* name, const std::vector<Value>& args, int threads) {
  ops::OpContext ctx;
  std::unique_ptr<vm::ThreadPool> pool;
  if (threads > 1) {
    pool = std::make_unique<vm::ThreadPool>(threads);
    ctx.threads = pool.get();
    ctx.num_threads = threads;
  }
  return ops::call(*ops::Registry::get().find(name), args, {}, ctx);
}

Tensor run_op(const char* name, const std::vector<Value>& args, int threads) {
  return run_op_outputs(name, args, threads)[0].as_tensor();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)) == 0;
}

// got == ref within tol, where ref is rounded to float first for the values float cannot
// hold (overflow to inf) and NaN must meet NaN (silu(-inf) is -inf / inf, as in torch).
bool close(float got, double ref, double tol) {
  const float rf = float(ref);
  if (std::isnan(rf) || std::isinf(rf)) return std::isnan(rf) ? std::isnan(got) : got == rf;
  return std::fabs(got - ref) <= tol;
}

// Restores the variant chosen before the test.
struct VariantGuard {
  std::string before = ops::kernel_table().name;
  ~VariantGuard() { ops::set_kernel_variant(before); }
};

// q [out, in_p] in [-8, 7] packed two a byte in the format's block order.
Tensor pack(const std::vector<int>& q, int64_t out, int64_t in_p) {
  Tensor w = Tensor::empty(DType::i8, {out, in_p / 2});
  uint8_t* p = reinterpret_cast<uint8_t*>(w.data<int8_t>());
  for (int64_t j = 0; j < out; ++j)
    for (int64_t b = 0; b < in_p / 32; ++b)
      for (int i = 0; i < 16; ++i)
        p[j * in_p / 2 + b * 16 + i] =
            uint8_t((q[j * in_p + b * 32 + i] + 8) | ((q[j * in_p + b * 32 + 16 + i] + 8) << 4));
  return w;
}

// A random 4-bit weight (ops/quantized_int4.cpp): q, packed, and its scales.
struct Weight {
  std::vector<int> q;
  Tensor w, scale;
};

Weight random_weight(int64_t out, int64_t in, int64_t g, std::mt19937& gen, bool pow2) {
  const int64_t in_p = (in + g - 1) / g * g;
  std::uniform_int_distribution<int> qd(-8, 7), ed(-2, 1);
  std::normal_distribution<float> sd(0.0f, 0.05f);
  Weight r{std::vector<int>(size_t(out * in_p), 0), {}, Tensor::empty(DType::f32, {out, in_p / g})};
  for (int64_t j = 0; j < out; ++j)
    for (int64_t k = 0; k < in; ++k) r.q[j * in_p + k] = qd(gen);
  for (int64_t i = 0; i < r.scale.numel(); ++i) r.scale.data<float>()[i] = pow2 ? std::ldexp(1.0f, ed(gen)) : sd(gen);
  r.scale.data<float>()[0] = 0.0f;  // a zero group
  r.w = pack(r.q, out, in_p);
  return r;
}

}  // namespace

TEST_CASE("cpu detection names the variants this CPU runs", "[kernels]") {
  const auto supported = ops::supported_kernel_variants();
  REQUIRE(!supported.empty());
  CHECK(supported.front() == "scalar");
  CHECK_THROWS_WITH(ops::set_kernel_variant("avx3"), Catch::Contains("unknown kernel variant 'avx3'"));
  VariantGuard guard;
  ops::set_kernel_variant("auto");
  CHECK(std::string(ops::kernel_table().name) == supported.back());
  CHECK(ops::describe_cpu().find("active: " + supported.back()) != std::string::npos);
}

TEST_CASE("linear, linear_int8: every variant matches the reference on any thread count", "[kernels][threads]") {
  VariantGuard guard;
  std::mt19937 g(7);
  for (const std::string& variant : ops::supported_kernel_variants()) {
    ops::set_kernel_variant(variant);
    for (int64_t rows : {1, 2, 5, 8, 9, 17, 32, 33, 64, 300}) {
      for (int64_t in : {1, 7, 77, 300, 4100}) {  // 4100: weight rows past L1 (blocked_rows)
        // Short runs leave out the largest case (300 rows of 4100), half the test's work;
        // 64 rows of 4100 and 300 of 300 cross the same paths.
        if (test_helpers::tests_short() && rows * in > 300 * 300) continue;
        const int64_t outf = 97;  // odd: partial tiles, odd split points
        INFO(variant << " rows " << rows << " in " << in);
        Tensor x = random_tensor(DType::f32, {rows, in}, g);
        Tensor w = random_tensor(DType::f32, {outf, in}, g);
        Tensor q = random_tensor(DType::i8, {outf, in}, g);
        Tensor scale = random_tensor(DType::f32, {outf}, g);
        Tensor b = random_tensor(DType::f32, {outf}, g);
        const Tensor y1 = run_op("linear", {Value(x), Value(w), Value(b)}, 1);
        const Tensor q1 = run_op("linear_int8", {Value(x), Value(q), Value(scale), Value(b)}, 1);
        for (int threads : {2, 3}) {
          CHECK(same_bits(y1, run_op("linear", {Value(x), Value(w), Value(b)}, threads)));
          CHECK(same_bits(q1, run_op("linear_int8", {Value(x), Value(q), Value(scale), Value(b)}, threads)));
        }
        const float* xp = x.data<float>();
        double worst = 0.0, worst_q = 0.0;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < outf; ++j) {
            double s = b.data<float>()[j], sq = 0.0, mag = 0.0;
            for (int64_t k = 0; k < in; ++k) {
              s += double(xp[r * in + k]) * w.data<float>()[j * in + k];
              sq += double(xp[r * in + k]) * q.data<int8_t>()[j * in + k];
              mag += std::fabs(double(xp[r * in + k]) * q.data<int8_t>()[j * in + k]);
            }
            sq = sq * scale.data<float>()[j] + b.data<float>()[j];
            worst = std::max(worst, std::fabs(s - y1.data<float>()[r * outf + j]));
            worst_q = std::max(worst_q, std::fabs(sq - q1.data<float>()[r * outf + j]) /
                                            (1.0 + mag * std::fabs(scale.data<float>()[j])));
          }
        CHECK(worst < (in > 300 ? 2e-3 : 1e-4));  // float32 sums of 4100 terms round more
        CHECK(worst_q < 1e-5);
      }
    }
  }
}

// ---- 16-bit weights: linear with an f16 / bf16 weight equals linear on the weight
// widened to f32 bit for bit (the kernels widen exactly and keep the f32 arithmetic);
// embedding with a 16-bit table gives the widened rows.

namespace {

// The same floats, NaN meeting NaN (a NaN's bits may differ: F16C quiets a signalling one).
bool same_values(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float p = a.data<float>()[i], q = b.data<float>()[i];
    if (std::isnan(p) != std::isnan(q)) return false;
    if (!std::isnan(p) && std::memcmp(&p, &q, 4) != 0) return false;
  }
  return true;
}

// A random 16-bit weight [outf, in] (values of about 0.5; with `specials`, about 1% NaN,
// inf, subnormal and -0 entries) and its f32 widening.
std::pair<Tensor, Tensor> weight16(DType dt, int64_t outf, int64_t in, std::mt19937& g, bool specials) {
  Tensor w = Tensor::empty(dt, {outf, in}), wide = Tensor::empty(DType::f32, {outf, in});
  std::normal_distribution<float> d(0.0f, 0.5f);
  std::uniform_int_distribution<int> pick(0, 99);
  auto* p = static_cast<uint16_t*>(w.raw());
  const bool f16 = dt == DType::f16;
  const uint16_t f16s[] = {0x7e00, 0x7c00, 0xfc00, 0x0001, 0x8000, 0x03ff};
  const uint16_t bf16s[] = {0x7fc0, 0x7f80, 0xff80, 0x0001, 0x8000, 0x007f};
  for (int64_t i = 0; i < w.numel(); ++i) {
    p[i] = f16 ? vm::f32_to_f16(d(g)) : vm::f32_to_bf16(d(g));
    if (specials && pick(g) == 0) p[i] = (f16 ? f16s : bf16s)[pick(g) % 6];
    wide.data<float>()[i] = f16 ? vm::f16_to_f32(p[i]) : vm::bf16_to_f32(p[i]);
  }
  return {w, wide};
}

// f(dt) for f16 and bf16 on every variant this CPU runs.
template <class F>
void each_variant_16bit(F&& f) {
  VariantGuard guard;
  for (const std::string& variant : ops::supported_kernel_variants()) {
    ops::set_kernel_variant(variant);
    for (DType dt : {DType::f16, DType::bf16}) f(dt);
  }
}

}  // namespace

TEST_CASE("linear with an f16 or bf16 weight equals linear on the widened weight, every variant", "[kernels][half]") {
  std::mt19937 g(11);
  // Rows: 1, the 2-8 streaming kernel, 9-32 in L1 blocks, 33 the GEMM; in: 1, partial
  // vectors, not a multiple of the lanes; 4100: several vectors, the 5-8 row two passes.
  each_variant_16bit([&](DType dt) {
    for (int64_t rows : {1, 2, 3, 4, 5, 6, 7, 8, 9, 33}) {
      for (int64_t in : {1, 7, 16, 33, 77, 300, 4100}) {
        for (int64_t outf : {1, 5, 97}) {
          if (in == 4100 && (outf != 97 || (rows != 1 && rows != 6))) continue;
          INFO(ops::kernel_table().name << " " << vm::dtype_name(dt) << " rows " << rows << " in " << in << " out " << outf);
          auto [w, wide] = weight16(dt, outf, in, g, in == 77);
          Tensor x = random_tensor(DType::f32, {rows, in}, g), b = random_tensor(DType::f32, {outf}, g);
          const Tensor want = run_op("linear", {Value(x), Value(wide), Value(b)}, 1);
          REQUIRE(same_values(run_op("linear", {Value(x), Value(w), Value(b)}, 1), want));
          CHECK(same_values(run_op("linear", {Value(x), Value(w)}, 1), run_op("linear", {Value(x), Value(wide)}, 1)));
          for (int threads : {2, 3}) CHECK(same_values(run_op("linear", {Value(x), Value(w), Value(b)}, threads), want));
          if (rows == 9 || rows == 33) {
            const Value act = Value::from_str("silu");
            CHECK(same_values(run_op("linear_act", {Value(x), Value(w), Value(b), act}, 2),
                              run_op("linear_act", {Value(x), Value(wide), Value(b), act}, 2)));
          }
        }
      }
    }
  });
}

TEST_CASE("embedding with an f16 or bf16 table gives the widened rows, every variant", "[kernels][half]") {
  std::mt19937 g(5);
  each_variant_16bit([&](DType dt) {
    for (int64_t d : {1, 7, 16, 37}) {
      INFO(ops::kernel_table().name << " " << vm::dtype_name(dt) << " d " << d);
      // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in a lambda.
      const auto weights = weight16(dt, 11, d, g, true);
      const Tensor& w = weights.first;
      const Tensor& wide = weights.second;
      Tensor ids = Tensor::empty(DType::i64, {2, 3});
      const int64_t pick[6] = {0, 10, 3, 3, 7, 1};
      std::memcpy(ids.raw(), pick, sizeof pick);
      const Tensor got = run_op("embedding", {Value(ids), Value(w)}, 1);
      CHECK(got.dtype() == DType::f32);
      CHECK(same_values(got, run_op("embedding", {Value(ids), Value(wide)}, 1)));
      Tensor id = Tensor::empty(DType::i32, {1});
      id.data<int32_t>()[0] = 11;
      CHECK_THAT(test_helpers::error_of([&] { run_op("embedding", {Value(id), Value(w)}, 1); }),
                 Catch::Contains("id 11 out of range [0, 11)"));
    }
  });
}

TEST_CASE("linear refuses 16-bit x and bias and other weight dtypes; ops without 16-bit kernels name it", "[half]") {
  std::mt19937 g(3);
  auto [w, wide] = weight16(DType::f16, 4, 3, g, false);
  Tensor x = random_tensor(DType::f32, {2, 3}, g);
  auto err = [&](const char* op, std::vector<Value> args) { return test_helpers::error_of([&] { run_op(op, args, 1); }); };
  CHECK_THAT(err("linear", {Value(w), Value(w)}), Catch::Contains("x must be f32, got f16[4, 3]"));
  CHECK_THAT(err("linear", {Value(x), Value(Tensor::empty(DType::i8, {4, 3}))}),
             Catch::Contains("weight must be f32, f16 or bf16, got i8[4, 3]"));
  CHECK_THAT(err("linear", {Value(x), Value(w), Value(Tensor::empty(DType::f16, {4}))}), Catch::Contains("bias must be f32[4]"));
  CHECK_THAT(err("linear", {Value(x), Value(Tensor::empty(DType::bf16, {4, 2}))}), Catch::Contains("x has 3 features"));
  CHECK_THAT(err("matmul", {Value(x), Value(w)}), Catch::Contains("f16"));
  CHECK_THAT(err("softmax", {Value(w), Value::from_int(-1)}), Catch::Contains("f16"));
  CHECK_THAT(err("linear_int8", {Value(x), Value(w), Value(wide)}), Catch::Contains("weight must be i8"));
}

TEST_CASE("softmax, log_softmax, exp, sigmoid, silu: the same bits on every variant and thread count", "[kernels][threads]") {
  // Their lanes' arithmetic is fixed (elementwise_math.h), so unlike linear the variants
  // agree with each other exactly; the reference is libm in double.
  VariantGuard guard;
  std::mt19937 g(11);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t cols : {1, 15, 16, 17, 1000, 1025, 70000}) {
    const int64_t rows = cols > 1000 ? 3 : 5;
    Tensor x = random_tensor(DType::f32, {rows, cols}, g);
    float* xp = x.data<float>();
    for (int64_t i = 0; i < rows * cols; ++i) xp[i] *= 30.0f;  // past exp's clamp both ways
    if (cols >= 17) {  // edge values, in a vector's body and in its tail
      xp[3] = -inf, xp[5] = 89.0f, xp[7] = -104.0f, xp[16] = -inf;
      xp[cols + 2] = std::numeric_limits<float>::quiet_NaN();  // row 1 becomes NaN
    }
    std::vector<Tensor> first;
    for (const std::string& variant : ops::supported_kernel_variants()) {
      ops::set_kernel_variant(variant);
      size_t k = 0;
      for (const char* name : {"softmax", "log_softmax", "exp", "sigmoid", "silu"}) {
        INFO(variant << " " << name << " cols " << cols);
        const bool reduce = std::string(name).find("softmax") != std::string::npos;
        std::vector<Value> args{Value(x)};
        if (reduce) args.push_back(Value::from_int(-1));
        const Tensor y = run_op(name, args, 1);
        for (int threads : {2, 3}) CHECK(same_bits(y, run_op(name, args, threads)));
        if (first.size() <= k) {
          first.push_back(y);
        } else {
          CHECK(same_bits(first[k], y));
        }
        ++k;
      }
    }
    // The first variant (scalar) against libm in double.
    const float* s = first[0].data<float>();
    const float* ls = first[1].data<float>();
    const float* e = first[2].data<float>();
    const float* sg = first[3].data<float>();
    const float* sl = first[4].data<float>();
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = xp + r * cols;
      double m = -HUGE_VAL, sum = 0;
      bool nan = false;
      for (int64_t c = 0; c < cols; ++c) {
        nan = nan || std::isnan(xr[c]);
        m = std::max(m, double(xr[c]));
      }
      for (int64_t c = 0; c < cols; ++c) sum += std::exp(double(xr[c]) - m);
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t i = r * cols + c;
        INFO("row " << r << " col " << c << " x " << xr[c]);
        const double v = xr[c];
        if (nan) {
          CHECK(std::isnan(s[i]));
          CHECK(std::isnan(ls[i]));
        } else {
          // x - m is rounded to float first: relative error ~|x - m| * 2^-24 in exp.
          const double ref = std::exp(v - m) / sum;
          CHECK(close(s[i], ref, std::isinf(v) ? 0.0 : 4e-7 * (1 + std::fabs(v - m)) * ref + 1e-37));  // + denormals
          CHECK(close(ls[i], v - m - std::log(sum), 1e-5 * (1 + std::fabs(v - m))));
        }
        if (std::isnan(v)) {
          CHECK((std::isnan(e[i]) && std::isnan(sg[i]) && std::isnan(sl[i])));
          continue;
        }
        const double ev = std::exp(v);
        CHECK(close(e[i], ev, 2e-7 * ev + 1e-44));
        CHECK(close(sg[i], 1 / (1 + std::exp(-v)), 2e-7));
        CHECK(close(sl[i], v / (1 + std::exp(-v)), 2e-7 * std::max(1.0, std::fabs(v))));
      }
    }
  }
}

// Distance from got to the exact value in units of the float spacing at the exact value.
double ulps(float got, double exact) {
  const float e = float(exact);
  const double spacing = std::nextafter(std::fabs(e), std::numeric_limits<float>::infinity()) - std::fabs(e);
  return std::fabs(double(got) - exact) / spacing;
}

TEST_CASE("erf within 2 ulp of libm's in double, exact gelu close to its formula, the same bits on every variant",
          "[kernels][threads][erf]") {
  VariantGuard guard;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // Dense over [-6, 6] (erf is +-1 in float past 3.92), every power of two's neighbourhood
  // down to denormals (erf(x) ~ 2x/sqrt(pi): relative accuracy matters there), the pieces'
  // seams, and the special values.
  std::vector<float> xs;
  // (Short runs: every 7th point of the dense range.)
  const int dense_step = test_helpers::tests_short() ? 7 : 1;
  for (int i = -600000; i <= 600000; i += dense_step) xs.push_back(float(i) * 1e-5f);
  for (int e = -149; e <= 10; ++e)
    for (float m : {1.0f, 1.1f, 1.5f, 1.9f}) {
      xs.push_back(std::ldexp(m, e));
      xs.push_back(-std::ldexp(m, e));
    }
  for (float seam : {0.921875f, 3.92f})
    for (int k = -3; k <= 3; ++k) xs.push_back(seam + float(k) * std::numeric_limits<float>::epsilon() * seam);
  for (float v : {0.0f, -0.0f, inf, -inf, nan, 1e30f, -1e30f, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min()})
    xs.push_back(v);
  Tensor x = Tensor::empty(DType::f32, {int64_t(xs.size())});
  std::memcpy(x.data<float>(), xs.data(), xs.size() * sizeof(float));
  Tensor first_erf, first_gelu;
  bool have_first = false;
  for (const std::string& variant : ops::supported_kernel_variants()) {
    ops::set_kernel_variant(variant);
    INFO(variant);
    const Tensor y = run_op("erf", {Value(x)}, 1);
    const Tensor gy = run_op("gelu", {Value(x)}, 1);
    for (int threads : {2, 3}) {
      CHECK(same_bits(y, run_op("erf", {Value(x)}, threads)));
      CHECK(same_bits(gy, run_op("gelu", {Value(x)}, threads)));
    }
    if (!have_first) {
      first_erf = y;
      first_gelu = gy;
      have_first = true;
    } else {  // each lane's arithmetic is fixed (no fused multiply-add): one answer everywhere
      CHECK(same_bits(first_erf, y));
      CHECK(same_bits(first_gelu, gy));
    }
  }
  const float* ey = first_erf.data<float>();
  const float* gy = first_gelu.data<float>();
  double worst = 0.0;
  float worst_at = 0.0f;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float v = xs[i];
    INFO("x " << v << " erf " << ey[i] << " gelu " << gy[i]);
    if (std::isnan(v)) {
      CHECK(std::isnan(ey[i]));
      CHECK(std::isnan(gy[i]));
      continue;
    }
    CHECK(std::signbit(ey[i]) == std::signbit(v));  // erf(-0) = -0, odd everywhere
    const double u = ulps(ey[i], std::erf(double(v)));
    if (u > worst) worst = u, worst_at = v;
    // gelu(x) = x/2 (1 + erf(x/sqrt 2)): 1 + erf cancels for x << 0, so its error is
    // absolute, about |x| times erf's (plus the rounding of x/sqrt 2 and the products).
    if (std::isinf(v)) {
      // the formula's values: inf * 0.5 * 2 and -inf * 0.5 * (1 - 1) = NaN (torch's is NaN for both)
      CHECK((v > 0 ? gy[i] == inf : std::isnan(gy[i])));
      continue;
    }
    const double g = double(v) * 0.5 * (1.0 + std::erf(double(v) / std::sqrt(2.0)));
    CHECK(std::fabs(gy[i] - g) <= 4e-7 * std::fabs(double(v)) + 1e-7 * std::fabs(g) + 1e-38);
  }
  INFO("worst " << worst << " ulp at x = " << worst_at);
  CHECK(worst <= 2.0);
  WARN("erf: worst " << worst << " ulp at x = " << worst_at);
  CHECK(ey[std::find_if(xs.begin(), xs.end(), [](float v) { return v == 0.0f && std::signbit(v); }) - xs.begin()] == 0.0f);
}

TEST_CASE("tanh gelu within a few ulp of its formula in double, the same bits on every variant and thread count",
          "[kernels][threads][gelu]") {
  VariantGuard guard;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // Dense over [-12, 12] (past about -10 the value underflows to 0 in float), the powers of
  // two from denormals up (x^3 overflows from about 7e12), and the special values.
  std::vector<float> xs;
  // (Short runs: every 21st point of the dense range.)
  const int dense_step = test_helpers::tests_short() ? 21 : 3;
  for (int i = -1200000; i <= 1200000; i += dense_step) xs.push_back(float(i) * 1e-5f);
  for (int e = -149; e <= 127; ++e)
    for (float m : {1.0f, 1.3f, 1.9f}) {
      xs.push_back(std::ldexp(m, e));
      xs.push_back(-std::ldexp(m, e));
    }
  for (float v : {0.0f, -0.0f, inf, -inf, nan, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()})
    xs.push_back(v);
  Tensor x = Tensor::empty(DType::f32, {int64_t(xs.size())});
  std::memcpy(x.data<float>(), xs.data(), xs.size() * sizeof(float));
  const std::vector<vm::Value> args = {Value(x), Value::from_str("tanh")};
  Tensor first;
  bool have_first = false;
  for (const std::string& variant : ops::supported_kernel_variants()) {
    ops::set_kernel_variant(variant);
    INFO(variant);
    const Tensor y = run_op("gelu", args, 1);
    for (int threads : {2, 3}) CHECK(same_bits(y, run_op("gelu", args, threads)));
    if (!have_first) first = y, have_first = true;
    else CHECK(same_bits(first, y));  // no fused multiply-add: one answer everywhere
  }
  const float* gy = first.data<float>();
  double worst = 0.0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i];
    INFO("x " << v << " gelu " << gy[i]);
    if (std::isnan(v) || v == -double(inf)) {  // -inf * (1 + tanh(-inf)) = -inf * 0, NaN as in torch
      CHECK(std::isnan(gy[i]));
      continue;
    }
    if (v == double(inf)) {
      CHECK(gy[i] == inf);
      continue;
    }
    // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), in double without cancellation
    const double u = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
    const double g = std::isinf(u) ? (u > 0 ? v : -0.0) : v / (1.0 + std::exp(-2.0 * u));
    CHECK(std::signbit(gy[i]) == std::signbit(g));
    // Near float's bottom exp(-2u) overflows float before the quotient underflows (x
    // about -10: x / inf = -0, torch's tanh is -1 there too), and results are denormal.
    if (std::fabs(g) < 1e-36) {
      CHECK(std::fabs(gy[i] - g) <= 1e-36);
      continue;
    }
    // exp(-2u) carries the rounding of its argument -2u (a few roundings of x^3, the sum and
    // the products: relative 3 eps) as a relative error 3 eps |2u|, which grows for x << 0
    // (|2u| up to 88 before it overflows); torch's float formula is coarser there (1 +
    // tanh(u) cancels to whole ulps of 1).
    const double err = ulps(gy[i], g) / (4.0 + 6.0 * std::fabs(2.0 * u));
    worst = std::max(worst, err);
    CHECK(err <= 1.0);
  }
  WARN("tanh gelu: worst " << worst << " of the bound 4 + 6 |2u| ulp");
}

TEST_CASE("linear through the library GEMM: the same on any thread count, close to the reference", "[kernels][threads]") {
  if (ops::library_gemm_name().empty()) {
    WARN("this build has no library GEMM (oneDNN)");
    return;
  }
  struct BackendGuard {
    ~BackendGuard() { ops::set_gemm_backend("auto"); }
  } guard;
  ops::set_gemm_backend("onednn");
  REQUIRE(ops::library_gemm_active());
  std::mt19937 g(5);
  for (int64_t rows : {33, 64, 300}) {
    for (int64_t outf : {97, 256, 513}) {  // partial chunks of 256 columns, odd split points
      const int64_t in = 77;
      INFO("rows " << rows << " outf " << outf);
      Tensor x = random_tensor(DType::f32, {rows, in}, g);
      Tensor w = random_tensor(DType::f32, {outf, in}, g);
      Tensor b = random_tensor(DType::f32, {outf}, g);
      const Tensor y1 = run_op("linear", {Value(x), Value(w), Value(b)}, 1);
      for (int threads : {2, 3}) CHECK(same_bits(y1, run_op("linear", {Value(x), Value(w), Value(b)}, threads)));
      double worst = 0.0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < outf; ++j) {
          double s = b.data<float>()[j];
          for (int64_t k = 0; k < in; ++k) s += double(x.data<float>()[r * in + k]) * w.data<float>()[j * in + k];
          worst = std::max(worst, std::fabs(s - y1.data<float>()[r * outf + j]));
        }
      CHECK(worst < 1e-4);
    }
  }
  // 17..32 rows take the library only for weights of 4M floats or more (library_gemm_for)
  for (int64_t rows : {17, 32}) {
    const int64_t in = 1024, outf = 4097;
    INFO("rows " << rows << ", a 1024 x 4097 weight");
    Tensor x = random_tensor(DType::f32, {rows, in}, g);
    Tensor w = random_tensor(DType::f32, {outf, in}, g);
    Tensor q = random_tensor(DType::i8, {outf, in}, g);
    Tensor scale = Tensor::empty(DType::f32, {outf});
    for (int64_t j = 0; j < outf; ++j) scale.data<float>()[j] = 1.0f / 256;
    const Tensor y1 = run_op("linear", {Value(x), Value(w)}, 1);
    const Tensor q1 = run_op("linear_int8", {Value(x), Value(q), Value(scale)}, 1);
    CHECK(same_bits(y1, run_op("linear", {Value(x), Value(w)}, 2)));
    CHECK(same_bits(q1, run_op("linear_int8", {Value(x), Value(q), Value(scale)}, 2)));
    double worst = 0.0, worst_q = 0.0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < outf; ++j) {
        double s = 0.0, sq = 0.0;
        for (int64_t k = 0; k < in; ++k) {
          s += double(x.data<float>()[r * in + k]) * w.data<float>()[j * in + k];
          sq += double(x.data<float>()[r * in + k]) * q.data<int8_t>()[j * in + k] / 256;
        }
        worst = std::max(worst, std::fabs(s - y1.data<float>()[r * outf + j]));
        worst_q = std::max(worst_q, std::fabs(sq - q1.data<float>()[r * outf + j]));
      }
    CHECK(worst < 1e-3);
    CHECK(worst_q < 1e-3);
  }
  ops::set_gemm_backend("own");
  CHECK(!ops::library_gemm_active());
  CHECK_THROWS_WITH(ops::set_gemm_backend("mkl"), Catch::Contains("unknown GEMM backend 'mkl'"));
}

TEST_CASE("topk over long rows: split over threads, the same as one thread and as a sort", "[threads]") {
  // beam search's candidates: [batch, beams x vocab] (NLLB: 8 x 4 x 256206), k = 2 x beams
  std::mt19937 g(13);
  const int64_t rows = 5, n = 70001, k = 8;
  Tensor x = random_tensor(DType::f32, {rows, n}, g);
  float* xp = x.data<float>();
  for (int64_t r = 0; r < rows; ++r) xp[r * n + 100] = xp[r * n + 60000] = 9.0f;  // a tie: lower index first
  auto topk = [&](int threads) { return run_op_outputs("topk", {Value(x), Value::from_int(k)}, threads); };
  const auto one = topk(1);
  for (int threads : {2, 3}) {
    const auto many = topk(threads);
    CHECK(same_bits(one[0].as_tensor(), many[0].as_tensor()));
    CHECK(std::memcmp(one[1].as_tensor().data<int64_t>(), many[1].as_tensor().data<int64_t>(),
                      rows * k * sizeof(int64_t)) == 0);
  }
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    const float* row = xp + r * n;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    for (int64_t j = 0; j < k; ++j) {
      CHECK(one[1].as_tensor().data<int64_t>()[r * k + j] == order[j]);
      CHECK(one[0].as_tensor().data<float>()[r * k + j] == row[order[j]]);
    }
  }
}

// The 4-bit weight ops (linear_int4, linear_w4a8, embedding_int4) on every variant (neon and
// scalar under qemu on aarch64) against a double reference on the dequantized weight, with
// 1, 2 and 3 threads bit-identical. linear_w4a8 with power-of-two scales and x that
// quantizes to itself is exact: its block sums are integers in every variant.
TEST_CASE("linear_int4, linear_w4a8: every variant matches the reference on any thread count", "[kernels][threads]") {
  VariantGuard guard;
  std::mt19937 gen(29);
  for (const std::string& variant : ops::supported_kernel_variants()) {
    ops::set_kernel_variant(variant);
    for (int64_t g : {32, 128}) {
      for (int64_t in : {1, 31, 33, 300, 4100}) {
        for (int64_t rows : {1, 2, 5, 8, 9, 33}) {
          if (test_helpers::tests_short() && rows * in > 9 * 4100) continue;
          const int64_t out = 37, in_p = (in + g - 1) / g * g;
          INFO(variant << " g " << g << " in " << in << " rows " << rows);
          const Weight w = random_weight(out, in, g, gen, false);
          Tensor x = Tensor::empty(DType::f32, {rows, in});
          std::normal_distribution<float> xd(0.0f, 1.0f);
          for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = xd(gen);
          Tensor b = Tensor::empty(DType::f32, {out});
          for (int64_t j = 0; j < out; ++j) b.data<float>()[j] = xd(gen);
          const std::vector<Value> args{Value(x), Value(w.w), Value(w.scale), Value(b)};
          const Tensor y1 = run_op("linear_int4", args, 1), a1 = run_op("linear_w4a8", args, 1);
          for (int threads : {2, 3}) {
            CHECK(same_bits(y1, run_op("linear_int4", args, threads)));
            CHECK(same_bits(a1, run_op("linear_w4a8", args, threads)));
          }
          double worst = 0.0, worst_a = 0.0;
          for (int64_t r = 0; r < rows; ++r) {
            const float* xr = x.data<float>() + r * in;
            for (int64_t j = 0; j < out; ++j) {
              double s = b.data<float>()[j], mag = 1.0, sa = b.data<float>()[j];
              for (int64_t k0 = 0; k0 < in; k0 += 32) {  // w4a8 quantizes x per block of 32 (q8_0)
                float amax = 0.0f;
                for (int64_t k = k0; k < std::min(in, k0 + 32); ++k) amax = std::max(amax, std::fabs(xr[k]));
                const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
                const double d = w.scale.data<float>()[j * (in_p / g) + k0 / g];
                int64_t isum = 0;
                for (int64_t k = k0; k < std::min(in, k0 + 32); ++k) {
                  const int q = w.q[j * in_p + k];
                  s += double(xr[k]) * q * d;
                  mag += std::fabs(double(xr[k]) * q * d);
                  isum += q * int64_t(std::nearbyint(xr[k] * inv));
                }
                sa += double(isum) * double((amax / 127.0f) * float(d));
              }
              worst = std::max(worst, std::fabs(s - y1.data<float>()[r * out + j]) / mag);
              worst_a = std::max(worst_a, std::fabs(sa - a1.data<float>()[r * out + j]) / mag);
            }
          }
          CHECK(worst < 1e-5);
          CHECK(worst_a < 1e-5);
        }
      }
    }
  }
}

// f16 scales (q4_0's) are widened to f32 for the rows a thread reads, in pieces of 64
// outputs: every op gives the f32-scale result bit for bit, on every variant and thread
// count, over output counts that cut pieces and thread chunks anywhere.
TEST_CASE("linear_int4, linear_w4a8, embedding_int4: f16 scales give the f32-scale result", "[kernels][threads]") {
  VariantGuard guard;
  std::mt19937 gen(16);
  for (const std::string& variant : ops::supported_kernel_variants()) {
    ops::set_kernel_variant(variant);
    for (int64_t out : {1, 63, 65, 300}) {
      for (int64_t rows : {1, 3, 9, 40}) {
        const int64_t in = 100, g = 32;
        INFO(variant << " out " << out << " rows " << rows);
        Weight w = random_weight(out, in, g, gen, false);
        Tensor s16 = Tensor::empty(DType::f16, w.scale.shape());
        auto* h = static_cast<uint16_t*>(s16.raw());
        for (int64_t i = 0; i < w.scale.numel(); ++i) {
          h[i] = vm::f32_to_f16(w.scale.data<float>()[i]);
          w.scale.data<float>()[i] = vm::f16_to_f32(h[i]);  // the same values in f32
        }
        Tensor x = Tensor::empty(DType::f32, {rows, in});
        std::normal_distribution<float> xd(0.0f, 1.0f);
        for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = xd(gen);
        for (const char* op : {"linear_int4", "linear_w4a8"}) {
          const Tensor want = run_op(op, {Value(x), Value(w.w), Value(w.scale)}, 1);
          for (int threads : {1, 2, 3}) CHECK(same_bits(want, run_op(op, {Value(x), Value(w.w), Value(s16)}, threads)));
        }
        Tensor ids = Tensor::empty(DType::i64, {rows});
        for (int64_t i = 0; i < rows; ++i) ids.data<int64_t>()[i] = (i * 7) % out;
        CHECK(same_bits(run_op("embedding_int4", {Value(ids), Value(w.w), Value(w.scale), Value::from_int(in)}, 1),
                        run_op("embedding_int4", {Value(ids), Value(w.w), Value(s16), Value::from_int(in)}, 1)));
      }
    }
  }
}

TEST_CASE("linear_w4a8: exact integer block sums on every variant; NaN rows", "[kernels]") {
  VariantGuard guard;
  std::mt19937 gen(4);
  const int64_t out = 19, in = 4100, g = 32, in_p = 4128, rows = 5;
  const Weight w = random_weight(out, in, g, gen, true);
  // Every block of x holds 127 (or -127), so it quantizes to itself with scale 1.
  Tensor x = Tensor::empty(DType::f32, {rows, in});
  std::uniform_int_distribution<int> xd(-127, 127);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < in; ++k) x.data<float>()[r * in + k] = k % 32 == 0 ? ((r + k / 32) % 2 ? 127.0f : -127.0f) : float(xd(gen));
  std::vector<float> want(size_t(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < out; ++j) {
      double s = 0.0;  // exact: power-of-two scales times integers far below 2^53
      for (int64_t k = 0; k < in; ++k)
        s += double(x.data<float>()[r * in + k]) * w.q[j * in_p + k] * w.scale.data<float>()[j * (in_p / g) + k / g];
      want[r * out + j] = float(s);
    }
  for (const std::string& variant : ops::supported_kernel_variants()) {
    ops::set_kernel_variant(variant);
    INFO(variant);
    const Tensor y = run_op("linear_w4a8", {Value(x), Value(w.w), Value(w.scale)}, 1);
    CHECK(std::memcmp(y.data<float>(), want.data(), want.size() * sizeof(float)) == 0);
    Tensor xn = Tensor::empty(DType::f32, {rows, in});
    std::memcpy(xn.data<float>(), x.data<float>(), size_t(x.numel()) * sizeof(float));
    xn.data<float>()[2 * in + 4000] = std::numeric_limits<float>::infinity();
    const Tensor yn = run_op("linear_w4a8", {Value(xn), Value(w.w), Value(w.scale)}, 1);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < out; ++j) CHECK(std::isnan(yn.data<float>()[r * out + j]) == (r == 2));
  }
}

TEST_CASE("embedding_int4: the dequantized rows on every variant; ids checked", "[kernels]") {
  VariantGuard guard;
  std::mt19937 gen(5);
  for (int64_t in : {1, 33, 896}) {
    const int64_t v = 20, g = in == 896 ? 128 : 32, in_p = (in + g - 1) / g * g;
    const Weight w = random_weight(v, in, g, gen, false);
    Tensor ids = Tensor::empty(DType::i64, {2, 3});
    for (int64_t i = 0; i < 6; ++i) ids.data<int64_t>()[i] = (i * 7) % v;
    for (const std::string& variant : ops::supported_kernel_variants()) {
      ops::set_kernel_variant(variant);
      INFO(variant << " in " << in);
      const Tensor y = run_op("embedding_int4", {Value(ids), Value(w.w), Value(w.scale), Value::from_int(in)}, 1);
      REQUIRE(y.shape() == vm::Shape{2, 3, in});
      bool same = true;
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t k = 0; k < in; ++k) {
          const int64_t id = ids.data<int64_t>()[i];
          same &= y.data<float>()[i * in + k] == float(w.q[id * in_p + k]) * w.scale.data<float>()[id * (in_p / g) + k / g];
        }
      CHECK(same);
    }
    ids.data<int64_t>()[4] = v;
    CHECK_THAT(test_helpers::error_of([&] {
                 run_op("embedding_int4", {Value(ids), Value(w.w), Value(w.scale), Value::from_int(in)}, 1);
               }),
               Catch::Contains("id 20 out of range [0, 20)"));
  }
}
