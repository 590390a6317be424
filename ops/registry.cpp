#include "ops/registry.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "ir/names.h"

namespace ops {

// Each op file registers its ops here; called once, explicitly, so that no op
// silently disappears when a static library drops an unreferenced object file.
void register_elementwise_ops(Registry& r);
void register_reduce_ops(Registry& r);
void register_creation_ops(Registry& r);
void register_linalg_ops(Registry& r);
void register_nn_ops(Registry& r);
void register_conv_ops(Registry& r);
void register_audio_ops(Registry& r);
void register_rotary_ops(Registry& r);
void register_attention_ops(Registry& r);
void register_shape_ops(Registry& r);
void register_index_ops(Registry& r);
void register_object_ops(Registry& r);
void register_quantized_ops(Registry& r);
void register_w8a8_ops(Registry& r);
void register_int4_ops(Registry& r);
void register_generation_ops(Registry& r);

// An "Any" output needs a rule to be typed by; a rule on an op without one would be
// a fact nobody reads.
static void check_result_rule(const OpDef& op) {
  const bool any = std::find(op.outputs.begin(), op.outputs.end(), "Any") != op.outputs.end();
  if (any && op.result == ResultRule::Declared)
    vm::fail("op '{}' has an Any output but no result rule (OpDef::result)", op.name);
  if (!any && op.result != ResultRule::Declared)
    vm::fail("op '{}' has result rule '{}' but no Any output", op.name, result_rule_name(op.result));
}

Registry& Registry::instance() {
  static Registry* registry = [] {
    auto* r = new Registry();  // never destroyed: loaded programs point into it until exit
    register_elementwise_ops(*r);
    register_reduce_ops(*r);
    register_creation_ops(*r);
    register_linalg_ops(*r);
    register_nn_ops(*r);
    register_conv_ops(*r);
    register_audio_ops(*r);
    register_rotary_ops(*r);
    register_attention_ops(*r);
    register_shape_ops(*r);
    register_index_ops(*r);
    register_object_ops(*r);
    register_quantized_ops(*r);
    register_w8a8_ops(*r);
    register_int4_ops(*r);
    register_generation_ops(*r);
    for (size_t i = 1; i < r->store_.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (r->store_[i].name == r->store_[j].name) throw vm::Error("op registered twice: " + r->store_[i].name);
    for (OpDef& op : r->store_) {
      check_result_rule(op);
      op.builtin = true;
      r->current_.push_back(&op);
    }
    return r;
  }();
  return *registry;
}

const Registry& Registry::get() { return instance(); }

OpDef& Registry::add(OpEntry entry, std::string group) {
  if (!entry.selected) {
    left_out_ = OpDef();
    return left_out_;
  }
  if (!entry.kernel) throw vm::Error(fmt::format("op '{}' has no kernel", entry.name));
  store_.emplace_back();
  store_.back().name = entry.name;
  store_.back().group = std::move(group);
  store_.back().kernel = entry.kernel;
  return store_.back();
}

OpDef& Registry::add(OpEntry entry, std::string group, std::vector<Param> params, std::vector<std::string> outputs,
                     std::string doc, ResultRule result) {
  OpDef& op = add(entry, std::move(group));
  op.params = std::move(params);
  op.outputs = std::move(outputs);
  op.doc = std::move(doc);
  op.result = result;
  return op;
}

OpDef* Registry::find_locked(std::string_view name) const {
  for (OpDef* op : current_)
    if (op->name == name) return op;
  return nullptr;
}

const OpDef* Registry::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return find_locked(name);
}

std::vector<const OpDef*> Registry::all() const {
  std::vector<const OpDef*> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.assign(current_.begin(), current_.end());
  }
  std::sort(out.begin(), out.end(), [](const OpDef* a, const OpDef* b) {
    return std::tie(a->group, a->name) < std::tie(b->group, b->name);
  });
  return out;
}

// The kernel of every op registered with state: the OpDef the call was bound to
// carries the callable.
static void call_kernel_function(OpContext& ctx, const Args& args, Value* outs) { args.op().function(ctx, args, outs); }

void Registry::set_kernel(OpDef& def, KernelFunction kernel) {
  if (!kernel) vm::fail("op '{}' needs a kernel", def.name);
  if (const Kernel* plain = kernel.target<void (*)(OpContext&, const Args&, Value*)>()) {
    if (!*plain) vm::fail("op '{}' needs a kernel (got a null function pointer)", def.name);
    def.kernel = *plain;  // a plain function stays a direct call
    def.function = nullptr;
  } else {
    def.kernel = &call_kernel_function;
    def.function = std::move(kernel);
  }
}

static bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

const OpDef& Registry::register_op(OpDef def, bool replace) {
  const std::string& n = def.name;
  if (!is_identifier(n) || ir::is_python_keyword(n) || ir::is_dunder(n))
    vm::fail("register_op: '{}' is not a name the IR can call (letters, digits and _, not a keyword)", n);
  if (ir::is_builtin_callee(n) || ir::is_reserved_name(n) || ir::is_value_type(n))
    vm::fail("register_op: '{}' is a name the IR reserves", n);
  if (def.outputs.empty()) vm::fail("register_op: op '{}' must declare at least one output type", n);
  for (const std::string& o : def.outputs)
    if (o.empty()) vm::fail("register_op: op '{}' has an empty output type", n);
  int variadic = 0;
  for (size_t i = 0; i < def.params.size(); ++i) {
    const Param& p = def.params[i];
    if (!is_identifier(p.name) || ir::is_python_keyword(p.name))
      vm::fail("register_op: op '{}': parameter name '{}' is not an identifier", n, p.name);
    variadic += p.variadic;
    for (size_t j = 0; j < i; ++j)
      if (def.params[j].name == p.name) vm::fail("register_op: op '{}' has two parameters named '{}'", n, p.name);
    if (p.has_default && !kind_accepts(p.kind, p.default_value))
      vm::fail("register_op: op '{}': the default of '{}' is not a {}", n, p.name, kind_name(p.kind));
  }
  if (variadic > 1) vm::fail("register_op: op '{}' has more than one variadic parameter", n);
  check_result_rule(def);
  if (def.group.empty()) def.group = "custom";
  def.builtin = false;
  if (def.kernel && !def.function) {
    def.function = def.kernel;  // set_kernel unwraps it again
    def.kernel = nullptr;
  }
  KernelFunction k = std::move(def.function);
  def.kernel = nullptr;
  set_kernel(def, std::move(k));
  return instance().publish(std::move(def), replace);
}

const OpDef& Registry::publish(OpDef def, bool replace) {
  std::lock_guard<std::mutex> lock(mu_);
  OpDef* existing = find_locked(def.name);
  if (existing && !replace)
    vm::fail("register_op: op '{}' is already registered ({}); pass replace=true to replace it, or use "
             "replace_kernel to change only its kernel", def.name, existing->signature());
  store_.push_back(std::move(def));
  OpDef* added = &store_.back();
  if (existing) {
    *std::find(current_.begin(), current_.end(), existing) = added;
  } else {
    current_.push_back(added);
  }
  return *added;
}

KernelFunction Registry::replace_kernel(std::string_view name, KernelFunction kernel) {
  Registry& r = instance();
  OpDef copy;
  {
    std::lock_guard<std::mutex> lock(r.mu_);
    const OpDef* existing = r.find_locked(name);
    if (!existing) vm::fail("replace_kernel: no op named '{}'", name);
    copy = *existing;
  }
  KernelFunction previous = copy.function ? copy.function : KernelFunction(copy.kernel);
  set_kernel(copy, std::move(kernel));
  r.publish(std::move(copy), true);
  return previous;
}

std::optional<Kind> parse_kind(std::string_view name) {
  for (Kind k : {Kind::Tensor, Kind::OptTensor, Kind::TensorOrScalar, Kind::Int, Kind::OptInt, Kind::Float, Kind::Bool,
                 Kind::Str, Kind::Ints, Kind::OptInts, Kind::Object, Kind::Any})
    if (kind_name(k) == name) return k;
  return std::nullopt;
}

std::string_view result_rule_name(ResultRule r) {
  switch (r) {
    case ResultRule::Declared: return "declared";
    case ResultRule::Promote: return "promote";
    case ResultRule::Bool: return "bool";
    case ResultRule::Float: return "float";
    case ResultRule::Scalar: return "scalar";
    case ResultRule::FirstArg: return "first_arg";
  }
  return "?";
}

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::Tensor: return "Tensor";
    case Kind::OptTensor: return "Tensor?";
    case Kind::TensorOrScalar: return "Tensor|scalar";
    case Kind::Int: return "int";
    case Kind::OptInt: return "int?";
    case Kind::Float: return "float";
    case Kind::Bool: return "bool";
    case Kind::Str: return "str";
    case Kind::Ints: return "ints";
    case Kind::OptInts: return "ints?";
    case Kind::Object: return "Object";
    case Kind::Any: return "Any";
  }
  return "?";
}

bool kind_accepts(Kind k, const Value& v) {
  switch (k) {
    case Kind::Tensor: return v.is_tensor();
    case Kind::OptTensor: return v.is_tensor() || v.is_none();
    case Kind::TensorOrScalar: return v.is_tensor() || v.is_scalar();
    case Kind::Int: return v.is_int();
    case Kind::OptInt: return v.is_int() || v.is_none();
    case Kind::Float: return v.is_float() || v.is_int();
    case Kind::Bool: return v.is_bool();
    case Kind::Str: return v.is_str();
    case Kind::Ints: return v.is_ints() || v.is_int() || v.is_tuple();
    case Kind::OptInts: return v.is_ints() || v.is_int() || v.is_tuple() || v.is_none();
    case Kind::Object: return v.is_object();
    case Kind::Any: return true;
  }
  return false;
}

// ---------------------------------------------------------------- OpDef

int OpDef::variadic_index() const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].variadic) return int(i);
  return -1;
}

int OpDef::num_fixed() const { return int(params.size()) - (variadic_index() >= 0 ? 1 : 0); }

int OpDef::slot_param(size_t slot) const {
  const int vi = variadic_index();
  if (int(slot) >= num_fixed()) return vi;
  return vi >= 0 && int(slot) >= vi ? int(slot) + 1 : int(slot);
}

static std::string literal_text(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.as_int());
    case Value::Kind::Float: return fmt::format("{}", v.as_float());
    case Value::Kind::Str: return fmt::format("\"{}\"", v.as_str());
    case Value::Kind::Ints: {
      const Ints& is = v.as_ints_raw();
      return fmt::format("[{}]", fmt::join(is.begin(), is.end(), ", "));
    }
    default: return v.describe();
  }
}

std::string OpDef::signature() const {
  std::vector<std::string> ps;
  for (const Param& p : params) {
    std::string s = (p.variadic ? "*" : "") + p.name + ": " + std::string(kind_name(p.kind));
    if (p.has_default) s += " = " + literal_text(p.default_value);
    ps.push_back(s);
  }
  std::string outs = outputs.size() == 1 ? outputs[0] : fmt::format("({})", fmt::join(outputs, ", "));
  return fmt::format("{}({}) -> {}", name, fmt::join(ps, ", "), outs);
}

// ---------------------------------------------------------------- binding

Binding bind(const OpDef& op, int num_positional, const std::vector<std::string>& keywords) {
  const int vi = op.variadic_index();
  const int nfixed = op.num_fixed();
  // Positional args fill params in order up to the variadic one (which takes the rest).
  const int positional_params = vi >= 0 ? vi : int(op.params.size());
  std::vector<int> param_source(op.params.size(), -1);   // >=0 positional, <= -2 keyword
  if (vi < 0 && num_positional > positional_params)
    vm::fail("takes at most {} positional arguments, got {}", positional_params, num_positional);
  for (int i = 0; i < std::min(num_positional, positional_params); ++i) param_source[i] = i;
  for (size_t k = 0; k < keywords.size(); ++k) {
    int found = -1;
    for (size_t p = 0; p < op.params.size(); ++p)
      if (op.params[p].name == keywords[k] && !op.params[p].variadic) found = int(p);
    if (found < 0) vm::fail("unknown keyword argument '{}'", keywords[k]);
    if (param_source[found] != -1) vm::fail("argument '{}' given twice", keywords[k]);
    param_source[found] = -2 - int(k);
  }
  Binding b;
  b.slots.reserve(size_t(nfixed) + size_t(std::max(0, num_positional - positional_params)));
  for (size_t p = 0; p < op.params.size(); ++p) {
    if (int(p) == vi) continue;
    const int src = param_source[p];
    if (src >= 0) {
      b.slots.push_back({Binding::Source::From::Positional, src});
    } else if (src <= -2) {
      b.slots.push_back({Binding::Source::From::Keyword, -2 - src});
    } else if (op.params[p].has_default) {
      b.slots.push_back({Binding::Source::From::Default, int(p)});
    } else {
      vm::fail("missing required argument '{}'", op.params[p].name);
    }
  }
  if (vi >= 0) {
    for (int i = positional_params; i < num_positional; ++i) b.slots.push_back({Binding::Source::From::Positional, i});
  }
  return b;
}

// ---------------------------------------------------------------- Args

std::string Args::param_label(int i) const {
  const int vi = op_.variadic_index();
  if (i >= op_.num_fixed()) return fmt::format("argument '{}[{}]'", op_.params[vi].name, i - op_.num_fixed());
  const int p = (vi >= 0 && i >= vi) ? i + 1 : i;
  return fmt::format("argument '{}'", op_.params[p].name);
}

#define TVM_ARG(expr, what)                                                                      \
  const Value& v = *slots_[i];                                                                  \
  if (!(expr)) vm::fail("{} must be {}, got {}", param_label(i), what, v.describe());

const Tensor& Args::tensor(int i) const {
  TVM_ARG(v.is_tensor(), "a tensor");
  return v.tensor_unchecked();
}

const Tensor* Args::opt_tensor(int i) const {
  TVM_ARG(v.is_tensor() || v.is_none(), "a tensor or None");
  return v.is_none() ? nullptr : &v.tensor_unchecked();
}

int64_t Args::i64(int i) const {
  TVM_ARG(v.is_int(), "an int");
  return v.as_int();
}

double Args::f64(int i) const {
  TVM_ARG(v.is_float() || v.is_int(), "a float");
  return v.as_float();
}

bool Args::flag(int i) const {
  TVM_ARG(v.is_bool(), "a bool");
  return v.as_bool();
}

const std::string& Args::str(int i) const {
  TVM_ARG(v.is_str(), "a str");
  return v.as_str();
}

Ints Args::ints(int i) const {
  TVM_ARG(v.is_ints() || v.is_int() || v.is_tuple(), "an int list");
  return v.as_ints();
}

#undef TVM_ARG

int Args::variadic_count() const { return count_ - op_.num_fixed(); }

const Value& Args::variadic(int k) const { return *slots_[op_.num_fixed() + k]; }

// ---------------------------------------------------------------- param helpers

static Param make(std::string name, Kind k) {
  Param p;
  p.name = std::move(name);
  p.kind = k;
  return p;
}
static Param with_default(Param p, Value v) {
  p.has_default = true;
  p.default_value = std::move(v);
  return p;
}

Param p_tensor(std::string n) { return make(std::move(n), Kind::Tensor); }
Param p_opt_tensor(std::string n) { return with_default(make(std::move(n), Kind::OptTensor), Value::none()); }
Param p_scalar_or_tensor(std::string n) { return make(std::move(n), Kind::TensorOrScalar); }
Param p_int(std::string n) { return make(std::move(n), Kind::Int); }
Param p_int(std::string n, int64_t d) { return with_default(make(std::move(n), Kind::Int), Value::from_int(d)); }
Param p_opt_int(std::string n) { return with_default(make(std::move(n), Kind::OptInt), Value::none()); }
Param p_float(std::string n) { return make(std::move(n), Kind::Float); }
Param p_float(std::string n, double d) { return with_default(make(std::move(n), Kind::Float), Value::from_float(d)); }
Param p_bool(std::string n, bool d) { return with_default(make(std::move(n), Kind::Bool), Value::from_bool(d)); }
Param p_str(std::string n) { return make(std::move(n), Kind::Str); }
Param p_str(std::string n, std::string d) { return with_default(make(std::move(n), Kind::Str), Value::from_str(std::move(d))); }
Param p_ints(std::string n) { return make(std::move(n), Kind::Ints); }
Param p_opt_ints(std::string n) { return with_default(make(std::move(n), Kind::OptInts), Value::none()); }
Param p_object(std::string n) { return make(std::move(n), Kind::Object); }
Param p_any(std::string n) { return make(std::move(n), Kind::Any); }
Param p_opt_any(std::string n) { return with_default(make(std::move(n), Kind::Any), Value::none()); }
Param p_strided(Param p) {
  p.strided_ok = true;
  return p;
}

// ---------------------------------------------------------------- eager call

std::vector<Value> call(const OpDef& op, const std::vector<Value>& positional,
                        const std::vector<std::pair<std::string, Value>>& keywords, OpContext& ctx) {
  try {
    std::vector<std::string> kw_names;
    for (const auto& kw : keywords) kw_names.push_back(kw.first);
    Binding b = ops::bind(op, int(positional.size()), kw_names);
    std::vector<Value> owned(b.slots.size());  // contiguous copies where needed
    std::vector<const Value*> slots(b.slots.size());
    for (size_t s = 0; s < b.slots.size(); ++s) {
      const auto& src = b.slots[s];
      const Value* v = src.from == Binding::Source::From::Positional ? &positional[size_t(src.index)]
                       : src.from == Binding::Source::From::Keyword  ? &keywords[size_t(src.index)].second
                                                                     : &op.params[size_t(src.index)].default_value;
      const int p = op.slot_param(s);
      if (v->is_tensor() && !op.params[size_t(p)].strided_ok && !v->tensor_unchecked().is_contiguous()) {
        owned[s] = Value(v->tensor_unchecked().contiguous(ctx.pool));
        v = &owned[s];
      }
      slots[s] = v;
    }
    std::vector<Value> outs(op.outputs.size());
    op.kernel(ctx, Args(op, slots.data(), int(slots.size())), outs.data());
    return outs;
  } catch (const vm::Error& e) {
    throw vm::Error(fmt::format("{}: {}", op.name, e.what()));
  }
}

}  // namespace ops
