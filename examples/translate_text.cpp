// Text in, text out on the device: loads a program that carries its tokenizer
// (docs/text.md) and translates each argument with its `generate` function. The app
// links tensorvm::vm and tensorvm::text; no Python anywhere.
//   translate_text PROGRAM_DIR "A sentence." ["Another one." ...]   (one line out per argument)
#include <cstdio>
#include <string>
#include <vector>

#include "text/tokenizer.h"
#include "vm/vm.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PROGRAM_DIR \"text\" [\"text\" ...]\n", argv[0]);
    return 2;
  }
  try {
    auto program = vm::Program::load(argv[1]);
    auto tokenizer = text::load_tokenizer(argv[1]);
    vm::Session session(program);
    for (int a = 2; a < argc; ++a) {
      const std::vector<int64_t> ids = tokenizer->encode(argv[a]);  // ends with </s> for Marian
      const int64_t n = int64_t(ids.size());
      vm::Tensor input = vm::Tensor::empty(vm::DType::i64, {1, n});
      vm::Tensor mask = vm::Tensor::empty(vm::DType::i64, {1, n});
      for (int64_t i = 0; i < n; ++i) {
        input.data<int64_t>()[i] = ids[size_t(i)];
        mask.data<int64_t>()[i] = 1;
      }
      std::vector<vm::Value> out =
          vm::run_named(session, "generate", {{"input_ids", vm::Value(input)}, {"attention_mask", vm::Value(mask)}});
      const vm::Tensor& seq = out[0].as_tensor();
      std::vector<int64_t> row(seq.data<int64_t>(), seq.data<int64_t>() + seq.size(1));
      std::printf("%s\n", tokenizer->decode(row, /*skip_special_tokens=*/true).c_str());
    }
  } catch (const std::exception& e) {  // vm::Error and text::Error
    std::fprintf(stderr, "translate_text: %s\n", e.what());
    return 1;
  }
  return 0;
}
