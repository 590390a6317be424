#include "text/whisper.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "text/byte_bpe.h"
#include "text/util.h"

namespace text {
namespace {

class Whisper final : public Tokenizer {
 public:
  explicit Whisper(const std::map<std::string, std::string>& files) : bpe_(load_byte_bpe(files)) {
    const std::string& path = files.at("tokenizer");
    const auto j = nlohmann::json::parse(read_text_file(path), nullptr, false);
    if (j.is_object() && j.contains("added_tokens") && j["added_tokens"].is_array())
      for (const auto& t : j["added_tokens"]) {
        if (!t.is_object() || !t.contains("content") || !t.contains("id")) continue;
        if (t["content"] == "<|startofprev|>") start_of_prev_ = t["id"].get<int64_t>();
        if (t["content"] == "<|startoftranscript|>") start_of_transcript_ = t["id"].get<int64_t>();
      }
  }

  std::vector<int64_t> encode(std::string_view input) const override { return bpe_->encode(input); }

  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override {
    // _strip_prompt: a sequence opening with <|startofprev|> starts at <|startoftranscript|>
    // (or is empty without one).
    if (skip_special_tokens && !ids.empty() && ids[0] == start_of_prev_) {
      auto sot = std::find(ids.begin(), ids.end(), start_of_transcript_);
      return sot == ids.end() ? std::string() : drop_timestamps(bpe_->decode({sot, ids.end()}, true));
    }
    return drop_timestamps(bpe_->decode(ids, skip_special_tokens));
  }

  const std::string& kind() const override { return kind_; }

 private:
  std::string kind_ = "whisper-bpe";
  std::unique_ptr<Tokenizer> bpe_;
  int64_t start_of_prev_ = -1, start_of_transcript_ = -1;

  // transformers' re.sub(r"<\|(\d+\.\d+)\|>", "", text), on the decoded text.
  static std::string drop_timestamps(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, 2, "<|") == 0) {
        size_t k = i + 2, int_digits = 0, frac_digits = 0;
        while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k, ++int_digits;
        if (int_digits && k < text.size() && text[k] == '.') {
          ++k;
          while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k, ++frac_digits;
          if (frac_digits && text.compare(k, 2, "|>") == 0) {
            i = k + 2;
            continue;
          }
        }
      }
      out += text[i++];
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tokenizer> load_whisper(const std::map<std::string, std::string>& files) {
  if (!files.count("tokenizer")) fail("whisper tokenizer: meta.json names no 'tokenizer' file (tokenizer.json)");
  return std::make_unique<Whisper>(files);
}

}  // namespace text
