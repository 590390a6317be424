#include "text/t5.h"

#include "text/converted_spm.h"
#include "text/spm_unigram.h"

namespace text {
namespace {

class T5 final : public ConvertedSpm {
 public:
  explicit T5(const std::map<std::string, std::string>& files)
      : ConvertedSpm(files, "t5 tokenizer", "t5-spm"),
        segmenter_(std::make_unique<UnigramSegmenter>(*raw_sp_, UnigramSegmenter::Mode::kTokenizers)),
        word_unk_(v_.model_unk >= 0 ? v_.model_unk : unk_id_) {}

  std::vector<int64_t> encode(std::string_view input) const override {
    std::vector<int64_t> ids;
    encode_text(input, ids);
    ids.push_back(eos_id_);
    return ids;
  }

 private:
  std::unique_ptr<UnigramSegmenter> segmenter_;
  // tokenizer.json's unk_id (transformers 5's T5Tokenizer writes 2 whatever the spm
  // model's <unk> is), for the pieces the model does not have
  int64_t word_unk_;

  // One word of the pre-tokenizer ("▁" and what follows), segmented by the model
  // without its normaliser: the text is tokenizers' normalised text already.
  void encode_word(const std::string& word, std::vector<int64_t>& ids) const override {
    std::vector<std::string> pieces;
    segmenter_->encode_word(word, pieces);
    for (const std::string& p : pieces) {
      auto it = v_.ids.find(p);
      ids.push_back(it == v_.ids.end() ? word_unk_ : it->second);
    }
  }
};

}  // namespace

std::unique_ptr<Tokenizer> load_t5(const std::map<std::string, std::string>& files) {
  return std::make_unique<T5>(files);
}

}  // namespace text
