// What libsentencepiece (Debian's 0.1.97) trusts in a model without checking it: the
// normalisation rules (normalizer_spec's and denormalizer_spec's
// precompiled_charsmap), a darts-clone double array that the normaliser walks with
// unchecked indexes, keeping its matches in a fixed array of 32, and whose values are
// offsets into the replacement strings. A damaged or hostile model makes encode read
// outside the model (found by tests/fuzz/fuzz_spm). load_spm checks the bytes
// before the library sees them.
#pragma once

#include <string>
#include <string_view>

namespace text {

// What is wrong with the ModelProto `model`: a rule table that could make the library
// read outside the model, or a malformed protobuf; empty when nothing is.
std::string spm_model_problem(std::string_view model);

}  // namespace text
