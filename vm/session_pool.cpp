#include "vm/session_pool.h"

#include "core/error.h"

namespace vm {

SessionPool::SessionPool(std::shared_ptr<const Program> program, SessionOptions options, size_t arena_bytes)
    : program_(std::move(program)), options_(std::move(options)), arena_bytes_(arena_bytes) {
  if (!program_) fail("SessionPool: no program");
  if (options_.num_threads < 1) fail("num_threads must be at least 1, got {}", options_.num_threads);
}

SessionPool::Lease::~Lease() {
  if (session_) pool_->give_back(std::move(session_));
}

SessionPool::Lease SessionPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Session> s = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(s));
    }
    ++made_;
  }
  // Made outside the lock: a Session starts its worker threads and sizes its stack,
  // and other threads may be giving Sessions back meanwhile.
  try {
    SessionOptions o = options_;
    if (arena_bytes_) o.arena = Arena::with_budget(arena_bytes_);
    return Lease(*this, std::make_unique<Session>(program_, std::move(o)));
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    --made_;
    throw;
  }
}

void SessionPool::give_back(std::unique_ptr<Session> session) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(session));
}

std::vector<Value> SessionPool::run(const std::string& function, std::vector<Value> inputs, EmitCallback on_emit) {
  Lease s = acquire();
  return s->run(function, std::move(inputs), on_emit);
}

std::vector<Value> SessionPool::run_named(const std::string& function,
                                          const std::vector<std::pair<std::string, Value>>& named) {
  Lease s = acquire();
  return s->run_named(function, named);
}

size_t SessionPool::sessions_made() const {
  std::lock_guard<std::mutex> lock(mu_);
  return made_;
}

size_t SessionPool::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_.size();
}

}  // namespace vm
