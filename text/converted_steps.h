// The normalizer and pre-tokenizer of a tokenizer.json that transformers 5 converted from
// a sentencepiece model (T5: Precompiled, WhitespaceSplit + Metaspace; NLLB: Precompiled,
// Replace(" {2,}", " "), Metaspace), run as tokenizers runs them, so that the words the
// model then segments are the ones transformers segments (sentencepiece's own
// normaliser differs: text/precompiled.h). Any other step is refused at load.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "text/metaspace.h"
#include "text/precompiled.h"
#include "text/regex_split.h"

namespace text {

class ConvertedSteps {
 public:
  // `tj`: the whole tokenizer.json; Error naming `who` and `path` for a step it does not run.
  ConvertedSteps(const nlohmann::json& tj, const std::string& who, const std::string& path);
  // The steps transformers' NLLB converter writes for a sentencepiece model whose
  // precompiled_charsmap is `charsmap`: Precompiled, Replace(" {2,}", " "),
  // Metaspace(always, split) (for checkpoints without tokenizer.json).
  static ConvertedSteps nllb(std::string charsmap, const std::string& who);
  // The words of a stretch of text between added tokens (normalised, pre-tokenized),
  // appended to `words`; `at_start`: the stretch begins the input.
  void words(std::string_view text, bool at_start, std::vector<std::string>& words) const;

 private:
  struct Normalizer {
    std::unique_ptr<PrecompiledCharsmap> charsmap;  // Precompiled, or
    std::unique_ptr<Regex> pattern;                 // Replace(Regex), or
    std::string from, to;                           // Replace(String)
  };
  std::vector<Normalizer> normalizers_;
  bool whitespace_split_ = false;
  std::optional<Metaspace> metaspace_;
  void add_normalizer(const nlohmann::json& n, const std::string& who, const std::string& path);
  void add_pre_tokenizer(const nlohmann::json& p, const std::string& who, const std::string& path);
};

// Rust's char::is_whitespace (Unicode White_Space), as tokenizers' WhitespaceSplit cuts:
// the UTF-8 length of such a character at s[i], else 0.
size_t rust_whitespace_len(std::string_view s, size_t i);

}  // namespace text
