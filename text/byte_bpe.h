// BPE from a tokenizer.json: byte-level (kind "byte-level-bpe": GPT-2, Qwen2, Llama 3) or
// sentencepiece-style (kind "sentencepiece": Llama 2).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "text/tokenizer.h"

namespace text {

// `files` maps "tokenizer" to tokenizer.json (and optionally "config" to tokenizer_config.json).
// `template_ids`: null, or meta.json's {"prefix": [ids], "suffix": [ids]}, the special
// tokens transformers puts around the text in place of tokenizer.json's post_processor
// (its class builds its own at load: pycompiler/tokenizer_template.py).
std::unique_ptr<Tokenizer> load_byte_bpe(const std::map<std::string, std::string>& files,
                                         const nlohmann::json& template_ids);

// A sentencepiece-style BPE tokenizer.json (kind "sentencepiece": Llama 2): the same files.
std::unique_ptr<Tokenizer> load_sentencepiece_bpe(const std::map<std::string, std::string>& files,
                                                  const nlohmann::json& template_ids);

}  // namespace text
