// Byte-level BPE from a tokenizer.json (kind "byte-level-bpe": GPT-2, Qwen2, Llama 3).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "text/tokenizer.h"

namespace text {

// `files` maps "tokenizer" to tokenizer.json (and optionally "config" to tokenizer_config.json).
std::unique_ptr<Tokenizer> load_byte_bpe(const std::map<std::string, std::string>& files);

}  // namespace text
