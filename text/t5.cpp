#include "text/t5.h"

#include "text/converted_spm.h"
#include "text/spm_unigram.h"

namespace text {
namespace {

class T5 final : public ConvertedSpm {
 public:
  explicit T5(const std::map<std::string, std::string>& files)
      : ConvertedSpm(files, "t5 tokenizer", "t5-spm"),
        segmenter_(std::make_unique<UnigramSegmenter>(*sp_, UnigramSegmenter::Mode::kTokenizers)) {}

  std::vector<int64_t> encode(std::string_view input) const override {
    std::vector<int64_t> ids;
    encode_text(input, ids);
    ids.push_back(eos_id_);
    return ids;
  }

 private:
  std::unique_ptr<UnigramSegmenter> segmenter_;

  void encode_chunk(const std::string& chunk, std::vector<int64_t>& ids) const override {
    std::vector<std::string> pieces;
    segmenter_->encode(chunk, pieces);
    for (const std::string& p : pieces) {
      auto it = v_.ids.find(p);
      ids.push_back(it == v_.ids.end() ? unk_id_ : it->second);
    }
  }
};

}  // namespace

std::unique_ptr<Tokenizer> load_t5(const std::map<std::string, std::string>& files) {
  return std::make_unique<T5>(files);
}

}  // namespace text
