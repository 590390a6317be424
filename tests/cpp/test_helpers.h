// Small helpers shared by the Catch2 test files.
#pragma once

#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

namespace test_helpers {

// CI's sanitizer and qemu runs (TENSORVM_TESTS_SHORT=1, set by .ci/test) run the largest
// cases of a few kernel tests smaller, minutes there; ctest and the long sanitizer and
// aarch64 runs keep them whole. A short case still crosses the same code paths.
inline bool tests_short() { return std::getenv("TENSORVM_TESTS_SHORT") != nullptr; }

// The message of the exception `f` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// A file of the source tree (tests run from any directory).
inline std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(TENSORVM_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace test_helpers
