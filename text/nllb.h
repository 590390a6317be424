// NLLB's tokenizer (kind "nllb-spm"), as transformers' NllbTokenizer(Fast): the
// checkpoint's sentencepiece model segments the text, tokenizer.json's vocabulary
// numbers the pieces (fairseq's order: <s> <pad> </s> <unk>, then the spm pieces one
// place up) and holds the language codes and <mask> as added tokens. Without tokenizer.json
// (fairseq-era checkpoints) the library computes that numbering itself.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace text {

// `files`: spm (sentencepiece.bpe.model), tokenizer (tokenizer.json, optional), config
// (tokenizer_config.json: src_lang, legacy_behaviour); `language_codes`: the codes a
// source or target language may name (meta.json carries them).
std::unique_ptr<Tokenizer> load_nllb(const std::map<std::string, std::string>& files,
                                     const std::vector<std::string>& language_codes);

}  // namespace text
