// tensorvm-run: run a function of a program from the command line, with no Python.
//   tensorvm-run PROGRAM FUNCTION [--inputs in.npz|in.safetensors] [--arg NAME=VALUE]...
//                [--ids "1 2 3; 4 5"] [--decoder-ids "9 4; 9 7"] [--outputs out.npz|out.safetensors]
//                [--threads N] [--time] [--stream] [--profile] [--trace out.json]
// The same options and files as `tensorvm run` (pycompiler/cli.py). Each parameter
// takes, in this order: --ids (a parameter named input_ids: int64 [batch, len], ';'
// between rows, rows padded with the program's pad id (on the left for a decoder-only
// program, as transformers pads prompts), and an attention_mask built to match when
// the function takes one), --decoder-ids (a parameter named
// decoder_input_ids: the decoder prompt, rows of one length), --arg (parsed by the declared type), the array
// named after it in --inputs, or the array arr_<position>; options left out keep the
// program's default. Outputs are written as arr_0, arr_1, ... (scalars as 0-d arrays, a None
// output left out). --stream prints the tokens a generate program emits as they come,
// one line per step: "stream: " then each row's new ids, rows separated by "; ".
// --profile prints the profiler's tables after the outputs (docs/tools.md); --trace
// also writes the run as a Chrome trace.
// --wav FILE fills a parameter named audio with f32 [1, samples] from a 16 kHz mono WAV
// (io/wav_file.h): `tensorvm-run whisper.tvm transcribe --wav speech.wav` prints the
// transcript (or token ids, when the program carries no tokenizer). --language fr and
// --task translate build Whisper's decoder prompt with the program's tokenizer in place
// of --decoder-ids; without --language the program detects it (detect_language_audio),
// as transformers' generate does.
// Text in, text out (cli/text_verbs.h), with the program's tokenizer:
//   tensorvm-run PROGRAM tokenize|translate|complete --text "..." | --text-file F [--arg NAME=VALUE]...
// The example inputs bundled in the program (`tensorvm bundle`), rerun and compared
// with the outputs stored beside them (cli/verify.h):
//   tensorvm-run PROGRAM verify [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "io/array_file.h"
#include "io/wav_file.h"
#include "ops/cpu.h"
#include "cli/command_line.h"
#include "cli/text_verbs.h"
#include "cli/verify.h"
#include "vm/profiler.h"
#include "cli/run_io.h"
#include "vm/vm.h"

namespace {


const char* kUsage =
    "usage: tensorvm-run PROGRAM FUNCTION [--inputs FILE.npz|FILE.safetensors] [--arg NAME=VALUE]...\n"
    "                    [--ids \"1 2 3; 4 5\"] [--decoder-ids \"9 4; 9 7\"] [--outputs FILE.npz|FILE.safetensors]\n"
    "                    [--threads N] [--time] [--stream]   (--stream: print each step's tokens as they come)\n"
    "                    [--max-instructions N]   (stop a run past N instructions; 0 = no limit)\n"
    "                    [--profile] [--trace OUT.json]   (time per op, call and IR line; a Chrome trace)\n"
    "                    [--wav FILE.wav]   (16 kHz mono audio for a parameter named audio: Whisper's transcribe)\n"
    "                    [--language fr|french] [--task transcribe|translate]   (Whisper: the decoder prompt,\n"
    "                    built with the program's tokenizer; no --language: the prompt is --decoder-ids, else\n"
    "                    the language is detected, as transformers' generate does)\n"
    "       tensorvm-run PROGRAM tokenize|translate|complete --text \"...\" | --text-file FILE [--arg NAME=VALUE]...\n"
    "                    [--src-lang LANG] [--tgt-lang LANG]   (M2M100 fr, NLLB fra_Latn: translate's languages)\n"
    "                    (text in, text out with the program's tokenizer: one output line per input line)\n"
    "       tensorvm-run PROGRAM verify [--threads N]   (rerun the example inputs `tensorvm bundle` stored in\n"
    "                    the program; each output's max error; exit status 1 past tolerance)\n"
    "       tensorvm-run --info   (the CPU and the kernel variant in use; TENSORVM_ISA forces one)\n"
    "       tensorvm-run --ops    (the names of the built-in ops this build contains, one a line)\n";

// The text verbs' view of the program: run on one interpreter session.
cli::ProgramRunner interpreted(const std::string& dir, std::shared_ptr<const vm::Program> program,
                               const vm::SessionOptions& options) {
  cli::ProgramRunner r;
  r.dir = dir;
  r.meta_json = program->meta_json();
  for (const vm::Function& f : program->functions()) r.functions[f.name] = {f.param_names, f.param_types};
  r.run_named = [program, options, session = std::shared_ptr<vm::Session>()](
                    const std::string& function, const std::vector<std::pair<std::string, vm::Value>>& named,
                    vm::EmitCallback on_emit) mutable {
    if (!session) session = std::make_shared<vm::Session>(program, options);
    session->set_on_emit(std::move(on_emit));
    return session->run_named(function, named);
  };
  return r;
}

int run(int argc, char** argv) {
  std::optional<cli::CommandLine> parsed = cli::parse_command_line(argc, argv, kUsage);
  if (!parsed) return 0;
  cli::CommandLine& c = *parsed;
  const std::vector<std::string>& positional = c.positional;
  if (positional.size() != 2) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  auto program = vm::Program::load(positional[0]);
  vm::SessionOptions opts = c.session;
  const cli::ProgramRunner runner = interpreted(positional[0], program, opts);
  if (cli::is_text_verb(runner, positional[1]))
    return cli::run_text_verb(runner, positional[1], c.text, c.request.args, c.function_options());
  if (positional[1] == "verify" && !program->find("verify")) {
    const cli::TextOptions& t = c.text;
    if (c.function_options() || !c.request.args.empty() || t.given || !t.src_lang.empty() || !t.tgt_lang.empty() ||
        !t.language.empty() || !t.task.empty())
      vm::fail("verify takes --threads and --max-instructions only: the inputs are the program's bundle");
    return cli::run_verify(positional[0], program, opts);
  }
  const vm::Function& fn = program->function(positional[1]);
  cli::RunRequest& req = c.request;
  cli::check_text_options(runner, c.text, fn.name, req.decoder_ids_text);
  std::vector<vm::Value> inputs = build_inputs(fn.name, fn.param_names, fn.param_types, program->meta_json(), req);
  // Whisper's prompt as generate builds it, the language detected when none is given.
  cli::fill_transcribe_prompt(runner, c.text, fn.name, inputs);

  opts.profile = c.profile;
  opts.profile_trace = !c.trace_path.empty();
  vm::Session session(program, opts);
  const auto t0 = std::chrono::steady_clock::now();
  vm::EmitCallback on_emit = c.stream ? cli::stream_printer() : vm::EmitCallback();
  std::vector<vm::Value> outs = vm::run(session, fn.name, std::move(inputs), std::move(on_emit));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  // Whisper's transcript as text when the program carries its tokenizer (--outputs keeps the ids).
  finish(fn.name, outs, req, ms, [&](size_t i, const vm::Value& v) {
    return i == 0 && fn.name == "transcribe" && cli::print_as_text(positional[0], v);
  });
  if (c.profile) {
    fmt::print("\n{}", session.profiler()->report(20));
    if (!c.trace_path.empty()) {
      session.profiler()->write_trace(c.trace_path);
      fmt::print("trace: {}\n", c.trace_path);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tensorvm-run: error: {}\n", e.what());
    return 1;
  }
}
