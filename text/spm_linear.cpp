#include "text/spm_linear.h"

#include <sentencepiece_processor.h>

#include <fmt/format.h>

#include "text/protobuf_wire.h"
#include "text/util.h"

namespace text {
namespace {

// ModelProto fields: pieces, trainer_spec, self_test_data; TrainerSpec.byte_fallback;
// SentencePiece: piece, score, type (BYTE).
constexpr uint32_t kPieces = 1, kTrainerSpec = 2, kSelfTest = 4, kByteFallback = 35;
constexpr uint32_t kPiece = 1, kScore = 2, kType = 3, kByteType = 6;

bool has_byte_fallback(std::string_view trainer_spec) {
  Wire w(trainer_spec);
  uint32_t f, t;
  bool on = false;
  while (w.next(f, t)) {
    if (f == kByteFallback && t == 0) on = w.varint() != 0;
    else w.skip(t);
  }
  return on;
}

// The model with byte fallback on and its 256 byte pieces appended (ids from `count`, the
// number of the model's own pieces, so those keep theirs); "" when the model has byte
// fallback already. Its self-test samples are dropped: they hold the model's own pieces.
std::string byte_fallback_twin(const std::string& proto, int& count) {
  std::string out;
  Wire w(proto);
  count = 0;
  for (;;) {
    const size_t start = w.pos();
    uint32_t f, t;
    if (!w.next(f, t)) break;
    const size_t body = w.pos();
    w.skip(t);
    if (f == kSelfTest) continue;
    if (f == kPieces) ++count;
    if (f == kTrainerSpec && t == 2) {
      Wire spec(std::string_view(proto).substr(body));
      if (has_byte_fallback(spec.bytes())) return "";
    }
    out.append(proto, start, w.pos() - start);
  }
  for (int b = 0; b < 256; ++b) {
    std::string piece;
    put_bytes(piece, kPiece, fmt::format("<0x{:02X}>", b));
    put_key(piece, kScore, 5);
    piece.append(4, '\0');  // score 0.0f: byte pieces are not searched, only spelled
    put_key(piece, kType, 0);
    put_varint(piece, kByteType);
    put_bytes(out, kPieces, piece);
  }
  // A second trainer_spec merges into the first: only byte_fallback changes.
  std::string spec;
  put_key(spec, kByteFallback, 0);
  put_varint(spec, 1);
  put_bytes(out, kTrainerSpec, spec);
  return out;
}

}  // namespace

LinearSpmEncoder::LinearSpmEncoder(const sentencepiece::SentencePieceProcessor& sp) : sp_(sp) {
  const std::string twin = byte_fallback_twin(sp.serialized_model_proto(), first_byte_id_);
  if (twin.empty()) return;
  auto p = std::make_unique<sentencepiece::SentencePieceProcessor>();
  // Should the library ever refuse the twin, the model keeps its own (quadratic) Encode.
  if (p->LoadFromSerializedProto(twin).ok()) twin_ = std::move(p);
}

LinearSpmEncoder::~LinearSpmEncoder() = default;

void LinearSpmEncoder::encode(std::string_view text, std::vector<std::string>& pieces) const {
  pieces.clear();
  if (!twin_) {
    const auto status = sp_.Encode(text, &pieces);
    if (!status.ok()) fail("sentencepiece: encode: {}", status.ToString());
    return;
  }
  std::vector<int> ids;
  const auto status = twin_->Encode(text, &ids);
  if (!status.ok()) fail("sentencepiece: encode: {}", status.ToString());
  // By id, not by spelling: a piece of the model may itself be spelled "<0xE6>".
  bool in_unknown = false;
  const int pieces_in_model = sp_.GetPieceSize();
  for (const int id : ids) {
    const bool byte = id >= first_byte_id_;
    // Below first_byte_id_ the twin's ids should be the model's own, but a fuzzed model
    // gave one the model lacks (tests/fuzz/findings.md): IdToPiece's protobuf CHECK would
    // end the process, so it is this tokenizer's error instead.
    if (!byte && (id < 0 || id >= pieces_in_model))
      fail("sentencepiece: encode: piece id {} is not in the model ({} pieces)", id, pieces_in_model);
    if (!byte) pieces.push_back(sp_.IdToPiece(id));
    else if (in_unknown) pieces.back() += char(id - first_byte_id_);
    else pieces.emplace_back(1, char(id - first_byte_id_));
    in_unknown = byte;
  }
}

}  // namespace text
