// A Hook that measures every instruction: per op (kernels) count, seconds,
// multiply-adds and bytes written; per program function, calls and inclusive
// seconds. It is how the cost shape of a program is checked (a decode step must cost
// the same at step 2 and step 100) and where time goes.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "vm/session.h"

namespace vm {

struct OpStats {
  uint64_t count = 0;
  double seconds = 0;
  uint64_t macs = 0;         // multiply-adds of matrix products and attention
  uint64_t weight_macs = 0;  // the part against weights (linear), which is what a step must keep constant
  uint64_t bytes_out = 0;
  uint64_t weight_bytes = 0;  // bytes of weight matrices read (linear, linear_int8 with its scales)
};

class Profiler : public Hook {
 public:
  void before(const Function& fn, const Instr& ins, const Value* regs) override;
  void after(const Function& fn, const Instr& ins, const Value* regs) override;
  void reset();

  const std::map<std::string, OpStats>& ops() const { return ops_; }
  const std::map<std::string, OpStats>& calls() const { return calls_; }
  std::string report() const;  // a table, most expensive first

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> starts_;  // a stack: calls nest
  std::map<std::string, OpStats> ops_;
  std::map<std::string, OpStats> calls_;
};

}  // namespace vm
