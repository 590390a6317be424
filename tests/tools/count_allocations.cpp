// Counts heap allocations (every operator new) made by decode steps of a program
// with the encode / source_mask / init_cache / decode_step entry points, so a test can
// show that the steady-state decode loop allocates nothing per instruction.
//   tensorvm-count-allocations PROGRAM_DIR [steps=40] [threads=1] [arena_bytes=0]
// With arena_bytes, the session carves its tensors from an arena of that size.
// Prints one line per step: "step <position> allocations <n> instructions <m>".
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "vm/vm.h"

static std::atomic<long> g_allocations{0};

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PROGRAM_DIR [steps] [threads] [arena_bytes]\n", argv[0]);
    return 2;
  }
  const int steps = argc > 2 ? std::atoi(argv[2]) : 40;
  try {
    auto program = vm::Program::load(argv[1]);
    vm::SessionOptions opts;
    opts.num_threads = argc > 3 ? std::atoi(argv[3]) : 1;
    if (argc > 4 && std::atoll(argv[4]) > 0) opts.arena = vm::Arena::with_budget(size_t(std::atoll(argv[4])));
    vm::Session session(program, opts);
    vm::Tensor ids = vm::Tensor::empty(vm::DType::i64, {1, 5});
    vm::Tensor mask = vm::Tensor::empty(vm::DType::i64, {1, 5});
    for (int i = 0; i < 5; ++i) {
      ids.data<int64_t>()[i] = i == 4 ? 0 : 3 + i;
      mask.data<int64_t>()[i] = 1;
    }
    vm::Value states = vm::run(session, "encode", {vm::Value(ids), vm::Value(mask)})[0];
    vm::Value source_mask = vm::run(session, "source_mask", {vm::Value(mask)})[0];
    vm::Value cache = vm::run(session, "init_cache", {states, vm::Value::from_int(1), vm::Value::from_int(steps)})[0];
    std::vector<vm::Value> inputs(4);
    vm::Tensor token = vm::Tensor::empty(vm::DType::i64, {1, 1});
    token.data<int64_t>()[0] = 3;
    for (int step = 0; step < steps; ++step) {
      // The inputs are built before counting: the app's part, not the VM's.
      inputs = {cache, vm::Value(token), source_mask, vm::Value::from_int(step)};
      const uint64_t instr0 = session.instructions_executed();
      const long a0 = g_allocations.load();
      std::vector<vm::Value> out = session.run("decode_step", std::move(inputs));
      const long a1 = g_allocations.load();
      std::printf("step %d allocations %ld instructions %llu\n", step, a1 - a0,
                  (unsigned long long)(session.instructions_executed() - instr0));
    }
  } catch (const vm::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
