// @NS:namespace@-run: tensorvm-run's command line for the compiled program @SOURCE:cpp_comment@
//   @NS:namespace@-run PROGRAM_DIR FUNCTION [--ids "1 2 3; 4 5"] [--arg NAME=VALUE]... [--threads N] [--time] ...
//   @NS:namespace@-run PROGRAM_DIR translate|complete|tokenize --text "..." [--arg NAME=VALUE]...
// (cli/main.h lists the options; PROGRAM_DIR supplies weights.safetensors and the tokenizer).
#include <memory>

#include "@NS:namespace@.h"
#include "cli/main.h"

int main(int argc, char** argv) {
  cli::ProgramSource source;
  source.name = @RUN_NAME:cpp_string@;
  source.load = [](const std::string& dir) {
    cli::ProgramSource::Loaded p;
    p.label = @RUN_NAME:cpp_string@;
    p.meta_json = @NS:namespace@::meta_json();
    p.functions = @NS:namespace@::signatures();
    // The weights are read at the first run: the text verbs' errors come first.
    p.open = [dir](const vm::SessionOptions& options, vm::Hook* hook) -> cli::ProgramSource::Run {
      auto session = std::make_shared<@NS:namespace@::Session>(@NS:namespace@::Program::load(dir), options);
      session->set_hook(hook);
      return [session](const std::string& function, std::vector<vm::Value> inputs, vm::EmitCallback on_emit) {
        return session->run(function, std::move(inputs), std::move(on_emit));
      };
    };
    return p;
  };
  return cli::run_main(argc, argv, source);
}
