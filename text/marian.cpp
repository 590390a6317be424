#include "text/marian.h"

#include <set>
#include <unordered_map>

#include <sentencepiece_processor.h>

#include "text/added_tokens.h"
#include "text/spm_files.h"
#include "text/spm_unigram.h"
#include "text/util.h"

namespace text {
namespace {

const char* const kSpaceMarker = "\xe2\x96\x81";  // U+2581, sentencepiece's word boundary

constexpr std::string_view kWho = "marian tokenizer";

class Marian final : public Tokenizer {
 public:
  explicit Marian(const std::map<std::string, std::string>& files) {
    auto file = [&](const char* role) -> const std::string& { return named_file(files, role, kWho); };
    const nlohmann::json config = load_tokenizer_config(files, kWho);
    source_ = load_spm(file("source_spm"), kWho);
    target_ = load_spm(file("target_spm"), kWho);
    segmenter_ = std::make_unique<UnigramSegmenter>(*source_);
    encoder_ = load_vocab(file("vocab"), kWho);
    separate_vocabs_ = config.value("separate_vocabs", false);
    const auto decoder_vocab = separate_vocabs_ ? load_vocab(file("target_vocab"), kWho) : encoder_;
    for (const auto& [piece, id] : decoder_vocab) decoder_[id] = piece;
    clean_up_spaces_ = config.value("clean_up_tokenization_spaces", false);

    const std::string unk = token_name(config, "unk_token", "<unk>", kWho);
    const std::string eos = token_name(config, "eos_token", "</s>", kWho);
    const std::string pad = token_name(config, "pad_token", "<pad>", kWho);
    if (!encoder_.count(unk)) fail("marian tokenizer: {} has no '{}' (the unknown token)", file("vocab"), unk);
    if (config.contains("added_tokens_decoder"))
      added_.add_from_config(config["added_tokens_decoder"], fmt::format("{}: {}", kWho, files.at("config")));
    std::vector<std::string> special = {eos, unk, pad};
    for (const char* key : {"additional_special_tokens", "extra_special_tokens"})
      if (config.contains(key) && config[key].is_array())
        for (const auto& t : config[key])
          special.push_back(t.is_string() ? t.get<std::string>() : t.value("content", ""));
    // The special tokens are added tokens too (transformers adds them at load).
    for (const std::string& s : special)
      if (!s.empty() && !added_.find(s) && encoder_.count(s))
        added_.add({s, encoder_.at(s), false, false, false, true});
    for (const std::string& s : special) {
      if (s.empty()) continue;
      special_tokens_.insert(s);
      special_ids_.insert(token_id(s));
    }
    unk_id_ = encoder_.at(unk);
    eos_id_ = token_id(eos);
  }

  std::vector<int64_t> encode(std::string_view input) const override {
    check_utf8(input, "marian tokenizer: encode");
    std::vector<int64_t> ids;
    std::vector<std::string> pieces;
    for (const std::string& chunk : added_.split(std::string(input))) {
      if (chunk.empty()) continue;
      if (added_.find(chunk) || special_tokens_.count(chunk)) {
        ids.push_back(token_id(chunk));
        continue;
      }
      std::string_view rest = chunk;
      // MarianTokenizer.remove_language_code: a leading ">>xx<<" is one token.
      if (rest.substr(0, 2) == ">>") {
        const size_t end = rest.find("<<");
        if (end != std::string_view::npos) {
          ids.push_back(vocab_id(std::string(rest.substr(0, end + 2))));
          rest.remove_prefix(end + 2);
        }
      }
      segmenter_->encode(rest, pieces);
      for (const std::string& p : pieces) ids.push_back(vocab_id(p));
    }
    ids.push_back(eos_id_);
    return ids;
  }

  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override {
    // MarianTokenizer detokenizes with the source model unless the vocabularies are separate.
    const sentencepiece::SentencePieceProcessor& sp = separate_vocabs_ ? *target_ : *source_;
    std::string out;
    std::vector<std::string> run;
    auto flush = [&] {
      out += decode_pieces(sp, run);
      run.clear();
    };
    for (const int64_t id : ids) {
      if (skip_special_tokens && special_ids_.count(id)) continue;
      std::string token = piece(id, sp);
      if (special_tokens_.count(token)) {
        flush();
        out += token;
        out += ' ';
      } else {
        run.push_back(std::move(token));
      }
    }
    flush();
    replace_all(out, kSpaceMarker, " ");
    std::string result(py_strip(out));
    if (clean_up_spaces_) clean_up_tokenization(result);
    return result;
  }

  const std::string& kind() const override { return kind_; }

 private:
  std::string kind_ = "marian-spm";
  std::unique_ptr<sentencepiece::SentencePieceProcessor> source_, target_;
  std::unique_ptr<UnigramSegmenter> segmenter_;
  std::unordered_map<std::string, int64_t> encoder_;
  std::unordered_map<int64_t, std::string> decoder_;
  AddedTokens added_;
  std::set<std::string> special_tokens_;
  std::set<int64_t> special_ids_;
  int64_t unk_id_ = 0, eos_id_ = 0;
  bool separate_vocabs_ = false, clean_up_spaces_ = false;

  int64_t vocab_id(const std::string& piece) const {
    auto it = encoder_.find(piece);
    return it == encoder_.end() ? unk_id_ : it->second;
  }
  // convert_tokens_to_ids: an added token's id first, then the vocabulary's.
  int64_t token_id(const std::string& token) const {
    if (const AddedToken* t = added_.find(token)) return t->id;
    return vocab_id(token);
  }
  // convert_ids_to_tokens: an added token, the vocabulary's piece, else the spm's piece.
  std::string piece(int64_t id, const sentencepiece::SentencePieceProcessor& sp) const {
    if (const AddedToken* t = added_.find(id)) return t->content;
    auto it = decoder_.find(id);
    if (it != decoder_.end()) return it->second;
    if (id < 0 || id >= sp.GetPieceSize())
      fail("marian tokenizer: decode: token id {} is outside the vocabulary ({} pieces)", id, encoder_.size());
    std::string p = sp.IdToPiece(int(id));
    return p.empty() ? "<unk>" : p;
  }
};

}  // namespace

std::unique_ptr<Tokenizer> load_marian(const std::map<std::string, std::string>& files) {
  return std::make_unique<Marian>(files);
}

}  // namespace text
