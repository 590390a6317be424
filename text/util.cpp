#include "text/util.h"

#include <nlohmann/json.hpp>

#include "io/regular_file.h"

namespace text {

std::string read_text_file(const std::string& path) {
  // Real tokenizer files are up to a few tens of MB (Gemma's tokenizer.json: 33 MB).
  constexpr uint64_t kMaxTokenizerFileBytes = uint64_t(128) << 20;
  try {
    return io::read_regular_file(path, kMaxTokenizerFileBytes, "a file a tokenizer reads");
  } catch (const io::FileError& e) {
    throw Error(e.what());
  }
}

int64_t json_int(const nlohmann::json& j) {
  if (j.is_number_integer() && !(j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)))
    return j.get<int64_t>();
  throw nlohmann::json::type_error::create(
      302, fmt::format("an id must be an integer within int64, got {}", j.dump().substr(0, 40)), &j);
}

namespace {

// The UTF-8 length of a Python-whitespace character at the start of `s`, else 0
// (str.isspace: ASCII \t\n\v\f\r, \x1c-\x1f, space, U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
size_t space_at(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
  auto at = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  if (c == 0xc2 && (at(1) == 0x85 || at(1) == 0xa0)) return 2;
  if (c == 0xe1 && at(1) == 0x9a && at(2) == 0x80) return 3;
  if (c == 0xe2 && at(1) == 0x80) {
    const unsigned t = at(2);
    if ((t >= 0x80 && t <= 0x8a) || t == 0xa8 || t == 0xa9 || t == 0xaf) return 3;
  }
  if (c == 0xe2 && at(1) == 0x81 && at(2) == 0x9f) return 3;
  if (c == 0xe3 && at(1) == 0x80 && at(2) == 0x80) return 3;
  return 0;
}

// The start of the trailing run of whitespace (s.size() when there is none).
size_t trailing_space_start(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;  // back to the lead byte of the last character
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80) --start;
    if (space_at(s, start) != end - start) break;
    end = start;
  }
  return end;
}

}  // namespace

std::string_view py_lstrip(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = space_at(s, i);
    if (!n) break;
    i += n;
  }
  return s.substr(i);
}

std::string_view py_rstrip(std::string_view s) { return s.substr(0, trailing_space_start(s)); }

std::string_view py_strip(std::string_view s) { return py_rstrip(py_lstrip(s)); }

size_t replaced_size(std::string_view s, std::string_view from, std::string_view to) {
  if (from.empty() || to.size() <= from.size()) return s.size();  // no growth: no overflow either
  size_t hits = 0;
  for (size_t hit = 0; (hit = s.find(from, hit)) != std::string_view::npos; hit += from.size()) ++hits;
  const size_t extra = to.size() - from.size();
  if (hits > (SIZE_MAX - s.size()) / extra) return SIZE_MAX;
  return s.size() + hits * extra;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  if (pos == 0) return;
  out.append(s, pos, std::string::npos);
  s = std::move(out);
}

void check_utf8(std::string_view s, std::string_view what) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    size_t len = 0;
    unsigned cp = 0, min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      fail("{}: the text is not valid UTF-8 (byte {} is 0x{:02x})", what, i, c);
    }
    if (i + len > n) fail("{}: the text is not valid UTF-8 (a character cut short at byte {})", what, i);
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xc0) != 0x80)
        fail("{}: the text is not valid UTF-8 (byte {} is 0x{:02x})", what, i + k, p[i + k]);
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      fail("{}: the text is not valid UTF-8 (an invalid sequence at byte {})", what, i);
    i += len;
  }
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6)), out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12)), out += char(0x80 | ((cp >> 6) & 0x3f)), out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18)), out += char(0x80 | ((cp >> 12) & 0x3f)), out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

// The length of the UTF-8 character at s[i] (1 for a stray byte).
size_t char_len(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  return std::min(n, s.size() - i);
}

// String::from_utf8_lossy: each maximal invalid subsequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view s) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    if (c < 0x80) {
      out += char(c);
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    size_t k = 1;
    if (len) {
      for (; k < len && i + k < n; ++k) {
        const unsigned b = p[i + k];
        if (k == 1 ? (b < lo || b > hi) : (b & 0xc0) != 0x80) break;
      }
    }
    if (len && k == len) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      i += std::max<size_t>(k, 1);
    }
  }
  return out;
}

void clean_up_tokenization(std::string& s) {
  for (const auto& [from, to] : {std::pair{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
                                 {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}})
    replace_all(s, from, to);
}

bool clean_up_wanted(const nlohmann::json& config, bool bpe_model) {
  auto flag = [&](const char* key) { return config.is_object() && config.value(key, false) == true; };
  if (!flag("clean_up_tokenization_spaces")) return false;
  return !bpe_model || flag("clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output");
}

}  // namespace text
