#include "text/metaspace.h"

#include <nlohmann/json.hpp>

#include "text/util.h"

namespace text {

Metaspace Metaspace::from_json(const nlohmann::json& p, const std::string& who, const std::string& path) {
  if (!p.is_object() || p.value("type", "") != "Metaspace")
    fail("{}: {}: expected a Metaspace step, not {}", who, path, p.dump().substr(0, 200));
  Metaspace m;
  try {
    m.replacement_ = p.value("replacement", std::string("\u2581"));
    if (m.replacement_.empty() || char_len(m.replacement_, 0) != m.replacement_.size())
      fail("{}: {}: Metaspace replacement '{}' is not one character", who, path, m.replacement_);
    if (p.contains("prepend_scheme")) {
      const std::string scheme = p["prepend_scheme"].get<std::string>();
      if (scheme == "always") m.prepend_ = Prepend::kAlways;
      else if (scheme == "first") m.prepend_ = Prepend::kFirst;
      else if (scheme == "never") m.prepend_ = Prepend::kNever;
      else fail("{}: {}: Metaspace prepend_scheme '{}' is not supported (always, first, never)", who, path, scheme);
    } else {
      m.prepend_ = p.value("add_prefix_space", true) ? Prepend::kAlways : Prepend::kNever;
    }
    m.split_ = p.value("split", true);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: {}: Metaspace: {}", who, path, e.what());
  }
  return m;
}

void Metaspace::apply(const std::string& piece, bool at_start, std::vector<std::string>& words) const {
  std::string text = piece;
  replace_all(text, " ", replacement_);
  // tokenizers prepends only to a text not already starting with the replacement
  const bool prepend = prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && at_start);
  if (prepend && text.compare(0, replacement_.size(), replacement_) != 0) text.insert(0, replacement_);
  if (!split_) {
    words.push_back(std::move(text));
    return;
  }
  // Split(replacement, MergedWithNext): each word starts at a replacement
  size_t start = 0;
  for (size_t at = text.find(replacement_, 1); at != std::string::npos; at = text.find(replacement_, at + 1)) {
    words.push_back(text.substr(start, at - start));
    start = at;
  }
  if (start < text.size()) words.push_back(text.substr(start));
}

}  // namespace text
