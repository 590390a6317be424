#include "cli/main.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/command_line.h"
#include "cli/run_io.h"
#include "cli/text_verbs.h"
#include "cli/verify.h"
#include "cli/whisper_longform.h"
#include "vm/profiler.h"
#include "vm/vm.h"

namespace cli {

namespace {

std::string usage_text(const ProgramSource& s, bool verify) {
  const std::string& n = s.name;
  const std::string pad(n.size() + 1, ' ');
  std::string u = fmt::format(
      "usage: {0} PROGRAM FUNCTION [--inputs FILE.npz|FILE.safetensors] [--arg NAME=VALUE]...\n"
      "       {1}[--ids \"1 2 3; 4 5\"] [--decoder-ids \"9 4; 9 7\"] [--outputs FILE.npz|FILE.safetensors]\n"
      "       {1}[--threads N] [--time] [--stream]   (--stream: print each step's tokens as they come)\n"
      "       {1}[--max-instructions N]   (stop a run past N instructions; 0 = no limit)\n"
      "       {1}[--profile] [--trace OUT.json]   (time per op, call and IR line; a Chrome trace)\n"
      "       {1}[--wav|--audio FILE.wav]   (16 kHz mono audio for a parameter named audio: Whisper's transcribe)\n"
      "       {1}[--timestamps [--format text|srt|vtt|json]]   (Whisper's transcribe: return_timestamps, segments)\n"
      "       {1}[--language fr|french] [--task transcribe|translate]   (Whisper: the decoder prompt,\n"
      "       {1}built with the program's tokenizer; no --language: the prompt is --decoder-ids, else\n"
      "       {1}the language is detected, as transformers' generate does)\n"
      "       {0} PROGRAM tokenize|translate|complete --text \"...\" | --text-file FILE [--arg NAME=VALUE]...\n"
      "       {1}[--src-lang LANG] [--tgt-lang LANG]   (M2M100 fr, NLLB fra_Latn: translate's languages)\n"
      "       {1}(text in, text out with the program's tokenizer: one output line per input line)\n",
      n, pad);
  if (verify)
    u += fmt::format(
        "       {0} PROGRAM verify [--threads N]   (rerun the example inputs `tensorvm bundle` stored in\n"
        "       {1}the program; each output's max error; exit status 1 past tolerance)\n",
        n, pad);
  return u + fmt::format(
                 "       {0} --info   (the CPU and the kernel variant in use; TENSORVM_ISA forces one)\n"
                 "       {0} --ops    (the names of the built-in ops this build contains, one a line)\n",
                 n);
}

const vm::aot::Signature& function(const ProgramSource::Loaded& p, const std::string& name) {
  return p.functions[vm::aot::find(p.functions, name, p.label.c_str())];
}

int run(int argc, char** argv, const ProgramSource& source) {
  const std::string usage = usage_text(source, source.verifies);
  std::optional<CommandLine> parsed = parse_command_line(argc, argv, usage);
  if (!parsed) return 0;
  CommandLine& c = *parsed;
  const std::vector<std::string>& positional = c.positional;
  if (positional.size() != 2) {
    fmt::print(stderr, "{}", usage);
    return 2;
  }
  const std::string& dir = positional[0];
  const auto p = std::make_shared<const ProgramSource::Loaded>(source.load(dir));
  const vm::SessionOptions& options = c.session;
  const ProgramRunner runner = text_runner(p, dir, options);
  if (is_text_verb(runner, positional[1]))
    return run_text_verb(runner, positional[1], c.text, c.request.args, c.function_options(), stdout_print());
  if (positional[1] == "verify" && p->verify && !runner.functions.count("verify")) {
    const TextOptions& t = c.text;
    if (c.function_options() || !c.request.args.empty() || t.given || !t.src_lang.empty() || !t.tgt_lang.empty() ||
        !t.language.empty() || !t.task.empty())
      vm::fail("verify takes --threads and --max-instructions only: the inputs are the program's bundle");
    return p->verify(options);
  }
  const std::string name = function(*p, positional[1]).name;
  RunRequest& req = c.request;
  if (c.text.timestamps || !c.text.format.empty()) {
    if (name != "transcribe" || !c.text.timestamps)
      vm::fail("--timestamps [--format F] goes with Whisper's transcribe");
    req.args.emplace("return_timestamps", "true");
  }
  if (name == "transcribe" && !c.stream && !c.profile) {  // long-form: audio longer than a window
    const auto t0 = std::chrono::steady_clock::now();
    if (const std::optional<vm::Value> tokens = run_long_transcribe(runner, c.text, req, stdout_print())) {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      finish(name, {*tokens}, req, ms, [](size_t, const vm::Value&) { return true; });  // printed as they came
      return 0;
    }
  }
  std::vector<vm::Value> inputs = function_inputs(runner, c.text, name, req);
  std::unique_ptr<vm::Profiler> profiler;
  if (c.profile) {
    vm::ProfilerOptions po;
    po.trace = !c.trace_path.empty();
    profiler = std::make_unique<vm::Profiler>(po);
  }
  const ProgramSource::Run run_fn = p->open(options, profiler.get());
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<vm::Value> outs = run_fn(name, std::move(inputs), c.stream ? stream_printer() : vm::EmitCallback());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Whisper's transcript as text when the program carries its tokenizer (--outputs keeps the ids).
  finish(name, outs, req, ms, [&](size_t i, const vm::Value& v) {
    if (i == 0 && name == "transcribe" && c.text.timestamps) {
      print_segments(runner, v, c.text.format, stdout_print());
      return true;
    }
    return i == 0 && name == "transcribe" && print_as_text(dir, v, stdout_print());
  });
  if (profiler) {
    fmt::print("\n{}", profiler->report(20));
    if (!c.trace_path.empty()) {
      profiler->write_trace(c.trace_path);
      fmt::print("trace: {}\n", c.trace_path);
    }
  }
  return 0;
}

}  // namespace

ProgramSource::Loaded interpreted(const std::string& dir, std::shared_ptr<const vm::Program> program) {
  ProgramSource::Loaded p;
  p.label = program->filename();
  p.meta_json = program->meta_json();
  for (const vm::Function& f : program->functions()) p.functions.push_back({f.name.c_str(), f.param_names, f.param_types});
  p.open = [program](const vm::SessionOptions& options, vm::Hook* hook) -> ProgramSource::Run {
    auto session = std::make_shared<vm::Session>(program, options);
    session->set_hook(hook);
    return [session](const std::string& function, std::vector<vm::Value> inputs, vm::EmitCallback on_emit) {
      return vm::run(*session, function, std::move(inputs), std::move(on_emit));
    };
  };
  p.verify = [dir, program](const vm::SessionOptions& options) { return run_verify(dir, program, options); };
  return p;
}

ProgramRunner text_runner(std::shared_ptr<const ProgramSource::Loaded> p, const std::string& dir,
                          const vm::SessionOptions& options) {
  ProgramRunner r;
  r.dir = dir;
  r.meta_json = p->meta_json;
  for (const vm::aot::Signature& f : p->functions) r.functions[f.name] = {f.param_names, f.param_types};
  r.run_named = [p, options, run = ProgramSource::Run()](
                    const std::string& name, const std::vector<std::pair<std::string, vm::Value>>& named,
                    vm::EmitCallback on_emit) mutable {
    if (!run) run = p->open(options, nullptr);
    return run(name, vm::aot::inputs_by_name(function(*p, name), named), std::move(on_emit));
  };
  return r;
}

std::vector<vm::Value> function_inputs(const ProgramRunner& program, const TextOptions& text,
                                       const std::string& function, RunRequest& request) {
  const ProgramRunner::Params& fn = program.functions.at(function);
  check_text_options(program, text, function, request.decoder_ids_text);
  std::vector<vm::Value> inputs = build_inputs(function, fn.names, fn.types, program.meta_json, request);
  // Whisper's prompt as generate builds it, the language detected when none is given.
  fill_transcribe_prompt(program, text, function, inputs);
  return inputs;
}

int run_main(int argc, char** argv, const ProgramSource& source) {
  try {
    return run(argc, argv, source);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", source.name, e.what());
    return 1;
  }
}

}  // namespace cli
