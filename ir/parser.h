// Text -> AST for the IR grammar of docs/ir.md.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "ir/ast.h"

namespace ir {

// what() is "<filename>:<line>: <message>"; line() is 1-based.
class ParseError : public std::runtime_error {
 public:
  ParseError(const std::string& filename, int line, const std::string& message);
  int line() const { return line_; }
  const std::string& filename() const { return filename_; }
  const std::string& message() const { return message_; }

 private:
  std::string filename_;
  int line_;
  std::string message_;
};

// Parses a whole program and runs check() on it. Throws ParseError.
Module parse(std::string_view text, const std::string& filename = "program.py");

// The rules the grammar states beyond syntax, on an AST from any source: unique
// function and parameter names, SSA, names bound before use, function names only as
// call arguments, no local shadowing a callee, no recursion. Throws ParseError
// (naming `filename` and the offending statement's line).
void check(const Module& module, const std::string& filename = "program.py");

}  // namespace ir
