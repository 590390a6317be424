#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir_test_programs.h"

namespace {

const std::string kHead = "# tensorvm ir 1\n";

const ir::Stmt& only_stmt(const ir::Module& m) { return m.functions.at(0).body.at(0); }

// The value of the single argument of `y = f(<literal>)`.
ir::Expr parse_arg(const std::string& literal) {
  ir::Module m = ir::parse(kHead + "def t() -> None:\n    y = f(" + literal + ")\n");
  return only_stmt(m).args.at(0).value;
}

void expect_error(const std::string& text, int line, const std::string& fragment) {
  INFO("program:\n" << text);
  try {
    ir::parse(text);
  } catch (const ir::ParseError& e) {
    INFO("what(): " << e.what());
    CHECK(e.line() == line);
    CHECK(std::string(e.what()).rfind("program.py:" + std::to_string(line) + ": ", 0) == 0);
    CHECK(std::string(e.what()).find(fragment) != std::string::npos);
    return;
  }
  FAIL("no ParseError");
}

}  // namespace

TEST_CASE("parser: the example of docs/ir.md") {
  ir::Module m = ir::parse(ir_test::kDocExample);
  REQUIRE(m.functions.size() == 4);
  const ir::Function& ffn = m.functions[0];
  CHECK(ffn.name == "ffn");
  CHECK(ffn.line == 2);
  REQUIRE(ffn.params.size() == 2);
  CHECK(ffn.params[1].name == "layer");
  CHECK(ffn.params[1].type == "int");
  CHECK(ffn.return_types == std::vector<std::string>{"Tensor"});
  CHECK_FALSE(ffn.returns_tuple);
  REQUIRE(ffn.body.size() == 8);
  const ir::Stmt& w1 = ffn.body[0];
  CHECK(w1.line == 3);
  CHECK(w1.targets == std::vector<std::string>{"w1"});
  CHECK(w1.callee == "param");
  CHECK(std::get<std::string>(w1.args[0].value) == "model.decoder.layers.{}.fc1.weight");
  CHECK(std::get<ir::Name>(w1.args[1].value).id == "layer");
  CHECK(ffn.body[7].kind == ir::Stmt::Kind::Return);

  const ir::Function& count = m.functions[1];
  CHECK(count.returns_tuple);
  CHECK(count.return_types == std::vector<std::string>{"int", "Tensor"});
  const ir::Stmt& zeros = count.body[1];
  const auto& shape = std::get<ir::List>(zeros.args[0].value);
  REQUIRE(shape.items.size() == 2);
  CHECK(shape.items[1].value == 3);
  CHECK(zeros.args[1].keyword == "dtype");
  const ir::Stmt& loop = count.body[2];
  CHECK(loop.targets == std::vector<std::string>{"i", "acc"});
  CHECK(std::get<ir::Name>(loop.args[0].value).id == "count_cond");
  CHECK(count.body[3].returns.size() == 2);
}

TEST_CASE("parser: literals") {
  CHECK(std::get<int64_t>(parse_arg("0")) == 0);
  CHECK(std::get<int64_t>(parse_arg("-0")) == 0);
  CHECK(std::get<int64_t>(parse_arg("9223372036854775807")) == INT64_MAX);
  CHECK(std::get<int64_t>(parse_arg("-9223372036854775808")) == INT64_MIN);
  CHECK(std::get<int64_t>(parse_arg("- 5")) == -5);
  CHECK(std::get<double>(parse_arg(".5")) == 0.5);
  CHECK(std::get<double>(parse_arg("1.")) == 1.0);
  CHECK(std::get<double>(parse_arg("1E5")) == 100000.0);
  CHECK(std::get<double>(parse_arg("1.e-2")) == 0.01);
  CHECK(std::get<double>(parse_arg("00.5")) == 0.5);
  CHECK(std::get<double>(parse_arg("-2.5e+3")) == -2500.0);
  CHECK(std::get<double>(parse_arg("1e999")) == INFINITY);
  CHECK(std::get<double>(parse_arg("-1e999")) == -INFINITY);
  CHECK(std::get<double>(parse_arg("0.0000001e-400")) == 0.0);
  CHECK(std::get<double>(parse_arg("1000000000000e-330")) == 1e-318);
  CHECK(std::get<double>(parse_arg("1e-320")) == 1e-320);
  CHECK(std::signbit(std::get<double>(parse_arg("-0.0"))));
  CHECK(std::get<double>(parse_arg("inf")) == INFINITY);
  CHECK(std::get<double>(parse_arg("-inf")) == -INFINITY);
  CHECK(std::isnan(std::get<double>(parse_arg("nan"))));
  CHECK(std::get<bool>(parse_arg("True")) == true);
  CHECK(std::get<bool>(parse_arg("False")) == false);
  CHECK(std::holds_alternative<ir::NoneLit>(parse_arg("None")));
  CHECK(std::get<std::string>(parse_arg(R"("a\\b\"c\'d\ne\tf\rg\x41\x00")")) == std::string("a\\b\"c'd\ne\tf\rgA\0", 15));
  CHECK(std::get<std::string>(parse_arg(R"('it\'s "q"')")) == "it's \"q\"");
  CHECK(std::get<std::string>(parse_arg(R"("\xe9")")) == "\xc3\xa9");  // U+00E9, as in Python
  CHECK(std::get<std::string>(parse_arg("\"\xc3\xa9\xe2\x82\xac\"")) == "\xc3\xa9\xe2\x82\xac");
  auto l = std::get<ir::List>(parse_arg("[]"));
  CHECK(l.items.empty());
  l = std::get<ir::List>(parse_arg("[1, -2, -9223372036854775808, 3, 4, 5, 6, 7]"));
  REQUIRE(l.items.size() == 8);
  CHECK(l.items[1].value == -2);
  CHECK(l.items[2].value == INT64_MIN);
}

TEST_CASE("parser: statements and layout") {
  ir::Module m = ir::parse(kHead +
                           "\n# comment\n   # indented comment\n  \n"
                           "def f(x: Tensor, n: int) -> tuple[Tensor]:\r\n"
                           "  a, = g(x, n, k = 1)\r\n"
                           "        # a comment at any indentation\n"
                           "\n"
                           "  b, c, = h(a)\n"
                           "  return b\n"
                           "def t(match: int, case: int, type: int, _: int) -> None:\n"
                           "        return");
  REQUIRE(m.functions.size() == 2);
  const ir::Function& f = m.functions[0];
  CHECK(f.line == 6);
  CHECK(f.returns_tuple);
  CHECK(f.body[0].trailing_comma);
  CHECK(f.body[0].args[2].keyword == "k");
  CHECK(f.body[1].line == 10);
  CHECK(f.body[1].targets.size() == 2);
  CHECK_FALSE(f.body[1].trailing_comma);  // only meaningful for one target
  CHECK(m.functions[1].return_types.empty());
  CHECK(m.functions[1].body[0].returns.empty());
}

namespace {

const std::string kDef = "def f(x: Tensor) -> Tensor:\n";

struct ErrorCase {
  std::string text;
  int line;
  const char* fragment;
};

void expect_errors(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) expect_error(c.text, c.line, c.fragment);
}

}  // namespace

TEST_CASE("parser errors: header, layout and characters") {
  expect_errors({
      {"", 1, "missing header"},
      {"# tensorvm ir 2\n", 1, "unsupported IR version"},
      {"#tensorvm ir 1\n", 1, "missing header"},
      {"\n# tensorvm ir 1\n", 1, "missing header"},
      {kHead + kDef + "\ty = g(x)\n", 3, "tab"},
      {kHead + kDef + "    y = g(x)\t\n", 3, "tab"},
      {kHead + kDef + "    y = g(x)\n  return y\n", 4, "inconsistent indentation"},
      {kHead + kDef + "    y = g(x)\n      return y\n", 4, "inconsistent indentation"},
      {kHead + "    y = g(x)\n", 2, "unexpected indentation"},
      {kHead + "y = g(x)\n", 2, "expected 'def'"},
      {kHead + kDef, 2, "has no body"},
      {kHead + kDef + "\n" + kDef + "    return x\n", 2, "has no body"},
      {kHead + kDef + "return x\n", 2, "has no body"},
      {kHead + kDef + "    y = g(x)  # why\n", 3, "comment must stand on its own line"},
      {kHead + "def f(x: Tensor) -> Tensor:  # why\n    return x\n", 2, "comment must stand on its own line"},
      {kHead + kDef + "    y = g(x + 1)\n", 3, "operators are not allowed"},
      {kHead + kDef + "    y = g(*x)\n", 3, "operators are not allowed"},
      {kHead + kDef + "    y = torch.add(x)\n", 3, "attributes are not allowed"},
      {kHead + kDef + "    y = g(x); z = g(y)\n", 3, "one statement per line"},
      {kHead + kDef + "    y = g(x, \\\n", 3, "line continuation"},
      {kHead + kDef + "    y = g({})\n", 3, "unexpected character '{'"},
      {kHead + kDef + "    y = g(x)\r    return y\n", 3, "carriage return"},
      {kHead + kDef + "    y = g(x)\n" + std::string("    z = g(\"\0\")\n", 15), 4, "NUL"},
      {kHead + kDef + "    y = g(x)\n    z = g(\"\xff\")\n", 4, "invalid UTF-8"},
      {kHead + kDef + "    y = g(x)\n    # \xc3\n", 4, "invalid UTF-8"},
      {kHead + kDef + "    y = g(\"\xed\xa0\x80\")\n", 3, "invalid UTF-8"},
      {kHead + kDef + "    \xc3\xa9 = g(x)\n", 3, "non-ASCII"},
      {kHead + kDef + "    y = g(x)\x0c\n", 3, "control character"},
      {kHead + kDef + "    y = g(x)\n    # a\tcomment\n", 4, "tab character"},
      {kHead + kDef + "    y = g(x)\n# \x1b[1m\n", 4, "control character \\x1b"},
  });
}

TEST_CASE("parser errors: statements and calls") {
  expect_errors({
      {kHead + kDef + "    y = linear(x, w\n", 3, "expected ')' after arguments of call to 'linear'"},
      {kHead + kDef + "    y = linear(x w)\n", 3, "expected ',' or ')' after an argument of call to 'linear'"},
      {kHead + kDef + "    y = g(x,\n        x)\n", 3, "expected a value"},
      {kHead + kDef + "    y = g(x,)\n", 3, "trailing comma in call"},
      {kHead + kDef + "    y = g(k=1, x)\n", 3, "positional argument after keyword argument 'k'"},
      {kHead + kDef + "    y = g(x, k=1, k=2)\n", 3, "duplicate keyword argument 'k'"},
      {kHead + kDef + "    y = x\n", 3, "expected a call"},
      {kHead + kDef + "    y = 1\n", 3, "expected a call"},
      {kHead + kDef + "    y = z = g(x)\n", 3, "expected a call"},
      {kHead + kDef + "    g(x)\n", 3, "must be assigned"},
      {kHead + kDef + "    if x:\n", 3, "'if' is not allowed"},
      {kHead + kDef + "    pass\n", 3, "'pass' is not allowed"},
      {kHead + kDef + "    def g() -> None:\n", 3, "'def' is not allowed"},
      {kHead + kDef + "    (y) = g(x)\n", 3, "expected variable name"},
      {kHead + kDef + "    y = g(h(x))\n", 3, "nested call"},
      {kHead + kDef + "    y = g(x) z\n", 3, "unexpected 'z' after the call"},
      {kHead + kDef + "    return x,\n", 3, "trailing comma after the returned values"},
      {kHead + kDef + "    return x y\n", 3, "expected ',' or end of line"},
      {kHead + kDef + "    return x\n    y = g(x)\n", 4, "unreachable statement after 'return' (line 3)"},
      {kHead + kDef + "    y = def(x)\n", 3, "cannot be called"},
  });
}

TEST_CASE("parser errors: names, bindings and recursion") {
  expect_errors({
      {kHead + kDef + "    y = g(x)\n    y = g(y)\n", 4, "'y' is already bound at line 3"},
      {kHead + kDef + "    y, y = g(x)\n", 3, "'y' is already bound at line 3"},
      {kHead + kDef + "    x = g(x)\n", 3, "'x' is a parameter of 'f'"},
      {kHead + kDef + "    y = g(z)\n", 3, "unknown name 'z'"},
      {kHead + kDef + "    y = g(x, [1, z])\n", 3, "unknown name 'z'"},
      {kHead + kDef + "    y = g(x, k=z)\n", 3, "unknown name 'z'"},
      {kHead + kDef + "    return z\n", 3, "unknown name 'z'"},
      {kHead + kDef + "    y = g(z)\n    z = g(x)\n", 3, "'z' is used before it is bound (at line 4)"},
      {kHead + kDef + "    return x\n" + kDef + "    return x\n", 4, "duplicate function 'f' (first defined at line 2)"},
      {kHead + "def f(x: Tensor, x: int) -> None:\n    return\n", 2, "duplicate parameter 'x'"},
      {kHead + "def f(class: Tensor) -> None:\n    return\n", 2, "Python keyword"},
      {kHead + "def f(x: class) -> None:\n    return\n", 2, "not a valid type name"},
      {kHead + "def __f__(x: Tensor) -> None:\n    return\n", 2, "dunder"},
      {kHead + kDef + "    __y__ = g(x)\n", 3, "dunder"},
      {kHead + kDef + "    y = g(__x__)\n", 3, "dunder"},
      {kHead + kDef + "    y = __g__(x)\n", 3, "cannot be called"},
      {kHead + kDef + "    y = g(__k__=x)\n", 3, "keyword argument name"},
      {kHead + kDef + "    y = g(None=x)\n", 3, "keyword argument name"},
      {kHead + kDef + "    param = g(x)\n", 3, "builtin"},
      {kHead + kDef + "    inf = g(x)\n", 3, "builtin"},
      {kHead + "def while_loop(x: Tensor) -> None:\n    return\n", 2, "builtin"},
      {kHead + "def f(param: Tensor) -> None:\n    return\n", 2, "builtin"},
      {kHead + kDef + "    y = inf(x)\n", 3, "cannot be called"},
      {kHead + kDef + "    True = g(x)\n", 3, "'True' is not allowed"},
      {kHead + kDef + "    y = g(lambda)\n", 3, "Python keyword, not a value"},
      {kHead + kDef + "    e = g(x)\n    return e\n" + "def e(x: Tensor) -> Tensor:\n    return x\n", 3,
       "'e' is the name of a function"},
      {kHead + "def f(e: Tensor) -> Tensor:\n    return e\n" + "def e(x: Tensor) -> Tensor:\n    return x\n", 2,
       "'e' is the name of a function"},
      {kHead + kDef + "    g = h(x)\n    return g\n" + "def k(x: Tensor) -> Tensor:\n    y = g(x)\n    return y\n", 3,
       "'g' is called as an op or function (line 6)"},
      {kHead + "def f(x: Tensor, g: Any) -> Tensor:\n    return x\n" + "def k(x: Tensor) -> Tensor:\n    y = g(x)\n    return y\n",
       2, "'g' is called as an op or function"},
      {kHead + kDef + "    return f\n", 3, "function 'f' can only be passed as an argument"},
      {kHead + kDef + "    y = g(x, [f])\n    return y\n", 3, "function 'f' can only be passed as an argument"},
      {kHead + kDef + "    y = h(x)\n    return y\n" + "def h(x: Tensor) -> Tensor:\n    y = f(x)\n    return y\n", 6,
       "recursion is not allowed (loops are while_loop): f -> h -> f"},
      {kHead + kDef + "    y = while_loop(f, f, x)\n    return y\n", 3, "recursion is not allowed (loops are while_loop): f -> f"},
      {kHead + kDef + "    y = f(x)\n    return y\n", 3, "f -> f"},
      {kHead + kDef + "    y = x(1)\n", 2, "'x' is called as an op or function (line 3)"},
      {kHead + kDef + "    y = g(x)\n    z = y(x)\n", 3, "'y' is called as an op or function"},
      {kHead + "def Tensor(x: int) -> int:\n    return x\n", 2, "'Tensor' is a type name and cannot be a function name"},
      {kHead + "def tuple(x: int) -> int:\n    return x\n", 2, "type name"},
      {kHead + "def f(c: KVCache) -> None:\n    return\n" + "def KVCache(x: int) -> int:\n    return x\n", 4, "type name"},
      {kHead + kDef + "    y = g(param)\n", 3, "'param' is an op or builtin and can only be called"},
      {kHead + kDef + "    y = g(x)\n    z = h(g)\n", 4, "'g' is an op or builtin and can only be called"},
  });
}

TEST_CASE("parser errors: literals and lists") {
  expect_errors({
      {kHead + kDef + "    y = g(x, [1, 2, 3, 4, 5, 6, 7, 8, 9])\n", 3, "more than 8 items"},
      {kHead + kDef + "    y = g(x, [1.0])\n", 3, "list items must be ints or names"},
      {kHead + kDef + "    y = g(x, [\"a\"])\n", 3, "list items must be ints or names"},
      {kHead + kDef + "    y = g(x, [[1]])\n", 3, "list items must be ints or names"},
      {kHead + kDef + "    y = g(x, [True])\n", 3, "list items must be ints or names"},
      {kHead + kDef + "    y = g(x, [1,])\n", 3, "trailing comma in list"},
      {kHead + kDef + "    y = g(x, [,])\n", 3, "list items must be ints or names"},
      {kHead + kDef + "    y = g(x, [1 2])\n", 3, "expected ',' or ']'"},
      {kHead + kDef + "    y = g(9223372036854775808)\n", 3, "does not fit in int64"},
      {kHead + kDef + "    y = g(-9223372036854775809)\n", 3, "does not fit in int64"},
      {kHead + kDef + "    y = g(x, [99999999999999999999])\n", 3, "does not fit in int64"},
      {kHead + kDef + "    y = g(007)\n", 3, "leading zeros"},
      {kHead + kDef + "    y = g(00)\n", 3, "leading zeros"},
      {kHead + kDef + "    y = g(0x10)\n", 3, "invalid number literal '0x10'"},
      {kHead + kDef + "    y = g(1_000)\n", 3, "invalid number literal"},
      {kHead + kDef + "    y = g(1j)\n", 3, "invalid number literal"},
      {kHead + kDef + "    y = g(1.5.2)\n", 3, "invalid number literal"},
      {kHead + kDef + "    y = g(1e)\n", 3, "invalid number literal"},
      {kHead + kDef + "    y = g(+1)\n", 3, "operators are not allowed"},
      {kHead + kDef + "    y = g(-x)\n", 3, "'-' must be followed by a number"},
      {kHead + kDef + "    y = g(-nan)\n", 3, "'-' must be followed by a number"},
      {kHead + kDef + "    y = g(--1)\n", 3, "'-' must be followed by a number"},
      {kHead + kDef + "    y = g(\"a\\q\")\n", 3, "unsupported escape '\\q'"},
      {kHead + kDef + "    y = g(\"\\x4\")\n", 3, "two hex digits"},
      {kHead + kDef + "    y = g(\"\\u00e9\")\n", 3, "unsupported escape"},
      {kHead + kDef + "    y = g(\"abc)\n", 3, "unterminated string"},
      {kHead + kDef + "    y = g(\"abc\\\n", 3, "unterminated string"},
      {kHead + kDef + "    y = g(\"a\x01\")\n", 3, "control character"},
      {kHead + kDef + "    y = g(\"a\tb\")\n", 3, "tab character"},
      {kHead + kDef + "    y = g(r\"a\")\n", 3, "expected ',' or ')'"},
      {kHead + kDef + "    y = g(\"a\" \"b\")\n", 3, "expected ',' or ')'"},
      {kHead + kDef + "    y = g(\"\"\"a\"\"\")\n", 3, "expected ',' or ')'"},
  });
}

TEST_CASE("parser errors: def lines") {
  expect_errors({
      {kHead + "def f(x) -> Tensor:\n    return x\n", 2, "needs a type annotation"},
      {kHead + "def f(x: Tensor) Tensor:\n    return x\n", 2, "expected '->'"},
      {kHead + "def f(x: Tensor):\n    return x\n", 2, "expected '->'"},
      {kHead + "def f(x: Tensor) -> Tensor: return x\n", 2, "the body starts on the next line"},
      {kHead + "def f(x: Tensor) -> Tensor\n    return x\n", 2, "expected ':' at the end of the 'def' line"},
      {kHead + "def f(x: Tensor,) -> None:\n    return\n", 2, "trailing comma in parameter list"},
      {kHead + "def f(x: Tensor = 1) -> None:\n    return\n", 2, "expected ',' or ')' after parameter 'x'"},
      {kHead + "def f(*x: Tensor) -> None:\n    return\n", 2, "operators are not allowed"},
      {kHead + "def f(x: Tensor) -> tuple[Tensor,]:\n    return x\n", 2, "expected a type name"},
      {kHead + "def f(x: Tensor) -> tuple[]:\n    return x\n", 2, "expected a type name"},
      {kHead + "def f(x: Tensor) -> tuple[Tensor:\n    return x\n", 2, "expected ',' or ']'"},
      {kHead + "def f(x: None) -> None:\n    return\n", 2, "not a valid type name"},
      {kHead + "def f(x: Tensor) -> 1:\n    return\n", 2, "expected a type name"},
      {kHead + "def (x: Tensor) -> None:\n    return\n", 2, "expected function name"},
      {kHead + "def f x: Tensor) -> None:\n    return\n", 2, "expected '(' after function name 'f'"},
      {kHead + "class F:\n    return\n", 2, "expected 'def'"},
      {kHead + "import os\n", 2, "expected 'def'"},
  });
}

TEST_CASE("parser: ParseError carries file, line and message") {
  try {
    ir::parse("# tensorvm ir 1\ndef f() -> None:\n    y = g(\n", "model.tvm/program.py");
    FAIL("no error");
  } catch (const ir::ParseError& e) {
    CHECK(e.line() == 3);
    CHECK(e.filename() == "model.tvm/program.py");
    CHECK(std::string(e.what()) == "model.tvm/program.py:3: " + e.message());
  }
}

namespace {

// Parsing may fail only with a ParseError on a line of the input; whatever it
// accepts must print to a fixed point of print(parse(.)).
void parse_anything(const std::string& text) {
  int lines = 1;
  for (char c : text) lines += c == '\n';
  try {
    ir::Module m = ir::parse(text);
    std::string once = ir::print(m);
    std::string twice = ir::print(ir::parse(once));
    if (once != twice) {
      INFO("input:\n" << text << "\nprinted:\n" << once << "\nreprinted:\n" << twice);
      FAIL("print(parse(print(m))) != print(m)");
    }
  } catch (const ir::ParseError& e) {
    if (e.line() < 1 || e.line() > lines) {
      INFO("input:\n" << text << "\nerror: " << e.what());
      FAIL("error line out of range");
    }
  }
}

std::string mutate(std::string s, std::mt19937& rng) {
  static const std::string kAlphabet = " ()[],:=-\n\t#\"'\\.eE_xaZ019y\r\xc3\xa9";
  auto pick = [&](size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int edits = 1 + static_cast<int>(pick(4));
  for (int k = 0; k < edits; ++k) {
    size_t at = pick(s.size() + 1);
    switch (pick(7)) {
      case 0: s.resize(at); break;
      case 1: s.erase(at, 1 + pick(8)); break;
      case 2: s.insert(at, 1, kAlphabet[pick(kAlphabet.size())]); break;
      case 3: if (at < s.size()) s[at] = kAlphabet[pick(kAlphabet.size())]; break;
      case 4: if (at < s.size()) s[at] = static_cast<char>(pick(256)); break;
      case 5: {  // duplicate a line
        size_t b = s.rfind('\n', at == 0 ? 0 : at - 1);
        b = b == std::string::npos ? 0 : b + 1;
        size_t e = s.find('\n', b);
        if (e != std::string::npos) s.insert(b, s.substr(b, e - b + 1));
        break;
      }
      default: {  // copy a random slice elsewhere
        size_t from = pick(s.size() + 1);
        s.insert(at, s.substr(from, pick(40)));
      }
    }
  }
  return s;
}

}  // namespace

TEST_CASE("parser: fuzzed inputs never crash") {
  std::mt19937 rng(12345);
  const std::vector<std::string> seeds = {ir_test::kRichProgram, ir_test::kDocExample};
  for (int i = 0; i < 20000; ++i) parse_anything(mutate(seeds[static_cast<size_t>(i) % seeds.size()], rng));
  std::uniform_int_distribution<int> byte(0, 255), len(0, 200);
  for (int i = 0; i < 3000; ++i) {
    std::string s = i % 2 ? kHead : "";
    for (int n = len(rng); n > 0; --n) s += static_cast<char>(byte(rng));
    parse_anything(s);
  }
  // Every prefix of a valid program.
  std::string rich = ir_test::kRichProgram;
  for (size_t n = 0; n <= rich.size(); ++n) parse_anything(rich.substr(0, n));
}
