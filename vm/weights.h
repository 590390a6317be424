// Weights as tensors: how a safetensors entry becomes a Value, shared by the loader
// (which binds param(...) to constants and tables) and by compiled programs
// (vm/aot.h), so both see the same bytes the same way.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/safetensors.h"
#include "core/value.h"

namespace vm {

// A weight as a tensor over the mapping: zero-copy when element-aligned, copied when
// a foreign file leaves it unaligned (F16/BF16 stay f16/bf16 tensors); its
// buffer is marked a weight (Buffer::is_weight), so hosts hand it out read-only.
Value weight_tensor(const io::TensorEntry& e, const std::shared_ptr<io::WeightsFile>& file);

// The entries a name template ("layers.{}.fc1.weight") names with "{}" replaced by a
// plain decimal index (no sign, no leading zero, at most 6 digits), as (index, entry).
std::vector<std::pair<size_t, const io::TensorEntry*>> indexed_weights(const io::WeightsFile& file,
                                                                       const std::string& name_template);

}  // namespace vm
