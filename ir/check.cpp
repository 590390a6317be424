// ir::check: the grammar's rules that need the whole program (docs/ir.md, "Grammar").
#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>

#include "ir/names.h"
#include "ir/parser.h"

namespace ir {
namespace {

class Checker {
 public:
  Checker(const Module& m, const std::string& filename) : m_(m), filename_(filename) {}

  void run() {
    for (const Function& f : m_.functions) {
      auto [it, fresh] = functions_.emplace(f.name, &f);
      if (!fresh) fail(f.line, fmt::format("duplicate function '{}' (first defined at line {})", f.name, it->second->line));
    }
    for (const Function& f : m_.functions) {
      for (const Param& p : f.params) types_.insert(p.type);
      types_.insert(f.return_types.begin(), f.return_types.end());
      for (const Stmt& s : f.body)
        if (s.kind == Stmt::Kind::Assign) callees_.emplace(s.callee, s.line);
    }
    for (const Function& f : m_.functions)
      if (is_value_type(f.name) || types_.count(f.name))
        fail(f.line, fmt::format("'{}' is a type name and cannot be a function name", f.name));
    for (const Function& f : m_.functions) check_function(f);
    check_no_recursion();
  }

 private:
  [[noreturn]] void fail(int line, const std::string& msg) const { throw ParseError(filename_, line, msg); }

  // A local named like a callee would shadow it in the Python replay. As callees
  // are collected over the whole program, this also rules out calling a local.
  void check_bindable(int line, const std::string& name) const {
    if (functions_.count(name)) fail(line, fmt::format("'{}' is the name of a function of the program and cannot be bound", name));
    auto c = callees_.find(name);
    if (c != callees_.end())
      fail(line, fmt::format("'{}' is called as an op or function (line {}) and cannot also be a variable", name, c->second));
  }

  void check_function(const Function& f) {
    std::unordered_map<std::string, int> bound;  // name -> line it was bound on
    std::unordered_set<std::string> params;
    for (const Param& p : f.params) {
      if (bound.count(p.name)) fail(f.line, fmt::format("duplicate parameter '{}' in function '{}'", p.name, f.name));
      check_bindable(f.line, p.name);
      bound.emplace(p.name, f.line);
      params.insert(p.name);
    }
    std::unordered_map<std::string, int> assigned_anywhere;
    for (const Stmt& s : f.body)
      for (const std::string& t : s.targets) assigned_anywhere.emplace(t, s.line);

    const Stmt* ret = nullptr;
    for (const Stmt& s : f.body) {
      if (ret) fail(s.line, fmt::format("unreachable statement after 'return' (line {}) in function '{}'", ret->line, f.name));
      auto use = [&](const std::string& name, bool function_ok) {
        if (bound.count(name)) return;
        if (functions_.count(name)) {
          if (function_ok) return;
          fail(s.line, fmt::format("function '{}' can only be passed as an argument to a call", name));
        }
        auto later = assigned_anywhere.find(name);
        if (later != assigned_anywhere.end())
          fail(s.line, fmt::format("name '{}' is used before it is bound (at line {})", name, later->second));
        if (is_builtin_callee(name) || callees_.count(name))
          fail(s.line, fmt::format("'{}' is an op or builtin and can only be called, not passed as a value", name));
        fail(s.line, fmt::format("unknown name '{}'", name));
      };
      auto use_expr = [&](const Expr& e, bool function_ok) {
        if (auto* n = std::get_if<Name>(&e)) use(n->id, function_ok);
        if (auto* l = std::get_if<List>(&e))
          for (const ListItem& it : l->items)
            if (it.is_name) use(it.name, false);
      };
      if (s.kind == Stmt::Kind::Return) {
        for (const Expr& e : s.returns) use_expr(e, false);
        ret = &s;
        continue;
      }
      for (const Arg& a : s.args) use_expr(a.value, true);
      for (const std::string& t : s.targets) {
        auto b = bound.find(t);
        if (b != bound.end())
          fail(s.line, params.count(t) ? fmt::format("'{}' is a parameter of '{}' and cannot be bound again (SSA)", t, f.name)
                                       : fmt::format("'{}' is already bound at line {} (SSA: one binding per name)", t, b->second));
        check_bindable(s.line, t);
        bound.emplace(t, s.line);
      }
    }
  }

  // Edges are calls and function names passed as arguments (loop and branch bodies).
  void check_no_recursion() const {
    struct Edge { const Function* to; int line; };
    std::unordered_map<const Function*, std::vector<Edge>> edges;
    for (const Function& f : m_.functions)
      for (const Stmt& s : f.body) {
        auto add = [&](const std::string& name) {
          auto it = functions_.find(name);
          if (it != functions_.end()) edges[&f].push_back({it->second, s.line});
        };
        if (s.kind == Stmt::Kind::Assign) add(s.callee);
        for (const Arg& a : s.args)
          if (auto* n = std::get_if<Name>(&a.value)) add(n->id);
      }
    // Iterative DFS: a long chain of functions must not overflow the stack.
    enum Color { White, Grey, Black };
    std::unordered_map<const Function*, Color> color;
    struct Frame { const Function* f; size_t next; };
    for (const Function& root : m_.functions) {
      if (color[&root] != White) continue;
      std::vector<Frame> stack{{&root, 0}};
      color[&root] = Grey;
      while (!stack.empty()) {
        Frame& top = stack.back();
        const auto& out = edges[top.f];
        if (top.next == out.size()) {
          color[top.f] = Black;
          stack.pop_back();
          continue;
        }
        const Edge& e = out[top.next++];
        if (color[e.to] == Grey) {
          std::string path;
          size_t first = 0;
          while (stack[first].f != e.to) ++first;
          for (size_t i = first; i < stack.size(); ++i) path += stack[i].f->name + " -> ";
          fail(e.line, fmt::format("recursion is not allowed (loops are while_loop): {}{}", path, e.to->name));
        }
        if (color[e.to] == White) {
          color[e.to] = Grey;
          stack.push_back({e.to, 0});
        }
      }
    }
  }

  const Module& m_;
  const std::string& filename_;
  std::unordered_map<std::string, const Function*> functions_;
  std::unordered_map<std::string, int> callees_;  // name -> first line calling it
  std::unordered_set<std::string> types_;         // every type the annotations name
};

}  // namespace

void check(const Module& module, const std::string& filename) { Checker(module, filename).run(); }

}  // namespace ir
