// @NS@-run: tensorvm-run's command line for the compiled program @SOURCE@
//   @NS@-run PROGRAM_DIR FUNCTION [--ids "1 2 3; 4 5"] [--arg NAME=VALUE]... [--threads N] [--time] ...
// (vm/aot_cli.h lists the options; PROGRAM_DIR supplies weights.safetensors).
#include "@NS@.h"
#include "vm/aot_cli.h"

int main(int argc, char** argv) {
  vm::aot::CliProgram p;
  p.name = "@NS@-run";
  p.meta_json = @NS@::meta_json();
  p.functions = @NS@::signatures();
  p.run = [](const std::string& dir, const std::string& function, std::vector<vm::Value> inputs,
             const vm::SessionOptions& options, vm::EmitCallback on_emit, vm::Hook* hook) {
    @NS@::Session session(@NS@::Program::load(dir), options);
    session.set_hook(hook);
    return session.run(function, std::move(inputs), std::move(on_emit));
  };
  return vm::aot::cli_main(argc, argv, p);
}
