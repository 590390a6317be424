#include "ir/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <limits>

#include "ir/lexer.h"
#include "ir/names.h"

namespace ir {

ParseError::ParseError(const std::string& filename, int line, const std::string& message)
    : std::runtime_error(fmt::format("{}:{}: {}", filename, line, message)),
      filename_(filename), line_(line), message_(message) {}

namespace {

using detail::Line;
using detail::Tok;
using detail::Token;

constexpr std::string_view kHeader = "# tensorvm ir 1";
constexpr size_t kMaxListItems = 8;

// `negative` lets "-9223372036854775808" through although its digits alone overflow.
bool to_int64(const std::string& digits, bool negative, int64_t* out) {
  uint64_t v = 0;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  for (char c : digits) {
    auto d = static_cast<uint64_t>(c - '0');
    if (v > (limit - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

#ifdef __cpp_lib_to_chars
// Decimal exponent of the first significant digit of a float literal with at least
// one non-zero digit; saturates, since it only has to tell overflow from underflow.
int64_t leading_exponent(const std::string& text) {
  size_t e = text.find_first_of("eE");
  std::string mant = text.substr(0, e);
  int64_t exp = 0;
  if (e != std::string::npos) {
    size_t i = e + 1;
    bool neg = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    for (; i < text.size(); ++i) exp = std::min<int64_t>(exp * 10 + (text[i] - '0'), int64_t{1} << 40);
    if (neg) exp = -exp;
  }
  size_t dot = mant.find('.');
  size_t int_len = dot == std::string::npos ? mant.size() : dot;
  size_t first = mant.find_first_of("123456789");
  int64_t pos = first < int_len ? static_cast<int64_t>(int_len - first) - 1
                                : -static_cast<int64_t>(first - int_len);
  return pos + exp;
}
#endif

// Python's float(): correctly rounded, out-of-range values become inf or 0.
double to_double(const std::string& text) {
#ifndef __cpp_lib_to_chars
  // No floating-point from_chars (libc++ 14, Emscripten's): strtod, correctly rounded in
  // musl, gives Python's results too: inf past the range, 0 or a subnormal below it.
  return std::strtod(text.c_str(), nullptr);
#else
  double v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
  if (r.ec == std::errc::result_out_of_range)
    return leading_exponent(text) > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return v;
#endif
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& filename) : raw_(detail::split_lines(text)), filename_(filename) {}

  Module run() {
    Module m;
    size_t i = 0;
    while (i < raw_.size()) {
      if (lines(i).tokens.empty()) { ++i; continue; }
      start(lines(i));
      if (line_->indent > 0) fail("unexpected indentation outside a function body");
      Function f = parse_def();
      int body_indent = -1;
      for (++i; i < raw_.size(); ++i) {
        if (lines(i).tokens.empty()) continue;
        start(lines(i));
        if (line_->indent == 0) break;
        if (body_indent < 0) body_indent = line_->indent;
        if (line_->indent != body_indent)
          fail(fmt::format("inconsistent indentation: the body of '{}' is indented by {} spaces, this line by {}",
                           f.name, body_indent, line_->indent));
        f.body.push_back(parse_stmt());
      }
      if (f.body.empty())
        throw ParseError(filename_, f.line, fmt::format("function '{}' has no body (expected an indented statement on the next line)", f.name));
      m.functions.push_back(std::move(f));
    }
    return m;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const { throw ParseError(filename_, line_->number, msg); }

  // Lines are lexed in order as the parser reaches them, so the first error in
  // the text is the one reported, whether lexical or grammatical.
  const Line& lines(size_t i) {
    while (lexed_.size() <= i)
      lexed_.push_back(detail::lex_line(raw_[lexed_.size()], static_cast<int>(lexed_.size()) + 1, filename_));
    return lexed_[i];
  }

  void start(const Line& l) { line_ = &l; pos_ = 0; }
  const Token& peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, line_->tokens.size() - 1);  // the last token is End
    return line_->tokens[i];
  }
  bool at(Tok k, size_t ahead = 0) const { return peek(ahead).kind == k; }
  bool at_name(std::string_view s) const { return at(Tok::Name) && peek().text == s; }
  const Token& next() {
    const Token& t = peek();
    if (t.kind != Tok::End) ++pos_;
    return t;
  }
  void expect(Tok k, const std::string& what) {
    if (!at(k)) fail(fmt::format("expected {}, found {}", what, detail::describe(peek())));
    next();
  }

  // A name that this program binds: a function, a parameter, or an assigned local.
  std::string binding_name(const char* role) {
    if (!at(Tok::Name)) fail(fmt::format("expected {} name, found {}", role, detail::describe(peek())));
    std::string n = next().text;
    if (is_python_keyword(n)) fail(fmt::format("'{}' is a Python keyword and cannot be a {} name", n, role));
    if (is_dunder(n)) fail(fmt::format("dunder name '{}' is not allowed", n));
    if (is_reserved_name(n)) fail(fmt::format("'{}' is a builtin of the IR and cannot be a {} name", n, role));
    return n;
  }

  std::string type_name() {
    if (!at(Tok::Name)) fail(fmt::format("expected a type name, found {}", detail::describe(peek())));
    std::string n = next().text;
    if (is_python_keyword(n) || is_dunder(n)) fail(fmt::format("'{}' is not a valid type name", n));
    return n;
  }

  Function parse_def() {
    Function f;
    f.line = line_->number;
    if (!at_name("def")) fail(fmt::format("expected 'def' at top level, found {} (statements belong in an indented function body)", detail::describe(peek())));
    next();
    f.name = binding_name("function");
    expect(Tok::LParen, fmt::format("'(' after function name '{}'", f.name));
    if (!at(Tok::RParen)) {
      while (true) {
        Param p;
        p.name = binding_name("parameter");
        if (!at(Tok::Colon)) fail(fmt::format("parameter '{}' needs a type annotation, e.g. '{}: Tensor'", p.name, p.name));
        next();
        p.type = type_name();
        f.params.push_back(std::move(p));
        if (at(Tok::RParen)) break;
        if (!at(Tok::Comma)) fail(fmt::format("expected ',' or ')' after parameter '{}', found {}", f.params.back().name, detail::describe(peek())));
        next();
        if (at(Tok::RParen)) fail("trailing comma in parameter list");
      }
    }
    next();  // ')'
    if (!at(Tok::Arrow)) fail(fmt::format("expected '->' and a return type after the parameters of '{}', found {}", f.name, detail::describe(peek())));
    next();
    parse_return_type(&f);
    expect(Tok::Colon, "':' at the end of the 'def' line");
    if (!at(Tok::End)) fail(fmt::format("unexpected {} after ':' (the body starts on the next line)", detail::describe(peek())));
    return f;
  }

  void parse_return_type(Function* f) {
    if (at_name("None")) { next(); return; }
    if (at_name("tuple") && at(Tok::LBracket, 1)) {
      next();
      next();
      f->returns_tuple = true;
      while (true) {
        f->return_types.push_back(type_name());
        if (at(Tok::RBracket)) break;
        if (!at(Tok::Comma)) fail(fmt::format("expected ',' or ']' in 'tuple[...]', found {}", detail::describe(peek())));
        next();
      }
      next();
      return;
    }
    f->return_types.push_back(type_name());
  }

  Stmt parse_stmt() {
    Stmt s;
    s.line = line_->number;
    if (at_name("return")) {
      s.kind = Stmt::Kind::Return;
      next();
      if (at(Tok::End)) return s;
      while (true) {
        s.returns.push_back(parse_expr());
        if (at(Tok::End)) return s;
        if (!at(Tok::Comma)) fail(fmt::format("expected ',' or end of line after a returned value, found {}", detail::describe(peek())));
        next();
        if (at(Tok::End)) fail("trailing comma after the returned values");
      }
    }
    if (at(Tok::Name) && is_python_keyword(peek().text))
      fail(fmt::format("'{}' is not allowed: a statement is 'names = call(...)' or 'return ...'", peek().text));
    if (at(Tok::Name) && at(Tok::LParen, 1))
      fail(fmt::format("the result of '{}(...)' must be assigned to a name", peek().text));
    bool trailing_comma = false;
    while (true) {
      s.targets.push_back(binding_name("variable"));
      if (at(Tok::Equals)) break;
      if (!at(Tok::Comma)) fail(fmt::format("expected '=' or ',' after '{}', found {}", s.targets.back(), detail::describe(peek())));
      next();
      if (at(Tok::Equals)) { trailing_comma = true; break; }
    }
    next();  // '='
    // A trailing comma only changes the meaning of a single target ("a, = f()").
    s.trailing_comma = trailing_comma && s.targets.size() == 1;
    parse_call(&s);
    return s;
  }

  void parse_call(Stmt* s) {
    if (!at(Tok::Name) || !at(Tok::LParen, 1))
      fail(fmt::format("expected a call 'op(...)' after '=', found {}", detail::describe(peek())));
    s->callee = next().text;
    if (is_python_keyword(s->callee) || is_dunder(s->callee) || s->callee == "inf" || s->callee == "nan")
      fail(fmt::format("'{}' cannot be called", s->callee));
    next();  // '('
    if (at(Tok::RParen)) { next(); expect_end(); return; }
    std::string first_keyword;  // empty until the first keyword argument
    while (true) {
      Arg a;
      if (at(Tok::Name) && at(Tok::Equals, 1)) {
        a.keyword = next().text;
        next();
        if (is_python_keyword(a.keyword) || is_dunder(a.keyword))
          fail(fmt::format("'{}' cannot be a keyword argument name", a.keyword));
        for (const Arg& b : s->args)
          if (b.keyword == a.keyword) fail(fmt::format("duplicate keyword argument '{}' in call to '{}'", a.keyword, s->callee));
      } else if (!first_keyword.empty()) {
        fail(fmt::format("positional argument after keyword argument '{}' in call to '{}'", first_keyword, s->callee));
      }
      a.value = parse_expr();
      s->args.push_back(std::move(a));
      if (first_keyword.empty()) first_keyword = s->args.back().keyword;
      if (at(Tok::RParen)) break;
      if (at(Tok::End)) fail(fmt::format("expected ')' after arguments of call to '{}'", s->callee));
      if (!at(Tok::Comma))
        fail(fmt::format("expected ',' or ')' after an argument of call to '{}', found {}", s->callee, detail::describe(peek())));
      next();
      if (at(Tok::RParen)) fail(fmt::format("trailing comma in call to '{}'", s->callee));
    }
    next();  // ')'
    expect_end();
  }

  void expect_end() {
    if (!at(Tok::End)) fail(fmt::format("unexpected {} after the call (one statement per line)", detail::describe(peek())));
  }

  Expr parse_expr() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::Int: return parse_int(false);
      case Tok::Float: return to_double(next().text);
      case Tok::String: return next().text;
      case Tok::LBracket: return parse_list();
      case Tok::Minus: {
        next();
        if (at(Tok::Int)) return parse_int(true);
        if (at(Tok::Float)) return -to_double(next().text);
        if (at_name("inf")) { next(); return -std::numeric_limits<double>::infinity(); }
        fail(fmt::format("'-' must be followed by a number or 'inf', found {}", detail::describe(peek())));
      }
      case Tok::Name: {
        std::string n = next().text;
        if (n == "None") return NoneLit{};
        if (n == "True") return true;
        if (n == "False") return false;
        if (n == "inf") return std::numeric_limits<double>::infinity();
        if (n == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (is_python_keyword(n)) fail(fmt::format("'{}' is a Python keyword, not a value", n));
        if (is_dunder(n)) fail(fmt::format("dunder name '{}' is not allowed", n));
        if (at(Tok::LParen)) fail(fmt::format("nested call to '{}': assign each call to a name first", n));
        return Name{n};
      }
      default:
        fail(fmt::format("expected a value (name, number, string, list, True, False or None), found {}", detail::describe(t)));
    }
  }

  int64_t parse_int(bool negative) {
    std::string text = next().text;
    int64_t v = 0;
    if (!to_int64(text, negative, &v))
      fail(fmt::format("integer literal {}{} does not fit in int64", negative ? "-" : "", text));
    return v;
  }

  List parse_list() {
    next();  // '['
    List l;
    if (at(Tok::RBracket)) { next(); return l; }
    while (true) {
      ListItem item;
      if (at(Tok::Int)) {
        item.value = parse_int(false);
      } else if (at(Tok::Minus) && at(Tok::Int, 1)) {
        next();
        item.value = parse_int(true);
      } else if (at(Tok::Name) && !is_python_keyword(peek().text) && !is_dunder(peek().text) &&
                 !is_reserved_name(peek().text)) {
        item.is_name = true;
        item.name = next().text;
      } else {
        fail(fmt::format("list items must be ints or names, found {}", detail::describe(peek())));
      }
      l.items.push_back(std::move(item));
      if (l.items.size() > kMaxListItems) fail(fmt::format("list has more than {} items", kMaxListItems));
      if (at(Tok::RBracket)) break;
      if (!at(Tok::Comma)) fail(fmt::format("expected ',' or ']' in list, found {}", detail::describe(peek())));
      next();
      if (at(Tok::RBracket)) fail("trailing comma in list");
    }
    next();  // ']'
    return l;
  }

  std::vector<std::string_view> raw_;
  std::deque<Line> lexed_;  // a deque: line_ points into it while it grows
  const std::string& filename_;
  const Line* line_ = nullptr;
  size_t pos_ = 0;
};

void check_header(std::string_view text, const std::string& filename) {
  std::string_view first = text.substr(0, text.find('\n'));
  if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
  if (first == kHeader) return;
  constexpr std::string_view kPrefix = "# tensorvm ir ";
  if (first.substr(0, kPrefix.size()) == kPrefix)
    throw ParseError(filename, 1, fmt::format("unsupported IR version in header '{}' (this reader knows '{}')",
                                              first.substr(0, 40), kHeader));
  throw ParseError(filename, 1, fmt::format("missing header: the first line must be '{}'", kHeader));
}

}  // namespace

Module parse(std::string_view text, const std::string& filename) {
  check_header(text, filename);
  Module m = Parser(text, filename).run();
  check(m, filename);
  return m;
}

}  // namespace ir
