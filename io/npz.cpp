// The .npz reader and writer (see npz.h). Offsets follow the ZIP specification
// (PKWARE APPNOTE 6.3, sections 4.3.7 local header, 4.3.12 central directory,
// 4.3.14-16 end records, 4.5.3 ZIP64 extra) and numpy's NEP 1 .npy format.
#include "io/npz.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>

#include "io/atomic_file.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, ".npz data is copied as is: little-endian hosts only");

namespace io {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;
constexpr uint16_t kMax16 = 0xFFFF;
constexpr uint16_t kDosDate1980 = (0 << 9) | (1 << 5) | 1;  // fixed, so equal outputs give equal files

struct DType {
  const char* descr;
  const char* name;
  size_t size;
};
// F64 is read so that 0-d float64 arrays (np.array(0.5)) can feed float parameters.
// BF16 has no .npy spelling (numpy has no bfloat16; ml_dtypes' saves as raw void).
constexpr std::array<DType, 7> kDTypes{{{"<f4", "F32", 4}, {"<i8", "I64", 8}, {"<i4", "I32", 4},
                                        {"|b1", "BOOL", 1}, {"|i1", "I8", 1}, {"<f8", "F64", 8},
                                        {"<f2", "F16", 2}}};

uint32_t crc32(uint32_t crc, const unsigned char* p, size_t n) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

// Bounds-checked little-endian reads of a byte range; every error names `what`.
class Bytes {
 public:
  Bytes(const void* p, size_t n, std::string what) : p_(static_cast<const unsigned char*>(p)), n_(n), what_(std::move(what)) {}
  [[noreturn]] void fail(const std::string& msg) const { throw WeightsError(fmt::format("{}: {}", what_, msg)); }
  void need(uint64_t off, uint64_t len, const char* part) const {
    if (off > n_ || len > n_ - off)
      fail(fmt::format("truncated: the {} at byte {} ({} bytes) runs past the end ({} bytes)", part, off, len, n_));
  }
  uint64_t get(uint64_t off, int bytes, const char* part) const {
    need(off, bytes, part);
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p_[off + i];
    return v;
  }
  uint16_t u16(uint64_t off, const char* part) const { return static_cast<uint16_t>(get(off, 2, part)); }
  uint32_t u32(uint64_t off, const char* part) const { return static_cast<uint32_t>(get(off, 4, part)); }
  uint64_t u64(uint64_t off, const char* part) const { return get(off, 8, part); }
  const unsigned char* at(uint64_t off) const { return p_ + off; }
  size_t size() const { return n_; }
  const std::string& what() const { return what_; }

 private:
  const unsigned char* p_;
  size_t n_;
  std::string what_;
};

// The Python-literal dict of a .npy header: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(const std::string& s, const Bytes& b) : s_(s), b_(b) {}

  void parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
    std::set<std::string> seen;
    expect('{');
    while (!eat('}')) {
      std::string key = str();
      expect(':');
      if (key == "descr") descr = str();
      else if (key == "fortran_order") fortran = boolean();
      else if (key == "shape") shape = tuple();
      else fail(fmt::format("unknown key '{}'", key));
      if (!seen.insert(key).second) fail(fmt::format("key '{}' given twice", key));
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    ws();
    if (i_ != s_.size()) fail("text after the closing brace");
    for (const char* k : {"descr", "fortran_order", "shape"})
      if (!seen.count(k)) fail(fmt::format("no '{}'", k));
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const { b_.fail(fmt::format(".npy header {}: {}", msg, s_)); }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(fmt::format("expected '{}' at offset {}", c, i_));
  }
  std::string str() {
    ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail(fmt::format("expected a string at offset {}", i_));
    const char q = s_[i_];
    const size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    ws();
    for (const auto& [word, value] : {std::pair<const char*, bool>{"True", true}, {"False", false}}) {
      const size_t n = std::strlen(word);
      if (s_.compare(i_, n, word) == 0) {
        i_ += n;
        return value;
      }
    }
    fail(fmt::format("expected True or False at offset {}", i_));
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> out;
    expect('(');
    while (!eat(')')) {
      ws();
      if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') fail(fmt::format("expected a dimension at offset {}", i_));
      int64_t v = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        const int digit = s_[i_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("a dimension overflows int64");
        v = v * 10 + digit;
      }
      if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 longs in old files
      out.push_back(v);
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return out;
  }

  const std::string& s_;
  const Bytes& b_;
  size_t i_ = 0;
};

const DType& dtype_for_descr(const std::string& descr, const Bytes& b) {
  for (const DType& t : kDTypes)
    if (descr == t.descr) return t;
  if (!descr.empty() && descr[0] == '>') b.fail(fmt::format("dtype '{}' is big-endian; tensorvm reads little-endian arrays", descr));
  b.fail(fmt::format("dtype '{}' is not supported (float32, int64, int32, bool, int8 or float16; float64 only for scalars)", descr));
}

const DType& dtype_for_name(const std::string& name) {
  for (const DType& t : kDTypes)
    if (name == t.name) return t;
  throw WeightsError(fmt::format("dtype '{}' cannot be written to .npz", name));
}

// numel * itemsize, or a failure when it overflows.
uint64_t byte_count(const std::vector<int64_t>& shape, size_t itemsize, const Bytes& b) {
  uint64_t n = itemsize;
  for (int64_t d : shape) {
    if (d < 0) b.fail(fmt::format("negative dimension {}", d));
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / uint64_t(d)) b.fail("shape overflows");
    n *= uint64_t(d);
  }
  return n;
}

// Column-major (fortran_order) data to row-major.
std::vector<unsigned char> fortran_to_c(const unsigned char* src, const std::vector<int64_t>& shape, size_t itemsize,
                                        size_t nbytes) {
  std::vector<unsigned char> out(nbytes);
  const size_t nd = shape.size();
  std::vector<uint64_t> fstride(nd, 1);
  for (size_t d = 1; d < nd; ++d) fstride[d] = fstride[d - 1] * uint64_t(shape[d - 1]);
  const size_t count = itemsize ? nbytes / itemsize : 0;
  // Each element's C-order index taken apart digit by digit (no odometer vector: GCC 12
  // for AArch64 reports a false -Wfree-nonheap-object on one).
  for (size_t k = 0; k < count; ++k) {
    uint64_t off = 0, rest = k;
    for (size_t d = nd; d-- > 0;) {
      const uint64_t extent = uint64_t(shape[d]);
      off += rest % extent * fstride[d];
      rest /= extent;
    }
    std::memcpy(out.data() + k * itemsize, src + off * itemsize, itemsize);
  }
  return out;
}

}  // namespace

ArrayData parse_npy(const void* bytes, size_t size, const std::string& what) {
  Bytes b(bytes, size, what);
  static const unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(bytes, kMagic, 6) != 0) b.fail("not a .npy array (no \\x93NUMPY magic)");
  const int major = b.at(0)[6];
  uint64_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = b.u16(8, ".npy header length");
    start = 10;
  } else if (major == 2 || major == 3) {
    header_len = b.u32(8, ".npy header length");
    start = 12;
  } else {
    b.fail(fmt::format(".npy format version {}.{} is not supported (1.0, 2.0, 3.0)", major, int(b.at(0)[7])));
  }
  b.need(start, header_len, ".npy header");
  const std::string header(reinterpret_cast<const char*>(b.at(start)), header_len);
  std::string descr;
  bool fortran = false;
  ArrayData out;
  HeaderParser(header, b).parse(descr, fortran, out.shape);
  const DType& t = dtype_for_descr(descr, b);
  out.dtype = t.name;
  const uint64_t nbytes = byte_count(out.shape, t.size, b);
  const uint64_t data_at = start + header_len;
  if (size - data_at != nbytes)
    b.fail(fmt::format("{} bytes of data, but {} {} needs {}", size - data_at, descr, fmt::join(out.shape, "x"), nbytes));
  const unsigned char* data = b.at(data_at);
  if (fortran && out.shape.size() > 1) out.data = fortran_to_c(data, out.shape, t.size, nbytes);
  else out.data.assign(data, data + nbytes);
  return out;
}

std::vector<ArrayData> parse_npz(const void* bytes, size_t size, const std::string& what) {
  Bytes b(bytes, size, what);
  if (size < 22 || (b.u32(0, "signature") != kLocalSig && b.u32(0, "signature") != kEndSig))
    b.fail("not an .npz file (no ZIP signature; write it with numpy.savez)");
  // The end record is the last 22 bytes plus a comment of up to 64 KiB.
  uint64_t end = 0;
  bool found = false;
  for (uint64_t pos = size - 22;; --pos) {
    if (b.u32(pos, "end record") == kEndSig && b.u16(pos + 20, "end record") == size - pos - 22) {
      end = pos;
      found = true;
      break;
    }
    if (pos == 0 || size - pos > 22 + 65535) break;
  }
  if (!found) b.fail("no ZIP end record (truncated?)");
  uint64_t disk = b.u16(end + 4, "end record"), cd_disk = b.u16(end + 6, "end record");
  uint64_t disk_count = b.u16(end + 8, "end record"), count = b.u16(end + 10, "end record");
  uint64_t cd_size = b.u32(end + 12, "end record"), cd_off = b.u32(end + 16, "end record");
  if (count == kMax16 || cd_size == kMax32 || cd_off == kMax32) {
    if (end < 20 || b.u32(end - 20, "ZIP64 locator") != kLocator64Sig) b.fail("ZIP64 end record locator missing");
    const uint64_t end64 = b.u64(end - 20 + 8, "ZIP64 locator");
    if (b.u32(end64, "ZIP64 end record") != kEnd64Sig) b.fail("ZIP64 end record missing");
    disk = b.u32(end64 + 16, "ZIP64 end record");
    cd_disk = b.u32(end64 + 20, "ZIP64 end record");
    disk_count = b.u64(end64 + 24, "ZIP64 end record");
    count = b.u64(end64 + 32, "ZIP64 end record");
    cd_size = b.u64(end64 + 40, "ZIP64 end record");
    cd_off = b.u64(end64 + 48, "ZIP64 end record");
  }
  if (disk != 0 || cd_disk != 0 || disk_count != count) b.fail("multi-part ZIP archives are not supported");
  b.need(cd_off, cd_size, "central directory");

  std::vector<ArrayData> out;
  std::set<std::string> names;
  uint64_t off = cd_off;
  for (uint64_t e = 0; e < count; ++e) {
    if (off + 46 > cd_off + cd_size || b.u32(off, "central directory") != kCentralSig)
      b.fail(fmt::format("central directory entry {} is malformed", e));
    const uint16_t flags = b.u16(off + 8, "central directory"), method = b.u16(off + 10, "central directory");
    const uint32_t crc = b.u32(off + 16, "central directory");
    uint64_t csize = b.u32(off + 20, "central directory"), usize = b.u32(off + 24, "central directory");
    const uint16_t name_len = b.u16(off + 28, "central directory"), extra_len = b.u16(off + 30, "central directory");
    const uint16_t comment_len = b.u16(off + 32, "central directory");
    uint64_t member_disk = b.u16(off + 34, "central directory"), local = b.u32(off + 42, "central directory");
    b.need(off + 46, uint64_t(name_len) + extra_len + comment_len, "central directory entry");
    const std::string name(reinterpret_cast<const char*>(b.at(off + 46)), name_len);
    const std::string member = fmt::format("member '{}'", name);
    // ZIP64 extra: the 8-byte values of exactly the fields saturated above, in this order.
    for (uint64_t x = off + 46 + name_len, xend = x + extra_len; x + 4 <= xend;) {
      const uint16_t id = b.u16(x, "extra field"), len = b.u16(x + 2, "extra field");
      if (x + 4 + len > xend) b.fail(fmt::format("{}: extra field runs past its entry", member));
      if (id == 0x0001) {
        uint64_t y = x + 4;
        auto take = [&](uint64_t& field, int bytes) {
          if (y + bytes > x + 4 + len) b.fail(fmt::format("{}: ZIP64 extra field too short", member));
          field = b.get(y, bytes, "ZIP64 extra field");
          y += bytes;
        };
        if (usize == kMax32) take(usize, 8);
        if (csize == kMax32) take(csize, 8);
        if (local == kMax32) take(local, 8);
        if (member_disk == kMax16) take(member_disk, 4);
      }
      x += 4 + len;
    }
    off += 46 + uint64_t(name_len) + extra_len + comment_len;

    if (flags & 1) b.fail(fmt::format("{} is encrypted", member));
    if (method != 0)
      b.fail(fmt::format("{} is compressed (ZIP method {}); tensorvm reads uncompressed .npz files: write them with "
                         "numpy.savez, not numpy.savez_compressed", member, method));
    if (member_disk != 0) b.fail("multi-part ZIP archives are not supported");
    if (csize != usize) b.fail(fmt::format("{}: stored, but its sizes differ ({} and {})", member, csize, usize));
    if (b.u32(local, "local header") != kLocalSig) b.fail(fmt::format("{}: no local header at byte {}", member, local));
    const uint16_t local_name_len = b.u16(local + 26, "local header"), local_extra_len = b.u16(local + 28, "local header");
    b.need(local + 30, local_name_len, "local header name");
    if (std::string(reinterpret_cast<const char*>(b.at(local + 30)), local_name_len) != name)
      b.fail(fmt::format("{}: the local header names another member", member));
    const uint64_t data = local + 30 + local_name_len + local_extra_len;
    b.need(data, csize, "member data");
    if (crc32(0, b.at(data), csize) != crc) b.fail(fmt::format("{}: CRC-32 mismatch (the file is corrupt)", member));

    if (name.size() < 5 || name.compare(name.size() - 4, 4, ".npy") != 0)
      b.fail(fmt::format("{} is not an array (.npy); np.savez writes only NAME.npy members", member));
    ArrayData a = parse_npy(b.at(data), csize, fmt::format("{}: {}", what, member));
    a.name = name.substr(0, name.size() - 4);
    if (!names.insert(a.name).second) b.fail(fmt::format("{} appears twice", member));
    out.push_back(std::move(a));
  }
  if (off != cd_off + cd_size) b.fail("the central directory holds more or fewer entries than the end record counts");
  return out;
}

std::vector<ArrayData> read_npz(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw WeightsError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw WeightsError(fmt::format("{}: read failed", path));
  return parse_npz(bytes.data(), bytes.size(), path);
}

namespace {

void put(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// A .npy format 1.0 header, padded so the data starts at a multiple of 64 as numpy pads it.
std::string npy_header(const DType& t, const std::vector<int64_t>& shape) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += fmt::format("{}{}", i ? ", " : "", shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", t.descr, dims);
  const size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
  dict.resize(total - 10 - 1, ' ');
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  put(out, dict.size(), 2);
  return out + dict;
}

}  // namespace

void write_npz(const std::string& path, const std::vector<TensorToWrite>& arrays) {
  Bytes none(nullptr, 0, path);
  if (arrays.size() >= kMax16) none.fail("too many arrays for an .npz without ZIP64");
  std::set<std::string> names;
  std::string central;
  TempFile file(path);
  uint64_t offset = 0;
  for (const TensorToWrite& a : arrays) {
    const DType& t = dtype_for_name(a.dtype);
    if (a.name.empty() || !names.insert(a.name).second) none.fail(fmt::format("array name '{}' is empty or repeated", a.name));
    if (byte_count(a.shape, t.size, none) != a.nbytes)
      none.fail(fmt::format("array '{}': {} bytes do not match {} {}", a.name, a.nbytes, a.dtype, fmt::join(a.shape, "x")));
    const std::string header = npy_header(t, a.shape);
    const std::string name = a.name + ".npy";
    const uint64_t size = header.size() + a.nbytes;
    if (size >= kMax32 || offset >= kMax32 || name.size() >= kMax16)
      none.fail(fmt::format("array '{}' is too large for an .npz without ZIP64 (4 GiB)", a.name));
    uint32_t crc = crc32(0, reinterpret_cast<const unsigned char*>(header.data()), header.size());
    crc = crc32(crc, static_cast<const unsigned char*>(a.data), a.nbytes);

    std::string local;
    put(local, kLocalSig, 4);
    put(local, 20, 2);  // version needed: 2.0
    put(local, 0, 2);   // flags
    put(local, 0, 2);   // method: stored
    put(local, 0, 2);   // time
    put(local, kDosDate1980, 2);
    put(local, crc, 4);
    put(local, size, 4);
    put(local, size, 4);
    put(local, name.size(), 2);
    put(local, 0, 2);  // extra length
    local += name;
    file.write(local.data(), local.size());
    file.write(header.data(), header.size());
    if (a.nbytes) file.write(a.data, a.nbytes);

    put(central, kCentralSig, 4);
    put(central, 20, 2);  // version made by
    central.append(local, 4, 24);  // version needed .. name length, as in the local header
    put(central, 0, 2);            // extra length
    put(central, 0, 2);            // comment length
    put(central, 0, 2);            // disk
    put(central, 0, 2);            // internal attributes
    put(central, 0, 4);            // external attributes
    put(central, offset, 4);
    central += name;
    offset += local.size() + size;
  }
  if (offset >= kMax32) none.fail("too large for an .npz without ZIP64 (4 GiB)");
  std::string end;
  put(end, kEndSig, 4);
  put(end, 0, 2);
  put(end, 0, 2);
  put(end, arrays.size(), 2);
  put(end, arrays.size(), 2);
  put(end, central.size(), 4);
  put(end, offset, 4);
  put(end, 0, 2);
  file.write(central.data(), central.size());
  file.write(end.data(), end.size());
  file.commit();
}

}  // namespace io
