// A Session is one caller's execution state over a shared Program: the register
// stack, the buffer pool and the thread count. One thread uses a Session at a time;
// run many Sessions on one Program for concurrency.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "vm/program.h"
#include "vm/thread_pool.h"

namespace vm {

// Called around every instruction when installed (the profiler and the numerics
// debugger are built on it). With no hook the interpreter pays one branch.
class Hook {
 public:
  virtual ~Hook() = default;
  virtual void before(const Function& fn, const Instr& ins, const Value* regs) = 0;
  virtual void after(const Function& fn, const Instr& ins, const Value* regs) = 0;
};

struct SessionOptions {
  int num_threads = 1;
  // The most instructions one run may execute, 0 for no limit (the default). A
  // while_loop that passes it stops the run with an error, so a loop that never ends
  // (a bad program or an input it does not expect) cannot hold a caller forever.
  uint64_t max_instructions = 0;
};

class Session {
 public:
  explicit Session(std::shared_ptr<const Program> program, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Program& program() const { return *program_; }
  std::vector<Value> run(const std::string& function, std::vector<Value> inputs);
  // By parameter name; parameters not given are None, which only `Any` parameters
  // accept (programs use them for options with defaults inside the program).
  std::vector<Value> run_named(const std::string& function, const std::vector<std::pair<std::string, Value>>& named);

  void set_hook(Hook* hook) { hook_ = hook; }  // not owned; nullptr to remove
  void set_num_threads(int n);
  int num_threads() const { return options_.num_threads; }
  void set_max_instructions(uint64_t n) { options_.max_instructions = n; }
  uint64_t max_instructions() const { return options_.max_instructions; }
  Pool& pool() { return *pool_; }
  uint64_t instructions_executed() const { return instructions_; }

 private:
  friend class Interpreter;
  std::shared_ptr<const Program> program_;
  SessionOptions options_;
  Ref<Pool> pool_;
  std::unique_ptr<ThreadPool> threads_;
  std::vector<Value> stack_;
  Hook* hook_ = nullptr;
  uint64_t instructions_ = 0;
  uint64_t budget_end_ = UINT64_MAX;  // instructions_ value at which the current run stops
};

// The embedding API: run `function` of the session's program on `inputs`.
std::vector<Value> run(Session& session, const std::string& function, std::vector<Value> inputs);
std::vector<Value> run_named(Session& session, const std::string& function,
                             const std::vector<std::pair<std::string, Value>>& named);

}  // namespace vm
