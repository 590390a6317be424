// A Hook that measures every instruction: per instruction (and so per op) count,
// seconds, multiply-adds and bytes read and written; per program function, calls and
// inclusive seconds; optionally a trace of every slice (instructions, function calls,
// while_loop iterations) in the Chrome trace / Perfetto JSON format. It is how the cost
// shape of a program is checked (a decode step must cost the same at step 2 and step
// 100) and where time goes (`tensorvm profile`, docs/tools.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "vm/session.h"

namespace vm {

struct OpStats {
  uint64_t count = 0;
  double seconds = 0;
  uint64_t macs = 0;         // multiply-adds of matrix products and attention
  uint64_t weight_macs = 0;  // the part against weights (linear), which is what a step must keep constant
  uint64_t bytes_in = 0;   // tensor data kernels read (weights included; views and shape queries read none)
  uint64_t bytes_out = 0;  // tensor data kernels write (a view writes none)
  uint64_t weight_bytes = 0;  // bytes of weight matrices read (linear, linear_int8 with its scales)
};

// One instruction's totals over every time it ran.
struct InstrStats : OpStats {
  const Function* fn = nullptr;
  const Instr* ins = nullptr;
};

struct ProfilerOptions {
  bool trace = false;  // keep one event per slice for trace_json / write_trace
  // Measure the calling thread's CPU time instead of wall time: on a machine others
  // are busy on, the time the run really ran. Meant for one thread: work done on the
  // kernels' pool threads is not counted. Each reading costs more (a system call).
  bool cpu_time = false;
  // Events past this many are dropped (and counted), so a long run cannot exhaust memory.
  size_t max_trace_events = 4'000'000;
};

class Profiler : public Hook {
 public:
  explicit Profiler(ProfilerOptions options = {});

  void begin_run(const Function& fn) override;
  void enter(const Function& fn) override;
  void leave(const Function& fn) override;
  void before(const Function& fn, const Instr& ins, const Value* regs) override;
  void after(const Function& fn, const Instr& ins, const Value* regs) override;
  void reset();

  // Kernels and `param` by op name (not call, while_loop, cond, emit or return).
  std::map<std::string, OpStats> ops() const;
  // call (by callee), while_loop, cond and emit: their time includes what runs inside.
  std::map<std::string, OpStats> calls() const;
  // Every instruction that ran (return included), in the order each first finished.
  const std::vector<InstrStats>& instructions() const { return instrs_; }
  double run_seconds() const { return run_seconds_; }  // wall time of the runs measured
  uint64_t runs() const { return runs_; }

  // Tables, most expensive first. Shares are of run_seconds(); the op table's rows
  // (every instruction that is not a call, loop or branch, plus the interpreter's
  // own time between them) add up to 100%.
  std::string op_table() const;
  std::string call_table() const;
  std::string instruction_table(size_t top = 20) const;
  std::string report(size_t top = 20) const;  // the three tables

  // The trace as Chrome trace JSON ("traceEvents", complete "X" events in
  // microseconds): each run, function call, while_loop, iteration and instruction a
  // slice, nested by time. Needs ProfilerOptions::trace.
  std::string trace_json() const;
  void write_trace(const std::string& path) const;  // atomically; throws vm::Error
  size_t trace_events() const { return events_.size(); }
  uint64_t dropped_events() const { return dropped_; }

 private:
  struct Open {
    const Function* fn;
    const Instr* ins;  // null for a function's frame
    uint64_t start;    // ns
    uint32_t children = 0;  // frames entered under a while_loop: cond, body, cond, ...
    int32_t iteration = -1;
  };
  struct Event {
    uint64_t start_ns, dur_ns;
    const Function* fn;
    const Instr* ins;  // null for a function's frame
    int32_t iteration;  // a while_loop body's iteration (from 1), else -1
    int32_t depth;
  };
  uint64_t now() const;  // ns, on the clock options_ chose
  void record(const Open& o, uint64_t end);

  ProfilerOptions options_;
  uint64_t epoch_ = 0;
  bool have_epoch_ = false;
  std::vector<Open> stack_;  // calls nest
  std::unordered_map<const Instr*, size_t> index_;
  std::vector<InstrStats> instrs_;
  double run_seconds_ = 0;
  uint64_t runs_ = 0;
  std::vector<Event> events_;
  uint64_t dropped_ = 0;
};

}  // namespace vm
