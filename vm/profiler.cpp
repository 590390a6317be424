#include "vm/profiler.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/atomic_file.h"
#include "core/error.h"

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
  } else if (op == "linear_int8" || op == "linear_w8a8" || op == "linear_int4" || op == "linear_w4a8") {
    // [out, in] from scale (out first: [out] or 4-bit's [out, groups]) and x: the weight
    // is packed (and padded) for w8a8, two a byte for 4-bit
    const Tensor* x = tensor_at(fn, regs, ins, 0);
    const Tensor* w = tensor_at(fn, regs, ins, 1);
    const Tensor* scale = tensor_at(fn, regs, ins, 2);
    if (x && w && scale && scale->ndim() >= 1 && x->ndim() >= 1) {
      const uint64_t rows = x->size(-1) ? uint64_t(x->numel() / x->size(-1)) : 0;
      const uint64_t m = rows * uint64_t(scale->size(0)) * uint64_t(x->size(-1));
      s.macs += m;
      s.weight_macs += m;
      s.weight_bytes += w->nbytes() + scale->nbytes();
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

// Bytes an op reads and writes, from its tensor operands and results, as near to what
// the kernel touches as the shapes tell: a view (a result in an operand's buffer:
// reshape, transpose, slice...) moves nothing; shape queries read no data; a gather
// reads the rows it writes, not its whole table.
void count_bytes(const Function& fn, const Value* regs, const Instr& ins, OpStats& s) {
  const std::string& op = ins.callee;
  if (op == "size" || op == "shape" || op == "numel" || op == "zeros_like" || op == "full_like") return;
  uint64_t in = 0, largest = 0, out = 0;
  bool all_views = !ins.outs.empty();
  for (uint32_t r : ins.outs) {
    if (!regs[r].is_tensor()) {
      all_views = false;
      continue;
    }
    const Tensor& t = regs[r].tensor_unchecked();
    out += t.nbytes();
    bool view = false;
    for (const Operand& o : ins.args) {
      const Value& v = operand(fn, regs, o);
      view = view || (v.is_tensor() && v.tensor_unchecked().buffer().get() == t.buffer().get());
    }
    all_views = all_views && view;
  }
  if (all_views) return;
  for (const Operand& o : ins.args) {
    const Value& v = operand(fn, regs, o);
    if (!v.is_tensor()) continue;
    const uint64_t n = v.tensor_unchecked().nbytes();
    in += n;
    largest = std::max(largest, n);
  }
  if (op == "embedding" || op == "index_select" || op == "gather") in = in - largest + out;
  s.bytes_in += in;
  s.bytes_out += out;
}

bool contains_others(Instr::Kind k) {
  return k == Instr::Kind::Call || k == Instr::Kind::WhileLoop || k == Instr::Kind::Cond;
}

void add_to(OpStats& to, const OpStats& s) {
  to.count += s.count;
  to.seconds += s.seconds;
  to.macs += s.macs;
  to.weight_macs += s.weight_macs;
  to.bytes_in += s.bytes_in;
  to.bytes_out += s.bytes_out;
  to.weight_bytes += s.weight_bytes;
}

double share(double seconds, double total) { return total > 0 ? 100 * seconds / total : 0.0; }

// The rate that says how well an op runs: GFLOP/s where it multiplies (two flops a
// multiply-add), else GB/s of the tensors it reads and writes; "" when too brief to say.
std::string rate(const OpStats& s) {
  if (s.seconds <= 0) return "";
  if (s.macs) return fmt::format("{:.2f} GFLOP/s", 2e-9 * double(s.macs) / s.seconds);
  if (s.bytes_in + s.bytes_out) return fmt::format("{:.2f} GB/s", 1e-9 * double(s.bytes_in + s.bytes_out) / s.seconds);
  return "";
}

// A JSON string through nlohmann's writer; bytes that are not UTF-8 (a name is whatever
// the IR held) become U+FFFD rather than an invalid trace.
void json_string(std::string& out, const std::string& s) {
  out += nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Microseconds with three decimals, exact from integer nanoseconds, so a child's end
// never lands past its parent's by rounding.
void micros(std::string& out, uint64_t ns) { fmt::format_to(std::back_inserter(out), "{}.{:03d}", ns / 1000, int(ns % 1000)); }

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

}  // namespace

Profiler::Profiler(ProfilerOptions options) : options_(options) {}

uint64_t Profiler::now() const {
  if (options_.cpu_time) {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
  }
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch()).count());
}

void Profiler::begin_run(const Function&) {
  stack_.clear();  // what a failed run left open
  if (!have_epoch_) {
    epoch_ = now();
    have_epoch_ = true;
  }
}

void Profiler::enter(const Function& fn) {
  Open o{&fn, nullptr, now()};
  if (!stack_.empty() && stack_.back().ins && stack_.back().ins->kind == Instr::Kind::WhileLoop) {
    const uint32_t child = stack_.back().children++;
    if (child % 2 == 1) o.iteration = int32_t(child / 2 + 1);  // cond, body, cond, body, ..., cond
  }
  stack_.push_back(o);
}

void Profiler::leave(const Function&) {
  if (stack_.empty()) return;
  const uint64_t end = now();
  const Open o = stack_.back();
  stack_.pop_back();
  if (stack_.empty()) {
    run_seconds_ += 1e-9 * double(end - o.start);
    ++runs_;
  }
  record(o, end);
}

void Profiler::before(const Function& fn, const Instr& ins, const Value*) {
  stack_.push_back(Open{&fn, &ins, now()});
}

void Profiler::after(const Function& fn, const Instr& ins, const Value* regs) {
  const uint64_t end = now();
  if (stack_.empty() || stack_.back().ins != &ins) return;  // not seen starting (installed mid-run)
  const Open o = stack_.back();
  stack_.pop_back();
  auto [it, fresh] = index_.try_emplace(&ins, instrs_.size());
  if (fresh) {
    instrs_.emplace_back();
    instrs_.back().fn = &fn;
    instrs_.back().ins = &ins;
  }
  InstrStats& s = instrs_[it->second];
  ++s.count;
  s.seconds += 1e-9 * double(end - o.start);
  if (ins.kind == Instr::Kind::Kernel) {
    count_macs(fn, regs, ins, s);
    count_bytes(fn, regs, ins, s);
  }
  // A call or a branch is shown by its function's own slice, not twice.
  if (ins.kind != Instr::Kind::Call && ins.kind != Instr::Kind::Cond) record(o, end);
}

void Profiler::record(const Open& o, uint64_t end) {
  if (!options_.trace) return;
  if (events_.size() >= options_.max_trace_events) {
    ++dropped_;
    return;
  }
  // A run before the epoch (reset() mid-run) starts at 0.
  const uint64_t start = o.start > epoch_ ? o.start - epoch_ : 0;
  const uint64_t stop = std::max(start, end > epoch_ ? end - epoch_ : 0);
  events_.push_back(Event{start, stop - start, o.fn, o.ins, o.iteration, int32_t(stack_.size())});
}

void Profiler::reset() {
  stack_.clear();
  index_.clear();
  instrs_.clear();
  events_.clear();
  dropped_ = 0;
  run_seconds_ = 0;
  runs_ = 0;
  have_epoch_ = false;
}

std::map<std::string, OpStats> Profiler::ops() const {
  std::map<std::string, OpStats> out;
  for (const InstrStats& s : instrs_) {
    const Instr::Kind k = s.ins->kind;
    if (k == Instr::Kind::Kernel || k == Instr::Kind::ParamIndexed) add_to(out[s.ins->callee], s);
  }
  return out;
}

std::map<std::string, OpStats> Profiler::calls() const {
  std::map<std::string, OpStats> out;
  for (const InstrStats& s : instrs_)
    if (contains_others(s.ins->kind) || s.ins->kind == Instr::Kind::Emit) add_to(out[s.ins->callee], s);
  return out;
}

std::string Profiler::op_table() const {
  std::map<std::string, OpStats> by_op;
  double leaves = 0;
  for (const InstrStats& s : instrs_) {
    if (contains_others(s.ins->kind)) continue;
    add_to(by_op[s.ins->callee], s);
    leaves += s.seconds;
  }
  std::vector<std::pair<std::string, OpStats>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  // The interpreter's own time: what the run took outside every leaf instruction.
  OpStats vm_time;
  vm_time.seconds = std::max(0.0, run_seconds_ - leaves);
  rows.emplace_back("(interpreter)", vm_time);
  const double total = run_seconds_ > 0 ? run_seconds_ : leaves;
  std::string out = fmt::format("{:<18} {:>9} {:>11} {:>10} {:>7} {:>10} {:>10}  {}\n", "op", "calls", "total ms",
                                "mean us", "share", "MB read", "MB written", "rate");
  for (const auto& [name, s] : rows)
    out += fmt::format("{:<18} {:>9} {:>11.3f} {:>10.2f} {:>6.1f}% {:>10.2f} {:>10.2f}  {}\n", name, s.count,
                       s.seconds * 1e3, s.count ? s.seconds * 1e6 / double(s.count) : 0.0, share(s.seconds, total),
                       double(s.bytes_in) / 1e6, double(s.bytes_out) / 1e6, rate(s));
  out += fmt::format("{:<18} {:>9} {:>11.3f}   ({} run{})\n", "total", "", total * 1e3, runs_, runs_ == 1 ? "" : "s");
  return out;
}

std::string Profiler::call_table() const {
  std::map<std::string, OpStats> by = calls();
  std::vector<std::pair<std::string, OpStats>> rows(by.begin(), by.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  std::string out = fmt::format("{:<24} {:>9} {:>11} {:>10} {:>7}\n", "call (inclusive)", "calls", "total ms",
                                "mean us", "share");
  for (const auto& [name, s] : rows)
    out += fmt::format("{:<24} {:>9} {:>11.3f} {:>10.2f} {:>6.1f}%\n", clip(name, 24), s.count, s.seconds * 1e3,
                       s.count ? s.seconds * 1e6 / double(s.count) : 0.0, share(s.seconds, run_seconds_));
  return out;
}

std::string Profiler::instruction_table(size_t top) const {
  std::vector<const InstrStats*> rows;
  for (const InstrStats& s : instrs_)
    if (!contains_others(s.ins->kind)) rows.push_back(&s);
  std::sort(rows.begin(), rows.end(), [](const InstrStats* a, const InstrStats* b) { return a->seconds > b->seconds; });
  const size_t n = std::min(top, rows.size());
  std::string out = fmt::format("{:<28} {:>9} {:>11} {:>10} {:>7}  {}\n", "function:line", "calls", "total ms", "mean us",
                                "share", "instruction");
  for (size_t i = 0; i < n; ++i) {
    const InstrStats& s = *rows[i];
    out += fmt::format("{:<28} {:>9} {:>11.3f} {:>10.2f} {:>6.1f}%  {}\n",
                       clip(fmt::format("{}:{}", s.fn->name, s.ins->line), 28), s.count, s.seconds * 1e3,
                       s.count ? s.seconds * 1e6 / double(s.count) : 0.0, share(s.seconds, run_seconds_),
                       clip(s.ins->text, 90));
  }
  if (rows.size() > n) out += fmt::format("... {} more instructions\n", rows.size() - n);
  return out;
}

std::string Profiler::report(size_t top) const {
  return op_table() + "\n" + call_table() + "\n" + instruction_table(top);
}

std::string Profiler::trace_json() const {
  if (!options_.trace) fail("profiler: no trace was recorded (turn on ProfilerOptions::trace)");
  std::string out;
  out.reserve(events_.size() * 160 + 256);
  out += "{\"traceEvents\":[\n";
  out += R"({"name":"process_name","ph":"M","pid":1,"tid":1,"args":{"name":"tensorvm"}},)";
  out += "\n";
  out += R"({"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"run"}})";
  for (const Event& e : events_) {
    out += ",\n{\"name\":";
    if (e.ins) {
      json_string(out, e.ins->callee);
      out += e.ins->kind == Instr::Kind::WhileLoop ? ",\"cat\":\"loop\"" : ",\"cat\":\"op\"";
    } else if (e.iteration > 0) {
      json_string(out, fmt::format("iteration {}", e.iteration));
      out += ",\"cat\":\"iteration\"";
    } else {
      json_string(out, e.fn->name);
      out += e.depth == 0 ? ",\"cat\":\"run\"" : ",\"cat\":\"function\"";
    }
    out += ",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":";
    micros(out, e.start_ns);
    out += ",\"dur\":";
    micros(out, e.dur_ns);
    out += ",\"args\":{\"function\":";
    json_string(out, e.fn->name);
    if (e.ins) {
      fmt::format_to(std::back_inserter(out), ",\"line\":{},\"ir\":", e.ins->line);
      json_string(out, e.ins->text);
    } else {
      fmt::format_to(std::back_inserter(out), ",\"line\":{}", e.fn->line);
    }
    out += "}}";
  }
  fmt::format_to(std::back_inserter(out), "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"dropped_events\":{}}}}}\n",
                 dropped_);
  return out;
}

void Profiler::write_trace(const std::string& path) const {
  const std::string json = trace_json();
  try {
    io::TempFile f(path);
    f.write(json.data(), json.size());
    f.commit();
  } catch (const std::exception& e) {
    fail("profiler: cannot write the trace to {}: {}", path, e.what());
  }
}

}  // namespace vm
