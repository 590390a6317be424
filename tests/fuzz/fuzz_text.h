// What the text fuzz targets do with a tokenizer they loaded: encode the text, decode
// the ids both ways (skipping special tokens and keeping them), and decode the text's
// bytes taken as ids (so ids outside the vocabulary too). A text::Error is an answer;
// any other exception escapes to libFuzzer as a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_verbose.h"
#include "text/tokenizer.h"

namespace fuzz {

inline void exercise(const text::Tokenizer& tok, std::string_view input) {
  std::vector<int64_t> ids;
  try {
    ids = tok.encode(input);
    if (verbose()) std::fprintf(stderr, "%s: encode: %zu ids\n", tok.kind().c_str(), ids.size());
  } catch (const text::Error& e) {
    stopped("encode", e);
  }
  for (bool skip : {true, false}) {
    try {
      const std::string out = tok.decode(ids, skip);
      if (verbose()) std::fprintf(stderr, "%s: decode: '%s'\n", tok.kind().c_str(), out.c_str());
    } catch (const text::Error& e) {
      stopped("decode", e);
    }
  }
  std::vector<int64_t> raw;
  for (unsigned char c : input) raw.push_back(c);
  try {
    tok.decode(raw, false);
  } catch (const text::Error& e) {
    stopped("decode (bytes as ids)", e);
  }
}

}  // namespace fuzz
