// libFuzzer target: IR text through the lexer, parser and checker.
// Any input must end in a Module or an ir::ParseError; a parsed module must print to
// canonical text that parses again and prints the same (docs/ir.md, "Canonical printing").
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ir/parser.h"
#include "ir/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ir::Module m;
  try {
    m = ir::parse(text, "fuzz.py");
  } catch (const ir::ParseError&) {
    return 0;
  }
  const std::string printed = ir::print(m);
  ir::Module again;
  try {
    again = ir::parse(printed, "printed.py");
  } catch (const ir::ParseError& e) {
    std::fprintf(stderr, "canonical text of a valid program does not parse: %s\n--- printed:\n%s\n", e.what(),
                 printed.c_str());
    std::abort();
  }
  const std::string reprinted = ir::print(again);
  if (reprinted != printed) {
    std::fprintf(stderr, "printing is not stable\n--- first:\n%s\n--- second:\n%s\n", printed.c_str(),
                 reprinted.c_str());
    std::abort();
  }
  return 0;
}
