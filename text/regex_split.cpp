#include "text/regex_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "text/util.h"

namespace text {

Regex::Regex(const std::string& pattern) {
  int err = 0;
  PCRE2_SIZE off = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP, &err,
                        &off, nullptr);
  if (!code_) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    fail("tokenizer.json: the regex '{}' does not compile at offset {}: {}", pattern, off,
         reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // faster when available; the interpreter otherwise
}

Regex::~Regex() { pcre2_code_free(code_); }

void Regex::matches(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
  size_t pos = 0;
  while (pos <= s.size()) {
    const int rc =
        pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t start = ov[0], end = ov[1];
    if (end == start) {  // an empty match cuts nothing: step over one character
      if (start >= s.size()) break;
      pos = start + char_len(s, start);
      continue;
    }
    out.emplace_back(start, end);
    pos = end;
  }
  pcre2_match_data_free(md);
}

void Regex::split(std::string_view s, std::vector<std::string_view>& out) const {
  std::vector<std::pair<size_t, size_t>> found;
  matches(s, found);
  size_t last = 0;
  for (const auto& [start, end] : found) {
    if (start > last) out.push_back(s.substr(last, start - last));
    out.push_back(s.substr(start, end - start));
    last = end;
  }
  if (last < s.size()) out.push_back(s.substr(last));
}

}  // namespace text
