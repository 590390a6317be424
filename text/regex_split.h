// A pre-tokenizer regex through PCRE2 (UTF, Unicode properties), splitting text as
// tokenizers' Split(behavior=Isolated) does.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct pcre2_real_code_8;

namespace text {

class Regex {
 public:
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every match, and every gap between matches, is a piece (appended to `out`).
  void split(std::string_view s, std::vector<std::string_view>& out) const;
  // The non-empty matches only, left to right ([start, end) byte offsets), appended to `out`.
  void matches(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  pcre2_real_code_8* code_ = nullptr;
};

}  // namespace text
