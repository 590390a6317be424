// IR text -> Program: binds every call once (op kernel, program function, control
// flow builtin or weight), turns names into register numbers, folds literals and
// weights into constants, and computes each register's last use.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include <sys/stat.h>

#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/names.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "io/regular_file.h"
#include "io/safetensors.h"
#include "ops/select.h"
#include "vm/program.h"
#include "vm/weights.h"

namespace vm {

namespace {

// The caps on a program directory's text files: far above any real program (a large
// model's program.py is a few MB), low enough that a huge file is an error, not a
// minutes-long read and parse.
constexpr uint64_t kMaxProgramTextBytes = uint64_t(1) << 30;
constexpr uint64_t kMaxMetaBytes = uint64_t(64) << 20;

std::string read_file(const std::string& path, uint64_t max_bytes, std::string_view what) {
  try {
    return io::read_regular_file(path, max_bytes, what);
  } catch (const io::FileError& e) {
    throw Error(e.what());
  }
}

// Exists at all (a regular file or not: read_file and the weights reader refuse the rest).
bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// meta.json is optional for the C++ loader, but when present it must be the one the
// exporter writes: a JSON object of format "tensorvm-ir" and a version this runtime knows.
void check_meta(const std::string& path, const std::string& text) {
  constexpr int kVersion = 1;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) fail("{}: not valid JSON", path);
  if (!j.is_object()) fail("{}: not a JSON object", path);
  const auto fmt_it = j.find("format");
  if (fmt_it == j.end() || *fmt_it != "tensorvm-ir")
    fail("{}: not a tensorvm program (format is {})", path, fmt_it == j.end() ? "missing" : fmt_it->dump());
  const auto ver = j.find("version");
  if (ver == j.end() || !ver->is_number_integer() || *ver != kVersion)
    fail("{}: unsupported program version {} (this runtime reads version {})", path, ver == j.end() ? "(missing)" : ver->dump(),
         kVersion);
}

bool env_copy_weights() {
  const char* v = std::getenv("TENSORVM_COPY_WEIGHTS");
  return v && *v && std::string(v) != "0";
}

}  // namespace

class Loader {
 public:
  Loader(Program& p, const ir::Module& m) : p_(p), m_(m) {}

  void load() {
    for (size_t i = 0; i < m_.functions.size(); ++i) {
      const std::string& name = m_.functions[i].name;
      if (ops::Registry::get().find(name) || is_builtin(name))
        fail_at(m_.functions[i].line, "function '{}' has the name of an op; rename it", name);
      fn_index_[name] = uint32_t(i);
    }
    // Signatures first: a function may call one defined further down the file.
    p_.functions_.resize(m_.functions.size());
    for (size_t i = 0; i < m_.functions.size(); ++i) {
      const ir::Function& f = m_.functions[i];
      Function& fn = p_.functions_[i];
      fn.name = f.name;
      fn.line = f.line;
      fn.return_types = f.return_types;
      fn.returns_tuple = f.returns_tuple;
      for (const auto& prm : f.params) {
        fn.param_names.push_back(prm.name);
        fn.param_types.push_back(prm.type);
      }
    }
    for (size_t i = 0; i < m_.functions.size(); ++i) load_function(m_.functions[i], p_.functions_[i]);
    compute_stack_needs();
  }

 private:
  static bool is_builtin(const std::string& n) { return ir::is_builtin_callee(n); }

  template <typename... A>
  [[noreturn]] void fail_at(int line, fmt::format_string<A...> f, A&&... a) {
    throw Error(fmt::format("{}:{}: {}", p_.filename_, line, fmt::format(f, std::forward<A>(a)...)));
  }

  struct Scope {
    std::unordered_map<std::string, Operand> names;
  };

  Operand constant(Function& fn, Value v) {
    // Equal scalar literals share one slot (a 100k-line program need not hold 100k ones).
    if (v.is_int() || v.is_bool() || v.is_none() || v.is_float()) {
      int64_t bits = 0;
      if (v.is_int()) bits = v.as_int();
      if (v.is_bool()) bits = v.as_bool();
      if (v.is_float()) {
        double d = v.as_float();
        std::memcpy(&bits, &d, sizeof bits);
      }
      auto key = std::make_pair(int(v.kind()), bits);
      auto it = scalar_consts_.find(key);
      if (it != scalar_consts_.end()) return Operand{Operand::From::Const, it->second};
      scalar_consts_[key] = uint32_t(fn.consts.size());
    }
    fn.consts.push_back(std::move(v));
    fn.const_weights.emplace_back();
    return Operand{Operand::From::Const, uint32_t(fn.consts.size() - 1)};
  }

  // A weight as a constant, named. Unbound (Program::resolve), a placeholder tensor:
  // the load-time checks of a tensor argument pass as they would with the weight.
  Operand weight_constant(Function& fn, const std::string& name, int line) {
    const Operand o = constant(fn, bind_weights ? lookup_weight(name, line) : Value(Tensor::empty(DType::f32, {})));
    fn.const_weights[o.index] = name;
    return o;
  }

  uint32_t new_reg(Function& fn, const std::string& name) {
    fn.reg_names.push_back(name);
    return fn.num_regs++;
  }

  Operand operand(Function& fn, Scope& scope, const ir::Expr& e, int line) {
    if (auto* n = std::get_if<ir::Name>(&e)) {
      auto it = scope.names.find(n->id);
      if (it != scope.names.end()) return it->second;
      if (fn_index_.count(n->id)) fail_at(line, "function '{}' can only be passed to while_loop or cond", n->id);
      fail_at(line, "unknown name '{}'", n->id);
    }
    if (std::holds_alternative<ir::NoneLit>(e)) return constant(fn, Value::none());
    if (auto* b = std::get_if<bool>(&e)) return constant(fn, Value::from_bool(*b));
    if (auto* i = std::get_if<int64_t>(&e)) return constant(fn, Value::from_int(*i));
    if (auto* d = std::get_if<double>(&e)) return constant(fn, Value::from_float(*d));
    if (auto* s = std::get_if<std::string>(&e)) return constant(fn, Value::from_str(*s));
    const auto& list = std::get<ir::List>(e);
    bool all_literal = true;
    for (const auto& item : list.items) all_literal = all_literal && !item.is_name;
    if (all_literal) {
      Ints is;
      for (const auto& item : list.items) is.push_back(item.value);
      return constant(fn, Value::from_ints(is));
    }
    ListOperand lo;
    for (const auto& item : list.items) {
      if (!item.is_name) {
        lo.items.push_back(constant(fn, Value::from_int(item.value)));
        continue;
      }
      auto it = scope.names.find(item.name);
      if (it == scope.names.end()) fail_at(line, "unknown name '{}'", item.name);
      lo.items.push_back(it->second);
    }
    fn.lists.push_back(std::move(lo));
    return Operand{Operand::From::List, uint32_t(fn.lists.size() - 1)};
  }

  const Function& callee_signature(const std::string& name, int line) {
    auto it = fn_index_.find(name);
    if (it == fn_index_.end()) fail_at(line, "'{}' is not a function of this program", name);
    return p_.functions_[it->second];
  }

  uint32_t fn_arg(const ir::Stmt& s, size_t i, const char* what) {
    if (i >= s.args.size()) fail_at(s.line, "{} needs a {} function", s.callee, what);
    const auto* n = std::get_if<ir::Name>(&s.args[i].value);
    if (!n || !fn_index_.count(n->id)) fail_at(s.line, "{}: the {} argument must name a function of the program", s.callee, what);
    return fn_index_[n->id];
  }

  void bind_targets(Function& fn, Scope& scope, const ir::Stmt& s, Instr& ins, size_t num_results) {
    if (s.targets.size() == num_results) {
    } else if (s.targets.size() == 1 && num_results > 1 && !s.trailing_comma) {
      ins.pack_tuple = true;
    } else {
      fail_at(s.line, "{} returns {} value{}, but {} name{} bound", s.callee, num_results, num_results == 1 ? "" : "s",
              s.targets.size(), s.targets.size() == 1 ? " is" : "s are");
    }
    for (const std::string& t : s.targets) {
      uint32_t r = new_reg(fn, t);
      scope.names[t] = Operand{Operand::From::Reg, r};
      ins.outs.push_back(r);
    }
  }

  void load_param(Function& fn, Scope& scope, const ir::Stmt& s) {
    // param(name) or param(template, index): the weight, resolved now.
    std::vector<const ir::Expr*> a(2, nullptr);
    size_t npos = 0;
    for (const auto& arg : s.args) {
      if (arg.keyword.empty()) {
        if (npos >= 2) fail_at(s.line, "param takes a name and an optional index");
        a[npos++] = &arg.value;
      } else if (arg.keyword == "name" || arg.keyword == "index") {
        a[arg.keyword == "name" ? 0 : 1] = &arg.value;
      } else {
        fail_at(s.line, "param: unknown keyword argument '{}'", arg.keyword);
      }
    }
    const auto* name = a[0] ? std::get_if<std::string>(a[0]) : nullptr;
    if (!name) fail_at(s.line, "param: the weight name must be a string literal");
    if (s.targets.size() != 1) fail_at(s.line, "param returns one tensor");
    const bool has_index = a[1] && !std::holds_alternative<ir::NoneLit>(*a[1]);
    const auto hole = name->find("{}");
    if (has_index && hole == std::string::npos) fail_at(s.line, "param: an index needs a name template with '{{}}'");
    if (!has_index || std::holds_alternative<int64_t>(*a[1])) {
      std::string full = *name;
      if (has_index) full.replace(hole, 2, std::to_string(std::get<int64_t>(*a[1])));
      scope.names[s.targets[0]] = weight_constant(fn, full, s.line);
      return;
    }
    const auto* index_name = std::get_if<ir::Name>(a[1]);
    if (!index_name) fail_at(s.line, "param: the index must be an int or a name");
    Instr ins;
    ins.kind = Instr::Kind::ParamIndexed;
    ins.callee = "param";
    ins.table_template = *name;
    ins.args.push_back(operand(fn, scope, *a[1], s.line));
    if (weights_) {
      for (const auto& [i, e] : indexed_weights(*weights_, *name)) {
        if (ins.table.size() <= i) ins.table.resize(i + 1);
        ins.table[i] = weight_value(*e);
      }
    }
    if (ins.table.empty() && bind_weights) fail_at(s.line, "param: no weight matches '{}'", *name);
    bind_targets(fn, scope, s, ins, 1);
    add(fn, s, std::move(ins));
  }

  Value weight_value(const io::TensorEntry& e) {
    auto it = weight_cache_.find(e.name);
    if (it != weight_cache_.end()) return it->second;
    Value v = weight_tensor(e, weights_);
    p_.weight_bytes_ += e.nbytes;
    weight_cache_[e.name] = v;
    return v;
  }

  Value lookup_weight(const std::string& name, int line) {
    const io::TensorEntry* e = weights_ ? weights_->find(name) : nullptr;
    if (!e) fail_at(line, "param: no weight named '{}' in {}", name, weights_ ? weights_->path() : "(no weights file)");
    return weight_value(*e);
  }

  void add(Function& fn, const ir::Stmt& s, Instr ins) {
    ins.line = s.line;
    ins.text = ir::print_stmt(s);
    if (ins.callee.empty()) ins.callee = s.callee;
    fn.code.push_back(std::move(ins));
  }

  void load_call(Function& fn, Scope& scope, const ir::Stmt& s) {
    Instr ins;
    const std::string& c = s.callee;
    if (c == "while_loop" || c == "cond") {
      for (const auto& arg : s.args)
        if (!arg.keyword.empty()) fail_at(s.line, "{} takes positional arguments only", c);
      const bool loop = c == "while_loop";
      ins.kind = loop ? Instr::Kind::WhileLoop : Instr::Kind::Cond;
      const size_t first = loop ? 2 : 3;
      if (!loop) {
        if (s.args.empty()) fail_at(s.line, "cond needs a predicate");
        ins.args.push_back(operand(fn, scope, s.args[0].value, s.line));
      }
      ins.fn_a = fn_arg(s, loop ? 0 : 1, loop ? "condition" : "then");
      ins.fn_b = fn_arg(s, loop ? 1 : 2, loop ? "body" : "else");
      for (size_t i = first; i < s.args.size(); ++i) ins.args.push_back(operand(fn, scope, s.args[i].value, s.line));
      const size_t n = s.args.size() - first;
      const Function& a = p_.functions_[ins.fn_a];
      const Function& b = p_.functions_[ins.fn_b];
      if (a.param_names.size() != n || b.param_names.size() != n)
        fail_at(s.line, "{}: '{}' and '{}' must each take the {} value{} passed", c, a.name, b.name, n, n == 1 ? "" : "s");
      if (loop) {
        if (a.num_returns() != 1) fail_at(s.line, "while_loop: condition '{}' must return one bool", a.name);
        if (b.num_returns() != n) fail_at(s.line, "while_loop: body '{}' must return the {} carried value{}", b.name, n, n == 1 ? "" : "s");
      } else if (a.num_returns() != b.num_returns()) {
        fail_at(s.line, "cond: '{}' and '{}' return different numbers of values", a.name, b.name);
      }
      bind_targets(fn, scope, s, ins, loop ? n : a.num_returns());
      add(fn, s, std::move(ins));
      return;
    }
    if (c == "emit") {
      // emit(channel, value) -> bool: hands `value` to the host (Session::set_on_emit).
      if (s.args.size() != 2 || !s.args[0].keyword.empty() || !s.args[1].keyword.empty())
        fail_at(s.line, "emit takes two positional arguments: emit(channel, value)");
      if (!std::holds_alternative<std::string>(s.args[0].value))
        fail_at(s.line, "emit: the channel must be a string literal");
      ins.kind = Instr::Kind::Emit;
      ins.args.push_back(operand(fn, scope, s.args[0].value, s.line));
      ins.args.push_back(operand(fn, scope, s.args[1].value, s.line));
      bind_targets(fn, scope, s, ins, 1);
      add(fn, s, std::move(ins));
      return;
    }
    if (fn_index_.count(c)) {
      const Function& g = callee_signature(c, s.line);
      ins.kind = Instr::Kind::Call;
      ins.fn_a = fn_index_[c];
      std::vector<int> src(g.param_names.size(), -1);
      size_t npos = 0;
      for (size_t i = 0; i < s.args.size(); ++i) {
        size_t slot;
        if (s.args[i].keyword.empty()) {
          slot = npos++;
          if (slot >= src.size()) fail_at(s.line, "'{}' takes {} arguments, got more", c, src.size());
        } else {
          auto it = std::find(g.param_names.begin(), g.param_names.end(), s.args[i].keyword);
          if (it == g.param_names.end()) fail_at(s.line, "'{}' has no parameter '{}'", c, s.args[i].keyword);
          slot = size_t(it - g.param_names.begin());
          if (src[slot] >= 0) fail_at(s.line, "argument '{}' of '{}' given twice", s.args[i].keyword, c);
        }
        src[slot] = int(i);
      }
      for (size_t p = 0; p < src.size(); ++p) {
        if (src[p] < 0) fail_at(s.line, "'{}' is missing argument '{}'", c, g.param_names[p]);
        ins.args.push_back(operand(fn, scope, s.args[size_t(src[p])].value, s.line));
      }
      bind_targets(fn, scope, s, ins, g.num_returns());
      add(fn, s, std::move(ins));
      return;
    }
    const ops::OpDef* op = ops::Registry::get().find(c);
    if (!op && ops::kSelectiveBuild)
      fail_at(s.line, "op '{}' is not in this runtime: it is a selective build with only the ops of the programs it "
              "was built for (tensorvm selective-build); rebuild it with this program among them, or register the "
              "op with vm::register_op before loading", c);
    if (!op)
      fail_at(s.line, "unknown op or function '{}' (an app's own op must be registered with vm::register_op, "
              "or tensorvm.register_op in Python, before the program is loaded)", c);
    ins.kind = Instr::Kind::Kernel;
    ins.op = op;
    ins.kernel = op->kernel;
    std::vector<const ir::Arg*> positional;
    std::vector<std::string> keywords;
    std::vector<const ir::Arg*> keyword_args;
    for (const auto& arg : s.args) {
      if (arg.keyword.empty()) {
        positional.push_back(&arg);
      } else {
        keywords.push_back(arg.keyword);
        keyword_args.push_back(&arg);
      }
    }
    ops::Binding b;
    try {
      b = ops::bind(*op, int(positional.size()), keywords);
    } catch (const Error& e) {
      fail_at(s.line, "{}: {}", c, e.what());
    }
    for (size_t slot = 0; slot < b.slots.size(); ++slot) {
      const auto& src = b.slots[slot];
      const ops::Param& param = op->params[size_t(op->slot_param(slot))];
      Operand o;
      if (src.from == ops::Binding::Source::From::Default) {
        o = constant(fn, param.default_value);
      } else {
        const ir::Arg* arg = src.from == ops::Binding::Source::From::Positional ? positional[size_t(src.index)]
                                                                                : keyword_args[size_t(src.index)];
        o = operand(fn, scope, arg->value, s.line);
        if (o.from == Operand::From::Const && !ops::kind_accepts(param.kind, fn.consts[o.index]))
          fail_at(s.line, "{}: argument '{}' must be {}, got {}", c, param.name, ops::kind_name(param.kind),
                  fn.consts[o.index].describe());
      }
      ins.args.push_back(o);
      ins.contiguous.push_back(param.strided_ok ? 0 : 1);
    }
    bind_targets(fn, scope, s, ins, op->outputs.size());
    add(fn, s, std::move(ins));
  }

  void load_function(const ir::Function& f, Function& fn) {
    scalar_consts_.clear();
    Scope scope;
    for (const auto& prm : f.params) scope.names[prm.name] = Operand{Operand::From::Reg, new_reg(fn, prm.name)};
    bool returned = false;
    for (const ir::Stmt& s : f.body) {
      if (returned) fail_at(s.line, "statement after return in '{}'", f.name);
      if (s.kind == ir::Stmt::Kind::Return) {
        if (s.returns.size() != fn.num_returns())
          fail_at(s.line, "'{}' is declared to return {} value{}, this returns {}", f.name, fn.num_returns(),
                  fn.num_returns() == 1 ? "" : "s", s.returns.size());
        Instr ins;
        ins.kind = Instr::Kind::Return;
        ins.callee = "return";
        for (const auto& e : s.returns) ins.args.push_back(operand(fn, scope, e, s.line));
        add(fn, s, std::move(ins));
        returned = true;
      } else if (s.callee == "param") {
        load_param(fn, scope, s);
      } else {
        load_call(fn, scope, s);
      }
    }
    if (!returned) {
      if (fn.num_returns() != 0) fail_at(f.line, "'{}' has no return statement", f.name);
      Instr ins;
      ins.kind = Instr::Kind::Return;
      ins.callee = "return";
      ins.line = f.body.empty() ? f.line : f.body.back().line;
      ins.text = "return";
      fn.code.push_back(std::move(ins));
    }
    compute_last_uses(fn);
    pack(fn);
  }

  void pack(Function& fn) {
    for (const Instr& ins : fn.code) {
      // PackedInstr keeps its counts in 16 bits; a larger count is refused rather than
      // truncated (which would silently drop values).
      const size_t most = std::max({ins.args.size(), ins.outs.size(), ins.frees.size()});
      if (most > kMaxOperands)
        fail_at(ins.line, "{}: {} {} in one statement, more than the limit of {}", ins.callee, most,
                most == ins.args.size() ? "arguments" : most == ins.outs.size() ? "results" : "values dying", kMaxOperands);
      PackedInstr pi;
      pi.kind = ins.kind;
      pi.pack_tuple = ins.pack_tuple;
      pi.kernel = ins.kernel;
      pi.op = ins.op;
      pi.fn_a = ins.fn_a;
      pi.fn_b = ins.fn_b;
      pi.num_args = uint16_t(ins.args.size());
      pi.args = uint32_t(fn.operand_pool.size());
      for (size_t i = 0; i < ins.args.size(); ++i) {
        fn.operand_pool.push_back(ins.args[i]);
        fn.contiguous_pool.push_back(i < ins.contiguous.size() ? ins.contiguous[i] : 0);
      }
      pi.num_outs = uint16_t(ins.outs.size());
      pi.outs = uint32_t(fn.index_pool.size());
      fn.index_pool.insert(fn.index_pool.end(), ins.outs.begin(), ins.outs.end());
      pi.num_frees = uint16_t(ins.frees.size());
      pi.frees = uint32_t(fn.index_pool.size());
      fn.index_pool.insert(fn.index_pool.end(), ins.frees.begin(), ins.frees.end());
      fn.packed.push_back(pi);
    }
  }

  // Registers die after their last reading instruction; one never read dies right
  // after it is written. Bodies are straight-line (control flow is in callees), so a
  // single forward scan is exact.
  static void compute_last_uses(Function& fn) {
    std::vector<int> last(fn.num_regs, -1);
    auto use = [&](const Operand& o, int i) {
      if (o.from == Operand::From::Reg) last[o.index] = i;
    };
    for (size_t i = 0; i < fn.code.size(); ++i) {
      for (const Operand& o : fn.code[i].args) {
        use(o, int(i));
        if (o.from == Operand::From::List)
          for (const Operand& item : fn.lists[o.index].items) use(item, int(i));
      }
    }
    for (size_t i = 0; i < fn.code.size(); ++i)
      for (uint32_t r : fn.code[i].outs)
        if (last[r] < 0) last[r] = int(i);
    for (uint32_t r = 0; r < fn.num_regs; ++r)
      if (last[r] >= 0 && fn.code[size_t(last[r])].kind != Instr::Kind::Return) fn.code[size_t(last[r])].frees.push_back(r);
  }

  // Registers each function and its deepest chain of callees need, and how deep that
  // chain nests. Iterative, so a long chain cannot overflow the loader's stack; the
  // depth limit keeps the interpreter's (recursive) exec within its stack too.
  void compute_stack_needs() {
    enum : uint8_t { White, Grey, Black };
    std::vector<uint8_t> state(p_.functions_.size(), White);
    std::vector<uint32_t> depth(p_.functions_.size(), 0);
    struct Frame { uint32_t f; size_t pc; };
    auto callees = [](const Instr& ins, uint32_t out[2]) -> int {
      if (ins.kind == Instr::Kind::Call) { out[0] = ins.fn_a; return 1; }
      if (ins.kind == Instr::Kind::WhileLoop || ins.kind == Instr::Kind::Cond) { out[0] = ins.fn_a; out[1] = ins.fn_b; return 2; }
      return 0;
    };
    for (uint32_t root = 0; root < p_.functions_.size(); ++root) {
      if (state[root] != White) continue;
      std::vector<Frame> stack{{root, 0}};
      state[root] = Grey;
      while (!stack.empty()) {
        const uint32_t f = stack.back().f;
        Function& fn = p_.functions_[f];
        bool descended = false;
        for (; stack.back().pc < fn.code.size() && !descended; ++stack.back().pc) {
          uint32_t cs[2];
          const int nc = callees(fn.code[stack.back().pc], cs);
          for (int c = 0; c < nc; ++c) {
            if (state[cs[c]] == Grey)
              fail_at(fn.code[stack.back().pc].line, "'{}' calls itself (recursion is not allowed; use while_loop)",
                      p_.functions_[cs[c]].name);
            if (state[cs[c]] == White) {
              state[cs[c]] = Grey;
              stack.push_back({cs[c], 0});
              descended = true;
              break;
            }
          }
          if (descended) break;  // revisit this instruction once the callee is done
        }
        if (descended) continue;
        uint32_t deepest = 0, nest = 0;
        for (const Instr& ins : fn.code) {
          uint32_t cs[2];
          const int nc = callees(ins, cs);
          if (nc == 0) continue;
          if (ins.kind == Instr::Kind::Call) {
            deepest = std::max<uint32_t>(deepest, uint32_t(p_.functions_[ins.fn_a].num_returns()) + p_.functions_[ins.fn_a].stack_need);
          } else {
            const Function& a = p_.functions_[ins.fn_a];
            const Function& b = p_.functions_[ins.fn_b];
            const uint32_t area = uint32_t(ins.args.size()) + uint32_t(std::max(a.num_returns(), b.num_returns())) + 1;
            deepest = std::max(deepest, area + std::max(a.stack_need, b.stack_need));
          }
          for (int c = 0; c < nc; ++c) nest = std::max(nest, depth[cs[c]]);
        }
        depth[f] = nest + 1;
        if (depth[f] > uint32_t(kMaxCallDepth))
          fail_at(fn.line, "'{}' nests calls {} deep, more than the limit of {} (each call, while_loop and cond is one level)",
                  fn.name, depth[f], kMaxCallDepth);
        fn.stack_need = fn.num_regs + deepest;
        p_.max_stack_ = std::max(p_.max_stack_, fn.stack_need);
        state[f] = Black;
        stack.pop_back();
      }
    }
  }

 public:
  std::shared_ptr<io::WeightsFile> weights_;
  bool bind_weights = true;  // false: Program::resolve

 private:
  Program& p_;
  const ir::Module& m_;
  std::unordered_map<std::string, uint32_t> fn_index_;
  std::unordered_map<std::string, Value> weight_cache_;
  std::map<std::pair<int, int64_t>, uint32_t> scalar_consts_;  // per function being loaded
};

std::shared_ptr<const Program> Program::build(const std::string& text, const std::string& filename,
                                              const std::function<std::shared_ptr<io::WeightsFile>()>& open_weights,
                                              bool bind_weights) {
  auto p = std::make_shared<Program>();
  p->text_ = text;
  p->filename_ = filename;
  ir::Module m;
  try {
    m = ir::parse(text, filename);
  } catch (const ir::ParseError& e) {
    throw Error(e.what());
  }
  Loader loader(*p, m);
  loader.bind_weights = p->weights_bound_ = bind_weights;
  try {
    loader.weights_ = open_weights();
  } catch (const io::WeightsError& e) {
    throw Error(e.what());
  }
  loader.load();
  p->weights_ = loader.weights_;
  return p;
}

std::shared_ptr<const Program> Program::from_text(const std::string& text, const std::string& weights_path,
                                                  const std::string& filename, const LoadOptions& options) {
  return build(text, filename, [&]() -> std::shared_ptr<io::WeightsFile> {
    if (weights_path.empty()) return nullptr;
    return io::WeightsFile::open(weights_path, options.copy_weights || env_copy_weights());
  });
}

std::shared_ptr<const Program> Program::resolve(const std::string& text, const std::string& filename) {
  return build(text, filename, [] { return std::shared_ptr<io::WeightsFile>(); }, /*bind_weights=*/false);
}

// The names errors give the parts of a program loaded from memory.
constexpr const char* kMemoryText = "program.py (in memory)";
constexpr const char* kMemoryWeights = "weights.safetensors (in memory)";
constexpr const char* kMemoryMeta = "meta.json (in memory)";

std::shared_ptr<const Program> Program::from_memory(std::string_view text, const void* weights, size_t weights_size,
                                                    std::string_view meta_json, const LoadOptions& options,
                                                    std::shared_ptr<const void> owner) {
  if (!meta_json.empty()) check_meta(kMemoryMeta, std::string(meta_json));
  auto p = build(std::string(text), kMemoryText, [&]() -> std::shared_ptr<io::WeightsFile> {
    if (!weights && weights_size == 0) return nullptr;
    return io::WeightsFile::from_memory(weights, weights_size, kMemoryWeights, options.copy_weights, std::move(owner));
  });
  if (!meta_json.empty()) const_cast<Program&>(*p).meta_json_ = std::string(meta_json);
  return p;
}

std::shared_ptr<const Program> Program::from_reader(std::string_view text, WeightsReader& reader, std::string_view meta_json) {
  if (!meta_json.empty()) check_meta(kMemoryMeta, std::string(meta_json));
  auto p = build(std::string(text), kMemoryText, [&] { return io::WeightsFile::from_reader(reader, kMemoryWeights); });
  if (!meta_json.empty()) const_cast<Program&>(*p).meta_json_ = std::string(meta_json);
  return p;
}

std::shared_ptr<const Program> Program::load(const std::string& dir, const LoadOptions& options) {
  const std::string text_path = dir + "/program.py";
  if (!file_exists(text_path)) fail("{} is not a tensorvm program (no program.py in it)", dir);
  // meta.json first: a program of an unknown version may not even parse.
  const std::string meta_path = dir + "/meta.json";
  std::string meta = "{}";
  if (file_exists(meta_path)) {
    meta = read_file(meta_path, kMaxMetaBytes, "meta.json");
    check_meta(meta_path, meta);
  }
  const std::string weights_path = dir + "/weights.safetensors";
  auto p = from_text(read_file(text_path, kMaxProgramTextBytes, "program.py"), file_exists(weights_path) ? weights_path : "", text_path, options);
  const_cast<Program&>(*p).meta_json_ = std::move(meta);
  return p;
}

const Function* Program::find(const std::string& name) const {
  for (const Function& f : functions_)
    if (f.name == name) return &f;
  return nullptr;
}

const Function& Program::function(const std::string& name) const {
  if (const Function* f = find(name)) return *f;
  std::vector<std::string> names;
  for (const Function& f : functions_) names.push_back(f.name);
  fail("no function '{}' in {} (it has: {})", name, filename_, fmt::join(names, ", "));
}

}  // namespace vm
