#include "text/nllb.h"

#include <unordered_map>

#include "text/converted_spm.h"
#include "text/spm_files.h"
#include "text/spm_linear.h"
#include "text/util.h"

namespace text {
namespace {

// The numbering without tokenizer.json, as transformers 4's slow NllbTokenizer computed it
// from the spm model (fairseq's dictionary): <s> <pad> </s> <unk> 0-3, spm piece i (from 3
// on: the spm's own first three are <unk> <s> </s>) at i + 1, then the language codes in
// order from the spm size + 1, <mask> last. tokenizer_config.json's added_tokens_decoder,
// when it has one, gives the ids it lists (transformers 5 reads them from there).
ConvertedVocab fairseq_vocab(const sentencepiece::SentencePieceProcessor& sp, const nlohmann::json& config,
                             const std::vector<std::string>& codes, std::string_view config_path) {
  const char* who = "nllb tokenizer";
  const int n = sp.GetPieceSize();
  if (n < 3 || !sp.IsUnknown(0) || !sp.IsControl(1) || !sp.IsControl(2))
    fail("{}: sentencepiece.bpe.model does not begin with <unk> <s> </s> as fairseq's NLLB models do, so its "
         "numbering is unknown without tokenizer.json",
         who);
  ConvertedVocab v;
  v.fuse_unk = v.bpe = true;  // tokenizers' BPE of the converted NLLB tokenizer
  std::map<std::string, AddedToken> added;  // by content: added_tokens_decoder replaces an entry
  auto add = [&](std::string content, int64_t id, bool lstrip = false, bool normalized = false) {
    AddedToken t;
    t.content = std::move(content), t.id = id, t.lstrip = lstrip, t.normalized = normalized, t.special = true;
    added[t.content] = t;
  };
  const char* keys[] = {"bos_token", "pad_token", "eos_token", "unk_token"};
  const char* defaults[] = {"<s>", "<pad>", "</s>", "<unk>"};
  for (int64_t id = 0; id < 4; ++id) {
    const std::string name = token_name(config, keys[id], defaults[id], who);
    v.ids[name] = id;
    add(name, id);
  }
  for (int i = 3; i < n; ++i) v.ids.emplace(sp.IdToPiece(i), int64_t(i) + 1);
  int64_t next = int64_t(n) + 1;
  for (const std::string& code : codes) add(code, next++);
  add(token_name(config, "mask_token", "<mask>", who), next, /*lstrip=*/true, /*normalized=*/true);
  if (config.contains("added_tokens_decoder") && config["added_tokens_decoder"].is_object()) {
    AddedTokens listed;
    listed.add_from_config(config["added_tokens_decoder"], fmt::format("{}: {}", who, config_path));
    for (const auto& [id, t] : listed.by_id()) added[t.content] = t;
  }
  for (auto& [content, t] : added) v.added.add(t);
  for (const auto& [piece, id] : v.ids) v.pieces[id] = piece;
  return v;
}

class Nllb final : public ConvertedSpm {
 public:
  Nllb(const std::map<std::string, std::string>& files, const std::vector<std::string>& codes)
      : ConvertedSpm(files, "nllb tokenizer", "nllb-spm",
                     [&codes, &files](const sentencepiece::SentencePieceProcessor& sp, const nlohmann::json& config) {
                       const auto path = files.find("config");
                       return fairseq_vocab(sp, config, codes,
                                            path == files.end() ? "tokenizer_config.json" : path->second);
                     }),
        linear_(*raw_sp_) {
    legacy_ = config_.value("legacy_behaviour", false) == true;
    for (const std::string& c : codes)
      if (const AddedToken* t = v_.added.find(c)) languages_[c] = t->id;
    std::string src = "eng_Latn";  // transformers' default source language
    if (config_.contains("src_lang") && config_["src_lang"].is_string()) src = config_["src_lang"].get<std::string>();
    src_lang_id_ = language_id(src);
  }

  std::vector<int64_t> encode(std::string_view input) const override { return encode_ids(input, src_lang_id_); }

  std::vector<int64_t> encode_from(std::string_view input, std::string_view src_lang) const override {
    return encode_ids(input, language_id(src_lang));
  }

  int64_t language_id(std::string_view lang) const override {
    auto it = languages_.find(std::string(lang));
    if (it == languages_.end())
      fail("nllb tokenizer: '{}' is not a language code of this model (codes look like eng_Latn, fra_Latn, "
           "zho_Hans; {} in all)",
           lang, languages_.size());
    return it->second;
  }

 private:
  LinearSpmEncoder linear_;
  std::unordered_map<std::string, int64_t> languages_;
  int64_t src_lang_id_ = 0;
  bool legacy_ = false;

  // [lang] text </s>, or text </s> [lang] with legacy_behaviour.
  std::vector<int64_t> encode_ids(std::string_view input, int64_t lang) const {
    std::vector<int64_t> ids;
    if (!legacy_) ids.push_back(lang);
    encode_text(input, ids);
    ids.push_back(eos_id_);
    if (legacy_) ids.push_back(lang);
    return ids;
  }

  // One word of the pre-tokenizer, already normalised as tokenizers does, segmented by
  // the model without its normaliser; unknown pieces <unk>, one per run (fuse_unk).
  void encode_word(const std::string& word, std::vector<int64_t>& ids) const override {
    std::vector<std::string> pieces;
    linear_.encode(word, pieces);  // the model's pieces, without the library's quadratic unknown runs
    const size_t start = ids.size();
    for (const std::string& p : pieces) {
      auto it = v_.ids.find(p);
      // A byte piece (<0xE2>, an spm model with byte_fallback) is <unk>: the converted
      // tokenizer.json has no byte fallback, so tokenizers gives <unk> for the character.
      const bool byte_piece = p.size() == 6 && p.compare(0, 3, "<0x") == 0 && sp_->IsByte(sp_->PieceToId(p));
      const int64_t id = it == v_.ids.end() || byte_piece ? unk_id_ : it->second;
      if (v_.fuse_unk && id == unk_id_ && ids.size() > start && ids.back() == unk_id_) continue;  // one <unk> per run
      ids.push_back(id);
    }
  }
};

}  // namespace

std::unique_ptr<Tokenizer> load_nllb(const std::map<std::string, std::string>& files,
                                     const std::vector<std::string>& language_codes) {
  return std::make_unique<Nllb>(files, language_codes);
}

}  // namespace text
