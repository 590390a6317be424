// The sentencepiece models transformers 5 runs as converted tokenizers (NLLB, T5): the
// checkpoint's tokenizer.json numbers the pieces and holds the added tokens, and its
// Metaspace decoder turns pieces back into text. The .spm model still segments (text/nllb.cpp,
// text/t5.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <sentencepiece_processor.h>

#include <nlohmann/json.hpp>

#include "text/added_tokens.h"
#include "text/converted_steps.h"
#include "text/tokenizer.h"

namespace text {

struct ConvertedVocab {
  std::unordered_map<std::string, int64_t> ids;     // piece -> id (model.vocab: an object or [piece, score] rows)
  std::unordered_map<int64_t, std::string> pieces;  // id -> piece
  AddedTokens added;
  bool fuse_unk = false;
  bool bpe = false;  // model.type BPE (NLLB) rather than Unigram (T5)
  int64_t model_unk = -1;  // the model's own unk (Unigram's unk_id, BPE's unk_token), -1 if none
  // The id of `token` (an added token or a piece); Error naming `who` and `what` when absent.
  int64_t id_of(const std::string& token, const char* what, std::string_view who) const;
};

ConvertedVocab load_converted_vocab(const nlohmann::json& tj, const std::string& path, std::string_view who);

// tokenizers' decode with a Metaspace decoder: ids it does not know dropped, special
// tokens dropped when skipping, "▁" made a space, the first token's leading space removed.
std::string metaspace_decode(const ConvertedVocab& vocab, const std::vector<int64_t>& ids, bool skip_special_tokens);

// What NLLB's and T5's tokenizers share: files spm, tokenizer (tokenizer.json) and
// config; added tokens found first; the Metaspace decode. A kind says how a stretch of
// text between added tokens becomes ids, and what goes around them.
class ConvertedSpm : public Tokenizer {
 public:
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override;
  const std::string& kind() const override { return kind_; }

 protected:
  // Numbers the pieces without a tokenizer.json (NLLB's fairseq order), from the spm
  // model and tokenizer_config.json.
  using VocabWithoutJson =
      std::function<ConvertedVocab(const sentencepiece::SentencePieceProcessor&, const nlohmann::json& config)>;
  // `without_json`: used when `files` has no tokenizer.json (else one is required).
  ConvertedSpm(const std::map<std::string, std::string>& files, std::string who, std::string kind,
               const VocabWithoutJson& without_json = nullptr);
  // `input`'s ids (after checking it is UTF-8), appended to `ids`: added tokens, and
  // between them the words of tokenizer.json's normalizer and pre-tokenizer (without
  // tokenizer.json, the steps transformers' converter would write), each to encode_word.
  void encode_text(std::string_view input, std::vector<int64_t>& ids) const;
  virtual void encode_word(const std::string& word, std::vector<int64_t>& ids) const = 0;

  std::string who_, kind_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  // The normalizer and pre-tokenizer, and the model without its normaliser to segment the words.
  std::optional<ConvertedSteps> steps_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> raw_sp_;
  ConvertedVocab v_;
  nlohmann::json config_;  // tokenizer_config.json, {} without one
  int64_t unk_id_ = 0, eos_id_ = 0;
  bool clean_up_spaces_ = false;  // tokenizer_config.json's clean_up_tokenization_spaces
};

}  // namespace text
