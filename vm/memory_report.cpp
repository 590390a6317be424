#include "vm/memory_report.h"

#include <fmt/format.h>

#include "core/arena.h"
#include "vm/session.h"

namespace vm {

namespace {

// Notes the instruction after which the arena's high-water mark rose. Compared with
// the mark at the previous hook event, not at this instruction's before(): a call's
// after() would otherwise take the credit for what its callee allocated.
class HighWaterHook : public Hook {
 public:
  HighWaterHook(const Arena& arena, const Program& program) : arena_(arena), program_(program) {}
  void before(const Function&, const Instr&, const Value*) override { last_ = arena_.arena_bytes(); }
  void after(const Function& fn, const Instr& ins, const Value*) override {
    const size_t now = arena_.arena_bytes();
    if (now > last_) where_ = fmt::format("{}:{} in {}: {}", program_.filename(), ins.line, fn.name, ins.text);
    last_ = now;
  }
  const std::string& where() const { return where_; }

 private:
  const Arena& arena_;
  const Program& program_;
  size_t last_ = 0;
  std::string where_;
};

}  // namespace

MemoryReport measure_memory(std::shared_ptr<const Program> program, const std::string& function, std::vector<Value> inputs,
                            int num_threads) {
  if (!program) fail("measure_memory: no program");
  Ref<Arena> arena = Arena::measuring();
  SessionOptions options;
  options.num_threads = num_threads;
  options.arena = arena;
  Session session(program, options);
  HighWaterHook hook(*arena, *program);
  session.set_hook(&hook);
  MemoryReport r;
  r.outputs = session.run(function, std::move(inputs));
  r.arena_bytes = arena->arena_bytes();
  r.peak_bytes = arena->peak_in_use();
  r.largest_tensor = arena->largest_allocation();
  r.allocations = arena->allocations();
  r.instructions = session.instructions_executed();
  r.high_water_at = hook.where();
  return r;
}

}  // namespace vm
