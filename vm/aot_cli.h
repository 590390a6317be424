// The command line of a compiled program (`tensorvm compile` writes NAME_run.cpp,
// which calls cli_main): tensorvm-run's interface for the functions compiled in,
//   NAME-run PROGRAM_DIR FUNCTION [--inputs FILE] [--arg NAME=VALUE]... [--ids "1 2; 3"]
//            [--decoder-ids "9 4"] [--wav FILE] [--outputs FILE] [--threads N] [--time] [--stream]
//            [--max-instructions N] [--profile] [--trace OUT.json]
// with the same inputs, printed outputs and files (vm/run_io.h). PROGRAM_DIR supplies
// the weights; the IR is compiled in.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "vm/aot.h"

namespace vm::aot {

struct CliProgram {
  std::string name;  // for usage and errors
  std::string meta_json;
  std::vector<Signature> functions;
  // Runs `function` on a session of the program in `dir` with `hook` installed (a
  // Profiler for --profile, else null).
  std::function<std::vector<Value>(const std::string& dir, const std::string& function, std::vector<Value> inputs,
                                   const SessionOptions& options, EmitCallback on_emit, Hook* hook)>
      run;
};

int cli_main(int argc, char** argv, const CliProgram& program);

}  // namespace vm::aot
