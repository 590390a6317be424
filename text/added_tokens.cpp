#include "text/added_tokens.h"

#include "text/util.h"

namespace text {

void AddedTokens::add(AddedToken t) {
  if (t.content.empty()) fail("added token {} has no content", t.id);
  by_content_[t.content] = t.id;
  by_id_[t.id] = std::move(t);
  reindex();
}

void AddedTokens::reindex() {
  for (auto& v : by_first_byte_) v.clear();
  for (const auto& [id, t] : by_id_) by_first_byte_[static_cast<unsigned char>(t.content[0])].push_back(&t.content);
}

namespace {
AddedToken from_json(const nlohmann::json& j, int64_t id) {
  AddedToken t;
  t.id = id;
  if (j.is_string()) {
    t.content = j.get<std::string>();
    return t;
  }
  t.content = j.at("content").get<std::string>();
  t.lstrip = j.value("lstrip", false);
  t.rstrip = j.value("rstrip", false);
  t.single_word = j.value("single_word", false);
  t.special = j.value("special", false);
  t.normalized = j.value("normalized", false);
  return t;
}
}  // namespace

void AddedTokens::add_from_config(const nlohmann::json& d, std::string_view where) {
  if (d.is_null()) return;  // written as null: none listed
  if (!d.is_object()) fail("{}: added_tokens_decoder is not an object of token id: token", where);
  for (const auto& [key, j] : d.items()) {
    // transformers reads each key with int(); a key that is no id is an error here, with
    // the key named (std::stoll would throw a bare invalid_argument, or read "12ab" as 12).
    const bool digits = !key.empty() && key.size() <= 18 &&
                        key.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) fail("{}: added_tokens_decoder: key '{}' is not a token id (a decimal integer)", where, key);
    try {
      add(from_json(j, std::stoll(key)));
    } catch (const nlohmann::json::exception& e) {
      fail("{}: added_tokens_decoder['{}']: {}", where, key, e.what());
    }
  }
}

void AddedTokens::add_from_tokenizer_json(const nlohmann::json& list) {
  for (const auto& j : list) add(from_json(j, json_int(j.at("id"))));
}

const AddedToken* AddedTokens::find(const std::string& content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? nullptr : &by_id_.at(it->second);
}

const AddedToken* AddedTokens::find(const std::string& content, Match which) const {
  const AddedToken* t = find(content);
  if (!t || which == Match::kAll || (which == Match::kNormalized) == t->normalized) return t;
  return nullptr;
}

bool AddedTokens::any_normalized() const {
  for (const auto& [id, t] : by_id_)
    if (t.normalized) return true;
  return false;
}

const AddedToken* AddedTokens::find(int64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

std::vector<std::string> AddedTokens::split(const std::string& text, Match which) const {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    const std::string* best = nullptr;
    for (const std::string* c : by_first_byte_[static_cast<unsigned char>(text[i])])
      if ((!best || c->size() > best->size()) && text.compare(i, c->size(), *c) == 0 && find(*c, which)) best = c;
    if (!best) {
      ++i;
      continue;
    }
    if (i > start) out.push_back(text.substr(start, i - start));
    out.push_back(*best);
    i += best->size();
    start = i;
  }
  if (start < text.size() || out.empty()) out.push_back(text.substr(start));
  // The flags, as PreTrainedTokenizer.tokenize applies them (in place, left to right).
  for (size_t i = 0; i < out.size(); ++i) {
    const AddedToken* t = find(out[i], which);
    if (!t) continue;
    const bool has_left = i > 0 && !out[i - 1].empty(), has_right = i + 1 < out.size() && !out[i + 1].empty();
    if (t->rstrip && has_right) out[i + 1] = std::string(py_lstrip(out[i + 1]));
    if (t->lstrip && has_left) out[i - 1] = std::string(py_rstrip(out[i - 1]));
    if (t->single_word) {
      if (has_left && out[i - 1].back() != ' ') {
        out[i - 1] += out[i];
        out[i].clear();
      } else if (has_right && out[i + 1][0] != ' ') {
        out[i + 1] = out[i] + out[i + 1];
        out[i].clear();
      }
    }
  }
  return out;
}

}  // namespace text
