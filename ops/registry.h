// The instruction set: one registry of ops, each with its name, signature, output
// types, doc string and kernel. The loader binds IR calls against the signature once;
// the Python eager path binds against the same signature; docs/ops.md is printed
// from it. Kernels are plain functions (one per op) that check shapes first.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_pool.h"
#include "core/value.h"

namespace ops {

using vm::DType;
using vm::Ints;
using vm::Shape;
using vm::Tensor;
using vm::Value;

// What an argument slot accepts. Checked for literals at load time and for
// registers when the kernel reads the argument.
enum class Kind {
  Tensor,          // a tensor
  OptTensor,       // a tensor or None
  TensorOrScalar,  // a tensor or an int/float/bool
  Int,
  OptInt,          // an int or None
  Float,           // a float (an int is accepted and widened)
  Bool,
  Str,
  Ints,            // an int list; a single int is a one-item list
  OptInts,         // an int list or None
  Object,          // any object (the op checks the type)
  Any,             // anything
};
std::string_view kind_name(Kind k);
std::optional<Kind> parse_kind(std::string_view name);  // the inverse of kind_name

struct Param {
  std::string name;
  Kind kind = Kind::Tensor;
  bool has_default = false;
  Value default_value;
  bool variadic = false;    // *name: takes all remaining positional args
  bool strided_ok = false;  // the kernel handles non-contiguous views itself
};

struct OpContext {
  vm::Pool* pool = nullptr;           // where outputs are allocated (global pool when null)
  vm::ThreadPool* threads = nullptr;  // intra-op parallelism (none: one thread)
  int num_threads = 1;
  Tensor empty(DType dtype, const Shape& shape) const { return Tensor::empty(dtype, shape, pool); }
  // fn(begin, end) over chunks of [0, n) of at least `grain`, on the session's threads.
  template <typename Fn>
  void parallel_for(int64_t n, int64_t grain, const Fn& fn) const {
    if (threads) {
      threads->parallel_for(n, grain, fn);
    } else if (n > 0) {
      fn(int64_t(0), n);
    }
  }
};

struct OpDef;

// The bound arguments of one call: one slot per non-variadic parameter in signature
// order, then the variadic values. Accessors throw vm::Error naming the parameter.
class Args {
 public:
  Args(const OpDef& op, const Value* const* slots, int count) : op_(op), slots_(slots), count_(count) {}

  const OpDef& op() const { return op_; }
  const Value& operator[](int i) const { return *slots_[i]; }
  const Tensor& tensor(int i) const;
  const Tensor* opt_tensor(int i) const;  // nullptr for None
  int64_t i64(int i) const;
  double f64(int i) const;
  bool flag(int i) const;
  const std::string& str(int i) const;
  Ints ints(int i) const;
  bool is_none(int i) const { return slots_[i]->is_none(); }
  template <typename T>
  T& object(int i) const {
    const Value& v = *slots_[i];
    if (v.is_object())
      if (auto* p = dynamic_cast<T*>(v.as_object().get())) return *p;
    vm::fail("{} must be a {}, got {}", param_label(i), T::kTypeName, v.describe());  // labelled only on failure
  }

  int variadic_count() const;
  const Value& variadic(int k) const;

  std::string param_label(int i) const;  // "argument 'x'"

 private:
  const OpDef& op_;
  const Value* const* slots_;
  int count_;
};

using Kernel = void (*)(OpContext& ctx, const Args& args, Value* outs);
// A kernel with state (an app's accelerator handle, a Python callable). Built-in ops
// use plain Kernels; a KernelFunction costs one more indirect call per instruction.
using KernelFunction = std::function<void(OpContext& ctx, const Args& args, Value* outs)>;

// How the tracer types an op's "Any" outputs from the types of its arguments (the VM
// itself checks values at run time). An op with an "Any" output must name a rule other
// than Declared; an op without one keeps Declared.
enum class ResultRule {
  Declared,  // the outputs are the declared types
  Promote,   // a tensor argument gives Tensor; scalars give float if any is a float, else int
  Bool,      // a tensor argument gives Tensor; scalars give bool (comparisons, logic)
  Float,     // a tensor argument gives Tensor; scalars give float (true division)
  Scalar,    // a scalar whose kind follows a tensor's dtype: unknown while tracing (item)
  FirstArg,  // the type of the first argument (if_none)
};
std::string_view result_rule_name(ResultRule r);  // "declared", "promote", "bool", ...

struct OpDef {
  std::string name;
  std::string group;                 // section in docs/ops.md
  std::vector<Param> params;
  std::vector<std::string> outputs;  // output types: "Tensor", "int", "bool", "same" (as the first argument), "Any", "KVCache", ...
  std::string doc;
  Kernel kernel = nullptr;
  // Set for a kernel with state; `kernel` then points at a trampoline that calls it
  // through Args::op(), so the interpreter's call stays one plain function pointer.
  KernelFunction function;
  bool builtin = false;  // one of the runtime's own ops (docs/ops.md lists only these)
  ResultRule result = ResultRule::Declared;
  // The op exists to fail on bad input (check, option_index): a pass must keep it even
  // when its result is unused, or the error would vanish.
  bool raises = false;

  int num_fixed() const;        // non-variadic params
  int variadic_index() const;   // index of the variadic param in `params`, or -1
  // The param that fills argument slot `slot` of a bound call (ops::bind): the fixed
  // params in order, then the variadic one for every slot past them.
  int slot_param(size_t slot) const;
  std::string signature() const;  // "linear(x: Tensor, weight: Tensor, bias: Tensor? = None) -> Tensor"
};

// An op file's op before it is registered: made only by TENSORVM_OP (ops/select.h), so
// that a selective build can leave the op out without referencing its kernel.
struct OpEntry {
  const char* name;
  Kernel kernel;  // null when left out
  bool selected;
};

// How one call's written arguments fill the slots: for each slot the index of a
// positional argument, or of a keyword argument, or the parameter's default.
struct Binding {
  struct Source {
    enum class From { Positional, Keyword, Default } from;
    int index;  // into the positional or keyword list, or the param index for defaults
  };
  std::vector<Source> slots;  // non-variadic slots, then variadic ones
};

// Throws vm::Error (without location; callers add it) on a positional overflow,
// an unknown or repeated keyword, or a missing required argument.
Binding bind(const OpDef& op, int num_positional, const std::vector<std::string>& keywords);

// Whether `v` is acceptable for a slot of kind `k` (exact check used on literals).
bool kind_accepts(Kind k, const Value& v);

// Every op by name: the built-in ones, then any an app registers (vm/custom_ops.h is
// the public face of register_op / replace_kernel). An OpDef, once published, never
// changes and never moves: a loaded program keeps pointers to the ones it bound, so
// re-registering or replacing a kernel publishes a new OpDef under the name and keeps
// the old one alive (programs loaded before keep running what they bound). find,
// all, register_op and replace_kernel are safe to call from several threads.
class Registry {
 public:
  static const Registry& get();
  const OpDef* find(std::string_view name) const;  // the current OpDef of `name`, or nullptr
  std::vector<const OpDef*> all() const;           // current OpDefs, sorted by group then name

  // Builder used by the register_* functions of each op file (while the registry is
  // built). The entry comes from TENSORVM_OP (ops/select.h); an op a selective build
  // leaves out gets a scratch OpDef that is never published.
  OpDef& add(OpEntry entry, std::string group);
  // The same with the op's signature, doc and result rule: the one way an op file
  // declares an op. A rarer fact (raises) is set on the returned OpDef.
  OpDef& add(OpEntry entry, std::string group, std::vector<Param> params, std::vector<std::string> outputs,
             std::string doc, ResultRule result = ResultRule::Declared);

  // Checks `def` (a name the IR can call, a kernel, one output or more, distinct
  // parameter names, at most one variadic, a result rule exactly when an output is
  // "Any") and publishes it. An existing name is an error unless `replace`. Throws
  // vm::Error.
  static const OpDef& register_op(OpDef def, bool replace);
  // Publishes a copy of op `name` with `kernel`; returns the kernel it had (a plain
  // Kernel comes back wrapped, and is unwrapped again when passed back). Throws vm::Error.
  static KernelFunction replace_kernel(std::string_view name, KernelFunction kernel);

 private:
  Registry() = default;
  static Registry& instance();
  static void set_kernel(OpDef& def, KernelFunction kernel);
  const OpDef& publish(OpDef def, bool replace);
  OpDef* find_locked(std::string_view name) const;

  mutable std::mutex mu_;
  std::deque<OpDef> store_;      // every OpDef ever published; a deque never moves them
  OpDef left_out_;               // filled in and dropped for each op a selective build leaves out
  std::vector<OpDef*> current_;  // the one in use per name
};

// Helpers for concise signatures in the op files.
Param p_tensor(std::string name);
Param p_opt_tensor(std::string name);  // defaults to None
Param p_scalar_or_tensor(std::string name);
Param p_int(std::string name);
Param p_int(std::string name, int64_t dflt);
Param p_opt_int(std::string name);     // defaults to None
Param p_float(std::string name);
Param p_float(std::string name, double dflt);
Param p_bool(std::string name, bool dflt);
Param p_str(std::string name);
Param p_str(std::string name, std::string dflt);
Param p_ints(std::string name);
Param p_opt_ints(std::string name);    // defaults to None
Param p_object(std::string name);
Param p_any(std::string name);
Param p_opt_any(std::string name);    // anything, defaults to None
Param p_strided(Param p);             // p, for a kernel that reads non-contiguous views itself

// Runs one op eagerly: binds, makes non-view arguments contiguous, calls the
// kernel. Errors are prefixed with the op name. Used by the Python eager mode and tests.
std::vector<Value> call(const OpDef& op, const std::vector<Value>& positional,
                        const std::vector<std::pair<std::string, Value>>& keywords, OpContext& ctx);

}  // namespace ops
