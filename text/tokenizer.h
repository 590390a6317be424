// tensorvm::text: text in and text out beside the VM. A program directory may carry
// its tokenizer's files (meta.json's "tokenizer" entry names the kind and the files);
// load_tokenizer reads them. The core runtime (vm/, ops/, ir/) does not depend on this
// library: an app that only runs token ids never links sentencepiece or PCRE2.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace text {

// Everything the text library reports: a missing or bad tokenizer, invalid UTF-8, an
// id outside the vocabulary. The message names the function and the file or input.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// decoder_prompt's slot for the language to detect.
constexpr int64_t kDetectLanguage = -1;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // The ids transformers' tokenizer gives for `text` (special tokens added as it adds
  // them, e.g. Marian's closing </s>). `text` must be valid UTF-8.
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  // encode with the source language `src_lang` (M2M100's "fr", NLLB's "fra_Latn") in
  // place of the one the program was imported with; Error for an unknown language or a
  // kind that has no source language.
  virtual std::vector<int64_t> encode_from(std::string_view text, std::string_view src_lang) const;
  // The id of language `lang`'s token: the forced_bos_token_id that makes generate write
  // that language. Error for an unknown language or a kind without languages.
  virtual int64_t language_id(std::string_view lang) const;
  // Whisper's decoder prompt for `language` ("fr", "french" or "<|fr|>") and `task`
  // ("transcribe", "translate"; empty: transcribe), as WhisperForConditionalGeneration.generate
  // builds it: <|startoftranscript|> <|fr|> <|translate|> <|notimestamps|>. An empty
  // language leaves kDetectLanguage where generate puts the language it detects (the
  // program's detect_language gives it). Error for an unknown language or task, or a kind
  // without one.
  virtual std::vector<int64_t> decoder_prompt(std::string_view language, std::string_view task) const;
  // The text transformers' decode(ids, skip_special_tokens=...) gives.
  virtual std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = true) const = 0;
  // meta.json's kind: "marian-spm", "m2m100-spm", "nllb-spm", "byte-level-bpe",
  // "whisper-bpe", "t5-spm" or "sentencepiece".
  virtual const std::string& kind() const = 0;
};

// The tokenizer of the program directory `dir`; Error when it has none (a program
// imported from a checkpoint without tokenizer files) or its files are bad.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);

// True when meta.json of `dir` names a tokenizer (the files are not read).
bool has_tokenizer(const std::string& dir);

// Throws Error("<what>: ... not valid UTF-8 at byte N") unless `s` is valid UTF-8
// (no overlong forms, surrogates or code points past U+10FFFF).
void check_utf8(std::string_view s, std::string_view what);

}  // namespace text
