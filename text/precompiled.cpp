#include "text/precompiled.h"

#include <cstring>

#include "text/util.h"

namespace text {

std::string base64_decode(std::string_view text, std::string_view who) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') break;
    else fail("{}: precompiled_charsmap is not base64 (character '{}')", who, c);
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xff);
    }
  }
  return out;
}

PrecompiledCharsmap::PrecompiledCharsmap(std::string blob, std::string_view who) {
  // [u32 little-endian: the trie's size in bytes][the trie: u32 units][replacement texts]
  uint32_t size = 0;
  if (blob.size() < 4) fail("{}: precompiled_charsmap is too short", who);
  for (int k = 3; k >= 0; --k) size = (size << 8) | static_cast<unsigned char>(blob[size_t(k)]);
  if (size % 4 != 0 || size == 0 || size > blob.size() - 4) fail("{}: precompiled_charsmap has a bad trie size", who);
  trie_.resize(size / 4);
  for (size_t i = 0; i < trie_.size(); ++i) {
    uint32_t u = 0;
    for (int k = 3; k >= 0; --k) u = (u << 8) | static_cast<unsigned char>(blob[4 + 4 * i + size_t(k)]);
    trie_[i] = u;
  }
  replacements_ = blob.substr(4 + size);
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view chunk) const {
  // darts-clone's double array: a unit holds a label, a leaf flag and an offset.
  auto offset = [](uint32_t u) { return size_t(u >> 10) << ((u & (1u << 9)) >> 6); };
  size_t node = offset(trie_[0]);
  for (const char ch : chunk) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) break;
    node ^= c;
    if (node >= trie_.size() || (trie_[node] & ((1u << 31) | 0xffu)) != c) return std::nullopt;
    const bool leaf = (trie_[node] >> 8) & 1;
    node ^= offset(trie_[node]);
    if (node >= trie_.size()) return std::nullopt;
    if (leaf) {
      const size_t at = trie_[node] & ((1u << 31) - 1);
      if (at >= replacements_.size()) return std::nullopt;
      return std::string_view(replacements_.data() + at, strnlen(replacements_.data() + at, replacements_.size() - at));
    }
  }
  return std::nullopt;
}

std::string PrecompiledCharsmap::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  std::vector<std::pair<size_t, size_t>> clusters;
  grapheme_.matches(text, clusters);
  for (const auto& [start, end] : clusters) {
    const std::string_view g = text.substr(start, end - start);
    if (g.size() < 6) {
      if (auto norm = transform(g)) {
        out += *norm;
        continue;
      }
    }
    for (size_t i = 0; i < g.size();) {
      const size_t n = char_len(g, i);
      if (auto norm = transform(g.substr(i, n))) {
        out += *norm;
      } else {
        out.append(g, i, n);
      }
      i += n;
    }
  }
  return out;
}

}  // namespace text
