#include "text/t5.h"

#include <sentencepiece_processor.h>

#include "text/converted_spm.h"
#include "text/spm_files.h"
#include "text/spm_unigram.h"
#include "text/util.h"

namespace text {
namespace {

constexpr std::string_view kWho = "t5 tokenizer";

class T5 final : public Tokenizer {
 public:
  explicit T5(const std::map<std::string, std::string>& files) {
    sp_ = load_spm(named_file(files, "spm", kWho), kWho);
    segmenter_ = std::make_unique<UnigramSegmenter>(*sp_, UnigramSegmenter::Mode::kTokenizers);
    v_ = load_converted_vocab(named_file(files, "tokenizer", kWho), kWho);
    const nlohmann::json config = load_tokenizer_config(files, kWho);
    unk_id_ = v_.id_of(token_name(config, "unk_token", "<unk>", kWho), "unk_token", kWho);
    eos_id_ = v_.id_of(token_name(config, "eos_token", "</s>", kWho), "eos_token", kWho);
  }

  std::vector<int64_t> encode(std::string_view input) const override {
    check_utf8(input, "t5 tokenizer: encode");
    std::vector<int64_t> ids;
    std::vector<std::string> pieces;
    for (const std::string& chunk : v_.added.split(std::string(input))) {
      if (chunk.empty()) continue;
      if (const AddedToken* t = v_.added.find(chunk)) {
        ids.push_back(t->id);
        continue;
      }
      segmenter_->encode(chunk, pieces);
      for (const std::string& p : pieces) {
        auto it = v_.ids.find(p);
        ids.push_back(it == v_.ids.end() ? unk_id_ : it->second);
      }
    }
    ids.push_back(eos_id_);
    return ids;
  }

  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override {
    return metaspace_decode(v_, ids, skip_special_tokens);
  }

  const std::string& kind() const override { return kind_; }

 private:
  std::string kind_ = "t5-spm";
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::unique_ptr<UnigramSegmenter> segmenter_;
  ConvertedVocab v_;
  int64_t unk_id_ = 0, eos_id_ = 0;
};

}  // namespace

std::unique_ptr<Tokenizer> load_t5(const std::map<std::string, std::string>& files) {
  return std::make_unique<T5>(files);
}

}  // namespace text
