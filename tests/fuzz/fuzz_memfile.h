// Bytes as a path the file readers can open: an anonymous memory file (memfd), so a
// fuzz run writes nothing to disk and leaves nothing behind when it crashes.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace fuzz {

class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) {
    fd_ = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd_ < 0) { std::perror("memfd_create"); std::abort(); }
    size_t done = 0;
    while (done < size) {
      ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0) { std::perror("write"); std::abort(); }
      done += static_cast<size_t>(n);
    }
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_ = -1;
};

}  // namespace fuzz
