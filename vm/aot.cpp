// The support of compiled programs (vm/aot.h): binding ops and weights by name once,
// and the one call per instruction.
#include "vm/aot.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// "def encode(input_ids: Tensor" -> "encode": the function a line of the source is in.
std::string function_of(const Source& s, int line) {
  for (int i = std::min(line, s.count); i >= 1; --i) {
    const char* text = s.lines[i - 1];
    if (std::strncmp(text, "def ", 4) != 0) continue;
    const char* end = std::strchr(text + 4, '(');
    return end ? std::string(text + 4, end) : std::string(text + 4);
  }
  return "?";
}

}  // namespace

WeightsFile::WeightsFile(const std::string& path, const LoadOptions& options) {
  try {
    file_ = ir::WeightsFile::open(path, options.copy_weights || env_copy_weights());
  } catch (const ir::WeightsError& e) {
    throw Error(e.what());
  }
}

Value WeightsFile::get(const char* name) const {
  const ir::TensorEntry* e = file_->find(name);
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
    : options_(options), pool_(options.arena ? make_ref<Pool>(options.arena) : make_ref<Pool>()) {  // as a Session
  if (options.num_threads < 1) fail("num_threads must be at least 1, got {}", options.num_threads);
  if (options.num_threads > 1) {
    threads_ = std::make_unique<ThreadPool>(options.num_threads);
    threads_->set_engaged(false);  // engaged only while a run is under way, as a Session's
  }
}

Context Runtime::context(EmitCallback on_emit, const Source* source) {
  Context c;
  c.ops.pool = pool_.get();
  c.ops.threads = threads_.get();
  c.ops.num_threads = options_.num_threads;
  c.on_emit = std::move(on_emit);
  c.source = source;
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
  const char* text = line >= 1 && line <= s.count ? s.lines[line - 1] : "";
  while (*text == ' ') ++text;
  throw Error(fmt::format("{}\n  at {}:{} in {}: {}", message, s.filename, line, function_of(s, line), text));
}

void run_kernel(Context& c, int line, const Op& op, const Value* const* slots, int n, Value* outs) {
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
    op.kernel(c.ops, ops::Args(*op.def, use, n), outs);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (msg.rfind(op.def->name + ": ", 0) != 0) msg = op.def->name + ": " + msg;
    fail_at(c, line, msg);
  }
}

const Value& param(const Context& c, int line, const WeightsFile::Table& table, const Value& index) {
  try {
    const int64_t i = index.as_int();
    if (i < 0 || size_t(i) >= table.by_index.size() || table.by_index[size_t(i)].is_none())
      fail("no weight '{}' for index {}", table.name_template, i);
    return table.by_index[size_t(i)];
  } catch (const std::exception& e) {
    fail_at(c, line, std::string("param: ") + e.what());
  }
}

Value emit(Context& c, int line, const Value& channel, const Value& value) {
  if (!c.on_emit) return Value::from_bool(true);
  try {
    return Value::from_bool(c.on_emit(channel.as_str(), value));
  } catch (const std::exception& e) {
    fail_at(c, line, e.what());
  }
}

}  // namespace vm::aot
