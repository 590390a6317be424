// Marian's tokenizer (kind "marian-spm"), as transformers' MarianTokenizer: the source
// sentencepiece model cuts the text into pieces, vocab.json maps pieces to ids (its ids
// are not the spm ids), a leading >>xx<< language code is one token, </s> closes every
// text. Decoding maps ids back through vocab.json and detokenizes with the spm model.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"

namespace text {

// `files` maps roles (source_spm, target_spm, vocab, target_vocab, config) to paths.
std::unique_ptr<Tokenizer> load_marian(const std::map<std::string, std::string>& files);

}  // namespace text
