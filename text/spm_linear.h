// sentencepiece's Encode(text, &pieces) in time linear in the text. The library merges a
// run of unknown pieces by copying the growing piece once per character
// (PopulateSentencePieceText), so a long run of characters a model does not know took
// quadratic time: 7.9 s at 200k characters, 85 s at 600k. The same model with byte
// fallback switched on gives the same segmentation, its normaliser and search unchanged,
// but spells each unknown piece as byte pieces, which it does not merge; joining those
// runs back gives the library's pieces exactly, without its quadratic merging.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace text {

class LinearSpmEncoder {
 public:
  explicit LinearSpmEncoder(const sentencepiece::SentencePieceProcessor& sp);
  ~LinearSpmEncoder();
  // The pieces sp.Encode(text, &pieces) gives: a run of unknown characters is one piece.
  void encode(std::string_view text, std::vector<std::string>& pieces) const;
  // Whether the byte-fallback twin is in use (false: the model has byte fallback itself,
  // and the library never merges, or the twin did not load and the library is used as it is).
  bool linear() const { return twin_ != nullptr; }

 private:
  const sentencepiece::SentencePieceProcessor& sp_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> twin_;
  int first_byte_id_ = 0;  // the twin's <0x00>; its 256 byte pieces follow the model's own
};

}  // namespace text
