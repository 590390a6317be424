// Unicode NFC, the normalizer of Qwen2's tokenizer.json. Through ICU when this build has
// it (TENSORVM_TEXT_HAVE_ICU); without it, nfc_available() is false and a tokenizer
// asking for NFC is refused at load.
#pragma once

#include <string>
#include <string_view>

namespace text {

bool nfc_available();
std::string nfc(std::string_view utf8);

}  // namespace text
