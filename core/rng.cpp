#include "core/rng.h"

#include <fmt/format.h>

namespace vm {

std::string Rng::describe() const { return fmt::format("Rng(state={:#018x})", state_); }

}  // namespace vm
