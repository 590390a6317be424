#include "vm/thread_pool.h"

#include <algorithm>

namespace vm {

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < std::max(1, num_threads); ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

static void chunk_range(int64_t n, int64_t chunks, int64_t c, int64_t& b, int64_t& e) {
  b = n * c / chunks;
  e = n * (c + 1) / chunks;
}

void ThreadPool::run(int64_t n, int64_t chunks, const void* fn, Trampoline call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    n_ = n;
    chunks_ = chunks;
    fn_ = fn;
    call_ = call;
    pending_ = int(chunks) - 1;
    ++generation_;
  }
  wake_.notify_all();
  int64_t b, e;
  chunk_range(n, chunks, 0, b, e);
  call(fn, b, e);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    int64_t n, chunks;
    const void* fn;
    Trampoline call;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= chunks_) continue;  // this job has fewer chunks than threads
      n = n_;
      chunks = chunks_;
      fn = fn_;
      call = call_;
    }
    int64_t b, e;
    chunk_range(n, chunks, index, b, e);
    call(fn, b, e);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --pending_;
    }
    done_.notify_one();
  }
}

}  // namespace vm
