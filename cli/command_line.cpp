#include "cli/command_line.h"

#include <cstdint>

#include <fmt/format.h>

#include "ops/cpu.h"
#include "ops/registry.h"
#include "core/error.h"

namespace cli {

bool CommandLine::function_options() const {
  const RunRequest& r = request;
  return !r.inputs_path.empty() || !r.outputs_path.empty() || !r.ids_text.empty() || !r.decoder_ids_text.empty() ||
         !r.wav_path.empty() || r.timed || stream || profile;
}

std::optional<CommandLine> parse_command_line(int argc, char** argv, const std::string& usage) {
  CommandLine c;
  RunRequest& r = c.request;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) vm::fail("{} needs a value", a);
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      fmt::print("{}", usage);
      return std::nullopt;
    } else if (a == "--info") {
      fmt::print("{}", ops::describe_cpu());
      return std::nullopt;
    } else if (a == "--ops") {  // a selective build has fewer (docs/runtime.md "Selective build")
      for (const ops::OpDef* op : ops::Registry::get().all())
        if (op->builtin) fmt::print("{}\n", op->name);
      return std::nullopt;
    } else if (c.text.parse(a, next)) {
    } else if (a == "--inputs") {
      r.inputs_path = next();
    } else if (a == "--outputs") {
      r.outputs_path = next();
    } else if (a == "--ids") {
      r.ids_text = next();
    } else if (a == "--decoder-ids") {
      r.decoder_ids_text = next();
    } else if (a == "--wav" || a == "--audio") {
      r.wav_path = next();
    } else if (a == "--time") {
      r.timed = true;
    } else if (a == "--stream") {
      c.stream = true;
    } else if (a == "--profile") {
      c.profile = true;
    } else if (a == "--trace") {
      c.trace_path = next();
      if (c.trace_path.size() < 5 || c.trace_path.compare(c.trace_path.size() - 5, 5, ".json") != 0)
        vm::fail("--trace {}: the name must end in .json", c.trace_path);
      c.profile = true;
    } else if (a == "--threads") {
      c.session.num_threads = int(parse_count(a, next(), 1, 4096));
    } else if (a == "--max-instructions") {
      c.session.max_instructions = uint64_t(parse_count(a, next(), 0, INT64_MAX));
    } else if (a == "--arg") {
      const std::string kv = next();
      const auto eq = kv.find('=');
      if (eq == std::string::npos) vm::fail("--arg takes NAME=VALUE, got '{}'", kv);
      r.args[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (a.rfind("--", 0) == 0) {
      vm::fail("unknown option {}", a);
    } else {
      c.positional.push_back(a);
    }
  }
  return c;
}

}  // namespace cli
