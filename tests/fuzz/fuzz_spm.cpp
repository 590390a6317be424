// libFuzzer target: a sentencepiece model (.spm / .model bytes) read by each tokenizer
// kind that takes one, which then encodes the text and decodes the ids (fuzz_text.h).
// The input is one byte choosing the kind (its value mod 4: Marian, M2M100, NLLB, T5),
// the text, a NUL byte, and the model. The files a kind needs besides the model are
// made from the model as the library reads it: vocab.json (every piece by its id, plus
// <unk> and </s>) for Marian and M2M100, tokenizer.json (a Unigram vocabulary of the
// pieces and their scores) for T5; NLLB numbers the pieces itself (fairseq's order).
// Loading, encoding and decoding must end in results or a text::Error, never a crash.
//
// libsentencepiece is not instrumented: a bad read inside it shows as a crash only
// when it leaves mapped memory. Our code around it is (text/spm_*.cpp, the kinds).
//
// Harness limits: the text is cut at kMaxText bytes (sentencepiece's encode of a long
// run of unknown characters is quadratic: issue 25, fixed on another branch), inputs
// over kMaxInput are skipped.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

#include "fuzz_memfile.h"
#include "fuzz_text.h"
#include "text/m2m100.h"
#include "text/marian.h"
#include "text/nllb.h"
#include "text/spm_files.h"
#include "text/t5.h"

namespace {

constexpr size_t kMaxInput = 1 << 16;
constexpr size_t kMaxText = 256;

enum Kind { kMarian, kM2M100, kNllb, kT5 };

// nlohmann's dump refuses invalid UTF-8, which a fuzzed piece may be: such bytes become
// U+FFFD (the piece is then unknown to the tokenizer, as a wrong vocab.json makes it).
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// vocab.json: piece -> id for every piece, then <unk> and </s> if the model lacks them.
std::string vocab_json(const sentencepiece::SentencePieceProcessor& sp) {
  nlohmann::json v = nlohmann::json::object();
  for (int i = 0; i < sp.GetPieceSize(); ++i) v.emplace(sp.IdToPiece(i), i);
  for (const char* t : {"<unk>", "</s>"}) v.emplace(t, int64_t(v.size()));
  return dump(v);
}

// tokenizer.json of a converted Unigram model: [piece, score] rows in id order.
std::string unigram_json(const sentencepiece::SentencePieceProcessor& sp) {
  nlohmann::json rows = nlohmann::json::array();
  std::set<std::string> pieces;
  for (int i = 0; i < sp.GetPieceSize(); ++i) {
    rows.push_back({sp.IdToPiece(i), sp.GetScore(i)});
    pieces.insert(sp.IdToPiece(i));
  }
  for (const char* t : {"<unk>", "</s>"})
    if (!pieces.count(t)) rows.push_back({t, 0.0});
  return dump({{"model", {{"type", "Unigram"}, {"vocab", rows}}}, {"added_tokens", nlohmann::json::array()}});
}

std::unique_ptr<text::Tokenizer> load(Kind kind, const std::string& model_path,
                                      const sentencepiece::SentencePieceProcessor& sp) {
  const std::string extra = kind == kT5 ? unigram_json(sp) : kind == kNllb ? std::string() : vocab_json(sp);
  fuzz::MemFile extra_file(reinterpret_cast<const uint8_t*>(extra.data()), extra.size());
  switch (kind) {
    case kMarian:
      return text::load_marian({{"source_spm", model_path}, {"target_spm", model_path}, {"vocab", extra_file.path()}});
    case kM2M100:
      return text::load_m2m100({{"spm", model_path}, {"vocab", extra_file.path()}}, {"en", "fr"});
    case kNllb:
      return text::load_nllb({{"spm", model_path}}, {"eng_Latn", "fra_Latn"});
    case kT5:
      return text::load_t5({{"spm", model_path}, {"tokenizer", extra_file.path()}});
  }
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > kMaxInput) return 0;
  const Kind kind = Kind(data[0] % 4);
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = in.find('\0');
  if (nul == std::string_view::npos) return 0;
  const std::string_view text = in.substr(0, std::min(nul, kMaxText));
  const std::string_view model = in.substr(nul + 1);
  fuzz::MemFile model_file(reinterpret_cast<const uint8_t*>(model.data()), model.size());
  std::unique_ptr<text::Tokenizer> tok;
  try {
    // The model as the library reads it, for the files made from it.
    const auto sp = text::load_spm(model_file.path(), "fuzz");
    tok = load(kind, model_file.path(), *sp);
  } catch (const text::Error& e) {
    fuzz::stopped("load", e);
    return 0;
  }
  fuzz::exercise(*tok, text);
  return 0;
}
