#include "ir/lexer.h"

#include <fmt/format.h>

#include "ir/parser.h"

namespace ir::detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python decodes the whole source as UTF-8, so an invalid byte anywhere (even in a
// comment) makes the file unreadable there; we refuse it the same way.
// Returns the offset of the first invalid byte, or npos.
size_t find_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) { ++i; continue; }
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the first continuation byte
    if (b >= 0xC2 && b <= 0xDF) n = 1;
    else if (b == 0xE0) { n = 2; lo = 0xA0; }
    else if (b == 0xED) { n = 2; hi = 0x9F; }  // no UTF-16 surrogates
    else if (b >= 0xE1 && b <= 0xEF) n = 2;
    else if (b == 0xF0) { n = 3; lo = 0x90; }
    else if (b >= 0xF1 && b <= 0xF3) n = 3;
    else if (b == 0xF4) { n = 3; hi = 0x8F; }
    else return i;
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      auto c = static_cast<unsigned char>(s[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

class LineLexer {
 public:
  LineLexer(std::string_view s, int number, const std::string& filename)
      : s_(s), filename_(filename), line_{number, 0, {}} {}

  Line run() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
    line_.indent = static_cast<int>(pos_);
    while (true) {
      while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
      if (pos_ == s_.size()) break;
      char c = s_[pos_];
      if (c == '#') {
        if (!line_.tokens.empty())
          fail("a comment must stand on its own line, not after code");
        return std::move(line_);  // a comment-only line: no tokens
      }
      if (is_ident_start(c)) lex_name();
      else if (is_digit(c) || (c == '.' && pos_ + 1 < s_.size() && is_digit(s_[pos_ + 1]))) lex_number();
      else if (c == '"' || c == '\'') lex_string();
      else lex_punct();
    }
    if (!line_.tokens.empty()) line_.tokens.push_back({Tok::End, ""});
    return std::move(line_);
  }

 private:
  [[noreturn]] void fail(const std::string& msg) { throw ParseError(filename_, line_.number, msg); }
  void push(Tok kind, std::string text) { line_.tokens.push_back({kind, std::move(text)}); }

  void lex_name() {
    size_t start = pos_;
    while (pos_ < s_.size() && is_ident_char(s_[pos_])) ++pos_;
    push(Tok::Name, std::string(s_.substr(start, pos_ - start)));
  }

  // Python's decimal int and float syntax minus `_` separators, imaginary and
  // hex/octal/binary literals; no sign here (the parser handles `-`).
  void lex_number() {
    size_t start = pos_;
    bool is_float = false;
    auto digits = [&] { while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_; };
    digits();
    if (pos_ < s_.size() && s_[pos_] == '.') { is_float = true; ++pos_; digits(); }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
      if (p < s_.size() && is_digit(s_[p])) { is_float = true; pos_ = p; digits(); }
    }
    std::string text(s_.substr(start, pos_ - start));
    if (pos_ < s_.size() && (is_ident_char(s_[pos_]) || s_[pos_] == '.')) {
      size_t end = pos_;
      while (end < s_.size() && (is_ident_char(s_[end]) || s_[end] == '.')) ++end;
      fail(fmt::format("invalid number literal '{}' (only decimal ints and floats)", s_.substr(start, end - start)));
    }
    if (!is_float && text.size() > 1 && text[0] == '0')
      fail(fmt::format("leading zeros in integer literal '{}'", text));
    push(is_float ? Tok::Float : Tok::Int, std::move(text));
  }

  void lex_string() {
    char quote = s_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string literal (strings cannot span lines)");
      auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == static_cast<unsigned char>(quote)) { ++pos_; break; }
      if (c != '\\') { out += static_cast<char>(c); ++pos_; continue; }
      if (pos_ + 1 >= s_.size()) fail("unterminated string literal (strings cannot span lines)");
      char e = s_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case '\\': out += '\\'; break;
        case '"': out += '"'; break;
        case '\'': out += '\''; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'x': {
          int h1 = pos_ < s_.size() ? hex_value(s_[pos_]) : -1;
          int h2 = pos_ + 1 < s_.size() ? hex_value(s_[pos_ + 1]) : -1;
          if (h1 < 0 || h2 < 0) fail("\\x escape needs two hex digits");
          pos_ += 2;
          unsigned v = static_cast<unsigned>(h1 * 16 + h2);
          // In Python "\xNN" is the code point U+00NN, whose UTF-8 is two bytes
          // from 0x80 on; strings in the AST are UTF-8, so we store the same.
          if (v < 0x80) {
            out += static_cast<char>(v);
          } else {
            out += static_cast<char>(0xC0 | (v >> 6));
            out += static_cast<char>(0x80 | (v & 0x3F));
          }
          break;
        }
        default:
          fail(fmt::format("unsupported escape '\\{}' in string literal (allowed: \\\\ \\\" \\' \\n \\t \\r \\xNN)",
                           static_cast<unsigned char>(e) < 0x80 && e >= 0x20 ? std::string(1, e) : "?"));
      }
    }
    push(Tok::String, std::move(out));
  }

  void lex_punct() {
    char c = s_[pos_];
    if (c == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '>') {
      pos_ += 2;
      push(Tok::Arrow, "->");
      return;
    }
    Tok kind;
    switch (c) {
      case '(': kind = Tok::LParen; break;
      case ')': kind = Tok::RParen; break;
      case '[': kind = Tok::LBracket; break;
      case ']': kind = Tok::RBracket; break;
      case ',': kind = Tok::Comma; break;
      case ':': kind = Tok::Colon; break;
      case '=': kind = Tok::Equals; break;
      case '-': kind = Tok::Minus; break;
      case '.': fail("unexpected '.': attributes are not allowed");
      case ';': fail("unexpected ';': one statement per line");
      case '\\': fail("unexpected '\\': line continuation is not allowed");
      case '+': case '*': case '/': case '%': case '@': case '<': case '>': case '&': case '|': case '^': case '~': case '!':
        fail(fmt::format("unexpected '{}': operators are not allowed, write an op call like add(x, y)", c));
      default: {
        if (static_cast<unsigned char>(c) >= 0x80) fail("non-ASCII character outside a string or comment");
        fail(fmt::format("unexpected character '{}'", c));
      }
    }
    ++pos_;
    push(kind, std::string(1, c));
  }

  std::string_view s_;
  const std::string& filename_;
  Line line_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

Line lex_line(std::string_view s, int number, const std::string& filename) {
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);  // CRLF files are fine
  if (s.find('\r') != std::string_view::npos) throw ParseError(filename, number, "carriage return not followed by a newline");
  if (s.find('\0') != std::string_view::npos) throw ParseError(filename, number, "NUL byte in source");
  if (find_invalid_utf8(s) != std::string_view::npos) throw ParseError(filename, number, "invalid UTF-8");
  // Even in comments: a tab or control character there is invisible trouble
  // (pycompiler/ir_check.py has this lexer read the text it checks).
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\t') throw ParseError(filename, number, "tab character; use spaces");
    if (c < 0x20 || c == 0x7f)
      throw ParseError(filename, number, fmt::format("control character \\x{:02x} (write it as an escape inside a string)", c));
  }
  return LineLexer(s, number, filename).run();
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::String: return "a string";
    case Tok::End: return "end of line";
    default: return "'" + t.text + "'";
  }
}

}  // namespace ir::detail
