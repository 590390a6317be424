// A file written under a temporary name next to its destination and renamed into
// place on commit(), so readers never see a half-written file. Shared by the
// safetensors and .npz writers.
#pragma once

#include <cstddef>
#include <string>

namespace io {

class TempFile {
 public:
  // Creates PATH.tmp.XXXXXX. Throws WeightsError.
  explicit TempFile(const std::string& path);
  // Removes the temporary file unless commit() succeeded.
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(const void* data, size_t n);
  // fsync, rename over PATH, fsync the directory.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what) const;
  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace io
