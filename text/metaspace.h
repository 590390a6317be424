// tokenizers' Metaspace pre-tokenizer: spaces become "▁" (the replacement), a "▁" is
// prepended as its prepend_scheme says, and with `split` the text is cut before each
// "▁". transformers 5 writes it for Llama 2 style BPEs (split false, prepend "first")
// and for T5 (split true, prepend "always", after a whitespace split).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace text {

class Metaspace {
 public:
  enum class Prepend { kAlways, kFirst, kNever };

  // From a tokenizer.json pre_tokenizer (or decoder) of type Metaspace: "replacement",
  // "prepend_scheme" (or the older "add_prefix_space": true is "always"), "split".
  // Error naming `who` and `path` for another type or a bad field.
  static Metaspace from_json(const nlohmann::json& p, const std::string& who, const std::string& path);

  // The words of `piece` (a stretch of text between added tokens), appended to `words`.
  // `at_start`: the piece begins the whole input (offset 0), where "first" prepends.
  void apply(const std::string& piece, bool at_start, std::vector<std::string>& words) const;

  const std::string& replacement() const { return replacement_; }
  Prepend prepend() const { return prepend_; }

 private:
  std::string replacement_ = "\u2581";
  Prepend prepend_ = Prepend::kAlways;
  bool split_ = true;
};

}  // namespace text
