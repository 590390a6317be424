// Intra-op parallelism: a fixed set of worker threads that split one loop's range
// with the calling thread. Work is handed over by reference (no std::function, no
// allocation per call), and a pool of one thread runs everything inline.
//
// A decode step is ~50 parallel products of 0.1-1 ms each with short serial ops in
// between, so waking a sleeping thread per product (a futex round trip, 20-100 us on
// this class of machine) cost more than a third of the step. Idle workers therefore
// spin on the job counter for a short budget (`spin_us`, like OpenMP's blocktime)
// before they sleep on a condition variable.
//
// Spinning only pays while each spinner has a core of its own. Several pools in one
// process (a server with a Session per request thread) can hold more threads than
// the machine has cores, and then spinners steal the cores the working threads need
// (4 Sessions x 2 threads on 2 cores ran 50x slower). So every pool counts its
// threads in a process-wide total while it is engaged (a Session engages its pool for
// the length of a run), and when that total exceeds the hardware threads, workers
// and callers sleep at once instead of spinning. Load from other processes cannot be
// counted, so a caller that finds a worker still busy 0.5 ms after finishing its own
// equal share takes it for a descheduled thread and nobody spins for the next 256 jobs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace vm {

class ThreadPool {
 public:
  static constexpr int kDefaultSpinMicros = 2000;

  explicit ThreadPool(int num_threads, int spin_us = kDefaultSpinMicros);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // A pool counts toward the process-wide thread total while engaged (from
  // construction on). An idle pool's workers sleep and cost nothing, so an owner that
  // keeps a pool between bursts of work disengages it in between.
  void set_engaged(bool engaged);
  // Whether the engaged pools of this process hold more threads than the machine has.
  static bool oversubscribed();

  // Calls fn(begin, end) on disjoint chunks covering [0, n), each at least `grain`
  // long (except the last), on up to size() threads, and returns when all are done.
  // Not reentrant: one caller at a time (a Session runs one instruction at a time).
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
  void finish_chunk();  // a worker's acknowledgement of the current job
  // Waits until generation_ differs from `seen` (or stop_); returns the new value.
  uint64_t wait_for_job(uint64_t seen);

  std::vector<std::thread> workers_;
  const int spin_us_;
  // The current job: written by run() before generation_ is bumped, read by workers
  // after they see the new generation; run() does not return (so no new job is
  // written) until every worker has acknowledged it through pending_.
  int64_t n_ = 0, chunks_ = 0;
  const void* fn_ = nullptr;
  Trampoline call_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> engaged_{false};
  std::atomic<bool> caller_waiting_{false};  // run() sleeps on done_ until pending_ is 0
  // Jobs left in which nobody spins, after a worker was late (written by run() only).
  std::atomic<int> backoff_{0};
  static constexpr int kLateMicros = 500;    // a worker this much behind the caller is late
  static constexpr int kBackoffJobs = 256;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
};

}  // namespace vm
