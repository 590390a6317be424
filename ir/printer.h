// AST -> canonical text (docs/ir.md, "Canonical printing").
#pragma once

#include <string>

#include "ir/ast.h"

namespace ir {

// The whole program: header, functions separated by one blank line, "\n" endings.
std::string print(const Module& module);

// One statement without indentation or newline, e.g. "a, b = f(x, k=1)".
std::string print_stmt(const Stmt& stmt);

// One argument or return value as it stands in the text.
std::string print_expr(const Expr& expr);

// Python's repr(float) (see the rules at the top of printer.cpp).
std::string format_float(double v);

// A double-quoted string literal (see the rules at the top of printer.cpp).
std::string quote_string(const std::string& s);

}  // namespace ir
