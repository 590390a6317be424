// What a program compiled to C++ calls (`tensorvm compile`, docs/aot.md). The
// generated code is the IR written as C++: one function per IR function, one line per
// instruction. Each op is bound once at startup, by name, to the OpDef and kernel the
// interpreter's loader binds, and each instruction calls that kernel directly with its
// arguments in the order the loader would put them, so a compiled program and the
// interpreter compute the same bits. Weights are bound by name from the same mapped
// safetensors file (vm/weights.h); objects (KVCache, Rng, ...) are the runtime's own.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "io/safetensors.h"
#include "ops/registry.h"
#include "vm/checks.h"
#include "vm/profiler.h"
#include "vm/program.h"
#include "vm/session.h"
#include "core/thread_pool.h"
#include "vm/weights.h"

namespace vm::aot {

// An op bound by name: the same OpDef and kernel Program::load binds. A name the
// registry lacks (an app's op not registered yet) fails at startup, naming it.
struct Op {
  explicit Op(const char* name);
  const ops::OpDef* def = nullptr;
  ops::Kernel kernel = nullptr;
  std::vector<uint8_t> contiguous;  // per argument slot: 1 if a strided tensor must be copied first
};

// What errors and hooks name of the program, as the loader resolved it (tensorvm
// compile writes it from vm::Program::resolve): "at program.py:12 in encode: x =
// linear(...)", and the Function and Instr a hook is shown for each line.
struct SourceFunction {
  const char* name;
  int line;  // of its `def`
};
struct SourceSite {  // one instruction (not a return)
  int line;
  int function;      // the function it is in, an index into Source::functions
  Instr::Kind kind;
  const char* callee;  // the op or function it calls, or while_loop, cond, emit, param
  const char* text;    // the statement as the loader prints it (Instr::text)
  int fn_a, fn_b;      // while_loop: condition, body; cond: then, else (indices into functions)
  int names, num_names;  // its results' names: Source::names[names ..]
};
struct Source {
  const char* filename;
  const SourceFunction* functions;  // by index, in the order of their lines
  int num_functions;
  const SourceSite* sites;  // in the order of their lines, one a line
  int num_sites;
  const char* const* names;
};

// The weights a compiled program binds by name, from one mapped safetensors file. The
// tensors it hands out view the mapping, so it must outlive them (as vm::Program
// keeps its file).
class WeightsFile {
 public:
  WeightsFile(const std::string& path, const LoadOptions& options);
  Value get(const char* name) const;  // param("name"); fails naming a missing weight
  struct Table {                      // param("layers.{}.fc1.weight", layer)
    std::string name_template;
    std::vector<Value> by_index;  // None where the file has no weight of that index
  };
  Table table(const char* name_template) const;
  size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<io::WeightsFile> file_;
  mutable size_t bytes_ = 0;
};

class Sites;

// What the compiled functions of one run share: the session's pool and threads (the
// kernels' OpContext), the host's emit callback, the source for errors, and what the
// interpreter keeps per run: its call chain, its instruction count and its hook.
struct Context {
  ops::OpContext ops;
  EmitCallback on_emit;
  const Source* source = nullptr;
  // The call chain, read only when an error is formatted: `depth` compiled functions
  // are running (aot::Frame), and calls[d] is the IR line of the call the one at depth
  // d is making (aot::at). Slots past kCallSlots are not kept.
  static constexpr int kCallSlots = kMaxCallDepth + 2;
  int depth = 0;
  int* calls = nullptr;
  // max_instructions: the session's count of IR instructions, as the interpreter
  // counts them (each function adds its own when it returns); a while_loop stops the
  // run at budget_end.
  uint64_t* instructions = nullptr;
  uint64_t budget_end = UINT64_MAX;
  uint64_t max_instructions = 0;
  // Profiler or another Hook; null (the default) costs one branch per op and per call.
  Hook* hook = nullptr;
  Sites* sites = nullptr;  // the Function and Instr a hook is shown for each line
  int* loop_open = nullptr;  // per depth: the while_loop line a hook saw start, 0 for none
};

// A compiled program's per-caller state, as a vm::Session's: the buffer pool and the
// worker threads. One thread uses it at a time.
class Runtime {
 public:
  explicit Runtime(const SessionOptions& options);
  ~Runtime();
  Context context(EmitCallback on_emit, const Source* source);
  // As vm::Session's: the hook (not owned; nullptr to remove), the session's own
  // profiler (SessionOptions::profile) and the instructions its runs executed.
  void set_hook(Hook* hook) { hook_ = hook; }
  Hook* hook() const { return hook_; }
  Profiler* profiler() { return profiler_.get(); }
  uint64_t instructions_executed() const { return instructions_; }
  // Keeps the worker threads counted as busy while a run lasts (core/thread_pool.h).
  struct Engaged {
    ThreadPool* pool;
    explicit Engaged(ThreadPool* p);
    ~Engaged();
    Engaged(const Engaged&) = delete;
    Engaged& operator=(const Engaged&) = delete;
  };
  ThreadPool* threads() { return threads_.get(); }

 private:
  SessionOptions options_;
  Ref<Pool> pool_;
  std::unique_ptr<ThreadPool> threads_;
  std::vector<int> calls_, loop_open_;
  uint64_t instructions_ = 0;
  Hook* hook_ = nullptr;
  std::unique_ptr<Profiler> profiler_;
};

// A compiled function as run() sees it.
struct Signature {
  const char* name;
  std::vector<std::string> param_names, param_types;
};
// From {name, param name, param type, ..., nullptr, name, ..., nullptr, nullptr}.
std::vector<Signature> signatures_from(const char* const* table);
size_t find(const std::vector<Signature>& functions, const std::string& name, const char* program);
// By parameter name, as vm::Session::run_named: parameters left out are None (Any only).
std::vector<Value> inputs_by_name(const Signature& fn, const std::vector<std::pair<std::string, Value>>& named);

// ---- what one line of generated code calls

// The frame of a compiled function, its first line: counts it in the call chain while
// it runs and adds its IR instructions to the session's count when it returns (as the
// interpreter does), and shows its entry and exit to a hook. `def_line` is the line
// of its `def`.
class Frame {
 public:
  Frame(Context& c, int def_line, uint32_t instructions) : c_(c), def_line_(def_line), instructions_(instructions) {
    ++c.depth;
    if (c.hook) hooked_enter(c, def_line);
  }
  ~Frame() {
    *c_.instructions += instructions_;
    if (c_.hook) hooked_leave(c_, def_line_);
    --c_.depth;
  }
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;

 private:
  static void hooked_enter(Context& c, int def_line);
  static void hooked_leave(Context& c, int def_line);
  Context& c_;
  int def_line_;
  uint32_t instructions_;
};

// f(aot::at(c, LINE), ...): a call of a compiled function from IR line LINE, kept for
// the error chain (a store, nothing else).
template <typename C>
C& at(C& c, int64_t line) {
  if (c.depth < Context::kCallSlots) c.calls[c.depth] = int(line);
  return c;
}

// Runs `op`'s kernel on the argument slots (made contiguous where the op needs it) and
// writes its `nout` outputs; an error gains the op's name, the IR line and the call
// chain, as the interpreter's.
void run_kernel(Context& c, int line, const Op& op, const Value* const* slots, int n, Value* outs, int nout);
// Throws `message` with "at FILE:LINE in FUNCTION: STATEMENT" for `line` and for each
// call below it (the interpreter's traceback).
[[noreturn]] void fail_at(const Context& c, int line, const std::string& message);

// [a, -1, 8, 64]: an int list with names in it, an op's argument. It is built when the
// op is called (aot::call), so an item that is not an int fails as in the interpreter,
// naming the op, the line and the calls above. It refers to its items: it lives in the
// expression of the call.
struct ListSite {  // the call a list is built for; null elsewhere
  const Context* c;
  int line;
  const Op* op;
};
struct ListItem {
  const Value* name;  // or null for a literal
  int64_t value;
};
inline ListItem list_item(const Value& v) { return {&v, 0}; }
inline ListItem list_item(int64_t v) { return {nullptr, v}; }
Value build_list(const ListItem* items, size_t n, const ListSite* at);
template <size_t N>
struct List {
  std::array<ListItem, N> items;
  mutable Value built;  // the list, while the op's call lasts
  operator Value() const { return build_list(items.data(), N, nullptr); }  // elsewhere than an op's argument
};
template <typename... A>
List<sizeof...(A)> list(const A&... items) {
  return List<sizeof...(A)>{{list_item(items)...}, {}};
}

inline const Value* slot(const Value& v, const ListSite*) { return &v; }
template <size_t N>
const Value* slot(const List<N>& l, const ListSite* at) {
  l.built = build_list(l.items.data(), N, at);
  return &l.built;
}

// The kernel call of y = op(args...) with `nout` results.
template <typename... A>
void invoke(Context& c, int line, const Op& op, Value* outs, int nout, const A&... args) {
  const ListSite at{&c, line, &op};
  const Value* slots[sizeof...(A) + 1] = {slot(args, &at)..., nullptr};
  run_kernel(c, line, op, slots, int(sizeof...(A)), outs, nout);
}

// y = op(args...): one output
template <typename... A>
Value call(Context& c, int line, const Op& op, const A&... args) {
  Value out;
  invoke(c, line, op, &out, 1, args...);
  return out;
}

// a, b = op(args...): N outputs
template <size_t N, typename... A>
std::array<Value, N> call_n(Context& c, int line, const Op& op, const A&... args) {
  std::array<Value, N> out;
  invoke(c, line, op, out.data(), int(N), args...);
  return out;
}

// w = param("layers.{}.fc1.weight", index)
const Value& param(Context& c, int line, const WeightsFile::Table& table, const Value& index);

// go = emit(channel, value): the host's answer, True without a callback.
Value emit(Context& c, int line, const Value& channel, const Value& value);

// Out of line, the rare cases of test() and loop(): a predicate that is not a plain
// bool (or fails, as the interpreter's), a budget used up, a loop's end shown to a hook.
bool test_slow(Context& c, int line, const Value& pred);
void loop_slow(Context& c, int line, bool go);

// cond(pred, ...) at `line`: the predicate's truth.
inline bool test(Context& c, int line, const Value& pred) {
  if (pred.is_bool()) return pred.as_bool();
  return test_slow(c, line, pred);
}

// while (aot::loop(c, LINE, cond(...))) ...: the condition's truth, and the budget of
// max_instructions checked before each iteration, as the interpreter checks it.
inline bool loop(Context& c, int line, const Value& pred) {
  const bool go = pred.is_bool() ? pred.as_bool() : test_slow(c, line, pred);
  if (go ? *c.instructions >= c.budget_end : c.hook != nullptr) loop_slow(c, line, go);
  return go;
}

// t = f(...) where f returns k > 1 values: one tuple.
template <size_t N>
Value tuple(std::array<Value, N> values) {
  return Value::from_tuple(Tuple(std::make_move_iterator(values.begin()), std::make_move_iterator(values.end())));
}

// The interpreter clears a register after its last use (its buffer goes back to the
// pool); compiled code does the same with drop(a, b, ...).
template <typename... A>
void drop(A&... values) {
  ((values = Value()), ...);
}

// Literals as constants, built once.
inline Value str(const char* s) { return Value::from_str(s); }
inline Value ints(std::initializer_list<int64_t> items) {
  Ints is;
  for (int64_t i : items) is.push_back(i);
  return Value::from_ints(is);
}

}  // namespace vm::aot
