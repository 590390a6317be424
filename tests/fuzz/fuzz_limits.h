// The limits a fuzz harness puts on the programs it runs (tests/fuzz/README.md), so the
// fuzzer explores instead of rediscovering known gaps: a vm::Hook that stops a run past
// an instruction budget (the runtime has none by default: an infinite while_loop would
// hang), when an int operand, int-list item or small int tensor element above
// FUZZ_MAX_INT (default 4096) in magnitude would reach an op, or when an op produces a
// tensor over kMaxElements (huge but valid sizes would only exhaust memory).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "vm/session.h"
#include "vm/vm.h"

namespace fuzz {

constexpr uint64_t kMaxInstructions = 20000;
constexpr int64_t kMaxElements = int64_t(1) << 20;

// FUZZ_MAX_INT overrides the int cap (0: no cap, to look for size overflows once the
// runtime checks them).
inline int64_t max_int() {
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

}  // namespace fuzz
