// The unigram segmentation of a sentencepiece model, computed here rather than by
// libsentencepiece's Encode: Debian's library (0.1.97) and the pip wheel transformers
// uses (0.2.x) break exact score ties between segmentations apart ("..." as ". .." or
// ".. ."), and we must give transformers' ids. The library still does the hard part,
// the normalisation; this redoes only the Viterbi search over its normalised text,
// with single-precision scores as the wheel does (tests/python/test_text_marian.py).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/spm_linear.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace text {

class UnigramSegmenter {
 public:
  // kSentencepiece: as the sentencepiece wheel (one search over the whole text, single
  // precision). kTokenizers: as the tokenizers library runs a converted model (T5): one
  // search per word ("▁" starts a word), in double precision; the two break near-ties
  // differently (". .." or ".. .").
  enum class Mode { kSentencepiece, kTokenizers };
  explicit UnigramSegmenter(const sentencepiece::SentencePieceProcessor& sp, Mode mode = Mode::kSentencepiece);
  // False for a BPE, word or char model (encode then gives the library's Encode, in linear time).
  bool usable() const { return usable_; }
  // The pieces of `text`, as sentencepiece's Encode(text) gives them.
  void encode(std::string_view text, std::vector<std::string>& pieces) const;
  // The pieces of one word already normalised elsewhere (text/converted_steps.h), by
  // tokenizers' rules (kTokenizers); unknown runs keep their text.
  void encode_word(std::string_view word, std::vector<std::string>& pieces) const;

 private:
  const sentencepiece::SentencePieceProcessor& sp_;
  Mode mode_;
  LinearSpmEncoder linear_;  // the library's pieces, which give the normalised text
  template <typename Score>
  void search(std::string_view norm, std::vector<std::string>& out, bool bytes) const;
  bool is_byte_piece(const std::string& piece) const;
  static char byte_of(const std::string& piece);
  struct Piece {
    int id;
    float score;
    bool user_defined;
  };
  std::vector<std::string> piece_text_;                  // owns the keys of pieces_
  std::unordered_map<std::string_view, Piece> pieces_;  // the pieces the search may use
  size_t max_len_ = 0;
  float min_score_ = 0, max_score_ = 0;
  int unk_id_ = 0;
  bool usable_ = false, byte_fallback_ = false;
};

// sentencepiece's Decode of `pieces`; a failure is an error.
std::string decode_pieces(const sentencepiece::SentencePieceProcessor& sp, const std::vector<std::string>& pieces);

}  // namespace text
