#include "vm/cli/aot_cli.h"

#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "ops/cpu.h"
#include "vm/cli/text_verbs.h"
#include "vm/run_io.h"

namespace vm::aot {

namespace {

// The text verbs' view of the program: opened at its first run, then run on that session.
::cli::ProgramRunner compiled(const CliProgram& p, const std::string& dir, const SessionOptions& options) {
  ::cli::ProgramRunner r;
  r.dir = dir;
  r.meta_json = p.meta_json;
  for (const Signature& f : p.functions) r.functions[f.name] = {f.param_names, f.param_types};
  r.run_named = [&p, dir, options, run = CliProgram::Run()](
                    const std::string& function, const std::vector<std::pair<std::string, Value>>& named,
                    EmitCallback on_emit) mutable {
    if (!run) run = p.open(dir, options);
    const Signature& fn = p.functions[find(p.functions, function, p.name.c_str())];
    return run(function, inputs_by_name(fn, named), std::move(on_emit));
  };
  return r;
}

int run(int argc, char** argv, const CliProgram& p) {
  const std::string usage = fmt::format(
      "usage: {} PROGRAM_DIR FUNCTION [--inputs FILE.npz|FILE.safetensors] [--arg NAME=VALUE]...\n"
      "       [--ids \"1 2 3; 4 5\"] [--decoder-ids \"9 4; 9 7\"] [--wav FILE.wav] [--outputs FILE.npz|FILE.safetensors]\n"
      "       [--threads N] [--time] [--stream]\n"
      "       {} PROGRAM_DIR tokenize|translate|complete --text \"...\" | --text-file FILE [--arg NAME=VALUE]...\n"
      "       [--src-lang LANG] [--tgt-lang LANG] [--threads N]   (text in, text out with the program's tokenizer)\n"
      "       {} --info   (the CPU and the kernel variant in use)\n"
      "       {} --ops    (the ops of the runtime it links: fewer in a selective build)\n",
      p.name, p.name, p.name, p.name);
  std::vector<std::string> positional;
  cli::RunRequest req;
  ::cli::TextOptions text;
  int threads = 1;
  bool stream = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) fail("{} needs a value", a);
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      fmt::print("{}", usage);
      return 0;
    } else if (a == "--info") {
      fmt::print("{}", ops::describe_cpu());
      return 0;
    } else if (a == "--ops") {
      for (const ops::OpDef* op : ops::Registry::get().all())
        if (op->builtin) fmt::print("{}\n", op->name);
      return 0;
    } else if (text.parse(a, next)) {
    } else if (a == "--inputs") {
      req.inputs_path = next();
    } else if (a == "--outputs") {
      req.outputs_path = next();
    } else if (a == "--ids") {
      req.ids_text = next();
    } else if (a == "--decoder-ids") {
      req.decoder_ids_text = next();
    } else if (a == "--wav") {
      req.wav_path = next();
    } else if (a == "--time") {
      req.timed = true;
    } else if (a == "--stream") {
      stream = true;
    } else if (a == "--threads") {
      threads = int(cli::parse_count(a, next(), 1, 4096));
    } else if (a == "--arg") {
      const std::string kv = next();
      const auto eq = kv.find('=');
      if (eq == std::string::npos) fail("--arg takes NAME=VALUE, got '{}'", kv);
      req.args[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (a.rfind("--", 0) == 0) {
      fail("unknown option {}", a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) {
    fmt::print(stderr, "{}", usage);
    return 2;
  }
  const std::string& dir = positional[0];
  SessionOptions options;
  options.num_threads = threads;
  const ::cli::ProgramRunner runner = compiled(p, dir, options);
  if (::cli::is_text_verb(runner, positional[1])) {
    const std::string& verb = positional[1];
    if (!req.inputs_path.empty() || !req.outputs_path.empty() || !req.ids_text.empty() ||
        !req.decoder_ids_text.empty() || !req.wav_path.empty() || req.timed || stream)
      fail("{} takes --text or --text-file, --arg, --src-lang, --tgt-lang and --threads only", verb);
    return ::cli::run_text_verb(runner, verb, text, req.args);
  }
  ::cli::refuse_text_options(text);
  const Signature& fn = p.functions[find(p.functions, positional[1], p.name.c_str())];
  std::vector<Value> inputs = cli::build_inputs(fn.name, fn.param_names, fn.param_types, p.meta_json, req);
  const CliProgram::Run run = p.open(dir, options);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Value> outs = run(fn.name, std::move(inputs), stream ? cli::stream_printer() : EmitCallback());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // As tensorvm-run: Whisper's transcript as text when the program carries its tokenizer.
  cli::finish(fn.name, outs, req, ms, [&](size_t i, const Value& v) {
    return i == 0 && std::string(fn.name) == "transcribe" && ::cli::print_as_text(dir, v);
  });
  return 0;
}

}  // namespace

int cli_main(int argc, char** argv, const CliProgram& program) {
  try {
    return run(argc, argv, program);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", program.name, e.what());
    return 1;
  }
}

}  // namespace vm::aot
