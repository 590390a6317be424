// Canonical printing. pycompiler/ir.py (with pycompiler/literals.py) must produce
// the same bytes, so the rules for literals are spelled out here exactly:
//
// format_float(v) == Python's repr(v):
//   - nan (any sign, any payload) -> "nan"; +inf -> "inf"; -inf -> "-inf".
//   - Otherwise take the shortest decimal digits d1..dn that round-trip to v
//     (std::to_chars without precision; Python's repr uses the same criterion) and
//     the decimal exponent e of d1, so |v| = d1.d2..dn * 10^e. A '-' leads if the
//     sign bit is set (so -0.0 -> "-0.0").
//   - If -4 <= e < 16: fixed notation. e < 0: "0." then (-e - 1) zeros then the
//     digits. Otherwise the first e+1 digits (padded with zeros if n <= e), a '.',
//     then the remaining digits, or "0" if none remain: 1.0, 0.0001, 123.5,
//     1000000000000000.0.
//   - Else scientific: d1, then "." and d2..dn if n > 1, then 'e', the exponent's
//     sign ('+' or '-') and at least two exponent digits: 1e-05, 1e+16,
//     1.2345678901234568e+17, 5e-324, 1.7976931348623157e+308.
//
// quote_string(s), over the bytes of s (UTF-8 text):
//   - wrapped in double quotes;
//   - '\\' -> \\, '"' -> \", LF -> \n, TAB -> \t, CR -> \r;
//   - every other byte < 0x20, and 0x7f -> \xNN with two lowercase hex digits;
//   - everything else, including ' and bytes >= 0x80, as is.
#include "ir/printer.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace ir {

namespace {

// The shortest digits that read back as |v| (v finite), and the decimal exponent of the
// first: 1234.5 gives "12345", 3.
void shortest_digits(double v, std::string& digits, int& e) {
#ifdef __cpp_lib_to_chars
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));  // d[.ddd]e(+|-)dd[d]
  size_t epos = sci.find('e');
  for (char c : sci.substr(0, epos))
    if (c != '.') digits += c;
  e = std::atoi(std::string(sci.substr(epos + 1)).c_str());
#else
  // No floating-point to_chars (libc++ 14, Emscripten's): fmt's "{}" is also the shortest
  // round trip (Dragonbox), in fixed or exponent form; normalise it to digits and exponent.
  const std::string text = fmt::format("{}", std::fabs(v));
  const size_t epos = text.find('e');
  const std::string mant = text.substr(0, epos);
  const size_t dot = mant.find('.');
  const int int_len = static_cast<int>(dot == std::string::npos ? mant.size() : dot);
  for (char c : mant)
    if (c != '.') digits += c;
  e = int_len - 1 + (epos == std::string::npos ? 0 : std::atoi(text.c_str() + epos + 1));
  size_t lead = 0;
  while (lead + 1 < digits.size() && digits[lead] == '0') ++lead;
  digits.erase(0, lead);
  e -= static_cast<int>(lead);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (digits == "0") e = 0;
#endif
}

}  // namespace

std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::string out;
  if (std::signbit(v)) out += '-';
  std::string digits;
  int e = 0;
  shortest_digits(v, digits, e);
  int n = static_cast<int>(digits.size());
  if (e >= -4 && e < 16) {
    if (e < 0) {
      out += "0." + std::string(static_cast<size_t>(-e - 1), '0') + digits;
    } else if (n <= e + 1) {
      out += digits + std::string(static_cast<size_t>(e + 1 - n), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(e + 1)) + "." + digits.substr(static_cast<size_t>(e + 1));
    }
    return out;
  }
  out += digits[0];
  if (n > 1) out += "." + digits.substr(1);
  out += fmt::format("e{}{:02d}", e < 0 ? '-' : '+', std::abs(e));
  return out;
}

std::string quote_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
        else out += ch;
    }
  }
  out += '"';
  return out;
}

namespace {

struct ExprPrinter {
  std::string operator()(NoneLit) const { return "None"; }
  std::string operator()(bool b) const { return b ? "True" : "False"; }
  std::string operator()(int64_t i) const { return std::to_string(i); }
  std::string operator()(double d) const { return format_float(d); }
  std::string operator()(const std::string& s) const { return quote_string(s); }
  std::string operator()(const Name& n) const { return n.id; }
  std::string operator()(const List& l) const {
    std::string out = "[";
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i) out += ", ";
      out += l.items[i].is_name ? l.items[i].name : std::to_string(l.items[i].value);
    }
    return out + "]";
  }
};

template <typename T, typename F>
std::string join(const std::vector<T>& items, F&& each) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += each(items[i]);
  }
  return out;
}

std::string print_signature(const Function& f) {
  std::string out = "def " + f.name + "(" + join(f.params, [](const Param& p) { return p.name + ": " + p.type; }) + ") -> ";
  auto self = [](const std::string& t) { return t; };
  if (f.return_types.empty()) out += "None";
  else if (f.returns_tuple || f.return_types.size() > 1) out += "tuple[" + join(f.return_types, self) + "]";
  else out += f.return_types[0];
  return out + ":";
}

}  // namespace

std::string print_expr(const Expr& expr) { return std::visit(ExprPrinter{}, expr); }

std::string print_stmt(const Stmt& s) {
  if (s.kind == Stmt::Kind::Return) {
    if (s.returns.empty()) return "return";
    return "return " + join(s.returns, print_expr);
  }
  auto self = [](const std::string& t) { return t; };
  std::string out = join(s.targets, self);
  if (s.trailing_comma && s.targets.size() == 1) out += ",";
  out += " = " + s.callee + "(";
  out += join(s.args, [](const Arg& a) { return (a.keyword.empty() ? "" : a.keyword + "=") + print_expr(a.value); });
  return out + ")";
}

std::string print(const Module& module) {
  std::string out = "# tensorvm ir 1\n";
  for (size_t i = 0; i < module.functions.size(); ++i) {
    const Function& f = module.functions[i];
    if (i) out += "\n";
    out += print_signature(f) + "\n";
    for (const Stmt& s : f.body) out += "    " + print_stmt(s) + "\n";
  }
  return out;
}

}  // namespace ir
