// The parsed form of an IR program: exactly what the text says, nothing resolved.
// The parser (parser.cpp) builds it, the printer (printer.cpp) prints it back
// byte-identically, and the loader (vm/loader.cpp) resolves it into instructions.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace ir {

struct NoneLit {};
// A list of ints, each item a literal int or a name bound at run time.
struct ListItem {
  bool is_name = false;
  int64_t value = 0;
  std::string name;
};
struct List {
  std::vector<ListItem> items;
};
struct Name {
  std::string id;
};

// An argument or return expression.
using Expr = std::variant<NoneLit, bool, int64_t, double, std::string /*string literal*/, Name, List>;

struct Arg {
  std::string keyword;  // empty for positional
  Expr value;
};

struct Stmt {
  enum class Kind { Assign, Return } kind = Kind::Assign;
  int line = 0;                      // 1-based line in the source text
  std::vector<std::string> targets;  // Assign: bound names
  bool trailing_comma = false;       // Assign: "a, = f()" unpacks a 1-tuple
  std::string callee;                // Assign: op, builtin or function name
  std::vector<Arg> args;             // Assign: positional first, then keyword
  std::vector<Expr> returns;         // Return: returned expressions (may be empty)
};

struct Param {
  std::string name;
  std::string type;  // Tensor, int, float, bool, str, Any, KVCache, ...
};

struct Function {
  std::string name;
  int line = 0;
  std::vector<Param> params;
  std::vector<std::string> return_types;  // empty means "-> None"
  bool returns_tuple = false;             // "-> tuple[...]" (even with one element)
  std::vector<Stmt> body;
};

struct Module {
  std::vector<Function> functions;
};

}  // namespace ir
