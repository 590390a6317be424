// Added tokens (special tokens and user-added ones) as transformers handles them: found
// in the text before anything else, each kept whole as one id, with its
// lstrip/rstrip/single_word flags applied to its neighbours.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace text {

struct AddedToken {
  std::string content;
  int64_t id = -1;
  bool lstrip = false, rstrip = false, single_word = false, special = false;
  // tokenizers matches a normalized token in the normalised text, the others in the raw text
  bool normalized = false;
};

// Which added tokens a split looks for.
enum class Match { kAll, kRaw, kNormalized };

class AddedTokens {
 public:
  void add(AddedToken t);
  // tokenizer_config.json's "added_tokens_decoder" ({"id": {content, lstrip, ...}} or
  // null); `where` names the file in errors.
  void add_from_config(const nlohmann::json& added_tokens_decoder, std::string_view where);
  // tokenizer.json's "added_tokens" ([{id, content, lstrip, ...}]).
  void add_from_tokenizer_json(const nlohmann::json& added_tokens);

  // The text cut at every added token (leftmost match first, the longest at a place),
  // then the flags applied, as PreTrainedTokenizer.tokenize does: the pieces in order,
  // some empty. is_added(piece) tells the added tokens apart.
  std::vector<std::string> split(const std::string& text, Match which = Match::kAll) const;

  const AddedToken* find(const std::string& content) const;
  const AddedToken* find(const std::string& content, Match which) const;
  bool any_normalized() const;
  const AddedToken* find(int64_t id) const;
  bool empty() const { return by_content_.empty(); }
  const std::map<int64_t, AddedToken>& by_id() const { return by_id_; }

 private:
  std::map<std::string, int64_t> by_content_;
  std::map<int64_t, AddedToken> by_id_;
  std::vector<std::vector<const std::string*>> by_first_byte_ = std::vector<std::vector<const std::string*>>(256);
  void reindex();
};

}  // namespace text
