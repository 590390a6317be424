// Small helpers the tokenizers share: reading files, Python's idea of whitespace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "text/tokenizer.h"

namespace text {

template <typename... A>
[[noreturn]] void fail(fmt::format_string<A...> f, A&&... a) {
  throw Error(fmt::format(f, std::forward<A>(a)...));
}

std::string read_text_file(const std::string& path);

// str.strip(), str.lstrip(), str.rstrip() as Python does them: Unicode whitespace,
// not only ASCII (transformers strips decoded text with str.strip()).
std::string_view py_strip(std::string_view s);
std::string_view py_lstrip(std::string_view s);
std::string_view py_rstrip(std::string_view s);

void replace_all(std::string& s, std::string_view from, std::string_view to);

// UTF-8 by hand, for the byte-level tokenizers.
void append_utf8(std::string& out, uint32_t cp);
size_t char_len(std::string_view s, size_t i);  // of the character at s[i] (1 for a stray byte)
std::string utf8_lossy(std::string_view s);     // invalid sequences -> U+FFFD, as Rust's from_utf8_lossy

}  // namespace text
