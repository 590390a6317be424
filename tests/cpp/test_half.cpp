// core/half.h: f16 and bf16 <-> f32, checked against independent definitions (every
// f16 and bf16 value; f32 inputs at and around every rounding boundary), and the
// VM's handling of F16/BF16 weights (loaded as such, cast, refused by f32-only ops).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "core/half.h"
#include "io/safetensors.h"
#include "vm/vm.h"
#include "test_helpers.h"

using test_helpers::error_of;

// The compiler's own _Float16 conversions as a second reference where C++ has the type
// (GCC 12 has it on x86-64 only; it defines __FLT16_MAX__ on AArch64 for C alone).
#if defined(__FLT16_MAX__) && defined(__x86_64__)
#define TEST_NATIVE_FLOAT16 1
#else
#define TEST_NATIVE_FLOAT16 0
#endif

namespace {

// The nearest of two adjacent candidates by exact (double) distance, ties to the even one.
uint16_t nearest(double x, uint16_t lo, double vlo, uint16_t hi, double vhi) {
  const double dlo = std::fabs(x - vlo), dhi = std::fabs(vhi - x);
  if (dlo != dhi) return dlo < dhi ? lo : hi;
  return (lo & 1) ? hi : lo;
}

// bf16 by definition: truncation and its successor, nearest, overflow past the largest
// finite bf16's halfway point to inf.
uint16_t bf16_reference(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  const uint16_t lo = uint16_t(b >> 16), hi = uint16_t(lo + 1);
  if ((lo & 0x7fff) == 0x7f7f) {  // the largest finite: the successor is inf, at 2^128 in value
    const double big = std::ldexp(1.0, 128) * (std::signbit(f) ? -1 : 1);
    return nearest(f, lo, vm::bf16_to_f32(lo), hi, big);
  }
  return nearest(f, lo, vm::bf16_to_f32(lo), hi, vm::bf16_to_f32(hi));
}

}  // namespace

TEST_CASE("half: every f16 and bf16 widens and narrows back to itself", "[half]") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f16 = vm::f16_to_f32(uint16_t(h)), bf = vm::bf16_to_f32(uint16_t(h));
    const bool nan16 = (h & 0x7c00) == 0x7c00 && (h & 0x3ff), nanbf = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    INFO(h);
    REQUIRE(std::isnan(f16) == nan16);
    REQUIRE(std::isnan(bf) == nanbf);
    // A NaN comes back quiet (bit 9 / bit 6 set) with its sign and high payload bits.
    REQUIRE(vm::f32_to_f16(f16) == (nan16 ? (h | 0x200) : h));
    REQUIRE(vm::f32_to_bf16(bf) == (nanbf ? (h | 0x40) : h));
#if TEST_NATIVE_FLOAT16
    if (!nan16) {
      _Float16 native;
      const uint16_t bits = uint16_t(h);
      std::memcpy(&native, &bits, 2);
      const float wide = float(native);
      REQUIRE(std::memcmp(&f16, &wide, 4) == 0);
    }
#endif
  }
  CHECK(vm::f16_to_f32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(vm::f16_to_f32(0x7bff) == 65504.0f);
  CHECK(std::signbit(vm::f16_to_f32(0x8000)));
}

TEST_CASE("half: f32 narrows to the nearest, ties to even, inf past the top", "[half]") {
  std::mt19937 g(7);
  std::uniform_int_distribution<uint32_t> bits;
  auto check_bf16 = [](float f) {
    INFO(f);
    if (std::isnan(f)) {
      CHECK(std::isnan(vm::bf16_to_f32(vm::f32_to_bf16(f))));
      return;
    }
    CHECK(vm::f32_to_bf16(f) == bf16_reference(f));
  };
  for (int i = 0; i < 200000; ++i) {
    uint32_t b = bits(g);
    if (i % 4 == 1) b = (b & 0xffff0000u) | 0x8000;  // exact ties
    if (i % 4 == 2) b = (b & 0xffff0000u) | (0x7fff + (b & 2));  // one below / above a tie
    float f;
    std::memcpy(&f, &b, 4);
    check_bf16(f);
#if TEST_NATIVE_FLOAT16
    // The compiler's conversion (round to nearest even) is the f16 reference.
    uint32_t hb = bits(g);
    hb = (hb & 0x80000000u) | (0x33000000u + hb % (0x47800000u - 0x33000000u));  // 2^-25 .. 2^16
    if (i % 3 == 1) hb = (hb & ~0x1fffu) | 0x1000;  // a normal half's tie
    float x;
    std::memcpy(&x, &hb, 4);
    const _Float16 native = _Float16(x);
    uint16_t want;
    std::memcpy(&want, &native, 2);
    INFO(x);
    CHECK(vm::f32_to_f16(x) == want);
#endif
  }
  CHECK(vm::f32_to_f16(65504.0f) == 0x7bff);
  CHECK(vm::f32_to_f16(65519.99f) == 0x7bff);
  CHECK(vm::f32_to_f16(65520.0f) == 0x7c00);  // the tie above the largest half rounds to inf
  CHECK(vm::f32_to_f16(-1e10f) == 0xfc00);
  CHECK(vm::f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);  // tie to even (0)
  CHECK(vm::f32_to_f16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(vm::f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);  // 1.5 ulp: tie to even (2)
  CHECK(vm::f32_to_f16(std::ldexp(1023.5f, -24)) == 0x0400);  // rounds up into the normals
  CHECK(vm::f32_to_f16(-0.0f) == 0x8000);
  CHECK(vm::f32_to_bf16(3.4e38f) == 0x7f80);
  CHECK(vm::f32_to_bf16(-INFINITY) == 0xff80);
  CHECK(vm::f32_to_bf16(1.00390625f) == 0x3f80);  // 1 + 2^-8: tie to even (1)
}

TEST_CASE("half: F16 and BF16 weights load as f16 and bf16 tensors, cast widens them", "[half][vm]") {
  const std::string path = "/tmp/tensorvm_test_half_weights.safetensors";
  const uint16_t h[3] = {0x3c00, 0xc500, 0x7c00};  // 1, -5, inf
  const uint16_t b[3] = {0x3f80, 0xc0a0, 0xff80};  // 1, -5, -inf
  // Alignment 1 puts the second tensor at an odd offset: the loader copies it.
  io::write_safetensors(path, {{"w16", "F16", {3}, h, 6}, {"pad", "U8", {1}, h, 1}, {"wb", "BF16", {3}, b, 6}}, {}, 1);
  auto p = vm::Program::from_text(R"(# tensorvm ir 1
def get() -> Tensor:
    a = param("w16")
    b = param("wb")
    c = cast(a, "f32")
    e = cast(b, "f32")
    r = concat(c, e, dim=0)
    return r

def raw() -> Tensor:
    a = param("w16")
    return a

def bad() -> Tensor:
    a = param("w16")
    y = add(a, a)
    return y
)", path);
  vm::Session s(p);
  vm::Tensor w = vm::run(s, "raw", {})[0].as_tensor();
  CHECK(w.dtype() == vm::DType::f16);
  CHECK(w.describe() == "f16[3]");
  CHECK(std::memcmp(w.raw(), h, 6) == 0);
  vm::Tensor r = vm::run(s, "get", {})[0].as_tensor();
  REQUIRE(r.numel() == 6);
  const float want[6] = {1, -5, INFINITY, 1, -5, -INFINITY};
  for (int i = 0; i < 6; ++i) CHECK(r.data<float>()[i] == want[i]);
  const std::string err = error_of([&] { vm::run(s, "bad", {}); });
  CHECK_THAT(err, Catch::Contains("f16"));
  CHECK_THAT(err, Catch::Contains("add"));
  std::remove(path.c_str());
}
