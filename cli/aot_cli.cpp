#include "cli/aot_cli.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/command_line.h"
#include "cli/text_verbs.h"
#include "cli/run_io.h"

namespace cli {

namespace {

// The text verbs' view of the program: opened at its first run, then run on that session.
ProgramRunner compiled(const CliProgram& p, const std::string& dir, const vm::SessionOptions& options) {
  ProgramRunner r;
  r.dir = dir;
  r.meta_json = p.meta_json;
  for (const vm::aot::Signature& f : p.functions) r.functions[f.name] = {f.param_names, f.param_types};
  r.run_named = [&p, dir, options, run = CliProgram::Run()](
                    const std::string& function, const std::vector<std::pair<std::string, vm::Value>>& named,
                    vm::EmitCallback on_emit) mutable {
    if (!run) run = p.open(dir, options, nullptr);
    const vm::aot::Signature& fn = p.functions[vm::aot::find(p.functions, function, p.name.c_str())];
    return run(function, vm::aot::inputs_by_name(fn, named), std::move(on_emit));
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
  std::optional<CommandLine> parsed = parse_command_line(argc, argv, usage);
  if (!parsed) return 0;
  CommandLine& c = *parsed;
  const std::vector<std::string>& positional = c.positional;
  if (positional.size() != 2) {
    fmt::print(stderr, "{}", usage);
    return 2;
  }
  const std::string& dir = positional[0];
  const vm::SessionOptions& options = c.session;
  const ProgramRunner runner = compiled(p, dir, options);
  if (is_text_verb(runner, positional[1]))
    return run_text_verb(runner, positional[1], c.text, c.request.args, c.function_options());
  const vm::aot::Signature& fn = p.functions[vm::aot::find(p.functions, positional[1], p.name.c_str())];
  RunRequest& req = c.request;
  check_text_options(runner, c.text, fn.name, req.decoder_ids_text);
  std::vector<vm::Value> inputs = build_inputs(fn.name, fn.param_names, fn.param_types, p.meta_json, req);
  fill_transcribe_prompt(runner, c.text, fn.name, inputs);
  std::unique_ptr<vm::Profiler> profiler;
  if (c.profile) {
    vm::ProfilerOptions po;
    po.trace = !c.trace_path.empty();
    profiler = std::make_unique<vm::Profiler>(po);
  }
  const CliProgram::Run run = p.open(dir, options, profiler.get());
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<vm::Value> outs = run(fn.name, std::move(inputs), c.stream ? stream_printer() : vm::EmitCallback());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // As tensorvm-run: Whisper's transcript as text when the program carries its tokenizer.
  finish(fn.name, outs, req, ms, [&](size_t i, const vm::Value& v) {
    return i == 0 && std::string(fn.name) == "transcribe" && print_as_text(dir, v);
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

}  // namespace cli
