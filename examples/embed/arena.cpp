// Every tensor of a run carved from memory the app owns (docs/runtime.md, "A memory
// arena"): measure what a run needs, give the session one small fast buffer and one
// large slow one, and see a run that needs more fail cleanly.
#include <cstdio>
#include <string>

#include "vm/vm.h"

static const char kProgram[] = R"(# tensorvm ir 1
def more(i: int, n: int, x: Tensor) -> bool:
    c = lt(i, n)
    return c

def step(i: int, n: int, x: Tensor) -> tuple[int, int, Tensor]:
    y = matmul(x, x)
    z = tanh(y)
    j = add(i, 1)
    return j, n, z

def iterate(x: Tensor, n: int) -> Tensor:
    i0 = add(0, 0)
    i, m, y = while_loop(more, step, i0, n, x)
    return y
)";

// On a board these would be an SRAM bank and a DRAM region from the linker script.
alignas(64) static char fast_memory[1 << 10];
alignas(64) static char slow_memory[64 << 10];

int main() {
  auto program = vm::Program::from_text(kProgram, "");
  vm::Tensor x = vm::Tensor::empty(vm::DType::f32, {16, 16});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(i % 7) * 0.01f;
  auto inputs = [&](int64_t n) { return std::vector<vm::Value>{vm::Value(x), vm::Value::from_int(n)}; };

  // Ahead of the run: the arena the inputs need (tensorvm inspect --memory, from C++).
  const vm::MemoryReport need = vm::measure_memory(program, "iterate", inputs(10));
  std::printf("needs %zu bytes (peak %zu live), highest at %s\n", need.arena_bytes, need.peak_bytes,
              need.high_water_at.c_str());

  // Tensors up to 1 KiB go to the fast buffer while it has room; the rest to the slow one.
  vm::SessionOptions options;
  options.arena = vm::Arena::over({{fast_memory, sizeof fast_memory, 1024, "sram"},
                                   {slow_memory, sizeof slow_memory, 0, "dram"}});
  vm::Session session(program, options);
  vm::Tensor y = vm::run(session, "iterate", inputs(10))[0].as_tensor();
  for (const auto& r : options.arena->stats())
    std::printf("%s: peak %zu of %zu bytes\n", r.name.c_str(), r.peak_in_use, r.capacity);

  // A 16x16 f32 tensor is 1 KiB: an arena of 1.5 KiB cannot hold x @ x and its tanh at once.
  vm::SessionOptions tight;
  tight.arena = vm::Arena::with_budget(1536);
  vm::Session small(program, tight);
  try {
    vm::run(small, "iterate", inputs(10));
    return 1;
  } catch (const vm::Error& e) {
    std::printf("%s\n", e.what());  // "tanh: arena: out of memory: ... at program.py:8 in step: z = tanh(y)"
  }
  // The failed run gave everything back; the session runs what fits.
  vm::Tensor one = vm::Tensor::empty(vm::DType::f32, {1, 1});
  one.data<float>()[0] = 0.5f;
  vm::run(small, "iterate", {vm::Value(one), vm::Value::from_int(3)});
  return y.numel() == 16 * 16 && tight.arena->in_use() == 0 ? 0 : 1;
}
