// tensorvm-run: run a function of a program from the command line, with no Python: the
// command line of cli/main.h over the interpreter (docs/tools.md). `tensorvm run`
// (pycompiler/cli.py) takes the same options and builds its inputs with the same code
// (cli/main.h function_inputs, bound into Python).
#include "cli/main.h"
#include "vm/vm.h"

int main(int argc, char** argv) {
  cli::ProgramSource source;
  source.name = "tensorvm-run";
  source.verifies = true;
  source.load = [](const std::string& dir) { return cli::interpreted(dir, vm::Program::load(dir)); };
  return cli::run_main(argc, argv, source);
}
