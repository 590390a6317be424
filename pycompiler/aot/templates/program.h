// @NS:namespace@: @SOURCE:cpp_comment@ compiled to C++ by `tensorvm compile` (docs/aot.md).
//   auto program = @NS:namespace@::Program::load("model.tvm");   // binds the ops and the weights by name
//   @NS:namespace@::Session session(program);
//   auto outputs = @NS:namespace@::run(session, "generate", {vm::Value(ids)});
// The same interface as vm::Program / vm::Session / vm::run, without a parser or an interpreter.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vm/aot.h"

#ifdef @NS:namespace@
#error "the namespace @NS:namespace@ is a macro of the headers above: compile the program with another --name"
#endif

namespace @NS:namespace@ {

struct Ops;
struct Weights;

class Program {
 public:
  // Binds the program's ops and the weights of DIR/weights.safetensors (mapped, as
  // vm::Program::load maps them). Throws vm::Error naming a missing op or weight.
  static std::shared_ptr<const Program> load(const std::string& dir, const vm::LoadOptions& options = {});
  ~Program();
  const Ops& ops() const { return *ops_; }
  const Weights& weights() const { return *weights_; }
  // The compiled-in IR text, named DIR/program.py as the interpreter names it in errors.
  const vm::aot::Source& source() const { return source_; }

 private:
  Program() = default;
  std::unique_ptr<const Ops> ops_;
  std::unique_ptr<const Weights> weights_;
  std::string source_file_;
  vm::aot::Source source_{};
};

// One caller's state: the buffer pool and the worker threads. One thread at a time.
class Session {
 public:
  explicit Session(std::shared_ptr<const Program> program, vm::SessionOptions options = {});
  std::vector<vm::Value> run(const std::string& function, std::vector<vm::Value> inputs, vm::EmitCallback on_emit = {});
  std::vector<vm::Value> run_named(const std::string& function,
                                   const std::vector<std::pair<std::string, vm::Value>>& named,
                                   vm::EmitCallback on_emit = {});
  // As vm::Session's (docs/aot.md, "Hooks"): a hook sees each op, call and loop.
  void set_hook(vm::Hook* hook) { runtime_.set_hook(hook); }
  vm::Hook* hook() const { return runtime_.hook(); }
  vm::Profiler* profiler() { return runtime_.profiler(); }  // SessionOptions::profile
  uint64_t instructions_executed() const { return runtime_.instructions_executed(); }

 private:
  std::shared_ptr<const Program> program_;
  vm::aot::Runtime runtime_;
};

// run(name, inputs): the embedding entry, as vm::run.
std::vector<vm::Value> run(Session& session, const std::string& function, std::vector<vm::Value> inputs);
// The functions run() takes, with their parameters; the program's meta.json.
const std::vector<vm::aot::Signature>& signatures();
const std::string& meta_json();

}  // namespace @NS:namespace@
