// Reading the files a program directory holds (program.py, meta.json, the tokenizer
// files meta.json names) and the audio tensorvm-run is given, so that no name can make
// a read block forever or run without end: only regular files, of a bounded size, and
// for the files a program names, only files inside its directory.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace io {

// What read_regular_file and check_inside report; the message starts with the path.
class FileError : public std::runtime_error {
 public:
  explicit FileError(const std::string& what) : std::runtime_error(what) {}
};

// The contents of `path` when it is a regular file of at most `max_bytes`. It is opened
// without blocking and checked with fstat before any read, so a FIFO, socket, device or
// directory is an error (a FIFO would wait for a writer, /dev/zero never ends), and so
// is a larger file: "vocab.json: 300000000 bytes, over the 128 MiB limit for a
// tokenizer file" (`what` names the kind of file).
std::string read_regular_file(const std::string& path, uint64_t max_bytes, std::string_view what);

// Throws unless `path`, with every symlink on the way resolved, lies inside `dir` (also
// resolved): a program's file may be a symlink to another file of the program, never to
// one elsewhere (vocab.json -> /etc/passwd). A path that does not resolve (a missing
// file, a dangling link) passes, for the read that follows to report. It guards against
// what a directory holds, not against one changed between this check and the read.
void check_inside(const std::string& dir, const std::string& path);

}  // namespace io
