#include "vm/aot_cli.h"

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "ops/cpu.h"
#include "vm/run_io.h"

namespace vm::aot {

namespace {

int run(int argc, char** argv, const CliProgram& p) {
  const std::string usage = fmt::format(
      "usage: {} PROGRAM_DIR FUNCTION [--inputs FILE.npz|FILE.safetensors] [--arg NAME=VALUE]...\n"
      "       [--ids \"1 2 3; 4 5\"] [--decoder-ids \"9 4; 9 7\"] [--wav FILE.wav] [--outputs FILE.npz|FILE.safetensors]\n"
      "       [--threads N] [--time] [--stream] [--max-instructions N] [--profile] [--trace OUT.json]\n"
      "       {} --info   (the CPU and the kernel variant in use)\n"
      "       {} --ops    (the ops of the runtime it links: fewer in a selective build)\n",
      p.name, p.name, p.name);
  std::vector<std::string> positional;
  cli::RunRequest req;
  int threads = 1;
  uint64_t max_instructions = 0;
  bool stream = false, profile = false;
  std::string trace_path;
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
    } else if (a == "--profile") {
      profile = true;
    } else if (a == "--trace") {
      trace_path = next();
      if (trace_path.size() < 5 || trace_path.compare(trace_path.size() - 5, 5, ".json") != 0)
        fail("--trace {}: the name must end in .json", trace_path);
      profile = true;
    } else if (a == "--max-instructions") {
      max_instructions = uint64_t(cli::parse_count(a, next(), 0, INT64_MAX));
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
  const Signature& fn = p.functions[find(p.functions, positional[1], p.name.c_str())];
  std::vector<Value> inputs = cli::build_inputs(fn.name, fn.param_names, fn.param_types, p.meta_json, req);
  SessionOptions options;
  options.num_threads = threads;
  options.max_instructions = max_instructions;
  std::unique_ptr<Profiler> profiler;
  if (profile) {
    ProfilerOptions po;
    po.trace = !trace_path.empty();
    profiler = std::make_unique<Profiler>(po);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Value> outs = p.run(positional[0], fn.name, std::move(inputs), options,
                                  stream ? cli::stream_printer() : EmitCallback(), profiler.get());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  cli::finish(fn.name, outs, req, ms);
  if (profiler) {  // as tensorvm-run --profile / --trace
    fmt::print("\n{}", profiler->report(20));
    if (!trace_path.empty()) {
      profiler->write_trace(trace_path);
      fmt::print("trace: {}\n", trace_path);
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
