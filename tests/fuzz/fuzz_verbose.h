// FUZZ_VERBOSE=1 makes a harness print why each input stopped (to check that seeds load
// and get as far as they should).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace fuzz {

inline bool verbose() {
  static const bool v = std::getenv("FUZZ_VERBOSE") != nullptr;
  return v;
}

inline void stopped(const char* where, const std::exception& e) {
  if (verbose()) std::fprintf(stderr, "%s: %s\n", where, e.what());
}

}  // namespace fuzz
