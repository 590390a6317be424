// What a run needs of an arena (docs/runtime.md, "A memory arena"), measured by
// running it: every tensor the run allocates is placed by the arena's own placement
// over an address range of unlimited size (each backed by a heap block of its own),
// and the report says how high the placement reached. A program's while_loops run
// as many times as the inputs make them, so the figure holds for these inputs; for
// generation, pass inputs that take every step (min_new_tokens = max_new_tokens) to
// measure the worst case.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vm/program.h"
#include "core/value.h"

namespace vm {

struct MemoryReport {
  // The smallest arena (Arena::with_budget) in which this run, repeated with the same
  // inputs on one thread, carves every tensor at the same offsets, so it fits:
  // the highest end of any carved block. With more threads, kernels' scratch may be
  // carved in another order; leave headroom.
  size_t arena_bytes = 0;
  // The most bytes of tensors alive at once (each rounded up to kArenaAlignment);
  // arena_bytes - peak_bytes is what fragmentation cost.
  size_t peak_bytes = 0;
  size_t largest_tensor = 0;  // bytes
  uint64_t allocations = 0;   // tensors carved
  uint64_t instructions = 0;  // instructions executed
  // Where arena_bytes was last raised: "program.py:12 in decode_step: x = add(a, b)".
  std::string high_water_at;
  std::vector<Value> outputs;  // the run's results (holding them counted in the figures)
};

MemoryReport measure_memory(std::shared_ptr<const Program> program, const std::string& function, std::vector<Value> inputs,
                            int num_threads = 1);

}  // namespace vm
