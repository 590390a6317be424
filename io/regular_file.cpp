#include "io/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>

namespace io {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw FileError(fmt::format("{}: {}", path, msg));
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

std::string size_text(uint64_t bytes) {
  if (bytes >= (uint64_t(1) << 30) && bytes % (uint64_t(1) << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (uint64_t(1) << 20) && bytes % (uint64_t(1) << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

// The canonical path, or "" when it does not resolve.
std::string resolved(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> p(::realpath(path.c_str(), nullptr), &std::free);
  return p ? std::string(p.get()) : std::string();
}

}  // namespace

std::string read_regular_file(const std::string& path, uint64_t max_bytes, std::string_view what) {
  // Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(path, fmt::format("cannot open it: {}", std::strerror(errno)));
  Fd guard{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) fail(path, fmt::format("cannot stat it: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) fail(path, fmt::format("not a regular file ({})", kind_of(st.st_mode)));
  auto too_big = [&](uint64_t size) {
    fail(path, fmt::format("{} bytes, over the {} limit for {}", size, size_text(max_bytes), what));
  };
  if (uint64_t(st.st_size) > max_bytes) too_big(uint64_t(st.st_size));
  std::string out;
  out.reserve(size_t(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, fmt::format("cannot read it: {}", std::strerror(errno)));
    if (n == 0) break;
    // The file may have grown since fstat.
    if (out.size() + size_t(n) > max_bytes) too_big(out.size() + size_t(n));
    out.append(buf, size_t(n));
  }
  return out;
}

void check_inside(const std::string& dir, const std::string& path) {
  const std::string target = resolved(path);
  if (target.empty()) return;
  std::string root = resolved(dir);
  if (root.empty()) fail(dir, fmt::format("cannot resolve the directory: {}", std::strerror(errno)));
  if (root.back() != '/') root += '/';
  if (target.compare(0, root.size(), root) != 0)
    fail(path, fmt::format("resolves to {}, outside the program directory {}; a program's files must lie inside it",
                           target, dir));
}

}  // namespace io
