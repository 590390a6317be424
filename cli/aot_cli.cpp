#include "cli/aot_cli.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/command_line.h"
#include "cli/text_verbs.h"
#include "cli/run_io.h"

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
    if (!run) run = p.open(dir, options, nullptr);
    const Signature& fn = p.functions[find(p.functions, function, p.name.c_str())];
    return run(function, inputs_by_name(fn, named), std::move(on_emit));
  };
  return r;
}

int run(int argc, char** argv, const CliProgram& p) {
  const std::string usage = fmt::format(
      "usage: {} PROGRAM_DIR FUNCTION [--inputs FILE.npz|FILE.safetensors] [--arg NAME=VALUE]...\n"
      "       [--ids \"1 2 3; 4 5\"] [--decoder-ids \"9 4; 9 7\"] [--wav FILE.wav] [--outputs FILE.npz|FILE.safetensors]\n"
      "       [--threads N] [--time] [--stream] [--max-instructions N] [--profile] [--trace OUT.json]\n"
      "       [--language fr|french] [--task transcribe|translate]   (Whisper: the decoder prompt)\n"
      "       {} PROGRAM_DIR tokenize|translate|complete --text \"...\" | --text-file FILE [--arg NAME=VALUE]...\n"
      "       [--src-lang LANG] [--tgt-lang LANG] [--threads N] [--max-instructions N]   (text in, text out)\n"
      "       {} --info   (the CPU and the kernel variant in use)\n"
      "       {} --ops    (the ops of the runtime it links: fewer in a selective build)\n",
      p.name, p.name, p.name, p.name);
  std::optional<::cli::CommandLine> parsed = ::cli::parse_command_line(argc, argv, usage);
  if (!parsed) return 0;
  ::cli::CommandLine& c = *parsed;
  const std::vector<std::string>& positional = c.positional;
  if (positional.size() != 2) {
    fmt::print(stderr, "{}", usage);
    return 2;
  }
  const std::string& dir = positional[0];
  const SessionOptions& options = c.session;
  const ::cli::ProgramRunner runner = compiled(p, dir, options);
  if (::cli::is_text_verb(runner, positional[1]))
    return ::cli::run_text_verb(runner, positional[1], c.text, c.request.args, c.function_options());
  const Signature& fn = p.functions[find(p.functions, positional[1], p.name.c_str())];
  cli::RunRequest& req = c.request;
  ::cli::check_text_options(runner, c.text, fn.name, req.decoder_ids_text);
  std::vector<Value> inputs = cli::build_inputs(fn.name, fn.param_names, fn.param_types, p.meta_json, req);
  ::cli::fill_transcribe_prompt(runner, c.text, fn.name, inputs);
  std::unique_ptr<Profiler> profiler;
  if (c.profile) {
    ProfilerOptions po;
    po.trace = !c.trace_path.empty();
    profiler = std::make_unique<Profiler>(po);
  }
  const CliProgram::Run run = p.open(dir, options, profiler.get());
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Value> outs = run(fn.name, std::move(inputs), c.stream ? cli::stream_printer() : EmitCallback());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // As tensorvm-run: Whisper's transcript as text when the program carries its tokenizer.
  cli::finish(fn.name, outs, req, ms, [&](size_t i, const Value& v) {
    return i == 0 && std::string(fn.name) == "transcribe" && ::cli::print_as_text(dir, v);
  });
  if (profiler) {  // as tensorvm-run --profile / --trace
    fmt::print("\n{}", profiler->report(20));
    if (!c.trace_path.empty()) {
      profiler->write_trace(c.trace_path);
      fmt::print("trace: {}\n", c.trace_path);
    }
  }
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
