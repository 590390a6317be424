// libFuzzer target: a whole program. The input is the program text, optionally
// followed by a NUL byte and the bytes of its weights.safetensors. Inputs of odd size
// load through Program::from_memory (the weights borrowed in place), even ones through
// a file (Program::from_text with a path). The program is
// loaded (parse, check, bind to ops and weights) and up to kMaxFunctions of its
// functions whose parameters are all plain values run on small fixed inputs.
// Loading and running must end in results or a vm::Error, never a crash.
//
// Harness limits, so the fuzzer explores instead of rediscovering known gaps
// (docs in tests/fuzz/README.md):
//  - an instruction budget (the runtime has none: an infinite while_loop would hang);
//  - no int operand, int-list item or small int tensor element above 4096 in
//    magnitude (FUZZ_MAX_INT) reaches an op, and no op may produce a tensor over kMaxElements:
//    size computations are not yet overflow-checked (issue 11, finding 1), and huge
//    but valid sizes would only exhaust memory.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz_memfile.h"
#include "vm/session.h"
#include "vm/vm.h"

namespace {

constexpr int kMaxFunctions = 4;
constexpr uint64_t kMaxInstructions = 20000;
constexpr int64_t kMaxElements = int64_t(1) << 20;

// FUZZ_MAX_INT overrides the int cap (0: no cap, to look for size overflows once the
// runtime checks them).
int64_t max_int() {
  static const int64_t v = [] {
    const char* e = std::getenv("FUZZ_MAX_INT");
    return e ? std::strtoll(e, nullptr, 10) : int64_t(4096);
  }();
  return v;
}

struct HarnessLimit : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Limits : public vm::Hook {
 public:
  void before(const vm::Function& fn, const vm::Instr& ins, const vm::Value* regs) override {
    if (++count_ > kMaxInstructions) throw HarnessLimit("fuzz harness: instruction budget exhausted");
    for (const vm::Operand& o : ins.args) check_operand(fn, o, regs);
  }
  void after(const vm::Function&, const vm::Instr& ins, const vm::Value* regs) override {
    for (uint32_t r : ins.outs) check_value(regs[r], /*inputs=*/false);
  }

 private:
  void check_operand(const vm::Function& fn, const vm::Operand& o, const vm::Value* regs) {
    switch (o.from) {
      case vm::Operand::From::Reg: return check_value(regs[o.index], true);
      case vm::Operand::From::Const: return check_value(fn.consts[o.index], true);
      case vm::Operand::From::List:
        for (const vm::Operand& item : fn.lists[o.index].items) check_operand(fn, item, regs);
        return;
    }
  }
  static void check_int(int64_t v) {
    const int64_t cap = max_int();
    if (cap > 0 && (v > cap || v < -cap)) throw HarnessLimit("fuzz harness: int operand over the size cap");
  }
  void check_value(const vm::Value& v, bool inputs) {
    switch (v.kind()) {
      case vm::Value::Kind::Int:
        if (inputs) check_int(v.as_int());
        return;
      case vm::Value::Kind::Ints:
        if (inputs)
          for (int64_t x : v.as_ints_raw()) check_int(x);
        return;
      case vm::Value::Kind::Tuple:
        for (const vm::Value& x : v.as_tuple()) check_value(x, inputs);
        return;
      case vm::Value::Kind::Tensor: {
        const vm::Tensor& t = v.as_tensor();
        if (!t.defined()) return;
        if (t.numel() > kMaxElements) throw HarnessLimit("fuzz harness: tensor over the element cap");
        // Int tensors are shapes and sizes too (e.g. the lengths a generate loop reads).
        if (inputs && t.numel() <= 64 && t.is_contiguous()) {
          if (t.dtype() == vm::DType::i64)
            for (int64_t i = 0; i < t.numel(); ++i) check_int(static_cast<const int64_t*>(t.raw())[i]);
          if (t.dtype() == vm::DType::i32)
            for (int64_t i = 0; i < t.numel(); ++i) check_int(static_cast<const int32_t*>(t.raw())[i]);
        }
        return;
      }
      default:
        return;
    }
  }
  uint64_t count_ = 0;
};

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

// FUZZ_VERBOSE=1 prints why each input stopped (to check that seeds load and run).
bool verbose() {
  static const bool v = std::getenv("FUZZ_VERBOSE") != nullptr;
  return v;
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
    if (verbose()) std::fprintf(stderr, "load: %s\n", e.what());
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
    Limits limits;
    session.set_hook(&limits);
    try {
      vm::run(session, fn.name, std::move(inputs));
      if (verbose()) std::fprintf(stderr, "%s: ok\n", fn.name.c_str());
    } catch (const vm::Error& e) {
      if (verbose()) std::fprintf(stderr, "%s: %s\n", fn.name.c_str(), e.what());
    } catch (const HarnessLimit& e) {
      if (verbose()) std::fprintf(stderr, "%s: %s\n", fn.name.c_str(), e.what());
    }
  }
  return 0;
}
