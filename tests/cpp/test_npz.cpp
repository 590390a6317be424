// The .npz reader and writer (io/npz.h): numpy's own files, round trips, and
// malformed input, which must give a WeightsError and never a crash.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "io/npz.h"

namespace {

// np.savez(f, a=np.arange(6, dtype=np.float32).reshape(2, 3),
//          f=np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)), s=np.array(7))
// with numpy 2.4 (ZIP64 extra fields in the local headers, as numpy always writes).
const char kNumpyNpz[] =
    "\x50\x4b\x03\x04\x2d\x00\x00\x00\x00\x00\x00\x00\x21\x00\x4f\xe9\x00\x2a\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x14\x00\x61\x2e"
    "\x6e\x70\x79\x01\x00\x10\x00\x98\x00\x00\x00\x00\x00\x00\x00\x98\x00\x00\x00\x00\x00\x00\x00\x93\x4e\x55\x4d\x50\x59\x01\x00\x76"
    "\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x66\x34\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72"
    "\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x32\x2c\x20\x33\x29\x2c\x20\x7d\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x00\x00\x00\x00\x00\x80\x3f\x00"
    "\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40\x50\x4b\x03\x04\x2d\x00\x00\x00\x00\x00\x00\x00\x21\x00\xca\x64\x74"
    "\xe2\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x14\x00\x66\x2e\x6e\x70\x79\x01\x00\x10\x00\x98\x00\x00\x00\x00\x00\x00\x00\x98\x00"
    "\x00\x00\x00\x00\x00\x00\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x69\x34\x27\x2c"
    "\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x54\x72\x75\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a"
    "\x20\x28\x32\x2c\x20\x33\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x0a\x00\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x02\x00\x00\x00\x05\x00\x00\x00\x50\x4b"
    "\x03\x04\x2d\x00\x00\x00\x00\x00\x00\x00\x21\x00\x23\xb8\xf0\x6c\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x14\x00\x73\x2e\x6e\x70"
    "\x79\x01\x00\x10\x00\x88\x00\x00\x00\x00\x00\x00\x00\x88\x00\x00\x00\x00\x00\x00\x00\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b"
    "\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x69\x38\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a"
    "\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20"
    "\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x07\x00\x00\x00\x00\x00\x00\x00\x50\x4b\x01"
    "\x02\x2d\x03\x2d\x00\x00\x00\x00\x00\x00\x00\x21\x00\x4f\xe9\x00\x2a\x98\x00\x00\x00\x98\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x80\x01\x00\x00\x00\x00\x61\x2e\x6e\x70\x79\x50\x4b\x01\x02\x2d\x03\x2d\x00\x00\x00\x00\x00\x00\x00\x21\x00"
    "\xca\x64\x74\xe2\x98\x00\x00\x00\x98\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\xcf\x00\x00\x00\x66\x2e"
    "\x6e\x70\x79\x50\x4b\x01\x02\x2d\x03\x2d\x00\x00\x00\x00\x00\x00\x00\x21\x00\x23\xb8\xf0\x6c\x88\x00\x00\x00\x88\x00\x00\x00\x05"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x9e\x01\x00\x00\x73\x2e\x6e\x70\x79\x50\x4b\x05\x06\x00\x00\x00\x00\x03\x00"
    "\x03\x00\x99\x00\x00\x00\x5d\x02\x00\x00\x00\x00";

// np.savez_compressed(f, a=np.arange(3, dtype=np.float32))
const char kCompressedNpz[] =
    "\x50\x4b\x03\x04\x2d\x00\x00\x00\x08\x00\x00\x00\x21\x00\xb6\x8c\x86\x53\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x14\x00\x61\x2e"
    "\x6e\x70\x79\x01\x00\x10\x00\x8c\x00\x00\x00\x00\x00\x00\x00\x4b\x00\x00\x00\x00\x00\x00\x00\x9b\xec\x17\xea\x1b\x10\xc9\xc8\x50"
    "\xc6\x50\xad\x9e\x92\x5a\x9c\x5c\xa4\x6e\xa5\xa0\x6e\x93\x66\xa2\xae\xa3\xa0\x9e\x96\x5f\x54\x52\x94\x98\x17\x9f\x5f\x94\x92\x0a"
    "\x12\x77\x4b\xcc\x29\x4e\x05\x8a\x17\x67\x24\x16\xa4\x02\xf9\x1a\xc6\x3a\x9a\x3a\x0a\xb5\x0a\x14\x00\x2e\x06\x30\x68\xb0\x07\x12"
    "\x0e\x00\x50\x4b\x01\x02\x2d\x03\x2d\x00\x00\x00\x08\x00\x00\x00\x21\x00\xb6\x8c\x86\x53\x4b\x00\x00\x00\x8c\x00\x00\x00\x05\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x01\x00\x00\x00\x00\x61\x2e\x6e\x70\x79\x50\x4b\x05\x06\x00\x00\x00\x00\x01\x00\x01"
    "\x00\x33\x00\x00\x00\x82\x00\x00\x00\x00\x00";

std::string numpy_npz() { return std::string(kNumpyNpz, sizeof kNumpyNpz - 1); }

template <typename T>
std::vector<T> values(const io::ArrayData& a) {
  std::vector<T> out(a.data.size() / sizeof(T));
  std::memcpy(out.data(), a.data.data(), a.data.size());
  return out;
}

std::vector<io::ArrayData> parse(const std::string& bytes) { return io::parse_npz(bytes.data(), bytes.size(), "test.npz"); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct TempPath {
  std::string path;
  TempPath() {
    char tmpl[] = "/tmp/tvm_npz_XXXXXX";
    int fd = mkstemp(tmpl);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = tmpl;
  }
  ~TempPath() { ::unlink(path.c_str()); }
};

}  // namespace

TEST_CASE("npz: reads what numpy.savez writes, Fortran order turned to C order", "[npz]") {
  auto arrays = parse(numpy_npz());
  REQUIRE(arrays.size() == 3);
  CHECK(arrays[0].name == "a");
  CHECK(arrays[0].dtype == "F32");
  CHECK(arrays[0].shape == std::vector<int64_t>{2, 3});
  CHECK(values<float>(arrays[0]) == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(arrays[1].name == "f");
  CHECK(arrays[1].dtype == "I32");
  CHECK(values<int32_t>(arrays[1]) == std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  CHECK(arrays[2].name == "s");
  CHECK(arrays[2].dtype == "I64");
  CHECK(arrays[2].shape.empty());
  CHECK(values<int64_t>(arrays[2]) == std::vector<int64_t>{7});
}

TEST_CASE("npz: write then read every dtype, 0-d and empty arrays", "[npz]") {
  const std::vector<float> f{1.5f, -2.f, 3.25f, 4.f};
  const std::vector<int64_t> l{-1, 1LL << 40};
  const std::vector<int32_t> i{7};
  const std::vector<uint8_t> b{1, 0, 1};
  const std::vector<int8_t> c{-128, 127};
  const std::vector<uint16_t> h{0x3c00, 0xfc00, 0x7e00};  // 1, -inf, NaN in f16
  std::vector<io::TensorToWrite> in{
      {"f", "F32", {2, 2}, f.data(), 16}, {"l", "I64", {2}, l.data(), 16}, {"i", "I32", {}, i.data(), 4},
      {"b", "BOOL", {3}, b.data(), 3},    {"c", "I8", {1, 2}, c.data(), 2}, {"e", "F32", {0, 5}, nullptr, 0},
      {"h", "F16", {3}, h.data(), 6}};
  TempPath tmp;
  io::write_npz(tmp.path, in);
  auto out = io::read_npz(tmp.path);
  REQUIRE(out.size() == in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    CHECK(out[k].name == in[k].name);
    CHECK(out[k].dtype == in[k].dtype);
    CHECK(out[k].shape == in[k].shape);
    REQUIRE(out[k].data.size() == in[k].nbytes);
    if (in[k].nbytes) CHECK(std::memcmp(out[k].data.data(), in[k].data, in[k].nbytes) == 0);
  }
  // The .npy members start their data at a multiple of 64, as numpy writes them.
  const std::string bytes = read_file(tmp.path);
  const size_t member = 30 + 5;  // the first local header and its name "f.npy"
  REQUIRE(bytes.compare(member, 6, "\x93NUMPY") == 0);
  const size_t header_len = uint8_t(bytes[member + 8]) | uint8_t(bytes[member + 9]) << 8;
  CHECK((10 + header_len) % 64 == 0);
}

TEST_CASE("npz: writer rejects what it cannot write", "[npz]") {
  const std::vector<float> f{1, 2};
  TempPath tmp;
  CHECK_THROWS_WITH(io::write_npz(tmp.path, {{"x", "BF16", {2}, f.data(), 4}}), Catch::Contains("BF16"));
  CHECK_THROWS_WITH(io::write_npz(tmp.path, {{"x", "F32", {3}, f.data(), 8}}), Catch::Contains("do not match"));
  CHECK_THROWS_WITH(io::write_npz(tmp.path, {{"x", "F32", {2}, f.data(), 8}, {"x", "F32", {2}, f.data(), 8}}),
                    Catch::Contains("repeated"));
}

TEST_CASE("npz: compressed members name numpy.savez", "[npz]") {
  const std::string bytes(kCompressedNpz, sizeof kCompressedNpz - 1);
  CHECK_THROWS_WITH(parse(bytes), Catch::Contains("compressed") && Catch::Contains("numpy.savez"));
}

TEST_CASE("npz: every truncation is an error, not a crash", "[npz]") {
  const std::string bytes = numpy_npz();
  for (size_t n = 0; n < bytes.size(); ++n) CHECK_THROWS_AS(parse(bytes.substr(0, n)), io::WeightsError);
}

TEST_CASE("npz: every single-byte corruption is caught or harmless", "[npz]") {
  const std::string good = numpy_npz();
  for (size_t k = 0; k < good.size(); ++k) {
    for (unsigned char flip : {0x01, 0x80, 0xFF}) {
      std::string bytes = good;
      bytes[k] = static_cast<char>(bytes[k] ^ flip);
      try {
        auto arrays = parse(bytes);
        // Only bytes the reader does not interpret (times, attributes, version fields) may change.
        REQUIRE(arrays.size() == 3);
        CHECK(values<float>(arrays[0]) == std::vector<float>{0, 1, 2, 3, 4, 5});
      } catch (const io::WeightsError&) {
      }
    }
  }
}

TEST_CASE("npy: header errors are named", "[npz]") {
  auto npy = [](const std::string& dict, size_t data_bytes) {
    std::string h = dict + "\n";
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(h.size() & 0xFF);
    out += static_cast<char>(h.size() >> 8);
    return out + h + std::string(data_bytes, '\0');
  };
  auto parse_one = [](const std::string& b) { return io::parse_npy(b.data(), b.size(), "x.npy"); };
  CHECK(parse_one(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8)).shape == std::vector<int64_t>{2});
  CHECK_THROWS_WITH(parse_one(npy("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", 4)),
                    Catch::Contains("'<u2' is not supported"));
  CHECK_THROWS_WITH(parse_one(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8)),
                    Catch::Contains("big-endian"));
  CHECK_THROWS_WITH(parse_one(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8)),
                    Catch::Contains("8 bytes of data, but <f4 3 needs 12"));
  CHECK_THROWS_WITH(parse_one(npy("{'descr': '<f4', 'shape': (2,), }", 8)), Catch::Contains("no 'fortran_order'"));
  CHECK_THROWS_WITH(parse_one(npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", 8)),
                    Catch::Contains("True or False"));
  CHECK_THROWS_WITH(parse_one(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 8)),
                    Catch::Contains("overflows"));
  CHECK_THROWS_WITH(parse_one(npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 8)),
                    Catch::Contains("'|O' is not supported"));
  CHECK_THROWS_WITH(parse_one(std::string("PK\x03\x04 not npy")), Catch::Contains("magic"));
}

TEST_CASE("npz: a file that is not a ZIP, or holds something other than .npy", "[npz]") {
  CHECK_THROWS_WITH(parse("hello, this is not an npz file at all"), Catch::Contains("not an .npz file"));
  CHECK_THROWS_WITH(io::read_npz("/nonexistent/x.npz"), Catch::Contains("cannot open"));
  // Rename member a.npy to a.txt in both headers: no longer an array.
  std::string bytes = numpy_npz();
  for (size_t pos = 0; (pos = bytes.find("a.npy", pos)) != std::string::npos; ++pos) bytes.replace(pos, 5, "a.txt");
  CHECK_THROWS_WITH(parse(bytes), Catch::Contains("member 'a.txt' is not an array"));
}
