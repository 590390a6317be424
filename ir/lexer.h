// Splits IR text into lines of tokens. Internal to the parser.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ir::detail {

enum class Tok { Name, Int, Float, String, LParen, RParen, LBracket, RBracket, Comma, Colon, Equals, Minus, Arrow, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // Name/Int/Float: the source text; String: the decoded value
};

// One physical line. Blank and comment-only lines have no tokens at all;
// every other line ends with a Tok::End token.
struct Line {
  int number = 0;
  int indent = 0;  // leading spaces
  std::vector<Token> tokens;
};

// The physical lines of the text, split at "\n" (a trailing "\r" stays on the line).
std::vector<std::string_view> split_lines(std::string_view text);

// Tokenizes one physical line (1-based `number`). Throws ParseError for anything
// the grammar never allows on a line: tabs, NUL, invalid UTF-8, a lone CR,
// trailing comments, bad literals, stray characters.
Line lex_line(std::string_view raw, int number, const std::string& filename);

// For error messages: "'('", "'x'", "a string", "end of line".
std::string describe(const Token& t);

}  // namespace ir::detail
