#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "io/safetensors.h"

namespace io {

TempFile::TempFile(const std::string& path) : path_(path), tmp_(path + ".tmp.XXXXXX") {
  fd_ = mkstemp(tmp_.data());
  if (fd_ < 0) fail("cannot create a temporary file next to it");
}

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void TempFile::fail(const std::string& what) const {
  int err = errno;
  throw WeightsError(fmt::format("{}: {}: {}", path_, what, std::strerror(err)));
}

void TempFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("write failed");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void TempFile::commit() {
  if (fchmod(fd_, 0644) != 0) fail("fchmod failed");
  if (fsync(fd_) != 0) fail("fsync failed");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close failed");
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) fail("rename failed");
  committed_ = true;
  // Make the rename itself durable; failing here loses nothing already visible.
  std::string dir = path_.find('/') == std::string::npos ? "." : path_.substr(0, path_.rfind('/') + 1);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace io
