// T5's tokenizer (kind "t5-spm"), as transformers' T5Tokenizer(Fast): the checkpoint's
// unigram sentencepiece model segments each word as the tokenizers library does,
// tokenizer.json numbers the pieces and holds <extra_id_N> (the sentinels after the
// vocabulary), and </s> closes every text.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "text/tokenizer.h"

namespace text {

// `files`: spm (spiece.model), tokenizer (tokenizer.json), config (tokenizer_config.json).
std::unique_ptr<Tokenizer> load_t5(const std::map<std::string, std::string>& files);

}  // namespace text
