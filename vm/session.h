// A Session is one caller's execution state over a shared Program: the register
// stack, the buffer pool and the thread count. It serves one run at a time: a second
// run while one is under way (from another thread, or from a callback of its own run)
// is a vm::Error, not a corrupted stack. Run many Sessions on one Program for
// concurrency; vm::SessionPool (vm/session_pool.h) hands them out.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/arena.h"
#include "vm/program.h"
#include "core/thread_pool.h"

namespace vm {

class Profiler;

// Called around every instruction when installed (the profiler and the numerics
// debugger are built on it). With no hook the interpreter pays one branch per
// function it runs, none per instruction: it runs a loop without hook calls.
class Hook {
 public:
  virtual ~Hook() = default;
  // A run of Session::run starts with `fn` (a run that failed may have left
  // enter/before calls without their leave/after).
  virtual void begin_run(const Function&) {}
  // Around each function the interpreter runs: the run's own, a call, each while_loop
  // condition and body, a cond's branch.
  virtual void enter(const Function&) {}
  virtual void leave(const Function&) {}
  // Around each instruction; `regs` is the function's frame: after() sees the
  // instruction's results in regs[ins.outs[i]], before its dead registers are cleared.
  virtual void before(const Function& fn, const Instr& ins, const Value* regs) = 0;
  virtual void after(const Function& fn, const Instr& ins, const Value* regs) = 0;
};

// Receives what a program's `emit(channel, value)` hands out (docs/ir.md). Returning
// false answers "stop": the program sees False and ends its loop, returning what it
// has. It runs on the thread that called run; an exception it throws fails the run.
using EmitCallback = std::function<bool(const std::string& channel, const Value& value)>;

// The step's new token ids, one vector per row (sequence): the "tokens" channel of
// the generation library (docs/generation.md, "Streaming"). Returning false stops
// generation. A row may receive no token in a step (beam search streams only final
// tokens).
using TokenCallback = std::function<bool(const std::vector<std::vector<int64_t>>& tokens)>;

// An EmitCallback that decodes the "tokens" channel for `on_tokens` and ignores
// every other channel (the prompt, ...).
EmitCallback token_stream(TokenCallback on_tokens);

struct SessionOptions {
  int num_threads = 1;
  // The most instructions one run may execute, 0 for no limit (the default). A
  // while_loop that passes it stops the run with an error, so a loop that never ends
  // (a bad program or an input it does not expect) cannot hold a caller forever.
  uint64_t max_instructions = 0;
  // Install a Profiler of the session's own (Session::profiler()), with its trace of
  // every slice when profile_trace is set. Off, nothing is measured and the
  // interpreter runs its loop without hook calls.
  bool profile = false;
  bool profile_trace = false;
  // Carve every tensor of the session's runs from this arena (core/arena.h) instead of
  // the heap: Arena::with_budget(bytes) or Arena::over({{buffer, size}, ...}). Null
  // (the default): a buffer pool of the session's own. Weights stay where the
  // program mapped them. Tensors a run returns stay carved until the caller drops
  // them; several sessions may share one arena.
  Ref<Arena> arena = {};
};

class Session {
 public:
  explicit Session(std::shared_ptr<const Program> program, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Program& program() const { return *program_; }
  std::vector<Value> run(const std::string& function, std::vector<Value> inputs);
  // With `on_emit` (empty: none) in place of the session's own callback, for this run
  // only; the session's own is never touched, so a refused second run cannot disturb
  // the callback of the run under way.
  std::vector<Value> run(const std::string& function, std::vector<Value> inputs, const EmitCallback& on_emit);
  // By parameter name; parameters not given are None, which only `Any` parameters
  // accept (programs use them for options with defaults inside the program).
  std::vector<Value> run_named(const std::string& function, const std::vector<std::pair<std::string, Value>>& named);

  void set_hook(Hook* hook) { hook_ = hook; }  // not owned; nullptr to remove
  Hook* hook() const { return hook_; }
  // The session's own profiler (SessionOptions::profile), or nullptr. set_hook
  // replaces it as the hook; set_hook(profiler()) puts it back.
  Profiler* profiler() { return profiler_.get(); }
  // With no callback (the default, or an empty function) emit costs one branch and
  // answers "continue".
  void set_on_emit(EmitCallback on_emit) { on_emit_ = std::move(on_emit); }
  const EmitCallback& on_emit() const { return on_emit_; }
  void set_num_threads(int n);
  int num_threads() const { return options_.num_threads; }
  void set_max_instructions(uint64_t n) { options_.max_instructions = n; }
  uint64_t max_instructions() const { return options_.max_instructions; }
  Pool& pool() { return *pool_; }
  Arena* arena() const { return options_.arena.get(); }
  uint64_t instructions_executed() const { return instructions_; }

 private:
  friend class Interpreter;
  std::shared_ptr<const Program> program_;
  SessionOptions options_;
  Ref<Pool> pool_;
  std::unique_ptr<ThreadPool> threads_;
  std::vector<Value> stack_;
  Hook* hook_ = nullptr;
  std::unique_ptr<Profiler> profiler_;
  EmitCallback on_emit_;
  const EmitCallback* emit_ = nullptr;  // the callback of the run under way
  uint64_t instructions_ = 0;
  uint64_t budget_end_ = UINT64_MAX;  // instructions_ value at which the current run stops
  std::atomic<bool> running_{false};
};

// The embedding API: run `function` of the session's program on `inputs`.
std::vector<Value> run(Session& session, const std::string& function, std::vector<Value> inputs);
std::vector<Value> run_named(Session& session, const std::string& function,
                             const std::vector<std::pair<std::string, Value>>& named);
// run() with `on_emit` in place of the session's own callback for this run only
// (Session::run).
std::vector<Value> run(Session& session, const std::string& function, std::vector<Value> inputs,
                       EmitCallback on_emit);

}  // namespace vm
