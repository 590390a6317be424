// Intra-op parallelism: a fixed set of worker threads that split one loop's range
// with the calling thread. Work is handed over by reference (no std::function, no
// allocation per call), and a pool of one thread runs everything inline.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace vm {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n), each at least `grain`
  // long (except the last), on up to size() threads, and returns when all are done.
  template <typename Fn>
  void parallel_for(int64_t n, int64_t grain, const Fn& fn) {
    const int64_t chunks = std::min<int64_t>(size(), grain > 0 ? (n + grain - 1) / grain : n);
    if (chunks <= 1) {
      if (n > 0) fn(int64_t(0), n);
      return;
    }
    run(n, chunks, &fn, [](const void* f, int64_t b, int64_t e) { (*static_cast<const Fn*>(f))(b, e); });
  }

 private:
  using Trampoline = void (*)(const void*, int64_t, int64_t);
  void run(int64_t n, int64_t chunks, const void* fn, Trampoline call);
  void worker(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  // The current job.
  int64_t n_ = 0, chunks_ = 0;
  const void* fn_ = nullptr;
  Trampoline call_ = nullptr;
};

}  // namespace vm
