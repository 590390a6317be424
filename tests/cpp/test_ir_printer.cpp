#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir_test_programs.h"

namespace {

double from_bits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

uint64_t to_bits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof d);
  return bits;
}

// repr() of each double, from CPython 3.11 (bit pattern, repr).
struct FloatCase {
  uint64_t bits;
  const char* repr;
};
const FloatCase kPythonRepr[] = {
    {0x0000000000000000ULL, "0.0"},
    {0x8000000000000000ULL, "-0.0"},
    {0x3ff0000000000000ULL, "1.0"},
    {0xbff0000000000000ULL, "-1.0"},
    {0x3fb999999999999aULL, "0.1"},
    {0x3fc999999999999aULL, "0.2"},
    {0x3fd3333333333333ULL, "0.3"},
    {0x3fd5555555555555ULL, "0.3333333333333333"},
    {0x3fe5555555555555ULL, "0.6666666666666666"},
    {0x3ee4f8b588e368f1ULL, "1e-05"},
    {0x3f1a36e2eb1c432dULL, "0.0001"},
    {0x3f202e4b6ce5dc68ULL, "0.00012345"},
    {0x3f23a92a30553262ULL, "0.00015000000000000001"},
    {0x4341c37937e08000ULL, "1e+16"},
    {0x4341c37937e08000ULL, "1e+16"},
    {0x430c6bf526340000ULL, "1000000000000000.0"},
    {0x42dc12218377de66ULL, "123456789012345.6"},
    {0x43118b54f22aeb03ULL, "1234567890123456.8"},
    {0x4345ee2a2eb5a5c4ULL, "1.2345678901234568e+16"},
    {0x437b69b4ba630f35ULL, "1.2345678901234568e+17"},
    {0x0000000000000001ULL, "5e-324"},
    {0x0000000000000002ULL, "1e-323"},
    {0x0010000000000000ULL, "2.2250738585072014e-308"},
    {0x7fefffffffffffffULL, "1.7976931348623157e+308"},
    {0x3fe0000000000000ULL, "0.5"},
    {0x4004000000000000ULL, "2.5"},
    {0x4059000000000000ULL, "100.0"},
    {0x4480f0cf064dd592ULL, "1e+22"},
    {0x44b52d02c7e14af6ULL, "1e+23"},
    {0x4340000000000000ULL, "9007199254740992.0"},
    {0x4340000000000000ULL, "9007199254740992.0"},
    {0x3fc0000000000000ULL, "0.125"},
    {0x400921fb54442d18ULL, "3.141592653589793"},
    {0x4005bf0a8b145769ULL, "2.718281828459045"},
    {0x3e7ad7f29abcaf48ULL, "1e-07"},
    {0x3de49da7e361ce4cULL, "1.5e-10"},
    {0x44dfe185ca57c517ULL, "6.02214076e+23"},
    {0x3fd3333333333334ULL, "0.30000000000000004"},
    {0x54b249ad2594c37dULL, "1e+100"},
    {0xab2bff2ee48e0530ULL, "-1e-100"},
    {0x3f50000000000000ULL, "0.0009765625"},
    {0x40effc0000000000ULL, "65504.0"},
    {0x47efffffe0000000ULL, "3.4028234663852886e+38"},
    {0x3810000000000000ULL, "1.1754943508222875e-38"},
    {0x4340000000000000ULL, "9007199254740992.0"},
    {0x43e0000000000000ULL, "9.223372036854776e+18"},
    {0xc3e0000000000000ULL, "-9.223372036854776e+18"},
    {0x405edd2f1a9fbe77ULL, "123.456"},
    {0x3f50624dd2f1a9fcULL, "0.001"},
    {0x3f1a36e2eb1c432cULL, "9.999999999999999e-05"},
    {0x4341c37937e08000ULL, "1e+16"},
    {0x3f1cd5f99c38b04bULL, "0.00011"},
    {0x4011666666666666ULL, "4.35"},
    {0x3fb1eb851eb851ecULL, "0.07"},
    {0x444b1ae4d6e2ef50ULL, "1e+21"},
    {0x3ff0000000000001ULL, "1.0000000000000002"},
    {0x3fefffffffffffffULL, "0.9999999999999999"},
    {0xf2a74de452e6b438ULL, "-1.989032661366619e+244"},
    {0x6513270e269e0d37ULL, "7.761117632285041e+178"},
    {0x0c5c7fd0a6a3a450ULL, "3.980498358697587e-249"},
    {0xd23f0824128b2f33ULL, "-1.5432835417340557e+88"},
    {0x1818e811892f902bULL, "1.3647584518757569e-192"},
    {0x9531985d5d9dc9f8ULL, "-1.3701135617873088e-206"},
    {0xe8e25d940ed90475ULL, "-1.7160537630466207e+197"},
    {0x36f675cc81e74ef5ULL, "6.294675241195386e-44"},
    {0x1600a35a099950d8ULL, "1.0613447212142254e-202"},
    {0x6b0d549b6f03675aULL, "4.708325160387546e+207"},
    {0x3d9c172411e20b8fULL, "6.387016158513563e-12"},
    {0x8d116ece1738f7d9ULL, "-9.973130378568733e-246"},
    {0x0f21ddb66cad4a26ULL, "8.779753225680271e-236"},
    {0x90c192cfd3ac94afULL, "-5.795503248498993e-228"},
    {0xf28c105d1fb17c23ULL, "-5.988180159386011e+243"},
    {0xa170b33839263059ULL, "-1.306052388527796e-147"},
    {0x953f48f1a09f76b5ULL, "-2.436117699484841e-206"},
    {0x0fd630f1f29d0da9ULL, "2.233386999150174e-232"},
    {0x95e60af593bd04cfULL, "-3.51527970626667e-203"},
    {0x0cb1e29c658cda14ULL, "1.5987381841032883e-247"},
    {0x3898d190f9ebdaccULL, "4.6678633181812096e-36"},
    {0x8e81973e0becd7b0ULL, "-8.441872792105456e-239"},
    {0x2217beaddbc496cbULL, "1.9015657400796622e-144"},
    {0x6b4cb2424a23d596ULL, "7.370437700706684e+208"},
    {0x8a6a63ec24ede6a4ULL, "-1.7163996725272777e-258"},
    {0x922766581e27a1c0ULL, "-3.2367190832119987e-221"},
    {0x8f6d05584ef8aa38ULL, "-2.2818334634712625e-234"},
    {0xae97ba94d0eda82fULL, "-3.0536383926309363e-84"},
    {0x1a61dbe22e44158bULL, "1.3449551894627777e-181"},
    {0x923a736994e3bf91ULL, "-7.317495976062606e-221"},
    {0x301850c5a38fd547ULL, "5.249822308814304e-77"},
    {0x18f135d25f557203ULL, "1.5450754142984396e-188"},
    {0xb64ce4228c38fb29ULL, "-3.953625698224792e-47"},
    {0x907a70c31012f037ULL, "-2.72491267476498e-229"},
    {0x9e7769b10f4205b4ULL, "-6.505141861548772e-162"},
    {0x7f15052434b9b5dfULL, "1.441484839555994e+304"},
    {0x881ed162ae2eb154ULL, "-1.4583679262758548e-269"},
    {0xc6f877186d76b07eULL, "-7.939416668807721e+33"},
    {0x7731af10506bf2efULL, "1.4255183989699612e+266"},
    {0xec66a78795e761d1ULL, "-1.525315701232403e+214"},
    {0xc022b9eb7bebbef4ULL, "-9.363124725844933"},
    {0xbf749be07cfc4d48ULL, "-0.005031468302849014"},
    {0x3fd978a64c7a2ea0ULL, "0.3979888674591425"},
    {0xc054e8418028ec0eULL, "-83.62899784084604"},
    {0x4405dabf6b83f56dULL, "5.039300762290288e+19"},
    {0xc147e23b19b4e167ULL, "-3130486.200832534"},
    {0xbed1ca00777197c4ULL, "-4.241244702196269e-06"},
    {0xc1274fb8e3112197ULL, "-763868.4434900758"},
    {0xc084f09b3935b7d9ULL, "-670.0757927128535"},
    {0xc190983c54458754ULL, "-69603093.06789905"},
    {0xc2ac7c68b4ea164bULL, "-15660329104651.146"},
    {0xc1ff783ffd46253cULL, "-8447590356.38409"},
    {0x441fab820e31b2e2ULL, "1.4605188055476788e+20"},
    {0x4083e5a74a537eb8ULL, "636.706684734635"},
    {0x4256bc416640d463ULL, "390590732547.31854"},
    {0xc337a0831a04c343ULL, "-6650409402024771.0"},
    {0xc3a84f98c411685fULL, "-8.758933739717385e+17"},
    {0xc0204193b646cee6ULL, "-8.128080078261927"},
    {0xc292d88f848b9c72ULL, "-5180332516071.111"},
    {0xc33ee89ab67e9c17ULL, "-8700000485678103.0"},
    {0x4341c37937e07fffULL, "9999999999999998.0"},
    {0x430c6bf52633ffffULL, "999999999999999.9"},
    {0x3f50624dd2f1a9fcULL, "0.001"},
    {0x3f1a36e2eb1c432dULL, "0.0001"},
    {0x3ee9e0fcaf9380fcULL, "1.234e-05"},
};

}  // namespace

TEST_CASE("printer: format_float matches Python repr") {
  for (const FloatCase& c : kPythonRepr) {
    INFO("expected " << c.repr);
    CHECK(ir::format_float(from_bits(c.bits)) == c.repr);
    // The parser reads each repr back to the same bits.
    ir::Module m = ir::parse(std::string("# tensorvm ir 1\ndef t() -> None:\n    y = f(") + c.repr + ")\n");
    CHECK(to_bits(std::get<double>(m.functions[0].body[0].args[0].value)) == c.bits);
  }
  CHECK(ir::format_float(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(ir::format_float(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(ir::format_float(std::numeric_limits<double>::quiet_NaN()) == "nan");
  CHECK(ir::format_float(-std::numeric_limits<double>::quiet_NaN()) == "nan");
}

TEST_CASE("printer: quote_string") {
  CHECK(ir::quote_string("") == "\"\"");
  CHECK(ir::quote_string("model.layers.{}.weight") == "\"model.layers.{}.weight\"");
  CHECK(ir::quote_string("a\\b\"c'd") == R"("a\\b\"c'd")");
  CHECK(ir::quote_string("\n\t\r") == R"("\n\t\r")");
  CHECK(ir::quote_string(std::string("\0\x01\x1b\x1f\x7f", 5)) == R"("\x00\x01\x1b\x1f\x7f")");
  CHECK(ir::quote_string("\xc3\xa9\xe2\x82\xac \x80") == "\"\xc3\xa9\xe2\x82\xac \x80\"");
}

TEST_CASE("printer: the rich program is a fixed point of print(parse(.))") {
  std::string text = ir_test::kRichProgram;
  ir::Module m = ir::parse(text);
  CHECK(ir::print(m) == text);
  CHECK(ir::print(ir::parse(ir::print(m))) == text);
}

TEST_CASE("printer: canonical form of non-canonical input") {
  std::string in =
      "# tensorvm ir 1\r\n"
      "\n\n# a comment\n"
      "def f( x :Tensor,n: int )->tuple[ Tensor ,int ] :\n"
      "  a , = g( x,n , k = 'it\\'s' , s=\"\\x41\\xe9\" )\n"
      "     # comment\n"
      "  b, c, = h(a, [ 1,-2 , n ], .5, 1E5, -1., 00.25, 1e999, - 3)\n"
      "  return b ,c\n"
      "\n\n\n"
      "def k() -> None:\n"
      "        y = f(1, f)\n";
  std::string want =
      "# tensorvm ir 1\n"
      "def f(x: Tensor, n: int) -> tuple[Tensor, int]:\n"
      "    a, = g(x, n, k=\"it's\", s=\"A\xc3\xa9\")\n"
      "    b, c = h(a, [1, -2, n], 0.5, 100000.0, -1.0, 0.25, inf, -3)\n"
      "    return b, c\n"
      "\n"
      "def k() -> None:\n"
      "    y = f(1, f)\n";
  CHECK(ir::print(ir::parse(in)) == want);
}

TEST_CASE("printer: print_stmt and a hand-built module") {
  ir::Function f;
  f.name = "step";
  f.params = {{"x", "Tensor"}, {"cache", "KVCache"}};
  f.return_types = {"Tensor"};
  f.returns_tuple = true;
  ir::Stmt s;
  s.targets = {"y"};
  s.trailing_comma = true;
  s.callee = "op";
  s.args.push_back({"", ir::Name{"x"}});
  s.args.push_back({"", int64_t{-7}});
  s.args.push_back({"", ir::List{{{false, 2, ""}, {true, 0, "x"}}}});
  s.args.push_back({"eps", 1e-05});
  s.args.push_back({"name", std::string("a\"b")});
  s.args.push_back({"flag", false});
  s.args.push_back({"bias", ir::NoneLit{}});
  CHECK(ir::print_stmt(s) == R"(y, = op(x, -7, [2, x], eps=1e-05, name="a\"b", flag=False, bias=None))");
  ir::Stmt r;
  r.kind = ir::Stmt::Kind::Return;
  r.returns = {ir::Name{"y"}};
  CHECK(ir::print_stmt(r) == "return y");
  r.returns.clear();
  CHECK(ir::print_stmt(r) == "return");
  ir::Stmt two;
  two.targets = {"a", "b"};
  two.trailing_comma = true;  // has no effect with two targets
  two.callee = "split";
  CHECK(ir::print_stmt(two) == "a, b = split()");

  r.returns = {ir::Name{"y"}};
  f.body = {s, r};
  ir::Module m;
  m.functions = {f};
  ir::Function g;
  g.name = "empty";
  ir::Stmt ret;
  ret.kind = ir::Stmt::Kind::Return;
  g.body = {ret};
  m.functions.push_back(g);
  std::string text = ir::print(m);
  CHECK(text ==
        "# tensorvm ir 1\n"
        "def step(x: Tensor, cache: KVCache) -> tuple[Tensor]:\n"
        "    y, = op(x, -7, [2, x], eps=1e-05, name=\"a\\\"b\", flag=False, bias=None)\n"
        "    return y\n"
        "\n"
        "def empty() -> None:\n"
        "    return\n");
  CHECK(ir::print(ir::parse(text)) == text);
  CHECK(ir::print(ir::Module{}) == "# tensorvm ir 1\n");
  CHECK(ir::parse("# tensorvm ir 1\n").functions.empty());
}
