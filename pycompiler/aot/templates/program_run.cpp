// @NS:namespace@-run: tensorvm-run's command line for the compiled program @SOURCE:cpp_comment@
//   @NS:namespace@-run PROGRAM_DIR FUNCTION [--ids "1 2 3; 4 5"] [--arg NAME=VALUE]... [--threads N] [--time] ...
//   @NS:namespace@-run PROGRAM_DIR translate|complete|tokenize --text "..." [--arg NAME=VALUE]...
// (cli/aot_cli.h lists the options; PROGRAM_DIR supplies weights.safetensors and the tokenizer).
#include <memory>

#include "@NS:namespace@.h"
#include "cli/aot_cli.h"

int main(int argc, char** argv) {
  cli::CliProgram p;
  p.name = @RUN_NAME:cpp_string@;
  p.meta_json = @NS:namespace@::meta_json();
  p.functions = @NS:namespace@::signatures();
  p.open = [](const std::string& dir, const vm::SessionOptions& options, vm::Hook* hook) -> cli::CliProgram::Run {
    auto session = std::make_shared<@NS:namespace@::Session>(@NS:namespace@::Program::load(dir), options);
    session->set_hook(hook);
    return [session](const std::string& function, std::vector<vm::Value> inputs, vm::EmitCallback on_emit) {
      return session->run(function, std::move(inputs), std::move(on_emit));
    };
  };
  return cli::cli_main(argc, argv, p);
}
