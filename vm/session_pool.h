// Sessions for one Program shared between threads (docs/runtime.md, "Sessions and
// threads"): a Program is shared freely, a Session is not, so each run checks a
// Session out of the pool, runs on it and gives it back. Callers on several threads
// never share one, and a run started from inside another (an emit callback calling
// the same program on the same thread) gets one of its own.
//
//   vm::SessionPool sessions(program);
//   auto out = sessions.run("generate", inputs);        // from any thread
//
// Sessions are made when no idle one is left and kept when given back: the pool grows
// to the most runs at once and then stops allocating, and one thread running alone
// always gets the same warm Session back (the last given back goes out first).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "vm/session.h"

namespace vm {

class SessionPool {
 public:
  // Every Session gets `options`. With `arena_bytes`, each gets an arena of its own of
  // that many bytes (Arena::with_budget) in place of options.arena, so runs at once do
  // not compete for one budget; an options.arena is shared by all (core/arena.h).
  explicit SessionPool(std::shared_ptr<const Program> program, SessionOptions options = {}, size_t arena_bytes = 0);
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  // A Session checked out until the Lease goes; it must not outlive the pool.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), session_(std::move(other.session_)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Session& operator*() const { return *session_; }
    Session* operator->() const { return session_.get(); }

   private:
    friend class SessionPool;
    Lease(SessionPool& pool, std::unique_ptr<Session> session) : pool_(&pool), session_(std::move(session)) {}
    SessionPool* pool_;
    std::unique_ptr<Session> session_;
  };
  Lease acquire();

  // vm::run / vm::run_named on a Session checked out for this run only. A Session
  // whose run failed is still good (Session::run clears its registers), so it goes back.
  std::vector<Value> run(const std::string& function, std::vector<Value> inputs, EmitCallback on_emit = {});
  std::vector<Value> run_named(const std::string& function, const std::vector<std::pair<std::string, Value>>& named);

  const Program& program() const { return *program_; }
  size_t sessions_made() const;  // so far: the most runs that were under way at once
  size_t idle() const;           // checked in now

 private:
  void give_back(std::unique_ptr<Session> session);

  std::shared_ptr<const Program> program_;
  SessionOptions options_;
  size_t arena_bytes_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Session>> idle_;
  size_t made_ = 0;
};

}  // namespace vm
