#include "text/converted_spm.h"

#include <nlohmann/json.hpp>

#include "text/spm_files.h"
#include "text/util.h"

namespace text {

ConvertedVocab load_converted_vocab(const nlohmann::json& tj, const std::string& path, std::string_view who) {
  if (!tj.is_object() || !tj.contains("model") || !tj["model"].contains("vocab"))
    fail("{}: {} has no model.vocab", who, path);
  ConvertedVocab v;
  try {
    const auto& vocab = tj["model"]["vocab"];
    if (vocab.is_object()) {  // BPE: {piece: id}
      for (const auto& [piece, id] : vocab.items()) v.ids[piece] = json_int(id);
    } else if (vocab.is_array()) {  // Unigram: [[piece, score], ...] in id order
      for (size_t i = 0; i < vocab.size(); ++i) v.ids.emplace(vocab[i].at(0).get<std::string>(), int64_t(i));
    } else {
      fail("{}: {}: model.vocab is neither an object nor a list", who, path);
    }
    v.fuse_unk = tj["model"].value("fuse_unk", tj["model"].value("type", "") == "Unigram");
    v.bpe = tj["model"].value("type", "") == "BPE";
    if (!v.bpe && tj["model"].contains("unk_id") && tj["model"]["unk_id"].is_number_integer())
      v.model_unk = tj["model"]["unk_id"].get<int64_t>();
    if (tj.contains("added_tokens")) v.added.add_from_tokenizer_json(tj["added_tokens"]);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: {}: {}", who, path, e.what());
  }
  for (const auto& [piece, id] : v.ids) v.pieces[id] = piece;
  if (v.bpe && tj["model"].contains("unk_token") && tj["model"]["unk_token"].is_string()) {
    auto it = v.ids.find(tj["model"]["unk_token"].get<std::string>());
    if (it != v.ids.end()) v.model_unk = it->second;
  }
  return v;
}

int64_t ConvertedVocab::id_of(const std::string& token, const char* what, std::string_view who) const {
  if (const AddedToken* t = added.find(token)) return t->id;
  auto it = ids.find(token);
  if (it == ids.end()) fail("{}: the {} '{}' is not in tokenizer.json", who, what, token);
  return it->second;
}

std::string metaspace_decode(const ConvertedVocab& vocab, const std::vector<int64_t>& ids, bool skip_special_tokens) {
  std::string out;
  bool first = true;
  for (const int64_t id : ids) {
    std::string token;
    if (const AddedToken* t = vocab.added.find(id)) {
      if (skip_special_tokens && t->special) continue;
      token = t->content;
    } else if (auto it = vocab.pieces.find(id); it != vocab.pieces.end()) {
      token = it->second;
    } else {
      continue;
    }
    replace_all(token, "\u2581", " ");
    if (first && !token.empty() && token[0] == ' ') token.erase(0, 1);
    first = false;
    out += token;
  }
  return out;
}

ConvertedSpm::ConvertedSpm(const std::map<std::string, std::string>& files, std::string who, std::string kind,
                           const VocabWithoutJson& without_json)
    : who_(std::move(who)), kind_(std::move(kind)) {
  const std::string& spm_path = named_file(files, "spm", who_);
  sp_ = load_spm(spm_path, who_);
  config_ = load_tokenizer_config(files, who_);
  if (without_json && !files.count("tokenizer")) {
    v_ = without_json(*sp_, config_);
    std::string charsmap;
    raw_sp_ = load_spm_unnormalized(spm_path, who_, &charsmap);
    steps_.emplace(ConvertedSteps::nllb(std::move(charsmap), who_));
  } else {
    const std::string& path = named_file(files, "tokenizer", who_);
    const auto tj = nlohmann::json::parse(read_text_file(path), nullptr, false);
    v_ = load_converted_vocab(tj, path, who_);
    steps_.emplace(tj, who_, path);
    raw_sp_ = load_spm_unnormalized(spm_path, who_);
  }
  unk_id_ = v_.id_of(token_name(config_, "unk_token", "<unk>", who_), "unk_token", who_);
  eos_id_ = v_.id_of(token_name(config_, "eos_token", "</s>", who_), "eos_token", who_);
  clean_up_spaces_ = clean_up_wanted(config_, v_.bpe);
}

std::string ConvertedSpm::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  std::string text = metaspace_decode(v_, ids, skip_special_tokens);
  if (clean_up_spaces_) clean_up_tokenization(text);
  return text;
}

void ConvertedSpm::encode_text(std::string_view input, std::vector<int64_t>& ids) const {
  check_utf8(input, who_ + ": encode");
  bool at_start = true;
  std::vector<std::string> words;
  for (const std::string& chunk : v_.added.split(std::string(input))) {
    if (chunk.empty()) continue;
    const bool first = at_start;
    at_start = false;
    if (const AddedToken* t = v_.added.find(chunk)) {
      ids.push_back(t->id);
      continue;
    }
    words.clear();
    steps_->words(chunk, first, words);
    for (const std::string& w : words) encode_word(w, ids);
  }
}

}  // namespace text
