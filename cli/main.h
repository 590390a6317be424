// The command line of tensorvm-run (cli/tensorvm_run.cpp: the interpreter) and of a
// compiled program's NAME-run (`tensorvm compile` writes NAME_run.cpp from
// pycompiler/aot/templates/program_run.cpp): one main, one usage text, over a
// ProgramSource that says how the program is loaded and run.
//   NAME PROGRAM FUNCTION [--inputs in.npz|in.safetensors] [--arg NAME=VALUE]...
//        [--ids "1 2 3; 4 5"] [--decoder-ids "9 4; 9 7"] [--wav FILE] [--outputs out.npz|out.safetensors]
//        [--threads N] [--time] [--stream] [--max-instructions N] [--profile] [--trace out.json]
//        [--language LANG] [--task TASK]
//   NAME PROGRAM tokenize|translate|complete --text "..." | --text-file F [--arg NAME=VALUE]...
//        [--src-lang LANG] [--tgt-lang LANG] [--threads N] [--max-instructions N]
//   NAME PROGRAM verify [--threads N]   (where the source can: the interpreter)
// Each parameter takes, in this order: --ids (a parameter named input_ids: int64
// [batch, len], ';' between rows, rows padded with the program's pad id (on the left
// for a decoder-only program, as transformers pads prompts), and an attention_mask
// built to match when the function takes one), --decoder-ids (decoder_input_ids: the
// decoder prompt, rows of one length), --wav (a parameter named audio: f32 [1,
// samples] from a 16 kHz mono WAV), --arg (parsed by the declared type), the array
// named after it in --inputs, or the array arr_<position>; options left out keep the
// program's default (cli/run_io.h). Outputs are written as arr_0, arr_1, ... (scalars
// as 0-d arrays, a None output left out). --stream prints the tokens a generate
// program emits as they come, one line per step: "stream: " then each row's new ids,
// rows separated by "; ". --profile prints the profiler's tables after the outputs
// (docs/tools.md); --trace also writes the run as a Chrome trace. --language fr and
// --task translate build Whisper's decoder prompt with the program's tokenizer in
// place of --decoder-ids; without --language the program detects it
// (detect_language_audio), as transformers' generate does. `transcribe --wav` prints
// the transcript when the program carries its tokenizer. The text verbs are
// cli/text_verbs.h; verify is cli/verify.h.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/run_io.h"
#include "cli/text_verbs.h"
#include "vm/aot.h"
#include "vm/program.h"
#include "vm/session.h"

namespace cli {

struct ProgramSource {
  // Runs a function of the program on one session.
  using Run = std::function<std::vector<vm::Value>(const std::string& function, std::vector<vm::Value> inputs,
                                                   vm::EmitCallback on_emit)>;
  // The program of one directory.
  struct Loaded {
    std::string label;  // names the program in errors ("no function 'f' in LABEL")
    std::string meta_json;
    std::vector<vm::aot::Signature> functions;
    // A session with `options` and `hook` installed (a Profiler for --profile, else null).
    std::function<Run(const vm::SessionOptions& options, vm::Hook* hook)> open;
    // PROGRAM verify: reruns the program's bundle (cli/verify.h); null where the source
    // cannot (a compiled program).
    std::function<int(const vm::SessionOptions& options)> verify;
  };
  std::string name;  // the command: tensorvm-run, NAME-run (usage and errors)
  bool verifies = false;  // Loaded::verify is set: the usage lists verify
  std::function<Loaded(const std::string& dir)> load;
};

// The program of directory `dir` as the interpreter runs it: tensorvm-run's source, and
// what the Python binding (pycompiler/bindings/cli.cpp) builds `tensorvm run`'s inputs with.
ProgramSource::Loaded interpreted(const std::string& dir, std::shared_ptr<const vm::Program> program);

// The text verbs' view of a loaded program: a session opened at its first run, then kept.
ProgramRunner text_runner(std::shared_ptr<const ProgramSource::Loaded> program, const std::string& dir,
                          const vm::SessionOptions& options);

// The inputs of a run of `function` (parameter order) from the command line's options:
// build_inputs (cli/run_io.h), then Whisper's decoder prompt from --language / --task
// (fill_transcribe_prompt), after check_text_options refused what does not go with a run.
std::vector<vm::Value> function_inputs(const ProgramRunner& program, const TextOptions& text,
                                       const std::string& function, RunRequest& request);

// Parses argv (cli/command_line.h), runs what it asks and returns the exit status:
// 0, 1 on an error (one line on stderr), 2 on a usage error.
int run_main(int argc, char** argv, const ProgramSource& source);

}  // namespace cli
