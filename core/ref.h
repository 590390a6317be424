// Intrusive reference counting. Buffers and objects are shared between registers,
// sessions and (for weights) threads; an intrusive count keeps a copy to one atomic
// increment with no separate control block to allocate.
#pragma once

#include <atomic>
#include <utility>

namespace vm {

class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;

  void retain() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() const {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) const_cast<RefCounted*>(this)->destroy();
  }
  int use_count() const { return refs_.load(std::memory_order_relaxed); }

 protected:
  // Default: delete. Pooled buffers override this to go back to their pool.
  virtual void destroy() { delete this; }

 private:
  mutable std::atomic<int> refs_{0};
};

template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(T* p) : p_(p) { if (p_) p_->retain(); }  // NOLINT: implicit by design
  Ref(const Ref& o) : p_(o.p_) { if (p_) p_->retain(); }
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <typename U>
  Ref(const Ref<U>& o) : p_(o.get()) { if (p_) p_->retain(); }  // NOLINT
  ~Ref() { if (p_) p_->release(); }
  Ref& operator=(Ref o) noexcept { std::swap(p_, o.p_); return *this; }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const Ref& o) const { return p_ == o.p_; }

 private:
  T* p_ = nullptr;
};

template <typename T, typename... A>
Ref<T> make_ref(A&&... a) { return Ref<T>(new T(std::forward<A>(a)...)); }

}  // namespace vm
