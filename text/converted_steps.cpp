#include "text/converted_steps.h"

#include <nlohmann/json.hpp>

#include "text/util.h"

namespace text {

size_t rust_whitespace_len(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if ((c >= 0x09 && c <= 0x0d) || c == 0x20) return 1;
  if (c < 0x80) return 0;
  const size_t n = char_len(s, i);
  uint32_t cp = 0;
  if (n == 2) cp = (uint32_t(c & 0x1f) << 6) | (s[i + 1] & 0x3f);
  else if (n == 3) cp = (uint32_t(c & 0x0f) << 12) | (uint32_t(s[i + 1] & 0x3f) << 6) | (s[i + 2] & 0x3f);
  else return 0;
  const bool space = cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
                     cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
  return space ? n : 0;
}

ConvertedSteps::ConvertedSteps(const nlohmann::json& tj, const std::string& who, const std::string& path) {
  try {
    if (tj.contains("normalizer") && !tj["normalizer"].is_null()) add_normalizer(tj["normalizer"], who, path);
    if (tj.contains("pre_tokenizer") && !tj["pre_tokenizer"].is_null()) add_pre_tokenizer(tj["pre_tokenizer"], who, path);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: {}: {}", who, path, e.what());
  }
}

ConvertedSteps ConvertedSteps::nllb(std::string charsmap, const std::string& who) {
  nlohmann::json spec = {{"normalizer", {{"type", "Sequence"}, {"normalizers", nlohmann::json::array()}}},
                         {"pre_tokenizer",
                          {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", true}}}};
  spec["normalizer"]["normalizers"].push_back(
      {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}});
  ConvertedSteps steps(spec, who, "sentencepiece.bpe.model");
  if (!charsmap.empty())  // first, before the Replace
    steps.normalizers_.insert(steps.normalizers_.begin(),
                              Normalizer{std::make_unique<PrecompiledCharsmap>(std::move(charsmap), who), nullptr, "", ""});
  return steps;
}

void ConvertedSteps::add_normalizer(const nlohmann::json& n, const std::string& who, const std::string& path) {
  const std::string type = n.value("type", "?");
  if (type == "Sequence") {
    for (const auto& step : n.at("normalizers")) add_normalizer(step, who, path);
    return;
  }
  Normalizer step;
  if (type == "Precompiled") {
    const auto& blob = n.at("precompiled_charsmap");
    if (blob.is_null()) return;  // no rules: nothing to do
    step.charsmap = std::make_unique<PrecompiledCharsmap>(base64_decode(blob.get<std::string>(), who), who);
  } else if (type == "Replace" && n.at("pattern").contains("String")) {
    step.from = n["pattern"]["String"].get<std::string>(), step.to = n.at("content").get<std::string>();
    if (step.from.empty()) fail("{}: {}: normalizer Replace of an empty string is not supported", who, path);
  } else if (type == "Replace" && n.at("pattern").contains("Regex")) {
    step.pattern = std::make_unique<Regex>(n["pattern"]["Regex"].get<std::string>());
    step.to = n.at("content").get<std::string>();
  } else {
    fail("{}: {}: normalizer {} is not supported (Precompiled, Replace, Sequence of them)", who, path, type);
  }
  normalizers_.push_back(std::move(step));
}

void ConvertedSteps::add_pre_tokenizer(const nlohmann::json& p, const std::string& who, const std::string& path) {
  const std::string type = p.value("type", "?");
  if (type == "Sequence") {
    for (const auto& step : p.at("pretokenizers")) add_pre_tokenizer(step, who, path);
  } else if (type == "WhitespaceSplit" && !metaspace_ && !whitespace_split_) {
    whitespace_split_ = true;
  } else if (type == "Metaspace" && !metaspace_) {
    metaspace_ = Metaspace::from_json(p, who, path);
  } else {
    fail("{}: {}: pre_tokenizer {} is not supported here (WhitespaceSplit, then Metaspace)", who, path, type);
  }
}

void ConvertedSteps::words(std::string_view input, bool at_start, std::vector<std::string>& out) const {
  std::string text(input);
  for (const Normalizer& n : normalizers_) {
    if (n.charsmap) {
      text = n.charsmap->normalize(text);
    } else if (n.pattern) {
      std::vector<std::pair<size_t, size_t>> found;
      n.pattern->matches(text, found);
      std::string replaced;
      size_t last = 0;
      for (const auto& [start, end] : found) replaced.append(text, last, start - last).append(n.to), last = end;
      text = replaced.append(text, last, std::string::npos);
    } else {
      replace_all(text, n.from, n.to);
    }
  }
  std::vector<std::pair<std::string, bool>> pieces;  // (text, begins the input)
  if (whitespace_split_) {
    for (size_t i = 0; i < text.size();) {
      if (size_t w = rust_whitespace_len(text, i)) {
        i += w;
        continue;
      }
      size_t j = i;
      while (j < text.size() && !rust_whitespace_len(text, j)) j += char_len(text, j);
      pieces.emplace_back(text.substr(i, j - i), at_start && i == 0);
      i = j;
    }
  } else if (!text.empty()) {
    pieces.emplace_back(std::move(text), at_start);
  }
  for (auto& [piece, first] : pieces) {
    if (metaspace_) {
      metaspace_->apply(piece, first, out);
    } else {
      out.push_back(std::move(piece));
    }
  }
}

}  // namespace text
