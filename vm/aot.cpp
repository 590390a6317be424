// The support of compiled programs (vm/aot.h): binding ops and weights by name once,
// and the one call per instruction.
#include "vm/aot.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "vm/profiler.h"

namespace vm::aot {

Op::Op(const char* name) : def(ops::Registry::get().find(name)) {
  if (!def)
    fail("compiled program: no op '{}' is registered (an app's own op must be registered with vm::register_op "
         "before the program is loaded)",
         name);
  kernel = def->kernel;
  // The slots are the non-variadic parameters in order, then the variadic values
  // (ops::bind); only the ones a call fills are looked at.
  const int vi = def->variadic_index();
  for (size_t p = 0; p < def->params.size(); ++p)
    if (int(p) != vi) contiguous.push_back(def->params[p].strided_ok ? 0 : 1);
  if (vi >= 0) contiguous.push_back(def->params[size_t(vi)].strided_ok ? 0 : 1);
}

namespace {

bool env_copy_weights() {
  const char* v = std::getenv("TENSORVM_COPY_WEIGHTS");
  return v && *v && std::string(v) != "0";
}

// The instruction at `line`, null for none.
const SourceSite* site_at(const Source& s, int line) {
  const SourceSite* end = s.sites + s.num_sites;
  const SourceSite* it = std::lower_bound(s.sites, end, line, [](const SourceSite& a, int l) { return a.line < l; });
  return it != end && it->line == line ? it : nullptr;
}

// The function of index `i` ("?" for none), and the index of the one whose `def` is at
// `def_line` (-1 for none).
const SourceFunction& function_at(const Source& s, int i) {
  static const SourceFunction unknown{"?", 0};
  return i >= 0 && i < s.num_functions ? s.functions[i] : unknown;
}
int function_index(const Source& s, int def_line) {
  const SourceFunction* end = s.functions + s.num_functions;
  const SourceFunction* it =
      std::lower_bound(s.functions, end, def_line, [](const SourceFunction& f, int l) { return f.line < l; });
  return it != end && it->line == def_line ? int(it - s.functions) : -1;
}

// The name of the function the instruction at `line` is in.
const char* function_of(const Source& s, int line) {
  const SourceSite* site = site_at(s, line);
  return site ? function_at(s, site->function).name : "?";
}

// The statement at `line` as the interpreter names it.
const char* statement(const Source& s, int line) {
  const SourceSite* site = site_at(s, line);
  return site ? site->text : "";
}

}  // namespace

// The Function and Instr a hook is shown for each line of compiled code, made the first
// time a hook sees the line from what the loader resolved of it (Source's tables). A
// kernel's Instr reads its arguments from registers 0..n-1 and writes its results to
// n..n+k-1 of the frame the hook is given, and its Function (its own, named as the
// function it is in) names the results' registers; a call, while_loop, cond, emit or
// param has no registers. One per compiled program, kept for the life of the process
// (sites_of): a profiler keeps pointers into them past the sessions that ran, and
// sessions on several threads share them.
class Sites {
 public:
  explicit Sites(const Source& s) : src_(s), by_site_(size_t(s.num_sites)) {}

  const Function& function(int def_line) {
    std::lock_guard<std::mutex> lock(mutex_);
    return function_locked(function_index(src_, def_line));
  }

  struct Site {
    Instr ins;
    const Function* fn = nullptr;
    Function own;  // a kernel's: its registers' names
  };

  const Site& kernel(int line, const Op& op, int n, int nout) {
    std::lock_guard<std::mutex> lock(mutex_);
    const SourceSite* from = nullptr;
    Site& s = at(line, &from);
    if (!s.fn) {
      fill(s, *from);
      s.ins.op = op.def;
      s.ins.kernel = op.kernel;
      s.own.name = s.fn->name;
      s.own.line = s.fn->line;
      s.own.reg_names.resize(size_t(n + nout));
      for (int i = 0; i < nout && i < from->num_names; ++i) s.own.reg_names[size_t(n + i)] = src_.names[from->names + i];
      for (int i = 0; i < n; ++i) s.ins.args.push_back(Operand{Operand::From::Reg, uint32_t(i)});
      for (int i = 0; i < nout; ++i) s.ins.outs.push_back(uint32_t(n + i));
      s.own.num_regs = uint32_t(n + nout);
      s.fn = &s.own;
    }
    return s;
  }

  const Site& call(int line) {
    std::lock_guard<std::mutex> lock(mutex_);
    const SourceSite* from = nullptr;
    Site& s = at(line, &from);
    if (!s.fn) fill(s, *from);
    return s;
  }

 private:
  Site& at(int line, const SourceSite** from) {
    *from = site_at(src_, line);
    if (!*from) fail("compiled program: no instruction at line {} of its source", line);
    auto& p = by_site_[size_t(*from - src_.sites)];
    if (!p) p = std::make_unique<Site>();
    return *p;
  }
  const Function& function_locked(int index) {
    auto& f = fns_[index];
    if (!f) {
      f = std::make_unique<Function>();
      f->name = function_at(src_, index).name;
      f->line = function_at(src_, index).line;
    }
    return *f;
  }
  void fill(Site& s, const SourceSite& from) {
    s.fn = &function_locked(from.function);
    s.ins.kind = from.kind;
    s.ins.line = from.line;
    s.ins.text = from.text;
    s.ins.callee = from.callee;
  }

  std::mutex mutex_;
  const Source& src_;
  std::vector<std::unique_ptr<Site>> by_site_;  // by index into Source::sites
  std::map<int, std::unique_ptr<Function>> fns_;
};

namespace {

Sites* sites_of(const Source& source) {
  static std::mutex mutex;
  static std::map<const Source*, std::unique_ptr<Sites>> all;  // a few per process: one per compiled program
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = all[&source];
  if (!s) s = std::make_unique<Sites>(source);
  return s.get();
}

}  // namespace

WeightsFile::WeightsFile(const std::string& path, const LoadOptions& options) {
  try {
    file_ = io::WeightsFile::open(path, options.copy_weights || env_copy_weights());
  } catch (const io::WeightsError& e) {
    throw Error(e.what());
  }
}

Value WeightsFile::get(const char* name) const {
  const io::TensorEntry* e = file_->find(name);
  if (!e) fail("param: no weight named '{}' in {}", name, file_->path());
  bytes_ += e->nbytes;
  return weight_tensor(*e, file_);
}

WeightsFile::Table WeightsFile::table(const char* name_template) const {
  Table t{name_template, {}};
  for (const auto& [i, e] : indexed_weights(*file_, name_template)) {
    if (t.by_index.size() <= i) t.by_index.resize(i + 1);
    t.by_index[i] = weight_tensor(*e, file_);
    bytes_ += e->nbytes;
  }
  if (t.by_index.empty()) fail("param: no weight matches '{}' in {}", name_template, file_->path());
  return t;
}

Runtime::Runtime(const SessionOptions& options)
    : options_(options),
      pool_(options.arena ? make_ref<Pool>(options.arena) : make_ref<Pool>()),  // as a Session
      calls_(size_t(Context::kCallSlots)) {
  if (options.num_threads < 1) fail("num_threads must be at least 1, got {}", options.num_threads);
  if (options.num_threads > 1) {
    threads_ = std::make_unique<ThreadPool>(options.num_threads);
    threads_->set_engaged(false);  // engaged only while a run is under way, as a Session's
  }
  if (options.profile) {
    ProfilerOptions po;
    po.trace = options.profile_trace;
    profiler_ = std::make_unique<Profiler>(po);
    hook_ = profiler_.get();
  }
}

Runtime::~Runtime() = default;

Context Runtime::context(EmitCallback on_emit, const Source* source) {
  Context c;
  c.ops.pool = pool_.get();
  c.ops.threads = threads_.get();
  c.ops.num_threads = options_.num_threads;
  c.on_emit = std::move(on_emit);
  c.source = source;
  c.calls = calls_.data();
  c.instructions = &instructions_;
  const uint64_t budget = options_.max_instructions;  // per run, as Session::run counts it
  c.max_instructions = budget;
  c.budget_end = budget == 0 || instructions_ > UINT64_MAX - budget ? UINT64_MAX : instructions_ + budget;
  if (hook_) {
    loop_open_.assign(size_t(Context::kCallSlots), 0);
    c.hook = hook_;
    c.sites = sites_of(*source);
    c.loop_open = loop_open_.data();
  }
  return c;
}

Runtime::Engaged::Engaged(ThreadPool* p) : pool(p) {
  if (pool) pool->set_engaged(true);
}
Runtime::Engaged::~Engaged() {
  if (pool) pool->set_engaged(false);
}

std::vector<Signature> signatures_from(const char* const* table) {
  std::vector<Signature> all;
  while (*table) {
    Signature s{*table++, {}, {}};
    while (*table) {
      s.param_names.emplace_back(*table++);
      s.param_types.emplace_back(*table++);
    }
    ++table;
    all.push_back(std::move(s));
  }
  return all;
}

size_t find(const std::vector<Signature>& functions, const std::string& name, const char* program) {
  for (size_t i = 0; i < functions.size(); ++i)
    if (name == functions[i].name) return i;
  std::vector<std::string> names;
  for (const Signature& f : functions) names.push_back(f.name);
  fail("no function '{}' in {} (it has: {})", name, program, fmt::join(names, ", "));
}

std::vector<Value> inputs_by_name(const Signature& fn, const std::vector<std::pair<std::string, Value>>& named) {
  std::vector<Value> inputs(fn.param_names.size());
  std::vector<bool> given(inputs.size(), false);
  for (const auto& [key, value] : named) {
    auto it = std::find(fn.param_names.begin(), fn.param_names.end(), key);
    if (it == fn.param_names.end()) fail("{} has no input '{}' (it takes: {})", fn.name, key, fmt::join(fn.param_names, ", "));
    const size_t i = size_t(it - fn.param_names.begin());
    if (given[i]) fail("{}: input '{}' given twice", fn.name, key);
    inputs[i] = value;
    given[i] = true;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!given[i] && fn.param_types[i] != "Any") fail("{}: missing input '{}' ({})", fn.name, fn.param_names[i], fn.param_types[i]);
  return inputs;
}

void fail_at(const Context& c, int line, const std::string& message) {
  const Source& s = *c.source;
  std::string msg = message;
  auto at = [&](int l) { msg += fmt::format("\n  at {}:{} in {}: {}", s.filename, l, function_of(s, l), statement(s, l)); };
  at(line);
  for (int d = std::min(c.depth, Context::kCallSlots) - 1; d >= 1; --d) at(c.calls[d]);
  throw Error(msg);
}

bool test_slow(Context& c, int line, const Value& pred) {
  // As the interpreter's truthy(): a while_loop names its condition, cond the function it is in.
  const SourceSite* site = site_at(*c.source, line);
  const bool loop = site && site->kind == Instr::Kind::WhileLoop;
  try {
    return truthy(pred, loop ? function_at(*c.source, site->fn_a).name : function_of(*c.source, line));
  } catch (const std::exception& e) {
    fail_at(c, line, e.what());
  }
}

void loop_slow(Context& c, int line, bool go) {
  if (go) {
    if (*c.instructions >= c.budget_end) {
      try {
        const SourceSite* site = site_at(*c.source, line);
        fail_budget(c.max_instructions, function_at(*c.source, site ? site->fn_b : -1).name);
      } catch (const std::exception& e) {
        fail_at(c, line, e.what());
      }
    }
    return;
  }
  // The loop is over: a hook sees the while_loop instruction end.
  const int d = c.depth;
  if (c.hook && d < Context::kCallSlots && c.loop_open[d] == line) {
    const Sites::Site& site = c.sites->call(line);
    c.hook->after(*site.fn, site.ins, nullptr);
    c.loop_open[d] = 0;
  }
}

void Frame::hooked_enter(Context& c, int def_line) {
  // As the interpreter: before(call) then enter(callee); a while_loop's before comes
  // once, when its condition first runs, and its after when the loop ends (loop_slow).
  const Function& fn = c.sites->function(def_line);
  const int d = c.depth - 1;  // the caller's
  if (d == 0) {
    c.hook->begin_run(fn);
  } else if (d < Context::kCallSlots) {
    const Sites::Site& site = c.sites->call(c.calls[d]);
    if (site.ins.kind != Instr::Kind::WhileLoop) {
      c.hook->before(*site.fn, site.ins, nullptr);
    } else if (c.loop_open[d] != site.ins.line) {
      c.hook->before(*site.fn, site.ins, nullptr);
      c.loop_open[d] = site.ins.line;
    }
  }
  c.hook->enter(fn);
}

void Frame::hooked_leave(Context& c, int def_line) {
  if (std::uncaught_exceptions() > 0) return;  // a failed run leaves its frames open, as the interpreter's
  c.hook->leave(c.sites->function(def_line));
  const int d = c.depth - 1;
  if (d >= 1 && d < Context::kCallSlots) {
    const Sites::Site& site = c.sites->call(c.calls[d]);
    if (site.ins.kind != Instr::Kind::WhileLoop) c.hook->after(*site.fn, site.ins, nullptr);
  }
}

namespace {

// run_kernel with a hook: the hook sees the instruction with a frame holding its
// arguments, then its results.
void hooked_kernel(Context& c, int line, const Op& op, const Value* const* use, int n, Value* outs, int nout) {
  const Sites::Site& site = c.sites->kernel(line, op, n, nout);
  std::vector<Value> regs(size_t(n + nout));
  for (int i = 0; i < n; ++i) regs[size_t(i)] = *use[i];
  c.hook->before(*site.fn, site.ins, regs.data());
  op.kernel(c.ops, ops::Args(*op.def, use, n), outs);
  for (int i = 0; i < nout; ++i) regs[size_t(n + i)] = outs[i];
  c.hook->after(*site.fn, site.ins, regs.data());
}

}  // namespace

void run_kernel(Context& c, int line, const Op& op, const Value* const* slots, int n, Value* outs, int nout) {
  // As the interpreter's kernel call: strided tensors are copied for the parameters
  // that need contiguous ones; a few temporaries live on the stack.
  constexpr int kInline = 32;
  const Value* inline_slots[kInline];
  std::vector<const Value*> heap_slots;
  const Value** use = inline_slots;
  if (n > kInline) {
    heap_slots.resize(size_t(n));
    use = heap_slots.data();
  }
  Value inline_tmp[4];
  std::vector<Value> heap_tmp;
  int used_tmp = 0;
  try {
    for (int i = 0; i < n; ++i) {
      const Value& v = *slots[i];
      const size_t slot = std::min(size_t(i), op.contiguous.size() - 1);
      if (!op.contiguous.empty() && op.contiguous[slot] && v.is_tensor() && !v.tensor_unchecked().is_contiguous()) {
        Value* t;
        if (used_tmp < 4) {
          t = &inline_tmp[used_tmp++];
        } else {
          heap_tmp.reserve(size_t(n));
          heap_tmp.emplace_back();
          t = &heap_tmp.back();
        }
        *t = Value(v.tensor_unchecked().contiguous(c.ops.pool));
        use[i] = t;
      } else {
        use[i] = &v;
      }
    }
    if (c.hook)
      hooked_kernel(c, line, op, use, n, outs, nout);
    else
      op.kernel(c.ops, ops::Args(*op.def, use, n), outs);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (msg.rfind(op.def->name + ": ", 0) != 0) msg = op.def->name + ": " + msg;
    fail_at(c, line, msg);
  }
}

Value build_list(const ListItem* items, size_t n, const ListSite* at) {
  Ints is;
  for (size_t i = 0; i < n; ++i) {
    const Value* v = items[i].name;
    if (v && !v->is_int()) {
      const std::string msg = fmt::format("list items must be ints, got {}", v->describe());
      if (!at) fail("{}", msg);
      fail_at(*at->c, at->line, at->op->def->name + ": " + msg);  // as the interpreter, building a kernel's list
    }
    is.push_back(v ? v->as_int() : items[i].value);
  }
  return Value::from_ints(is);
}

const Value& param(Context& c, int line, const WeightsFile::Table& table, const Value& index) {
  struct Hooked {  // as the interpreter shows an indexed param to a hook
    Context& c;
    const Sites::Site* site;
    Hooked(Context& ctx, int l) : c(ctx), site(ctx.hook ? &ctx.sites->call(l) : nullptr) {
      if (site) c.hook->before(*site->fn, site->ins, nullptr);
    }
    void done() const {
      if (site) c.hook->after(*site->fn, site->ins, nullptr);
    }
  } hooked(c, line);
  try {
    const int64_t i = index.as_int();
    if (i < 0 || size_t(i) >= table.by_index.size() || table.by_index[size_t(i)].is_none())
      fail("no weight '{}' for index {}", table.name_template, i);
    hooked.done();
    return table.by_index[size_t(i)];
  } catch (const std::exception& e) {
    fail_at(c, line, std::string("param: ") + e.what());
  }
}

Value emit(Context& c, int line, const Value& channel, const Value& value) {
  const Sites::Site* site = c.hook ? &c.sites->call(line) : nullptr;
  if (site) c.hook->before(*site->fn, site->ins, nullptr);
  bool go = true;
  if (c.on_emit) {
    try {
      go = c.on_emit(channel.as_str(), value);
    } catch (const std::exception& e) {
      fail_at(c, line, e.what());
    }
  }
  if (site) c.hook->after(*site->fn, site->ins, nullptr);
  return Value::from_bool(go);
}

}  // namespace vm::aot
