#include "text/m2m100.h"

#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

#include "text/added_tokens.h"
#include "text/spm_files.h"
#include "text/spm_unigram.h"
#include "text/util.h"

namespace text {
namespace {

constexpr std::string_view kWho = "m2m100 tokenizer";

class M2M100 final : public Tokenizer {
 public:
  M2M100(const std::map<std::string, std::string>& files, const std::vector<std::string>& codes) {
    auto file = [&](const char* role) -> const std::string& { return named_file(files, role, kWho); };
    sp_ = load_spm(file("spm"), kWho);
    segmenter_ = std::make_unique<UnigramSegmenter>(*sp_);
    encoder_ = load_vocab(file("vocab"), kWho);
    for (const auto& [piece, id] : encoder_) decoder_[id] = piece;
    // Language tokens follow the vocabulary, in transformers' code order.
    const int64_t base = int64_t(encoder_.size());
    for (size_t i = 0; i < codes.size(); ++i) {
      lang_to_id_["__" + codes[i] + "__"] = base + int64_t(i);
      id_to_lang_[base + int64_t(i)] = "__" + codes[i] + "__";
    }
    const nlohmann::json config = load_tokenizer_config(files, kWho);
    unk_ = token_name(config, "unk_token", "<unk>", kWho);
    if (!encoder_.count(unk_)) fail("m2m100 tokenizer: {} has no '{}' (the unknown token)", file("vocab"), unk_);
    std::string src = "en";  // transformers' default source language
    if (config.contains("src_lang") && config["src_lang"].is_string()) src = config["src_lang"].get<std::string>();
    src_lang_id_ = language_id(src);
    if (config.contains("added_tokens_decoder"))
      added_.add_from_config(config["added_tokens_decoder"], fmt::format("{}: {}", kWho, files.at("config")));
    for (const char* key : {"bos_token", "eos_token", "sep_token", "pad_token", "unk_token"}) {
      const char* fallback = key[0] == 'b' ? "<s>" : key[0] == 'p' ? "<pad>" : key[0] == 'u' ? "<unk>" : "</s>";
      const std::string t = token_name(config, key, fallback, kWho);
      special_tokens_.insert(t);
      if (!added_.find(t) && encoder_.count(t)) added_.add({t, encoder_.at(t), false, false, false, true});
    }
    for (const std::string& t : special_tokens_) special_ids_.insert(token_id(t));
    eos_id_ = token_id(token_name(config, "eos_token", "</s>", kWho));
    clean_up_spaces_ = clean_up_wanted(config, /*bpe_model=*/false);  // a Python (sentencepiece) tokenizer
  }

  std::vector<int64_t> encode(std::string_view input) const override { return encode_ids(input, src_lang_id_); }

  std::vector<int64_t> encode_from(std::string_view input, std::string_view src_lang) const override {
    return encode_ids(input, language_id(src_lang));
  }

  // get_lang_id: "fr" -> the id of __fr__.
  int64_t language_id(std::string_view lang) const override {
    auto it = lang_to_id_.find("__" + std::string(lang) + "__");
    if (it == lang_to_id_.end())
      fail("m2m100 tokenizer: '{}' is not a language code of this model (codes look like en, fr, de; {} in all)", lang,
           lang_to_id_.size());
    return it->second;
  }

  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override {
    std::string out;
    std::vector<std::string> run;
    auto flush = [&] {
      out += decode_pieces(*sp_, run);
      run.clear();
    };
    for (const int64_t id : ids) {
      if (skip_special_tokens && special_ids_.count(id)) continue;
      std::string token = piece(id);
      if (special_tokens_.count(token)) {  // kept as it is, with no space after (unlike Marian)
        flush();
        out += token;
      } else {
        run.push_back(std::move(token));
      }
    }
    flush();
    std::string text(py_strip(out));
    if (clean_up_spaces_) clean_up_tokenization(text);
    return text;
  }

  const std::string& kind() const override { return kind_; }

 private:
  std::string kind_ = "m2m100-spm";
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::unique_ptr<UnigramSegmenter> segmenter_;
  std::unordered_map<std::string, int64_t> encoder_, lang_to_id_;
  std::unordered_map<int64_t, std::string> decoder_, id_to_lang_;
  AddedTokens added_;
  std::set<std::string> special_tokens_;
  std::set<int64_t> special_ids_;
  std::string unk_;
  int64_t src_lang_id_ = 0, eos_id_ = 0;
  bool clean_up_spaces_ = false;

  // [lang] text </s>
  std::vector<int64_t> encode_ids(std::string_view input, int64_t lang) const {
    check_utf8(input, "m2m100 tokenizer: encode");
    std::vector<int64_t> ids = {lang};
    std::vector<std::string> pieces;
    for (const std::string& chunk : added_.split(std::string(input))) {
      if (chunk.empty()) continue;
      if (added_.find(chunk) || special_tokens_.count(chunk)) {
        ids.push_back(token_id(chunk));
        continue;
      }
      segmenter_->encode(chunk, pieces);
      for (const std::string& p : pieces) ids.push_back(token_id(p));
    }
    ids.push_back(eos_id_);
    return ids;
  }

  // convert_tokens_to_ids: an added token, a language token, the vocabulary, else <unk>.
  int64_t token_id(const std::string& token) const {
    if (const AddedToken* t = added_.find(token)) return t->id;
    if (auto it = lang_to_id_.find(token); it != lang_to_id_.end()) return it->second;
    auto it = encoder_.find(token);
    return it == encoder_.end() ? encoder_.at(unk_) : it->second;
  }
  // convert_ids_to_tokens: an id outside everything is <unk>, as transformers maps it.
  std::string piece(int64_t id) const {
    if (const AddedToken* t = added_.find(id)) return t->content;
    if (auto it = id_to_lang_.find(id); it != id_to_lang_.end()) return it->second;
    auto it = decoder_.find(id);
    return it == decoder_.end() ? unk_ : it->second;
  }
};

}  // namespace

std::unique_ptr<Tokenizer> load_m2m100(const std::map<std::string, std::string>& files,
                                       const std::vector<std::string>& language_codes) {
  return std::make_unique<M2M100>(files, language_codes);
}

}  // namespace text
