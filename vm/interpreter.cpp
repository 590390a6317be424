// The interpreter: a flat loop over pre-resolved instructions. Frames are windows of
// one register stack owned by the Session; calls, loop bodies and branches run in
// the window after the caller's, so no call allocates.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "vm/checks.h"
#include "vm/profiler.h"
#include "vm/session.h"

namespace vm {

namespace {

constexpr int kInlineSlots = 32;
constexpr int kInlineOutputs = 4;

}  // namespace

class Interpreter {
 public:
  explicit Interpreter(Session& s) : s_(s), prog_(*s.program_) {
    ctx_.pool = s.pool_.get();
    ctx_.threads = s.threads_.get();
    ctx_.num_threads = s.options_.num_threads;
  }

  // Runs `fn` with its parameters already in frame[0..n) and writes its results to
  // `results`. The frame's registers are cleared on the way out. The hook is looked
  // at once per function: without one, the loop has no hook calls at all.
  void exec(const Function& fn, Value* frame, Value* results) {
    if (Hook* hook = s_.hook_) {
      hook->enter(fn);
      exec_loop<true>(fn, frame, results, hook);
      hook->leave(fn);
    } else {
      exec_loop<false>(fn, frame, results, nullptr);
    }
  }

 private:
  template <bool Hooked>
  void exec_loop(const Function& fn, Value* frame, Value* results, Hook* hook) {
    const size_t n = fn.packed.size();
    for (size_t i = 0; i < n; ++i) {
      const PackedInstr& ins = fn.packed[i];
      if constexpr (Hooked) hook->before(fn, fn.code[i], frame);
      try {
        step(fn, ins, frame, results);
      } catch (const Error& e) {
        clear(fn, frame);
        rethrow(fn, fn.code[i], e.what());
      } catch (const std::exception& e) {
        clear(fn, frame);
        rethrow(fn, fn.code[i], e.what());
      }
      if constexpr (Hooked) hook->after(fn, fn.code[i], frame);
      const uint32_t* frees = fn.index_pool.data() + ins.frees;
      for (uint16_t k = 0; k < ins.num_frees; ++k) frame[frees[k]] = Value();
    }
    s_.instructions_ += n;
    clear(fn, frame);
  }

  static void clear(const Function& fn, Value* frame) {
    for (uint32_t r = 0; r < fn.num_regs; ++r) frame[r] = Value();
  }

  [[noreturn]] void rethrow(const Function& fn, const Instr& ins, const std::string& what) {
    // The innermost failure reads "op: message"; each frame on the way out adds an
    // "at file:line in function: statement" line, like a traceback.
    std::string msg = what;
    if (ins.kind == Instr::Kind::Kernel && msg.rfind(ins.callee + ": ", 0) != 0) msg = ins.callee + ": " + msg;
    if (ins.kind == Instr::Kind::ParamIndexed) msg = "param: " + msg;
    msg += fmt::format("\n  at {}:{} in {}: {}", prog_.filename(), ins.line, fn.name, ins.text);
    throw Error(msg);
  }

  const Value& read(const Function& fn, const Value* frame, const Operand& o) const {
    return o.from == Operand::From::Reg ? frame[o.index] : fn.consts[o.index];
  }

  Value build_list(const Function& fn, const Value* frame, const ListOperand& list) const {
    Ints is;
    for (const Operand& item : list.items) {
      const Value& v = read(fn, frame, item);
      if (!v.is_int()) fail("list items must be ints, got {}", v.describe());
      is.push_back(v.as_int());
    }
    return Value::from_ints(is);
  }

  static void deliver(const Function& fn, const PackedInstr& ins, Value* frame, Value* results, size_t n) {
    const uint32_t* outs = fn.index_pool.data() + ins.outs;
    if (ins.pack_tuple) {
      Tuple t;
      t.reserve(n);
      for (size_t i = 0; i < n; ++i) t.push_back(std::move(results[i]));
      frame[outs[0]] = Value::from_tuple(std::move(t));
      return;
    }
    for (size_t i = 0; i < n; ++i) frame[outs[i]] = std::move(results[i]);
  }

  void step(const Function& fn, const PackedInstr& ins, Value* frame, Value* results) {
    const Operand* args = fn.operand_pool.data() + ins.args;
    switch (ins.kind) {
      case Instr::Kind::Kernel: return kernel(fn, ins, frame);
      case Instr::Kind::Call: {
        const Function& g = prog_.functions()[ins.fn_a];
        Value* out = frame + fn.num_regs;
        Value* sub = out + g.num_returns();
        for (size_t i = 0; i < ins.num_args; ++i) sub[i] = read(fn, frame, args[i]);
        exec(g, sub, out);
        deliver(fn, ins, frame, out, g.num_returns());
        return;
      }
      case Instr::Kind::WhileLoop: return while_loop(fn, ins, frame);
      case Instr::Kind::Cond: {
        const Function& a = prog_.functions()[ins.fn_a];
        const Function& b = prog_.functions()[ins.fn_b];
        const Function& g = truthy(read(fn, frame, args[0]), fn.name) ? a : b;
        Value* out = frame + fn.num_regs;
        Value* sub = out + g.num_returns();
        for (size_t i = 1; i < ins.num_args; ++i) sub[i - 1] = read(fn, frame, args[i]);
        exec(g, sub, out);
        deliver(fn, ins, frame, out, g.num_returns());
        return;
      }
      case Instr::Kind::Emit: {
        bool go = true;
        if (*s_.emit_) {
          const Value& channel = read(fn, frame, args[0]);
          go = (*s_.emit_)(channel.as_str(), read(fn, frame, args[1]));
        }
        frame[fn.index_pool[ins.outs]] = Value::from_bool(go);
        return;
      }
      case Instr::Kind::ParamIndexed: {
        const Instr& full = fn.code[size_t(&ins - fn.packed.data())];
        const int64_t i = read(fn, frame, args[0]).as_int();
        if (i < 0 || size_t(i) >= full.table.size() || full.table[size_t(i)].is_none())
          fail("no weight '{}' for index {}", full.table_template, i);
        frame[fn.index_pool[ins.outs]] = full.table[size_t(i)];
        return;
      }
      case Instr::Kind::Return:
        for (size_t i = 0; i < ins.num_args; ++i) {
          const Operand& o = args[i];
          if (o.from == Operand::From::Reg) {
            results[i] = std::move(frame[o.index]);
            // A name returned twice ("return a, a") must not lose its value.
            for (size_t j = i + 1; j < ins.num_args; ++j)
              if (args[j].from == Operand::From::Reg && args[j].index == o.index) frame[o.index] = results[i];
          } else {
            results[i] = read(fn, frame, o);
          }
        }
        return;
    }
  }

  void kernel(const Function& fn, const PackedInstr& ins, Value* frame) {
    const size_t n = ins.num_args;
    const Operand* args = fn.operand_pool.data() + ins.args;
    const uint8_t* contiguous = fn.contiguous_pool.data() + ins.args;
    const Value* inline_slots[kInlineSlots];
    Value inline_tmp[4];
    std::vector<const Value*> heap_slots;
    std::vector<Value> heap_tmp;
    const Value** slots = inline_slots;
    if (n > size_t(kInlineSlots)) {
      heap_slots.resize(n);
      slots = heap_slots.data();
    }
    size_t used_tmp = 0;
    auto temp = [&]() -> Value& {
      if (used_tmp < 4) return inline_tmp[used_tmp++];
      heap_tmp.reserve(n);
      heap_tmp.emplace_back();
      ++used_tmp;
      return heap_tmp.back();
    };
    for (size_t i = 0; i < n; ++i) {
      const Operand& o = args[i];
      if (o.from == Operand::From::List) {
        Value& t = temp();
        t = build_list(fn, frame, fn.lists[o.index]);
        slots[i] = &t;
        continue;
      }
      const Value& v = read(fn, frame, o);
      if (contiguous[i] && v.is_tensor() && !v.tensor_unchecked().is_contiguous()) {
        Value& t = temp();
        t = Value(v.tensor_unchecked().contiguous(ctx_.pool));
        slots[i] = &t;
        continue;
      }
      slots[i] = &v;
    }
    // An op declares any number of results (vm::register_op sets no limit): the usual
    // few on the stack, more on the heap.
    const size_t nout = ins.op->outputs.size();
    Value inline_outs[kInlineOutputs];
    std::vector<Value> heap_outs;
    Value* outs = inline_outs;
    if (nout > size_t(kInlineOutputs)) {
      heap_outs.resize(nout);
      outs = heap_outs.data();
    }
    ins.kernel(ctx_, ops::Args(*ins.op, slots, int(n)), outs);
    deliver(fn, ins, frame, outs, nout);
  }

  void while_loop(const Function& fn, const PackedInstr& ins, Value* frame) {
    const Function& cond = prog_.functions()[ins.fn_a];
    const Function& body = prog_.functions()[ins.fn_b];
    const Operand* args = fn.operand_pool.data() + ins.args;
    const size_t k = ins.num_args;
    Value* carried = frame + fn.num_regs;
    Value* pred = carried + k;
    Value* sub = pred + 1;
    for (size_t i = 0; i < k; ++i) carried[i] = read(fn, frame, args[i]);
    for (;;) {
      for (size_t i = 0; i < k; ++i) sub[i] = carried[i];
      exec(cond, sub, pred);
      const bool go = truthy(*pred, cond.name);
      *pred = Value();
      if (!go) break;
      // Every iteration runs at least the body's return, so checking here bounds any run.
      if (s_.instructions_ >= s_.budget_end_) fail_budget(s_.options_.max_instructions, body.name);
      for (size_t i = 0; i < k; ++i) sub[i] = std::move(carried[i]);
      exec(body, sub, carried);
    }
    deliver(fn, ins, frame, carried, k);
  }

  Session& s_;
  const Program& prog_;
  ops::OpContext ctx_;
};

// ---------------------------------------------------------------- Session

Session::Session(std::shared_ptr<const Program> program, SessionOptions options)
    : program_(std::move(program)),
      options_(options),
      pool_(options.arena ? make_ref<Pool>(options.arena) : make_ref<Pool>()) {
  if (!program_) fail("Session: no program");
  if (!program_->weights_bound()) fail("Session: {} was resolved without its weights (Program::resolve): it cannot run", program_->filename());
  set_num_threads(options.num_threads);
  if (options.profile) {
    ProfilerOptions po;
    po.trace = options.profile_trace;
    profiler_ = std::make_unique<Profiler>(po);
    hook_ = profiler_.get();
  }
  stack_.resize(program_->max_stack() + 64);
}

Session::~Session() { stack_.clear(); }

void Session::set_num_threads(int n) {
  if (n < 1) fail("num_threads must be at least 1, got {}", n);
  options_.num_threads = n;
  threads_ = n > 1 ? std::make_unique<ThreadPool>(n) : nullptr;
  if (threads_) threads_->set_engaged(false);  // engaged only while a run is under way
}

std::vector<Value> Session::run(const std::string& name, std::vector<Value> inputs) {
  return run(name, std::move(inputs), on_emit_);
}

std::vector<Value> Session::run(const std::string& name, std::vector<Value> inputs, const EmitCallback& on_emit) {
  // Two runs at once would share one register stack: refused before either touches it.
  if (running_.exchange(true, std::memory_order_acquire))
    fail("Session::run({}): this Session is already running a function (on another thread, or in a callback of "
         "its own run); a Session serves one run at a time: use one per thread, or a vm::SessionPool",
         name);
  struct Running {
    Session& s;
    ~Running() {
      s.emit_ = nullptr;
      s.running_.store(false, std::memory_order_release);
    }
  } running{*this};
  emit_ = &on_emit;
  const Function& fn = program_->function(name);
  check_inputs(name, fn.param_names, fn.param_types, inputs);
  const size_t nret = fn.num_returns();
  Value* results = stack_.data();
  Value* frame = results + nret;
  for (size_t i = 0; i < inputs.size(); ++i) frame[i] = std::move(inputs[i]);
  // The pool counts toward the process's busy threads only while this run lasts, so
  // idle Sessions do not stop busy ones from spinning (see thread_pool.h).
  struct Engage {
    ThreadPool* pool;
    explicit Engage(ThreadPool* p) : pool(p) { if (pool) pool->set_engaged(true); }
    ~Engage() { if (pool) pool->set_engaged(false); }
  } engage(threads_.get());
  const uint64_t budget = options_.max_instructions;
  budget_end_ = budget == 0 || instructions_ > UINT64_MAX - budget ? UINT64_MAX : instructions_ + budget;
  if (hook_) hook_->begin_run(fn);
  try {
    Interpreter(*this).exec(fn, frame, results);
  } catch (...) {
    for (Value& v : stack_) v = Value();
    throw;
  }
  std::vector<Value> out(nret);
  for (size_t i = 0; i < nret; ++i) out[i] = std::move(results[i]);
  return out;
}

std::vector<Value> Session::run_named(const std::string& name,
                                      const std::vector<std::pair<std::string, Value>>& named) {
  const Function& fn = program_->function(name);
  std::vector<Value> inputs(fn.param_names.size());
  std::vector<bool> given(inputs.size(), false);
  for (const auto& [key, value] : named) {
    auto it = std::find(fn.param_names.begin(), fn.param_names.end(), key);
    if (it == fn.param_names.end())
      fail("{} has no input '{}' (it takes: {})", name, key, fmt::join(fn.param_names, ", "));
    const size_t i = size_t(it - fn.param_names.begin());
    if (given[i]) fail("{}: input '{}' given twice", name, key);
    inputs[i] = value;
    given[i] = true;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!given[i] && fn.param_types[i] != "Any")
      fail("{}: missing input '{}' ({})", name, fn.param_names[i], fn.param_types[i]);
  return run(name, std::move(inputs));
}

std::vector<Value> run_named(Session& session, const std::string& function,
                             const std::vector<std::pair<std::string, Value>>& named) {
  return session.run_named(function, named);
}

std::vector<Value> run(Session& session, const std::string& function, std::vector<Value> inputs) {
  return session.run(function, std::move(inputs));
}

std::vector<Value> run(Session& session, const std::string& function, std::vector<Value> inputs,
                       EmitCallback on_emit) {
  return session.run(function, std::move(inputs), on_emit);
}

EmitCallback token_stream(TokenCallback on_tokens) {
  return [on_tokens = std::move(on_tokens)](const std::string& channel, const Value& value) {
    if (channel != "tokens") return true;
    if (!value.is_tensor()) fail("emit: the tokens channel carries an i64 tensor [rows, n], got {}", value.describe());
    const Tensor t = value.tensor_unchecked().contiguous();
    if (t.dtype() != DType::i64 || t.ndim() != 2)
      fail("emit: the tokens channel carries an i64 tensor [rows, n], got {}", value.describe());
    // Negative ids pad rows that received fewer tokens than others in this step.
    const int64_t rows = t.shape()[0], n = t.shape()[1];
    const int64_t* p = static_cast<const int64_t*>(t.raw());
    std::vector<std::vector<int64_t>> tokens(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j)
        if (p[r * n + j] >= 0) tokens[size_t(r)].push_back(p[r * n + j]);
    return on_tokens(tokens);
  };
}

}  // namespace vm
