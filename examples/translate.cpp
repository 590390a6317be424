// Loads a tensorvm program and translates token id sequences with its `generate`
// function: everything (encoder, KV cache, search loop, stopping) runs inside the
// program; the app only loads the file and calls one function.
//   translate PROGRAM_DIR "5 6 7 0" ["8 9 0" ...]   (one sentence per argument)
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "vm/vm.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PROGRAM_DIR \"ids\" [\"ids\" ...]\n", argv[0]);
    return 2;
  }
  try {
    auto program = vm::Program::load(argv[1]);
    vm::Session session(program);
    for (int a = 2; a < argc; ++a) {
      std::vector<int64_t> ids;
      std::istringstream in(argv[a]);
      for (long long id; in >> id;) ids.push_back(id);
      const int64_t n = int64_t(ids.size());
      vm::Tensor input = vm::Tensor::empty(vm::DType::i64, {1, n});
      vm::Tensor mask = vm::Tensor::empty(vm::DType::i64, {1, n});
      for (int64_t i = 0; i < n; ++i) {
        input.data<int64_t>()[i] = ids[size_t(i)];
        mask.data<int64_t>()[i] = 1;
      }
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<vm::Value> out =
          vm::run_named(session, "generate", {{"input_ids", vm::Value(input)}, {"attention_mask", vm::Value(mask)}});
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const vm::Tensor& seq = out[0].as_tensor();
      for (int64_t i = 0; i < seq.size(1); ++i) std::printf("%s%lld", i ? " " : "", (long long)seq.data<int64_t>()[i]);
      std::printf("\t(%.1f ms)\n", ms);
    }
  } catch (const vm::Error& e) {
    std::fprintf(stderr, "translate: %s\n", e.what());
    return 1;
  }
  return 0;
}
