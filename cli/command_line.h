// The options of tensorvm-run and of a compiled program's command line (cli/main.h),
// parsed once for both (docs/tools.md): a function's inputs and outputs, the session's
// options, and the text verbs' options. Part of tensorvm::cli.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/text_verbs.h"
#include "cli/run_io.h"
#include "vm/session.h"

namespace cli {

struct CommandLine {
  std::vector<std::string> positional;  // PROGRAM FUNCTION
  RunRequest request;                   // --inputs, --outputs, --ids, --decoder-ids, --wav, --arg, --time
  TextOptions text;                     // --text, --text-file, --src-lang, --tgt-lang, --language, --task
  vm::SessionOptions session;           // --threads, --max-instructions
  bool stream = false, profile = false;
  std::string trace_path;               // --trace OUT.json (sets profile)
  // An option given that goes with a function run only: refused by the text verbs.
  bool function_options() const;
};

// Parses argv, failing on an unknown option or a missing value. Prints `usage` for
// -h/--help, the CPU for --info and the built-in ops for --ops, and returns nothing then
// (the command is done).
std::optional<CommandLine> parse_command_line(int argc, char** argv, const std::string& usage);

}  // namespace cli
