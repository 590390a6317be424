// An app-provided memory arena (docs/runtime.md, "A memory arena"): every tensor a
// Session's run allocates is carved from memory the app gave it (a buffer it owns,
// or one block of a byte budget) instead of the heap. A device app uses it to bound
// a model's memory, or to put tensors in the memory it chooses (one small fast
// buffer and one large slow one). Running out is a vm::Error at the allocation,
// which the interpreter labels with the function, IR line and op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/ref.h"

namespace vm {

class Buffer;

// One block of memory an arena carves from. `data` is owned by the app and must
// outlive the Arena (which lives while a Session or a tensor carved from it does).
// Any alignment: the arena aligns each tensor to kArenaAlignment and uses what lies
// between the first and the last aligned address.
struct ArenaRegion {
  void* data = nullptr;
  size_t bytes = 0;
  // Tensors larger than this go to a later region (0: no limit). With a small fast
  // region first and a large slow one after it, small hot tensors (a decode step's
  // activations) land in the fast one and the KV cache in the slow one.
  size_t max_tensor_bytes = 0;
  std::string name = {};  // for errors and stats ("sram", "dram"); "region N" when empty
};

constexpr size_t kArenaAlignment = 64;

class Arena : public RefCounted {
 public:
  // An arena over memory the app owns, tried in order for each tensor. `owner`, if
  // given, is held until the arena goes (a Python buffer object, a mapping).
  static Ref<Arena> over(std::vector<ArenaRegion> regions, std::shared_ptr<void> owner = nullptr);
  // An arena of `bytes` (rounded up to kArenaAlignment) that allocates its one block
  // itself, once, here.
  static Ref<Arena> with_budget(size_t bytes);
  // For measuring: the same placement over an address range of unlimited size, each
  // tensor backed by its own heap block. arena_bytes() then says how large a buffer
  // the measured allocations needed (vm/memory_report.h).
  static Ref<Arena> measuring();

  ~Arena() override;

  // A block of `bytes` (aligned to kArenaAlignment; 0 counts as 1), or a vm::Error
  // saying how much is in use and free. Thread-safe: kernels allocate scratch from
  // worker threads.
  Ref<Buffer> allocate(size_t bytes);

  struct RegionStats {
    std::string name;
    size_t capacity = 0;     // usable bytes (after alignment)
    size_t in_use = 0;       // bytes carved now (each tensor rounded up to the alignment)
    size_t peak_in_use = 0;  // most carved at once since reset_peak()
    size_t high_water = 0;   // the highest end of any carved block since reset_peak():
                             // the region size the allocations needed (>= peak_in_use:
                             // fragmentation)
  };
  std::vector<RegionStats> stats() const;
  size_t capacity() const;     // all regions
  size_t in_use() const;
  size_t peak_in_use() const;  // of the sum over regions
  size_t arena_bytes() const;  // sum of the regions' high-water marks
  size_t largest_allocation() const;
  uint64_t allocations() const;  // tensors carved since reset_peak()
  // Starts a new measurement: peaks and high-water marks restart from what is in use now.
  void reset_peak();

 private:
  friend class Buffer;
  struct Block {
    size_t offset, bytes;
  };
  struct Region {
    char* base = nullptr;  // aligned start (nullptr: measuring, offsets only)
    size_t capacity = 0;
    size_t max_tensor_bytes = 0;
    std::string name;
    std::vector<Block> free;  // sorted by offset, coalesced
    size_t in_use = 0, peak_in_use = 0, high_water = 0;
  };
  Arena() = default;
  static bool carve(Region& r, size_t bytes, size_t* offset);
  static void give_back(Region& r, size_t offset, size_t bytes);
  void reclaim(Buffer* b);  // from Buffer::destroy
  [[noreturn]] void out_of_memory(size_t bytes) const;

  mutable std::mutex mu_;
  std::vector<Region> regions_;
  std::vector<Buffer*> spare_;  // Buffer handles kept for reuse: no heap traffic per tensor
  void* owned_ = nullptr;       // with_budget's block
  std::shared_ptr<void> owner_;
  bool measuring_ = false;
  size_t in_use_ = 0, peak_in_use_ = 0, largest_ = 0;
  uint64_t allocations_ = 0;
};

}  // namespace vm
