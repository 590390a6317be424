#include "text/spm_files.h"

#include "text/spm_model_check.h"
#include "text/util.h"

namespace text {

const std::string& named_file(const FileMap& files, const char* role, std::string_view who) {
  auto it = files.find(role);
  if (it == files.end()) fail("{}: meta.json names no '{}' file", who, role);
  return it->second;
}

nlohmann::json load_tokenizer_config(const FileMap& files, std::string_view who) {
  auto it = files.find("config");
  if (it == files.end()) return nlohmann::json::object();
  auto config = nlohmann::json::parse(read_text_file(it->second), nullptr, false);
  if (!config.is_object()) fail("{}: {} is not a JSON object", who, it->second);
  return config;
}

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::string& path, std::string_view who) {
  // Read here and checked before the library parses it: it trusts the normalisation
  // rules it finds in a model (text/spm_model_check.h).
  const std::string model = read_text_file(path);
  const std::string problem = spm_model_problem(model);
  if (!problem.empty()) fail("{}: cannot load the sentencepiece model {}: {}", who, path, problem);
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  sentencepiece::util::Status status;
  try {
    status = sp->LoadFromSerializedProto(model);
  } catch (const std::exception& e) {
    // Its trie builder (darts-clone) throws on a piece it cannot hold, e.g. one that
    // starts with a NUL byte, where the rest of the library returns a status.
    fail("{}: cannot load the sentencepiece model {}: {}", who, path, e.what());
  }
  if (!status.ok()) fail("{}: cannot load the sentencepiece model {}: {}", who, path, status.ToString());
  return sp;
}

std::unordered_map<std::string, int64_t> load_vocab(const std::string& path, std::string_view who) {
  const auto j = nlohmann::json::parse(read_text_file(path), nullptr, false);
  if (!j.is_object()) fail("{}: {} is not a JSON object of piece -> id", who, path);
  std::unordered_map<std::string, int64_t> v;
  for (const auto& [piece, id] : j.items()) {
    if (!id.is_number_integer()) fail("{}: {}: the id of '{}' is not an integer", who, path, piece);
    v[piece] = id.get<int64_t>();
  }
  return v;
}

std::string token_name(const nlohmann::json& config, const char* key, const char* fallback, std::string_view who) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content")) return it->at("content").get<std::string>();
  fail("{}: tokenizer_config.json: {} is neither a string nor a token", who, key);
}

}  // namespace text
