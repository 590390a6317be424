// text/spm_linear.h: sentencepiece's Encode without its quadratic merging of unknown
// runs gives the library's pieces exactly, on models written here (unigram and BPE,
// user-defined symbols, self-test samples, a model with byte fallback of its own).
#include <catch2/catch.hpp>

#ifdef TENSORVM_HAVE_TEXT
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <sentencepiece_processor.h>

#include "text/protobuf_wire.h"
#include "text/spm_linear.h"

namespace {

enum { kUnigram = 1, kBpe = 2 };
enum { kNormal = 1, kUnknown = 2, kUserDefined = 4, kByte = 6 };

using Pieces = std::vector<std::tuple<std::string, float, int>>;

// A ModelProto: the pieces, trainer_spec.model_type (and byte_fallback), a normalizer
// without rules (whitespace handling only), and optionally one self-test sample.
std::string model_proto(int model_type, Pieces pieces, bool byte_fallback = false, const char* self_test = nullptr) {
  if (byte_fallback)
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      pieces.emplace_back(name, 0.0f, kByte);
    }
  std::string out;
  for (const auto& [piece, score, type] : pieces) {
    std::string m;
    text::put_bytes(m, 1, piece);
    text::put_key(m, 2, 5);
    char bits[4];
    std::memcpy(bits, &score, 4);
    m.append(bits, 4);
    text::put_key(m, 3, 0);
    text::put_varint(m, uint64_t(type));
    text::put_bytes(out, 1, m);
  }
  std::string spec;
  text::put_key(spec, 3, 0);
  text::put_varint(spec, uint64_t(model_type));
  if (byte_fallback) {
    text::put_key(spec, 35, 0);
    text::put_varint(spec, 1);
  }
  text::put_bytes(out, 2, spec);
  std::string normalizer;
  text::put_bytes(normalizer, 1, "identity");
  text::put_bytes(out, 3, normalizer);
  if (self_test) {
    std::string sample, samples;
    text::put_bytes(sample, 1, self_test);
    text::put_bytes(sample, 2, "\u2581 \u6771");  // the model's own pieces: "▁" and 東 unknown
    text::put_bytes(samples, 1, sample);
    text::put_bytes(out, 4, samples);
  }
  return out;
}

const Pieces kUnigramPieces = {{"<unk>", 0, kUnknown}, {"\u2581", -2, kNormal}, {"a", -3, kNormal},
                               {"b", -3, kNormal},     {"ab", -2.5, kNormal},   {"\u2581ab", -2, kNormal},
                               {"<sep>", 0, kUserDefined}};
const Pieces kBpePieces = {{"<unk>", 0, kUnknown}, {"\u2581a", -1, kNormal}, {"ab", -2, kNormal},
                           {"\u2581ab", -3, kNormal}, {"\u2581", -4, kNormal}, {"a", -5, kNormal},
                           {"b", -6, kNormal},        {"<sep>", 0, kUserDefined}};

std::vector<std::string> inputs() {
  std::string long_run;
  for (int i = 0; i < 2000; ++i) long_run += "\u6771\u4eac";  // 東京, unknown to both models
  return {"", "a", "ab ab", "\u6771\u4eac ab", "ab\u6771\u4eacab", "  ab   a  ", "ab<sep>ab", "\u6771<sep>\u4eac",
          "<sep>", "a\tb\nc", "<0xE6>\u6771", "\xff\xfe ab", "\u00e9\u0301 b", long_run + " ab " + long_run + "a", "b\u6771 \u4eac b"};
}

void check_same_pieces(const std::string& proto, bool linear) {
  sentencepiece::SentencePieceProcessor sp;
  const auto status = sp.LoadFromSerializedProto(proto);
  REQUIRE(status.ok());
  const text::LinearSpmEncoder enc(sp);
  CHECK(enc.linear() == linear);
  std::vector<std::string> want, got;
  for (const std::string& s : inputs()) {
    REQUIRE(sp.Encode(s, &want).ok());
    enc.encode(s, got);
    CHECK(got == want);
  }
}

}  // namespace

TEST_CASE("spm_linear: the pieces of sentencepiece's Encode, unknown runs merged as it merges them", "[text]") {
  SECTION("unigram") { check_same_pieces(model_proto(kUnigram, kUnigramPieces), true); }
  SECTION("BPE") { check_same_pieces(model_proto(kBpe, kBpePieces), true); }
  SECTION("self-test samples, which the byte pieces would fail, are dropped") {
    check_same_pieces(model_proto(kUnigram, kUnigramPieces, false, "\u6771"), true);
  }
  SECTION("a model with byte fallback never merges: the library is used as it is") {
    check_same_pieces(model_proto(kUnigram, kUnigramPieces, true), false);
  }
  SECTION("a piece of the model spelled as a byte piece is still told apart from one (by id)") {
    Pieces pieces = kUnigramPieces;
    pieces.emplace_back("<0xE6>", -3, kNormal);
    check_same_pieces(model_proto(kUnigram, pieces), true);
  }
}

#endif  // TENSORVM_HAVE_TEXT
