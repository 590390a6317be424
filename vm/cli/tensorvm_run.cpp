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
// (ir/wav_file.h): `tensorvm-run whisper.tvm transcribe --wav speech.wav` prints the
// transcript (or token ids, when the program carries no tokenizer). --language fr and
// --task translate build Whisper's decoder prompt with the program's tokenizer in place
// of --decoder-ids; without --language the program detects it (detect_language_audio),
// as transformers' generate does.
// Text in, text out (vm/cli/text_verbs.h), with the program's tokenizer:
//   tensorvm-run PROGRAM tokenize|translate|complete --text "..." | --text-file F [--arg NAME=VALUE]...
// The example inputs bundled in the program (`tensorvm bundle`), rerun and compared
// with the outputs stored beside them (vm/cli/verify.h):
//   tensorvm-run PROGRAM verify [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ir/array_file.h"
#include "ir/wav_file.h"
#include "ops/cpu.h"
#include "vm/cli/text_verbs.h"
#include "vm/cli/verify.h"
#include "vm/profiler.h"
#include "vm/run_io.h"
#include "vm/vm.h"

namespace {

using vm::cli::parse_count;
using vm::cli::parse_scalar;

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

std::string read_text_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) vm::fail("--text-file {}: cannot open it", path);
  std::string out;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  const bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) vm::fail("--text-file {}: cannot read it", path);
  return out;
}

int run(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string inputs_path, outputs_path, ids_text, decoder_ids_text, wav_path, src_lang, tgt_lang, language, task;
  std::vector<std::string> text_lines;
  bool text_given = false;
  std::map<std::string, std::string> args;
  int threads = 1;
  uint64_t max_instructions = 0;
  bool timed = false, stream = false, profile = false;
  std::string trace_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) vm::fail("{} needs a value", a);
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      fmt::print("{}", kUsage);
      return 0;
    } else if (a == "--info") {
      fmt::print("{}", ops::describe_cpu());
      return 0;
    } else if (a == "--ops") {  // a selective build has fewer (docs/runtime.md "Selective build")
      for (const ops::OpDef* op : ops::Registry::get().all())
        if (op->builtin) fmt::print("{}\n", op->name);
      return 0;
    } else if (a == "--inputs") {
      inputs_path = next();
    } else if (a == "--outputs") {
      outputs_path = next();
    } else if (a == "--ids") {
      ids_text = next();
    } else if (a == "--text" || a == "--text-file") {
      if (text_given) vm::fail("give one --text or --text-file");
      text_given = true;
      text_lines = cli::split_lines(a == "--text" ? next() : read_text_file(next()));
    } else if (a == "--decoder-ids") {
      decoder_ids_text = next();
    } else if (a == "--src-lang") {
      src_lang = next();
    } else if (a == "--tgt-lang") {
      tgt_lang = next();
    } else if (a == "--language") {
      language = next();
    } else if (a == "--task") {
      task = next();
    } else if (a == "--wav") {
      wav_path = next();
    } else if (a == "--time") {
      timed = true;
    } else if (a == "--stream") {
      stream = true;
    } else if (a == "--profile") {
      profile = true;
    } else if (a == "--trace") {
      trace_path = next();
      if (trace_path.size() < 5 || trace_path.compare(trace_path.size() - 5, 5, ".json") != 0)
        vm::fail("--trace {}: the name must end in .json", trace_path);
      profile = true;
    } else if (a == "--threads") {
      threads = int(parse_count(a, next(), 1, 4096));
    } else if (a == "--max-instructions") {
      max_instructions = uint64_t(parse_count(a, next(), 0, INT64_MAX));
    } else if (a == "--arg") {
      std::string kv = next();
      auto eq = kv.find('=');
      if (eq == std::string::npos) vm::fail("--arg takes NAME=VALUE, got '{}'", kv);
      args[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (a.rfind("--", 0) == 0) {
      vm::fail("unknown option {}", a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  auto program = vm::Program::load(positional[0]);
  if (cli::is_text_verb(positional[1]) && !program->find(positional[1])) {
    const std::string& verb = positional[1];
    if (!text_given) vm::fail("{} needs --text \"...\" or --text-file FILE", verb);
    if (!inputs_path.empty() || !outputs_path.empty() || !ids_text.empty() || !decoder_ids_text.empty() || stream ||
        !language.empty() || !task.empty())
      vm::fail("{} takes --text or --text-file, --arg, --threads and --max-instructions only", verb);
    cli::TextVerbOptions o;
    o.lines = std::move(text_lines);
    o.src_lang = src_lang;
    o.tgt_lang = tgt_lang;
    if (verb == "complete" && !(src_lang.empty() && tgt_lang.empty()))
      vm::fail("complete: --src-lang and --tgt-lang go with tokenize and translate");
    o.session.num_threads = threads;
    o.session.max_instructions = max_instructions;
    if (!args.empty()) {
      const vm::Function* gen = verb == "tokenize" ? nullptr : program->find("generate");
      if (!gen) vm::fail("--arg {}: {} takes no --arg", args.begin()->first, verb);
      for (const auto& [name, value] : args) {
        auto it = std::find(gen->param_names.begin(), gen->param_names.end(), name);
        if (it == gen->param_names.end() || name == "input_ids" || name == "attention_mask")
          vm::fail("--arg {}: generate has no such option (it takes {})", name, fmt::join(gen->param_names, ", "));
        o.args.emplace_back(name, parse_scalar(gen->param_types[size_t(it - gen->param_names.begin())], value, name));
      }
    }
    return cli::run_text_verb(positional[0], program, verb, o);
  }
  if (text_given) vm::fail("--text and --text-file go with the verbs tokenize, translate and complete");
  if (!src_lang.empty() || !tgt_lang.empty()) vm::fail("--src-lang and --tgt-lang go with the verbs tokenize and translate");
  if (positional[1] == "verify" && !program->find("verify")) {
    if (!inputs_path.empty() || !outputs_path.empty() || !ids_text.empty() || !decoder_ids_text.empty() || !args.empty() ||
        stream || profile || !wav_path.empty() || !language.empty() || !task.empty())
      vm::fail("verify takes --threads and --max-instructions only: the inputs are the program's bundle");
    vm::SessionOptions opts;
    opts.num_threads = threads;
    opts.max_instructions = max_instructions;
    return cli::run_verify(positional[0], program, opts);
  }
  const vm::Function& fn = program->function(positional[1]);
  auto param = [&](const char* name) {
    return size_t(std::find(fn.param_names.begin(), fn.param_names.end(), name) - fn.param_names.begin());
  };
  const bool transcribe = fn.name == "transcribe" && param("decoder_input_ids") < fn.param_names.size() &&
                          param("audio") < fn.param_names.size();
  if ((!language.empty() || !task.empty()) && !transcribe)
    vm::fail("--language and --task go with Whisper's transcribe (a function taking audio and decoder_input_ids), "
             "not {}",
             fn.name);
  if ((!language.empty() || !task.empty()) && !decoder_ids_text.empty())
    vm::fail("{}: give --language/--task or --decoder-ids, not both", fn.name);

  vm::cli::RunRequest req{inputs_path, outputs_path, ids_text, decoder_ids_text, wav_path, args, timed};
  std::vector<vm::Value> inputs = build_inputs(fn.name, fn.param_names, fn.param_types, program->meta_json(), req);

  vm::SessionOptions opts;
  opts.num_threads = threads;
  opts.max_instructions = max_instructions;
  opts.profile = profile;
  opts.profile_trace = !trace_path.empty();
  vm::Session session(program, opts);
  // Whisper's prompt as generate builds it, the language detected when none is given.
  if (transcribe && inputs[param("decoder_input_ids")].is_none()) {
    vm::Value prompt = cli::transcribe_prompt(positional[0], session, inputs[param("audio")], language, task);
    if (!prompt.is_none()) inputs[param("decoder_input_ids")] = std::move(prompt);
  }
  const auto t0 = std::chrono::steady_clock::now();
  vm::EmitCallback on_emit = stream ? vm::cli::stream_printer() : vm::EmitCallback();
  std::vector<vm::Value> outs = vm::run(session, fn.name, std::move(inputs), std::move(on_emit));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  // Whisper's transcript as text when the program carries its tokenizer (--outputs keeps the ids).
  finish(fn.name, outs, req, ms, [&](size_t i, const vm::Value& v) {
    return i == 0 && fn.name == "transcribe" && cli::print_as_text(positional[0], v);
  });
  if (profile) {
    fmt::print("\n{}", session.profiler()->report(20));
    if (!trace_path.empty()) {
      session.profiler()->write_trace(trace_path);
      fmt::print("trace: {}\n", trace_path);
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
