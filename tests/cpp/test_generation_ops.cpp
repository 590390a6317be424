// The generation ops in a program: the seeded generator gives the same stream on every
// machine (splitmix64's published first outputs), and the option checks fail with
// their message and the IR line.
#include <catch2/catch.hpp>

#include <string>

#include "core/rng.h"
#include "vm/vm.h"

namespace {

std::shared_ptr<const vm::Program> program(const std::string& body) {
  return vm::Program::from_text("# tensorvm ir 1\n" + body, "");
}

}  // namespace

TEST_CASE("splitmix64 stream is the published one") {
  vm::Rng g(0);
  CHECK(g.next_u64() == 0xe220a8397b1dcdafull);
  CHECK(g.next_u64() == 0x6e789e6aa1b965f4ull);
  CHECK(g.next_u64() == 0x06c45d188009454full);
  vm::Rng h(0);
  CHECK(h.next_float() == float(0xe220a8) / 16777216.0f);
  CHECK(h.next_double() == double(0x6e789e6aa1b965f4ull >> 11) / 9007199254740992.0);
}

TEST_CASE("rng, multinomial and option checks inside a program") {
  auto prog = program(
      "def draw(probs: Tensor, seed: int, stop: Any) -> tuple[Tensor, Tensor, int]:\n"
      "    g = rng(seed)\n"
      "    a = multinomial(probs, g, 2)\n"
      "    b = multinomial(probs, g, 2)\n"
      "    mode = option_index(stop, False, True, \"never\", what=\"early_stopping\")\n"
      "    ok = check(True, \"fine\")\n"
      "    return a, b, mode\n"
      "\n"
      "def refuse(n: int) -> bool:\n"
      "    big = ge(n, 1)\n"
      "    ok = check(big, \"num_beams must be at least 1\")\n"
      "    return ok\n");
  vm::Session s(prog);
  vm::Tensor probs = vm::Tensor::empty(vm::DType::f32, {2, 4});
  const float p[8] = {0.f, 1.f, 1.f, 1.f, 5.f, 0.f, 0.f, 1.f};
  for (int i = 0; i < 8; ++i) probs.data<float>()[i] = p[i];
  auto out = vm::run(s, "draw", {vm::Value(probs), vm::Value::from_int(7), vm::Value::from_str("never")});
  const vm::Tensor& a = out[0].as_tensor();
  REQUIRE(a.shape() == vm::Shape({2, 2}));
  CHECK(a.data<int64_t>()[0] != a.data<int64_t>()[1]);
  CHECK(a.data<int64_t>()[0] != 0);
  CHECK(((a.data<int64_t>()[2] == 0 && a.data<int64_t>()[3] == 3) || (a.data<int64_t>()[2] == 3 && a.data<int64_t>()[3] == 0)));
  CHECK(out[2].as_int() == 2);
  // The same seed gives the same draws.
  auto again = vm::run(s, "draw", {vm::Value(probs), vm::Value::from_int(7), vm::Value::from_bool(false)});
  for (int i = 0; i < 4; ++i) {
    CHECK(again[0].as_tensor().data<int64_t>()[i] == a.data<int64_t>()[i]);
    CHECK(again[1].as_tensor().data<int64_t>()[i] == out[1].as_tensor().data<int64_t>()[i]);
  }
  CHECK(again[2].as_int() == 0);
  try {
    vm::run(s, "draw", {vm::Value(probs), vm::Value::from_int(7), vm::Value::from_str("always")});
    FAIL("no error");
  } catch (const vm::Error& e) {
    CHECK(std::string(e.what()).find("early_stopping must be one of False, True, \"never\", got \"always\"") !=
          std::string::npos);
  }
  try {
    vm::run(s, "refuse", {vm::Value::from_int(0)});
    FAIL("no error");
  } catch (const vm::Error& e) {
    CHECK(std::string(e.what()).find("num_beams must be at least 1") != std::string::npos);
    CHECK(std::string(e.what()).find("refuse") != std::string::npos);
  }
}
