#include "core/arena.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"
#include "core/tensor.h"

namespace vm {

namespace {

size_t round_up(size_t n) { return (n + kArenaAlignment - 1) & ~(kArenaAlignment - 1); }

// Measuring places tensors in an address range this large: more than any run needs,
// small enough that offsets plus sizes never wrap (sizes are at most kMaxTensorBytes, which
// is 2^31 where size_t has 32 bits).
constexpr size_t kMeasuringRange = size_t(sizeof(size_t) >= 8 ? uint64_t(1) << 56 : uint64_t(1) << 31);

}  // namespace

Ref<Arena> Arena::over(std::vector<ArenaRegion> regions, std::shared_ptr<void> owner) {
  if (regions.empty()) fail("Arena: no regions");
  Ref<Arena> a(new Arena());
  for (size_t i = 0; i < regions.size(); ++i) {
    const ArenaRegion& g = regions[i];
    Region r;
    r.name = g.name.empty() ? fmt::format("region {}", i) : g.name;
    if (!g.data && g.bytes) fail("Arena: {} has {} bytes at a null address", r.name, g.bytes);
    const uintptr_t start = reinterpret_cast<uintptr_t>(g.data);
    if (g.data && start > UINTPTR_MAX - g.bytes) fail("Arena: {} wraps the address space", r.name);
    const uintptr_t first = (start + kArenaAlignment - 1) & ~uintptr_t(kArenaAlignment - 1);
    const uintptr_t last = (start + g.bytes) & ~uintptr_t(kArenaAlignment - 1);
    if (g.data && last > first) {
      r.base = reinterpret_cast<char*>(first);
      r.capacity = size_t(last - first);
      r.free.push_back({0, r.capacity});
    }
    r.max_tensor_bytes = g.max_tensor_bytes;
    r.free.reserve(64);
    a->regions_.push_back(std::move(r));
  }
  if (a->capacity() == 0) fail("Arena: the regions hold no {}-byte aligned block", kArenaAlignment);
  a->spare_.reserve(256);
  a->owner_ = std::move(owner);
  return a;
}

Ref<Arena> Arena::with_budget(size_t bytes) {
  if (bytes == 0) fail("Arena: a budget of 0 bytes");
  if (bytes > kMaxTensorBytes) fail("Arena: a budget of {} bytes is more than the {} byte limit", bytes, kMaxTensorBytes);
  void* mem = std::aligned_alloc(kArenaAlignment, round_up(bytes));
  if (!mem) fail("Arena: out of memory allocating a budget of {} bytes", bytes);
  Ref<Arena> a;
  try {
    a = over({ArenaRegion{mem, round_up(bytes), 0, "budget"}});
  } catch (...) {
    std::free(mem);
    throw;
  }
  a->owned_ = mem;
  return a;
}

Ref<Arena> Arena::measuring() {
  Ref<Arena> a(new Arena());
  Region r;
  r.name = "measured";
  r.capacity = kMeasuringRange;
  r.free.push_back({0, kMeasuringRange});
  r.free.reserve(64);
  a->regions_.push_back(std::move(r));
  a->measuring_ = true;
  return a;
}

Arena::~Arena() {
  // Live buffers hold the arena, so only spare handles are left here.
  for (Buffer* b : spare_) delete b;
  std::free(owned_);
}

// Best fit among the holes below the region's top (the smallest free block that
// holds `bytes`, the lowest on a tie); the top block only when no hole fits. A decode
// loop frees and asks for the same sizes every step, so it gets back the blocks it
// freed and the top does not drift upward. Leaving the top for last also makes the
// placement independent of the region's size: a region at least as large as a
// measured run's high-water mark places that run's tensors at the same offsets
// (measure_memory relies on it).
bool Arena::carve(Region& r, size_t bytes, size_t* offset) {
  const size_t n = r.free.size();
  size_t best = n;
  const bool has_top = n > 0 && r.free[n - 1].offset + r.free[n - 1].bytes == r.capacity;
  for (size_t i = 0; i + (has_top ? 1 : 0) < n; ++i)
    if (r.free[i].bytes >= bytes && (best == n || r.free[i].bytes < r.free[best].bytes)) {
      best = i;
      if (r.free[i].bytes == bytes) break;
    }
  if (best == n && has_top && r.free[n - 1].bytes >= bytes) best = n - 1;
  if (best == n) return false;
  Block& b = r.free[best];
  *offset = b.offset;
  b.offset += bytes;
  b.bytes -= bytes;
  if (b.bytes == 0) r.free.erase(r.free.begin() + std::ptrdiff_t(best));
  r.in_use += bytes;
  r.peak_in_use = std::max(r.peak_in_use, r.in_use);
  r.high_water = std::max(r.high_water, *offset + bytes);
  return true;
}

void Arena::give_back(Region& r, size_t offset, size_t bytes) {
  auto it = std::lower_bound(r.free.begin(), r.free.end(), offset, [](const Block& b, size_t o) { return b.offset < o; });
  const bool join_prev = it != r.free.begin() && std::prev(it)->offset + std::prev(it)->bytes == offset;
  const bool join_next = it != r.free.end() && offset + bytes == it->offset;
  if (join_prev && join_next) {
    std::prev(it)->bytes += bytes + it->bytes;
    r.free.erase(it);
  } else if (join_prev) {
    std::prev(it)->bytes += bytes;
  } else if (join_next) {
    it->offset = offset;
    it->bytes += bytes;
  } else {
    r.free.insert(it, Block{offset, bytes});
  }
  r.in_use -= bytes;
}

Ref<Buffer> Arena::allocate(size_t bytes) {
  if (bytes > kMaxTensorBytes) fail("cannot allocate {} bytes, more than the {} byte limit of one buffer", bytes, kMaxTensorBytes);
  const size_t need = round_up(bytes == 0 ? 1 : bytes);
  Buffer* b = nullptr;
  size_t offset = 0;
  uint32_t region = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool placed = false;
    for (; region < regions_.size(); ++region) {
      Region& r = regions_[region];
      if (r.max_tensor_bytes && need > r.max_tensor_bytes) continue;
      if ((placed = carve(r, need, &offset))) break;
    }
    if (!placed) out_of_memory(bytes);
    in_use_ += need;
    peak_in_use_ = std::max(peak_in_use_, in_use_);
    largest_ = std::max(largest_, need);
    ++allocations_;
    if (!spare_.empty()) {
      b = spare_.back();
      spare_.pop_back();
    }
  }
  void* data = nullptr;
  if (measuring_) {
    data = std::aligned_alloc(kArenaAlignment, need);
  } else {
    data = regions_[region].base + offset;
  }
  if (!b) b = new (std::nothrow) Buffer();
  if (!data || !b) {
    delete b;
    std::lock_guard<std::mutex> lock(mu_);
    give_back(regions_[region], offset, need);
    in_use_ -= need;
    if (data && measuring_) std::free(data);
    fail("out of memory allocating {} bytes", need);
  }
  b->data_ = data;
  b->bytes_ = bytes;
  b->capacity_ = need;
  b->arena_offset_ = offset;
  b->arena_region_ = region;
  b->arena_ = Ref<Arena>(this);
  return Ref<Buffer>(b);
}

void Arena::reclaim(Buffer* b) {
  if (measuring_) std::free(b->data_);
  b->data_ = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  give_back(regions_[b->arena_region_], b->arena_offset_, b->capacity_);
  in_use_ -= b->capacity_;
  spare_.push_back(b);
}

void Arena::out_of_memory(size_t bytes) const {
  // Called with mu_ held: reads the regions directly.
  std::string where;
  for (const Region& r : regions_) {
    size_t largest_free = 0;
    for (const Block& b : r.free) largest_free = std::max(largest_free, b.bytes);
    where += fmt::format("; {}: {} of {} bytes in use, largest free block {} bytes", r.name, r.in_use, r.capacity,
                         largest_free);
    if (r.max_tensor_bytes) where += fmt::format(" (tensors up to {} bytes)", r.max_tensor_bytes);
  }
  fail("arena: out of memory: a tensor of {} bytes does not fit{}. Give the session a larger arena (`tensorvm inspect "
       "--memory` measures what a run needs)",
       bytes, where);
}

std::vector<Arena::RegionStats> Arena::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RegionStats> out;
  for (const Region& r : regions_) out.push_back({r.name, r.capacity, r.in_use, r.peak_in_use, r.high_water});
  return out;
}

size_t Arena::capacity() const {
  size_t n = 0;
  for (const Region& r : regions_) n += r.capacity;  // fixed after construction
  return n;
}

size_t Arena::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

size_t Arena::peak_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_in_use_;
}

size_t Arena::arena_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const Region& r : regions_) n += r.high_water;
  return n;
}

size_t Arena::largest_allocation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return largest_;
}

uint64_t Arena::allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocations_;
}

void Arena::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_in_use_ = in_use_;
  largest_ = 0;
  allocations_ = 0;
  for (Region& r : regions_) {
    r.peak_in_use = r.in_use;
    // The end of the last block in use: the free list's last block reaches the end
    // of the region when anything above it is free.
    size_t top = r.capacity;
    if (!r.free.empty() && r.free.back().offset + r.free.back().bytes == r.capacity) top = r.free.back().offset;
    r.high_water = top;
  }
}

}  // namespace vm
