// What the sentencepiece tokenizers (Marian, M2M100) read from a program's tokenizer
// directory: the files meta.json names, tokenizer_config.json, the .spm models and
// vocab.json. `who` names the tokenizer in error messages ("marian tokenizer").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

namespace text {

using FileMap = std::map<std::string, std::string>;

// The path meta.json gives for `role`; a missing role is an error.
const std::string& named_file(const FileMap& files, const char* role, std::string_view who);

// tokenizer_config.json (role "config") as a JSON object, {} when there is none.
nlohmann::json load_tokenizer_config(const FileMap& files, std::string_view who);

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::string& path, std::string_view who);

// The same model with an identity normaliser (no rewrite rules, no dummy prefix, spaces
// kept): it segments text normalised elsewhere (text/converted_steps.h) as it is.
// `charsmap`, when given, receives the model's own precompiled_charsmap.
std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm_unnormalized(const std::string& path,
                                                                             std::string_view who,
                                                                             std::string* charsmap = nullptr);

// vocab.json: piece -> id.
std::unordered_map<std::string, int64_t> load_vocab(const std::string& path, std::string_view who);

// A special token of tokenizer_config.json: a string, or {"content": ...} in older files.
std::string token_name(const nlohmann::json& config, const char* key, const char* fallback, std::string_view who);

}  // namespace text
