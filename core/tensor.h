// Tensor: a typed, shaped view of a refcounted buffer. Storage is row-major; views
// carry strides so that a KV cache can hand out its filled prefix without copying,
// but kernels see contiguous tensors unless their op declares it accepts views.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>  // unused here; kept for the files that get it through this header
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/ref.h"

namespace vm {

constexpr int kMaxDims = 8;
// The largest tensor (or pooled buffer) the runtime allocates: 2^48 bytes (256 TiB),
// the x86-64 and AArch64 user address space; 2^31 bytes with a 32-bit size_t (WebAssembly,
// whose memory is at most 4 GiB), so that a byte count, and an arena offset plus one, fit
// in size_t. A larger request is an error, not a wrapped size.
constexpr uint64_t kMaxTensorBytes = sizeof(size_t) >= 8 ? uint64_t(1) << 48 : uint64_t(1) << 31;

// A fixed-capacity list of int64 (shapes, strides, permutations): no heap.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  template <typename It>
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
  }

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + n_; }
  int64_t* begin() { return d_; }
  int64_t* end() { return d_ + n_; }
  void push_back(int64_t v);
  void resize(int n, int64_t fill = 0);
  int64_t numel() const;  // product; 1 for an empty shape; throws when it overflows int64
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "[2, 3]"

 private:
  int64_t d_[kMaxDims] = {};
  int n_ = 0;
};

class Pool;
class Arena;

// A block of memory: from a Pool (returned to it when the last reference dies), from
// an app's Arena (core/arena.h; given back to it likewise), or external (an mmap-ed
// weights file, a numpy array) kept alive by `keepalive`.
class Buffer : public RefCounted {
 public:
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  static Ref<Buffer> external(void* data, size_t bytes, std::shared_ptr<void> keepalive);
  // A program's weight (marked by the loader, before the program is shared): a host
  // must not hand it out writeable, since every run and every Session reads it, and
  // a mapped one is read-only memory (Python returns such arrays read-only).
  bool is_weight() const { return weight_; }
  void mark_weight() { weight_ = true; }

 protected:
  void destroy() override;

 private:
  friend class Pool;
  friend class Arena;
  Buffer() = default;
  ~Buffer() override;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  size_t capacity_ = 0;   // pooled: allocation size (bytes rounded up)
  Ref<Pool> pool_;        // pooled buffers hold their pool while alive
  std::shared_ptr<void> keepalive_;
  Ref<Arena> arena_;      // carved buffers hold their arena while alive
  size_t arena_offset_ = 0;
  uint32_t arena_region_ = 0;
  bool weight_ = false;
  bool mapped_ = false;  // a large pooled block: pages of its own (core/tensor.cpp), unmapped when freed
};

// Recycles buffers by size so a steady decode loop stops calling malloc: every step
// asks for the same sizes it freed one step earlier. Thread-safe because a tensor
// may be released on another thread than the one that allocated it. A Pool given an
// Arena hands out blocks carved from it instead (a Session with an app's arena).
//
// Blocks come in size classes (size_class() below), so a tensor that grows a little
// each step (a beam search's sequences, the KV cache's reorder scratch) takes back the
// block it freed for several steps instead of leaving one cached block per exact size.
// Cached blocks of sizes the loop has stopped asking for are freed once the pool holds
// more than the most it has had live at once, and the pool never holds more than twice
// that (evict_stale() in core/tensor.cpp; docs/runtime.md, "The buffer pool").
class Pool : public RefCounted {
 public:
  explicit Pool(size_t max_cached_bytes = size_t(1) << 30);
  explicit Pool(Ref<Arena> arena);
  ~Pool() override;
  Ref<Buffer> allocate(size_t bytes);
  static Pool& global();
  Arena* arena() const { return arena_.get(); }

  // Counters for tests, the profiler and memory reports. Bytes are the pool's block
  // sizes (requests rounded up to their size class); an arena's own counters are in
  // core/arena.h.
  size_t fresh_allocations() const { return fresh_allocs_; }
  size_t cached_bytes() const { return cached_bytes_; }
  uint64_t allocations() const { return allocs_; }      // every allocate(), fresh or reused
  size_t live_bytes() const { return live_bytes_; }      // handed out, not given back yet
  size_t peak_live_bytes() const { return peak_live_; }  // most live at once
  size_t peak_held_bytes() const { return peak_held_; }  // most live + cached at once: the pool's footprint
  size_t evictions() const { return evictions_; }        // cached blocks freed to keep held near live
  void reset_peak();                                     // peaks restart from now
  void trim();  // frees every cached block

  // Size classes: 64-byte steps up to 1 KiB, then 8 classes per power of two, so a
  // block is under 12.5% larger than the request. Public for tests.
  static constexpr int kSizeClasses = 16 + 8 * 38;  // the last one holds kMaxTensorBytes
  static int size_class(size_t bytes);               // bytes <= kMaxTensorBytes
  static size_t class_bytes(int size_class);         // the block size of a class

 private:
  friend class Buffer;
  Ref<Buffer> allocate_from_arena(size_t bytes);
  void give_back(Buffer* b);
  void evict_stale();
  struct FreeList {
    std::vector<Buffer*> blocks;
    uint64_t last_use = 0;  // allocs_ when a block of this class was last taken or given back
    uint64_t max_idle = 0;  // the most allocations this class went untouched before a block was taken
  };
  static constexpr uint64_t kStaleSlack = 1024;  // allocations; see evict_stale()
  std::mutex mu_;
  std::vector<FreeList> free_;  // kSizeClasses lists, indexed by class
  size_t max_cached_bytes_;
  size_t cached_bytes_ = 0;
  size_t fresh_allocs_ = 0;
  size_t evictions_ = 0;
  uint64_t allocs_ = 0;
  size_t live_bytes_ = 0, peak_live_ = 0, peak_held_ = 0;
  size_t high_water_ = 0;  // most live at once before the last reset_peak(); the budget ignores resets
  Ref<Arena> arena_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor
  // A new contiguous tensor from `pool` (the global pool when null). Contents are
  // uninitialised.
  static Tensor empty(DType dtype, const Shape& shape, Pool* pool = nullptr);
  static Tensor zeros(DType dtype, const Shape& shape, Pool* pool = nullptr);
  // Wraps memory owned elsewhere; `keepalive` holds the owner.
  static Tensor external(void* data, DType dtype, const Shape& shape, std::shared_ptr<void> keepalive);

  bool defined() const { return static_cast<bool>(buf_); }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }  // in elements
  int ndim() const { return shape_.size(); }
  int64_t size(int dim) const;  // dim may be negative
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;
  const Ref<Buffer>& buffer() const { return buf_; }
  int64_t offset() const { return offset_; }  // in elements

  void* raw() const { return static_cast<char*>(buf_->data()) + offset_ * int64_t(dtype_size(dtype_)); }
  template <typename T>
  T* data() const {
    if (dtype_of<T>::value != dtype_) fail("tensor has dtype {}, read as {}", dtype_name(dtype_), dtype_name(dtype_of<T>::value));
    return static_cast<T*>(raw());
  }

  // Zero-copy views.
  Tensor reshape(const Shape& shape) const;            // requires contiguous
  Tensor slice0(int64_t begin, int64_t end) const;     // rows [begin, end) of dim 0
  Tensor view(const Shape& shape, const Shape& strides, int64_t offset) const;
  // A contiguous copy (or *this when already contiguous).
  Tensor contiguous(Pool* pool = nullptr) const;

  std::string describe() const;  // "f32[2, 3]"

 private:
  Ref<Buffer> buf_;
  int64_t offset_ = 0;
  DType dtype_ = DType::f32;
  Shape shape_;
  Shape strides_;
};

Shape contiguous_strides(const Shape& shape);
// numel * element size, checked: throws for a negative dim, an element count that
// overflows int64 or a byte size over kMaxTensorBytes.
size_t tensor_bytes(DType dtype, const Shape& shape);

}  // namespace vm
