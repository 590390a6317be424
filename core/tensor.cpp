#include "core/tensor.h"

#include <algorithm>
#include <cstdlib>

#if !defined(__EMSCRIPTEN__)
#include <sys/mman.h>
#endif

#include <fmt/format.h>

#include "core/arena.h"

namespace vm {

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t v) {
  if (n_ == kMaxDims) fail("tensors have at most {} dimensions", kMaxDims);
  d_[n_++] = v;
}

void Shape::resize(int n, int64_t fill) {
  if (n < 0 || n > kMaxDims) fail("tensors have at most {} dimensions", kMaxDims);
  for (int i = n_; i < n; ++i) d_[i] = fill;
  n_ = n;
}

int64_t Shape::numel() const {
  // Checked: a product that wraps would size a tiny buffer that kernels then overrun.
  // A zero dim makes the product 0 even after an overflowing prefix.
  int64_t p = 1;
  bool overflow = false;
  for (int i = 0; i < n_; ++i) {
    if (d_[i] == 0) return 0;
    if (!overflow && __builtin_mul_overflow(p, d_[i], &p)) overflow = true;
  }
  if (overflow) fail("shape {} has more elements than fit in an int64", str());
  return p;
}

bool Shape::operator==(const Shape& o) const {
  if (n_ != o.n_) return false;
  for (int i = 0; i < n_; ++i)
    if (d_[i] != o.d_[i]) return false;
  return true;
}

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(begin(), end(), ", ")); }

Shape contiguous_strides(const Shape& shape) {
  Shape s;
  s.resize(shape.size());
  const int64_t n = shape.numel();  // checks for overflow; 0 when any dim is 0
  int64_t acc = 1;
  for (int i = shape.size() - 1; i >= 0; --i) {
    s[i] = acc;
    // With a zero dim the outer strides are never used to address anything; keep them
    // from wrapping all the same.
    if (n == 0 && shape[i] == 0) continue;
    // numel is 0 with a zero dim whatever the others are, but strides, is_contiguous
    // and the ops' loops multiply the others: an empty [2^32, 2^32, 0] from a file
    // would overflow them all, so it is refused here, where every new tensor passes.
    if (__builtin_mul_overflow(acc, shape[i], &acc))
      fail("shape {} is empty, but its other dims multiply past int64", shape.str());
  }
  return s;
}

// ---------------------------------------------------------------- Buffer / Pool

// Large pool blocks are pages mapped for them alone, not malloc's: glibc raises its
// mmap threshold to the size of each mapped block freed (up to 32 MiB), so after the
// first run an encoder's multi-MiB tensors came from the heap, and the holes they left
// when the pool freed them stayed resident (a whisper-tiny transcribe held ~45 MiB of
// free heap beside 24 MiB of cached blocks, by glibc's mallinfo2). A mapped block goes
// back to the system when the pool frees it. WebAssembly's memory never shrinks, so
// there the heap serves every block.
namespace {

#if defined(__EMSCRIPTEN__)
constexpr bool kMapLargeBlocks = false;
#else
constexpr bool kMapLargeBlocks = true;
#endif
constexpr size_t kMappedBlockBytes = size_t(128) << 10;  // glibc's initial mmap threshold

void* map_block(size_t bytes) {
#if defined(__EMSCRIPTEN__)
  (void)bytes;
  return nullptr;
#else
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
#endif
}

void unmap_block(void* p, size_t bytes) {
#if defined(__EMSCRIPTEN__)
  (void)p, (void)bytes;
#else
  munmap(p, bytes);
#endif
}

}  // namespace

Buffer::~Buffer() {
  if (keepalive_ || !data_) return;
  if (mapped_)
    unmap_block(data_, capacity_);
  else
    std::free(data_);
}

Ref<Buffer> Buffer::external(void* data, size_t bytes, std::shared_ptr<void> keepalive) {
  Buffer* b = new Buffer();
  b->data_ = data;
  b->bytes_ = bytes;
  b->keepalive_ = keepalive ? std::move(keepalive) : std::shared_ptr<void>(data, [](void*) {});
  return Ref<Buffer>(b);
}

void Buffer::destroy() {
  weight_ = false;  // a weight copied into a pool block leaves it as a plain block
  if (arena_) {
    // As for a pool below: the arena may go with its last reference.
    Ref<Arena> arena = std::move(arena_);
    arena->reclaim(this);
    return;
  }
  if (!pool_) {
    delete this;
    return;
  }
  // Take the pool reference out first: returning the block may drop the pool's
  // last reference, and then the pool's destructor frees this block too.
  Ref<Pool> pool = std::move(pool_);
  pool->give_back(this);
}

Pool::Pool(size_t max_cached_bytes) : free_(kSizeClasses), max_cached_bytes_(max_cached_bytes) {}

Pool::Pool(Ref<Arena> arena) : max_cached_bytes_(0), arena_(std::move(arena)) {
  if (!arena_) fail("Pool: no arena");
}

Pool::~Pool() { trim(); }

Pool& Pool::global() {
  // Never destroyed: buffers may be released during static destruction.
  static Pool* p = [] {
    Pool* q = new Pool();
    q->retain();
    return q;
  }();
  return *p;
}

// In 64-byte units u (the blocks' alignment): classes 0-15 are u = 1..16; above, each
// power-of-two range (2^(s+3), 2^(s+4)] units is cut in 8 steps of 2^s, so a block
// is under 12.5% larger than its request. Why classes and not exact sizes: a tensor
// that grows by one position per step would otherwise ask for a size no step freed
// and leave its old block cached for good; with 8 steps per octave its block serves
// it until it grows by an eighth.
int Pool::size_class(size_t bytes) {
  const uint64_t u = bytes <= 64 ? 1 : (uint64_t(bytes) + 63) / 64;
  if (u <= 16) return int(u) - 1;
  const int s = 64 - __builtin_clzll(u - 1) - 4;  // u - 1 has s + 4 bits, s >= 1
  return 16 + (s - 1) * 8 + int((u - 1) >> s) - 8;
}

size_t Pool::class_bytes(int size_class) {
  if (size_class < 16) return size_t(size_class + 1) * 64;
  const int k = size_class - 16, s = k / 8 + 1;
  return (size_t(k % 8 + 9) << s) * 64;
}

size_t tensor_bytes(DType dtype, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) fail("negative dimension in shape {}", shape.str());
  const int64_t n = shape.numel();
  const size_t es = dtype_size(dtype);
  if (uint64_t(n) > kMaxTensorBytes / es)
    fail("a {}{} tensor needs {} x {} bytes, more than the {} byte limit of one tensor", dtype_name(dtype), shape.str(), n,
         es, kMaxTensorBytes);
  return size_t(n) * es;
}

Ref<Buffer> Pool::allocate(size_t bytes) {
  if (arena_) return allocate_from_arena(bytes);
  if (bytes > kMaxTensorBytes) fail("cannot allocate {} bytes, more than the {} byte limit of one buffer", bytes, kMaxTensorBytes);
  const int cls = size_class(bytes);
  const size_t cap = class_bytes(cls);
  Buffer* b = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++allocs_;
    live_bytes_ += cap;
    peak_live_ = std::max(peak_live_, live_bytes_);
    FreeList& list = free_[size_t(cls)];
    if (!list.blocks.empty()) {
      b = list.blocks.back();
      list.blocks.pop_back();
      cached_bytes_ -= cap;
      list.max_idle = std::max(list.max_idle, allocs_ - list.last_use);
      list.last_use = allocs_;
    } else {
      list.last_use = allocs_;
      // Only a fresh block adds to what the pool holds (live + cached): a reused one
      // moves from cached to live, a block given back stays or is freed. So this is
      // the one place to keep the held bytes within budget.
      ++fresh_allocs_;
      evict_stale();
      peak_held_ = std::max(peak_held_, live_bytes_ + cached_bytes_);
    }
  }
  if (!b) {
    const bool mapped = kMapLargeBlocks && cap >= kMappedBlockBytes;
    void* mem = mapped ? map_block(cap) : std::aligned_alloc(64, cap);
    if (!mem) {
      std::lock_guard<std::mutex> lock(mu_);
      live_bytes_ -= cap;
      fail("out of memory allocating {} bytes", cap);
    }
    b = new Buffer();
    b->data_ = mem;
    b->capacity_ = cap;
    b->mapped_ = mapped;
  }
  b->bytes_ = bytes;
  b->pool_ = Ref<Pool>(this);
  return Ref<Buffer>(b);
}

// Runs on a miss only, under the lock: a miss is the one time the pool grows, and the
// scans over the classes stay off the hit path (an index into an array).
//
// First, while the pool holds more than the most bytes ever live at once, it frees the
// classes a loop has stopped asking for: a class is stale once it has sat unused for
// over twice the longest it ever sat before a block was taken, plus kStaleSlack
// allocations
// (a class reused each step waits at most a step, so a steady loop keeps every block
// it needs; the sizes a growing tensor left behind are freed a few steps later).
// Largest classes first, as they free the most.
//
// Then a hard budget: at most twice the live high-water, least recently used class
// first. A steady loop holds about its peak of live bytes (the same blocks, live during
// a step and cached between steps; the classes' rounding and sizes whose peaks fall at
// different times add a little), so that budget only bites on blocks not yet stale.
void Pool::evict_stale() {
  const size_t high_water = std::max(high_water_, peak_live_);
  const auto evict_from = [&](FreeList& l, size_t budget) {
    while (!l.blocks.empty() && live_bytes_ + cached_bytes_ > budget) {
      Buffer* b = l.blocks.back();
      l.blocks.pop_back();
      cached_bytes_ -= b->capacity_;
      ++evictions_;
      delete b;  // under the lock: only on a miss, and the lists need no second pass
    }
  };
  for (size_t c = free_.size(); c-- > 0 && live_bytes_ + cached_bytes_ > high_water;) {
    FreeList& l = free_[c];
    if (!l.blocks.empty() && allocs_ - l.last_use > 2 * l.max_idle + kStaleSlack) evict_from(l, high_water);
  }
  while (cached_bytes_ > 0 && live_bytes_ + cached_bytes_ > 2 * high_water) {
    FreeList* oldest = nullptr;
    for (FreeList& l : free_)
      if (!l.blocks.empty() && (!oldest || l.last_use < oldest->last_use)) oldest = &l;
    evict_from(*oldest, 2 * high_water);
  }
}

// Outside the hot path of the pool's own allocate: a session with an arena pays for
// this call, one without pays one branch.
Ref<Buffer> Pool::allocate_from_arena(size_t bytes) { return arena_->allocate(bytes); }

void Pool::give_back(Buffer* b) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_bytes_ -= b->capacity_;
    if (cached_bytes_ + b->capacity_ <= max_cached_bytes_) {
      FreeList& list = free_[size_t(size_class(b->capacity_))];
      list.blocks.push_back(b);
      list.last_use = allocs_;
      cached_bytes_ += b->capacity_;
      return;
    }
  }
  delete b;
}

void Pool::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  high_water_ = std::max(high_water_, peak_live_);
  peak_live_ = live_bytes_;
  peak_held_ = live_bytes_ + cached_bytes_;
}

void Pool::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  for (FreeList& l : free_) {
    for (Buffer* b : l.blocks) delete b;
    l.blocks.clear();
  }
  cached_bytes_ = 0;
}

// ---------------------------------------------------------------- Tensor

Tensor Tensor::empty(DType dtype, const Shape& shape, Pool* pool) {
  const size_t bytes = tensor_bytes(dtype, shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.buf_ = (pool ? *pool : Pool::global()).allocate(bytes);
  return t;
}

Tensor Tensor::zeros(DType dtype, const Shape& shape, Pool* pool) {
  Tensor t = empty(dtype, shape, pool);
  std::memset(t.raw(), 0, t.nbytes());
  return t;
}

Tensor Tensor::external(void* data, DType dtype, const Shape& shape, std::shared_ptr<void> keepalive) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.buf_ = Buffer::external(data, tensor_bytes(dtype, shape), std::move(keepalive));
  return t;
}

int64_t Tensor::size(int dim) const {
  int d = dim < 0 ? dim + ndim() : dim;
  if (d < 0 || d >= ndim()) fail("dimension {} out of range for a tensor of shape {}", dim, shape_.str());
  return shape_[d];
}

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

Tensor Tensor::reshape(const Shape& shape) const {
  if (shape.numel() != numel()) fail("cannot reshape {} to {}", shape_.str(), shape.str());
  if (!is_contiguous()) return contiguous().reshape(shape);
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  return t;
}

Tensor Tensor::slice0(int64_t begin, int64_t end) const {
  if (ndim() == 0) fail("cannot slice a 0-d tensor");
  if (begin < 0 || end < begin || end > shape_[0]) fail("rows [{}, {}) out of range for shape {}", begin, end, shape_.str());
  Tensor t = *this;
  t.offset_ += begin * strides_[0];
  t.shape_[0] = end - begin;
  return t;
}

Tensor Tensor::view(const Shape& shape, const Shape& strides, int64_t offset) const {
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = strides;
  t.offset_ = offset;
  return t;
}

Tensor Tensor::contiguous(Pool* pool) const {
  if (is_contiguous()) return *this;
  Tensor out = empty(dtype_, shape_, pool);
  const size_t es = dtype_size(dtype_);
  const int nd = ndim();
  // Copy the innermost run at a time when it is unit-strided, else element by element.
  const bool inner_unit = nd > 0 && strides_[nd - 1] == 1;
  const int64_t run = inner_unit ? shape_[nd - 1] : 1;
  const int outer_dims = inner_unit ? nd - 1 : nd;
  const int64_t n_runs = run == 0 ? 0 : numel() / run;
  Shape idx;
  idx.resize(outer_dims);
  const char* src = static_cast<const char*>(raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t r = 0; r < n_runs; ++r) {
    int64_t off = 0;
    for (int i = 0; i < outer_dims; ++i) off += idx[i] * strides_[i];
    std::memcpy(dst + r * run * es, src + off * int64_t(es), size_t(run) * es);
    for (int i = outer_dims - 1; i >= 0; --i) {
      if (++idx[i] < shape_[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  return fmt::format("{}{}", dtype_name(dtype_), shape_.str());
}

}  // namespace vm
