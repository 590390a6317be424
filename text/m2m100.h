// M2M100's tokenizer (kind "m2m100-spm"), as transformers' M2M100Tokenizer: one
// sentencepiece model, vocab.json for piece -> id, the source language token first
// (__fr__, id after the vocabulary) and </s> last.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace text {

// `files`: spm, vocab, config (tokenizer_config.json, for src_lang and the special tokens);
// `language_codes`: transformers' code list in id order (meta.json carries it).
std::unique_ptr<Tokenizer> load_m2m100(const std::map<std::string, std::string>& files,
                                       const std::vector<std::string>& language_codes);

}  // namespace text
