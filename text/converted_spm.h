// The sentencepiece models transformers 5 runs as converted tokenizers (NLLB, T5): the
// checkpoint's tokenizer.json numbers the pieces and holds the added tokens, and its
// Metaspace decoder turns pieces back into text. The .spm model still segments (text/nllb.cpp,
// text/t5.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/added_tokens.h"

namespace text {

struct ConvertedVocab {
  std::unordered_map<std::string, int64_t> ids;     // piece -> id (model.vocab: an object or [piece, score] rows)
  std::unordered_map<int64_t, std::string> pieces;  // id -> piece
  AddedTokens added;
  bool fuse_unk = false;
  // The id of `token` (an added token or a piece); Error naming `who` and `what` when absent.
  int64_t id_of(const std::string& token, const char* what, std::string_view who) const;
};

ConvertedVocab load_converted_vocab(const std::string& tokenizer_json, std::string_view who);

// tokenizers' decode with a Metaspace decoder: ids it does not know dropped, special
// tokens dropped when skipping, "▁" made a space, the first token's leading space removed.
std::string metaspace_decode(const ConvertedVocab& vocab, const std::vector<int64_t>& ids, bool skip_special_tokens);

}  // namespace text
