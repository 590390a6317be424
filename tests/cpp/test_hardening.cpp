// Regression tests for issue 11's findings: sizes that overflow, call chains that
// would overflow the C++ stack, operand counts past 16 bits, endless loops, FIFOs
// under program file names and meta.json. Each bad input must be an error naming
// what went wrong, never a crash, a hang or a wrong result.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "io/safetensors.h"
#include "core/kvcache.h"
#include "vm/vm.h"
#include "test_helpers.h"

using vm::Tensor;
using vm::Value;
using test_helpers::error_of;

namespace {

std::shared_ptr<const vm::Program> program(const std::string& body) {
  return vm::Program::from_text(body.rfind("# tensorvm", 0) == 0 ? body : "# tensorvm ir 1\n" + body, "");
}

std::string run_error(const std::string& body, const std::string& fn, std::vector<Value> in = {}) {
  return error_of([&] {
    vm::Session s(program(body));
    vm::run(s, fn, std::move(in));
  });
}

// A fresh directory under /tmp for program files.
std::string temp_dir(const std::string& name) {
  const std::string d = "/tmp/tensorvm_test_hardening_" + std::to_string(::getpid()) + "_" + name;
  ::mkdir(d.c_str(), 0700);
  return d;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

const char* kIdentity = "# tensorvm ir 1\ndef f(x: int) -> int:\n    return x\n";

}  // namespace

// ---------------------------------------------------------------- sizes

TEST_CASE("hardening: shape products that overflow are errors", "[hardening]") {
  CHECK_THAT(error_of([] { vm::Shape{1, INT64_MAX, 2}.numel(); }), Catch::Contains("more elements than fit in an int64"));
  CHECK(vm::Shape{0, INT64_MAX, INT64_MAX}.numel() == 0);  // a zero dim: empty, whatever the rest
  CHECK_THAT(error_of([] { vm::contiguous_strides({4611686018427387905, 256}); }),
             Catch::Contains("more elements than fit in an int64"));
  // Fits int64 as elements but not as bytes, or past the 2^48-byte cap of one tensor.
  CHECK_THAT(error_of([] { Tensor::empty(vm::DType::i64, {1, int64_t(1) << 61}); }), Catch::Contains("byte limit"));
  CHECK_THAT(error_of([] { Tensor::empty(vm::DType::f32, {int64_t(1) << 47}); }), Catch::Contains("byte limit"));
  CHECK_THAT(error_of([] { vm::Pool::global().allocate(SIZE_MAX - 10); }), Catch::Contains("byte limit"));
  CHECK(Tensor::empty(vm::DType::f32, {0, int64_t(1) << 62}).numel() == 0);
  // Found by fuzz_bundle (tests/fuzz/findings.md): an empty array of shape [2^32, 2^32, 0]
  // in an inputs or bundle file; the strides (and then the ops' loops) multiplied the
  // other dims past int64 (UBSan; wrapped strides otherwise).
  const int64_t big = int64_t(1) << 32;
  for (const vm::Shape& shape : {vm::Shape{big, big, 0}, vm::Shape{0, big, big}, vm::Shape{big, big, big, 2, 0}}) {
    INFO(shape.str());
    CHECK_THAT(error_of([&] { vm::contiguous_strides(shape); }), Catch::Contains("is empty, but its other dims multiply past int64"));
    CHECK_THAT(error_of([&] { Tensor::empty(vm::DType::f32, shape); }), Catch::Contains("multiply past int64"));
  }
  CHECK(vm::contiguous_strides({big, 0, big / 4}) == vm::Shape{big / 4, big / 4, 1});  // 2^62 fits
}

TEST_CASE("hardening: IR that asks for an overflowing tensor fails naming the op", "[hardening]") {
  CHECK_THAT(run_error("def f() -> Tensor:\n    a = full([1, 9223372036854775807], 39, dtype=\"i64\")\n    return a\n", "f"),
             Catch::StartsWith("full: a i64[1, 9223372036854775807] tensor needs") && Catch::Contains("byte limit") &&
                 Catch::Contains("program.py:3 in f"));
  CHECK_THAT(run_error("def f() -> Tensor:\n    a = zeros([4294967296, 4294967296], dtype=\"f32\")\n    return a\n", "f"),
             Catch::StartsWith("zeros: ") && Catch::Contains("more elements than fit in an int64"));
  const std::string reshape =
      "def f() -> Tensor:\n    a = arange(0, 256, dtype=\"f32\")\n    b = reshape(a, [4611686018427387905, 256])\n"
      "    return b\n";
  CHECK_THAT(run_error(reshape, "f"), Catch::StartsWith("reshape: ") && Catch::Contains("more elements than fit in an int64") &&
                                          Catch::Contains("program.py:4 in f"));
  // The same with -1 inferred.
  CHECK_THAT(run_error("def f() -> Tensor:\n    a = arange(0, 256, dtype=\"f32\")\n    b = reshape(a, [-1, 4611686018427387905, 4])\n"
                       "    return b\n", "f"),
             Catch::StartsWith("reshape: "));
}

TEST_CASE("hardening: a KV cache too large to allocate is an error, not a 0-byte cache", "[hardening]") {
  // init_cache(x, 2**40, 2**20) of the issue: batch 2^40, max_len 2^20.
  const std::string body = "def f(b: int, n: int) -> KVCache:\n    c = kv_cache(2, b, 8, 64, n)\n    return c\n";
  CHECK_THAT(run_error(body, "f", {Value::from_int(int64_t(1) << 40), Value::from_int(int64_t(1) << 20)}),
             Catch::StartsWith("kv_cache: ") && Catch::Contains("more elements than fit in an int64"));
  // max_new_tokens = 2^56 through a cache's max_len.
  CHECK_THAT(run_error(body, "f", {Value::from_int(1), Value::from_int(72057594037927936)}), Catch::StartsWith("kv_cache: "));
  CHECK_THAT(run_error(body, "f", {Value::from_int(1), Value::from_int(1152921504606846975)}), Catch::StartsWith("kv_cache: "));
  // Large but representable: refused by the byte cap rather than by malloc.
  CHECK_THAT(run_error(body, "f", {Value::from_int(1), Value::from_int(int64_t(1) << 38)}), Catch::Contains("byte limit"));
}

// ---------------------------------------------------------------- call depth

namespace {

// f0 calls f1 calls ... f{n-1}, each passing its int on.
std::string call_chain(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += "def f" + std::to_string(i) + "(x: int) -> int:\n";
    if (i + 1 < n) {
      text += "    y = f" + std::to_string(i + 1) + "(x)\n    return y\n";
    } else {
      text += "    y = add(x, 1)\n    return y\n";
    }
  }
  return text;
}

}  // namespace

TEST_CASE("hardening: call chains past the depth limit are load errors, not stack overflows", "[hardening]") {
  for (int n : {30000, 50000}) {
    const std::string err = error_of([&] { program(call_chain(n)); });
    CHECK_THAT(err, Catch::Contains("nests calls") && Catch::Contains("more than the limit of 1000"));
  }
  // At the limit it loads and runs.
  vm::Session s(program(call_chain(vm::kMaxCallDepth)));
  CHECK(vm::run(s, "f0", {Value::from_int(41)})[0].as_int() == 42);
  CHECK_THAT(error_of([&] { program(call_chain(vm::kMaxCallDepth + 1)); }), Catch::Contains("'f0' nests calls 1001 deep"));
}

// ---------------------------------------------------------------- operand counts

TEST_CASE("hardening: statements with more than 65535 operands are load errors, not truncated", "[hardening]") {
  const int n = 65536;
  std::string params, args;
  for (int i = 0; i < n; ++i) {
    params += (i ? ", a" : "a") + std::to_string(i) + ": int";
    args += (i ? ", " : "") + std::to_string(i);
  }
  const std::string body = "def g(" + params + ") -> int:\n    return a65535\n\ndef f() -> int:\n    r = g(" + args +
                           ")\n    return r\n";
  CHECK_THAT(error_of([&] { program(body); }), Catch::Contains("g: 65536 arguments in one statement, more than the limit of 65535"));
}

// ---------------------------------------------------------------- instruction budget

TEST_CASE("hardening: an endless while_loop stops at the instruction budget", "[hardening]") {
  const std::string body = R"(def forever(i: int) -> bool:
    t = ge(i, 0)
    return t

def step(i: int) -> int:
    j = add(i, 1)
    return j

def f(x: int) -> int:
    r = while_loop(forever, step, x)
    return r
)";
  vm::SessionOptions o;
  o.max_instructions = 100000;
  vm::Session s(program(body), o);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string err = error_of([&] { vm::run(s, "f", {Value::from_int(0)}); });
  CHECK_THAT(err, Catch::Contains("budget of 100000 instructions") && Catch::Contains("loop 'step'") &&
                      Catch::Contains("program.py:11 in f"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60));  // a hang detector, not a speed test
  // The budget is per run: the session still works, and a loop that ends is untouched.
  vm::Session ok(program(kIdentity), o);
  CHECK(vm::run(ok, "f", {Value::from_int(3)})[0].as_int() == 3);
  CHECK_THAT(error_of([&] { vm::run(s, "f", {Value::from_int(0)}); }), Catch::Contains("budget"));
  s.set_max_instructions(0);  // unlimited: a loop bounded by its input finishes
  const std::string bounded = R"(def below(i: int) -> bool:
    t = lt(i, 5000)
    return t

def step(i: int) -> int:
    j = add(i, 1)
    return j

def f(x: int) -> int:
    r = while_loop(below, step, x)
    return r
)";
  vm::Session b(program(bounded), o);
  CHECK(vm::run(b, "f", {Value::from_int(0)})[0].as_int() == 5000);
  b.set_max_instructions(1000);
  CHECK_THAT(error_of([&] { vm::run(b, "f", {Value::from_int(0)}); }), Catch::Contains("budget of 1000"));
  CHECK(vm::run(b, "f", {Value::from_int(4990)})[0].as_int() == 5000);
}

// ---------------------------------------------------------------- files

TEST_CASE("hardening: a FIFO under a program's file names is an error, not a hang", "[hardening]") {
  for (const char* name : {"program.py", "weights.safetensors", "meta.json"}) {
    const std::string dir = temp_dir(std::string("fifo_") + name);
    write_text(dir + "/program.py", kIdentity);
    const std::string fifo = dir + "/" + name;
    std::remove(fifo.c_str());
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const std::string err = error_of([&] { vm::Program::load(dir); });
    CHECK_THAT(err, Catch::Contains(name) && Catch::Contains("not a regular file"));
    std::remove(fifo.c_str());
  }
  const std::string dir = temp_dir("fifo_direct");
  const std::string fifo = dir + "/w.safetensors";
  std::remove(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(io::WeightsFile::open(fifo), Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(io::WeightsFile::open(fifo, true), Catch::Contains("not a regular file"));
  std::remove(fifo.c_str());
}

TEST_CASE("hardening: meta.json is validated", "[hardening]") {
  const std::string dir = temp_dir("meta");
  write_text(dir + "/program.py", kIdentity);
  write_text(dir + "/meta.json", R"({"format": "tensorvm-ir", "version": 1, "eos": 2})");
  CHECK(vm::Program::load(dir)->meta_json().find("\"eos\"") != std::string::npos);
  const std::pair<const char*, const char*> bad[] = {
      {R"({"format": "tensorvm-ir", "version": 99})", "unsupported program version 99"},
      {R"({"format": "tensorvm-ir", "version": 1)", "not valid JSON"},
      {R"([1, 2])", "not a JSON object"},
      {R"({"format": "onnx", "version": 1})", "not a tensorvm program"},
      {R"({"format": "tensorvm-ir"})", "unsupported program version (missing)"},
      {R"({"format": "tensorvm-ir", "version": "1"})", "unsupported program version \"1\""},
  };
  for (const auto& [text, msg] : bad) {
    write_text(dir + "/meta.json", text);
    CHECK_THAT(error_of([&] { vm::Program::load(dir); }), Catch::Contains("meta.json") && Catch::Contains(msg));
  }
  std::remove((dir + "/meta.json").c_str());
  CHECK(vm::Program::load(dir)->meta_json() == "{}");  // absent is fine
}

TEST_CASE("hardening: weights copied at load survive the file being truncated in place", "[hardening]") {
  const std::string dir = temp_dir("copy");
  write_text(dir + "/program.py", "# tensorvm ir 1\ndef f() -> Tensor:\n    w = param(\"w\")\n    return w\n");
  std::vector<float> w(1 << 16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i);
  io::write_safetensors(dir + "/weights.safetensors", {{"w", "F32", {int64_t(w.size())}, w.data(), w.size() * 4}});
  vm::LoadOptions copy;
  copy.copy_weights = true;
  auto p = vm::Program::load(dir, copy);
  REQUIRE(::truncate((dir + "/weights.safetensors").c_str(), 16) == 0);  // a mapping would now SIGBUS
  vm::Session s(p);
  const Tensor t = vm::run(s, "f", {})[0].as_tensor();
  CHECK(t.data<float>()[65535] == 65535.0f);
  // And a file truncated before load is refused by the size checks.
  CHECK_THAT(error_of([&] { vm::Program::load(dir); }), Catch::Contains("weights.safetensors"));
}
