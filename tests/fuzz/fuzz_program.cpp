// libFuzzer target: a whole program. The input is the program text, optionally
// followed by a NUL byte and the bytes of its weights.safetensors. Inputs of odd size
// load through Program::from_memory (the weights borrowed in place), even ones through
// a file (Program::from_text with a path). The program is
// loaded (parse, check, bind to ops and weights) and up to kMaxFunctions of its
// functions whose parameters are all plain values run on small fixed inputs.
// Loading and running must end in results or a vm::Error, never a crash.
//
// Each run is under the harness limits of fuzz_limits.h (an instruction budget, an
// int cap and an element cap; docs in tests/fuzz/README.md).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz_limits.h"
#include "fuzz_memfile.h"
#include "fuzz_verbose.h"
#include "vm/session.h"
#include "vm/vm.h"

namespace {

constexpr int kMaxFunctions = 4;

bool plain_type(const std::string& t) {
  return t == "Tensor" || t == "int" || t == "float" || t == "bool" || t == "str" || t == "Any";
}

vm::Value input_for(const std::string& type, size_t index) {
  if (type == "int") return vm::Value::from_int(2);
  if (type == "float") return vm::Value::from_float(0.5);
  if (type == "bool") return vm::Value::from_bool(index % 2 == 0);
  if (type == "str") return vm::Value::from_str("a");
  if (type == "Any") return vm::Value::none();
  // Tensor: f32 [2, 3] for even positions, i64 [2, 3] of small ids for odd ones.
  if (index % 2 == 0) {
    vm::Tensor t = vm::Tensor::empty(vm::DType::f32, vm::Shape{2, 3});
    const float v[6] = {0.0f, 1.0f, -1.5f, 2.0f, 0.5f, 3.0f};
    std::memcpy(t.raw(), v, sizeof v);
    return vm::Value(t);
  }
  vm::Tensor t = vm::Tensor::empty(vm::DType::i64, vm::Shape{2, 3});
  const int64_t v[6] = {0, 1, 2, 3, 1, 0};
  std::memcpy(t.raw(), v, sizeof v);
  return vm::Value(t);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t text_size = nul ? static_cast<size_t>(nul - data) : size;
  std::string text(reinterpret_cast<const char*>(data), text_size);
  std::shared_ptr<const vm::Program> program;
  try {
    if (nul && size % 2 == 1) {
      program = vm::Program::from_memory(text, nul + 1, size - text_size - 1);
    } else if (nul) {
      fuzz::MemFile weights(nul + 1, size - text_size - 1);
      program = vm::Program::from_text(text, weights.path(), "fuzz.py");
    } else {
      program = vm::Program::from_text(text, "", "fuzz.py");
    }
  } catch (const vm::Error& e) {
    fuzz::stopped("load", e);
    return 0;
  }
  int ran = 0;
  for (const vm::Function& fn : program->functions()) {
    if (ran == kMaxFunctions) break;
    bool plain = true;
    for (const std::string& t : fn.param_types) plain = plain && plain_type(t);
    if (!plain) continue;
    ++ran;
    std::vector<vm::Value> inputs;
    for (size_t i = 0; i < fn.param_types.size(); ++i) inputs.push_back(input_for(fn.param_types[i], i));
    vm::Session session(program);
    fuzz::Limits limits;
    session.set_hook(&limits);
    try {
      vm::run(session, fn.name, std::move(inputs));
      if (fuzz::verbose()) std::fprintf(stderr, "%s: ok\n", fn.name.c_str());
    } catch (const vm::Error& e) {
      fuzz::stopped(fn.name.c_str(), e);
    } catch (const fuzz::HarnessLimit& e) {
      fuzz::stopped(fn.name.c_str(), e);
    }
  }
  return 0;
}
