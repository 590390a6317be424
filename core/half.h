#pragma once
// Scalar f32 <-> f16 / bf16 conversions (core/half_impl.h defines them): the reference
// for the kernels' SIMD conversions, and what cast and the scalar paths use.

#include <cstdint>
#include <cstring>

namespace vm {
#include "core/half_impl.h"  // IWYU pragma: export
}  // namespace vm
