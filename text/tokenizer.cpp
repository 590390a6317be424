// The tokenizer of a program directory: meta.json's "tokenizer" entry
// ({"kind": ..., "files": {role: path inside the directory}}) picks the kind.
#include "text/tokenizer.h"

#include <map>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "io/regular_file.h"
#include "text/byte_bpe.h"
#include "text/m2m100.h"
#include "text/marian.h"
#include "text/nllb.h"
#include "text/t5.h"
#include "text/whisper.h"
#include "text/util.h"

namespace text {
namespace {

nlohmann::json tokenizer_entry(const std::string& dir) {
  const std::string meta_path = dir + "/meta.json";
  struct stat st {};
  if (::stat(meta_path.c_str(), &st) != 0) fail("{} is not a tensorvm program (no meta.json in it)", dir);
  const auto meta = nlohmann::json::parse(read_text_file(meta_path), nullptr, false);
  if (!meta.is_object()) fail("{}: not a JSON object", meta_path);
  auto it = meta.find("tokenizer");
  if (it == meta.end() || it->is_null()) return nullptr;
  if (!it->is_object() || !it->contains("kind") || !(*it)["kind"].is_string() || !it->contains("files") ||
      !(*it)["files"].is_object())
    fail("{}: \"tokenizer\" must be {{\"kind\": ..., \"files\": {{...}}}}", meta_path);
  return *it;
}

// A file a program names must stay inside its directory: loading a program never
// reads files elsewhere, not even through a symlink.
std::string inside(const std::string& dir, const std::string& rel, const std::string& meta_path) {
  if (rel.empty() || rel[0] == '/' || rel.find('\\') != std::string::npos)
    fail("{}: tokenizer file '{}' must be a relative path inside the program directory", meta_path, rel);
  size_t start = 0;
  while (start <= rel.size()) {
    const size_t end = std::min(rel.find('/', start), rel.size());
    const std::string part = rel.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      fail("{}: tokenizer file '{}' must be a relative path inside the program directory", meta_path, rel);
    start = end + 1;
  }
  const std::string path = dir + "/" + rel;
  try {
    io::check_inside(dir, path);
  } catch (const io::FileError& e) {
    fail("{}: tokenizer file '{}': {}", meta_path, rel, e.what());
  }
  return path;
}

}  // namespace

std::vector<int64_t> Tokenizer::encode_from(std::string_view, std::string_view src_lang) const {
  fail("a {} tokenizer has no source language (src_lang '{}'): it is for M2M100 and NLLB programs", kind(), src_lang);
}

int64_t Tokenizer::language_id(std::string_view lang) const {
  fail("a {} tokenizer has no language tokens (language '{}'): they are for M2M100 and NLLB programs", kind(), lang);
}

std::vector<int64_t> Tokenizer::decoder_prompt(std::string_view language, std::string_view task) const {
  fail("a {} tokenizer has no task prompt (language '{}', task '{}'): it is for Whisper programs", kind(), language,
       task);
}

bool has_tokenizer(const std::string& dir) { return !tokenizer_entry(dir).is_null(); }

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  const nlohmann::json entry = tokenizer_entry(dir);
  const std::string meta_path = dir + "/meta.json";
  if (entry.is_null())
    fail("{} has no tokenizer (it was imported from a checkpoint without tokenizer files); "
         "give token ids instead, or import a checkpoint that has them",
         dir);
  const std::string kind = entry["kind"].get<std::string>();
  std::map<std::string, std::string> files;
  for (const auto& [role, rel] : entry["files"].items()) {
    if (!rel.is_string()) fail("{}: tokenizer file '{}' is not a path", meta_path, role);
    files[role] = inside(dir, rel.get<std::string>(), meta_path);
  }
  const nlohmann::json template_ids = entry.value("template", nlohmann::json());
  if (kind == "marian-spm") return load_marian(files);
  if (kind == "byte-level-bpe") return load_byte_bpe(files, template_ids);
  if (kind == "whisper-bpe") return load_whisper(files, entry.value("prompt", nlohmann::json()), template_ids);
  if (kind == "t5-spm") return load_t5(files);
  if (kind == "sentencepiece") return load_sentencepiece_bpe(files, template_ids);
  if (kind == "m2m100-spm" || kind == "nllb-spm") {
    std::vector<std::string> codes;
    if (entry.contains("language_codes") && entry["language_codes"].is_array())
      for (const auto& c : entry["language_codes"])
        if (c.is_string()) codes.push_back(c.get<std::string>());
    if (codes.empty()) fail("{}: an {} tokenizer needs \"language_codes\"", meta_path, kind);
    return kind == "nllb-spm" ? load_nllb(files, codes) : load_m2m100(files, codes);
  }
  fail("{}: tokenizer kind '{}' is not supported by this build "
       "(it reads marian-spm, m2m100-spm, nllb-spm, t5-spm, byte-level-bpe, whisper-bpe, sentencepiece)",
       meta_path, kind);
}

}  // namespace text
