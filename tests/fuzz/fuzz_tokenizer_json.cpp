// libFuzzer target: a tokenizer.json read as each kind that reads one (byte-level BPE,
// through the Whisper tokenizer that wraps it and strips its timestamps; and the
// sentencepiece-style BPE of Llama 2), each then encoding the text and decoding the ids
// (fuzz_text.h). The input is tokenizer.json, a NUL byte, the text, and optionally
// another NUL byte and a tokenizer_config.json. Loading must end in a tokenizer or a
// text::Error, never a crash; so must encoding and decoding.
//
// Harness limits: the text is cut at kMaxText bytes, inputs over kMaxInput are skipped.
// Known bugs fixed on another branch (issue 25) are stepped around until that lands,
// so the fuzzer explores past them (known_bug below).
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

// The steps of tokenizer.json's `part` ("normalizer" or "decoder"): the object, or its
// Sequence's list (`list`).
std::vector<nlohmann::json> steps(const nlohmann::json& j, const char* part, const char* list) {
  if (!j.contains(part) || !j[part].is_object()) return {};
  const nlohmann::json& p = j[part];
  if (p.value("type", "") == "Sequence" && p.contains(list) && p[list].is_array()) return p[list];
  return {p};
}

// TEMPORARY (issue 25, fixed on another branch): a decoder Strip of "" loops forever
// (byte_bpe.cpp, kStrip, with start or stop -1), and Replace steps that grow the text
// compound without bound. Either is skipped: the harness would only find them again.
// So is a Strip whose start or stop is not a non-negative integer: the loader reads
// them with value(key, size_t), which wraps -1 and casts a float (undefined past
// size_t's range); the fix of the Strip step is to refuse those.
bool known_bug(const std::string& json) {
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return false;
  try {
    double growth = 1;
    for (const auto& [part, list] : {std::pair{"normalizer", "normalizers"}, std::pair{"decoder", "decoders"}}) {
      for (const nlohmann::json& s : steps(j, part, list)) {
        if (!s.is_object()) continue;
        const std::string type = s.value("type", "");
        if (type == "Strip") {
          if (s.value("content", "x").empty()) return true;
          for (const char* key : {"start", "stop"})
            if (s.contains(key) && !s[key].is_number_unsigned()) return true;
        }
        if (type == "Replace" && s.contains("pattern") && s["pattern"].is_object()) {
          const size_t from = std::max<size_t>(1, s["pattern"].value("String", "").size());
          const size_t to = s.value("content", "").size();
          growth *= std::max<size_t>(1, (to + from - 1) / from);
        }
      }
    }
    return growth > 64;
  } catch (const nlohmann::json::exception&) {
    return false;  // a malformed step: the loader's to refuse
  }
}

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
  if (known_bug(json)) return 0;
  fuzz::MemFile json_file(reinterpret_cast<const uint8_t*>(json.data()), json.size());
  fuzz::MemFile config_file(reinterpret_cast<const uint8_t*>(config.data()), config.size());
  std::map<std::string, std::string> files = {{"tokenizer", json_file.path()}};
  if (!config.empty()) files["config"] = config_file.path();
  for (const bool spm_style : {false, true}) {
    std::unique_ptr<text::Tokenizer> tok;
    try {
      tok = spm_style ? text::load_sentencepiece_bpe(files) : text::load_whisper(files, nlohmann::json());
    } catch (const text::Error& e) {
      fuzz::stopped(spm_style ? "load (sentencepiece BPE)" : "load (byte-level BPE)", e);
      continue;
    }
    fuzz::exercise(*tok, text);
  }
  return 0;
}
