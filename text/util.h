// Small helpers the tokenizers share: reading files, Python's idea of whitespace.
#pragma once

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

}  // namespace text
