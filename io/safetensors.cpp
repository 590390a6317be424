// The safetensors reader. Every field of a foreign header is checked before a
// pointer into the mapping is handed out, so a corrupt file is an exception.
#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

namespace io {

size_t dtype_size(const std::string& dtype) {
  static const std::unordered_map<std::string, size_t> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
      {"F32", 4},  {"I64", 8}, {"U64", 8}, {"F64", 8},     {"C64", 8}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

namespace {

using Json = nlohmann::ordered_json;

class HeaderReader {
 public:
  HeaderReader(const std::string& path, const unsigned char* data, size_t data_size)
      : path_(path), data_(data), data_size_(data_size) {}

  [[noreturn]] void fail(const std::string& msg) const { throw WeightsError(fmt::format("{}: {}", path_, msg)); }

  // Rejects duplicate keys at any depth: nlohmann would silently keep the last one.
  Json parse(const char* begin, const char* end) const {
    std::vector<std::unordered_set<std::string>> keys;
    std::string duplicate;
    auto cb = [&](int, Json::parse_event_t ev, Json& parsed) {
      if (ev == Json::parse_event_t::object_start) keys.emplace_back();
      else if (ev == Json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
      else if (ev == Json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
               duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    };
    Json j;
    try {
      j = Json::parse(begin, end, cb);
    } catch (const Json::exception& e) {
      fail(fmt::format("invalid JSON header: {}", e.what()));
    }
    if (!duplicate.empty()) fail(fmt::format("duplicate key \"{}\" in the JSON header", duplicate));
    if (!j.is_object()) fail("the JSON header is not an object");
    return j;
  }

  TensorEntry tensor(const std::string& name, const Json& info, size_t* begin_out) const {
    if (!info.is_object()) fail(fmt::format("tensor '{}': header entry is not an object", name));
    for (auto it = info.begin(); it != info.end(); ++it)
      if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
        fail(fmt::format("tensor '{}': unexpected key \"{}\"", name, it.key()));
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!info.contains(key)) fail(fmt::format("tensor '{}': missing \"{}\"", name, key));
    TensorEntry t;
    t.name = name;
    if (!info["dtype"].is_string()) fail(fmt::format("tensor '{}': dtype is not a string", name));
    t.dtype = info["dtype"].get<std::string>();
    size_t itemsize = dtype_size(t.dtype);
    if (itemsize == 0) fail(fmt::format("tensor '{}': unknown dtype '{}'", name, t.dtype));

    const Json& shape = info["shape"];
    if (!shape.is_array()) fail(fmt::format("tensor '{}': shape is not an array", name));
    uint64_t count = 1;
    bool overflow = false;
    for (const Json& d : shape) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(fmt::format("tensor '{}': shape {} has an entry that is not a non-negative int64", name, shape.dump()));
      uint64_t v = d.get<uint64_t>();
      t.shape.push_back(static_cast<int64_t>(v));
      if (v != 0 && count > std::numeric_limits<uint64_t>::max() / v) overflow = true;
      else count *= v;
    }
    // A zero dimension makes the product 0 even after an overflowing prefix.
    if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) { count = 0; overflow = false; }
    if (overflow || count > std::numeric_limits<size_t>::max() / itemsize)
      fail(fmt::format("tensor '{}': shape {} overflows", name, shape.dump()));
    size_t nbytes = static_cast<size_t>(count) * itemsize;

    const Json& off = info["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail(fmt::format("tensor '{}': data_offsets must be two non-negative ints, got {}", name, off.dump()));
    uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    if (b > e) fail(fmt::format("tensor '{}': data_offsets [{}, {}] are reversed", name, b, e));
    if (e > data_size_)
      fail(fmt::format("tensor '{}': data_offsets [{}, {}] run past the end of the data section ({} bytes); "
                       "the file is truncated or corrupt", name, b, e, data_size_));
    if (e - b != nbytes)
      fail(fmt::format("tensor '{}': data_offsets [{}, {}] span {} bytes but {} {} needs {}", name, b, e, e - b,
                       t.dtype, shape.dump(), nbytes));
    t.data = data_ + b;
    t.nbytes = nbytes;
    *begin_out = static_cast<size_t>(b);
    return t;
  }

  std::map<std::string, std::string> metadata(const Json& j) const {
    if (!j.is_object()) fail("__metadata__ is not an object");
    std::map<std::string, std::string> m;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_string()) fail(fmt::format("__metadata__ value of \"{}\" is not a string", it.key()));
      m[it.key()] = it.value().get<std::string>();
    }
    return m;
  }

 private:
  const std::string& path_;
  const unsigned char* data_;
  size_t data_size_;
};

}  // namespace

std::shared_ptr<WeightsFile> WeightsFile::open(const std::string& path, bool copy) {
  auto fail = [&](const std::string& msg) -> WeightsError { return WeightsError(fmt::format("{}: {}", path, msg)); };
  std::shared_ptr<WeightsFile> wf(new WeightsFile());
  wf->path_ = path;
  // Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw fail(fmt::format("cannot open: {}", std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw fail("not a regular file");
  }
  auto size = static_cast<size_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    throw fail(fmt::format("file is {} bytes, shorter than the 8-byte header length", size));
  }
  void* map = nullptr;
  if (copy) {
    map = std::aligned_alloc(64, (size + 63) & ~size_t(63));
    if (!map) {
      ::close(fd);
      throw fail(fmt::format("out of memory reading {} bytes", size));
    }
    wf->map_ = map;
    wf->map_size_ = size;
    wf->copied_ = true;
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::pread(fd, static_cast<char*>(map) + done, size - done, off_t(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        ::close(fd);
        throw fail(n == 0 ? std::string("the file shrank while it was read") : fmt::format("read failed: {}", std::strerror(err)));
      }
      done += size_t(n);
    }
    ::close(fd);
  } else {
    map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    ::close(fd);  // the mapping keeps the file alive
    if (map == MAP_FAILED) throw fail(fmt::format("mmap failed: {}", std::strerror(map_errno)));
    wf->map_ = map;  // from here on the destructor unmaps, also when we throw
    wf->map_size_ = size;
  }

  wf->parse();
  return wf;
}

void WeightsFile::parse() {
  const std::string& path = path_;
  auto fail = [&](const std::string& msg) -> WeightsError { return WeightsError(fmt::format("{}: {}", path, msg)); };
  const size_t size = map_size_;
  if (size < 8) throw fail(fmt::format("{} bytes, shorter than the 8-byte header length", size));
  WeightsFile* wf = this;
  const auto* bytes = static_cast<const unsigned char*>(map_);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | bytes[i];
  // The reference implementation refuses headers over 100 MB; so do we, rather
  // than spend minutes parsing a hostile one.
  constexpr uint64_t kMaxHeader = 100'000'000;
  if (header_len > kMaxHeader) throw fail(fmt::format("header length {} exceeds the 100 MB limit", header_len));
  if (header_len > size - 8)
    throw fail(fmt::format("header length {} runs past the end of the file ({} bytes); the file is truncated or not safetensors",
                           header_len, size));
  const char* header = reinterpret_cast<const char*>(bytes + 8);
  size_t data_start = 8 + static_cast<size_t>(header_len);
  HeaderReader reader(path, bytes + data_start, size - data_start);
  Json j = reader.parse(header, header + header_len);

  std::vector<std::pair<size_t, TensorEntry>> found;  // (begin offset, entry), header order
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      wf->metadata_ = reader.metadata(it.value());
      continue;
    }
    size_t begin = 0;
    TensorEntry t = reader.tensor(it.key(), it.value(), &begin);
    found.emplace_back(begin, std::move(t));
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const TensorEntry* prev = nullptr;  // empty tensors occupy no bytes and overlap nothing
  size_t prev_end = 0;
  for (const auto& [begin, t] : found) {
    if (t.nbytes == 0) continue;
    if (prev && begin < prev_end) throw fail(fmt::format("tensors '{}' and '{}' overlap", prev->name, t.name));
    prev = &t;
    prev_end = begin + t.nbytes;
  }
  for (auto& [begin, t] : found) {
    wf->index_.emplace(t.name, wf->entries_.size());
    wf->entries_.push_back(std::move(t));
  }
}

void* WeightsFile::allocate(size_t size, const std::string& name) {
  void* block = std::aligned_alloc(64, (std::max<size_t>(size, 1) + 63) & ~size_t(63));
  if (!block) throw WeightsError(fmt::format("{}: out of memory for {} bytes", name, size));
  return block;
}

std::shared_ptr<WeightsFile> WeightsFile::from_memory(const void* data, size_t size, const std::string& name, bool copy,
                                                      std::shared_ptr<const void> owner) {
  std::shared_ptr<WeightsFile> wf(new WeightsFile());
  wf->path_ = name;
  if (!data && size > 0) throw WeightsError(fmt::format("{}: null data pointer for {} bytes", name, size));
  if (copy) {
    wf->map_ = allocate(size, name);
    wf->copied_ = true;
    if (size) std::memcpy(wf->map_, data, size);
  } else {
    wf->map_ = const_cast<void*>(data);
    wf->borrowed_ = true;
    wf->owner_ = std::move(owner);
  }
  wf->map_size_ = size;
  wf->parse();
  return wf;
}

std::shared_ptr<WeightsFile> WeightsFile::from_reader(ByteReader& reader, const std::string& name) {
  auto fail = [&](const std::string& msg) -> WeightsError { return WeightsError(fmt::format("{}: {}", name, msg)); };
  uint64_t total = 0;
  try {
    total = reader.size();
  } catch (const std::exception& e) {
    throw fail(fmt::format("the reader could not tell its size: {}", e.what()));
  }
  if (total > std::numeric_limits<size_t>::max() / 2) throw fail(fmt::format("{} bytes is more than this process can hold", total));
  const size_t size = size_t(total);
  // Refuse a short or hostile header before allocating the whole size.
  if (size < 8) throw fail(fmt::format("{} bytes, shorter than the 8-byte header length", size));
  std::shared_ptr<WeightsFile> wf(new WeightsFile());
  wf->path_ = name;
  wf->map_ = allocate(size, name);
  wf->copied_ = true;
  wf->map_size_ = size;
  constexpr size_t kChunk = size_t(1) << 20;
  auto* dst = static_cast<unsigned char*>(wf->map_);
  for (size_t done = 0; done < size;) {
    const size_t want = std::min(kChunk, size - done);
    size_t got = 0;
    try {
      got = reader.read(done, dst + done, want);
    } catch (const std::exception& e) {
      throw fail(fmt::format("reading bytes {}..{} failed: {}", done, done + want, e.what()));
    }
    if (got == 0) throw fail(fmt::format("the reader ended at byte {} of the {} it announced", done, size));
    if (got > want) throw fail(fmt::format("the reader returned {} bytes for a request of {}", got, want));
    done += got;
  }
  wf->parse();
  return wf;
}

WeightsFile::~WeightsFile() {
  if (borrowed_) return;  // the app's memory (owner_ lets go of it, if given)
  if (map_ && copied_) std::free(map_);
  else if (map_) munmap(map_, map_size_);
}

const TensorEntry* WeightsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const TensorEntry& WeightsFile::at(const std::string& name) const {
  const TensorEntry* t = find(name);
  if (!t) throw WeightsError(fmt::format("{}: no tensor named '{}'", path_, name));
  return *t;
}

}  // namespace io
