#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace {

// A fresh directory per test case, removed with its files afterwards.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tvm_st_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    for (const std::string& f : files()) ::unlink((path_ + "/" + f).c_str());
    ::rmdir(path_.c_str());
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR* d = opendir(path_.c_str())) {
      while (dirent* e = readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) out.push_back(e->d_name);
      closedir(d);
    }
    return out;
  }

 private:
  std::string path_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
  return s;
}

// A safetensors file from a header text and a data section, as a foreign writer might make it.
std::string st_file(const std::string& header, const std::string& data) { return le64(header.size()) + header + data; }

void expect_weights_error(const std::string& path, const std::string& fragment) {
  try {
    io::WeightsFile::open(path);
  } catch (const io::WeightsError& e) {
    INFO("what(): " << e.what());
    CHECK(std::string(e.what()).rfind(path + ": ", 0) == 0);
    CHECK(std::string(e.what()).find(fragment) != std::string::npos);
    return;
  }
  FAIL("no WeightsError for " << fragment);
}

}  // namespace

TEST_CASE("safetensors: write and read back") {
  TempDir dir;
  std::vector<float> f32 = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
  std::vector<int64_t> i64 = {-1, 0, 9223372036854775807};
  std::vector<uint8_t> flags = {1, 0, 1};
  std::vector<uint16_t> bf16 = {0x3f80, 0xc000};
  std::vector<uint16_t> f16 = {0x3c00, 0x7c00, 0x7e00, 0x0001, 0x8000};  // 1, inf, NaN, smallest subnormal, -0
  int32_t scalar = 42;
  std::vector<io::TensorToWrite> ts = {
      {"model.decoder.layers.0.fc1.weight", "F32", {2, 3}, f32.data(), f32.size() * 4},
      {"ids", "I64", {3}, i64.data(), 24},
      {"mask", "BOOL", {3}, flags.data(), 3},
      {"empty", "F32", {0, 4}, nullptr, 0},
      {"half", "BF16", {2}, bf16.data(), 4},
      {"f16", "F16", {5}, f16.data(), 10},
      {"scalar", "I32", {}, &scalar, 4},
  };
  std::string path = dir.file("weights.safetensors");
  io::write_safetensors(path, ts, {{"format", "pt"}, {"note", "é"}});
  CHECK(dir.files() == std::vector<std::string>{"weights.safetensors"});  // no temp file left

  std::string raw = read_bytes(path);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | static_cast<unsigned char>(raw[static_cast<size_t>(i)]);
  CHECK((8 + header_len) % 64 == 0);
  CHECK(raw[8] == '{');

  auto wf = io::WeightsFile::open(path);
  CHECK(wf->path() == path);
  REQUIRE(wf->size() == ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    const io::TensorEntry& e = wf->entries()[i];
    INFO(e.name);
    CHECK(e.name == ts[i].name);  // file order is write order
    CHECK(e.dtype == ts[i].dtype);
    CHECK(e.shape == ts[i].shape);
    CHECK(e.nbytes == ts[i].nbytes);
    CHECK(reinterpret_cast<uintptr_t>(e.data) % 64 == 0);
    if (e.nbytes) CHECK(std::memcmp(e.data, ts[i].data, e.nbytes) == 0);
    CHECK(wf->find(e.name) == &e);
    CHECK(&wf->at(e.name) == &e);
  }
  CHECK(wf->metadata() == std::map<std::string, std::string>{{"format", "pt"}, {"note", "é"}});
  CHECK(wf->find("missing") == nullptr);
  CHECK_THROWS_AS(wf->at("missing"), io::WeightsError);

  // Overwriting an existing file replaces it whole.
  io::write_safetensors(path, {ts[1]}, {});
  auto again = io::WeightsFile::open(path);
  REQUIRE(again->size() == 1);
  CHECK(again->metadata().empty());
  CHECK(std::memcmp(again->at("ids").data, i64.data(), 24) == 0);
  CHECK(wf->entries()[0].nbytes == 24);  // the old mapping stays valid while held
}

TEST_CASE("safetensors: alignment 1 packs tensors back to back") {
  TempDir dir;
  std::vector<uint8_t> a = {1, 2, 3}, b = {4, 5};
  std::string path = dir.file("packed.safetensors");
  io::write_safetensors(path, {{"a", "U8", {3}, a.data(), 3}, {"b", "U8", {2}, b.data(), 2}}, {}, 1);
  std::string raw = read_bytes(path);
  uint64_t header_len = static_cast<unsigned char>(raw[0]);
  CHECK((8 + header_len) % 8 == 0);
  CHECK(raw.size() == 8 + header_len + 5);
  CHECK(raw.substr(raw.size() - 5) == "\x01\x02\x03\x04\x05");
  auto wf = io::WeightsFile::open(path);
  CHECK(static_cast<const uint8_t*>(wf->at("b").data)[1] == 5);
}

TEST_CASE("safetensors: writer rejects bad input") {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  float x[4] = {};
  auto expect = [&](const std::vector<io::TensorToWrite>& ts, const std::string& fragment) {
    try {
      io::write_safetensors(path, ts, {});
      FAIL("no error for " << fragment);
    } catch (const io::WeightsError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(fragment) != std::string::npos);
    }
  };
  expect({{"x", "F33", {4}, x, 16}}, "unknown dtype 'F33'");
  expect({{"x", "F32", {4}, x, 12}}, "nbytes is 12");
  expect({{"x", "F32", {-4}, x, 16}}, "negative dimension");
  expect({{"x", "F32", {4}, x, 16}, {"x", "F32", {4}, x, 16}}, "duplicate tensor name 'x'");
  expect({{"__metadata__", "F32", {4}, x, 16}}, "reserved");
  expect({{"x", "F32", {int64_t{1} << 40, int64_t{1} << 40}, x, 16}}, "overflows");
  expect({{"x", "F32", {4}, nullptr, 16}}, "data is null");
  expect({{"bad\xff", "F32", {4}, x, 16}}, "UTF-8");
  CHECK(dir.files().empty());
  try {
    io::write_safetensors(dir.file("no/such/dir/w.safetensors"), {{"x", "F32", {4}, x, 16}}, {});
    FAIL("no error");
  } catch (const io::WeightsError& e) {
    CHECK(std::string(e.what()).find("cannot create a temporary file") != std::string::npos);
  }
}

TEST_CASE("safetensors: reader validates foreign files") {
  TempDir dir;
  std::string p = dir.file("bad.safetensors");
  const std::string f32x2 = std::string(8, '\x01');
  auto put = [&](const std::string& bytes) { write_bytes(p, bytes); };
  auto ok_header = [](const std::string& name, const std::string& dtype, const std::string& shape,
                      const std::string& offsets) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
  };

  expect_weights_error(dir.file("absent.safetensors"), "cannot open");
  ::mkdir(dir.file("adir").c_str(), 0755);
  expect_weights_error(dir.file("adir"), "not a regular file");
  ::rmdir(dir.file("adir").c_str());

  put("");
  expect_weights_error(p, "shorter than the 8-byte header length");
  put("1234567");
  expect_weights_error(p, "shorter than the 8-byte header length");
  put(le64(100) + "{}");
  expect_weights_error(p, "header length 100 runs past the end of the file");
  put(le64(UINT64_MAX) + "{}");
  expect_weights_error(p, "exceeds the 100 MB limit");
  put(le64(100'000'000) + "{}");
  expect_weights_error(p, "runs past the end of the file");
  put(st_file("{", ""));
  expect_weights_error(p, "invalid JSON header");
  put(st_file("{\"a\":\"\xff\"}", ""));
  expect_weights_error(p, "invalid JSON header");
  put(st_file("[]", ""));
  expect_weights_error(p, "not an object");
  put(st_file("{" + ok_header("a", "F32", "[2]", "[0,8]") + "," + ok_header("a", "F32", "[2]", "[0,8]") + "}", f32x2));
  expect_weights_error(p, "duplicate key \"a\"");
  put(st_file("{\"a\":[]}", ""));
  expect_weights_error(p, "tensor 'a': header entry is not an object");
  put(st_file("{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", f32x2));
  expect_weights_error(p, "tensor 'a': missing \"dtype\"");
  put(st_file("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", f32x2));
  expect_weights_error(p, "tensor 'a': missing \"shape\"");
  put(st_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", f32x2));
  expect_weights_error(p, "tensor 'a': missing \"data_offsets\"");
  put(st_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", f32x2));
  expect_weights_error(p, "unexpected key \"x\"");
  put(st_file("{" + ok_header("a", "F33", "[2]", "[0,8]") + "}", f32x2));
  expect_weights_error(p, "tensor 'a': unknown dtype 'F33'");
  put(st_file("{\"a\":{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}}", f32x2));
  expect_weights_error(p, "dtype is not a string");
  put(st_file("{" + ok_header("a", "F32", "2", "[0,8]") + "}", f32x2));
  expect_weights_error(p, "shape is not an array");
  put(st_file("{" + ok_header("a", "F32", "[-2]", "[0,8]") + "}", f32x2));
  expect_weights_error(p, "not a non-negative int64");
  put(st_file("{" + ok_header("a", "F32", "[2.0]", "[0,8]") + "}", f32x2));
  expect_weights_error(p, "not a non-negative int64");
  put(st_file("{" + ok_header("a", "F32", "[9223372036854775808]", "[0,8]") + "}", f32x2));
  expect_weights_error(p, "not a non-negative int64");
  put(st_file("{" + ok_header("a", "F32", "[4294967296,4294967296,4294967296]", "[0,8]") + "}", f32x2));
  expect_weights_error(p, "overflows");
  put(st_file("{" + ok_header("a", "F32", "[4611686018427387904]", "[0,8]") + "}", f32x2));
  expect_weights_error(p, "overflows");
  put(st_file("{" + ok_header("a", "F32", "[2]", "[8,0]") + "}", f32x2));
  expect_weights_error(p, "data_offsets [8, 0] are reversed");
  put(st_file("{" + ok_header("a", "F32", "[2]", "[0,16]") + "}", f32x2));
  expect_weights_error(p, "run past the end of the data section (8 bytes)");
  put(st_file("{" + ok_header("a", "F32", "[2]", "[0,4]") + "}", f32x2));
  expect_weights_error(p, "span 4 bytes but F32 [2] needs 8");
  // 16-bit dtypes: 2 bytes an element, whatever the element type reads as.
  put(st_file("{" + ok_header("a", "F16", "[2]", "[0,8]") + "}", f32x2));
  expect_weights_error(p, "span 8 bytes but F16 [2] needs 4");
  put(st_file("{" + ok_header("a", "BF16", "[3]", "[0,4]") + "}", f32x2));
  expect_weights_error(p, "span 4 bytes but BF16 [3] needs 6");
  put(st_file("{" + ok_header("a", "BF16", "[5]", "[0,10]") + "}", f32x2));
  expect_weights_error(p, "run past the end of the data section (8 bytes)");
  put(st_file("{" + ok_header("a", "F32", "[2]", "[0,8,9]") + "}", f32x2));
  expect_weights_error(p, "data_offsets must be two non-negative ints");
  put(st_file("{" + ok_header("a", "F32", "[2]", "[-1,7]") + "}", f32x2));
  expect_weights_error(p, "data_offsets must be two non-negative ints");
  put(st_file("{" + ok_header("a", "F32", "[2]", "[0,8]") + "," + ok_header("b", "F32", "[1]", "[4,8]") + "}", f32x2));
  expect_weights_error(p, "tensors 'a' and 'b' overlap");
  put(st_file("{\"__metadata__\":{\"k\":1}}", ""));
  expect_weights_error(p, "__metadata__ value of \"k\" is not a string");
  put(st_file("{\"__metadata__\":[]}", ""));
  expect_weights_error(p, "__metadata__ is not an object");
}

TEST_CASE("safetensors: foreign layouts that are valid") {
  TempDir dir;
  std::string p = dir.file("ok.safetensors");
  // Header order differs from data order; tensors are unaligned; trailing spaces.
  std::string header =
      "{\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[3,4]},"
      "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[2,2]},"
      "\"a\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[1,3]},"
      "\"__metadata__\":{}}   ";
  write_bytes(p, st_file(header, std::string("\x09\x34\x12\x07", 4)));
  auto wf = io::WeightsFile::open(p);
  REQUIRE(wf->size() == 3);
  CHECK(wf->entries()[0].name == "a");
  CHECK(wf->entries()[1].name == "z");  // an empty tensor sorts by its offset and overlaps nothing
  CHECK(wf->entries()[2].name == "b");
  int16_t v;
  std::memcpy(&v, wf->at("a").data, 2);
  CHECK(v == 0x1234);
  CHECK(*static_cast<const uint8_t*>(wf->at("b").data) == 7);

  write_bytes(p, st_file("{}", ""));
  CHECK(io::WeightsFile::open(p)->size() == 0);
}

TEST_CASE("safetensors: every truncation and byte flip is an error, never a crash") {
  TempDir dir;
  std::vector<float> x = {1, 2, 3, 4, 5};
  std::vector<int64_t> y = {7, 8};
  std::string good = dir.file("good.safetensors");
  io::write_safetensors(good, {{"x", "F32", {5}, x.data(), 20}, {"y", "I64", {2}, y.data(), 16}}, {{"k", "v"}});
  std::string bytes = read_bytes(good);
  std::string p = dir.file("cut.safetensors");
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(p, bytes.substr(0, n));
    CHECK_THROWS_AS(io::WeightsFile::open(p), io::WeightsError);
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> pos(0, bytes.size() - 1);
  std::uniform_int_distribution<int> val(0, 255);
  for (int i = 0; i < 500; ++i) {
    std::string m = bytes;
    m[pos(rng)] = static_cast<char>(val(rng));
    write_bytes(p, m);
    try {
      auto wf = io::WeightsFile::open(p);
      for (const io::TensorEntry& e : wf->entries()) CHECK(e.nbytes <= bytes.size());
    } catch (const io::WeightsError&) {
    }
  }
}
