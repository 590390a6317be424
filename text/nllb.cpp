#include "text/nllb.h"

#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

#include "text/converted_spm.h"
#include "text/spm_files.h"
#include "text/util.h"

namespace text {
namespace {

constexpr std::string_view kWho = "nllb tokenizer";

class Nllb final : public Tokenizer {
 public:
  Nllb(const std::map<std::string, std::string>& files, const std::vector<std::string>& codes) {
    sp_ = load_spm(named_file(files, "spm", kWho), kWho);
    v_ = load_converted_vocab(named_file(files, "tokenizer", kWho), kWho);
    const nlohmann::json config = load_tokenizer_config(files, kWho);
    unk_id_ = v_.id_of(token_name(config, "unk_token", "<unk>", kWho), "unk_token", kWho);
    eos_id_ = v_.id_of(token_name(config, "eos_token", "</s>", kWho), "eos_token", kWho);
    space_id_ = v_.ids.count("\u2581") ? v_.ids.at("\u2581") : unk_id_;
    legacy_ = config.value("legacy_behaviour", false) == true;
    for (const std::string& c : codes)
      if (const AddedToken* t = v_.added.find(c)) languages_[c] = t->id;
    std::string src = "eng_Latn";  // transformers' default source language
    if (config.contains("src_lang") && config["src_lang"].is_string()) src = config["src_lang"].get<std::string>();
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

  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override {
    return metaspace_decode(v_, ids, skip_special_tokens);
  }

  const std::string& kind() const override { return kind_; }

 private:
  std::string kind_ = "nllb-spm";
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  ConvertedVocab v_;
  std::unordered_map<std::string, int64_t> languages_;
  int64_t unk_id_ = 0, eos_id_ = 0, space_id_ = 0, src_lang_id_ = 0;
  bool legacy_ = false;

  std::vector<int64_t> encode_ids(std::string_view input, int64_t lang) const {
    check_utf8(input, "nllb tokenizer: encode");
    std::vector<int64_t> ids;
    if (!legacy_) ids.push_back(lang);
    std::vector<std::string> pieces;
    for (const std::string& chunk : v_.added.split(std::string(input))) {
      if (chunk.empty()) continue;
      if (const AddedToken* t = v_.added.find(chunk)) {
        ids.push_back(t->id);
        continue;
      }
      encode_chunk(chunk, pieces, ids);
    }
    ids.push_back(eos_id_);
    if (legacy_) ids.push_back(lang);
    return ids;
  }

  // The pieces of one stretch of text between added tokens. transformers runs the
  // converted model (tokenizers: the spm's normalizer, spaces collapsed, Metaspace
  // split), which differs from sentencepiece's Encode in one way: whitespace at the
  // end of the stretch is kept, as a lone "▁" piece.
  void encode_chunk(const std::string& chunk, std::vector<std::string>& pieces, std::vector<int64_t>& ids) const {
    const auto status = sp_->Encode(chunk, &pieces);
    if (!status.ok()) fail("nllb tokenizer: encode: {}", status.ToString());
    const size_t start = ids.size();
    for (const std::string& p : pieces) {
      auto it = v_.ids.find(p);
      const int64_t id = it == v_.ids.end() ? unk_id_ : it->second;
      if (v_.fuse_unk && id == unk_id_ && ids.size() > start && ids.back() == unk_id_) continue;  // one <unk> per run
      ids.push_back(id);
    }
    if (ends_in_space(chunk)) ids.push_back(space_id_);
  }

  // Whether the normalised chunk ends in whitespace (the spm's normaliser decides: it
  // turns tabs, no-break spaces... into spaces and drops zero-width characters).
  bool ends_in_space(const std::string& chunk) const {
    const auto last = static_cast<unsigned char>(chunk.back());
    if (last < 0x80 && last != ' ' && last != '\t' && last != '\n' && last != '\r' && last != '\v' && last != '\f')
      return false;
    std::vector<std::string> probe;
    const auto status = sp_->Encode(chunk + "X", &probe);
    if (!status.ok()) fail("nllb tokenizer: encode: {}", status.ToString());
    std::string joined;
    for (const std::string& p : probe) joined += p;
    return joined.size() >= 4 && joined.compare(joined.size() - 4, 4, "\u2581X") == 0;
  }
};

}  // namespace

std::unique_ptr<Tokenizer> load_nllb(const std::map<std::string, std::string>& files,
                                     const std::vector<std::string>& language_codes) {
  return std::make_unique<Nllb>(files, language_codes);
}

}  // namespace text
