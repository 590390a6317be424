// safetensors files: a zero-copy, memory-mapped reader and an aligned atomic writer.
// Format: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "value"}}, then the data section the offsets index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace io {

class WeightsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bytes per element of a safetensors dtype ("F32" -> 4), 0 if unknown.
size_t dtype_size(const std::string& dtype);

struct TensorEntry {
  std::string name;
  std::string dtype;  // "F32", "I64", "I32", "BOOL", "I8", "U8", "F16", "BF16", ...
  std::vector<int64_t> shape;
  const void* data = nullptr;  // inside the mapping; may be unaligned in foreign files
  size_t nbytes = 0;
};

// Where an app's weights come from when they are not a file: an asset in an app
// bundle, a flash partition, a network buffer. read() fills dst with up to n bytes from
// `offset` and returns how many it wrote (0 only past the end); it throws (any
// std::exception) on failure. The loader asks for bounded ranges, in order.
class ByteReader {
 public:
  virtual ~ByteReader() = default;
  virtual uint64_t size() = 0;
  virtual size_t read(uint64_t offset, void* dst, size_t n) = 0;
};

class WeightsFile {
 public:
  // Maps the file read-only (or, with `copy`, reads it into memory) and validates the
  // whole header. Only a regular file is opened (a FIFO is an error, not a hang).
  // A mapping stays valid when the file is replaced by rename, as our writer does;
  // truncating the mapped file in place makes later reads of lost pages raise
  // SIGBUS, which only `copy` avoids. Throws WeightsError.
  static std::shared_ptr<WeightsFile> open(const std::string& path, bool copy = false);
  // The same checks over `size` bytes at `data`; `name` stands for the path in errors.
  // Without `copy` the bytes are borrowed, not copied: they must stay valid and
  // unchanged as long as the WeightsFile or any tensor over it lives (`owner`, if
  // given, is kept alive that long). With `copy` they are copied into a block it owns.
  static std::shared_ptr<WeightsFile> from_memory(const void* data, size_t size, const std::string& name, bool copy,
                                                  std::shared_ptr<const void> owner = nullptr);
  // Reads all of `reader` into a block it owns (in 1 MiB ranges), then the same checks.
  static std::shared_ptr<WeightsFile> from_reader(ByteReader& reader, const std::string& name);
  ~WeightsFile();
  WeightsFile(const WeightsFile&) = delete;
  WeightsFile& operator=(const WeightsFile&) = delete;

  const std::string& path() const { return path_; }
  // In the order of their data in the file.
  const std::vector<TensorEntry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  const TensorEntry* find(const std::string& name) const;  // nullptr if absent
  const TensorEntry& at(const std::string& name) const;    // throws WeightsError if absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  WeightsFile() = default;
  void parse();  // validates the bytes at map_ and fills entries_
  static void* allocate(size_t size, const std::string& name);
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  bool copied_ = false;    // map_ is a heap block, not a mapping
  bool borrowed_ = false;  // map_ is the app's memory: nothing to free
  std::shared_ptr<const void> owner_;
  std::vector<TensorEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;  // must equal product(shape) * dtype_size(dtype)
};

// Writes tensors in the given order, atomically (temp file in the same directory,
// fsync, rename). The data section starts at a multiple of max(alignment, 8) and
// every tensor's offset is a multiple of `alignment`, so with the default of 64
// the data pointers of our own files are aligned for any kernel.
// NOTE: alignment > 1 leaves gaps between tensors, which the reference
// `safetensors` library refuses ("invalid offset"); alignment = 1 writes tensors
// back to back and gives files that library reads. Throws WeightsError.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {}, size_t alignment = 64);

}  // namespace io
