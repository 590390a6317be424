#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <system_error>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define TENSORVM_PAUSE() _mm_pause()
#else
#define TENSORVM_PAUSE() std::this_thread::yield()
#endif

namespace vm {

namespace {

std::atomic<int> g_engaged_threads{0};  // threads of all engaged pools in the process

int hardware_threads() {
  static const int n = std::max(1, int(std::thread::hardware_concurrency()));
  return n;
}

}  // namespace

bool ThreadPool::oversubscribed() { return g_engaged_threads.load(std::memory_order_relaxed) > hardware_threads(); }

void ThreadPool::set_engaged(bool engaged) {
  if (engaged_.exchange(engaged) != engaged) g_engaged_threads.fetch_add(engaged ? size() : -size());
}

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
// WebAssembly without pthreads (a page that is not cross-origin isolated) cannot start a
// thread: the pool is the caller alone, whatever was asked. Results do not depend on the
// thread count, so only the speed differs (docs/web.md).
constexpr int kMaxPoolThreads = 1;
#elif defined(__EMSCRIPTEN_PTHREADS__) && defined(TENSORVM_WASM_POOL_SIZE)
// WebAssembly with pthreads: only the workers Emscripten started before main can run (a
// blocked thread cannot start one), so a pool takes at most that many besides the caller;
// more would fail to start (cmake/wasm.cmake: PTHREAD_POOL_SIZE_STRICT=2; see the constructor).
constexpr int kMaxPoolThreads = TENSORVM_WASM_POOL_SIZE + 1;
#else
constexpr int kMaxPoolThreads = 1 << 30;
#endif

ThreadPool::ThreadPool(int num_threads, int spin_us) : spin_us_(std::max(0, spin_us)) {
  for (int i = 1; i < std::min(kMaxPoolThreads, std::max(1, num_threads)); ++i) {
    try {
      workers_.emplace_back([this, i] { worker(i); });
    } catch (const std::system_error&) {
      // No thread to be had (WebAssembly: another pool holds the pthreads started before
      // main): run on those started. Results do not depend on the count.
      break;
    }
  }
  set_engaged(true);
}

ThreadPool::~ThreadPool() {
  set_engaged(false);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

static void chunk_range(int64_t n, int64_t chunks, int64_t c, int64_t& b, int64_t& e) {
  b = n * c / chunks;
  e = n * (c + 1) / chunks;
}

void ThreadPool::run(int64_t n, int64_t chunks, const void* fn, Trampoline call) {
  n_ = n;
  chunks_ = chunks;
  fn_ = fn;
  call_ = call;
  pending_.store(int(workers_.size()), std::memory_order_relaxed);
  // seq_cst pairs with the sleeper's increment-then-check in wait_for_job: either it
  // sees the new generation, or we see it counted and notify under the lock.
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    wake_.notify_all();
  }
  int64_t b, e;
  chunk_range(n, chunks, 0, b, e);
  call(fn, b, e);
  // The workers' chunks take as long as ours, so the wait is usually short: spin for
  // it. When the machine is oversubscribed (a worker may be waiting for our core), or
  // in a backoff after a late worker, sleep after a few pauses instead.
  using Clock = std::chrono::steady_clock;
  const bool calm = !oversubscribed() && backoff_.load(std::memory_order_relaxed) == 0;
  const auto deadline = Clock::now() + std::chrono::microseconds(calm ? kLateMicros : 0);
  bool slept = false;
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if ((spins & 63) != 63 || Clock::now() < deadline) {
      TENSORVM_PAUSE();
      continue;
    }
    std::unique_lock<std::mutex> lock(mu_);
    // Pairs with the worker's decrement-then-check. An exchange, not a store: a seq_cst
    // store followed by a seq_cst load is a Dekker handshake that qemu-user (7.2, on an
    // x86-64 host) breaks, because it translates AArch64's STLR;LDAR without a full
    // barrier between them, so the load could pass the store and both sides missed each
    // other (the caller slept forever). A read-modify-write is a full barrier everywhere.
    caller_waiting_.exchange(true);
    done_.wait(lock, [&] { return pending_.load() == 0; });
    caller_waiting_.store(false);
    slept = true;
    break;
  }
  // A worker that is still busy long after our equal share was probably descheduled:
  // the machine is loaded by other processes, which this process cannot count. Then
  // nobody spins for the next kBackoffJobs jobs (spinning would take the cores the late
  // threads need), after which one job probes again.
  if (calm && slept) {
    backoff_.store(kBackoffJobs, std::memory_order_relaxed);
  } else if (!calm) {
    const int b = backoff_.load(std::memory_order_relaxed);
    if (b > 0) backoff_.store(b - 1, std::memory_order_relaxed);
  }
}

void ThreadPool::finish_chunk() {
  // seq_cst: either run() sees pending_ reach 0 in its wait predicate, or we see it
  // waiting and notify under the lock.
  if (pending_.fetch_sub(1) == 1 && caller_waiting_.load()) {
    std::lock_guard<std::mutex> lock(mu_);
    done_.notify_one();
  }
}

uint64_t ThreadPool::wait_for_job(uint64_t seen) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::microseconds(spin_us_);
  for (int spins = 0;; ++spins) {
    const uint64_t g = generation_.load(std::memory_order_acquire);
    if (g != seen) return g;
    if ((spins & 63) == 63 && (Clock::now() >= deadline || !engaged_.load(std::memory_order_relaxed) ||
                               backoff_.load(std::memory_order_relaxed) > 0 || oversubscribed()))
      break;
    TENSORVM_PAUSE();
  }
  std::unique_lock<std::mutex> lock(mu_);
  sleepers_.fetch_add(1);
  wake_.wait(lock, [&] { return generation_.load() != seen; });
  sleepers_.fetch_sub(1);
  return generation_.load();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    seen = wait_for_job(seen);
    if (stop_.load()) return;
    if (index < chunks_) {
      int64_t b, e;
      chunk_range(n_, chunks_, index, b, e);
      call_(fn_, b, e);
    }
    finish_chunk();
  }
}

}  // namespace vm
