// The command line of a compiled program (`tensorvm compile` writes NAME_run.cpp,
// which calls cli_main): tensorvm-run's interface for the functions compiled in,
//   NAME-run PROGRAM_DIR FUNCTION [--inputs FILE] [--arg NAME=VALUE]... [--ids "1 2; 3"]
//            [--decoder-ids "9 4"] [--wav FILE] [--outputs FILE] [--threads N] [--time] [--stream]
//            [--max-instructions N] [--profile] [--trace OUT.json] [--language LANG] [--task TASK]
//   NAME-run PROGRAM_DIR tokenize|translate|complete --text "..." | --text-file FILE [--arg NAME=VALUE]...
//            [--src-lang LANG] [--tgt-lang LANG] [--threads N] [--max-instructions N]
// with the same inputs, printed outputs and files (cli/run_io.h) and the same text verbs
// (cli/text_verbs.h). PROGRAM_DIR supplies the weights and the tokenizer; the IR is
// compiled in. Part of tensorvm::cli.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "vm/aot.h"

namespace cli {

struct CliProgram {
  // Runs a function of the program opened by `open`, on one session.
  using Run = std::function<std::vector<vm::Value>(const std::string& function, std::vector<vm::Value> inputs,
                                               vm::EmitCallback on_emit)>;
  std::string name;  // for usage and errors
  std::string meta_json;
  std::vector<vm::aot::Signature> functions;
  // Loads the program's weights from `dir` and makes a session with `options` and `hook`
  // installed (a vm::Profiler for --profile, else null).
  std::function<Run(const std::string& dir, const vm::SessionOptions& options, vm::Hook* hook)> open;
};

int cli_main(int argc, char** argv, const CliProgram& program);

}  // namespace cli
