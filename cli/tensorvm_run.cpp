// tensorvm-run: run a function of a program from the command line, with no Python: the
// command line of cli/main.h over the interpreter (docs/tools.md). The same options and
// files as `tensorvm run` (pycompiler/cli.py), whose inputs are built by the same code
// (cli/run_io.h, bound into Python).
#include <memory>

#include "cli/main.h"
#include "cli/verify.h"
#include "vm/vm.h"

int main(int argc, char** argv) {
  cli::ProgramSource source;
  source.name = "tensorvm-run";
  source.verifies = true;
  source.load = [](const std::string& dir) {
    std::shared_ptr<const vm::Program> program = vm::Program::load(dir);
    cli::ProgramSource::Loaded p;
    p.label = program->filename();
    p.meta_json = program->meta_json();
    for (const vm::Function& f : program->functions())
      p.functions.push_back({f.name.c_str(), f.param_names, f.param_types});
    p.open = [program](const vm::SessionOptions& options, vm::Hook* hook) -> cli::ProgramSource::Run {
      auto session = std::make_shared<vm::Session>(program, options);
      session->set_hook(hook);
      return [session](const std::string& function, std::vector<vm::Value> inputs, vm::EmitCallback on_emit) {
        return vm::run(*session, function, std::move(inputs), std::move(on_emit));
      };
    };
    p.verify = [dir, program](const vm::SessionOptions& options) { return cli::run_verify(dir, program, options); };
    return p;
  };
  return cli::run_main(argc, argv, source);
}
