#include "vm/profiler.h"

#include <algorithm>

#include <fmt/format.h>

namespace vm {

namespace {

const Value& operand(const Function& fn, const Value* regs, const Operand& o) {
  static const Value none;
  if (o.from == Operand::From::Reg) return regs[o.index];
  if (o.from == Operand::From::Const) return fn.consts[o.index];
  return none;
}

const Tensor* tensor_at(const Function& fn, const Value* regs, const Instr& ins, size_t i) {
  if (i >= ins.args.size()) return nullptr;
  const Value& v = operand(fn, regs, ins.args[i]);
  return v.is_tensor() ? &v.tensor_unchecked() : nullptr;
}

// Multiply-adds of the ops whose cost is a product of shapes; others count 0.
void count_macs(const Function& fn, const Value* regs, const Instr& ins, OpStats& s) {
  const std::string& op = ins.callee;
  if (op == "linear") {
    const Tensor* x = tensor_at(fn, regs, ins, 0);
    const Tensor* w = tensor_at(fn, regs, ins, 1);
    if (x && w && w->ndim() == 2 && x->ndim() >= 1) {
      const uint64_t rows = x->size(-1) ? uint64_t(x->numel() / x->size(-1)) : 0;
      const uint64_t m = rows * uint64_t(w->numel());
      s.macs += m;
      s.weight_macs += m;
      s.weight_bytes += w->nbytes();
    }
  } else if (op == "linear_int8" || op == "linear_w8a8") {
    // [out, in] from scale and x: linear_w8a8's weight is packed (and padded)
    const Tensor* x = tensor_at(fn, regs, ins, 0);
    const Tensor* w = tensor_at(fn, regs, ins, 1);
    const Tensor* scale = tensor_at(fn, regs, ins, 2);
    if (x && w && scale && scale->ndim() == 1 && x->ndim() >= 1) {
      const uint64_t rows = x->size(-1) ? uint64_t(x->numel() / x->size(-1)) : 0;
      const uint64_t m = rows * uint64_t(scale->size(0)) * uint64_t(x->size(-1));
      s.macs += m;
      s.weight_macs += m;
      s.weight_bytes += w->nbytes() + (scale ? scale->nbytes() : 0);
    }
  } else if (op == "matmul") {
    const Tensor* a = tensor_at(fn, regs, ins, 0);
    const Tensor* b = tensor_at(fn, regs, ins, 1);
    if (a && b && a->ndim() >= 2 && b->ndim() >= 2) s.macs += uint64_t(a->numel()) * uint64_t(b->size(-1));
  } else if (op == "attention") {
    const Tensor* q = tensor_at(fn, regs, ins, 0);
    const Tensor* k = tensor_at(fn, regs, ins, 1);
    const Tensor* v = tensor_at(fn, regs, ins, 2);
    if (q && k && v && q->ndim() == 4 && k->ndim() == 4 && v->ndim() == 4)
      s.macs += uint64_t(q->size(0) * q->size(1) * q->size(2) * k->size(2)) * uint64_t(q->size(3) + v->size(3));
  }
}

}  // namespace

void Profiler::before(const Function&, const Instr&, const Value*) { starts_.push_back(Clock::now()); }

void Profiler::after(const Function& fn, const Instr& ins, const Value* regs) {
  const double dt = std::chrono::duration<double>(Clock::now() - starts_.back()).count();
  starts_.pop_back();
  if (ins.kind == Instr::Kind::Return) return;
  // emit counts as a call: its time is the host callback's.
  const bool is_call = ins.kind == Instr::Kind::Call || ins.kind == Instr::Kind::WhileLoop ||
                       ins.kind == Instr::Kind::Cond || ins.kind == Instr::Kind::Emit;
  OpStats& s = (is_call ? calls_ : ops_)[ins.callee];
  ++s.count;
  s.seconds += dt;
  if (ins.kind == Instr::Kind::Kernel) count_macs(fn, regs, ins, s);
  if (ins.kind == Instr::Kind::ParamIndexed) return;  // hands out a weight; writes nothing
  for (uint32_t r : ins.outs)
    if (regs[r].is_tensor()) s.bytes_out += regs[r].tensor_unchecked().nbytes();
}

void Profiler::reset() {
  ops_.clear();
  calls_.clear();
  starts_.clear();
}

std::string Profiler::report() const {
  std::vector<std::pair<std::string, OpStats>> rows(ops_.begin(), ops_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double total = 0;
  for (const auto& r : rows) total += r.second.seconds;
  std::string out = fmt::format("{:<16} {:>9} {:>11} {:>7} {:>12} {:>12}\n", "op", "count", "ms", "%", "GMAC", "MB out");
  for (const auto& [name, s] : rows)
    out += fmt::format("{:<16} {:>9} {:>11.3f} {:>6.1f}% {:>12.3f} {:>12.2f}\n", name, s.count, s.seconds * 1e3,
                       total > 0 ? 100 * s.seconds / total : 0.0, double(s.macs) * 1e-9, double(s.bytes_out) / 1e6);
  out += fmt::format("{:<16} {:>9} {:>11.3f}\n", "total (kernels)", "", total * 1e3);
  return out;
}

}  // namespace vm
