// tensorvm-run's text verbs (text in, text out), beside its function runner:
//   tokenize   one line of ids per input line
//   translate  encoder-decoder programs: generate, then decode with skip_special_tokens
//   complete   decoder-only programs: generate on the prompt, print the continuation
// They need the text library (text/); a build without it says so.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vm/vm.h"

namespace cli {

bool is_text_verb(const std::string& name);

struct TextVerbOptions {
  std::vector<std::string> lines;                  // from --text / --text-file, one input each
  std::vector<std::pair<std::string, vm::Value>> args;  // --arg values, parsed by generate's types
  vm::SessionOptions session;
  // --src-lang / --tgt-lang (M2M100, NLLB): the source language the text is encoded
  // with, and the target language generate is forced to begin with.
  std::string src_lang, tgt_lang;
};

// Runs `verb` on the program loaded from `dir`; prints one output line per input line.
int run_text_verb(const std::string& dir, const std::shared_ptr<const vm::Program>& program, const std::string& verb,
                  const TextVerbOptions& options);

// `transcribe --wav` of a Whisper program that carries its tokenizer: prints each row of
// `sequences` ([rows, n] ids) as a line of text, decoded with skip_special_tokens as
// WhisperTokenizer.decode does (timestamps dropped), and returns true. False, printing
// nothing, when the program has no tokenizer or this build has no text library.
bool print_as_text(const std::string& dir, const vm::Value& sequences);

// transcribe's --language / --task: Whisper's decoder prompt (<|startoftranscript|>
// <|fr|> <|translate|> <|notimestamps|>) built with the program's tokenizer, as
// WhisperForConditionalGeneration.generate builds it (text::Tokenizer::decoder_prompt).
std::vector<int64_t> whisper_prompt(const std::string& dir, const std::string& language, const std::string& task);

// transcribe's decoder_input_ids when no --decoder-ids are given: the prompt
// WhisperForConditionalGeneration.generate builds for --language / --task (either may be
// empty), [rows of audio, n]. Without a language, the model's lang_to_id present, each
// row's language is detected by the program's detect_language_audio (transformers'
// detect_language), run in `session`. None when neither is given and the program has no
// language table: the decoder then starts from decoder_start_token_id alone.
vm::Value transcribe_prompt(const std::string& dir, vm::Session& session, const vm::Value& audio,
                            const std::string& language, const std::string& task);

// The lines of --text (split at newlines) or of a --text-file (a trailing \r dropped).
std::vector<std::string> split_lines(const std::string& text);

}  // namespace cli
