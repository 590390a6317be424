// Small helpers shared by the Catch2 test files.
#pragma once

#include <exception>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

namespace test_helpers {

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
