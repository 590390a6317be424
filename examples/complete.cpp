// Continues a prompt with a decoder-only program (GPT-2, Llama, Qwen2 imported by
// `tensorvm import-hf`), printing each new token as the program's generate loop
// chooses it: the search runs inside the program, and the generation library emits
// every step's tokens to the app through the callback.
//   complete PROGRAM_DIR "ids of the prompt" [max_new_tokens]
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "vm/vm.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s PROGRAM_DIR \"prompt ids\" [max_new_tokens]\n", argv[0]);
    return 2;
  }
  try {
    auto program = vm::Program::load(argv[1]);
    vm::Session session(program);
    std::vector<int64_t> ids;
    std::istringstream in(argv[2]);
    for (long long id; in >> id;) ids.push_back(id);
    if (ids.empty()) {
      std::fprintf(stderr, "complete: the prompt has no token ids\n");
      return 2;
    }
    const int64_t n = int64_t(ids.size());
    vm::Tensor prompt = vm::Tensor::empty(vm::DType::i64, {1, n});
    for (int64_t i = 0; i < n; ++i) prompt.data<int64_t>()[i] = ids[size_t(i)];
    std::vector<std::pair<std::string, vm::Value>> inputs = {{"input_ids", vm::Value(prompt)}};
    if (argc == 4) inputs.emplace_back("max_new_tokens", vm::Value::from_int(std::atoll(argv[3])));
    // One line per step: the token the row chose. Returning false would stop generation.
    session.set_on_emit(vm::token_stream([](const std::vector<std::vector<int64_t>>& rows) {
      for (int64_t t : rows[0]) std::printf("%lld\n", (long long)t);
      std::fflush(stdout);
      return true;
    }));
    std::vector<vm::Value> out = vm::run_named(session, "generate", inputs);
    const vm::Tensor& seq = out[0].as_tensor();
    std::printf("sequence:");
    for (int64_t i = 0; i < seq.size(1); ++i) std::printf(" %lld", (long long)seq.data<int64_t>()[i]);
    std::printf("\n");
  } catch (const vm::Error& e) {
    std::fprintf(stderr, "complete: %s\n", e.what());
    return 1;
  }
  return 0;
}
