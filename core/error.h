// One exception type for everything the runtime reports to a caller. Kernels throw
// it with what went wrong; the interpreter rethrows it with the function, IR line and
// op prepended, so a user always learns where in the program the failure is.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace vm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

template <typename... A>
[[noreturn]] void fail(fmt::format_string<A...> f, A&&... a) {
  throw Error(fmt::format(f, std::forward<A>(a)...));
}

}  // namespace vm
