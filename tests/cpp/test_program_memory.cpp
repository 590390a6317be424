// Programs from memory (Program::from_memory, from_reader): the same results as from a
// file, the same refusals of bad bytes (every truncation, corrupted headers), borrowed
// versus copied weights, the app's reader failing, and meta checks.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/safetensors.h"
#include "test_helpers.h"
#include "vm/vm.h"

using test_helpers::error_of;
using vm::Tensor;
using vm::Value;

namespace {

const char* kText = R"(# tensorvm ir 1
def f(x: Tensor) -> Tensor:
    w = param("layers.{}.w", 1)
    b = param("bias")
    y = linear(x, w, b)
    return y

def weight() -> Tensor:
    w = param("layers.0.w")
    return w
)";

std::string weights_file() {
  static const float w0[6] = {1, 2, 3, 4, 5, 6};
  static const float w1[6] = {0.5f, -1, 2, 0, 1, -2};
  static const float b[2] = {0.25f, -0.75f};
  const std::string path = "/tmp/tensorvm_test_memory_" + std::to_string(::getpid()) + ".safetensors";
  io::write_safetensors(path, {{"layers.0.w", "F32", {2, 3}, w0, sizeof w0},
                               {"layers.1.w", "F32", {2, 3}, w1, sizeof w1},
                               {"bias", "F32", {2}, b, sizeof b}});
  return path;
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

std::vector<float> run_f(const std::shared_ptr<const vm::Program>& p) {
  vm::Session s(p);
  Tensor x = Tensor::empty(vm::DType::f32, {1, 3});
  for (int i = 0; i < 3; ++i) x.data<float>()[i] = float(i + 1);
  Tensor y = vm::run(s, "f", {Value(x)})[0].as_tensor();
  return {y.data<float>(), y.data<float>() + y.numel()};
}

class VectorReader : public vm::WeightsReader {
 public:
  explicit VectorReader(std::vector<char> bytes, size_t chunk = 3) : bytes_(std::move(bytes)), chunk_(chunk) {}
  uint64_t size() override { return bytes_.size() + extra_size; }
  size_t read(uint64_t offset, void* dst, size_t n) override {
    ++reads;
    if (fail_at_read && reads == fail_at_read) throw std::runtime_error("flash read error");
    if (offset >= bytes_.size()) return 0;
    n = std::min({n, chunk_, bytes_.size() - size_t(offset)});  // short reads, as a real source may give
    std::memcpy(dst, bytes_.data() + offset, n);
    return n;
  }
  int reads = 0, fail_at_read = 0;
  uint64_t extra_size = 0;

 private:
  std::vector<char> bytes_;
  size_t chunk_;
};

}  // namespace

TEST_CASE("a program from memory gives the results of the same program from files", "[memory]") {
  const std::string path = weights_file();
  const std::vector<char> bytes = read_bytes(path);
  const std::vector<float> want = run_f(vm::Program::from_text(kText, path));
  CHECK(run_f(vm::Program::from_memory(kText, bytes.data(), bytes.size())) == want);
  vm::LoadOptions copy;
  copy.copy_weights = true;
  CHECK(run_f(vm::Program::from_memory(kText, bytes.data(), bytes.size(), {}, copy)) == want);
  VectorReader reader(bytes);
  CHECK(run_f(vm::Program::from_reader(kText, reader)) == want);
  CHECK(reader.reads > 1);
  std::remove(path.c_str());
}

TEST_CASE("from_memory borrows the app's buffer unless asked to copy", "[memory]") {
  const std::string path = weights_file();
  std::vector<char> bytes = read_bytes(path);
  std::remove(path.c_str());
  // A 64-byte aligned copy, so the borrowed weights are viewed in place.
  std::vector<char> storage(bytes.size() + 64);
  char* aligned = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  std::memcpy(aligned, bytes.data(), bytes.size());
  auto inside = [&](const std::shared_ptr<const vm::Program>& p) {
    vm::Session s(p);
    const char* w = static_cast<const char*>(vm::run(s, "weight", {})[0].as_tensor().raw());
    return w >= aligned && w < aligned + bytes.size();
  };
  CHECK(inside(vm::Program::from_memory(kText, aligned, bytes.size())));
  vm::LoadOptions copy;
  copy.copy_weights = true;
  auto copied = vm::Program::from_memory(kText, aligned, bytes.size(), {}, copy);
  CHECK_FALSE(inside(copied));
  std::memset(aligned, 0, bytes.size());  // the copy does not depend on the app's buffer
  CHECK(run_f(copied).size() == 2);
  // An owner is kept alive as long as the program.
  auto owner = std::make_shared<std::vector<char>>(bytes);
  std::weak_ptr<std::vector<char>> watch = owner;
  auto owned = vm::Program::from_memory(kText, owner->data(), owner->size(), {}, {}, owner);
  owner.reset();
  CHECK_FALSE(watch.expired());
  owned.reset();
  CHECK(watch.expired());
}

TEST_CASE("every truncation of the weights is an error, as it is for the file", "[memory]") {
  const std::string path = weights_file();
  const std::vector<char> bytes = read_bytes(path);
  std::remove(path.c_str());
  const std::string cut_path = path + ".cut";
  for (size_t n = 0; n < bytes.size(); ++n) {
    // An exactly sized heap block, so that ASan sees any read past the end.
    std::vector<char> cut(bytes.begin(), bytes.begin() + long(n));
    const std::string e = error_of([&] { vm::Program::from_memory(kText, n ? cut.data() : "", n); });
    INFO("truncated to " << n << " bytes: " << e);
    CHECK(e.rfind("weights.safetensors (in memory): ", 0) == 0);
    if (n % 16 == 0) {  // the file loader says the same about the same bytes
      std::ofstream(cut_path, std::ios::binary).write(cut.data(), std::streamsize(n));
      std::string from_file = error_of([&] { vm::Program::from_text(kText, cut_path); });
      from_file.replace(0, cut_path.size(), "weights.safetensors (in memory)");
      if (n < 8) CHECK(from_file.find("shorter than the 8-byte header length") != std::string::npos);
      else CHECK(from_file == e);
    }
    VectorReader reader(cut);
    CHECK(error_of([&] { vm::Program::from_reader(kText, reader); }).rfind("weights.safetensors (in memory): ", 0) == 0);
  }
  std::remove(cut_path.c_str());
}

TEST_CASE("corrupted weight bytes give an error or a program, never a crash", "[memory]") {
  const std::string path = weights_file();
  const std::vector<char> bytes = read_bytes(path);
  std::remove(path.c_str());
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  int errors = 0;
  for (size_t i = 0; i < 8 + header_len; ++i) {
    for (char v : {'\0', '"', '9', '{', '\xff'}) {
      std::vector<char> bad = bytes;
      if (bad[i] == v) continue;
      bad[i] = v;
      try {
        auto p = vm::Program::from_memory(kText, bad.data(), bad.size());
        run_f(p);
      } catch (const vm::Error&) {
        ++errors;
      }
    }
  }
  CHECK(errors > int(header_len));  // most single-byte changes to a header break it
}

TEST_CASE("the app's reader failing, lying about its size, or ending early", "[memory]") {
  const std::string path = weights_file();
  const std::vector<char> bytes = read_bytes(path);
  std::remove(path.c_str());
  VectorReader failing(bytes);
  failing.fail_at_read = 3;
  const std::string e1 = error_of([&] { vm::Program::from_reader(kText, failing); });
  CHECK(e1.find("weights.safetensors (in memory): reading bytes 6..") != std::string::npos);
  CHECK(e1.find("flash read error") != std::string::npos);
  VectorReader longer(bytes);
  longer.extra_size = 10;
  CHECK(error_of([&] { vm::Program::from_reader(kText, longer); }).find("the reader ended at byte") != std::string::npos);
  VectorReader tiny(std::vector<char>(bytes.begin(), bytes.begin() + 3));
  CHECK(error_of([&] { vm::Program::from_reader(kText, tiny); }).find("3 bytes, shorter than the 8-byte header") !=
        std::string::npos);
}

TEST_CASE("text and meta from memory are checked as the files are", "[memory]") {
  CHECK(error_of([] { vm::Program::from_memory("def f(:\n", nullptr, 0); }).find("program.py (in memory):1") != std::string::npos);
  CHECK(error_of([] { vm::Program::from_memory(kText, nullptr, 0); }).find("param") != std::string::npos);  // no weights
  CHECK(error_of([] { vm::Program::from_memory(kText, nullptr, 0, "{not json"); }) == "meta.json (in memory): not valid JSON");
  CHECK(error_of([] { vm::Program::from_memory(kText, nullptr, 0, R"({"format": "tensorvm-ir", "version": 99})"); })
            .find("unsupported program version 99") != std::string::npos);
  CHECK(error_of([] { vm::Program::from_memory(kText, nullptr, 5); }).find("null data pointer") != std::string::npos);
  const std::string meta = R"({"format": "tensorvm-ir", "version": 1, "name": "m"})";
  auto p = vm::Program::from_memory("# tensorvm ir 1\ndef g(x: int) -> int:\n    return x\n", nullptr, 0, meta);
  CHECK(p->meta_json() == meta);
  CHECK(p->filename() == "program.py (in memory)");
}

// The example of docs/runtime.md ("Embedding on a device"), compiled and run here.
#define main embed_from_memory_example_main
#include "../../examples/embed/from_memory.cpp"
#undef main

TEST_CASE("the from-memory example of docs/runtime.md runs", "[memory]") {
  CHECK(embed_from_memory_example_main() == 0);
  CHECK(test_helpers::source_file("docs/runtime.md").find(test_helpers::source_file("examples/embed/from_memory.cpp")) !=
        std::string::npos);
}
