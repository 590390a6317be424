// cli/verify: tensorvm-run's check of a bundle, on a manifest and arrays held in
// memory (the end-to-end runs through the command line are tests/python/test_bundle.py).
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli/verify.h"

namespace {

const char* kProgram = R"(# tensorvm ir 1
def f(x: Tensor) -> Tensor:
    y = add(x, 1.0)
    return y
)";

io::ArrayData f32_array(const std::string& name, const std::vector<float>& values) {
  io::ArrayData a{name, "F32", {int64_t(values.size())}, std::vector<unsigned char>(values.size() * 4)};
  if (!values.empty()) std::memcpy(a.data.data(), values.data(), a.data.size());  // data() of an empty vector may be null
  return a;
}

// The manifest of one case of f with `output` as its output's entry.
std::string manifest(const std::string& output) {
  return R"({"format": "tensorvm-bundle", "version": 1, "cases": [{"function": "f", "arrays": "a.safetensors",
             "outputs": [)" +
         output + "]}]}";
}

int verify(const std::string& manifest_text, io::ArrayData expected = f32_array("expected.0", {2, 3}),
           io::ArrayData input = f32_array("input.x", {1, 2})) {
  const auto program = vm::Program::from_memory(kProgram, nullptr, 0);
  const cli::BundleArrays arrays = [&](const std::string&) { return std::vector<io::ArrayData>{input, expected}; };
  return cli::verify_bundle(manifest_text, "p.tvm/bundle.json", arrays, program, {});
}

}  // namespace

TEST_CASE("verify_bundle compares a bundle held in memory") {
  CHECK(verify(manifest(R"({"index": 0, "compare": "close", "atol": 0.0001, "rtol": 0.0001})")) == 0);
  CHECK(verify(manifest(R"({"index": 0, "compare": "exact"})")) == 0);
  CHECK(verify(manifest(R"({"index": 1, "compare": "exact"})")) == 1);  // f has one output
}

// Found by fuzz_bundle (tests/fuzz/findings.md): nlohmann's value() threw its own
// type_error, which named neither verify nor the file.
TEST_CASE("verify_bundle reports a manifest field of the wrong type as a vm::Error naming the file") {
  std::vector<std::string> manifests = {R"({"format": 7, "version": 1, "cases": []})"};
  for (const char* output : {R"({"index": 0, "compare": 5})", R"({"index": 0, "atol": "x"})",
                             R"({"index": 0, "none": 1})"})
    manifests.push_back(manifest(output));
  for (const std::string& m : manifests) {
    INFO(m);
    CHECK_THROWS_AS(verify(m), vm::Error);
    CHECK_THROWS_WITH(verify(m), Catch::Contains("verify: p.tvm/bundle.json: [json.exception.type_error"));
  }
}

// Found by fuzz_bundle (tests/fuzz/findings.md): an expected array of shape
// [2^32, 2^32, 0] (empty, and valid as a file) made verify multiply its dims past int64
// (UBSan; the wrapped count happened to be 0). It is a shape mismatch.
TEST_CASE("verify_bundle compares an empty expected array whose other dims overflow int64") {
  io::ArrayData empty = f32_array("expected.0", {});
  empty.shape = {int64_t(1) << 32, int64_t(1) << 32, 0};
  CHECK(verify(manifest(R"({"index": 0, "compare": "exact"})"), empty) == 1);
}

// Found by fuzz_bundle: an empty input array (no bytes: a null data()) went to memcpy,
// which must not be given null (UBSan). One whose other dims multiply past int64 is
// refused (vm::contiguous_strides, test_hardening.cpp).
TEST_CASE("verify_bundle runs a case whose input array is empty") {
  io::ArrayData empty = f32_array("input.x", {}), expected = f32_array("expected.0", {});
  empty.shape = expected.shape = {2, 0};
  CHECK(verify(manifest(R"({"index": 0, "compare": "exact"})"), expected, empty) == 0);
  empty.shape = {int64_t(1) << 32, int64_t(1) << 32, 0};
  CHECK_THROWS_WITH(verify(manifest(R"({"index": 0, "compare": "exact"})"), expected, empty),
                    Catch::Contains("multiply past int64"));
}
