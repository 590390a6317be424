// Small helpers the tokenizers share: reading files, Python's idea of whitespace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json_fwd.hpp>

#include "text/tokenizer.h"

namespace text {

template <typename... A>
[[noreturn]] void fail(fmt::format_string<A...> f, A&&... a) {
  throw Error(fmt::format(f, std::forward<A>(a)...));
}

// A file of a program's tokenizer (or its meta.json): a regular file of at most 128 MiB,
// read without blocking (io/regular_file.h); anything else is an Error naming it.
std::string read_text_file(const std::string& path);

// An id of a tokenizer file: `j` as an int64 when it is a JSON integer that fits. Anything
// else throws nlohmann's type_error, as get<int64_t>() does for a string, so the loaders'
// handlers name the file: get<int64_t>() casts a float, undefined past int64's range.
int64_t json_int(const nlohmann::json& j);

// str.strip(), str.lstrip(), str.rstrip() as Python does them: Unicode whitespace,
// not only ASCII (transformers strips decoded text with str.strip()).
std::string_view py_strip(std::string_view s);
std::string_view py_lstrip(std::string_view s);
std::string_view py_rstrip(std::string_view s);

void replace_all(std::string& s, std::string_view from, std::string_view to);
// The size of `s` after replace_all(s, from, to) when that grows it (else s.size()),
// counted without building it and saturating at SIZE_MAX: a caller checks it first.
size_t replaced_size(std::string_view s, std::string_view from, std::string_view to);

// transformers' clean_up_tokenization (tokenizer_config.json's clean_up_tokenization_spaces):
// no space before punctuation and contractions.
void clean_up_tokenization(std::string& s);

// Whether transformers 5 cleans up decoded text for a tokenizer with this
// tokenizer_config.json: clean_up_tokenization_spaces, except for a tokenizers-backed
// BPE model (`bpe_model`), where it is ignored unless
// clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output is set too.
bool clean_up_wanted(const nlohmann::json& config, bool bpe_model);

// UTF-8 by hand, for the byte-level tokenizers.
void append_utf8(std::string& out, uint32_t cp);
size_t char_len(std::string_view s, size_t i);  // of the character at s[i] (1 for a stray byte)
std::string utf8_lossy(std::string_view s);     // invalid sequences -> U+FFFD, as Rust's from_utf8_lossy

}  // namespace text
