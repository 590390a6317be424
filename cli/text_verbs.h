// The text verbs (text in, text out) of tensorvm-run and of a compiled program's command
// line (cli/main.h), beside their function runners:
//   tokenize   one line of ids per input line
//   translate  encoder-decoder programs: generate, then decode with skip_special_tokens
//   complete   decoder-only programs: generate on the prompt, print the continuation
// and Whisper's transcript printed as text, its prompt from --language / --task. Both command lines run them through
// ProgramRunner, one the interpreter's session, the other the compiled program's, so they
// print the same; `tensorvm run|replay` (pycompiler/cli_text.py) runs them too, through
// the binding pycompiler/bindings/cli.cpp, with a Print that writes to Python's
// sys.stdout. Part of tensorvm::cli; they need the text library (text/), and a build
// without it says so.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vm/session.h"
#include "core/value.h"

namespace cli {

// A program as the verbs see it, whichever way it runs.
struct ProgramRunner {
  struct Params {
    std::vector<std::string> names, types;
  };
  std::string dir;  // the program directory: meta.json and tokenizer/
  std::string meta_json;
  std::map<std::string, Params> functions;  // every function the program has, by name
  // Runs `function` with its parameters by name (left out: None), on one session kept
  // from call to call, emitting to `on_emit`.
  std::function<std::vector<vm::Value>(const std::string& function,
                                       const std::vector<std::pair<std::string, vm::Value>>& named,
                                       vm::EmitCallback on_emit)>
      run_named;
};

// --text, --text-file, --src-lang, --tgt-lang, --language and --task, as a command line
// gives them.
struct TextOptions {
  bool given = false;  // --text or --text-file
  std::vector<std::string> lines;  // one input each
  // M2M100, NLLB: the source language the text is encoded with, and the target language
  // generate is forced to begin with.
  std::string src_lang, tgt_lang;
  // Whisper's transcribe: the decoder prompt's language and task (in place of --decoder-ids).
  std::string language, task;
  // transcribe --timestamps [--format text|srt|vtt|json]: return_timestamps, printed as segments.
  bool timestamps = false;
  std::string format;
  // Takes `option` when it is one of these, its value from next(); false otherwise.
  bool parse(const std::string& option, const std::function<std::string()>& next);
};

// Where the verbs print: each call whole lines, each ending in '\n'; one call per input
// line's output, so a sink that flushes shows each line as it comes.
using Print = std::function<void(std::string_view)>;
// The command lines' Print: C stdout, flushed after each call.
Print stdout_print();

// True when `verb` is tokenize, translate or complete and `program` has no function of
// that name (a function of the program's own comes first).
bool is_text_verb(const ProgramRunner& program, const std::string& verb);

// Runs text verb `verb` with the text options and `args` (--arg NAME=VALUE, parsed by
// generate's parameter types); prints to `print` one output line per input line (several
// for num_return_sequences). `others`: the command line gave an option that does not go
// with text (--ids, --stream, ...), an error.
int run_text_verb(const ProgramRunner& program, const std::string& verb, const TextOptions& text,
                  const std::map<std::string, std::string>& args, bool others, const Print& print);

// For a function run rather than a text verb: fails when --text, --text-file, --src-lang
// or --tgt-lang was given, or --language / --task with a function other than Whisper's
// transcribe (taking audio and decoder_input_ids) or with --decoder-ids.
void check_text_options(const ProgramRunner& program, const TextOptions& text, const std::string& function,
                        const std::string& decoder_ids);

// transcribe's decoder_input_ids in `inputs` (in parameter order) when none were given:
// the prompt WhisperForConditionalGeneration.generate builds for --language / --task
// (either may be empty) with the program's tokenizer, [rows of audio, n]. Without a
// language, the model's lang_to_id present, each row's language is detected by the
// program's detect_language_audio (transformers' detect_language). Left None when
// neither is given and the program has no language table: the decoder then starts from
// decoder_start_token_id alone. Other functions are left alone.
void fill_transcribe_prompt(const ProgramRunner& program, const TextOptions& text, const std::string& function,
                            std::vector<vm::Value>& inputs);

// fill_transcribe_prompt's prompt, [rows of audio, n], for `languages`: one for every row
// or one per row ("" for none: detected where the model has lang_to_id), and `task`.
// Program.transcribe (pycompiler/program.py) builds its prompt with it too, through
// _C.transcribe_prompt. Null when no language or task is given and the program has no
// language table. With `features` (long-form: the first window of the whole recording's
// features, as transformers detects it), the language is detected by detect_language on them
// rather than by detect_language_audio on `audio`.
vm::Value transcribe_prompt(const ProgramRunner& program, const vm::Value& audio,
                            const std::vector<std::string>& languages, const std::string& task,
                            const vm::Value& features = vm::Value::none());

// `transcribe --wav` of a Whisper program that carries its tokenizer: prints to `print`
// each row of `sequences` ([rows, n] ids) as a line of text, decoded with
// skip_special_tokens as WhisperTokenizer.decode does (timestamps dropped), and returns
// true. False, printing nothing, when the program has no tokenizer or this build has no
// text library.
bool print_as_text(const std::string& dir, const vm::Value& sequences, const Print& print);

// A segment's text: decoded as print_as_text decodes (skip_special_tokens), or its token ids
// when the program has no tokenizer or the build no text library.
std::function<std::string(const std::vector<int64_t>&)> segment_decoder(const std::string& dir);

// `transcribe --timestamps`: prints each row of `sequences` as its segments
// (cli/whisper_segments.h) in `format` (text when empty), each segment's text decoded as
// print_as_text decodes (its token ids when the program has no tokenizer or the build no
// text library). The timestamp tokens and the window come from meta.json.
void print_segments(const ProgramRunner& program, const vm::Value& sequences, const std::string& format,
                    const Print& print);

}  // namespace cli
