#include "ir/names.h"

#include <algorithm>
#include <array>

namespace ir {

bool is_python_keyword(std::string_view s) {
  static constexpr std::array<std::string_view, 35> kKeywords = {
      "False", "None",   "True",    "and",      "as",       "assert", "async",
      "await", "break",  "class",   "continue", "def",      "del",    "elif",
      "else",  "except", "finally", "for",      "from",     "global", "if",
      "import", "in",    "is",      "lambda",   "nonlocal", "not",    "or",
      "pass",  "raise",  "return",  "try",      "while",    "with",   "yield"};
  return std::find(kKeywords.begin(), kKeywords.end(), s) != kKeywords.end();
}

bool is_dunder(std::string_view s) {
  return s.size() >= 4 && s.substr(0, 2) == "__" && s.substr(s.size() - 2) == "__";
}

bool is_reserved_name(std::string_view s) {
  return s == "param" || s == "while_loop" || s == "cond" || s == "emit" || s == "inf" || s == "nan";
}

bool is_builtin_callee(std::string_view s) {
  return s == "param" || s == "while_loop" || s == "cond" || s == "emit";
}

bool is_value_type(std::string_view s) {
  return s == "Tensor" || s == "int" || s == "float" || s == "bool" || s == "str" || s == "ints" || s == "Any" ||
         s == "tuple";
}

}  // namespace ir
