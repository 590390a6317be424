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

#include "ir/safetensors.h"
#include "ops/registry.h"
#include "vm/checks.h"
#include "vm/program.h"
#include "vm/session.h"
#include "vm/thread_pool.h"
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

// The program text, for errors: "at program.py:12 in encode: x = linear(...)".
struct Source {
  const char* filename;
  const char* const* lines;  // lines[0] is line 1
  int count;
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
  std::shared_ptr<ir::WeightsFile> file_;
  mutable size_t bytes_ = 0;
};

// What the compiled functions of one run share: the session's pool and threads (the
// kernels' OpContext), the host's emit callback and the source for errors.
struct Context {
  ops::OpContext ops;
  EmitCallback on_emit;
  const Source* source = nullptr;
};

// A compiled program's per-caller state, as a vm::Session's: the buffer pool and the
// worker threads. One thread uses it at a time.
class Runtime {
 public:
  explicit Runtime(const SessionOptions& options);
  Context context(EmitCallback on_emit, const Source* source);
  // Keeps the worker threads counted as busy while a run lasts (vm/thread_pool.h).
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

// Runs `op`'s kernel on the argument slots (made contiguous where the op needs it) and
// writes its outputs; an error gains the op's name and the IR line, as the interpreter's.
void run_kernel(Context& c, int line, const Op& op, const Value* const* slots, int n, Value* outs);
[[noreturn]] void fail_at(const Context& c, int line, const std::string& message);

// y = op(args...): one output
template <typename... A>
Value call(Context& c, int line, const Op& op, const A&... args) {
  const Value* slots[sizeof...(A) + 1] = {&args..., nullptr};
  Value out;
  run_kernel(c, line, op, slots, int(sizeof...(A)), &out);
  return out;
}

// a, b = op(args...): N outputs
template <size_t N, typename... A>
std::array<Value, N> call_n(Context& c, int line, const Op& op, const A&... args) {
  const Value* slots[sizeof...(A) + 1] = {&args..., nullptr};
  std::array<Value, N> out;
  run_kernel(c, line, op, slots, int(sizeof...(A)), out.data());
  return out;
}

// w = param("layers.{}.fc1.weight", index)
const Value& param(const Context& c, int line, const WeightsFile::Table& table, const Value& index);

// go = emit(channel, value): the host's answer, True without a callback.
Value emit(Context& c, int line, const Value& channel, const Value& value);

// A while_loop condition or cond predicate.
inline bool test(const Value& v, const char* fn) { return truthy(v, fn); }

// [a, -1, 8, 64]: an int list with names in it.
inline int64_t list_item(const Value& v) {
  if (!v.is_int()) fail("list items must be ints, got {}", v.describe());
  return v.as_int();
}
inline int64_t list_item(int64_t v) { return v; }
template <typename... A>
Value list(const A&... items) {
  Ints is;
  (is.push_back(list_item(items)), ...);
  return Value::from_ints(is);
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
