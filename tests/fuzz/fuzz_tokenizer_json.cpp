// libFuzzer target: a tokenizer.json read as each kind that reads one (byte-level BPE,
// through the Whisper tokenizer that wraps it and strips its timestamps; and the
// sentencepiece-style BPE of Llama 2), each then encoding the text and decoding the ids
// (fuzz_text.h). The input is tokenizer.json, a NUL byte, the text, and optionally
// another NUL byte and a tokenizer_config.json. Loading must end in a tokenizer or a
// text::Error, never a crash; so must encoding and decoding.
//
// Harness limits: the text is cut at kMaxText bytes, inputs over kMaxInput are skipped.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_memfile.h"
#include "fuzz_text.h"
#include "text/byte_bpe.h"
#include "text/whisper.h"

namespace {

constexpr size_t kMaxInput = 1 << 16;
constexpr size_t kMaxText = 1024;

std::string_view next_part(std::string_view& in) {
  const size_t nul = in.find('\0');
  const std::string_view part = in.substr(0, nul);
  in.remove_prefix(nul == std::string_view::npos ? in.size() : nul + 1);
  return part;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string json(next_part(in));
  const std::string_view text = next_part(in).substr(0, kMaxText);
  const std::string_view config = in;
  fuzz::MemFile json_file(reinterpret_cast<const uint8_t*>(json.data()), json.size());
  fuzz::MemFile config_file(reinterpret_cast<const uint8_t*>(config.data()), config.size());
  std::map<std::string, std::string> files = {{"tokenizer", json_file.path()}};
  if (!config.empty()) files["config"] = config_file.path();
  for (const bool spm_style : {false, true}) {
    std::unique_ptr<text::Tokenizer> tok;
    try {
      tok = spm_style ? text::load_sentencepiece_bpe(files, nlohmann::json())
                      : text::load_whisper(files, nlohmann::json());
    } catch (const text::Error& e) {
      fuzz::stopped(spm_style ? "load (sentencepiece BPE)" : "load (byte-level BPE)", e);
      continue;
    }
    fuzz::exercise(*tok, text);
  }
  return 0;
}
