// tokenizers' Precompiled normalizer: the rewrite rules a sentencepiece model carries
// (its precompiled_charsmap: a double-array trie over UTF-8 and the replacement texts),
// applied as tokenizers applies them, which is not as sentencepiece does. Each grapheme
// cluster shorter than 6 bytes is looked up whole and, when a rule matches a prefix of
// it, the shortest such prefix's replacement stands for the whole cluster; longer
// clusters, and clusters with no rule, go character by character. So "ﾊﾟ" (6 bytes) stays
// two characters, "ハ" and U+309A, where sentencepiece composes "パ"; transformers 5's
// T5 and NLLB tokenizers run this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/regex_split.h"

namespace text {

class PrecompiledCharsmap {
 public:
  // `blob`: the charsmap's bytes (tokenizer.json's base64 decoded); Error naming `who` if malformed.
  PrecompiledCharsmap(std::string blob, std::string_view who);
  std::string normalize(std::string_view text) const;

 private:
  std::vector<uint32_t> trie_;
  std::string replacements_;  // '\0'-terminated texts, indexed by the trie's values
  Regex grapheme_{"\\X"};     // extended grapheme clusters (PCRE2's Unicode tables)
  // The replacement of the shortest rule matching a prefix of `chunk`.
  std::optional<std::string_view> transform(std::string_view chunk) const;
};

// RFC 4648 base64 (tokenizer.json's precompiled_charsmap); Error naming `who` if malformed.
std::string base64_decode(std::string_view text, std::string_view who);

}  // namespace text
