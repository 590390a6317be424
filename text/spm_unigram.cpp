#include "text/spm_unigram.h"

#include <cfloat>
#include <cstdint>
#include <cstring>

#include <sentencepiece_processor.h>

#include "text/protobuf_wire.h"
#include "text/util.h"

namespace text {
namespace {

enum PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

size_t utf8_len(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  return std::min(n, s.size() - i);
}

}  // namespace

UnigramSegmenter::UnigramSegmenter(const sentencepiece::SentencePieceProcessor& sp, Mode mode)
    : sp_(sp), mode_(mode), linear_(sp) {
  const std::string proto = sp.serialized_model_proto();
  Wire w(proto);
  uint32_t field, type;
  int id = 0, model_type = 1;  // UNIGRAM when the trainer spec does not say
  min_score_ = FLT_MAX, max_score_ = FLT_MIN;
  struct Entry {
    std::string piece;
    Piece p;
  };
  std::vector<Entry> entries;
  while (w.next(field, type)) {
    if (field == 1 && type == 2) {  // ModelProto.pieces
      Wire p(w.bytes());
      std::string piece;
      float score = 0;
      int kind = kNormal;
      uint32_t f, t;
      while (p.next(f, t)) {
        if (f == 1 && t == 2) piece = std::string(p.bytes());
        else if (f == 2 && t == 5) score = p.fixed32();
        else if (f == 3 && t == 0) kind = int(p.varint());
        else p.skip(t);
      }
      if (kind == kNormal) min_score_ = std::min(min_score_, score), max_score_ = std::max(max_score_, score);
      if (kind == kNormal || kind == kUserDefined || kind == kUnused) {
        if (kind != kUnused) {
          max_len_ = std::max(max_len_, piece.size());
          entries.push_back({piece, {id, score, kind == kUserDefined}});
        }
      }
      ++id;
    } else if (field == 2 && type == 2) {  // ModelProto.trainer_spec: model_type is field 3
      Wire ts(w.bytes());
      uint32_t f, t;
      while (ts.next(f, t)) {
        if (f == 3 && t == 0) model_type = int(ts.varint());
        else if (f == 35 && t == 0) byte_fallback_ = ts.varint() != 0;  // TrainerSpec.byte_fallback
        else ts.skip(t);
      }
    } else {
      w.skip(type);
    }
  }
  piece_text_.reserve(entries.size());  // no reallocation: pieces_ keys point into it
  for (Entry& e : entries) {
    piece_text_.push_back(std::move(e.piece));
    pieces_.emplace(std::string_view(piece_text_.back()), e.p);  // the first of equal pieces wins
  }
  unk_id_ = sp.unk_id();
  usable_ = model_type == 1 && !pieces_.empty();
}

void UnigramSegmenter::encode(std::string_view text, std::vector<std::string>& out) const {
  out.clear();
  if (!usable_) return linear_.encode(text, out);
  // The normalised text: the library's own pieces, joined (a byte piece, which byte
  // fallback gives for an unknown character, back to its byte: no text matches one).
  linear_.encode(text, out);
  std::string norm;
  for (const std::string& p : out) norm += byte_fallback_ && is_byte_piece(p) ? std::string(1, byte_of(p)) : p;
  out.clear();
  if (norm.empty()) return;
  if (mode_ == Mode::kSentencepiece) return search<float>(norm, out, byte_fallback_);
  // Each word ("▁" and what follows up to the next "▁") on its own, as tokenizers'
  // Metaspace pre-tokenizer splits the text.
  static constexpr std::string_view kSpace = "\u2581";
  for (size_t start = 0; start < norm.size();) {
    size_t end = norm.find(kSpace, start + (norm.compare(start, kSpace.size(), kSpace) == 0 ? kSpace.size() : 1));
    if (end == std::string::npos) end = norm.size();
    std::vector<std::string> word;
    search<double>(std::string_view(norm).substr(start, end - start), word, false);
    for (std::string& p : word) out.push_back(std::move(p));
    start = end;
  }
}

// Viterbi, as sentencepiece's EncodeOptimized: a tie keeps the piece that starts first.
bool UnigramSegmenter::is_byte_piece(const std::string& piece) const {
  return piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && sp_.IsByte(sp_.PieceToId(piece));
}

char UnigramSegmenter::byte_of(const std::string& piece) { return char(std::stoi(piece.substr(3, 2), nullptr, 16)); }

template <typename Score>
void UnigramSegmenter::search(std::string_view norm, std::vector<std::string>& out, bool bytes) const {
  struct Best {
    Score score = 0;
    int start = -1, id = -1;
  };
  const size_t n = norm.size();
  std::vector<Best> best(n + 1);
  const Score unk_score = Score(min_score_) - Score(10);
  const std::string_view text_view(norm);
  for (size_t start = 0; start < n;) {
    const Score till = best[start].score;
    const size_t mblen = utf8_len(norm, start);
    bool single = false;
    for (size_t len = 1; len <= max_len_ && start + len <= n; ++len) {
      auto it = pieces_.find(text_view.substr(start, len));
      if (it == pieces_.end()) continue;
      const Score score = it->second.user_defined ? Score(double(len) * max_score_ - 0.1) : Score(it->second.score);
      const Score cand = score + till;
      Best& b = best[start + len];
      if (b.start == -1 || cand > b.score) b = {cand, int(start), it->second.id};
      if (len == mblen) single = true;
    }
    if (!single) {
      const Score cand = unk_score + till;
      Best& b = best[start + mblen];
      if (b.start == -1 || cand > b.score) b = {cand, int(start), unk_id_};
    }
    start += mblen;
  }
  std::vector<std::pair<size_t, size_t>> spans;  // [start, end) of each piece, last first
  std::vector<int> ids;
  for (size_t end = n; end > 0;) {
    const Best& b = best[end];
    if (b.start < 0) fail("sentencepiece: no segmentation of the text");
    spans.emplace_back(size_t(b.start), end);
    ids.push_back(b.id);
    end = size_t(b.start);
  }
  // Neighbouring unknown characters make one unknown piece, as sentencepiece's do; with
  // `bytes` (byte fallback) each of its bytes is then a <0xXX> piece instead.
  const size_t first = out.size();
  for (size_t k = spans.size(); k-- > 0;) {
    const bool unk = ids[k] == unk_id_;
    const std::string surface(norm.substr(spans[k].first, spans[k].second - spans[k].first));
    if (unk && bytes) {
      for (unsigned char b : surface) out.push_back(fmt::format("<0x{:02X}>", b));
      continue;
    }
    if (unk && out.size() > first && k + 1 < spans.size() && ids[k + 1] == unk_id_) {
      out.back() += surface;
      continue;
    }
    out.push_back(unk ? surface : sp_.IdToPiece(ids[k]));
  }
}

void UnigramSegmenter::encode_word(std::string_view word, std::vector<std::string>& out) const {
  out.clear();
  if (!usable_) {
    linear_.encode(word, out);  // the library's Encode, without its quadratic unknown runs
  } else if (!word.empty()) {
    search<double>(word, out, false);
  }
}

std::string decode_pieces(const sentencepiece::SentencePieceProcessor& sp, const std::vector<std::string>& pieces) {
  std::string text;
  const auto status = sp.Decode(pieces, &text);
  if (!status.ok()) fail("sentencepiece: decode: {}", status.ToString());
  return text;
}

}  // namespace text
